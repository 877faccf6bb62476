#define G_LOG_DOMAIN "vmr-cli"

#include "cli-commands.h"

#include "cli-cluster-commands.h"
#include "cli-domain-commands.h"
#include "cli-evacuate-command.h"
#include "cli-job-commands.h"
#include "cli-json.h"
#include "cli-output.h"
#include "cli-policy-commands.h"
#include "cli-report.h"
#include "cli-verify.h"
#include "cli-watch.h"
#include "units.h"

static const VmrCliCommand commands[] = {
    { "attach", "NAME", "NAME --qmp PATH",
      "Register a QEMU not run by libvirt, by its QMP monitor socket",
      "NAME is the name virt-mirror will know the VM by. PATH is the QEMU monitor's\n"
      "UNIX socket (-qmp unix:PATH,server=on,wait=off); a relative PATH is taken\n"
      "from the current directory.\n"
      "\n"
      "Example:\n"
      "  virt-mirror attach web01 --qmp /run/qemu/web01.qmp",
      vmr_cli_cmd_attach },
    { "detach", "NAME", "NAME", "Forget a domain; refused while it has unfinished jobs", NULL,
      vmr_cli_cmd_detach },
    { "domains", "", "", "List the domains and their disks", NULL, vmr_cli_cmd_domains },
    { "migrate", "DOMAIN DISK DEST [DISK DEST ...]", "DOMAIN DISK DEST [DISK DEST ...]",
      "Copy disks to new storage and switch the VM over to them",
      "DISK is the guest device's qdev id (see 'virt-mirror domains') or a block\n"
      "node name. DEST is the new image; it is created unless --reuse is given, and a\n"
      "relative DEST is taken from the current directory. RATE is in bytes/s with\n"
      "optional K, M, G suffixes (1024-based), e.g. 100M; 0 means unlimited.\n"
      "\n"
      "Several DISK DEST pairs move the disks as one group: the VM switches over to\n"
      "all of them back to back once every copy is in sync, or to none of them if\n"
      "one copy fails or is cancelled. The options apply to every disk.\n"
      "\n"
      "--verify compares each old source with its destination after the pivot (see\n"
      "'virt-mirror verify --help'); with --wait the exit status is 0 only if every\n"
      "copy completed and verified equal.\n"
      "\n"
      "Examples:\n"
      "  virt-mirror migrate web01 disk0 /srv/fast/web01.raw --wait\n"
      "  virt-mirror migrate web01 disk1 /srv/fast/data.qcow2 --format qcow2 --speed 100M\n"
      "  virt-mirror migrate db02 vda /srv/fast/db02.raw vdb /srv/fast/db02-log.raw --wait",
      vmr_cli_cmd_migrate },
    { "evacuate", "", "--from DIR --to DIR", "Move every disk under a directory to another",
      "Plans a migration for every disk of every known domain whose image lies under\n"
      "--from; the destination keeps its path relative to --from, under --to. The\n"
      "disks of one domain move as one group (see 'virt-mirror migrate --help').\n"
      "Nothing is submitted when a destination exists or two disks would get the\n"
      "same one. Relative DIRs are taken from the current directory. GLOB matches\n"
      "domain names with * and ?. RATE is in bytes/s with optional K, M, G suffixes\n"
      "(1024-based), e.g. 100M; 0 means unlimited. With --cluster, every daemon of\n"
      "the policy's [cluster] evacuates its own domains under the cluster's limits,\n"
      "and --wait follows every host to the end.\n"
      "\n"
      "Examples:\n"
      "  virt-mirror evacuate --from /srv/old --to /srv/new --dry-run\n"
      "  virt-mirror evacuate --cluster --from /srv/old --to /srv/new --wait\n"
      "  virt-mirror evacuate --from /srv/old --to /srv/new --domains 'web*' --wait",
      vmr_cli_cmd_evacuate },
    { "jobs", "", "", "List the migration jobs", NULL, vmr_cli_cmd_jobs },
    { "job", "ID", "ID", "Show everything about a job, with its history", NULL, vmr_cli_cmd_job },
    { "watch", "[ID ...]", "[ID ...]", "Follow jobs live: progress, rate, the guest's load",
      "Without ID, every job, until Ctrl-C; with IDs (jobs, or groups by their\n"
      "first job's id), those jobs, until they have all ended: exits 0 only if\n"
      "every one completed. On a terminal the view is redrawn on every change the\n"
      "daemon reports; otherwise one line is printed per change.\n"
      "\n"
      "Examples:\n"
      "  virt-mirror watch\n"
      "  virt-mirror watch vmr-3 vmr-4",
      vmr_cli_cmd_watch },
    { "report", "ID", "ID", "Show a job's timeline: a summary, the raw series, or an SVG picture",
      "Without options, a short summary of the job's timeline: its copy rate, the\n"
      "guest's IOPS and latency, and the spans in which the policy held the copy back,\n"
      "paused, throttled or steered it, with their reasons. --json prints the raw\n"
      "series, one point about every second. --svg FILE draws it: copy rate and speed\n"
      "limit, backlog and bytes copied, the guest's IOPS and its latency, one panel\n"
      "each on a shared time axis, under the policy's decisions as shaded bands.\n"
      "\n"
      "Examples:\n"
      "  virt-mirror report vmr-3\n"
      "  virt-mirror report vmr-3 --svg vmr-3.svg\n"
      "  virt-mirror report vmr-3 --json",
      vmr_cli_cmd_report },
    { "pause", "ID", "ID", "Pause the copy of a job", NULL, vmr_cli_cmd_job_step },
    { "resume", "ID", "ID", "Resume a paused job", NULL, vmr_cli_cmd_job_step },
    { "cancel", "ID", "ID", "Stop a job before its pivot; the VM stays on its source", NULL,
      vmr_cli_cmd_job_step },
    { "pivot", "ID", "ID", "Switch a synced --manual-pivot job over to its destination", NULL,
      vmr_cli_cmd_job_step },
    { "verify", "ID", "ID", "Compare a completed job's old source with the disk the VM now uses",
      "Compares the old source image of the completed job ID, which must still exist,\n"
      "with the disk the VM runs on now, leaving out what the guest wrote since the\n"
      "pivot, and waits for the result. Exits 0 when they are equal; otherwise prints\n"
      "the first ranges that differ (offset+length, in bytes) and exits 1. The old\n"
      "source is never changed or removed.\n"
      "\n"
      "Example:\n"
      "  virt-mirror verify vmr-3",
      vmr_cli_cmd_verify },
    { "set-speed", "ID RATE", "ID RATE", "Limit the copy rate of a job (0 = unlimited)",
      "RATE is in bytes/s with optional K, M, G suffixes (1024-based); 0 removes\n"
      "the limit.\n"
      "\n"
      "Example:\n"
      "  virt-mirror set-speed vmr-3 50M",
      vmr_cli_cmd_set_speed },
    { "set-copy-mode", "ID MODE", "ID MODE", "Make a running copy write-blocking (active)",
      "MODE is 'active' or its QEMU name 'write-blocking': from then on every guest\n"
      "write goes to the destination too before it completes, so the copy converges\n"
      "even under heavy writes, at the cost of write latency. QEMU cannot switch back\n"
      "to background; it needs QEMU 8.2 or later.\n"
      "\n"
      "Example:\n"
      "  virt-mirror set-copy-mode vmr-3 active",
      vmr_cli_cmd_set_copy_mode },
    { "reload", "", "", "Make virt-mirrord read its policy file again",
      "A file with an error is refused as a whole: virt-mirrord keeps the policy it\n"
      "had and the problems are printed, one per line. The same as sending SIGHUP.",
      vmr_cli_cmd_reload },
    { "policy check", "[FILE]", "[FILE]", "Validate a policy file; needs no daemon",
      "FILE defaults to $VIRT_MIRROR_POLICY, else the daemon's default policy file.\n"
      "Prints 'FILE: OK' and exits 0 when the file is valid; otherwise prints every\n"
      "problem as FILE:LINE: [SECTION] KEY: message on stderr and exits 1.\n"
      "\n"
      "Example:\n"
      "  virt-mirror policy check /etc/virt-mirror/policy.conf",
      vmr_cli_cmd_policy_check },
    { "policy show", "[DOMAIN [DISK]]", "[DOMAIN [DISK]]",
      "Show the policy values in effect, and the section each comes from",
      "Without DOMAIN, the values of [defaults]; with DOMAIN, those for the whole\n"
      "domain; with DOMAIN and DISK (a qdev id), those that govern the disk's copy.\n"
      "Neither needs to exist: the values are worked out from the names.\n"
      "\n"
      "Example:\n"
      "  virt-mirror policy show web01 disk0",
      vmr_cli_cmd_policy_show },
    { "metrics", "", "", "Print the daemon's metrics in the Prometheus text format",
      "Prints what virt-mirrord serves at /metrics (--metrics-listen), for\n"
      "node_exporter's textfile collector. Write it to a file in the collector's\n"
      "directory atomically: to a temporary file there first, then rename it.\n"
      "\n"
      "Example:\n"
      "  virt-mirror metrics > /var/lib/node_exporter/virt-mirror.prom.$$ &&\n"
      "    mv /var/lib/node_exporter/virt-mirror.prom.$$ /var/lib/node_exporter/virt-mirror.prom",
      vmr_cli_cmd_metrics },
    { "version", "", "", "Print the versions of virt-mirror and virt-mirrord", NULL,
      vmr_cli_cmd_version },
    { "cluster status", "", "", "Show the cluster's members, leases, slots and queue",
      "Read from etcd through this host's virt-mirrord, whose policy has a\n"
      "[cluster] section. The queue is in the order the jobs joined it, first in\n"
      "first out across the hosts; a job whose SLOT is taken runs its bulk copy.",
      vmr_cli_cmd_cluster_status },
    { "cluster jobs", "", "", "List the jobs of every host of the cluster",
      "What each daemon of the cluster publishes of its unfinished jobs under its\n"
      "lease: a host that died drops out when its lease expires.",
      vmr_cli_cmd_cluster_jobs },
};

const VmrCliCommand *
vmr_cli_command_find (gchar **argv, guint *out_n_words, GError **error)
{
    g_autoptr (GString) group_commands = g_string_new (NULL);

    for (gsize i = 0; i < G_N_ELEMENTS (commands); i++) {
        g_auto (GStrv) words = g_strsplit (commands[i].name, " ", 2);

        if (!g_str_equal (words[0], argv[0]))
            continue;
        if (words[1] == NULL) {
            *out_n_words = 1;
            return &commands[i];
        }
        if (argv[1] != NULL && g_str_equal (words[1], argv[1])) {
            *out_n_words = 2;
            return &commands[i];
        }
        g_string_append_printf (group_commands, "%s%s", group_commands->len > 0 ? " or " : "",
                                words[1]);
    }
    if (group_commands->len == 0)
        g_set_error (error, VMR_CLI_USAGE_ERROR, 0, "unknown command '%s' (see virt-mirror --help)",
                     argv[0]);
    else if (argv[1] == NULL)
        g_set_error (error, VMR_CLI_USAGE_ERROR, 0,
                     "%s: missing command: %s (see virt-mirror --help)", argv[0],
                     group_commands->str);
    else
        g_set_error (error, VMR_CLI_USAGE_ERROR, 0,
                     "%s: unknown command '%s': use %s (see virt-mirror --help)", argv[0], argv[1],
                     group_commands->str);
    return NULL;
}

gchar *
vmr_cli_command_list_help (void)
{
    g_autoptr (GString) text = g_string_new ("Commands:\n");
    gsize width = 0;

    for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
        width = MAX (width, strlen (commands[i].name) + 1 + strlen (commands[i].synopsis));
    for (gsize i = 0; i < G_N_ELEMENTS (commands); i++) {
        g_autofree gchar *usage = g_strjoin (" ", commands[i].name, commands[i].synopsis, NULL);

        g_string_append_printf (text, "  %-*s  %s\n", (gint) width, usage, commands[i].summary);
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

void
vmr_cli_command_set_usage_error (GError **error, const VmrCliCommand *cmd, const gchar *format, ...)
{
    g_autofree gchar *message = NULL;
    va_list args;

    va_start (args, format);
    message = g_strdup_vprintf (format, args);
    va_end (args);
    g_set_error (error, VMR_CLI_USAGE_ERROR, 0, "%s: %s (see virt-mirror %s --help)", cmd->name,
                 message, cmd->name);
}

/*
 * The names in @args without their brackets; the first *@out_n_required are
 * required. A last "..." is not a name: it sets *@out_repeats, and the
 * optional names before it may then be given any number of times.
 */
static GStrv
argument_names (const gchar *args, guint *out_n_required, gboolean *out_repeats)
{
    g_auto (GStrv) words = g_strsplit (args, " ", -1);
    g_autoptr (GStrvBuilder) names = g_strv_builder_new ();
    gboolean optional = FALSE;

    *out_n_required = 0;
    *out_repeats = FALSE;
    for (guint i = 0; words[i] != NULL; i++) {
        if (*words[i] == '\0')
            continue;
        optional |= *words[i] == '[';
        g_strdelimit (words[i], "[]", ' ');
        if (g_str_equal (g_strstrip (words[i]), "...")) {
            *out_repeats = TRUE;
            continue;
        }
        if (!optional)
            (*out_n_required)++;
        g_strv_builder_add (names, words[i]);
    }
    return g_strv_builder_end (names);
}

static GOptionContext *
new_option_context (const VmrCliCommand *cmd, const GOptionEntry *entries,
                    const GOptionEntry *common_entries)
{
    g_autofree gchar *parameter = g_strjoin (" ", cmd->name, cmd->args, NULL);
    GOptionContext *context = g_option_context_new (g_strstrip (parameter));

    /* our own --help, so that printing it is not an exit() inside GLib */
    g_option_context_set_help_enabled (context, FALSE);
    g_option_context_set_summary (context, cmd->summary);
    if (cmd->description != NULL)
        g_option_context_set_description (context, cmd->description);
    if (entries != NULL)
        g_option_context_add_main_entries (context, entries, NULL);
    g_option_context_add_main_entries (context, common_entries, NULL);
    return context;
}

gboolean
vmr_cli_command_parse (const VmrCliCommand *cmd, VmrCliSession *session,
                       const GOptionEntry *entries, gchar **argv, gchar ***out_args, GError **error)
{
    g_autofree gchar *connect = NULL;
    gboolean json = FALSE;
    gboolean help = FALSE;
    g_auto (GStrv) positional = NULL;
    g_auto (GStrv) remaining = g_strdupv (argv);
    g_auto (GStrv) wanted = NULL;
    g_autoptr (GOptionContext) context = NULL;
    g_autoptr (GError) local_error = NULL;
    guint n_positional;
    guint n_required = 0;
    guint n_wanted;
    gboolean repeats = FALSE;
    const GOptionEntry common_entries[] = {
        { "connect", 'c', G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &connect,
          "Control socket of virt-mirrord", "SOCKET" },
        { "json", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &json,
          "Print results and errors as JSON on stdout", NULL },
        { "help", 'h', G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &help, "Show this help", NULL },
        /* positional arguments may be file names, which need not be UTF-8 */
        { G_OPTION_REMAINING, 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME_ARRAY, &positional, NULL,
          NULL },
        G_OPTION_ENTRY_NULL,
    };

    *out_args = NULL;
    context = new_option_context (cmd, entries, common_entries);
    if (!g_option_context_parse_strv (context, &remaining, &local_error)) {
        g_autofree gchar *message = g_strdup (local_error->message);

        /* GLib's messages start upper-case; ours continue a sentence */
        message[0] = g_ascii_tolower (message[0]);
        vmr_cli_command_set_usage_error (error, cmd, "%s", message);
        return FALSE;
    }
    if (connect != NULL)
        vmr_cli_session_set_socket (session, connect);
    if (json)
        session->json = TRUE;
    if (help) {
        g_autofree gchar *text = g_option_context_get_help (context, TRUE, NULL);

        g_print ("%s", text);
        return TRUE;
    }

    n_positional = positional != NULL ? g_strv_length (positional) : 0;
    wanted = argument_names (cmd->args, &n_required, &repeats);
    n_wanted = g_strv_length (wanted);
    if (n_positional < n_required) {
        vmr_cli_command_set_usage_error (error, cmd, "missing %s", wanted[n_positional]);
        return FALSE;
    }
    /* the command checks how often the repeated names were given */
    if (n_positional > n_wanted && !repeats) {
        vmr_cli_command_set_usage_error (error, cmd, "unexpected argument '%s'",
                                         positional[n_wanted]);
        return FALSE;
    }
    *out_args = positional != NULL ? g_steal_pointer (&positional) : g_new0 (gchar *, 1);
    return TRUE;
}

JsonNode *
vmr_cli_command_call (VmrCliSession *session, const gchar *command, JsonObject *arguments,
                      const gchar *what, GError **error)
{
    JsonNode *reply = vmr_cli_session_call (session, command, arguments, error);

    if (reply == NULL) {
        g_prefix_error (error, "cannot %s: ", what);
        return NULL;
    }
    if (session->json)
        vmr_cli_json_print (reply);
    return reply;
}

gboolean
vmr_cli_command_parse_rate (const VmrCliCommand *cmd, const gchar *text,
                            guint64 *out_bytes_per_second, GError **error)
{
    guint64 bytes = 0;

    /* JSON integers are signed 64-bit */
    if (!vmr_units_parse_bytes (text, &bytes, NULL) || bytes > G_MAXINT64) {
        vmr_cli_command_set_usage_error (
            error, cmd,
            "invalid RATE '%s': use bytes/s with an optional K, M or G suffix, e.g. 100M", text);
        return FALSE;
    }
    *out_bytes_per_second = bytes;
    return TRUE;
}

gboolean
vmr_cli_command_check_format (const VmrCliCommand *cmd, const gchar *format, GError **error)
{
    if (format == NULL || g_str_equal (format, "raw") || g_str_equal (format, "qcow2"))
        return TRUE;
    vmr_cli_command_set_usage_error (error, cmd, "bad --format '%s': use raw or qcow2", format);
    return FALSE;
}
