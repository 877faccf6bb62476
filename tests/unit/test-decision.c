/*
 * The decision function: every transition from tables of rule, load, phase,
 * time held back and clock, and no flapping when the load hovers around a
 * threshold.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "decision.h"
#include "test-report.h"

#define SECOND G_USEC_PER_SEC
#define NOW    (G_GINT64_CONSTANT (100000) * SECOND)
#define HOURS  3600

/* the parts of a rule the decision reads; the others keep their built-in value */
typedef struct {
    guint64 iops_throttle;
    guint64 iops_delay;
    guint resume_below; /* 0: 80 */
    gint hold_s;        /* < 0: 0 s; 0: 30 s */
    gint window_start;  /* seconds of day */
    gint window_end;    /* == window_start: no window */
    gint max_delay_s;
    VmrOnMaxDelay on_max_delay;
} RuleSpec;

/* a guest doing ~1400 IOPS, slowed above 2000, held back above 4000 */
#define BUSY_RULE .iops_throttle = 2000, .iops_delay = 4000
#define NIGHT     .window_start = 23 * HOURS, .window_end = 2 * HOURS

static VmrPolicyRule *
rule_new (const RuleSpec *spec)
{
    g_autoptr (VmrPolicy) built_in = vmr_policy_new_default ();
    VmrPolicyRule *rule = vmr_policy_lookup (built_in, NULL, NULL);

    rule->sample_interval_us = SECOND;
    rule->iops_throttle = spec->iops_throttle;
    rule->iops_delay = spec->iops_delay;
    rule->resume_below = spec->resume_below != 0 ? spec->resume_below : 80;
    rule->hold_us = spec->hold_s < 0 ? 0 : (spec->hold_s != 0 ? spec->hold_s : 30) * SECOND;
    if (spec->window_start != spec->window_end) {
        VmrWindow window = { spec->window_start, spec->window_end };

        g_array_append_val (rule->windows, window);
    }
    rule->max_delay_us = (gint64) spec->max_delay_s * SECOND;
    rule->on_max_delay = spec->on_max_delay;
    return rule;
}

/*
 * "4500 1000*30": one sample per second, the last one ending at NOW, with
 * "VALUE*COUNT" for COUNT samples of VALUE.
 */
static GArray *
samples_new (const gchar *load)
{
    g_auto (GStrv) words = g_strsplit (load != NULL ? load : "", " ", -1);
    g_autoptr (GArray) iops = g_array_new (FALSE, FALSE, sizeof (gdouble));
    GArray *samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));

    for (guint i = 0; words[i] != NULL; i++) {
        gchar *star = strchr (words[i], '*');
        gdouble value = g_ascii_strtod (words[i], NULL);
        guint count = star != NULL ? (guint) g_ascii_strtoull (star + 1, NULL, 10) : 1;

        if (*words[i] == '\0')
            continue;
        for (guint c = 0; c < count; c++)
            g_array_append_val (iops, value);
    }
    for (guint i = 0; i < iops->len; i++) {
        VmrLoadSample sample = {
            .time_us = NOW - (gint64) (iops->len - 1 - i) * SECOND,
            .iops = g_array_index (iops, gdouble, i),
            .latency_us = 500,
        };

        g_array_append_val (samples, sample);
    }
    return samples;
}

typedef struct {
    const gchar *name;
    RuleSpec rule;
    const gchar *load; /* see samples_new(); NULL = no sample yet */
    VmrPolicyPhase phase;
    gint held_s;
    gint clock; /* seconds of day */
    VmrPolicyAction action;
    const gchar *reason; /* a part of the reason */
} DecideCase;

static const DecideCase decide_cases[] = {
    /* queued */
    { "queued, no limits",
      { 0 },
      NULL,
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "no load limit" },
    { "queued, quiet",
      { BUSY_RULE },
      "1400",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest load 1400 IOPS is within the limits" },
    { "queued, at iops-throttle",
      { BUSY_RULE },
      "2000",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest load 2000 IOPS is within the limits" },
    { "queued, over iops-throttle",
      { BUSY_RULE },
      "2500",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START_THROTTLED,
      "starting slowed: 2500 IOPS above iops-throttle 2000" },
    { "queued, at iops-delay",
      { BUSY_RULE },
      "4000",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START_THROTTLED,
      "4000 IOPS above iops-throttle" },
    { "queued, busy",
      { BUSY_RULE },
      "1400 4500",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "guest busy: 4500 IOPS above iops-delay 4000" },
    { "queued, no sample, iops-delay",
      { BUSY_RULE },
      NULL,
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "waiting for a first load sample" },
    { "queued, no sample, iops-throttle only",
      { .iops_throttle = 2000 },
      NULL,
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "no load sample yet" },
    { "queued, outside the window",
      { BUSY_RULE, NIGHT },
      "1400",
      VMR_POLICY_PHASE_QUEUED,
      0,
      3 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "outside the copy window 23:00-02:00" },
    { "queued, window over midnight, at 01:00",
      { BUSY_RULE, NIGHT },
      "1400",
      VMR_POLICY_PHASE_QUEUED,
      0,
      1 * HOURS,
      VMR_POLICY_ACTION_START,
      "within the limits" },
    { "queued, window over midnight, at 23:00",
      { BUSY_RULE, NIGHT },
      "1400",
      VMR_POLICY_PHASE_QUEUED,
      0,
      23 * HOURS,
      VMR_POLICY_ACTION_START,
      "within the limits" },
    { "queued, window over midnight, at 02:00",
      { BUSY_RULE, NIGHT },
      "1400",
      VMR_POLICY_PHASE_QUEUED,
      0,
      2 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "outside the copy window" },
    { "queued, window, no load limit",
      { NIGHT },
      NULL,
      VMR_POLICY_PHASE_QUEUED,
      0,
      0,
      VMR_POLICY_ACTION_START,
      "no load limit" },

    /* delayed: start only after hold of quiet under resume-below of iops-delay */
    { "delayed, still busy",
      { BUSY_RULE },
      "4500*40",
      VMR_POLICY_PHASE_DELAYED,
      40,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "guest busy: 4500 IOPS above iops-delay 4000" },
    { "delayed, under iops-delay, over resume-below",
      { BUSY_RULE },
      "4500 3500*60",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "waiting for the guest to stay under 3200 IOPS for 30s (now 3500)" },
    { "delayed, quiet for 29 s",
      { BUSY_RULE },
      "4500 1000*29",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "stay under 3200 IOPS for 30s (now 1000)" },
    { "delayed, quiet for 30 s",
      { BUSY_RULE },
      "4500 1000*30",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest quiet: 1000 IOPS" },
    { "delayed, quiet for 30 s, over iops-throttle",
      { BUSY_RULE },
      "4500 3000*30",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_START_THROTTLED,
      "3000 IOPS above iops-throttle 2000" },
    { "delayed, every sample quiet, 30 s of them",
      { BUSY_RULE },
      "1000*30",
      VMR_POLICY_PHASE_DELAYED,
      30,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest quiet" },
    { "delayed, every sample quiet, 29 s of them",
      { BUSY_RULE },
      "1000*29",
      VMR_POLICY_PHASE_DELAYED,
      30,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "stay under 3200" },
    { "delayed, one busy sample restarts the hold",
      { BUSY_RULE },
      "1000*40 3300 1000*10",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "stay under 3200" },
    { "delayed, resume-below 50%",
      { BUSY_RULE, .resume_below = 50 },
      "4500 2500*60",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "stay under 2000" },
    { "delayed, hold 10 s",
      { BUSY_RULE, .hold_s = 10 },
      "4500 1000*10",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest quiet" },
    { "delayed, outside the window",
      { BUSY_RULE, NIGHT },
      "1000*60",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "outside the copy window" },
    { "delayed by the window, no iops-delay, window open",
      { .iops_throttle = 2000, NIGHT },
      "1400",
      VMR_POLICY_PHASE_DELAYED,
      600,
      0,
      VMR_POLICY_ACTION_START,
      "guest quiet" },

    /* running */
    { "running, quiet",
      { BUSY_RULE },
      "1400",
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "guest load 1400 IOPS is within the limits" },
    { "running, at iops-throttle",
      { BUSY_RULE },
      "2000",
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "within the limits" },
    { "running, over iops-throttle",
      { BUSY_RULE },
      "1400 2400",
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_THROTTLE,
      "guest busy: 2400 IOPS above iops-throttle 2000" },
    { "running, over iops-delay",
      { BUSY_RULE },
      "1400 4500",
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_PAUSE,
      "guest busy: 4500 IOPS above iops-delay 4000" },
    { "running, outside the window",
      { BUSY_RULE, NIGHT },
      "1400",
      VMR_POLICY_PHASE_RUNNING,
      0,
      3 * HOURS,
      VMR_POLICY_ACTION_PAUSE,
      "outside the copy window 23:00-02:00" },
    { "running, no limits",
      { 0 },
      "9000",
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "within the limits" },
    { "running, no sample",
      { BUSY_RULE },
      NULL,
      VMR_POLICY_PHASE_RUNNING,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "no load sample yet" },

    /* throttled: back to full speed only after hold */
    { "throttled, still busy",
      { BUSY_RULE },
      "2500",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "guest busy: 2500 IOPS above iops-throttle 2000" },
    { "throttled, under iops-throttle, over resume-below",
      { BUSY_RULE },
      "2500 1900*60",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "waiting for the guest to stay under 1600 IOPS for 30s (now 1900)" },
    { "throttled, quiet for 29 s",
      { BUSY_RULE },
      "2500 1000*29",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 1600" },
    { "throttled, quiet for 30 s",
      { BUSY_RULE },
      "2500 1000*30",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_UNTHROTTLE,
      "guest quiet: under 1600 IOPS for 30s (now 1000)" },
    { "throttled, over iops-delay",
      { BUSY_RULE },
      "2500 4500",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_PAUSE,
      "guest busy: 4500 IOPS above iops-delay 4000" },
    { "throttled, outside the window",
      { BUSY_RULE, NIGHT },
      "2500",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_PAUSE,
      "outside the copy window" },
    { "throttled, iops-throttle off",
      { .iops_delay = 4000 },
      "2500",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_UNTHROTTLE,
      "iops-throttle is off" },

    /* paused: resume after hold of quiet under resume-below of iops-delay */
    { "paused, still busy",
      { BUSY_RULE },
      "4500*10",
      VMR_POLICY_PHASE_PAUSED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "waiting for the guest to stay under 3200 IOPS for 30s (now 4500)" },
    { "paused, under iops-delay, over resume-below",
      { BUSY_RULE },
      "4500 3500*60",
      VMR_POLICY_PHASE_PAUSED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 3200" },
    { "paused, quiet for 29 s",
      { BUSY_RULE },
      "4500 1000*29",
      VMR_POLICY_PHASE_PAUSED,
      30,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 3200" },
    { "paused, quiet for 30 s",
      { BUSY_RULE },
      "4500 1000*30",
      VMR_POLICY_PHASE_PAUSED,
      30,
      12 * HOURS,
      VMR_POLICY_ACTION_RESUME,
      "guest quiet: 1000 IOPS" },
    { "paused, quiet for 30 s, over iops-throttle",
      { BUSY_RULE },
      "4500 2500*30",
      VMR_POLICY_PHASE_PAUSED,
      30,
      12 * HOURS,
      VMR_POLICY_ACTION_RESUME_THROTTLED,
      "resuming slowed: 2500 IOPS above iops-throttle 2000" },
    { "paused, outside the window",
      { BUSY_RULE, NIGHT },
      "1000*60",
      VMR_POLICY_PHASE_PAUSED,
      60,
      3 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "outside the copy window" },
    { "paused by the window, no iops-delay, window open",
      { .iops_throttle = 2000, NIGHT },
      "1400",
      VMR_POLICY_PHASE_PAUSED,
      600,
      1 * HOURS,
      VMR_POLICY_ACTION_RESUME,
      "guest quiet" },
    { "paused by the window, window open, busy",
      { .iops_throttle = 2000, NIGHT },
      "2500",
      VMR_POLICY_PHASE_PAUSED,
      600,
      1 * HOURS,
      VMR_POLICY_ACTION_RESUME_THROTTLED,
      "resuming slowed" },

    /* hold 0: the newest sample must still be under the level */
    { "paused, hold 0, busy",
      { BUSY_RULE, .hold_s = -1 },
      "4500",
      VMR_POLICY_PHASE_PAUSED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 3200 IOPS for 0s" },
    { "paused, hold 0, no sample",
      { BUSY_RULE, .hold_s = -1 },
      NULL,
      VMR_POLICY_PHASE_PAUSED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 3200" },
    { "paused, hold 0, quiet",
      { BUSY_RULE, .hold_s = -1 },
      "4500 1000",
      VMR_POLICY_PHASE_PAUSED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_RESUME,
      "guest quiet" },
    { "throttled, hold 0, over resume-below",
      { BUSY_RULE, .hold_s = -1 },
      "1900",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "stay under 1600" },
    { "throttled, hold 0, quiet",
      { BUSY_RULE, .hold_s = -1 },
      "1500",
      VMR_POLICY_PHASE_THROTTLED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_UNTHROTTLE,
      "under 1600" },
    { "delayed, hold 0, over resume-below",
      { BUSY_RULE, .hold_s = -1 },
      "3500",
      VMR_POLICY_PHASE_DELAYED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "stay under 3200" },
    { "delayed, hold 0, quiet",
      { BUSY_RULE, .hold_s = -1 },
      "3000",
      VMR_POLICY_PHASE_DELAYED,
      10,
      12 * HOURS,
      VMR_POLICY_ACTION_START_THROTTLED,
      "starting slowed" },

    /* max-delay */
    { "delayed, max-delay passed, busy, proceed",
      { BUSY_RULE, .max_delay_s = 3600 },
      "4500",
      VMR_POLICY_PHASE_DELAYED,
      3600,
      12 * HOURS,
      VMR_POLICY_ACTION_PROCEED,
      "held back for 1h00m, longer than max-delay: proceeding regardless of load" },
    { "delayed, max-delay passed, busy, fail",
      { BUSY_RULE, .max_delay_s = 3600, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500",
      VMR_POLICY_PHASE_DELAYED,
      3700,
      12 * HOURS,
      VMR_POLICY_ACTION_FAIL,
      "held back for 1h01m, longer than max-delay (guest busy: 4500 IOPS" },
    { "delayed, max-delay not yet",
      { BUSY_RULE, .max_delay_s = 3600 },
      "4500",
      VMR_POLICY_PHASE_DELAYED,
      3599,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "guest busy" },
    { "delayed, max-delay not yet, fail",
      { BUSY_RULE, .max_delay_s = 3600, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500",
      VMR_POLICY_PHASE_DELAYED,
      3599,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "guest busy" },
    { "delayed, max-delay passed, outside the window",
      { BUSY_RULE, NIGHT, .max_delay_s = 60 },
      "1000*90",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_PROCEED,
      "outside the copy window" },
    { "delayed, max-delay passed, waiting for the hold",
      { BUSY_RULE, .max_delay_s = 60, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500 1000*10",
      VMR_POLICY_PHASE_DELAYED,
      60,
      12 * HOURS,
      VMR_POLICY_ACTION_FAIL,
      "stay under 3200" },
    { "delayed, max-delay passed, but quiet now: starts",
      { BUSY_RULE, .max_delay_s = 60, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500 1000*30",
      VMR_POLICY_PHASE_DELAYED,
      90,
      12 * HOURS,
      VMR_POLICY_ACTION_START,
      "guest quiet" },
    { "queued, max-delay, never held",
      { BUSY_RULE, .max_delay_s = 60 },
      "4500",
      VMR_POLICY_PHASE_QUEUED,
      0,
      12 * HOURS,
      VMR_POLICY_ACTION_DELAY,
      "guest busy" },
    { "paused, max-delay passed, proceed",
      { BUSY_RULE, .max_delay_s = 600 },
      "4500",
      VMR_POLICY_PHASE_PAUSED,
      600,
      12 * HOURS,
      VMR_POLICY_ACTION_PROCEED,
      "held back for 10m00s, longer than max-delay" },
    { "paused, max-delay passed, fail",
      { BUSY_RULE, .max_delay_s = 600, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500",
      VMR_POLICY_PHASE_PAUSED,
      601,
      12 * HOURS,
      VMR_POLICY_ACTION_FAIL,
      "longer than max-delay" },
    { "paused, max-delay passed, but quiet now: resumes",
      { BUSY_RULE, .max_delay_s = 600, .on_max_delay = VMR_ON_MAX_DELAY_FAIL },
      "4500 1000*30",
      VMR_POLICY_PHASE_PAUSED,
      900,
      12 * HOURS,
      VMR_POLICY_ACTION_RESUME,
      "guest quiet" },
    { "running, max-delay passed long ago: not held back",
      { BUSY_RULE, .max_delay_s = 60 },
      "2500",
      VMR_POLICY_PHASE_RUNNING,
      600,
      12 * HOURS,
      VMR_POLICY_ACTION_THROTTLE,
      "guest busy" },
    { "throttled, max-delay passed long ago",
      { BUSY_RULE, .max_delay_s = 60 },
      "4500",
      VMR_POLICY_PHASE_THROTTLED,
      600,
      12 * HOURS,
      VMR_POLICY_ACTION_PAUSE,
      "guest busy" },

    /* released */
    { "released, busy",
      { BUSY_RULE, .max_delay_s = 60 },
      "9000",
      VMR_POLICY_PHASE_RELEASED,
      600,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "max-delay passed; the copy runs regardless of load" },
    { "released, outside the window",
      { BUSY_RULE, NIGHT, .max_delay_s = 60 },
      "1400",
      VMR_POLICY_PHASE_RELEASED,
      600,
      12 * HOURS,
      VMR_POLICY_ACTION_KEEP,
      "max-delay passed" },
};

static void
test_decision_table (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (decide_cases); i++) {
        const DecideCase *c = &decide_cases[i];
        g_autoptr (VmrPolicyRule) rule = rule_new (&c->rule);
        g_autoptr (GArray) samples = samples_new (c->load);
        g_auto (VmrPolicyDecision) decision = { 0 };

        vmr_policy_decide (rule, (const VmrLoadSample *) samples->data, samples->len, c->phase,
                           (gint64) c->held_s * SECOND, NOW, c->clock, &decision);
        g_test_message ("%s: %s (%s)", c->name, vmr_policy_action_to_string (decision.action),
                        decision.reason);
        if (decision.action != c->action)
            vmr_test_report_failure ("%s: %s (%s), expected %s", c->name,
                                     vmr_policy_action_to_string (decision.action), decision.reason,
                                     vmr_policy_action_to_string (c->action));
        /* every decision says why, KEEP included */
        else if (decision.reason == NULL || strstr (decision.reason, c->reason) == NULL)
            vmr_test_report_failure ("%s: reason '%s' lacks '%s'", c->name, decision.reason,
                                     c->reason);
    }
}

/* a decision reused for the next call loses its old reason */
static void
test_decision_reuse (void)
{
    RuleSpec spec = { BUSY_RULE };
    g_autoptr (VmrPolicyRule) rule = rule_new (&spec);
    g_autoptr (GArray) busy = samples_new ("4500");
    g_autoptr (GArray) quiet = samples_new ("1000*40");
    g_auto (VmrPolicyDecision) decision = { 0 };

    vmr_policy_decide (rule, (const VmrLoadSample *) busy->data, busy->len,
                       VMR_POLICY_PHASE_RUNNING, 0, NOW, 0, &decision);
    g_assert_cmpint (decision.action, ==, VMR_POLICY_ACTION_PAUSE);
    vmr_policy_decide (rule, (const VmrLoadSample *) quiet->data, quiet->len,
                       VMR_POLICY_PHASE_PAUSED, 40 * SECOND, NOW, 0, &decision);
    g_assert_cmpint (decision.action, ==, VMR_POLICY_ACTION_RESUME);
    g_assert_cmpstr (decision.reason, ==, "guest quiet: 1000 IOPS");
}

static void
test_decision_names (void)
{
    g_assert_cmpstr (vmr_policy_action_to_string (VMR_POLICY_ACTION_START_THROTTLED), ==,
                     "start-throttled");
    g_assert_cmpstr (vmr_policy_action_to_string (VMR_POLICY_ACTION_FAIL), ==, "fail");
    g_assert_cmpstr (vmr_policy_action_to_string (VMR_POLICY_ACTION_FAIL + 1), ==, "unknown");
    g_assert_cmpstr (vmr_policy_phase_to_string (VMR_POLICY_PHASE_THROTTLED), ==, "throttled");
    g_assert_cmpstr (vmr_policy_phase_to_string (VMR_POLICY_PHASE_RELEASED + 1), ==, "unknown");
}

/* ---- no flapping ---- */

/* the phase a job is in after @action, as the daemon applies it */
static VmrPolicyPhase
phase_after (VmrPolicyPhase phase, VmrPolicyAction action)
{
    switch (action) {
        case VMR_POLICY_ACTION_START:
        case VMR_POLICY_ACTION_RESUME:
        case VMR_POLICY_ACTION_UNTHROTTLE:
            return VMR_POLICY_PHASE_RUNNING;
        case VMR_POLICY_ACTION_START_THROTTLED:
        case VMR_POLICY_ACTION_RESUME_THROTTLED:
        case VMR_POLICY_ACTION_THROTTLE:
            return VMR_POLICY_PHASE_THROTTLED;
        case VMR_POLICY_ACTION_DELAY:
            return VMR_POLICY_PHASE_DELAYED;
        case VMR_POLICY_ACTION_PAUSE:
            return VMR_POLICY_PHASE_PAUSED;
        case VMR_POLICY_ACTION_PROCEED:
            return VMR_POLICY_PHASE_RELEASED;
        case VMR_POLICY_ACTION_KEEP:
        case VMR_POLICY_ACTION_FAIL:
        default:
            return phase;
    }
}

typedef struct {
    const gchar *name;
    RuleSpec rule;
    VmrPolicyPhase phase; /* at the start */
    gdouble level;        /* the load hovers at +-1% around it */
    guint max_changes;
} FlapCase;

static const FlapCase flap_cases[] = {
    { "iops-throttle, running", { BUSY_RULE }, VMR_POLICY_PHASE_RUNNING, 2000, 1 },
    { "iops-throttle, throttled", { BUSY_RULE }, VMR_POLICY_PHASE_THROTTLED, 2000, 1 },
    { "iops-throttle, running, hold 0",
      { BUSY_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_RUNNING,
      2000,
      1 },
    { "iops-delay, throttled", { BUSY_RULE }, VMR_POLICY_PHASE_THROTTLED, 4000, 1 },
    { "iops-delay, paused", { BUSY_RULE }, VMR_POLICY_PHASE_PAUSED, 4000, 1 },
    { "iops-delay, paused, hold 0", { BUSY_RULE, .hold_s = -1 }, VMR_POLICY_PHASE_PAUSED, 4000, 1 },
    { "iops-delay, delayed", { BUSY_RULE }, VMR_POLICY_PHASE_DELAYED, 4000, 1 },
    { "iops-delay, delayed, hold 0",
      { BUSY_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_DELAYED,
      4000,
      1 },
    { "iops-delay only, running", { .iops_delay = 4000 }, VMR_POLICY_PHASE_RUNNING, 4000, 1 },
    { "iops-delay only, running, hold 0",
      { .iops_delay = 4000, .hold_s = -1 },
      VMR_POLICY_PHASE_RUNNING,
      4000,
      1 },
    /* around the levels that end a slow-down or a pause */
    { "resume level of iops-throttle, throttled",
      { BUSY_RULE },
      VMR_POLICY_PHASE_THROTTLED,
      1600,
      1 },
    { "resume level of iops-throttle, throttled, hold 0",
      { BUSY_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_THROTTLED,
      1600,
      1 },
    { "resume level of iops-delay, paused", { BUSY_RULE }, VMR_POLICY_PHASE_PAUSED, 3200, 1 },
    { "resume level of iops-delay, paused, hold 0",
      { BUSY_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_PAUSED,
      3200,
      1 },
    { "resume level of iops-delay, delayed, hold 0",
      { BUSY_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_DELAYED,
      3200,
      1 },
};

/* the load of second @i: alternating, or drawn from a fixed seed, within +-1% of @level */
static gdouble
hovering_load (GRand *rand, gboolean alternate, gdouble level, guint i)
{
    if (alternate)
        return level * (i % 2 == 0 ? 1.01 : 0.99);
    return level * g_rand_double_range (rand, 0.99, 1.01);
}

static void
test_decision_no_flapping (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (flap_cases); i++) {
        const FlapCase *c = &flap_cases[i];

        for (guint pattern = 0; pattern < 2; pattern++) {
            g_autoptr (VmrPolicyRule) rule = rule_new (&c->rule);
            g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
            g_autoptr (GRand) rand = g_rand_new_with_seed (4242 + i);
            VmrPolicyPhase phase = c->phase;
            gint64 held = 0;
            guint changes = 0;

            for (guint s = 0; s < 30; s++) {
                g_auto (VmrPolicyDecision) decision = { 0 };
                VmrLoadSample sample = {
                    .time_us = NOW + (gint64) s * SECOND,
                    .iops = hovering_load (rand, pattern == 0, c->level, s),
                };
                VmrPolicyPhase next;

                g_array_append_val (samples, sample);
                if (phase == VMR_POLICY_PHASE_DELAYED || phase == VMR_POLICY_PHASE_PAUSED)
                    held += SECOND;
                vmr_policy_decide (rule, (const VmrLoadSample *) samples->data, samples->len, phase,
                                   held, sample.time_us, 12 * HOURS, &decision);
                g_assert_cmpint (decision.action, !=, VMR_POLICY_ACTION_FAIL);
                next = phase_after (phase, decision.action);
                if (next != phase) {
                    g_test_message ("%s: %.0f IOPS at %us: %s -> %s (%s)", c->name, sample.iops, s,
                                    vmr_policy_phase_to_string (phase),
                                    vmr_policy_phase_to_string (next), decision.reason);
                    changes++;
                }
                phase = next;
            }
            if (changes > c->max_changes)
                vmr_test_report_failure ("%s (%s): %u changes", c->name,
                                         pattern == 0 ? "alternating" : "random", changes);
        }
    }
}

/* the same guest going busy and quiet again: one slow-down, one speed-up */
static void
test_decision_burst (void)
{
    RuleSpec spec = { BUSY_RULE };
    g_autoptr (VmrPolicyRule) rule = rule_new (&spec);
    g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
    VmrPolicyPhase phase = VMR_POLICY_PHASE_RUNNING;
    g_autoptr (GString) path = g_string_new ("running");

    /* 20 s normal, 20 s burst, 60 s normal again */
    for (guint s = 0; s < 100; s++) {
        g_auto (VmrPolicyDecision) decision = { 0 };
        VmrLoadSample sample = {
            .time_us = NOW + (gint64) s * SECOND,
            .iops = s >= 20 && s < 40 ? 2400 : 1400,
        };
        VmrPolicyPhase next;

        g_array_append_val (samples, sample);
        vmr_policy_decide (rule, (const VmrLoadSample *) samples->data, samples->len, phase, 0,
                           sample.time_us, 12 * HOURS, &decision);
        next = phase_after (phase, decision.action);
        if (next != phase)
            g_string_append_printf (path, " %u:%s", s, vmr_policy_phase_to_string (next));
        phase = next;
    }
    /* quiet from the end of second 39: 30 s later, at the end of second 69 */
    g_assert_cmpstr (path->str, ==, "running 20:throttled 69:running");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/decision/table", test_decision_table);
    g_test_add_func ("/decision/reuse", test_decision_reuse);
    g_test_add_func ("/decision/names", test_decision_names);
    g_test_add_func ("/decision/no-flapping", test_decision_no_flapping);
    g_test_add_func ("/decision/burst", test_decision_burst);
    return g_test_run ();
}
