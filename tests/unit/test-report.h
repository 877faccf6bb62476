/*
 * Failures that do not stop a table-driven unit test: each case that fails
 * is reported and the run goes on, so that one run lists every failing case.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* marks the running test failed with the message, and goes on */
void vmr_test_report_failure (const gchar *format, ...) G_GNUC_PRINTF (1, 2);

G_END_DECLS
