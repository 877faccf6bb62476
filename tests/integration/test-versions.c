#define G_LOG_DOMAIN "vmr-test"

/*
 * The table of docs/operations.md ("QEMU and libvirt versions") against the
 * QEMU the tests run: each feature whose probe the table names is asked of
 * that QEMU, and it must have it exactly when its version is at least the
 * first QEMU the table gives. Run under each test setup of the matrix (the
 * newest QEMU, and the release's own with `--setup stock`), it checks both
 * columns' claims on both. A QMP command is looked up as the daemon looks it
 * up (vmr_qmp_schema_has_command on query-qmp-schema); a device property in
 * device-list-properties.
 */

#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "qmp-client.h"

/* one row of the table that names a probe */
typedef struct {
    gchar *feature;
    gchar *kind;     /* "command" or "property" */
    gchar *name;     /* the command, or the property */
    gchar *typename; /* the device type of a property */
    guint major, minor;
} Row;

static void
row_free (Row *row)
{
    g_free (row->feature);
    g_free (row->kind);
    g_free (row->name);
    g_free (row->typename);
    g_free (row);
}

/* the words between backquotes of @cell, in order */
static GPtrArray *
quoted_words (const gchar *cell)
{
    g_auto (GStrv) parts = g_strsplit (cell, "`", -1);
    GPtrArray *words = g_ptr_array_new_with_free_func (g_free);

    for (guint i = 1; parts[i] != NULL && parts[i + 1] != NULL; i += 2)
        g_ptr_array_add (words, g_strdup (parts[i]));
    return words;
}

/* a row "| feature | probe | QEMU | libvirt | without it |" whose probe names one */
static Row *
parse_row (const gchar *line)
{
    g_auto (GStrv) cells = g_strsplit (line, "|", -1);
    g_autoptr (GPtrArray) words = NULL;
    g_autofree gchar *probe = NULL;
    Row *row;

    if (g_strv_length (cells) != 7)
        vmr_fail ("docs/operations.md: a row of the versions table without 5 cells: %s", line);
    probe = g_strstrip (g_strdup (cells[2]));
    words = quoted_words (probe);
    row = g_new0 (Row, 1);
    row->feature = g_strstrip (g_strdup (cells[1]));
    if (g_str_has_prefix (probe, "command ") && words->len == 1) {
        row->kind = g_strdup ("command");
        row->name = g_strdup (words->pdata[0]);
    } else if (g_str_has_prefix (probe, "property ") && words->len == 2) {
        row->kind = g_strdup ("property");
        row->typename = g_strdup (words->pdata[0]);
        row->name = g_strdup (words->pdata[1]);
    } else {
        vmr_fail ("docs/operations.md: the versions table's probe '%s' is neither "
                  "command `NAME` nor property `TYPE` `NAME`",
                  probe);
    }
    if (sscanf (cells[3], " %u.%u ", &row->major, &row->minor) != 2)
        vmr_fail ("docs/operations.md: no QEMU version (MAJOR.MINOR) for %s: %s", row->name,
                  cells[3]);
    return row;
}

/* the rows of the table under the heading "## QEMU and libvirt versions" */
static GPtrArray *
read_table (void)
{
    const gchar *docs = g_getenv ("VMR_DOCS_OPERATIONS");
    g_autofree gchar *text = NULL;
    g_autoptr (GError) error = NULL;
    g_auto (GStrv) lines = NULL;
    GPtrArray *rows = g_ptr_array_new_with_free_func ((GDestroyNotify) row_free);
    gboolean in_section = FALSE;
    guint table_lines = 0;

    g_assert_nonnull (docs);
    if (!g_file_get_contents (docs, &text, NULL, &error))
        vmr_fail ("%s", error->message);
    lines = g_strsplit (text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix (lines[i], "## "))
            in_section = g_str_equal (lines[i], "## QEMU and libvirt versions");
        if (!in_section || !g_str_has_prefix (lines[i], "|"))
            continue;
        /* the header and its rule */
        if (table_lines++ < 2)
            continue;
        g_ptr_array_add (rows, parse_row (lines[i]));
    }
    if (rows->len == 0)
        vmr_fail ("%s: no row in the table of \"## QEMU and libvirt versions\"", docs);
    return rows;
}

static void
test_table (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *image = NULL;
    g_autoptr (GPtrArray) rows = NULL;
    g_autoptr (JsonNode) version = NULL;
    g_autoptr (JsonNode) schema = NULL;
    JsonObject *qemu;
    guint major, minor;

    if (vmr_harness_skipped (h))
        return;
    rows = read_table ();
    image = vmr_harness_create_image (h, "disk0.raw", "raw", 1024 * 1024, 1);
    vmr_harness_start_qemu (h, &(VmrHarnessDisk){ .id = "disk0", .path = image, .format = "raw" },
                            1);
    version = vmr_harness_qmp (h, "query-version", NULL);
    qemu = vmr_harness_json_object (vmr_harness_json_node_object (version), "qemu");
    major = (guint) vmr_harness_json_int (qemu, "major");
    minor = (guint) vmr_harness_json_int (qemu, "minor");
    schema = vmr_harness_qmp (h, "query-qmp-schema", NULL);
    for (guint i = 0; i < rows->len; i++) {
        Row *row = rows->pdata[i];
        gboolean expected = major > row->major || (major == row->major && minor >= row->minor);
        gboolean has = g_str_equal (row->kind, "command")
                           ? vmr_qmp_schema_has_command (schema, row->name)
                           : vmr_harness_lists_property (h, "device-list-properties", "typename",
                                                         row->typename, row->name);

        g_autofree gchar *what
            = g_strdup_printf ("%s %s%s%s", row->kind, row->typename != NULL ? row->typename : "",
                               row->typename != NULL ? "." : "", row->name);

        g_test_message ("QEMU %u.%u %s %s (the table: from %u.%u)", major, minor,
                        has ? "has" : "lacks", what, row->major, row->minor);
        if (has != expected)
            vmr_fail ("docs/operations.md says %s came with QEMU %u.%u, but QEMU %u.%u %s it", what,
                      row->major, row->minor, major, minor, has ? "has" : "lacks");
    }
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    g_test_add ("/versions/table", VmrHarness, NULL, vmr_harness_setup_qemu_only, test_table,
                vmr_harness_teardown);
    return g_test_run ();
}
