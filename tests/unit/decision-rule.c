#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "decision-rule.h"
#include "test-report.h"

VmrPolicyRule *
vmr_test_rule_new (const RuleSpec *spec)
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
    rule->latency_throttle_us = (gint64) spec->latency_throttle_ms * 1000;
    rule->latency_delay_us = (gint64) spec->latency_delay_ms * 1000;
    return rule;
}

GArray *
vmr_test_samples_new (const gchar *load)
{
    g_auto (GStrv) words = g_strsplit (load != NULL ? load : "", " ", -1);
    g_autoptr (GArray) loads = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
    GArray *samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));

    for (guint i = 0; words[i] != NULL; i++) {
        gchar *slash = strchr (words[i], '/');
        gchar *star = strchr (words[i], '*');
        VmrLoadSample value = {
            .iops = g_ascii_strtod (words[i], NULL),
            .latency_us = (slash != NULL ? g_ascii_strtod (slash + 1, NULL) : 0.5) * 1000,
        };
        guint count = star != NULL ? (guint) g_ascii_strtoull (star + 1, NULL, 10) : 1;

        if (*words[i] == '\0')
            continue;
        for (guint c = 0; c < count; c++)
            g_array_append_val (loads, value);
    }
    for (guint i = 0; i < loads->len; i++) {
        VmrLoadSample sample = g_array_index (loads, VmrLoadSample, i);

        sample.time_us = NOW - (gint64) (loads->len - 1 - i) * SECOND;
        g_array_append_val (samples, sample);
    }
    return samples;
}

void
vmr_test_decide_cases (const DecideCase *cases, gsize n_cases)
{
    for (gsize i = 0; i < n_cases; i++) {
        const DecideCase *c = &cases[i];
        g_autoptr (VmrPolicyRule) rule = vmr_test_rule_new (&c->rule);
        g_autoptr (GArray) samples = vmr_test_samples_new (c->load);
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
