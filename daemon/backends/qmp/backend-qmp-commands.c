#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: commands on a running copy (pause, resume, speed, pivot,
 * cancel, copy mode) and the progress of every copy.
 */

#include "backend-qmp-private.h"

#include "qmp-client.h"
#include "qmp-parse.h"
#include "vmr-error.h"

/* ---- commands on a running job ---- */

static void
command_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QEMU refused '%s': ", (const gchar *) g_task_get_task_data (task));
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

/* runs @cmd for @task, which @command_cb completes */
static void
run_command (VmrQmpClient *client, VmrQmpCmd *cmd, GTask *task)
{
    g_task_set_task_data (task, g_strdup (vmr_qmp_cmd_name (cmd)), g_free);
    vmr_qmp_client_run_async (client, cmd, 0, g_task_get_cancellable (task), command_cb, task);
}

static void
copy_mode_schema_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    g_autofree gchar *job_id = g_strdup (g_task_get_task_data (task));
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) schema = NULL;
    VmrQmpCmd *cmd = NULL;

    schema = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (schema == NULL)
        g_prefix_error (&error, "QEMU refused 'query-qmp-schema': ");
    else
        cmd = vmr_qmp_cmd_block_job_change_copy_mode (schema, job_id, &error);
    if (cmd == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    run_command (VMR_QMP_CLIENT (source), cmd, task);
}

/* job-complete of @job, after lifting its speed limit unless a storage's budget holds it */
static VmrQmpCmd *
pivot_command (VmrBackendQmp *self, VmrJob *job)
{
    /* a rate-limited job sleeps between chunks; lifting the limit
     * wakes it so that the pivot does not wait for the next chunk; a
     * copy under a storage's budget waits instead */
    if (job->speed > 0 && !job->under_budget) {
        vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_block_job_set_speed (job->id, 0), 0,
                                  NULL, vmr_backend_qmp_best_effort_cb,
                                  g_strdup_printf ("unthrottling %s", job->id));
    }
    vmr_backend_qmp_mark_pivot (self, job);
    return vmr_qmp_cmd_job_complete (job->id);
}

void
vmr_backend_qmp_job_command_async (VmrBackend *backend, VmrJob *job, VmrBackendCommand command,
                                   guint64 speed, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    MirrorTrack *track = g_hash_table_lookup (self->tracks, job->id);
    VmrQmpCmd *cmd = NULL;

    switch (command) {
        case VMR_BACKEND_COMMAND_PAUSE:
            cmd = vmr_qmp_cmd_block_job_pause (job->id);
            break;
        case VMR_BACKEND_COMMAND_RESUME:
            cmd = vmr_qmp_cmd_block_job_resume (job->id);
            break;
        case VMR_BACKEND_COMMAND_CANCEL:
            /* force: a READY mirror must not complete, it must abort */
            cmd = vmr_qmp_cmd_block_job_cancel (job->id, TRUE);
            if (track != NULL)
                track->cancel_requested = TRUE;
            break;
        case VMR_BACKEND_COMMAND_PIVOT:
            cmd = pivot_command (self, job);
            if (track != NULL)
                track->pivot_requested = TRUE;
            break;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            cmd = vmr_qmp_cmd_block_job_set_speed (job->id, speed);
            break;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            /* the schema says whether this QEMU can */
            g_task_set_task_data (task, g_strdup (job->id), g_free);
            vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_qmp_schema (), 0, cancellable,
                                      copy_mode_schema_cb, task);
            return;
        default:
            g_assert_not_reached ();
    }
    run_command (self->client, cmd, task);
}

gboolean
vmr_backend_qmp_job_command_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

static void
query_jobs_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) jobs = NULL;
    g_autoptr (GPtrArray) result = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    jobs = reply != NULL ? vmr_qmp_parse_block_jobs (reply, &error) : NULL;
    if (jobs == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    result = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_progress_free);
    for (guint i = 0; i < jobs->len; i++) {
        const VmrQmpBlockJob *job = g_ptr_array_index (jobs, i);

        /* other jobs in QEMU are none of ours */
        if (g_hash_table_contains (self->tracks, job->id))
            g_ptr_array_add (result, vmr_qmp_block_job_to_progress (job));
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_ptr_array_unref);
}

void
vmr_backend_qmp_query_progress_async (VmrBackend *backend, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_block_jobs (), 0, cancellable,
                              query_jobs_cb, task);
}

GPtrArray *
vmr_backend_qmp_query_progress_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
