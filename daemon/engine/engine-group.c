#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Groups: the disks of one domain that move together. Each member copies
 * under the usual limits and policy; a member in sync waits for the others;
 * the group cuts over when every member is in sync, the pivots sent back to
 * back; a member that fails or is cancelled before the cut-over takes the
 * others with it, so that the domain stays on all its sources.
 */

#include "engine-private.h"
#include "job-log.h"

#include "vmr-error.h"

GPtrArray *
vmr_engine_group_members (VmrEngine *self, VmrJob *job)
{
    GPtrArray *members = g_ptr_array_new ();

    if (job->group == NULL) {
        g_ptr_array_add (members, job);
        return members;
    }
    g_autoptr (GPtrArray) all = vmr_job_table_list (self->jobs);

    for (guint i = 0; i < all->len; i++) {
        VmrJob *other = g_ptr_array_index (all, i);

        if (g_strcmp0 (other->group, job->group) == 0)
            g_ptr_array_add (members, other);
    }
    return members;
}

VmrJob *
vmr_engine_group_laggard (VmrEngine *self, VmrJob *job)
{
    g_autoptr (GPtrArray) members = vmr_engine_group_members (self, job);

    for (guint i = 0; i < members->len; i++) {
        VmrJob *member = g_ptr_array_index (members, i);

        /* a member that cut over already (its group's pivot was refused for
         * another) waits for nothing */
        if (member->state == VMR_JOB_STATE_COMPLETED)
            continue;
        if (member->state != VMR_JOB_STATE_SYNCED || !member->ready)
            return member;
    }
    return NULL;
}

/* ---- the cut-over ---- */

typedef struct {
    VmrEngine *engine;
    GTask *task; /* the user's pivot, may be NULL */
    VmrJob *job; /* the member the user named */
    guint pending;
    GError *error;   /* the first refusal */
    VmrJob *refused; /* the member of the first refusal */
} GroupPivot;

typedef struct {
    GroupPivot *pivot;
    VmrJob *job;
} MemberPivot;

static void
member_pivot_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    MemberPivot *member = user_data;
    GroupPivot *pivot = member->pivot;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        /* the members that did pivot stay pivoted: each image is whole */
        vmr_job_warning (member->job, "job %s: pivot of group %s refused: %s", member->job->id,
                         member->job->group, error->message);
        vmr_engine_pivot_note_refusal (member->job, error);
        if (member->job->state == VMR_JOB_STATE_PIVOTING)
            vmr_engine_set_job_state (pivot->engine, member->job, VMR_JOB_STATE_SYNCED, NULL);
        if (pivot->error == NULL) {
            pivot->error = g_error_new (error->domain, error->code, "%s: %s", member->job->id,
                                        error->message);
            pivot->refused = vmr_job_ref (member->job);
        }
    }
    vmr_job_unref (member->job);
    g_free (member);
    if (--pivot->pending > 0)
        return;
    if (pivot->task != NULL) {
        if (pivot->error != NULL)
            g_task_return_error (pivot->task, g_steal_pointer (&pivot->error));
        else
            g_task_return_pointer (pivot->task, vmr_job_ref (pivot->job),
                                   (GDestroyNotify) vmr_job_unref);
        g_object_unref (pivot->task);
    } else if (pivot->refused != NULL) {
        vmr_engine_pivot_retry_later (pivot->engine, pivot->refused);
    }
    g_clear_pointer (&pivot->refused, vmr_job_unref);
    g_clear_error (&pivot->error);
    vmr_job_unref (pivot->job);
    g_object_unref (pivot->engine);
    g_free (pivot);
}

void
vmr_engine_pivot_group (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task)
{
    g_autoptr (GPtrArray) all = vmr_engine_group_members (self, job);
    g_autoptr (GPtrArray) members = g_ptr_array_new ();
    g_autoptr (GError) error = NULL;
    GroupPivot *pivot;

    /* the members still on their sources */
    for (guint i = 0; i < all->len; i++) {
        VmrJob *member = g_ptr_array_index (all, i);

        if (member->state != VMR_JOB_STATE_COMPLETED)
            g_ptr_array_add (members, member);
    }
    /* none cuts over unless every one's destination is still where its path says */
    for (guint i = 0; i < members->len; i++) {
        VmrJob *member = g_ptr_array_index (members, i);

        if (vmr_engine_check_destination_named (self, member, &error))
            continue;
        /* its failure takes the group along */
        vmr_engine_fail_copy (self, entry, member, error->message);
        if (task != NULL) {
            g_task_return_error (task, g_steal_pointer (&error));
            g_object_unref (task);
        }
        return;
    }
    pivot = g_new0 (GroupPivot, 1);
    pivot->engine = g_object_ref (self);
    pivot->task = task;
    pivot->job = vmr_job_ref (job);
    pivot->pending = members->len;
    vmr_job_message (job, "group %s: every member is in sync; cutting %u disks over", job->group,
                     members->len);
    /* QEMU first, back to back; the records after */
    for (guint i = 0; i < members->len; i++) {
        MemberPivot *member = g_new0 (MemberPivot, 1);

        member->pivot = pivot;
        member->job = vmr_job_ref (g_ptr_array_index (members, i));
        member->job->pivot_unanswered = FALSE;
        vmr_backend_job_command_async (entry->backend, member->job, VMR_BACKEND_COMMAND_PIVOT, 0,
                                       NULL, member_pivot_cb, member);
    }
    for (guint i = 0; i < members->len; i++)
        vmr_engine_set_job_state (self, g_ptr_array_index (members, i), VMR_JOB_STATE_PIVOTING,
                                  NULL);
}

void
vmr_engine_job_in_sync (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    VmrJob *laggard;

    if (job->group == NULL) {
        if (!job->manual_pivot)
            vmr_engine_pivot_job (self, entry, job, NULL);
        else if (job->state != VMR_JOB_STATE_SYNCED)
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_SYNCED, NULL);
        return;
    }
    if (job->state != VMR_JOB_STATE_SYNCED)
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_SYNCED, NULL);
    if (job->manual_pivot)
        return;
    laggard = vmr_engine_group_laggard (self, job);
    if (laggard != NULL) {
        vmr_job_message (job, "job %s: in sync; group %s waits for %s (%s)", job->id, job->group,
                         laggard->id, vmr_job_state_to_string (laggard->state));
        return;
    }
    vmr_engine_pivot_group (self, entry, job, NULL);
}

/* ---- failure ---- */

static void
member_cancel_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrJob) job = user_data;
    g_autoptr (GError) error = NULL;

    /* the end of the job comes as the backend's job-finished */
    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error))
        vmr_job_warning (job, "job %s: cannot cancel it with its group: %s", job->id,
                         error->message);
}

void
vmr_engine_group_cancel_member (VmrEngine *self, VmrJob *job)
{
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);

    /* an orphaned member is cancelled once it is picked up */
    if (!vmr_engine_job_is_active (job) || job->group_cancel_reason == NULL || job->orphaned)
        return;
    switch (job->state) {
        case VMR_JOB_STATE_QUEUED:
        case VMR_JOB_STATE_DELAYED:
            /* a mirror on its way to QEMU is cancelled once it runs */
            if (!job->policy_busy)
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_CANCELLED,
                                          job->group_cancel_reason);
            return;
        case VMR_JOB_STATE_PIVOTING:
            /* too late: it cuts over, its image is whole */
            return;
        default:
            break;
    }
    if (entry == NULL || !entry->connected)
        return; /* its QEMU is gone: the job fails on its own */
    vmr_job_message (job, "job %s: cancelling it: %s", job->id, job->group_cancel_reason);
    vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_CANCEL, 0, NULL,
                                   member_cancel_cb, vmr_job_ref (job));
}

static void
group_member_ended (VmrEngine *self, VmrJob *job)
{
    g_autoptr (GPtrArray) members = NULL;
    g_autofree gchar *reason = NULL;

    if (job->group == NULL || job->state == VMR_JOB_STATE_COMPLETED)
        return;
    /* a member cancelled with its group does not start another round */
    if (job->group_cancel_reason != NULL)
        return;
    reason = g_strdup_printf ("cancelled with its group: %s %s: %s", job->id,
                              vmr_job_state_to_string (job->state),
                              job->reason != NULL ? job->reason : "no reason given");
    members = vmr_engine_group_members (self, job);
    for (guint i = 0; i < members->len; i++) {
        VmrJob *member = g_ptr_array_index (members, i);

        if (member == job || !vmr_engine_job_is_active (member)
            || member->group_cancel_reason != NULL)
            continue;
        member->group_cancel_reason = g_strdup (reason);
        vmr_engine_group_cancel_member (self, member);
    }
}

void
vmr_engine_group_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    if (vmr_job_state_is_final (job->state))
        group_member_ended (self, job);
    /* a copy that was on its way to QEMU when its group failed */
    if (job->group_cancel_reason != NULL
        && (previous == VMR_JOB_STATE_QUEUED || previous == VMR_JOB_STATE_DELAYED))
        vmr_engine_group_cancel_member (self, job);
}
