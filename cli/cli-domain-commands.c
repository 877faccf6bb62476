#define G_LOG_DOMAIN "vmr-cli"

#include "cli-domain-commands.h"

#include "cli-json.h"
#include "cli-output.h"
#include "vmr-error.h"
#include "vmr-json.h"

gboolean
vmr_cli_cmd_attach (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_autofree gchar *qmp = NULL;
    g_auto (GStrv) args = NULL;
    g_autofree gchar *qmp_path = NULL;
    g_autofree gchar *what = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *domain;
    JsonArray *disks;
    g_autoptr (GString) disk_names = g_string_new (NULL);
    guint n_disks;
    const GOptionEntry entries[] = {
        { "qmp", 0, 0, G_OPTION_ARG_FILENAME, &qmp, "QMP monitor socket of the QEMU (required)",
          "PATH" },
        G_OPTION_ENTRY_NULL,
    };

    if (!vmr_cli_command_parse (cmd, session, entries, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (qmp == NULL || *qmp == '\0') {
        vmr_cli_command_set_usage_error (error, cmd, "missing --qmp PATH");
        return FALSE;
    }
    /* the daemon has its own working directory */
    qmp_path = g_canonicalize_filename (qmp, NULL);
    json_object_set_string_member (arguments, "name", args[0]);
    json_object_set_string_member (arguments, "qmp", qmp_path);
    what = g_strdup_printf ("attach %s", args[0]);
    reply = vmr_cli_command_call (session, "attach", arguments, what, error);
    if (reply == NULL)
        return FALSE;
    if (session->json)
        return TRUE;
    domain = vmr_cli_json_expect_object (reply, "attach", error);
    if (domain == NULL)
        return FALSE;
    disks = vmr_json_get_array (domain, "disks");
    n_disks = disks != NULL ? json_array_get_length (disks) : 0;
    for (guint i = 0; i < n_disks; i++) {
        const gchar *id = vmr_json_get_string (vmr_json_array_object (disks, i), "id");

        g_string_append_printf (disk_names, "%s%s", i > 0 ? ", " : "", id != NULL ? id : "?");
    }
    g_print ("Domain %s attached via %s: %u disk%s%s%s\n", args[0], qmp_path, n_disks,
             n_disks == 1 ? "" : "s", n_disks > 0 ? ": " : "", disk_names->str);
    return TRUE;
}

gboolean
vmr_cli_cmd_detach (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autofree gchar *what = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    json_object_set_string_member (arguments, "name", args[0]);
    what = g_strdup_printf ("detach %s", args[0]);
    reply = vmr_cli_command_call (session, "detach", arguments, what, error);
    if (reply == NULL)
        return FALSE;
    if (!session->json)
        g_print ("Domain %s detached\n", args[0]);
    return TRUE;
}

gboolean
vmr_cli_cmd_domains (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = vmr_cli_command_call (session, "query-domains", NULL, "list domains", error);
    if (reply == NULL)
        return FALSE;
    return session->json || vmr_cli_output_domains (reply, error);
}

gboolean
vmr_cli_cmd_version (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *version;
    const gchar *daemon_version;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    /* our own version is worth printing even when the daemon is down */
    if (!session->json)
        g_print ("virt-mirror %s\n", VMR_VERSION);
    reply = vmr_cli_session_call (session, "query-version", NULL, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot get the version of virt-mirrord: ");
        return FALSE;
    }
    version = vmr_cli_json_expect_object (reply, "query-version", error);
    if (version == NULL)
        return FALSE;
    if (session->json) {
        json_object_set_string_member (version, "cli-version", VMR_VERSION);
        vmr_cli_json_print (reply);
        return TRUE;
    }
    daemon_version = vmr_json_get_string (version, "version");
    g_print ("virt-mirrord %s\n", daemon_version != NULL ? daemon_version : "(unknown)");
    return TRUE;
}

gboolean
vmr_cli_cmd_metrics (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *metrics;
    const gchar *text;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = vmr_cli_command_call (session, "query-metrics", NULL, "get the metrics", error);
    if (reply == NULL)
        return FALSE;
    if (session->json)
        return TRUE;
    metrics = vmr_cli_json_expect_object (reply, "query-metrics", error);
    if (metrics == NULL)
        return FALSE;
    text = vmr_json_get_string (metrics, "text");
    if (text == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "virt-mirrord sent no metrics text");
        return FALSE;
    }
    g_print ("%s", text);
    return TRUE;
}
