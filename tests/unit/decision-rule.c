#define G_LOG_DOMAIN "vmr-test"

#include "decision-rule.h"

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
    return rule;
}
