/*
 * What the two halves of the policy share: policy.c (the file, its sections
 * and a disk's rule) and policy-values.c (the keys one by one). Not an API:
 * policy.h is.
 */
#pragma once

#include "policy.h"

G_BEGIN_DECLS

/* the keys about the whole host, read from [defaults] only */
gboolean vmr_policy_key_is_host_wide (VmrPolicyKey key);

/* sets every value of @rule to the built-in one (its windows array is made here) */
void vmr_policy_rule_set_built_in (VmrPolicyRule *rule);

/* copies the value of @key from @from to @to */
void vmr_policy_rule_copy_value (VmrPolicyRule *to, const VmrPolicyRule *from, VmrPolicyKey key);

/* reads @text as the value of @key into @rule; @error says what is wrong */
gboolean vmr_policy_rule_parse_value (VmrPolicyRule *rule, VmrPolicyKey key, const gchar *text,
                                      GError **error);

/* a number of copies for a limit, 0 to 65535 */
gboolean vmr_policy_parse_copies (const gchar *text, guint64 *out, GError **error);

/* an absolute directory (canonicalized into *@out), or "none" (NULL) */
gboolean vmr_policy_parse_tls_creds (const gchar *text, gchar **out, GError **error);

G_END_DECLS
