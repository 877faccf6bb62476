#define G_LOG_DOMAIN "vmr-test"

/*
 * Every command of the QMP vocabulary (qmp-vocab.h), with each of its
 * optional arguments set, against the QMP schema of each QEMU the daemon
 * supports (tests/data/qmp/query-qmp-schema-*.json, written by
 * tests/data/qmp/capture-schema): the command exists, every argument is a
 * member of its arguments' type with a value of that type, and no required
 * member is missing. What a QEMU lacks, the builder refuses there.
 */

#include <json-glib/json-glib.h>

#include "qmp-vocab.h"
#include "vmr-error.h"

typedef struct {
    const gchar *version;
    JsonNode *root;
    GHashTable *entries; /* name -> JsonObject of the schema, borrowed from root */
} Schema;

static void
schema_free (Schema *schema)
{
    g_hash_table_unref (schema->entries);
    json_node_unref (schema->root);
    g_free (schema);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Schema, schema_free)

static Schema *
schema_load (const gchar *version)
{
    g_autofree gchar *name = g_strdup_printf ("query-qmp-schema-%s.json", version);
    g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "..", "data", "qmp", name, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    Schema *schema = g_new0 (Schema, 1);
    JsonArray *entries;

    json_parser_load_from_file (parser, path, &error);
    g_assert_no_error (error);
    schema->version = version;
    schema->root = json_node_ref (json_parser_get_root (parser));
    schema->entries = g_hash_table_new (g_str_hash, g_str_equal);
    entries = json_node_get_array (schema->root);
    for (guint i = 0; i < json_array_get_length (entries); i++) {
        JsonObject *entry = json_array_get_object_element (entries, i);

        g_hash_table_insert (schema->entries,
                             (gpointer) json_object_get_string_member (entry, "name"), entry);
    }
    return schema;
}

static gboolean check_value (Schema *schema, const gchar *type, JsonNode *value, const gchar *where,
                             GString *problems);

static gboolean
check_builtin (JsonObject *entry, JsonNode *value)
{
    const gchar *json_type = json_object_get_string_member (entry, "json-type");
    GType held = JSON_NODE_HOLDS_VALUE (value) ? json_node_get_value_type (value) : G_TYPE_INVALID;

    if (g_str_equal (json_type, "value"))
        return TRUE;
    if (g_str_equal (json_type, "null"))
        return JSON_NODE_HOLDS_NULL (value);
    if (g_str_equal (json_type, "string"))
        return held == G_TYPE_STRING;
    if (g_str_equal (json_type, "boolean"))
        return held == G_TYPE_BOOLEAN;
    if (g_str_equal (json_type, "int"))
        return held == G_TYPE_INT64;
    if (g_str_equal (json_type, "number"))
        return held == G_TYPE_INT64 || held == G_TYPE_DOUBLE;
    return FALSE;
}

static gboolean
check_enum (JsonObject *entry, JsonNode *value)
{
    JsonArray *values = json_object_get_array_member (entry, "values");

    if (!JSON_NODE_HOLDS_VALUE (value) || json_node_get_value_type (value) != G_TYPE_STRING)
        return FALSE;
    for (guint i = 0; i < json_array_get_length (values); i++)
        if (g_str_equal (json_array_get_string_element (values, i), json_node_get_string (value)))
            return TRUE;
    return FALSE;
}

/* the members of the object type @entry, with those of the variant @value's tag selects */
static void
collect_members (Schema *schema, JsonObject *entry, JsonObject *value, GHashTable *members)
{
    JsonArray *list = json_object_get_array_member (entry, "members");
    const gchar *tag = json_object_has_member (entry, "tag")
                           ? json_object_get_string_member (entry, "tag")
                           : NULL;
    JsonArray *variants = tag != NULL ? json_object_get_array_member (entry, "variants") : NULL;
    const gchar *chosen = tag != NULL && json_object_has_member (value, tag)
                              ? json_object_get_string_member (value, tag)
                              : NULL;

    for (guint i = 0; i < json_array_get_length (list); i++) {
        JsonObject *member = json_array_get_object_element (list, i);

        g_hash_table_insert (members, (gpointer) json_object_get_string_member (member, "name"),
                             member);
    }
    for (guint i = 0; chosen != NULL && i < json_array_get_length (variants); i++) {
        JsonObject *variant = json_array_get_object_element (variants, i);

        if (g_str_equal (json_object_get_string_member (variant, "case"), chosen))
            collect_members (schema,
                             g_hash_table_lookup (schema->entries,
                                                  json_object_get_string_member (variant, "type")),
                             value, members);
    }
}

static gboolean
check_object (Schema *schema, JsonObject *entry, JsonNode *value, const gchar *where,
              GString *problems)
{
    g_autoptr (GHashTable) members = g_hash_table_new (g_str_hash, g_str_equal);
    g_autoptr (GList) names = NULL;
    gsize before = problems->len;
    GHashTableIter iter;
    JsonObject *member;
    JsonObject *obj;

    if (!JSON_NODE_HOLDS_OBJECT (value)) {
        g_string_append_printf (problems, "%s: not an object\n", where);
        return FALSE;
    }
    obj = json_node_get_object (value);
    collect_members (schema, entry, obj, members);
    names = json_object_get_members (obj);
    for (GList *l = names; l != NULL; l = l->next) {
        g_autofree gchar *inner = g_strdup_printf ("%s.%s", where, (const gchar *) l->data);

        member = g_hash_table_lookup (members, l->data);
        if (member == NULL)
            g_string_append_printf (problems, "%s: no such argument\n", inner);
        else
            check_value (schema, json_object_get_string_member (member, "type"),
                         json_object_get_member (obj, l->data), inner, problems);
    }
    g_hash_table_iter_init (&iter, members);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &member)) {
        const gchar *name = json_object_get_string_member (member, "name");

        if (!json_object_has_member (member, "default") && !json_object_has_member (obj, name))
            g_string_append_printf (problems, "%s.%s: required, missing\n", where, name);
    }
    return problems->len == before;
}

/* whether @value fits one of the alternatives of @entry */
static gboolean
check_alternate (Schema *schema, JsonObject *entry, JsonNode *value, const gchar *where)
{
    JsonArray *list = json_object_get_array_member (entry, "members");

    for (guint i = 0; i < json_array_get_length (list); i++) {
        g_autoptr (GString) scratch = g_string_new (NULL);
        JsonObject *member = json_array_get_object_element (list, i);

        if (check_value (schema, json_object_get_string_member (member, "type"), value, where,
                         scratch))
            return TRUE;
    }
    return FALSE;
}

static gboolean
check_array (Schema *schema, JsonObject *entry, JsonNode *value, const gchar *where,
             GString *problems)
{
    const gchar *element = json_object_get_string_member (entry, "element-type");
    JsonArray *array = JSON_NODE_HOLDS_ARRAY (value) ? json_node_get_array (value) : NULL;
    gboolean ok = array != NULL;

    for (guint i = 0; array != NULL && i < json_array_get_length (array); i++) {
        g_autofree gchar *inner = g_strdup_printf ("%s[%u]", where, i);

        ok &= check_value (schema, element, json_array_get_element (array, i), inner, problems);
    }
    return ok;
}

/* whether @value is of @type; what is not goes to @problems, one line each */
static gboolean
check_value (Schema *schema, const gchar *type, JsonNode *value, const gchar *where,
             GString *problems)
{
    JsonObject *entry = g_hash_table_lookup (schema->entries, type);
    const gchar *meta = json_object_get_string_member (entry, "meta-type");
    gboolean ok;

    if (g_str_equal (meta, "object"))
        return check_object (schema, entry, value, where, problems);
    if (g_str_equal (meta, "array"))
        ok = check_array (schema, entry, value, where, problems);
    else if (g_str_equal (meta, "alternate"))
        ok = check_alternate (schema, entry, value, where);
    else if (g_str_equal (meta, "enum"))
        ok = check_enum (entry, value);
    else
        ok = check_builtin (entry, value);
    if (!ok)
        g_string_append_printf (problems, "%s: not of the type %s (%s)\n", where, type, meta);
    return ok;
}

/* the problems of @cmd in @schema, "" for none; free with g_free() */
static gchar *
check_command (Schema *schema, const VmrQmpCmd *cmd)
{
    GString *problems = g_string_new (NULL);
    JsonObject *entry = g_hash_table_lookup (schema->entries, vmr_qmp_cmd_name (cmd));
    g_autoptr (JsonNode) args = json_node_new (JSON_NODE_OBJECT);
    g_autoptr (JsonObject) empty = json_object_new ();
    JsonObject *given = vmr_qmp_cmd_arguments (cmd);

    if (entry == NULL
        || !g_str_equal (json_object_get_string_member (entry, "meta-type"), "command")) {
        g_string_append_printf (problems, "%s: no such command\n", vmr_qmp_cmd_name (cmd));
        return g_string_free (problems, FALSE);
    }
    json_node_set_object (args, given != NULL ? given : empty);
    check_value (schema, json_object_get_string_member (entry, "arg-type"), args,
                 vmr_qmp_cmd_name (cmd), problems);
    return g_string_free (problems, FALSE);
}

/* the blockdev-add of each kind of destination the daemon opens, each option set */
static void
add_blockdev_cases (GPtrArray *cmds)
{
    const VmrQmpNbdArgs nbd_cases[] = {
        { .socket = "/run/nbd.sock", .export_name = "disk0", .reconnect_delay_s = 5 },
        { .host = "192.0.2.1",
          .port = 10809,
          .export_name = "disk0",
          .tls_creds = "vmr-3-dst-tls" },
    };
    /* the old source, read for a verification */
    const struct {
        const gchar *format, *driver, *filename;
    } read_only[] = {
        { "qcow2", "file", "/images/old.qcow2" },
        { "raw", "host_device", "/dev/sdy" },
    };
    g_autoptr (JsonObject) file
        = vmr_qmp_blockdev_local ("file", "/images/a.qcow2", "vmr-3-dst-file", TRUE, FALSE);
    g_autoptr (JsonObject) device
        = vmr_qmp_blockdev_local ("host_device", "/dev/sdz", "vmr-3-dst-file", FALSE, TRUE);
    const VmrQmpBlockdevArgs local[] = {
        { .driver = "qcow2", .node_name = "vmr-3-dst", .file = file },
        { .driver = "raw",
          .node_name = "vmr-3-dst",
          .file = device,
          .cache_direct = TRUE,
          .cache_no_flush = TRUE,
          .size = 1 << 20 },
    };

    for (guint i = 0; i < G_N_ELEMENTS (local); i++) {
        g_autoptr (JsonObject) options = vmr_qmp_blockdev_format (&local[i]);

        g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_add (options));
    }
    for (guint i = 0; i < G_N_ELEMENTS (nbd_cases); i++) {
        g_autoptr (JsonObject) nbd = vmr_qmp_blockdev_nbd (&nbd_cases[i]);
        VmrQmpBlockdevArgs args = { .driver = "raw",
                                    .node_name = "vmr-3-dst",
                                    .file = nbd,
                                    .detect_zeroes = "unmap",
                                    .size = 1 << 20 };
        g_autoptr (JsonObject) options = NULL;

        json_object_set_string_member (nbd, "node-name", "vmr-3-dst-file");
        options = vmr_qmp_blockdev_format (&args);
        g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_add (options));
    }
    for (guint i = 0; i < G_N_ELEMENTS (read_only); i++) {
        g_autoptr (JsonObject) options = vmr_qmp_blockdev_read_only (
            read_only[i].format, read_only[i].driver, read_only[i].filename, "vmr-3-old");

        g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_add (options));
    }
}

/* every builder but block-job-change's, each optional argument once unset and once set */
static GPtrArray *
all_commands (void)
{
    GPtrArray *cmds = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_qmp_cmd_free);
    const VmrQmpMirrorArgs plain = { .job_id = "vmr-3", .device = "disk0", .target = "vmr-3-dst" };
    const VmrQmpMirrorArgs full = { .job_id = "vmr-3",
                                    .device = "disk0",
                                    .target = "vmr-3-dst",
                                    .filter_node_name = "vmr-3-mirror",
                                    .on_target_error = "enospc",
                                    .speed = 1 << 20,
                                    .granularity = 65536,
                                    .buf_size = 1 << 23 };
    g_autoptr (JsonObject) tls = vmr_qmp_tls_creds_args ("vmr-3-dst-tls", "/etc/pki/qemu");

    g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_mirror (&plain));
    g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_mirror (&full));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_job_pause ("vmr-3"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_job_resume ("vmr-3"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_job_cancel ("vmr-3", FALSE));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_job_cancel ("vmr-3", TRUE));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_job_set_speed ("vmr-3", 0));
    g_ptr_array_add (cmds, vmr_qmp_cmd_job_complete ("vmr-3"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_job_dismiss ("vmr-3"));
    add_blockdev_cases (cmds);
    g_ptr_array_add (cmds, vmr_qmp_cmd_blockdev_del ("vmr-3-dst"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_object_add (tls));
    g_ptr_array_add (cmds, vmr_qmp_cmd_object_del ("vmr-3-dst-tls"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_add_fd ("virt-mirror /images/a.raw"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_remove_fd (3));
    g_ptr_array_add (cmds, vmr_qmp_cmd_getfd ("vmr-3-nbd"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_closefd ("vmr-3-nbd"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_block ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_block_jobs ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_blockstats ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_block_exports ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_fdsets ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_iothreads ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_qmp_schema ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_named_block_nodes (FALSE));
    g_ptr_array_add (cmds, vmr_qmp_cmd_query_named_block_nodes (TRUE));
    g_ptr_array_add (cmds, vmr_qmp_cmd_qom_get ("/machine/peripheral/disk0", "iothread"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_nbd_server_start ("unix", "/run/vmr-3.sock"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_nbd_server_start ("fd", "vmr-3-nbd"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_nbd_server_stop ());
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_export_add ("vmr-3-old", "disk0", NULL));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_export_add ("vmr-3-new", "vmr-3-dst", "vmr-3-b1"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_export_del ("vmr-3-old"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_dirty_bitmap_add ("vmr-3-dst", "vmr-3-pivot"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_block_dirty_bitmap_remove ("vmr-3-dst", "vmr-3-pivot"));
    g_ptr_array_add (cmds, vmr_qmp_cmd_bitmap_copy ("vmr-3-dst", "vmr-3-pivot", "vmr-3-b1"));
    return cmds;
}

static void
test_vocabulary (gconstpointer data)
{
    g_autoptr (Schema) schema = schema_load (data);
    g_autoptr (GPtrArray) cmds = all_commands ();

    for (guint i = 0; i < cmds->len; i++) {
        g_autofree gchar *text = vmr_qmp_cmd_to_string (g_ptr_array_index (cmds, i));
        g_autofree gchar *problems = check_command (schema, g_ptr_array_index (cmds, i));

        g_test_message ("QEMU %s: %s", schema->version, text);
        g_assert_cmpstr (problems, ==, "");
    }
}

/* block-job-change came with QEMU 8.2: the builder asks the schema, and refuses before */
static void
test_copy_mode (gconstpointer data)
{
    g_autoptr (Schema) schema = schema_load (data);
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrQmpCmd) cmd
        = vmr_qmp_cmd_block_job_change_copy_mode (schema->root, "vmr-3", &error);
    gboolean listed = g_hash_table_contains (schema->entries, "block-job-change");

    g_assert_true (listed == (g_strcmp0 (schema->version, "7.2") != 0));
    if (!listed) {
        g_assert_error (error, VMR_ERROR, VMR_ERROR_FAILED);
        g_assert_null (cmd);
    } else {
        g_autofree gchar *problems = check_command (schema, cmd);

        g_assert_no_error (error);
        g_assert_cmpstr (problems, ==, "");
    }
}

/* the check itself finds what is wrong: a name, a type, a member missing, a command */
static void
test_checker (void)
{
    g_autoptr (Schema) schema = schema_load ("10.0");
    const VmrQmpMirrorArgs bad_enum
        = { .job_id = "j", .device = "d", .target = "t", .on_target_error = "explode" };
    g_autoptr (VmrQmpCmd) unknown = vmr_qmp_cmd_block_job_cancel ("vmr-3", FALSE);
    g_autoptr (VmrQmpCmd) typed = vmr_qmp_cmd_block_job_set_speed ("vmr-3", 1);
    g_autoptr (VmrQmpCmd) missing = vmr_qmp_cmd_job_dismiss ("vmr-3");
    g_autoptr (VmrQmpCmd) enumerated = vmr_qmp_cmd_blockdev_mirror (&bad_enum);
    g_autoptr (VmrQmpCmd) variant = vmr_qmp_cmd_nbd_server_start ("unix", "/run/s");
    g_autoptr (Schema) old = schema_load ("7.2");
    g_autoptr (VmrQmpCmd) change = vmr_qmp_cmd_block_job_change_copy_mode (schema->root, "j", NULL);
    JsonObject *addr = json_object_get_object_member (vmr_qmp_cmd_arguments (variant), "addr");
    g_autofree gchar *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL, *p5 = NULL, *p6 = NULL;

    json_object_set_boolean_member (vmr_qmp_cmd_arguments (unknown), "forse", TRUE);
    json_object_set_string_member (vmr_qmp_cmd_arguments (typed), "speed", "fast");
    json_object_remove_member (vmr_qmp_cmd_arguments (missing), "id");
    json_object_set_string_member (json_object_get_object_member (addr, "data"), "pth", "/run/s");
    p1 = check_command (schema, unknown);
    p2 = check_command (schema, typed);
    p3 = check_command (schema, missing);
    p4 = check_command (schema, enumerated);
    p5 = check_command (schema, variant);
    p6 = check_command (old, change);
    g_assert_cmpstr (p1, ==, "block-job-cancel.forse: no such argument\n");
    g_assert_cmpstr (p2, ==, "block-job-set-speed.speed: not of the type int (builtin)\n");
    g_assert_cmpstr (p3, ==, "job-dismiss.id: required, missing\n");
    g_assert_true (g_str_has_prefix (p4, "blockdev-mirror.on-target-error: not of the type "));
    g_assert_true (g_str_has_suffix (p4, " (enum)\n"));
    g_assert_cmpstr (p5, ==, "nbd-server-start.addr.data.pth: no such argument\n");
    g_assert_cmpstr (p6, ==, "block-job-change: no such command\n");
}

int
main (int argc, char **argv)
{
    static const gchar *const versions[] = { "7.2", "10.0" };

    g_test_init (&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS (versions); i++) {
        g_autofree gchar *vocabulary = g_strdup_printf ("/qmp-vocab/%s/commands", versions[i]);
        g_autofree gchar *copy_mode = g_strdup_printf ("/qmp-vocab/%s/copy-mode", versions[i]);

        g_test_add_data_func (vocabulary, versions[i], test_vocabulary);
        g_test_add_data_func (copy_mode, versions[i], test_copy_mode);
    }
    g_test_add_func ("/qmp-vocab/checker", test_checker);
    return g_test_run ();
}
