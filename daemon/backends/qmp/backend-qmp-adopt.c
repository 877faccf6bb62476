#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: picking up, after a restart of the daemon, a copy that
 * an earlier run started in QEMU, whatever became of it meanwhile.
 */

#include "backend-qmp-private.h"

#include "destination.h"
#include "qmp-client.h"
#include "qmp-parse.h"
#include "vmr-error.h"

/* ---- picking up a copy of an earlier run ---- */

typedef struct {
    VmrJob *job;
    VmrQmpBlockJob *info; /* our job in query-block-jobs, NULL if QEMU has none */
    GHashTable *fdsets;   /* the files passed by descriptor, of vmr_qmp_parse_fdsets() */
    VmrBackendAdoption *adoption;
} AdoptData;

static void
adopt_data_free (AdoptData *data)
{
    vmr_job_unref (data->job);
    vmr_qmp_block_job_free (data->info);
    g_clear_pointer (&data->fdsets, g_hash_table_unref);
    g_free (data->adoption);
    g_free (data);
}

static void
adopt_return (GTask *task, VmrBackendAdoptOutcome outcome)
{
    AdoptData *data = g_task_get_task_data (task);

    data->adoption->outcome = outcome;
    g_task_return_pointer (task, g_steal_pointer (&data->adoption), g_free);
    g_object_unref (task);
}

static void
adopt_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;

    adopt_return (task, GPOINTER_TO_INT (g_object_get_data (G_OBJECT (task), "vmr-outcome")));
}

/* the old image may have come from an fd set of an earlier copy */
static void
adopt_source_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;

    vmr_backend_qmp_prune_fdsets_async (g_task_get_source_object (task), adopt_released_cb, task);
}

static void
adopt_first_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    AdoptData *data = g_task_get_task_data (task);

    vmr_backend_qmp_release_node_async (self, data->job->source_file_node, adopt_source_released_cb,
                                        task);
}

static void
adopt_block_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    AdoptData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *dest_node = g_strdup_printf ("%s-dst", data->job->id);
    gboolean on_destination = FALSE;
    gboolean dest_in_use = FALSE;
    MirrorTrack *track;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL
        || !vmr_qmp_parse_block_uses (reply, data->fdsets, dest_node, data->job->dest,
                                      &on_destination, &dest_in_use, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }

    if (data->info != NULL) {
        const gchar *status = data->info->status;

        track = vmr_backend_qmp_track_new (data->job, data->job->source_node,
                                           data->job->source_file_node);
        track->ready = data->info->ready || g_strcmp0 (status, "ready") == 0;
        g_hash_table_replace (self->tracks, g_strdup (track->job_id), track);
        if (g_strcmp0 (status, "concluded") == 0) {
            /* it ended unseen: how, QEMU's error and the device's node say */
            /* a cancel shows as QEMU's (unlocalised) strerror (ECANCELED) */
            if (g_strcmp0 (data->info->error, "Operation canceled") == 0)
                track->cancelled = TRUE;
            else if (data->info->error != NULL)
                track->error = g_strdup (data->info->error);
            else if (on_destination)
                track->completed = TRUE;
            else
                track->cancelled = TRUE;
            track->cancel_requested = FALSE;
            vmr_backend_qmp_finish_track (self, track);
            adopt_return (task, VMR_BACKEND_ADOPT_ENDING);
            return;
        }
        if (g_strcmp0 (status, "aborting") == 0) {
            /* its end comes as events, to the track */
            adopt_return (task, VMR_BACKEND_ADOPT_ENDING);
            return;
        }
        data->adoption->ready = track->ready;
        data->adoption->paused = data->info->paused;
        data->adoption->speed = data->info->speed;
        data->adoption->total_bytes = data->info->total_bytes;
        data->adoption->done_bytes = data->info->done_bytes;
        adopt_return (task, VMR_BACKEND_ADOPT_RUNNING);
        return;
    }
    /* no copy and a disk on the destination file: it pivoted (QEMU may even have been
     * started again on the new image, under other node names) */
    if (on_destination || dest_in_use) {
        /* it pivoted and was dismissed: let go of the old image, as after a pivot */
        g_object_set_data (G_OBJECT (task), "vmr-outcome",
                           GINT_TO_POINTER (VMR_BACKEND_ADOPT_ON_DESTINATION));
        vmr_backend_qmp_release_node_async (self, data->job->source_node, adopt_first_released_cb,
                                            task);
        return;
    }
    /* no copy, the disk on its source: close the destination (the engine removes what the
     * job made, also for a job whose start was cut short) */
    g_object_set_data (G_OBJECT (task), "vmr-outcome", GINT_TO_POINTER (VMR_BACKEND_ADOPT_GONE));
    vmr_backend_qmp_release_destination_async (self, data->job->dest, dest_node, TRUE,
                                               adopt_released_cb, task);
}

/* the names of the files passed by descriptor, for the disks' images */
static void
adopt_fdsets_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    AdoptData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    data->fdsets = vmr_qmp_parse_fdsets (reply);
    vmr_qmp_client_run_async (VMR_QMP_CLIENT (source), vmr_qmp_cmd_query_block (), 0,
                              g_task_get_cancellable (task), adopt_block_cb, task);
}

static void
adopt_jobs_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    AdoptData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) jobs = NULL;
    guint index;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    jobs = reply != NULL ? vmr_qmp_parse_block_jobs (reply, &error) : NULL;
    if (jobs == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (g_ptr_array_find (jobs, vmr_qmp_block_jobs_find (jobs, data->job->id), &index))
        data->info = g_ptr_array_steal_index (jobs, index);
    vmr_qmp_client_run_async (VMR_QMP_CLIENT (source), vmr_qmp_cmd_query_fdsets (), 0,
                              g_task_get_cancellable (task), adopt_fdsets_cb, task);
}

void
vmr_backend_qmp_adopt_copy_async (VmrBackend *backend, VmrJob *job, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    AdoptData *data = g_new0 (AdoptData, 1);

    data->job = vmr_job_ref (job);
    data->adoption = g_new0 (VmrBackendAdoption, 1);
    g_task_set_task_data (task, data, (GDestroyNotify) adopt_data_free);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_block_jobs (), 0, cancellable,
                              adopt_jobs_cb, task);
}

VmrBackendAdoption *
vmr_backend_qmp_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
