#define G_LOG_DOMAIN "vmr-test"

#include "test-report.h"

void
vmr_test_report_failure (const gchar *format, ...)
{
    g_autofree gchar *message = NULL;
    va_list args;

    va_start (args, format);
    message = g_strdup_vprintf (format, args);
    va_end (args);
    g_test_message ("FAILED: %s", message);
    g_test_fail_printf ("%s", message);
}
