#define G_LOG_DOMAIN "vmr-policy"

#include "decision.h"

#include "units.h"

static const gchar *const action_names[] = {
    [VMR_POLICY_ACTION_KEEP] = "keep",
    [VMR_POLICY_ACTION_START] = "start",
    [VMR_POLICY_ACTION_START_THROTTLED] = "start-throttled",
    [VMR_POLICY_ACTION_DELAY] = "delay",
    [VMR_POLICY_ACTION_PAUSE] = "pause",
    [VMR_POLICY_ACTION_RESUME] = "resume",
    [VMR_POLICY_ACTION_RESUME_THROTTLED] = "resume-throttled",
    [VMR_POLICY_ACTION_THROTTLE] = "throttle",
    [VMR_POLICY_ACTION_UNTHROTTLE] = "unthrottle",
    [VMR_POLICY_ACTION_PROCEED] = "proceed",
    [VMR_POLICY_ACTION_FAIL] = "fail",
};

static const gchar *const phase_names[] = {
    [VMR_POLICY_PHASE_QUEUED] = "queued",   [VMR_POLICY_PHASE_DELAYED] = "delayed",
    [VMR_POLICY_PHASE_RUNNING] = "running", [VMR_POLICY_PHASE_THROTTLED] = "throttled",
    [VMR_POLICY_PHASE_PAUSED] = "paused",   [VMR_POLICY_PHASE_RELEASED] = "released",
};

const gchar *
vmr_policy_action_to_string (VmrPolicyAction action)
{
    return action < G_N_ELEMENTS (action_names) ? action_names[action] : "unknown";
}

const gchar *
vmr_policy_phase_to_string (VmrPolicyPhase phase)
{
    return phase < G_N_ELEMENTS (phase_names) ? phase_names[phase] : "unknown";
}

void
vmr_policy_decision_clear (VmrPolicyDecision *decision)
{
    g_clear_pointer (&decision->reason, g_free);
}

G_GNUC_PRINTF (3, 4)
static void
decide (VmrPolicyDecision *out, VmrPolicyAction action, const gchar *format, ...)
{
    va_list args;

    out->action = action;
    g_free (out->reason);
    va_start (args, format);
    out->reason = g_strdup_vprintf (format, args);
    va_end (args);
}

/* the level a load must fall under to count as quiet for @threshold */
static gdouble
resume_level (const VmrPolicyRule *rule, guint64 threshold)
{
    return (gdouble) threshold * rule->resume_below / 100.0;
}

/*
 * Whether the load has stayed under @level for at least hold, up to @now_us:
 * counted from the end of the last sample at or above it, or from the start
 * of the first sample. The newest sample must be under the level whatever
 * hold is, so that a hold of 0 cannot let a busy guest count as quiet.
 */
static gboolean
stayed_quiet (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
              gdouble level, gint64 now_us)
{
    gint64 since;
    guint i = n_samples;

    while (i > 0 && samples[i - 1].iops < level)
        i--;
    if (i == n_samples)
        return FALSE;
    if (i > 0)
        since = samples[i - 1].time_us;
    else
        since = samples[0].time_us - rule->sample_interval_us;
    return now_us - since >= rule->hold_us;
}

/* the decision for @phase from load and window alone, before max-delay */
static void
decide_for_phase (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
                  VmrPolicyPhase phase, gint64 now_us, gboolean in_window, VmrPolicyDecision *out)
{
    gboolean have_load = n_samples > 0;
    gdouble iops = have_load ? samples[n_samples - 1].iops : 0;
    gboolean over_delay = rule->iops_delay > 0 && have_load && iops > rule->iops_delay;
    gboolean over_throttle = rule->iops_throttle > 0 && have_load && iops > rule->iops_throttle;
    g_autofree gchar *windows = vmr_policy_rule_format_windows (rule);
    g_autofree gchar *hold = vmr_units_format_duration (rule->hold_us);

    switch (phase) {
        case VMR_POLICY_PHASE_QUEUED:
        case VMR_POLICY_PHASE_DELAYED:
            if (!in_window) {
                decide (out, VMR_POLICY_ACTION_DELAY, "outside the copy window %s", windows);
                return;
            }
            if (rule->iops_delay > 0 && !have_load) {
                decide (out, VMR_POLICY_ACTION_DELAY, "waiting for a first load sample");
                return;
            }
            if (over_delay) {
                decide (out, VMR_POLICY_ACTION_DELAY,
                        "guest busy: %.0f IOPS above iops-delay %" G_GUINT64_FORMAT, iops,
                        rule->iops_delay);
                return;
            }
            /* once held back, the guest must be quiet for a while */
            if (phase == VMR_POLICY_PHASE_DELAYED && rule->iops_delay > 0) {
                gdouble level = resume_level (rule, rule->iops_delay);

                if (!stayed_quiet (rule, samples, n_samples, level, now_us)) {
                    decide (out, VMR_POLICY_ACTION_DELAY,
                            "waiting for the guest to stay under %.0f IOPS for %s (now %.0f)",
                            level, hold, iops);
                    return;
                }
            }
            if (over_throttle) {
                decide (out, VMR_POLICY_ACTION_START_THROTTLED,
                        "starting slowed: %.0f IOPS above iops-throttle %" G_GUINT64_FORMAT, iops,
                        rule->iops_throttle);
                return;
            }
            if (have_load && phase == VMR_POLICY_PHASE_DELAYED)
                decide (out, VMR_POLICY_ACTION_START, "guest quiet: %.0f IOPS", iops);
            else if (have_load)
                decide (out, VMR_POLICY_ACTION_START, "guest load %.0f IOPS is within the limits",
                        iops);
            else if (rule->iops_throttle > 0)
                decide (out, VMR_POLICY_ACTION_START, "no load sample yet");
            else
                decide (out, VMR_POLICY_ACTION_START, "no load limit");
            return;

        case VMR_POLICY_PHASE_RUNNING:
        case VMR_POLICY_PHASE_THROTTLED:
            if (!in_window) {
                decide (out, VMR_POLICY_ACTION_PAUSE, "outside the copy window %s", windows);
                return;
            }
            if (over_delay) {
                decide (out, VMR_POLICY_ACTION_PAUSE,
                        "guest busy: %.0f IOPS above iops-delay %" G_GUINT64_FORMAT, iops,
                        rule->iops_delay);
                return;
            }
            if (phase == VMR_POLICY_PHASE_RUNNING) {
                if (over_throttle)
                    decide (out, VMR_POLICY_ACTION_THROTTLE,
                            "guest busy: %.0f IOPS above iops-throttle %" G_GUINT64_FORMAT, iops,
                            rule->iops_throttle);
                else if (have_load)
                    decide (out, VMR_POLICY_ACTION_KEEP,
                            "guest load %.0f IOPS is within the limits", iops);
                else
                    decide (out, VMR_POLICY_ACTION_KEEP, "no load sample yet");
                return;
            }
            if (rule->iops_throttle == 0) {
                decide (out, VMR_POLICY_ACTION_UNTHROTTLE, "iops-throttle is off");
                return;
            }
            {
                gdouble level = resume_level (rule, rule->iops_throttle);

                if (stayed_quiet (rule, samples, n_samples, level, now_us))
                    decide (out, VMR_POLICY_ACTION_UNTHROTTLE,
                            "guest quiet: under %.0f IOPS for %s (now %.0f)", level, hold, iops);
                else if (over_throttle)
                    decide (out, VMR_POLICY_ACTION_KEEP,
                            "guest busy: %.0f IOPS above iops-throttle %" G_GUINT64_FORMAT, iops,
                            rule->iops_throttle);
                else
                    decide (out, VMR_POLICY_ACTION_KEEP,
                            "waiting for the guest to stay under %.0f IOPS for %s (now %.0f)",
                            level, hold, iops);
            }
            return;

        case VMR_POLICY_PHASE_PAUSED:
            if (!in_window) {
                decide (out, VMR_POLICY_ACTION_KEEP, "outside the copy window %s", windows);
                return;
            }
            if (rule->iops_delay > 0) {
                gdouble level = resume_level (rule, rule->iops_delay);

                if (!stayed_quiet (rule, samples, n_samples, level, now_us)) {
                    decide (out, VMR_POLICY_ACTION_KEEP,
                            "waiting for the guest to stay under %.0f IOPS for %s (now %.0f)",
                            level, hold, iops);
                    return;
                }
            }
            if (over_throttle)
                decide (out, VMR_POLICY_ACTION_RESUME_THROTTLED,
                        "resuming slowed: %.0f IOPS above iops-throttle %" G_GUINT64_FORMAT, iops,
                        rule->iops_throttle);
            else if (have_load)
                decide (out, VMR_POLICY_ACTION_RESUME, "guest quiet: %.0f IOPS", iops);
            else
                decide (out, VMR_POLICY_ACTION_RESUME, "no load limit");
            return;

        case VMR_POLICY_PHASE_RELEASED:
        default:
            decide (out, VMR_POLICY_ACTION_KEEP,
                    "max-delay passed; the copy runs regardless of load");
            return;
    }
}

/* whether @decision keeps a job of @phase held back: not started, or paused */
static gboolean
holds_back (VmrPolicyPhase phase, const VmrPolicyDecision *decision)
{
    switch (phase) {
        case VMR_POLICY_PHASE_QUEUED:
        case VMR_POLICY_PHASE_DELAYED:
            return decision->action == VMR_POLICY_ACTION_DELAY;
        case VMR_POLICY_PHASE_PAUSED:
            return decision->action == VMR_POLICY_ACTION_KEEP;
        case VMR_POLICY_PHASE_RUNNING:
        case VMR_POLICY_PHASE_THROTTLED:
        case VMR_POLICY_PHASE_RELEASED:
        default:
            return FALSE;
    }
}

void
vmr_policy_decide (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
                   VmrPolicyPhase phase, gint64 held_us, gint64 now_us, gint seconds_of_day,
                   VmrPolicyDecision *out)
{
    gboolean in_window = vmr_policy_rule_in_window (rule, seconds_of_day);

    out->action = VMR_POLICY_ACTION_KEEP;
    g_clear_pointer (&out->reason, g_free);
    decide_for_phase (rule, samples, n_samples, phase, now_us, in_window, out);

    /*
     * held back too long, and still to be held back: the operator said what
     * to do then. A copy the load and window would let go now just goes.
     */
    if (holds_back (phase, out) && rule->max_delay_us > 0 && held_us >= rule->max_delay_us) {
        g_autofree gchar *held = vmr_units_format_duration (held_us);
        g_autofree gchar *why = g_steal_pointer (&out->reason);

        if (rule->on_max_delay == VMR_ON_MAX_DELAY_FAIL)
            decide (out, VMR_POLICY_ACTION_FAIL, "held back for %s, longer than max-delay (%s)",
                    held, why);
        else
            decide (out, VMR_POLICY_ACTION_PROCEED,
                    "held back for %s, longer than max-delay: proceeding regardless of load (%s)",
                    held, why);
    }
}
