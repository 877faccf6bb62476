#define G_LOG_DOMAIN "vmr-daemon"

#include <errno.h>
#include <glib-unix.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "control-server.h"
#include "engine.h"
#include "metrics-server.h"
#include "service-notify.h"
#include "vmr-config.h"
#if VMR_HAVE_LIBVIRT
#include "libvirt-tracker.h"
#endif

static gboolean
quit_cb (gpointer user_data)
{
    g_message ("shutting down");
    g_main_loop_quit (user_data);
    return G_SOURCE_CONTINUE;
}

static gboolean
hangup_cb (gpointer user_data)
{
    g_autoptr (GError) error = NULL;

    /* an invalid file keeps the current policy; the engine logs why */
    if (!vmr_engine_reload_policy (VMR_ENGINE (user_data), &error))
        g_message ("SIGHUP: reload refused:\n%s", error->message);
    return G_SOURCE_CONTINUE;
}

/* option, then environment, then the built-in default */
static const gchar *
pick (const gchar *option, const gchar *env_name, const gchar *fallback)
{
    const gchar *env = g_getenv (env_name);

    if (option != NULL)
        return option;
    if (env != NULL && *env != '\0')
        return env;
    return fallback;
}

/* the group @name (or number) as a gid; FALSE when there is none */
static gboolean
lookup_group (const gchar *name, gid_t *out_gid)
{
    struct group *group = getgrnam (name);
    guint64 number;

    if (group != NULL) {
        *out_gid = group->gr_gid;
        return TRUE;
    }
    if (g_ascii_string_to_unsigned (name, 10, 0, G_MAXUINT32 - 1, &number, NULL)) {
        *out_gid = (gid_t) number;
        return TRUE;
    }
    return FALSE;
}

/*
 * The read-only socket, when a group is given for it: its own path, or the
 * default one. Returns FALSE, having said why, when the options are wrong.
 */
static gboolean
pick_readonly (const gchar *socket_opt, const gchar *group_opt, gchar **out_path, gid_t *out_gid)
{
    const gchar *group = pick (group_opt, "VIRT_MIRROR_READONLY_GROUP", NULL);
    const gchar *path = pick (socket_opt, "VIRT_MIRROR_READONLY_SOCKET", NULL);

    if (group == NULL) {
        if (path != NULL) {
            g_printerr ("virt-mirrord: the read-only socket %s needs a group: give "
                        "--readonly-group (or VIRT_MIRROR_READONLY_GROUP)\n",
                        path);
            return FALSE;
        }
        return TRUE;
    }
    if (!lookup_group (group, out_gid)) {
        g_printerr ("virt-mirrord: the read-only socket's group %s does not exist\n", group);
        return FALSE;
    }
    *out_path = g_canonicalize_filename (path != NULL ? path : VMR_DEFAULT_READONLY_SOCKET, NULL);
    return TRUE;
}

/* one descriptor per control client: take what the hard limit allows */
static void
raise_fd_limit (void)
{
    struct rlimit limit;

    if (getrlimit (RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit (RLIMIT_NOFILE, &limit) < 0)
            g_debug ("cannot raise the file descriptor limit: %s", g_strerror (errno));
    }
}

int
main (int argc, char **argv)
{
    g_autofree gchar *socket_opt = NULL;
    g_autofree gchar *state_dir_opt = NULL;
    g_autofree gchar *policy_opt = NULL;
    g_autofree gchar *libvirt_uri_opt = NULL;
    g_autofree gchar *readonly_socket_opt = NULL;
    g_autofree gchar *readonly_group_opt = NULL;
    g_autofree gchar *metrics_listen_opt = NULL;
    const gchar *metrics_listen;
    g_autofree gchar *readonly_socket = NULL;
    g_autofree gchar *socket_dir = NULL;
    g_autofree gchar *readonly_dir = NULL;
    gid_t readonly_gid = (gid_t) -1;
    const gchar *libvirt_uri;
    g_autofree gchar *policy_path = NULL;
    gboolean policy_required;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *state_dir = NULL;
    gboolean foreground = FALSE;
    gboolean no_libvirt = FALSE;
    gboolean verbose = FALSE;
    gboolean version = FALSE;
    const GOptionEntry entries[] = {
        { "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_opt,
          "Control socket (env VIRT_MIRROR_SOCKET, default " VMR_DEFAULT_SOCKET ")", "PATH" },
        { "readonly-socket", 0, 0, G_OPTION_ARG_FILENAME, &readonly_socket_opt,
          "Read-only socket, for reading jobs, domains and the policy (env "
          "VIRT_MIRROR_READONLY_SOCKET, default " VMR_DEFAULT_READONLY_SOCKET ")",
          "PATH" },
        { "readonly-group", 0, 0, G_OPTION_ARG_STRING, &readonly_group_opt,
          "Serve the read-only socket to this group, mode 0660 (env VIRT_MIRROR_READONLY_GROUP; "
          "no read-only socket without it)",
          "GROUP" },
        { "state-dir", 'd', 0, G_OPTION_ARG_FILENAME, &state_dir_opt,
          "Job records (env VIRT_MIRROR_STATE_DIR, default " VMR_DEFAULT_STATE_DIR ")", "DIR" },
        { "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy_opt,
          "Policy file (env VIRT_MIRROR_POLICY, default " VMR_DEFAULT_POLICY ")", "FILE" },
        { "metrics-listen", 0, 0, G_OPTION_ARG_STRING, &metrics_listen_opt,
          "Serve the metrics over HTTP at http://ADDR:PORT/metrics (env "
          "VIRT_MIRROR_METRICS_LISTEN; no authentication: use loopback or a firewall)",
          "ADDR:PORT" },
        { "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground, "Do not detach", NULL },
        { "libvirt-uri", 0, 0, G_OPTION_ARG_STRING, &libvirt_uri_opt,
          "libvirt connection (env VIRT_MIRROR_LIBVIRT_URI, default " VMR_DEFAULT_LIBVIRT_URI ")",
          "URI" },
        { "no-libvirt", 0, 0, G_OPTION_ARG_NONE, &no_libvirt,
          "Do not connect to libvirt; serve QEMU processes attached by hand", NULL },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log debug messages", NULL },
        { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new ("- move the disks of running VMs");
    g_autoptr (GError) error = NULL;
    g_autoptr (GMainLoop) loop = NULL;
    g_autoptr (VmrEngine) engine = NULL;
    g_autoptr (VmrControlServer) server = NULL;
    g_autoptr (VmrMetricsServer) metrics = NULL;
    g_autoptr (VmrServiceNotify) notifier = NULL;
#if VMR_HAVE_LIBVIRT
    g_autoptr (VmrLibvirtTracker) tracker = NULL;
#endif

    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, &argc, &argv, &error)) {
        g_printerr ("virt-mirrord: %s\n", error->message);
        return 2;
    }
    if (argc > 1) {
        g_printerr ("virt-mirrord: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    if (version) {
        g_print ("virt-mirrord %s\n", VMR_VERSION);
        return 0;
    }
    if (verbose)
        g_log_set_debug_enabled (TRUE);
    metrics_listen = pick (metrics_listen_opt, "VIRT_MIRROR_METRICS_LISTEN", NULL);
    if (metrics_listen != NULL) {
        g_autoptr (GSocketAddress) address
            = vmr_metrics_server_parse_address (metrics_listen, &error);

        if (address == NULL) {
            g_printerr ("virt-mirrord: --metrics-listen: %s\n", error->message);
            return 2;
        }
    }

    socket_path = g_canonicalize_filename (
        pick (socket_opt, "VIRT_MIRROR_SOCKET", VMR_DEFAULT_SOCKET), NULL);
    if (!pick_readonly (readonly_socket_opt, readonly_group_opt, &readonly_socket, &readonly_gid))
        return 2;
    libvirt_uri = pick (libvirt_uri_opt, "VIRT_MIRROR_LIBVIRT_URI", VMR_DEFAULT_LIBVIRT_URI);
#if !VMR_HAVE_LIBVIRT
    if (!no_libvirt)
        g_message ("built without libvirt: serving QEMU processes attached by hand only");
    no_libvirt = TRUE;
#endif
    state_dir = g_canonicalize_filename (
        pick (state_dir_opt, "VIRT_MIRROR_STATE_DIR", VMR_DEFAULT_STATE_DIR), NULL);
    if (g_mkdir_with_parents (state_dir, 0700) < 0 || access (state_dir, W_OK) < 0) {
        g_printerr ("virt-mirrord: state directory %s is not usable: %s\n", state_dir,
                    g_strerror (errno));
        return 1;
    }

    raise_fd_limit ();
    engine = vmr_engine_new (state_dir);
    vmr_engine_follow_cluster_evacuations (engine);
    /* a copy must never overwrite what the daemon lives on */
    socket_dir = g_path_get_dirname (socket_path);
    vmr_engine_protect_directory (engine, "socket directory", socket_dir);
    if (readonly_socket != NULL) {
        readonly_dir = g_path_get_dirname (readonly_socket);
        vmr_engine_protect_directory (engine, "read-only socket directory", readonly_dir);
    }
    /* the default file may be absent (built-in values); a named one must exist */
    policy_required
        = policy_opt != NULL
          || (g_getenv ("VIRT_MIRROR_POLICY") != NULL && *g_getenv ("VIRT_MIRROR_POLICY") != '\0');
    policy_path = g_canonicalize_filename (
        pick (policy_opt, "VIRT_MIRROR_POLICY", VMR_DEFAULT_POLICY), NULL);
    if (!vmr_engine_load_policy (engine, policy_path, policy_required, &error)) {
        g_printerr ("virt-mirrord: invalid policy, not starting:\n%s\n", error->message);
        return 1;
    }
    server = vmr_control_server_new (engine);
    if (!vmr_control_server_listen (server, socket_path, &error)
        || (readonly_socket != NULL
            && !vmr_control_server_listen_readonly (server, readonly_socket, readonly_gid,
                                                    &error))) {
        g_printerr ("virt-mirrord: %s\n", error->message);
        vmr_control_server_stop (server);
        return 1;
    }
    if (metrics_listen != NULL) {
        metrics = vmr_metrics_server_new (engine);
        if (!vmr_metrics_server_listen (metrics, metrics_listen, &error)) {
            g_printerr ("virt-mirrord: %s\n", error->message);
            vmr_control_server_stop (server);
            return 1;
        }
    }
    if (!foreground) {
        /* nothing has started a thread yet, so forking is safe here */
        if (daemon (0, 0) < 0) {
            g_printerr ("virt-mirrord: cannot detach: %s\n", g_strerror (errno));
            vmr_control_server_stop (server);
            return 1;
        }
        g_log_set_writer_func (g_log_writer_journald, NULL, NULL);
    }

    loop = g_main_loop_new (NULL, FALSE);
    /* the previous run's jobs were loaded with the engine; READY once the loop serves the socket */
    notifier = vmr_service_notify_new (engine);
    vmr_service_notify_ready_when_idle (notifier);
    g_unix_signal_add (SIGTERM, quit_cb, loop);
    g_unix_signal_add (SIGINT, quit_cb, loop);
    g_unix_signal_add (SIGHUP, hangup_cb, engine);
    g_message ("virt-mirrord %s listening on %s (state in %s%s%s)", VMR_VERSION, socket_path,
               state_dir, no_libvirt ? ", libvirt off" : ", libvirt at ",
               no_libvirt ? "" : libvirt_uri);
    if (readonly_socket != NULL)
        g_message ("read-only socket %s for group %u", readonly_socket, (guint) readonly_gid);
#if VMR_HAVE_LIBVIRT
    /* after daemon(): libvirt runs threads of its own */
    if (!no_libvirt) {
        tracker = vmr_libvirt_tracker_new (engine, libvirt_uri);
        vmr_libvirt_tracker_start (tracker);
    }
#endif
    g_main_loop_run (loop);

    vmr_service_notify_stopping (notifier);
    if (metrics != NULL)
        vmr_metrics_server_stop (metrics);
    vmr_control_server_stop (server);
    vmr_engine_shutdown (engine);
#if VMR_HAVE_LIBVIRT
    if (tracker != NULL)
        vmr_libvirt_tracker_stop (tracker);
#endif
    return 0;
}
