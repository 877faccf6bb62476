#define G_LOG_DOMAIN "vmr-daemon"

#include "engine-private.h"
#include "job-log.h"

#include "admission.h"

gboolean
vmr_engine_job_holds_copy (VmrJob *job)
{
    switch (job->state) {
        case VMR_JOB_STATE_COPYING:
        case VMR_JOB_STATE_THROTTLED:
        case VMR_JOB_STATE_PAUSED:
            return TRUE;
        case VMR_JOB_STATE_SYNCED:
        case VMR_JOB_STATE_PIVOTING:
            /*
             * The bulk copy is over; only the guest's new writes still go
             * to both images. Counting it would let a member of a group,
             * synced and waiting for the others, hold their slots forever.
             */
            return FALSE;
        case VMR_JOB_STATE_QUEUED:
        case VMR_JOB_STATE_DELAYED:
            /* its mirror is on its way to QEMU */
            return job->policy_busy;
        default:
            return FALSE;
    }
}

static gboolean
job_is_waiting (VmrJob *job)
{
    return (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED)
           && !job->policy_busy && !job->orphaned;
}

/* what the limits count of @job; the strings belong to @job or @entry */
static void
describe_copy (VmrEngine *self, VmrJob *job, VmrAdmissionCopy *copy)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    VmrDisk *disk
        = entry != NULL && entry->disks != NULL ? vmr_disk_lookup (entry->disks, job->disk) : NULL;

    copy->domain = job->domain;
    copy->iothreads = disk != NULL ? (const gchar *const *) disk->iothreads : NULL;
    copy->destination = job->dest->admission_key;
    memcpy (copy->limits, rule->limits, sizeof copy->limits);
}

static void
complete_task (VmrJob *job, GTask *task)
{
    if (task == NULL)
        return;
    g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
    g_object_unref (task);
}

/* keeps @job waiting for @key (a limit's name); logs when what it waits for changes */
static void
hold_job (VmrEngine *self, VmrJob *job, const gchar *key, const gchar *reason)
{
    if (g_strcmp0 (job->waiting_for, key) != 0)
        vmr_job_message (job, "job %s (%s %s): %s", job->id, job->domain, job->disk, reason);
    g_free (job->waiting_for);
    job->waiting_for = g_strdup (key);
    g_free (job->decision);
    job->decision = g_strdup ("wait");
    vmr_engine_count_decision (self, job->decision);
    g_free (job->decision_reason);
    job->decision_reason = g_strdup (reason);
}

/* ---- copies whose cluster slot went with the lease ---- */

#define CLUSTER_PAUSE_REASON                                                                       \
    "the cluster's lease could not be kept alive: the copy waits for a slot under a new lease"

static void
note_action (VmrJob *job, const gchar *action, const gchar *reason)
{
    g_free (job->decision);
    job->decision = g_strdup (action);
    g_free (job->decision_reason);
    job->decision_reason = g_strdup (reason);
    vmr_job_message (job, "job %s (%s %s): %s: %s", job->id, job->domain, job->disk, action,
                     reason);
}

/* stops @job's bulk copy before the lease can expire; a copy paused already stays so */
static void
cluster_pause (VmrEngine *self, VmrJob *job)
{
    job->cluster_paused = g_strdup (CLUSTER_PAUSE_REASON);
    job->cluster_resume
        = job->state == VMR_JOB_STATE_COPYING || job->state == VMR_JOB_STATE_THROTTLED;
    note_action (job, "pause", CLUSTER_PAUSE_REASON);
    /* recorded before QEMU pauses it: a restarted daemon knows the pause for the cluster's */
    vmr_engine_save_job (self, job);
    if (job->cluster_resume)
        vmr_engine_action_step (vmr_engine_action_new (self, job, VMR_JOB_STATE_PAUSED),
                                VMR_BACKEND_COMMAND_PAUSE, 0);
}

/* @job holds a slot again: it copies as before it was paused for the cluster */
static void
cluster_resume (VmrEngine *self, VmrJob *job)
{
    gboolean resume = job->cluster_resume && job->state == VMR_JOB_STATE_PAUSED
                      && job->space_paused == NULL && !job->user_paused;

    vmr_engine_cluster_forget_pause (job);
    g_clear_pointer (&job->waiting_for, g_free);
    note_action (job, "resume", "it holds a slot of the cluster again");
    vmr_engine_save_job (self, job);
    if (resume)
        vmr_engine_action_step (vmr_engine_action_new (self, job,
                                                       job->speed != job->base_speed
                                                           ? VMR_JOB_STATE_THROTTLED
                                                           : VMR_JOB_STATE_COPYING),
                                VMR_BACKEND_COMMAND_RESUME, 0);
}

static void hold_job (VmrEngine *self, VmrJob *job, const gchar *key, const gchar *reason);

/*
 * A copy whose slot went with the lease is paused at once, and resumed once
 * the cluster grants it a slot again: the limit holds while the lease
 * cannot be renewed, since the copy stopped before it could expire.
 */
static void
cluster_suspended_step (VmrEngine *self, VmrJob *job)
{
    g_autofree gchar *reason = NULL;
    const gchar *limit = NULL;

    /* a command on its way (the copy's start, a speed): the next pass, when it is answered */
    if (job->policy_busy || job->orphaned)
        return;
    if (job->cluster_paused == NULL) {
        cluster_pause (self, job);
        return;
    }
    if (!vmr_engine_cluster_admit (self, job, &limit, &reason)) {
        g_autofree gchar *key = g_strcmp0 (limit, "cluster") == 0
                                    ? g_strdup (limit)
                                    : g_strconcat ("cluster ", limit, NULL);

        hold_job (self, job, key, reason);
        return;
    }
    cluster_resume (self, job);
}

void
vmr_engine_admission_run (VmrEngine *self, VmrJob *new_job, GTask *task)
{
    g_autoptr (VmrAdmission) admission = vmr_admission_new ();
    g_autoptr (GPtrArray) waiting = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    g_autoptr (GPtrArray) suspended
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        if (job_is_waiting (job))
            g_ptr_array_add (waiting, vmr_job_ref (job));
        else if (vmr_engine_job_holds_copy (job) && vmr_engine_cluster_suspended (self, job))
            g_ptr_array_add (suspended, vmr_job_ref (job));
        else if (vmr_engine_job_holds_copy (job))
            /* a copy the cluster must count, an earlier run's included */
            vmr_engine_cluster_hold (self, job);
    }
    /* they were in the queue first: they take their slots back before a new copy */
    for (guint i = 0; i < suspended->len; i++)
        cluster_suspended_step (self, g_ptr_array_index (suspended, i));
    /* the common case at every load sample: nothing waits */
    if (waiting->len == 0) {
        if (task != NULL)
            complete_task (new_job, g_steal_pointer (&task));
        return;
    }
    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        if (vmr_engine_job_holds_copy (job)) {
            VmrAdmissionCopy copy = { 0 };

            describe_copy (self, job, &copy);
            vmr_admission_add_running (admission, &copy);
        }
    }
    /* oldest first: a decision may end a job, hence the copy of the list */
    for (guint i = 0; i < waiting->len; i++) {
        VmrJob *job = g_ptr_array_index (waiting, i);
        DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
        GTask *job_task = job == new_job ? g_steal_pointer (&task) : NULL;
        VmrAdmissionCopy copy = { 0 };
        g_autofree gchar *reason = NULL;
        const gchar *cluster_limit = NULL;
        VmrLimit limit;

        if (!job_is_waiting (job) || entry == NULL || !entry->connected) {
            complete_task (job, job_task);
            continue;
        }
        describe_copy (self, job, &copy);
        limit = vmr_admission_check (admission, &copy, &reason);
        if (limit != VMR_LIMIT_LAST) {
            hold_job (self, job, vmr_policy_key_name (VMR_POLICY_KEY_OF_LIMIT (limit)), reason);
            complete_task (job, job_task);
            continue;
        }
        if (!vmr_engine_cluster_admit (self, job, &cluster_limit, &reason)) {
            g_autofree gchar *key = g_strcmp0 (cluster_limit, "cluster") == 0
                                        ? g_strdup (cluster_limit)
                                        : g_strconcat ("cluster ", cluster_limit, NULL);

            hold_job (self, job, key, reason);
            complete_task (job, job_task);
            continue;
        }
        g_clear_pointer (&job->waiting_for, g_free);
        vmr_engine_policy_evaluate (self, entry, job, job_task);
        if (vmr_engine_job_holds_copy (job)) {
            vmr_admission_add_running (admission, &copy);
            vmr_engine_cluster_hold (self, job);
        }
    }
    /* a new job that is not waiting (it cannot be otherwise, but never lose a task) */
    if (task != NULL)
        complete_task (new_job, g_steal_pointer (&task));
}

static gboolean
admission_idle_cb (gpointer user_data)
{
    VmrEngine *self = user_data;

    self->admission_source = 0;
    vmr_engine_admission_run (self, NULL, NULL);
    return G_SOURCE_REMOVE;
}

void
vmr_engine_admission_schedule (VmrEngine *self)
{
    if (self->admission_source == 0)
        self->admission_source = g_idle_add (admission_idle_cb, self);
}

void
vmr_engine_admission_admit (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task)
{
    /* the admission limits come first, then the load */
    vmr_engine_admission_run (self, job, task);
}

void
vmr_engine_admission_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    /* a slot may be free, or the job was first in line for one; a synced
     * job's bulk copy is over, its slot is free for the next in line */
    if (vmr_job_state_is_final (job->state) || job->state == VMR_JOB_STATE_SYNCED)
        vmr_engine_admission_schedule (self);
}
