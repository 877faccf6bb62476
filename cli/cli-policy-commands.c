#define G_LOG_DOMAIN "vmr-cli"

#include "cli-policy-commands.h"

#include "cli-json.h"
#include "cli-output.h"
#include "cli-table.h"
#include "policy.h"
#include "units.h"
#include "vmr-config.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* ---- policy check ---- */

/* what went wrong reading a file, in a few words */
static const gchar *
describe_read_error (const GError *error)
{
    if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        return "no such file";
    if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ACCES)
        || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_PERM))
        return "permission denied";
    if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR))
        return "is a directory";
    return error->message;
}

/* {"file": @path, "valid": ..., "errors": [one string per problem]} on stdout */
static void
print_check_json (const gchar *path, gchar **problems)
{
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) root = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "file");
    json_builder_add_string_value (builder, path);
    json_builder_set_member_name (builder, "valid");
    json_builder_add_boolean_value (builder, problems == NULL);
    json_builder_set_member_name (builder, "errors");
    json_builder_begin_array (builder);
    for (guint i = 0; problems != NULL && problems[i] != NULL; i++)
        json_builder_add_string_value (builder, problems[i]);
    json_builder_end_array (builder);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    vmr_cli_json_print (root);
}

gboolean
vmr_cli_cmd_policy_check (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                          GError **error)
{
    g_auto (GStrv) args = NULL;
    g_auto (GStrv) problems = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr (GError) local_error = NULL;
    g_autoptr (VmrPolicy) policy = NULL;
    const gchar *env = g_getenv ("VIRT_MIRROR_POLICY");
    const gchar *path;
    gboolean default_path = FALSE;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    /* the same file the daemon would read, without asking it */
    if (args[0] != NULL)
        path = args[0];
    else if (env != NULL && *env != '\0')
        path = env;
    else
        default_path = TRUE;
    if (default_path)
        path = VMR_DEFAULT_POLICY;

    if (!g_file_get_contents (path, &text, NULL, &local_error)) {
        /* the daemon runs on built-in values without its default file; still nothing to check */
        g_autofree gchar *problem = g_strdup_printf (
            "cannot read policy file %s: %s%s", path, describe_read_error (local_error),
            default_path ? " (without it virt-mirrord uses the built-in values)" : "");
        gchar *one[] = { problem, NULL };

        if (session->json)
            print_check_json (path, one);
        g_printerr ("virt-mirror: error: %s\n", problem);
        g_set_error_literal (error, VMR_CLI_REPORTED_ERROR, 0, problem);
        return FALSE;
    }
    policy = vmr_policy_load_from_data (path, text, &local_error);
    if (policy != NULL) {
        if (session->json)
            print_check_json (path, NULL);
        else
            g_print ("%s: OK\n", path);
        return TRUE;
    }

    /* one problem per line, each already saying FILE:LINE: where */
    problems = g_strsplit (local_error->message, "\n", -1);
    if (session->json)
        print_check_json (path, problems);
    for (guint i = 0; problems[i] != NULL; i++)
        g_printerr ("%s\n", problems[i]);
    g_set_error (error, VMR_CLI_REPORTED_ERROR, 0, "%s is not a valid policy", path);
    return FALSE;
}

/* ---- policy show ---- */

/* @value of @key as in the file, with what a 0 means for the keys where it is special */
static gchar *
describe_value (const gchar *key, const gchar *value)
{
    static const struct {
        const gchar *key;
        const gchar *zero;
    } zeros[] = {
        { "speed", "unlimited" },
        { "throttle-speed", "unlimited" },
        { "iops-throttle", "off" },
        { "iops-delay", "off" },
        { "max-delay", "no limit" },
        { "hold", "at once" },
        { "max-parallel", "no limit" },
        { "max-parallel-per-iothread", "no limit" },
        { "max-parallel-per-domain", "no limit" },
        { "max-parallel-per-destination", "no limit" },
        { "reconnect-delay", "fail at once" },
    };

    for (gsize i = 0; value != NULL && g_str_equal (value, "0") && i < G_N_ELEMENTS (zeros); i++) {
        if (g_strcmp0 (key, zeros[i].key) == 0)
            return g_strdup_printf ("0 (%s)", zeros[i].zero);
    }
    return g_strdup (value);
}

/* "[domain web*]" for a section, "built-in" as is */
static gchar *
describe_origin (const gchar *from)
{
    if (from == NULL)
        return NULL;
    if (g_str_equal (from, "built-in"))
        return g_strdup (from);
    return g_strdup_printf ("[%s]", from);
}

/* when the policy in force was read, and a reload refused since, with its reason */
static void
print_load_times (JsonObject *obj)
{
    JsonObject *refused = vmr_json_get_object (obj, "refused");
    gint64 loaded = 0;
    gint64 when = 0;

    if (vmr_json_get_int (obj, "loaded", &loaded) && loaded > 0) {
        g_autofree gchar *text = vmr_cli_format_time (loaded);

        g_print ("Loaded: %s\n", text);
    }
    if (refused != NULL && vmr_json_get_int (refused, "time", &when)) {
        g_autofree gchar *text = vmr_cli_format_time (when);
        const gchar *why = vmr_json_get_string (refused, "error");
        g_auto (GStrv) lines = g_strsplit (why != NULL ? why : "", "\n", -1);

        g_print ("Last reload refused: %s; the values below are the ones loaded before\n", text);
        for (guint i = 0; lines[i] != NULL; i++)
            if (*lines[i] != '\0')
                g_print ("  %s\n", lines[i]);
    }
}

/* "web01 vda, db02 vdb" of a storage's disks, "-" without any */
static gchar *
describe_storage_disks (JsonArray *disks)
{
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint i = 0; disks != NULL && i < json_array_get_length (disks); i++) {
        JsonObject *disk = vmr_json_array_object (disks, i);

        g_string_append_printf (text, "%s%s %s", text->len > 0 ? ", " : "",
                                vmr_json_get_string (disk, "domain"),
                                vmr_json_get_string (disk, "disk"));
    }
    return text->len > 0 ? g_string_free (g_steal_pointer (&text), FALSE) : g_strdup ("-");
}

/* the [storage NAME] sections, one row each: name, budget, paths and the disks in it */
static void
print_storages (JsonArray *storages)
{
    g_autoptr (VmrCliTable) table = NULL;
    g_autofree gchar *text = NULL;

    if (storages == NULL || json_array_get_length (storages) == 0)
        return;
    g_print ("Storages:\n");
    table = vmr_cli_table_new ("STORAGE", "BUDGET", "PATHS", "DISKS", NULL);
    for (guint i = 0; i < json_array_get_length (storages); i++) {
        JsonObject *storage = vmr_json_array_object (storages, i);
        JsonArray *paths = vmr_json_get_array (storage, "paths");
        g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();
        g_auto (GStrv) path_list = NULL;
        g_autofree gchar *joined = NULL;
        g_autofree gchar *budget = NULL;
        g_autofree gchar *disks = describe_storage_disks (vmr_json_get_array (storage, "disks"));
        gint64 bytes = 0;

        for (guint p = 0; paths != NULL && p < json_array_get_length (paths); p++)
            g_strv_builder_add (builder, vmr_json_array_string (paths, p));
        path_list = g_strv_builder_end (builder);
        joined = g_strjoinv (", ", path_list);
        if (vmr_json_get_int (storage, "budget", &bytes) && bytes > 0)
            budget = vmr_units_format_speed ((guint64) bytes);
        vmr_cli_table_add_row (table, vmr_json_get_string (storage, "name"),
                               budget != NULL ? budget : "none", joined, disks, NULL);
    }
    text = vmr_cli_table_to_string (table, "  ");
    g_print ("%s", text);
}

static gboolean
print_policy (JsonNode *reply, GError **error)
{
    JsonObject *obj = vmr_cli_json_expect_object (reply, "query-policy", error);
    const gchar *source;
    const gchar *domain;
    const gchar *disk;
    JsonArray *values;
    g_autoptr (VmrCliTable) table = NULL;
    g_autofree gchar *text = NULL;

    if (obj == NULL)
        return FALSE;
    source = vmr_json_get_string (obj, "source");
    domain = vmr_json_get_string (obj, "domain");
    disk = vmr_json_get_string (obj, "disk");
    values = vmr_json_get_array (obj, "values");
    if (source == NULL || values == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to 'query-policy' from virt-mirrord: "
                     "no source or values");
        return FALSE;
    }

    if (g_str_equal (source, "built-in"))
        g_print ("Policy: built-in values (no policy file)\n");
    else
        g_print ("Policy: %s\n", source);
    print_load_times (obj);
    if (domain != NULL && disk != NULL)
        g_print ("Values for disk %s of domain %s:\n", disk, domain);
    else if (domain != NULL)
        g_print ("Values for domain %s (without disk sections):\n", domain);
    else
        g_print ("Values of [defaults] (without domain sections):\n");

    table = vmr_cli_table_new ("KEY", "VALUE", "FROM", NULL);
    for (guint i = 0; i < json_array_get_length (values); i++) {
        JsonObject *value = vmr_json_array_object (values, i);
        const gchar *key = vmr_json_get_string (value, "key");
        g_autofree gchar *shown = describe_value (key, vmr_json_get_string (value, "value"));
        g_autofree gchar *from = describe_origin (vmr_json_get_string (value, "from"));

        vmr_cli_table_add_row (table, key, shown, from, NULL);
    }
    text = vmr_cli_table_to_string (table, "  ");
    g_print ("%s", text);
    print_storages (vmr_json_get_array (obj, "storages"));
    return TRUE;
}

gboolean
vmr_cli_cmd_policy_show (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                         GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (args[0] != NULL)
        json_object_set_string_member (arguments, "domain", args[0]);
    if (args[0] != NULL && args[1] != NULL)
        json_object_set_string_member (arguments, "disk", args[1]);
    reply = vmr_cli_command_call (session, "query-policy", arguments, "show the policy", error);
    if (reply == NULL)
        return FALSE;
    return session->json || print_policy (reply, error);
}

/* ---- reload ---- */

gboolean
vmr_cli_cmd_reload (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *obj;
    const gchar *source;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = vmr_cli_session_call (session, "reload", NULL, error);
    if (reply == NULL) {
        /* a refused file comes back as one problem per line: start them on a line of their own */
        if (error != NULL && *error != NULL && strchr ((*error)->message, '\n') != NULL)
            g_prefix_error (error, "cannot reload the policy:\n");
        else
            g_prefix_error (error, "cannot reload the policy: ");
        return FALSE;
    }
    if (session->json) {
        vmr_cli_json_print (reply);
        return TRUE;
    }
    obj = vmr_cli_json_expect_object (reply, "reload", error);
    if (obj == NULL)
        return FALSE;
    source = vmr_json_get_string (obj, "source");
    if (source == NULL || g_str_equal (source, "built-in"))
        g_print ("Policy reloaded: built-in values (no policy file)\n");
    else
        g_print ("Policy reloaded from %s\n", source);
    return TRUE;
}
