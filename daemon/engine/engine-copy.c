#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Starting a copy and cutting a job over: the two steps every path (the
 * policy, groups, commands, adoption) takes through the backend.
 */

#include "engine-private.h"
#include "job-log.h"

#include "vmr-error.h"

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    VmrJobState state; /* copying or throttled */
    GTask *task;       /* may be NULL */
} StartData;

static void
start_data_free (StartData *data)
{
    g_clear_object (&data->task);
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

/* the start failed with @error (consumed) before QEMU copies: what the daemon made goes */
static void
start_failed (StartData *data, GError *error)
{
    data->job->policy_busy = FALSE;
    vmr_engine_remove_destination (data->engine, data->job);
    vmr_engine_set_job_state (data->engine, data->job, VMR_JOB_STATE_FAILED, error->message);
    if (data->task != NULL)
        g_task_return_error (data->task, error);
    else
        g_error_free (error);
    start_data_free (data);
}

static void
copy_started_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    StartData *data = user_data;
    GError *error = NULL;

    if (!vmr_backend_start_copy_finish (VMR_BACKEND (source), res, &error)) {
        /* the backend let go of the destination before it answered */
        start_failed (data, error);
        return;
    }
    data->job->policy_busy = FALSE;
    if (data->job->state == VMR_JOB_STATE_QUEUED || data->job->state == VMR_JOB_STATE_DELAYED)
        vmr_engine_set_job_state (data->engine, data->job, data->state, NULL);
    if (data->task != NULL)
        g_task_return_pointer (data->task, vmr_job_ref (data->job), (GDestroyNotify) vmr_job_unref);
    start_data_free (data);
}

static void
destination_opened_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    StartData *data = user_data;
    VmrEngine *self = data->engine;
    VmrJob *job = data->job;
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    VmrDisk *disk
        = entry != NULL && entry->disks != NULL ? vmr_disk_lookup (entry->disks, job->disk) : NULL;
    GError *error = NULL;

    if (!vmr_engine_open_destination_finish (self, res, &error)) {
        start_failed (data, error);
        return;
    }
    /* while the file was made: the job was cancelled, or its domain or disk went */
    if (!vmr_engine_job_is_active (job) || entry == NULL || !entry->connected || disk == NULL) {
        start_failed (data, g_error_new (VMR_ERROR, VMR_ERROR_NOT_FOUND,
                                         "disk %s of %s is gone, or the job ended, while its "
                                         "destination was made",
                                         job->disk, job->domain));
        return;
    }
    vmr_backend_start_copy_async (entry->backend, job, disk, NULL, copy_started_cb, data);
}

void
vmr_engine_start_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, guint64 speed,
                       VmrJobState state, GTask *task)
{
    VmrDisk *disk = vmr_disk_lookup (entry->disks, job->disk);
    StartData *data;

    if (disk == NULL) {
        g_autofree gchar *reason
            = g_strdup_printf ("disk %s of %s is gone", job->disk, job->domain);

        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, reason);
        if (task != NULL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND, "%s", reason);
            g_object_unref (task);
        }
        return;
    }
    data = g_new0 (StartData, 1);
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->state = state;
    data->task = task;
    /* the copy takes its share of its storages' budgets before it moves anything */
    vmr_engine_budget_join (self, job, speed);
    job->speed = vmr_engine_budget_cap (self, job, speed);
    job->policy_busy = TRUE;
    /* the checks again, then the file opened or made: the copy gets it by descriptor */
    vmr_engine_open_destination_async (self, job, disk, destination_opened_cb, data);
}

static void
fail_cancel_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrJob) job = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error))
        vmr_job_warning (job, "job %s: cannot cancel the copy: %s", job->id, error->message);
}

void
vmr_engine_fail_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, const gchar *reason)
{
    vmr_job_warning (job, "job %s (%s %s): %s; the copy is cancelled, %s stays on %s", job->id,
                     job->domain, job->disk, reason, job->disk, job->source);
    /* the copy ends as a failure once QEMU has cancelled it */
    g_free (job->pending_failure);
    job->pending_failure = g_strdup (reason);
    vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_CANCEL, 0, NULL,
                                   fail_cancel_cb, vmr_job_ref (job));
}

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    GTask *task; /* NULL for an automatic pivot */
} PivotData;

static void
pivot_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    PivotData *data = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        vmr_job_message (data->job, "job %s: pivot refused: %s", data->job->id, error->message);
        vmr_engine_pivot_note_refusal (data->job, error);
        if (data->job->state == VMR_JOB_STATE_PIVOTING)
            vmr_engine_set_job_state (data->engine, data->job, VMR_JOB_STATE_SYNCED, NULL);
        if (data->task != NULL)
            g_task_return_error (data->task, g_steal_pointer (&error));
        else
            vmr_engine_pivot_retry_later (data->engine, data->job);
    } else if (data->task != NULL) {
        g_task_return_pointer (data->task, vmr_job_ref (data->job), (GDestroyNotify) vmr_job_unref);
    }
    g_clear_object (&data->task);
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

/*
 * Cuts @job over: job-complete, then the backend's "job-finished" moves it on
 * to completed. @task (consumed), if not NULL, completes when QEMU accepted.
 */
void
vmr_engine_pivot_job (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task)
{
    g_autoptr (GError) error = NULL;
    PivotData *data;

    /* the guest must not end up on a file that its path no longer names */
    if (!vmr_engine_check_destination_named (self, job, &error)) {
        vmr_engine_fail_copy (self, entry, job, error->message);
        if (task != NULL) {
            g_task_return_error (task, g_steal_pointer (&error));
            g_object_unref (task);
        }
        return;
    }
    data = g_new0 (PivotData, 1);
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->task = task;
    /* QEMU first: saving the records costs fsyncs the pivot need not wait for */
    job->pivot_unanswered = FALSE;
    vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_PIVOT, 0, NULL,
                                   pivot_cb, data);
    if (job->state != VMR_JOB_STATE_SYNCED)
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_SYNCED, NULL);
    vmr_engine_set_job_state (self, job, VMR_JOB_STATE_PIVOTING, NULL);
}

/* ---- an automatic pivot refused ---- */

void
vmr_engine_pivot_note_refusal (VmrJob *job, const GError *error)
{
    /*
     * no answer: the connection broke while the pivot was on its way. QEMU
     * answers job-complete before the mirror switches the disk (the switch
     * comes when the job finishes, later in QEMU's main loop): a QEMU that
     * never answered never switched, and a monitor lost now leaves the VM
     * on its source (engine-domains.c)
     */
    job->pivot_unanswered = g_error_matches (error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
}

#define PIVOT_RETRY_FIRST_MS 1000
#define PIVOT_RETRY_MAX_MS   30000

typedef struct {
    GWeakRef engine;
    gchar *job_id;
} PivotRetry;

static void
pivot_retry_free (gpointer user_data)
{
    PivotRetry *retry = user_data;

    g_weak_ref_clear (&retry->engine);
    g_free (retry->job_id);
    g_free (retry);
}

static gboolean
pivot_retry_cb (gpointer user_data)
{
    PivotRetry *retry = user_data;
    g_autoptr (VmrEngine) self = g_weak_ref_get (&retry->engine);
    VmrJob *job = self != NULL ? vmr_job_table_lookup (self->jobs, retry->job_id) : NULL;
    DomainEntry *entry = job != NULL ? g_hash_table_lookup (self->domains, job->domain) : NULL;

    /* a user pivoted or cancelled it meanwhile, or it waits for its domain */
    if (job == NULL || job->state != VMR_JOB_STATE_SYNCED || job->manual_pivot || entry == NULL)
        return G_SOURCE_REMOVE;
    if (!entry->connected) {
        vmr_engine_pivot_retry_later (self, job);
        return G_SOURCE_REMOVE;
    }
    vmr_job_message (job, "job %s: trying the pivot again", job->id);
    vmr_engine_notify_copy_in_sync (self, entry, job);
    return G_SOURCE_REMOVE;
}

void
vmr_engine_pivot_retry_later (VmrEngine *self, VmrJob *job)
{
    PivotRetry *retry = g_new0 (PivotRetry, 1);

    job->pivot_retry_ms = job->pivot_retry_ms == 0
                              ? PIVOT_RETRY_FIRST_MS
                              : MIN (job->pivot_retry_ms * 2, PIVOT_RETRY_MAX_MS);
    g_weak_ref_init (&retry->engine, self);
    retry->job_id = g_strdup (job->id);
    vmr_job_message (job, "job %s: the automatic pivot is tried again in %u ms", job->id,
                     job->pivot_retry_ms);
    g_timeout_add_full (G_PRIORITY_DEFAULT, job->pivot_retry_ms, pivot_retry_cb, retry,
                        pivot_retry_free);
}
