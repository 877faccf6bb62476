#define G_LOG_DOMAIN "vmr-test"

/*
 * Prints the name of every key of the policy file, one per line, from the
 * policy's own key table: what check-man.sh looks for in
 * virt-mirror-policy(5).
 */

#include <stdio.h>

#include "policy.h"

int
main (void)
{
    for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++)
        printf ("%s\n", vmr_policy_key_name (k));
    return 0;
}
