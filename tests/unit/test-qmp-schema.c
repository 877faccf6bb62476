#define G_LOG_DOMAIN "vmr-test"

/*
 * Features read from QEMU's QMP schema (query-qmp-schema), not from its
 * version: whether a command is there, and the copy-mode change that needs it.
 */

#include <json-glib/json-glib.h>

#include "qmp-client.h"
#include "vmr-error.h"

typedef struct {
    const gchar *name;
    const gchar *schema; /* JSON: the "return" of query-qmp-schema */
    gboolean has_change; /* lists block-job-change as a command */
} SchemaCase;

static const SchemaCase schema_cases[] = {
    { "listed",
      "[{\"name\": \"query-block-jobs\", \"meta-type\": \"command\"},"
      " {\"name\": \"block-job-change\", \"meta-type\": \"command\"}]",
      TRUE },
    { "absent", "[{\"name\": \"query-block-jobs\", \"meta-type\": \"command\"}]", FALSE },
    { "not-a-command", "[{\"name\": \"block-job-change\", \"meta-type\": \"object\"}]", FALSE },
    { "not-an-array", "{\"name\": \"block-job-change\", \"meta-type\": \"command\"}", FALSE },
    { "odd-entries", "[1, \"block-job-change\", {\"name\": 5, \"meta-type\": \"command\"}]",
      FALSE },
    { "empty", "[]", FALSE },
};

static JsonNode *
parse_schema (const gchar *text)
{
    g_autoptr (GError) error = NULL;
    JsonNode *node = json_from_string (text, &error);

    g_assert_no_error (error);
    return node;
}

static void
test_has_command (gconstpointer data)
{
    const SchemaCase *c = data;
    g_autoptr (JsonNode) schema = parse_schema (c->schema);

    g_assert_cmpint (vmr_qmp_schema_has_command (schema, "block-job-change"), ==, c->has_change);
    g_assert_false (vmr_qmp_schema_has_command (NULL, "block-job-change"));
}

static void
test_copy_mode_args (gconstpointer data)
{
    const SchemaCase *c = data;
    g_autoptr (JsonNode) schema = parse_schema (c->schema);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) args = vmr_qmp_schema_copy_mode_args (schema, "vmr-3", &error);

    if (!c->has_change) {
        g_assert_null (args);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_FAILED);
        g_assert_nonnull (strstr (error->message, "block-job-change"));
        return;
    }
    g_assert_no_error (error);
    g_assert_nonnull (args);
    g_assert_cmpuint (json_object_get_size (args), ==, 3);
    g_assert_cmpstr (json_object_get_string_member (args, "id"), ==, "vmr-3");
    g_assert_cmpstr (json_object_get_string_member (args, "type"), ==, "mirror");
    g_assert_cmpstr (json_object_get_string_member (args, "copy-mode"), ==, "write-blocking");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);

    for (gsize i = 0; i < G_N_ELEMENTS (schema_cases); i++) {
        g_autofree gchar *has_path
            = g_strdup_printf ("/qmp-schema/has-command/%s", schema_cases[i].name);
        g_autofree gchar *args_path
            = g_strdup_printf ("/qmp-schema/copy-mode-args/%s", schema_cases[i].name);

        g_test_add_data_func (has_path, &schema_cases[i], test_has_command);
        g_test_add_data_func (args_path, &schema_cases[i], test_copy_mode_args);
    }
    return g_test_run ();
}
