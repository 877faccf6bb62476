#define G_LOG_DOMAIN "vmr-daemon"

#include "engine-private.h"
#include "job-log.h"

#include <errno.h>

#include "decision.h"
#include "units.h"
#include "vmr-error.h"

/* load samples kept beyond the longest hold, for `virt-mirror job` */
/* how many of the newest samples a job object shows */
#define SHOWN_SAMPLES 10

/* ---- what the policy knows of a job ---- */

static gint64
held_for (VmrJob *job, gint64 now_us)
{
    return job->held_total_us + (job->held_since_us != 0 ? now_us - job->held_since_us : 0);
}

JsonObject *
vmr_engine_policy_describe_job (VmrEngine *self, VmrJob *job)
{
    JsonObject *obj = json_object_new ();
    JsonArray *iops = json_array_new ();
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    VmrLoadHistory *history = vmr_engine_domain_load (entry, job->disk);

    if (job->decision != NULL)
        json_object_set_string_member (obj, "decision", job->decision);
    else
        json_object_set_null_member (obj, "decision");
    if (job->decision_reason != NULL)
        json_object_set_string_member (obj, "reason", job->decision_reason);
    else
        json_object_set_null_member (obj, "reason");
    json_object_set_double_member (
        obj, "held", (gdouble) held_for (job, g_get_monotonic_time ()) / G_USEC_PER_SEC);
    json_object_set_int_member (obj, "base-speed", (gint64) job->base_speed);
    json_object_set_boolean_member (obj, "user-paused", job->user_paused);
    if (history != NULL) {
        guint n = 0;
        const VmrLoadSample *samples = vmr_load_history_get_samples (history, &n);

        for (guint i = n > SHOWN_SAMPLES ? n - SHOWN_SAMPLES : 0; i < n; i++)
            json_array_add_int_element (iops, (gint64) (samples[i].iops + 0.5));
        if (n > 0)
            json_object_set_double_member (obj, "guest-latency-us", samples[n - 1].latency_us);
    }
    /* the guest's IOPS over the last samples, oldest first */
    json_object_set_array_member (obj, "guest-iops", iops);
    /* control = adaptive: the controller's view */
    if (job->adaptive != NULL)
        json_object_set_object_member (obj, "controller", vmr_engine_adaptive_describe (job));
    return obj;
}

/* ---- decisions ---- */

static VmrPolicyPhase
phase_of (VmrJob *job, gboolean *out_managed)
{
    /* a copy set to full speed to converge stays so, like a user's speed; a copy paused
     * for space is the space watch's (engine-space.c), one paused for the cluster the
     * admission's (engine-admission.c); a copy being cancelled is left to end */
    *out_managed = !vmr_job_converges_at_full_speed (job) && job->space_paused == NULL
                   && job->cluster_paused == NULL && !job->cancel_sent;
    if (!*out_managed)
        return VMR_POLICY_PHASE_RUNNING;
    switch (job->state) {
        case VMR_JOB_STATE_QUEUED:
            return VMR_POLICY_PHASE_QUEUED;
        case VMR_JOB_STATE_DELAYED:
            return VMR_POLICY_PHASE_DELAYED;
        case VMR_JOB_STATE_COPYING:
            return job->policy_released ? VMR_POLICY_PHASE_RELEASED : VMR_POLICY_PHASE_RUNNING;
        case VMR_JOB_STATE_THROTTLED:
            return VMR_POLICY_PHASE_THROTTLED;
        case VMR_JOB_STATE_PAUSED:
            if (!job->user_paused && !job->ready)
                return VMR_POLICY_PHASE_PAUSED;
            break;
        default:
            break;
    }
    /* user-paused, in sync, pivoting or over: not the policy's business */
    *out_managed = FALSE;
    return VMR_POLICY_PHASE_RUNNING;
}

static gint
seconds_of_day_now (void)
{
    g_autoptr (GDateTime) now = g_date_time_new_now_local ();

    return g_date_time_get_hour (now) * 3600 + g_date_time_get_minute (now) * 60
           + g_date_time_get_second (now);
}

/* records the decision; logs it when the action changes */
static void
note_decision (VmrEngine *self, VmrJob *job, const VmrPolicyDecision *decision)
{
    const gchar *action = vmr_policy_action_to_string (decision->action);

    vmr_engine_count_decision (self, action);
    if (g_strcmp0 (job->decision, action) != 0 && decision->action != VMR_POLICY_ACTION_KEEP)
        vmr_job_message (job, "job %s (%s %s): policy: %s: %s", job->id, job->domain, job->disk,
                         action, decision->reason);
    if (decision->action != VMR_POLICY_ACTION_KEEP || job->decision == NULL) {
        g_free (job->decision);
        job->decision = g_strdup (action);
    }
    g_free (job->decision_reason);
    job->decision_reason = g_strdup (decision->reason);
}

/* the speed of a copy that is not throttled */
static guint64
full_speed (VmrJob *job, const VmrPolicyRule *rule)
{
    return job->speed_from_user ? job->base_speed : rule->speed;
}

/* the speed of a throttled copy: never faster than full speed */
static guint64
slow_speed (VmrJob *job, const VmrPolicyRule *rule)
{
    guint64 full = full_speed (job, rule);

    return full > 0 && full < rule->throttle_speed ? full : rule->throttle_speed;
}

static void
apply_decision (VmrEngine *self, DomainEntry *entry, VmrJob *job, VmrPolicyPhase phase,
                const VmrPolicyRule *rule, const VmrPolicyDecision *decision, GTask *task)
{
    VmrEngineAction *data;

    switch (decision->action) {
        case VMR_POLICY_ACTION_START:
        case VMR_POLICY_ACTION_START_THROTTLED:
            /* the controller starts the copy and then sets its speed, load or not */
            if (rule->control == VMR_CONTROL_ADAPTIVE && !job->speed_from_user) {
                job->base_speed = rule->max_speed;
                vmr_engine_start_copy (self, entry, job,
                                       vmr_engine_adaptive_start (self, entry, job, rule),
                                       VMR_JOB_STATE_COPYING, task);
                return;
            }
            if (decision->action == VMR_POLICY_ACTION_START) {
                job->base_speed = full_speed (job, rule);
                vmr_engine_start_copy (self, entry, job, job->base_speed, VMR_JOB_STATE_COPYING,
                                       task);
                return;
            }
            job->base_speed = full_speed (job, rule);
            vmr_engine_start_copy (self, entry, job, slow_speed (job, rule),
                                   VMR_JOB_STATE_THROTTLED, task);
            return;
        case VMR_POLICY_ACTION_DELAY:
            if (job->state == VMR_JOB_STATE_QUEUED)
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_DELAYED, decision->reason);
            break;
        case VMR_POLICY_ACTION_PROCEED:
            job->policy_released = TRUE;
            job->base_speed = full_speed (job, rule);
            if (phase == VMR_POLICY_PHASE_QUEUED || phase == VMR_POLICY_PHASE_DELAYED) {
                vmr_engine_start_copy (self, entry, job, job->base_speed, VMR_JOB_STATE_COPYING,
                                       task);
                return;
            }
            data = vmr_engine_action_new (self, job, VMR_JOB_STATE_COPYING);
            if (phase == VMR_POLICY_PHASE_PAUSED) {
                data->resume_after_speed = TRUE;
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, job->base_speed);
            } else {
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, job->base_speed);
            }
            break;
        case VMR_POLICY_ACTION_FAIL:
            if (phase == VMR_POLICY_PHASE_QUEUED || phase == VMR_POLICY_PHASE_DELAYED) {
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, decision->reason);
            } else {
                /* the copy ends as a failure once QEMU has cancelled it */
                g_free (job->pending_failure);
                job->pending_failure = g_strdup (decision->reason);
                data = vmr_engine_action_new (self, job, job->state);
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_CANCEL, 0);
            }
            break;
        case VMR_POLICY_ACTION_PAUSE:
            data = vmr_engine_action_new (self, job, VMR_JOB_STATE_PAUSED);
            vmr_engine_action_step (data, VMR_BACKEND_COMMAND_PAUSE, 0);
            break;
        case VMR_POLICY_ACTION_RESUME:
        case VMR_POLICY_ACTION_RESUME_THROTTLED: {
            gboolean slow = decision->action == VMR_POLICY_ACTION_RESUME_THROTTLED;
            guint64 speed = slow ? slow_speed (job, rule) : full_speed (job, rule);

            data = vmr_engine_action_new (self, job,
                                          slow ? VMR_JOB_STATE_THROTTLED : VMR_JOB_STATE_COPYING);
            if (speed != job->speed) {
                data->resume_after_speed = TRUE;
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, speed);
            } else {
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_RESUME, 0);
            }
            break;
        }
        case VMR_POLICY_ACTION_THROTTLE:
            data = vmr_engine_action_new (self, job, VMR_JOB_STATE_THROTTLED);
            vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, slow_speed (job, rule));
            break;
        case VMR_POLICY_ACTION_UNTHROTTLE:
            data = vmr_engine_action_new (self, job, VMR_JOB_STATE_COPYING);
            vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, full_speed (job, rule));
            break;
        case VMR_POLICY_ACTION_KEEP:
        default:
            /* a reloaded policy may have changed the full speed */
            if (job->state == VMR_JOB_STATE_COPYING && !job->speed_from_user
                && job->speed != vmr_engine_budget_cap (self, job, rule->speed)) {
                job->base_speed = rule->speed;
                data = vmr_engine_action_new (self, job, VMR_JOB_STATE_COPYING);
                vmr_engine_action_step (data, VMR_BACKEND_COMMAND_SET_SPEED, rule->speed);
            }
            break;
    }
    if (task != NULL) {
        g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
        g_object_unref (task);
    }
}

void
vmr_engine_policy_evaluate (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
    g_auto (VmrPolicyDecision) decision = { 0 };
    VmrLoadHistory *history = vmr_engine_domain_load (entry, job->disk);
    const VmrLoadSample *samples = NULL;
    gint64 now = g_get_monotonic_time ();
    gboolean managed;
    VmrPolicyPhase phase = phase_of (job, &managed);
    guint n = 0;

    if (!managed || job->policy_busy) {
        if (task != NULL) {
            g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
            g_object_unref (task);
        }
        return;
    }
    if (history != NULL)
        samples = vmr_load_history_get_samples (history, &n);
    vmr_policy_decide (rule, samples, n, phase, held_for (job, now), now, seconds_of_day_now (),
                       &decision);
    /* a running copy under control = adaptive: the controller sets its speed */
    if (phase != VMR_POLICY_PHASE_QUEUED && phase != VMR_POLICY_PHASE_DELAYED
        && vmr_engine_adaptive_step (self, entry, job, rule, &decision)) {
        if (task != NULL) {
            g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
            g_object_unref (task);
        }
        return;
    }
    note_decision (self, job, &decision);
    apply_decision (self, entry, job, phase, rule, &decision, task);
}
