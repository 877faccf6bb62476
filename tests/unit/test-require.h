/*
 * What a unit test needs from the machine (a program, root): where it is
 * missing, the test skips, or fails under REQUIRE_INTEGRATION=1, as the
 * integration tests do (vmr_harness_skip()). CI installs every one.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the running test cannot be made here for @reason: a skip, or a failure under
 * REQUIRE_INTEGRATION=1; the test must return */
void test_require_unavailable (const gchar *reason);

G_END_DECLS
