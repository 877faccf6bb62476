/*
 * The decision function over time: no flapping when the load (IOPS or
 * latency) hovers around a threshold, and one slow-down and one speed-up for
 * a burst.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "decision-rule.h"
#include "test-report.h"

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
    gdouble level;        /* the load hovers at +-1% around it: IOPS, or microseconds */
    guint max_changes;
    gboolean on_latency; /* the latency hovers, at 1400 IOPS */
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
    /* the same around the latency thresholds, at a steady 1400 IOPS */
    { "latency-throttle, running", { SLOW_RULE }, VMR_POLICY_PHASE_RUNNING, 10000, 1, TRUE },
    { "latency-throttle, throttled", { SLOW_RULE }, VMR_POLICY_PHASE_THROTTLED, 10000, 1, TRUE },
    { "latency-throttle, running, hold 0",
      { SLOW_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_RUNNING,
      10000,
      1,
      TRUE },
    { "latency-delay, throttled", { SLOW_RULE }, VMR_POLICY_PHASE_THROTTLED, 20000, 1, TRUE },
    { "latency-delay, paused", { SLOW_RULE }, VMR_POLICY_PHASE_PAUSED, 20000, 1, TRUE },
    { "latency-delay, paused, hold 0",
      { SLOW_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_PAUSED,
      20000,
      1,
      TRUE },
    { "latency-delay, delayed", { SLOW_RULE }, VMR_POLICY_PHASE_DELAYED, 20000, 1, TRUE },
    { "latency-delay only, running",
      { .latency_delay_ms = 20 },
      VMR_POLICY_PHASE_RUNNING,
      20000,
      1,
      TRUE },
    { "resume level of latency-throttle, throttled",
      { SLOW_RULE },
      VMR_POLICY_PHASE_THROTTLED,
      8000,
      1,
      TRUE },
    { "resume level of latency-throttle, throttled, hold 0",
      { SLOW_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_THROTTLED,
      8000,
      1,
      TRUE },
    { "resume level of latency-delay, paused",
      { SLOW_RULE },
      VMR_POLICY_PHASE_PAUSED,
      16000,
      1,
      TRUE },
    { "resume level of latency-delay, delayed, hold 0",
      { SLOW_RULE, .hold_s = -1 },
      VMR_POLICY_PHASE_DELAYED,
      16000,
      1,
      TRUE },
    { "latency-throttle beside the IOPS thresholds, running",
      { BUSY_RULE, SLOW_RULE },
      VMR_POLICY_PHASE_RUNNING,
      10000,
      1,
      TRUE },
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
            g_autoptr (VmrPolicyRule) rule = vmr_test_rule_new (&c->rule);
            g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
            g_autoptr (GRand) rand = g_rand_new_with_seed (4242 + i);
            VmrPolicyPhase phase = c->phase;
            gint64 held = 0;
            guint changes = 0;

            for (guint s = 0; s < 30; s++) {
                g_auto (VmrPolicyDecision) decision = { 0 };
                gdouble load = hovering_load (rand, pattern == 0, c->level, s);
                VmrLoadSample sample = {
                    .time_us = NOW + (gint64) s * SECOND,
                    .iops = c->on_latency ? 1400 : load,
                    .latency_us = c->on_latency ? load : 500,
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
                    g_test_message ("%s: %.0f at %us: %s -> %s (%s)", c->name, load, s,
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

typedef struct {
    const gchar *name;
    RuleSpec rule;
    VmrLoadSample usual; /* 20 s of it, then 20 s of burst, then 60 s of usual again */
    VmrLoadSample burst;
    const gchar *path; /* the phases the job goes through, from running */
} BurstCase;

static const BurstCase burst_cases[] = {
    { "IOPS",
      { BUSY_RULE },
      { .iops = 1400 },
      { .iops = 2400 },
      "running 20:throttled 69:running" },
    { "latency",
      { SLOW_RULE },
      { .iops = 1400, .latency_us = 2000 },
      { .iops = 1400, .latency_us = 12000 },
      "running 20:throttled 69:running" },
    /* a copy's harm: the guest does fewer IOPS, each slower */
    { "fewer IOPS, slower, IOPS thresholds",
      { BUSY_RULE },
      { .iops = 1400, .latency_us = 2000 },
      { .iops = 750, .latency_us = 12000 },
      "running" },
    { "fewer IOPS, slower, both kinds",
      { BUSY_RULE, SLOW_RULE },
      { .iops = 1400, .latency_us = 2000 },
      { .iops = 750, .latency_us = 12000 },
      "running 20:throttled 69:running" },
    { "idle, then a burst of latency, then idle",
      { SLOW_RULE },
      { 0 },
      { .iops = 1400, .latency_us = 12000 },
      "running 20:throttled 69:running" },
};

/* the same guest going busy and quiet again: one slow-down, one speed-up */
static void
test_decision_burst (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (burst_cases); i++) {
        const BurstCase *c = &burst_cases[i];
        g_autoptr (VmrPolicyRule) rule = vmr_test_rule_new (&c->rule);
        g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
        VmrPolicyPhase phase = VMR_POLICY_PHASE_RUNNING;
        g_autoptr (GString) path = g_string_new ("running");

        for (guint s = 0; s < 100; s++) {
            g_auto (VmrPolicyDecision) decision = { 0 };
            VmrLoadSample sample = s >= 20 && s < 40 ? c->burst : c->usual;
            VmrPolicyPhase next;

            sample.time_us = NOW + (gint64) s * SECOND;
            g_array_append_val (samples, sample);
            vmr_policy_decide (rule, (const VmrLoadSample *) samples->data, samples->len, phase, 0,
                               sample.time_us, 12 * HOURS, &decision);
            next = phase_after (phase, decision.action);
            if (next != phase)
                g_string_append_printf (path, " %u:%s", s, vmr_policy_phase_to_string (next));
            phase = next;
        }
        /* quiet from the end of second 39: 30 s later, at the end of second 69 */
        if (g_strcmp0 (path->str, c->path) != 0)
            vmr_test_report_failure ("%s: %s, expected %s", c->name, path->str, c->path);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/decision/no-flapping", test_decision_no_flapping);
    g_test_add_func ("/decision/burst", test_decision_burst);
    return g_test_run ();
}
