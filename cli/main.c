/*
 * virt-mirror: the command-line client of virt-mirrord.
 */
#define G_LOG_DOMAIN "vmr-cli"

#include <locale.h>
#include <stdlib.h>

#include "cli-commands.h"
#include "cli-complete.h"
#include "cli-output.h"
#include "cli-session.h"
#include "vmr-config.h"

static GOptionContext *
new_main_option_context (const GOptionEntry *entries)
{
    GOptionContext *context = g_option_context_new ("COMMAND [ARG…]");
    g_autofree gchar *command_list = vmr_cli_command_list_help ();
    g_autofree gchar *description = NULL;

    description = g_strdup_printf (
        "%s\n"
        "Options may also follow the command. Run 'virt-mirror COMMAND --help' for\n"
        "the options of a command.\n"
        "\n"
        "Environment:\n"
        "  VIRT_MIRROR_SOCKET   control socket of virt-mirrord (default %s)\n"
        "  VIRT_MIRROR_READONLY_SOCKET\n"
        "                       its read-only socket, for --readonly (default %s)\n"
        "  VIRT_MIRROR_POLICY   policy file for 'policy check' (default %s)\n"
        "\n"
        "Exit status: 0 on success, 1 when the operation failed or was refused,\n"
        "2 on a bad command line.",
        command_list, VMR_DEFAULT_SOCKET, VMR_DEFAULT_READONLY_SOCKET, VMR_DEFAULT_POLICY);
    /* our own --help, so that printing it is not an exit() inside GLib */
    g_option_context_set_help_enabled (context, FALSE);
    /* stop at the command: what follows is the command's to parse */
    g_option_context_set_strict_posix (context, TRUE);
    g_option_context_set_summary (
        context, "Move the disks of running QEMU virtual machines to new storage.");
    g_option_context_set_description (context, description);
    g_option_context_add_main_entries (context, entries, NULL);
    return context;
}

/* the control socket, or with @read_only the read-only one */
static const gchar *
default_socket (gboolean read_only)
{
    const gchar *from_env
        = g_getenv (read_only ? "VIRT_MIRROR_READONLY_SOCKET" : "VIRT_MIRROR_SOCKET");

    if (from_env != NULL && *from_env != '\0')
        return from_env;
    return read_only ? VMR_DEFAULT_READONLY_SOCKET : VMR_DEFAULT_SOCKET;
}

static gint
run (gchar **argv)
{
    g_autofree gchar *connect = NULL;
    gboolean json = FALSE;
    gboolean read_only = FALSE;
    gboolean help = FALSE;
    const GOptionEntry entries[] = {
        { "connect", 'c', G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &connect,
          "Control socket of virt-mirrord", "SOCKET" },
        { "readonly", 'r', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &read_only,
          "Use the read-only socket: jobs, domains and the policy, no changes", NULL },
        { "json", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &json,
          "Print results and errors as JSON on stdout", NULL },
        { "help", 'h', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &help, "Show this help", NULL },
        G_OPTION_ENTRY_NULL,
    };
    g_autoptr (GOptionContext) context = new_main_option_context (entries);
    g_auto (GStrv) args = g_strdupv (argv);
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrCliSession) session = NULL;
    const VmrCliCommand *cmd;
    guint n_words = 0;

    if (!g_option_context_parse_strv (context, &args, &error)) {
        error->message[0] = g_ascii_tolower (error->message[0]);
        g_printerr ("virt-mirror: error: %s (see virt-mirror --help)\n", error->message);
        return VMR_CLI_EXIT_USAGE;
    }
    if (help) {
        g_autofree gchar *text = g_option_context_get_help (context, TRUE, NULL);

        g_print ("%s", text);
        return VMR_CLI_EXIT_OK;
    }
    if (args[1] == NULL) {
        g_printerr ("virt-mirror: error: missing command (see virt-mirror --help)\n");
        return VMR_CLI_EXIT_USAGE;
    }
    if (g_str_equal (args[1], VMR_CLI_COMPLETE_COMMAND))
        return vmr_cli_complete (connect != NULL ? connect : default_socket (read_only), &args[1]);
    cmd = vmr_cli_command_find (&args[1], &n_words, &error);
    if (cmd == NULL)
        return vmr_cli_output_error (error, FALSE);

    session = vmr_cli_session_new (connect != NULL ? connect : default_socket (read_only), json);
    session->read_only = read_only;
    /* the command sees its argv from the last word of its name on */
    if (!cmd->run (cmd, session, &args[n_words], &error))
        return vmr_cli_output_error (error, session->json);
    return VMR_CLI_EXIT_OK;
}

int
main (int argc, char **argv)
{
    setlocale (LC_ALL, "");
    g_set_prgname ("virt-mirror");
    return run (argv);
}
