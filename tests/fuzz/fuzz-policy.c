/*
 * libFuzzer harness: the policy file. The input is a policy file's text,
 * parsed as `virt-mirror reload` and `policy check` parse one; a policy
 * that loads is then looked up and shown, as `policy show` does.
 */
#include "fuzz-common.h"
#include "policy.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    g_autofree gchar *text = g_strndup ((const gchar *) data, size);
    g_autoptr (VmrPolicy) policy = NULL;
    g_autoptr (VmrPolicyRule) rule = NULL;
    g_autoptr (GError) error = NULL;

    policy = vmr_policy_load_from_data ("fuzz.conf", text, &error);
    if (policy == NULL)
        return 0;
    rule = vmr_policy_lookup (policy, "web01", "vda");
    for (gint key = 0; key < VMR_POLICY_KEY_LAST; key++)
        g_free (vmr_policy_rule_format_value (rule, key));
    g_free (vmr_policy_rule_format_windows (rule));
    (void) vmr_policy_rule_in_window (rule, 12 * 3600);
    return 0;
}
