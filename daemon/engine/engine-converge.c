#define G_LOG_DOMAIN "vmr-daemon"

/*
 * A copy that does not converge, and a copy's deadline. A guest that writes
 * faster than a background copy moves keeps the mirror's backlog from
 * shrinking: the copy never gets into sync. After each reading of a running
 * copy's progress its backlog joins the job's recent samples; a backlog that
 * has not shrunk over converge-after makes the copy converge by converge-by,
 * once, and a copy that has run longer than deadline gets on-deadline, once.
 *
 * The readings of progress, not the load samples, drive both: they come
 * every PROGRESS_INTERVAL_MS whatever sample-interval says, from every
 * backend, and they are where the backlog is read.
 */

#include "engine-private.h"
#include "job-log.h"

#include "units.h"

/* at most this many samples span converge-after: a long one is sampled more sparsely */
#define MAX_BACKLOG_SAMPLES 1024

/* ---- the backlog's recent samples ---- */

/* the window the detector looks at: it needs three readings in it */
static gint64
window_of (VmrEngine *self, const VmrPolicyRule *rule)
{
    return MAX (rule->converge_after_us, 2 * (gint64) self->progress_interval_ms * 1000);
}

static guint64
backlog_of (VmrJob *job)
{
    return job->total_bytes > job->done_bytes ? job->total_bytes - job->done_bytes : 0;
}

/* adds the latest reading, and drops what the window no longer needs */
static void
add_sample (VmrJob *job, gint64 window_us)
{
    VmrBacklogSample sample = { job->progress_time_us, backlog_of (job) };
    const VmrBacklogSample *samples;
    guint drop = 0;

    if (job->backlog == NULL)
        job->backlog = g_array_new (FALSE, FALSE, sizeof (VmrBacklogSample));
    samples = (const VmrBacklogSample *) job->backlog->data;
    if (job->backlog->len > 0
        && sample.time_us - samples[job->backlog->len - 1].time_us
               < window_us / MAX_BACKLOG_SAMPLES)
        return;
    g_array_append_val (job->backlog, sample);
    samples = (const VmrBacklogSample *) job->backlog->data;
    /* all but the last sample at or before the window's start */
    while (drop + 1 < job->backlog->len && samples[drop + 1].time_us <= sample.time_us - window_us)
        drop++;
    g_array_remove_range (job->backlog, 0, drop);
}

/* ---- converging ---- */

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    guint64 speed; /* bytes/s sent to converge by speed: 0, or a budget's share */
} ConvergeData;

static void converge_step (ConvergeData *data, DomainEntry *entry);

static void
converge_data_free (ConvergeData *data)
{
    data->job->policy_busy = FALSE;
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

static void
converged (VmrEngine *self, VmrJob *job, guint64 speed)
{
    vmr_job_message (job, "job %s (%s %s): converging by %s: %s", job->id, job->domain, job->disk,
                     job->converged_by, job->convergence_reason);
    if (g_str_equal (job->converged_by, "write-blocking")) {
        job->write_blocking = TRUE;
        vmr_engine_save_job (self, job);
        return;
    }
    /* full speed from now on (its share of a budget): the policy leaves the copy alone */
    job->speed = speed;
    job->base_speed = speed;
    g_free (job->decision);
    job->decision = g_strdup ("converge");
    g_free (job->decision_reason);
    job->decision_reason = g_strdup ("set to full speed to converge; the policy leaves it alone");
    if (job->state != VMR_JOB_STATE_THROTTLED
        || !vmr_engine_set_job_state (self, job, VMR_JOB_STATE_COPYING, NULL))
        vmr_engine_save_job (self, job);
}

static void
converge_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ConvergeData *data = user_data;
    VmrJob *job = data->job;
    g_autoptr (GError) error = NULL;
    gchar *reason;

    if (vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        if (vmr_engine_job_is_active (job))
            converged (data->engine, job, data->speed);
        converge_data_free (data);
        return;
    }
    if (g_str_equal (job->converged_by, "write-blocking") && vmr_engine_job_is_active (job)) {
        DomainEntry *entry = g_hash_table_lookup (data->engine->domains, job->domain);

        /* an older QEMU cannot switch the mode: finishing sooner is the other way */
        reason = g_strdup_printf ("%s; write-blocking refused (%s), converging by speed instead",
                                  job->convergence_reason, error->message);
        g_free (job->convergence_reason);
        job->convergence_reason = reason;
        job->converged_by = "speed";
        converge_step (data, entry);
        return;
    }
    vmr_job_message (job, "job %s: converging by %s refused: %s", job->id, job->converged_by,
                     error->message);
    reason = g_strdup_printf ("%s; %s refused (%s)", job->convergence_reason, job->converged_by,
                              error->message);
    g_free (job->convergence_reason);
    job->convergence_reason = reason;
    job->convergence_failed = TRUE;
    vmr_engine_save_job (data->engine, job);
    converge_data_free (data);
}

/* sends the command of the way the job converges by */
static void
converge_step (ConvergeData *data, DomainEntry *entry)
{
    gboolean write_blocking = g_str_equal (data->job->converged_by, "write-blocking");

    if (entry == NULL || !entry->connected) {
        data->job->convergence_failed = TRUE;
        converge_data_free (data);
        return;
    }
    data->speed = write_blocking ? 0 : vmr_engine_budget_cap (data->engine, data->job, 0);
    vmr_backend_job_command_async (entry->backend, data->job,
                                   write_blocking ? VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE
                                                  : VMR_BACKEND_COMMAND_SET_SPEED,
                                   data->speed, NULL, converge_cb, data);
}

/* makes @job converge by @by, for @why (consumed) */
static void
converge (VmrEngine *self, DomainEntry *entry, VmrJob *job, VmrConvergeBy by, gchar *why)
{
    ConvergeData *data = g_new0 (ConvergeData, 1);

    job->converged_by = by == VMR_CONVERGE_BY_WRITE_BLOCKING ? "write-blocking" : "speed";
    /* a copy that is write-blocking already and still does not shrink: speed is left */
    if (by == VMR_CONVERGE_BY_WRITE_BLOCKING && job->write_blocking) {
        gchar *reason = g_strdup_printf ("%s; write-blocking already, converging by speed", why);

        g_free (why);
        why = reason;
        job->converged_by = "speed";
    }
    job->converged_us = g_get_real_time ();
    g_free (job->convergence_reason);
    job->convergence_reason = why;
    job->convergence_failed = FALSE;
    /* the policy's actions wait until QEMU has answered */
    job->policy_busy = TRUE;
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    converge_step (data, entry);
}

/* ---- the deadline ---- */

/* when the copy left queued and delayed (wall clock), 0 if it has not */
static gint64
copy_started_us (VmrJob *job)
{
    for (guint i = 0; i < job->history->len; i++) {
        VmrJobTransition *t = &g_array_index (job->history, VmrJobTransition, i);

        if (t->state != VMR_JOB_STATE_QUEUED && t->state != VMR_JOB_STATE_DELAYED)
            return t->time_us;
    }
    return 0;
}

static void
cancel_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrJob) job = user_data;
    g_autoptr (GError) error = NULL;

    job->policy_busy = FALSE;
    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        vmr_job_message (job, "job %s: cancel at the deadline refused: %s", job->id,
                         error->message);
        g_clear_pointer (&job->pending_failure, g_free);
    }
}

/* cancels @job: it ends failed for @reason (consumed), as the policy's fail does */
static void
fail_job (DomainEntry *entry, VmrJob *job, gchar *reason)
{
    vmr_job_message (job, "job %s (%s %s): %s", job->id, job->domain, job->disk, reason);
    g_free (job->pending_failure);
    job->pending_failure = reason;
    job->policy_busy = TRUE;
    vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_CANCEL, 0, NULL,
                                   cancel_cb, vmr_job_ref (job));
}

/* applies on-deadline once the copy has run longer than deadline; TRUE if it fails */
static gboolean
check_deadline (VmrEngine *self, DomainEntry *entry, VmrJob *job, const VmrPolicyRule *rule)
{
    gint64 started = copy_started_us (job);
    gint64 ran = g_get_real_time () - started;
    g_autofree gchar *deadline = NULL;
    g_autofree gchar *backlog = NULL;

    if (rule->deadline_us == 0 || job->deadline_passed || started == 0 || ran <= rule->deadline_us)
        return FALSE;
    /* a copy the policy paused converges once it runs again */
    if (rule->on_deadline == VMR_ON_DEADLINE_CONVERGE && job->state == VMR_JOB_STATE_PAUSED)
        return FALSE;
    job->deadline_passed = TRUE;
    deadline = vmr_units_format_duration (rule->deadline_us);
    backlog = vmr_units_format_bytes (backlog_of (job));
    switch (rule->on_deadline) {
        case VMR_ON_DEADLINE_FAIL:
            fail_job (entry, job,
                      g_strdup_printf ("not finished by its deadline of %s (on-deadline = fail, "
                                       "%s still to copy); the VM stays on its source",
                                       deadline, backlog));
            return TRUE;
        case VMR_ON_DEADLINE_CONVERGE:
            if (job->converged_by != NULL && !job->convergence_failed) {
                vmr_job_message (job, "job %s: past its deadline of %s, converging by %s already",
                                 job->id, deadline, job->converged_by);
                return FALSE;
            }
            converge (self, entry, job, rule->converge_by,
                      g_strdup_printf ("past its deadline of %s with %s still to copy "
                                       "(on-deadline = converge)",
                                       deadline, backlog));
            return FALSE;
        case VMR_ON_DEADLINE_CONTINUE:
        default:
            vmr_job_message (job,
                             "job %s (%s %s): past its deadline of %s with %s still to copy; "
                             "on-deadline = continue: it goes on",
                             job->id, job->domain, job->disk, deadline, backlog);
            return FALSE;
    }
}

/* ---- after each reading ---- */

void
vmr_engine_converge_progress (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    g_autoptr (VmrPolicyRule) rule = NULL;
    gboolean running = job->state == VMR_JOB_STATE_COPYING || job->state == VMR_JOB_STATE_THROTTLED;
    gint64 window;
    gdouble slope = 0;
    g_autofree gchar *backlog = NULL;
    g_autofree gchar *after = NULL;

    /* a copy in sync has converged; a paused one does not move, for reasons of its own */
    if (!running && job->backlog != NULL)
        g_array_set_size (job->backlog, 0);
    if ((!running && job->state != VMR_JOB_STATE_PAUSED) || job->policy_busy || job->ready
        || job->orphaned || !entry->connected)
        return;
    rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
    if (check_deadline (self, entry, job, rule) || !running || rule->converge_after_us == 0
        || job->converged_by != NULL)
        return;
    window = window_of (self, rule);
    add_sample (job, window);
    if (vmr_convergence_check ((const VmrBacklogSample *) job->backlog->data, job->backlog->len,
                               window, &slope)
        != VMR_CONVERGENCE_STALLED)
        return;
    backlog = vmr_units_format_bytes (backlog_of (job));
    after = vmr_units_format_duration (rule->converge_after_us);
    converge (self, entry, job, rule->converge_by,
              g_strdup_printf ("backlog %s not shrinking over %s", backlog, after));
}
