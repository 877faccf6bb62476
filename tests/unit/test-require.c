#define G_LOG_DOMAIN "vmr-test"

#include "test-require.h"

void
test_require_unavailable (const gchar *reason)
{
    if (g_strcmp0 (g_getenv ("REQUIRE_INTEGRATION"), "1") == 0)
        g_test_fail_printf ("%s (REQUIRE_INTEGRATION=1 makes this a failure)", reason);
    else
        g_test_skip (reason);
}
