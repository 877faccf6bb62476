#define G_LOG_DOMAIN "vmr-policy"

#include <string.h>

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

/* decides @action for @reason, which @out takes */
static void
decide_owned (VmrPolicyDecision *out, VmrPolicyAction action, gchar *reason)
{
    out->action = action;
    g_free (out->reason);
    out->reason = reason;
}

G_GNUC_PRINTF (3, 4)
static void
decide (VmrPolicyDecision *out, VmrPolicyAction action, const gchar *format, ...)
{
    va_list args;

    va_start (args, format);
    decide_owned (out, action, g_strdup_vprintf (format, args));
    va_end (args);
}

/* what a threshold is on */
typedef enum {
    MEASURE_IOPS,    /* the guest's reads + writes per second */
    MEASURE_LATENCY, /* the mean time of one guest I/O, in microseconds */
    MEASURE_LAST,
} Measure;

/* one threshold of the rule */
typedef struct {
    Measure measure;
    VmrPolicyKey key; /* named in the reasons */
    gdouble limit;    /* IOPS or microseconds, 0 = off */
} Threshold;

/* the thresholds of one kind (delay or throttle), one per measure, IOPS first */
typedef struct {
    Threshold on[MEASURE_LAST];
} Thresholds;

static gdouble
measure_of (const VmrLoadSample *sample, Measure measure)
{
    return measure == MEASURE_LATENCY ? sample->latency_us : sample->iops;
}

/*
 * "820us", "23.4ms", "10.02ms", "16ms": to 10 us, so that a latency just over
 * a threshold does not read as the threshold itself; free with g_free()
 */
static gchar *
format_latency (gdouble usec)
{
    gchar text[G_ASCII_DTOSTR_BUF_SIZE];
    gsize len;

    if (usec < 1000)
        return g_strdup_printf ("%.0fus", usec);
    g_ascii_formatd (text, sizeof text, "%.2f", usec / 1000);
    len = strlen (text);
    while (text[len - 1] == '0')
        text[--len] = '\0';
    if (text[len - 1] == '.')
        text[--len] = '\0';
    return g_strdup_printf ("%sms", text);
}

static gboolean
any_set (const Thresholds *thresholds)
{
    for (guint m = 0; m < MEASURE_LAST; m++) {
        if (thresholds->on[m].limit > 0)
            return TRUE;
    }
    return FALSE;
}

/* the first threshold the newest sample is above, NULL if none */
static const Threshold *
first_over (const Thresholds *thresholds, const VmrLoadSample *samples, guint n_samples)
{
    for (guint m = 0; n_samples > 0 && m < MEASURE_LAST; m++) {
        const Threshold *threshold = &thresholds->on[m];

        if (threshold->limit > 0
            && measure_of (&samples[n_samples - 1], threshold->measure) > threshold->limit)
            return threshold;
    }
    return NULL;
}

/* the level a load must fall under to count as quiet for @threshold */
static gdouble
resume_level (const VmrPolicyRule *rule, const Threshold *threshold)
{
    return threshold->limit * rule->resume_below / 100.0;
}

/*
 * Whether the load has stayed under the resume level of @threshold for at
 * least hold, up to @now_us: counted from the end of the last sample at or
 * above it, or from the start of the first sample. The newest sample must be
 * under the level whatever hold is, so that a hold of 0 cannot let a busy
 * guest count as quiet.
 */
static gboolean
stayed_quiet (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
              const Threshold *threshold, gint64 now_us)
{
    gdouble level = resume_level (rule, threshold);
    gint64 since;
    guint i = n_samples;

    while (i > 0 && measure_of (&samples[i - 1], threshold->measure) < level)
        i--;
    if (i == n_samples)
        return FALSE;
    if (i > 0)
        since = samples[i - 1].time_us;
    else
        since = samples[0].time_us - rule->sample_interval_us;
    return now_us - since >= rule->hold_us;
}

/* the first threshold that is set and the load has not stayed quiet for, NULL if none */
static const Threshold *
first_not_quiet (const VmrPolicyRule *rule, const Thresholds *thresholds,
                 const VmrLoadSample *samples, guint n_samples, gint64 now_us)
{
    for (guint m = 0; m < MEASURE_LAST; m++) {
        const Threshold *threshold = &thresholds->on[m];

        if (threshold->limit > 0 && !stayed_quiet (rule, samples, n_samples, threshold, now_us))
            return threshold;
    }
    return NULL;
}

/* how the reasons speak of each measure */
static const struct {
    const gchar *name;    /* before a value: "latency 23.4ms" */
    const gchar *unit;    /* after it: "4500 IOPS" */
    const gchar *above;   /* "4500 IOPS above iops-delay 4000" */
    const gchar *busy;    /* a copy held back or slowed: "guest busy: ..." */
    const gchar *quiet;   /* "under 1600 IOPS for 30s (now 1000)" */
    const gchar *waiting; /* "waiting for the guest to stay under 1600 IOPS ..." */
} phrases[MEASURE_LAST] = {
    [MEASURE_IOPS]
    = { "", " IOPS", "above", "guest busy", "under", "waiting for the guest to stay under" },
    [MEASURE_LATENCY] = { "latency ", "", ">", "guest I/O slow", "latency under",
                          "waiting for the guest's latency to stay under" },
};

/* @value of @measure without its unit: "4500", "23.4ms"; free with g_free() */
static gchar *
format_measure (Measure measure, gdouble value)
{
    if (measure == MEASURE_LATENCY)
        return format_latency (value);
    return g_strdup_printf ("%.0f", value);
}

/*
 * The reasons about one threshold, the load being @sample (NULL: no sample
 * yet); each is freed with g_free().
 */

/* "4500 IOPS above iops-delay 4000", "latency 23.4ms > latency-delay 20ms" */
static gchar *
over_text (const VmrPolicyRule *rule, const Threshold *threshold, const VmrLoadSample *sample)
{
    g_autofree gchar *limit = vmr_policy_rule_format_value (rule, threshold->key);
    g_autofree gchar *value
        = format_measure (threshold->measure, measure_of (sample, threshold->measure));

    return g_strdup_printf ("%s%s%s %s %s %s", phrases[threshold->measure].name, value,
                            phrases[threshold->measure].unit, phrases[threshold->measure].above,
                            vmr_policy_key_name (threshold->key), limit);
}

/* a copy held back or slowed by @threshold: "guest busy: 4500 IOPS above iops-delay 4000" */
static gchar *
busy_text (const VmrPolicyRule *rule, const Threshold *threshold, const VmrLoadSample *sample)
{
    g_autofree gchar *over = over_text (rule, threshold, sample);

    return g_strdup_printf ("%s: %s", phrases[threshold->measure].busy, over);
}

/* @what, the resume level of @threshold, hold and the load: "under 1600 IOPS for 30s (now 1000)" */
static gchar *
level_text (const VmrPolicyRule *rule, const Threshold *threshold, const VmrLoadSample *sample,
            const gchar *what)
{
    g_autofree gchar *level = format_measure (threshold->measure, resume_level (rule, threshold));
    g_autofree gchar *now = format_measure (
        threshold->measure, sample != NULL ? measure_of (sample, threshold->measure) : 0);
    g_autofree gchar *hold = vmr_units_format_duration (rule->hold_us);

    return g_strdup_printf ("%s %s%s for %s (now %s)", what, level,
                            phrases[threshold->measure].unit, hold, now);
}

/* "under 1600 IOPS for 30s (now 1000)", "latency under 8ms for 30s (now 820us)" */
static gchar *
quiet_text (const VmrPolicyRule *rule, const Threshold *threshold, const VmrLoadSample *sample)
{
    return level_text (rule, threshold, sample, phrases[threshold->measure].quiet);
}

/* "waiting for the guest to stay under 3200 IOPS for 30s (now 3500)" */
static gchar *
waiting_text (const VmrPolicyRule *rule, const Threshold *threshold, const VmrLoadSample *sample)
{
    return level_text (rule, threshold, sample, phrases[threshold->measure].waiting);
}

/* "under 1600 IOPS for 30s (now 1000), latency under 8ms for 30s (now 820us)" */
static gchar *
all_quiet_text (const VmrPolicyRule *rule, const Thresholds *thresholds,
                const VmrLoadSample *sample)
{
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint m = 0; m < MEASURE_LAST; m++) {
        g_autofree gchar *quiet = NULL;

        if (thresholds->on[m].limit == 0)
            continue;
        quiet = quiet_text (rule, &thresholds->on[m], sample);
        g_string_append_printf (text, "%s%s", text->len > 0 ? ", " : "", quiet);
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

/* the guest's load: "1400 IOPS", with its latency when a latency threshold is set */
static gchar *
load_text (const VmrPolicyRule *rule, const VmrLoadSample *sample)
{
    g_autofree gchar *latency = NULL;

    if (rule->latency_throttle_us == 0 && rule->latency_delay_us == 0)
        return g_strdup_printf ("%.0f IOPS", sample->iops);
    latency = format_latency (sample->latency_us);
    return g_strdup_printf ("%.0f IOPS, latency %s", sample->iops, latency);
}

/* what one decision is made from: the policy, the load samples and the window */
typedef struct {
    const VmrPolicyRule *rule;
    const VmrLoadSample *samples;
    guint n_samples;
    gint64 now_us;
    gboolean in_window;
    Thresholds delays;
    Thresholds throttles;
    const VmrLoadSample *latest;    /* NULL before the first sample */
    const Threshold *over_delay;    /* the first delay threshold the load is over, or NULL */
    const Threshold *over_throttle; /* the same of the throttle thresholds */
    gchar *windows;                 /* the copy windows, as the policy writes them */
    gchar *load;                    /* the latest load, as reasons say it, or NULL */
} Judgement;

static void
judgement_clear (Judgement *j)
{
    g_free (j->windows);
    g_free (j->load);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Judgement, judgement_clear)

/* the first threshold of @set the guest has not been quiet under for long enough, or NULL */
static const Threshold *
judgement_not_quiet (const Judgement *j, const Thresholds *set)
{
    return first_not_quiet (j->rule, set, j->samples, j->n_samples, j->now_us);
}

/* a job not started yet (@delayed: held back before) */
static void
decide_waiting (const Judgement *j, gboolean delayed, VmrPolicyDecision *out)
{
    const Threshold *not_quiet;
    g_autofree gchar *why = NULL;

    if (!j->in_window) {
        decide (out, VMR_POLICY_ACTION_DELAY, "outside the copy window %s", j->windows);
        return;
    }
    if (any_set (&j->delays) && j->latest == NULL) {
        decide (out, VMR_POLICY_ACTION_DELAY, "waiting for a first load sample");
        return;
    }
    if (j->over_delay != NULL) {
        decide_owned (out, VMR_POLICY_ACTION_DELAY, busy_text (j->rule, j->over_delay, j->latest));
        return;
    }
    /* once held back, the guest must be quiet for a while */
    if (delayed && (not_quiet = judgement_not_quiet (j, &j->delays)) != NULL) {
        decide_owned (out, VMR_POLICY_ACTION_DELAY, waiting_text (j->rule, not_quiet, j->latest));
        return;
    }
    if (j->over_throttle != NULL) {
        why = over_text (j->rule, j->over_throttle, j->latest);
        decide (out, VMR_POLICY_ACTION_START_THROTTLED, "starting slowed: %s", why);
        return;
    }
    if (j->latest != NULL && delayed)
        decide (out, VMR_POLICY_ACTION_START, "guest quiet: %s", j->load);
    else if (j->latest != NULL)
        decide (out, VMR_POLICY_ACTION_START, "guest load %s is within the limits", j->load);
    else if (any_set (&j->throttles))
        decide (out, VMR_POLICY_ACTION_START, "no load sample yet");
    else
        decide (out, VMR_POLICY_ACTION_START, "no load limit");
}

/* a copy running (@throttled: slowed by the policy) */
static void
decide_running (const Judgement *j, gboolean throttled, VmrPolicyDecision *out)
{
    const Threshold *not_quiet;
    g_autofree gchar *why = NULL;

    if (!j->in_window) {
        decide (out, VMR_POLICY_ACTION_PAUSE, "outside the copy window %s", j->windows);
        return;
    }
    if (j->over_delay != NULL) {
        decide_owned (out, VMR_POLICY_ACTION_PAUSE, busy_text (j->rule, j->over_delay, j->latest));
        return;
    }
    if (!throttled) {
        if (j->over_throttle != NULL)
            decide_owned (out, VMR_POLICY_ACTION_THROTTLE,
                          busy_text (j->rule, j->over_throttle, j->latest));
        else if (j->latest != NULL)
            decide (out, VMR_POLICY_ACTION_KEEP, "guest load %s is within the limits", j->load);
        else
            decide (out, VMR_POLICY_ACTION_KEEP, "no load sample yet");
        return;
    }
    /* back to full speed once quiet for every throttle threshold */
    if (!any_set (&j->throttles)) {
        decide (out, VMR_POLICY_ACTION_UNTHROTTLE,
                "iops-throttle is off and so is latency-throttle");
        return;
    }
    not_quiet = judgement_not_quiet (j, &j->throttles);
    if (not_quiet == NULL) {
        why = all_quiet_text (j->rule, &j->throttles, j->latest);
        decide (out, VMR_POLICY_ACTION_UNTHROTTLE, "guest quiet: %s", why);
    } else if (j->over_throttle != NULL)
        decide_owned (out, VMR_POLICY_ACTION_KEEP,
                      busy_text (j->rule, j->over_throttle, j->latest));
    else
        decide_owned (out, VMR_POLICY_ACTION_KEEP, waiting_text (j->rule, not_quiet, j->latest));
}

/* a copy paused by the policy */
static void
decide_paused (const Judgement *j, VmrPolicyDecision *out)
{
    const Threshold *not_quiet;
    g_autofree gchar *why = NULL;

    if (!j->in_window) {
        decide (out, VMR_POLICY_ACTION_KEEP, "outside the copy window %s", j->windows);
        return;
    }
    not_quiet = judgement_not_quiet (j, &j->delays);
    if (not_quiet != NULL) {
        decide_owned (out, VMR_POLICY_ACTION_KEEP, waiting_text (j->rule, not_quiet, j->latest));
        return;
    }
    if (j->over_throttle != NULL) {
        why = over_text (j->rule, j->over_throttle, j->latest);
        decide (out, VMR_POLICY_ACTION_RESUME_THROTTLED, "resuming slowed: %s", why);
    } else if (j->latest != NULL)
        decide (out, VMR_POLICY_ACTION_RESUME, "guest quiet: %s", j->load);
    else
        decide (out, VMR_POLICY_ACTION_RESUME, "no load limit");
}

/* the decision for @phase from load and window alone, before max-delay */
static void
decide_for_phase (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
                  VmrPolicyPhase phase, gint64 now_us, gboolean in_window, VmrPolicyDecision *out)
{
    g_auto (Judgement) j = {
        .rule = rule,
        .samples = samples,
        .n_samples = n_samples,
        .now_us = now_us,
        .in_window = in_window,
        .delays = { {
            { MEASURE_IOPS, VMR_POLICY_KEY_IOPS_DELAY, (gdouble) rule->iops_delay },
            { MEASURE_LATENCY, VMR_POLICY_KEY_LATENCY_DELAY, (gdouble) rule->latency_delay_us },
        } },
        .throttles = { {
            { MEASURE_IOPS, VMR_POLICY_KEY_IOPS_THROTTLE, (gdouble) rule->iops_throttle },
            { MEASURE_LATENCY, VMR_POLICY_KEY_LATENCY_THROTTLE,
              (gdouble) rule->latency_throttle_us },
        } },
        .latest = n_samples > 0 ? &samples[n_samples - 1] : NULL,
    };

    /* the thresholds point into the judgement itself */
    j.over_delay = first_over (&j.delays, samples, n_samples);
    j.over_throttle = first_over (&j.throttles, samples, n_samples);
    j.windows = vmr_policy_rule_format_windows (rule);
    j.load = j.latest != NULL ? load_text (rule, j.latest) : NULL;
    switch (phase) {
        case VMR_POLICY_PHASE_QUEUED:
        case VMR_POLICY_PHASE_DELAYED:
            decide_waiting (&j, phase == VMR_POLICY_PHASE_DELAYED, out);
            return;
        case VMR_POLICY_PHASE_RUNNING:
        case VMR_POLICY_PHASE_THROTTLED:
            decide_running (&j, phase == VMR_POLICY_PHASE_THROTTLED, out);
            return;
        case VMR_POLICY_PHASE_PAUSED:
            decide_paused (&j, out);
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
