#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Picking up the jobs of an earlier run. At start the engine loads the
 * records of the jobs that had not ended; they wait, orphaned, for their
 * domain. Once the domain is known again (attached under the same name, or
 * found by libvirt), its backend looks for each copy: one that still runs is
 * followed again, one that ended meanwhile ends here too, and one that is
 * gone leaves the domain on its source, where it always was.
 */

#include "engine-private.h"
#include "job-log.h"

#include "vmr-error.h"

void
vmr_engine_load_unfinished (VmrEngine *self)
{
    g_autoptr (GPtrArray) jobs = vmr_job_table_load_unfinished (self->jobs);

    for (guint i = 0; i < jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (jobs, i);

        vmr_job_message (job,
                         "job %s (%s %s -> %s): %s when the daemon stopped; waiting for domain %s",
                         job->id, job->domain, job->disk, job->dest->location,
                         vmr_job_state_to_string (job->state), job->domain);
    }
}

/* moves @job along the state machine to @state, through the states between */
static void
walk_to (VmrEngine *self, VmrJob *job, VmrJobState state, const gchar *reason)
{
    static const VmrJobState path[]
        = { VMR_JOB_STATE_COPYING, VMR_JOB_STATE_SYNCED, VMR_JOB_STATE_PIVOTING };

    if (job->state == state)
        return;
    if (vmr_job_state_can_transition (job->state, state)) {
        vmr_engine_set_job_state (self, job, state, reason);
        return;
    }
    for (guint i = 0; i < G_N_ELEMENTS (path) && job->state != state; i++) {
        if (job->state != path[i] && vmr_job_state_can_transition (job->state, path[i]))
            vmr_engine_set_job_state (self, job, path[i], NULL);
        if (vmr_job_state_can_transition (job->state, state)) {
            vmr_engine_set_job_state (self, job, state, reason);
            return;
        }
    }
}

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    gchar *domain;
} AdoptData;

static void
adopt_data_free (AdoptData *data)
{
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data->domain);
    g_free (data);
}

static void
adopt_running (VmrEngine *self, DomainEntry *entry, VmrJob *job, const VmrBackendAdoption *adoption)
{
    gboolean was_started
        = job->state != VMR_JOB_STATE_QUEUED && job->state != VMR_JOB_STATE_DELAYED;

    vmr_job_update_progress (job, adoption->total_bytes, adoption->done_bytes,
                             g_get_monotonic_time ());
    job->speed = adoption->speed;
    job->ready = job->ready || adoption->ready;
    if (!was_started)
        walk_to (self, job, VMR_JOB_STATE_COPYING, NULL);
    if (job->ready) {
        /* QEMU's READY does not go back; a refused or lost pivot is synced again */
        if (job->state == VMR_JOB_STATE_PAUSED && !adoption->paused)
            walk_to (self, job, VMR_JOB_STATE_SYNCED, NULL);
        else if (job->state != VMR_JOB_STATE_PAUSED)
            walk_to (self, job, VMR_JOB_STATE_SYNCED, NULL);
    } else if (adoption->paused && job->state != VMR_JOB_STATE_PAUSED) {
        /* paused by someone while we were away: a user's pause, left alone; or the pause for
         * the cluster the daemon sent before it stopped, whose answer it did not see */
        job->user_paused = job->cluster_paused == NULL;
        walk_to (self, job, VMR_JOB_STATE_PAUSED, NULL);
    } else if (!adoption->paused && job->state == VMR_JOB_STATE_PAUSED) {
        job->user_paused = FALSE;
        g_clear_pointer (&job->space_paused, g_free);
        walk_to (self, job, VMR_JOB_STATE_COPYING, NULL);
    }
    if (!adoption->paused)
        /* resumed in QEMU meanwhile: it copies, and the cluster counts it as it does any
         * copy that ran on while the daemon was away */
        vmr_engine_cluster_forget_pause (job);
    vmr_engine_save_job (self, job);
    vmr_engine_update_timers (self, entry);
    vmr_job_message (job, "job %s (%s %s): picked up: %s in QEMU, %s", job->id, job->domain,
                     job->disk,
                     adoption->ready    ? "in sync"
                     : adoption->paused ? "paused"
                                        : "copying",
                     vmr_job_state_to_string (job->state));
    if (job->group_cancel_reason != NULL) {
        vmr_engine_group_cancel_member (self, job);
        return;
    }
    if (job->ready && job->state == VMR_JOB_STATE_SYNCED)
        vmr_engine_job_in_sync (self, entry, job);
    if (job->cluster_paused != NULL) {
        /* paused for the cluster before the restart: it waits for a slot of the new lease */
        vmr_job_message (job,
                         "job %s (%s %s): paused for the cluster: it resumes once it holds "
                         "a slot again",
                         job->id, job->domain, job->disk);
        vmr_engine_admission_schedule (self);
    } else if (vmr_engine_cluster_suspended (self, job)) {
        /* its slot went with the earlier run's lease: it stops now, not at the next pass */
        vmr_engine_admission_schedule (self);
    }
}

/*
 * A job of an earlier run that never started: it is checked again as a
 * request is, then waits for its turn; a start cut short may have made the
 * file, which went already and is made anew
 */
static void
adopt_queued (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    g_autoptr (GError) error = NULL;

    if (!vmr_engine_recheck_destination (self, job, &error)) {
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, error->message);
        return;
    }
    vmr_job_message (job, "job %s (%s %s): picked up: not started yet", job->id, job->domain,
                     job->disk);
    vmr_engine_save_job (self, job);
    vmr_engine_update_timers (self, entry);
    vmr_engine_admission_schedule (self);
}

static void
adopt_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    AdoptData *data = user_data;
    VmrEngine *self = data->engine;
    VmrJob *job = data->job;
    g_autoptr (GError) error = NULL;
    g_autofree VmrBackendAdoption *adoption
        = vmr_backend_adopt_copy_finish (VMR_BACKEND (source), res, &error);
    DomainEntry *entry = g_hash_table_lookup (self->domains, data->domain);
    g_autofree gchar *reason = NULL;

    if (entry == NULL || entry->backend != VMR_BACKEND (source) || !job->orphaned
        || !vmr_engine_job_is_active (job)) {
        adopt_data_free (data);
        return;
    }
    if (adoption == NULL) {
        /* it stays orphaned: a cancel ends it without touching the domain */
        vmr_job_warning (job, "job %s (%s %s): cannot pick it up: %s", job->id, job->domain,
                         job->disk, error->message);
        adopt_data_free (data);
        return;
    }
    job->orphaned = FALSE;
    job->policy_busy = FALSE;
    switch (adoption->outcome) {
        case VMR_BACKEND_ADOPT_RUNNING:
            adopt_running (self, entry, job, adoption);
            break;
        case VMR_BACKEND_ADOPT_ENDING:
            /* the backend's job-finished ends it */
            vmr_job_message (job, "job %s (%s %s): its copy ended while the daemon was not running",
                             job->id, job->domain, job->disk);
            break;
        case VMR_BACKEND_ADOPT_ON_DESTINATION:
            job->done_bytes = job->total_bytes;
            vmr_job_message (job, "job %s (%s %s): it pivoted while the daemon was not running",
                             job->id, job->domain, job->disk);
            walk_to (self, job, VMR_JOB_STATE_COMPLETED, NULL);
            break;
        case VMR_BACKEND_ADOPT_GONE:
        default:
            /* a file the daemon made, by its record, unless the domain's definition names it */
            if (!adoption->destination_in_use)
                vmr_engine_remove_destination (self, job);
            if (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED) {
                adopt_queued (self, entry, job);
                break;
            }
            reason = g_strdup_printf ("the copy was lost while virt-mirrord was not running; "
                                      "%s of %s stays on %s",
                                      job->disk, job->domain, job->source);
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, reason);
            break;
    }
    adopt_data_free (data);
}

void
vmr_engine_adopt_jobs (VmrEngine *self, DomainEntry *entry)
{
    g_autoptr (GPtrArray) jobs = vmr_job_table_list (self->jobs);

    for (guint i = 0; i < jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (jobs, i);
        AdoptData *data;

        if (!job->orphaned || !vmr_engine_job_is_active (job)
            || g_strcmp0 (job->domain, entry->name) != 0)
            continue;
        data = g_new0 (AdoptData, 1);
        data->engine = g_object_ref (self);
        data->job = vmr_job_ref (job);
        data->domain = g_strdup (entry->name);
        vmr_backend_adopt_copy_async (entry->backend, job, NULL, adopt_cb, data);
    }
}
