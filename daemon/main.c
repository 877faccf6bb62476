#define G_LOG_DOMAIN "vmr-daemon"

#include <errno.h>
#include <glib-unix.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "control-server.h"
#include "engine.h"
#include "metrics-server.h"
#include "service-notify.h"
#include "units.h"
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

/*
 * one descriptor per control client: take what the hard limit allows; the
 * files the daemon may open then, 0 when not known
 */
static guint64
raise_fd_limit (void)
{
    struct rlimit limit;

    if (getrlimit (RLIMIT_NOFILE, &limit) < 0)
        return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit (RLIMIT_NOFILE, &limit) < 0) {
            g_debug ("cannot raise the file descriptor limit: %s", g_strerror (errno));
            getrlimit (RLIMIT_NOFILE, &limit);
        }
    }
    return limit.rlim_cur == RLIM_INFINITY ? 0 : (guint64) limit.rlim_cur;
}

/* the control socket's limits, as options and environment give them */
typedef struct {
    gchar *max_clients;
    gchar *max_clients_per_user;
    gchar *idle_timeout;
} LimitOptions;

/* @text, a whole number from 1 to G_MAXINT, into @out; FALSE having said why */
static gboolean
pick_count (const gchar *option, const gchar *text, guint *out)
{
    guint64 number;

    if (text == NULL)
        return TRUE;
    if (!g_ascii_string_to_unsigned (text, 10, 1, G_MAXINT, &number, NULL)) {
        g_printerr ("virt-mirrord: --%s: '%s' is not a whole number from 1 to %d\n", option, text,
                    G_MAXINT);
        return FALSE;
    }
    *out = (guint) number;
    return TRUE;
}

/*
 * The control socket's limits into @out: the defaults, then what the
 * environment and the options say; FALSE having said why when one is
 * wrong, or leaves too few of the @max_files the daemon may open
 */
static gboolean
pick_limits (const LimitOptions *options, guint64 max_files, VmrControlLimits *out)
{
    const gchar *idle = pick (options->idle_timeout, "VIRT_MIRROR_CLIENT_IDLE_TIMEOUT", NULL);
    g_autoptr (GError) error = NULL;
    gint64 idle_us = 0;

    vmr_control_limits_init (out);
    if (!pick_count ("max-clients", pick (options->max_clients, "VIRT_MIRROR_MAX_CLIENTS", NULL),
                     &out->max_clients)
        || !pick_count (
            "max-clients-per-user",
            pick (options->max_clients_per_user, "VIRT_MIRROR_MAX_CLIENTS_PER_USER", NULL),
            &out->max_clients_per_user))
        return FALSE;
    if (idle != NULL) {
        if (!vmr_units_parse_duration (idle, &idle_us, &error) || idle_us < 0
            || idle_us % G_USEC_PER_SEC != 0 || idle_us / G_USEC_PER_SEC > G_MAXUINT) {
            g_printerr ("virt-mirrord: --client-idle-timeout: '%s' is not a whole number of "
                        "seconds (e.g. 600, 10m, or 0 for none)\n",
                        idle);
            return FALSE;
        }
        out->idle_timeout_s = (guint) (idle_us / G_USEC_PER_SEC);
    }
    if (!vmr_control_limits_check (out, max_files, &error)) {
        g_printerr ("virt-mirrord: %s\n", error->message);
        return FALSE;
    }
    return TRUE;
}

/* the command line as given: NULL or FALSE for what it does not say */
typedef struct {
    gchar *socket;
    gchar *state_dir;
    gchar *policy;
    gchar *libvirt_uri;
    gchar *readonly_socket;
    gchar *readonly_group;
    gchar *metrics_listen;
    gboolean metrics_allow_remote;
    LimitOptions limits;
    gboolean foreground;
    gboolean no_libvirt;
    gboolean verbose;
    gboolean version;
} Options;

static void
options_clear (Options *o)
{
    g_free (o->socket);
    g_free (o->state_dir);
    g_free (o->policy);
    g_free (o->libvirt_uri);
    g_free (o->readonly_socket);
    g_free (o->readonly_group);
    g_free (o->metrics_listen);
    g_free (o->limits.max_clients);
    g_free (o->limits.max_clients_per_user);
    g_free (o->limits.idle_timeout);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Options, options_clear)

/* fills @o from the command line; -1 when the daemon goes on, else its exit status */
static gint
parse_options (gint *argc, gchar ***argv, Options *o)
{
    const GOptionEntry entries[] = {
        { "socket", 's', 0, G_OPTION_ARG_FILENAME, &o->socket,
          "Control socket (env VIRT_MIRROR_SOCKET, default " VMR_DEFAULT_SOCKET ")", "PATH" },
        { "readonly-socket", 0, 0, G_OPTION_ARG_FILENAME, &o->readonly_socket,
          "Read-only socket, for reading jobs, domains and the policy (env "
          "VIRT_MIRROR_READONLY_SOCKET, default " VMR_DEFAULT_READONLY_SOCKET ")",
          "PATH" },
        { "readonly-group", 0, 0, G_OPTION_ARG_STRING, &o->readonly_group,
          "Serve the read-only socket to this group, mode 0660 (env VIRT_MIRROR_READONLY_GROUP; "
          "no read-only socket without it)",
          "GROUP" },
        { "max-clients", 0, 0, G_OPTION_ARG_STRING, &o->limits.max_clients,
          "Control connections at once, both sockets (env VIRT_MIRROR_MAX_CLIENTS, "
          "default " G_STRINGIFY (
              VMR_CONTROL_DEFAULT_MAX_CLIENTS) "; half of it for all users but root together)",
          "N" },
        { "max-clients-per-user", 0, 0, G_OPTION_ARG_STRING, &o->limits.max_clients_per_user,
          "Control connections at once of one user other than root (env "
          "VIRT_MIRROR_MAX_CLIENTS_PER_USER, default " G_STRINGIFY (
              VMR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER) ")",
          "N" },
        { "client-idle-timeout", 0, 0, G_OPTION_ARG_STRING, &o->limits.idle_timeout,
          "Cut off a client of a user other than root that sends nothing for this long (env "
          "VIRT_MIRROR_CLIENT_IDLE_TIMEOUT, default " G_STRINGIFY (
              VMR_CONTROL_DEFAULT_IDLE_TIMEOUT_S) "s, 0: never)",
          "DURATION" },
        { "state-dir", 'd', 0, G_OPTION_ARG_FILENAME, &o->state_dir,
          "Job records (env VIRT_MIRROR_STATE_DIR, default " VMR_DEFAULT_STATE_DIR ")", "DIR" },
        { "policy", 'p', 0, G_OPTION_ARG_FILENAME, &o->policy,
          "Policy file (env VIRT_MIRROR_POLICY, default " VMR_DEFAULT_POLICY ")", "FILE" },
        { "metrics-listen", 0, 0, G_OPTION_ARG_STRING, &o->metrics_listen,
          "Serve the metrics over HTTP at http://ADDR:PORT/metrics, or on the UNIX socket PATH "
          "(env VIRT_MIRROR_METRICS_LISTEN; no authentication)",
          "ADDR:PORT|unix:PATH" },
        { "metrics-allow-remote", 0, 0, G_OPTION_ARG_NONE, &o->metrics_allow_remote,
          "Let --metrics-listen take an address that is not loopback (env "
          "VIRT_MIRROR_METRICS_ALLOW_REMOTE=1)",
          NULL },
        { "foreground", 'f', 0, G_OPTION_ARG_NONE, &o->foreground, "Do not detach", NULL },
        { "libvirt-uri", 0, 0, G_OPTION_ARG_STRING, &o->libvirt_uri,
          "libvirt connection (env VIRT_MIRROR_LIBVIRT_URI, default " VMR_DEFAULT_LIBVIRT_URI ")",
          "URI" },
        { "no-libvirt", 0, 0, G_OPTION_ARG_NONE, &o->no_libvirt,
          "Do not connect to libvirt; serve QEMU processes attached by hand", NULL },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &o->verbose, "Log debug messages", NULL },
        { "version", 0, 0, G_OPTION_ARG_NONE, &o->version, "Print the version and exit", NULL },
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new ("- move the disks of running VMs");
    g_autoptr (GError) error = NULL;

    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, argc, argv, &error)) {
        g_printerr ("virt-mirrord: %s\n", error->message);
        return 2;
    }
    if (*argc > 1) {
        g_printerr ("virt-mirrord: unexpected argument '%s'\n", (*argv)[1]);
        return 2;
    }
    if (o->version) {
        g_print ("virt-mirrord %s\n", VMR_VERSION);
        return 0;
    }
    return -1;
}

/*
 * --metrics-listen, from the option or the environment, or NULL; FALSE
 * having said why when it is no address to serve (one that is not loopback
 * needs --metrics-allow-remote)
 */
static gboolean
pick_metrics (const Options *o, const gchar **out_listen, gboolean *out_allow_remote)
{
    const gchar *listen = pick (o->metrics_listen, "VIRT_MIRROR_METRICS_LISTEN", NULL);
    const gchar *allow_env = g_getenv ("VIRT_MIRROR_METRICS_ALLOW_REMOTE");
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (GError) error = NULL;

    *out_allow_remote = o->metrics_allow_remote || g_strcmp0 (allow_env, "1") == 0;
    if (!o->metrics_allow_remote && allow_env != NULL && *allow_env != '\0'
        && g_strcmp0 (allow_env, "0") != 0 && g_strcmp0 (allow_env, "1") != 0) {
        g_printerr ("virt-mirrord: VIRT_MIRROR_METRICS_ALLOW_REMOTE='%s' is neither 1 nor 0\n",
                    allow_env);
        return FALSE;
    }
    *out_listen = listen;
    if (listen == NULL)
        return TRUE;
    address = vmr_metrics_server_parse_address (listen, *out_allow_remote, &error);
    if (address == NULL) {
        g_printerr ("virt-mirrord: --metrics-listen: %s\n", error->message);
        return FALSE;
    }
    return TRUE;
}

/* a copy must never overwrite what the daemon lives on */
static void
protect_own_directories (VmrEngine *engine, const gchar *socket_path, const gchar *readonly_socket,
                         const gchar *metrics_listen)
{
    g_autofree gchar *socket_dir = g_path_get_dirname (socket_path);

    vmr_engine_protect_directory (engine, "socket directory", socket_dir);
    if (readonly_socket != NULL) {
        g_autofree gchar *readonly_dir = g_path_get_dirname (readonly_socket);

        vmr_engine_protect_directory (engine, "read-only socket directory", readonly_dir);
    }
    if (metrics_listen != NULL && g_str_has_prefix (metrics_listen, "unix:")) {
        g_autofree gchar *metrics_dir = g_path_get_dirname (metrics_listen + strlen ("unix:"));

        vmr_engine_protect_directory (engine, "metrics socket directory", metrics_dir);
    }
}

/* the policy of --policy, VIRT_MIRROR_POLICY or the default file; FALSE having said why */
static gboolean
load_policy (VmrEngine *engine, const gchar *option)
{
    const gchar *env = g_getenv ("VIRT_MIRROR_POLICY");
    /* the default file may be absent (built-in values); a named one must exist */
    gboolean required = option != NULL || (env != NULL && *env != '\0');
    g_autofree gchar *path
        = g_canonicalize_filename (pick (option, "VIRT_MIRROR_POLICY", VMR_DEFAULT_POLICY), NULL);
    g_autoptr (GError) error = NULL;

    if (!vmr_engine_load_policy (engine, path, required, &error)) {
        g_printerr ("virt-mirrord: invalid policy, not starting:\n%s\n", error->message);
        return FALSE;
    }
    return TRUE;
}

/* the control sockets and the metrics, served; FALSE having said why */
static gboolean
start_servers (VmrControlServer *server, VmrMetricsServer *metrics, const gchar *socket_path,
               const gchar *readonly_socket, gid_t readonly_gid, const gchar *metrics_listen,
               gboolean metrics_allow_remote)
{
    g_autoptr (GError) error = NULL;

    if (!vmr_control_server_listen (server, socket_path, &error)
        || (readonly_socket != NULL
            && !vmr_control_server_listen_readonly (server, readonly_socket, readonly_gid, &error))
        || (metrics_listen != NULL
            && !vmr_metrics_server_listen (metrics, metrics_listen, metrics_allow_remote,
                                           readonly_gid, &error))) {
        g_printerr ("virt-mirrord: %s\n", error->message);
        vmr_control_server_stop (server);
        return FALSE;
    }
    return TRUE;
}

int
main (int argc, char **argv)
{
    g_auto (Options) o = { 0 };
    const gchar *metrics_listen = NULL;
    gboolean metrics_allow_remote = FALSE;
    VmrControlLimits limits;
    g_autofree gchar *readonly_socket = NULL;
    gid_t readonly_gid = (gid_t) -1;
    const gchar *libvirt_uri;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *state_dir = NULL;
    gint status;
    g_autoptr (GMainLoop) loop = NULL;
    g_autoptr (VmrEngine) engine = NULL;
    g_autoptr (VmrControlServer) server = NULL;
    g_autoptr (VmrMetricsServer) metrics = NULL;
    g_autoptr (VmrServiceNotify) notifier = NULL;
#if VMR_HAVE_LIBVIRT
    g_autoptr (VmrLibvirtTracker) tracker = NULL;
#endif

    status = parse_options (&argc, &argv, &o);
    if (status >= 0)
        return status;
    if (o.verbose)
        g_log_set_debug_enabled (TRUE);
    if (!pick_limits (&o.limits, raise_fd_limit (), &limits)
        || !pick_metrics (&o, &metrics_listen, &metrics_allow_remote))
        return 2;

    socket_path
        = g_canonicalize_filename (pick (o.socket, "VIRT_MIRROR_SOCKET", VMR_DEFAULT_SOCKET), NULL);
    if (!pick_readonly (o.readonly_socket, o.readonly_group, &readonly_socket, &readonly_gid))
        return 2;
    libvirt_uri = pick (o.libvirt_uri, "VIRT_MIRROR_LIBVIRT_URI", VMR_DEFAULT_LIBVIRT_URI);
#if !VMR_HAVE_LIBVIRT
    if (!o.no_libvirt)
        g_message ("built without libvirt: serving QEMU processes attached by hand only");
    o.no_libvirt = TRUE;
#endif
    state_dir = g_canonicalize_filename (
        pick (o.state_dir, "VIRT_MIRROR_STATE_DIR", VMR_DEFAULT_STATE_DIR), NULL);
    if (g_mkdir_with_parents (state_dir, 0700) < 0 || access (state_dir, W_OK) < 0) {
        g_printerr ("virt-mirrord: state directory %s is not usable: %s\n", state_dir,
                    g_strerror (errno));
        return 1;
    }

    engine = vmr_engine_new (state_dir);
    vmr_engine_follow_cluster_evacuations (engine);
    protect_own_directories (engine, socket_path, readonly_socket, metrics_listen);
    if (!load_policy (engine, o.policy))
        return 1;
    server = vmr_control_server_new (engine);
    vmr_control_server_set_limits (server, &limits);
    metrics = metrics_listen != NULL ? vmr_metrics_server_new (engine) : NULL;
    if (!start_servers (server, metrics, socket_path, readonly_socket, readonly_gid, metrics_listen,
                        metrics_allow_remote))
        return 1;
    if (!o.foreground) {
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
               state_dir, o.no_libvirt ? ", libvirt off" : ", libvirt at ",
               o.no_libvirt ? "" : libvirt_uri);
    if (readonly_socket != NULL)
        g_message ("read-only socket %s for group %u", readonly_socket, (guint) readonly_gid);
#if VMR_HAVE_LIBVIRT
    /* after daemon(): libvirt runs threads of its own */
    if (!o.no_libvirt) {
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
