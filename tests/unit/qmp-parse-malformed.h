/*
 * The malformed half of test-qmp-parse: replies and events a real QEMU does
 * not send, which tests/data/qmp therefore cannot hold.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* @text parsed as JSON; NULL for NULL (a reply with no "return") */
JsonNode *qmp_parse_test_text (const gchar *text);

/* adds the /qmp-parse/ tests of malformed input */
void qmp_parse_malformed_add_tests (void);

G_END_DECLS
