#define G_LOG_DOMAIN "vmr-bench"

#include "bench-process.h"

#include "vmr-json.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib-unix.h>
#include <glib/gstdio.h>

#include "vmr-error.h"

static void
child_setup_cb (gpointer user_data)
{
    /* a bench killed outright takes its QEMU and daemon with it */
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

struct _VmrBenchTick {
    guint source_id;
};

static gboolean
tick_cb (gpointer user_data)
{
    return G_SOURCE_CONTINUE;
}

VmrBenchTick *
vmr_bench_tick_new (void)
{
    VmrBenchTick *tick = g_new0 (VmrBenchTick, 1);

    tick->source_id = g_timeout_add (VMR_BENCH_TICK_MS, tick_cb, NULL);
    return tick;
}

void
vmr_bench_tick_free (VmrBenchTick *tick)
{
    g_source_remove (tick->source_id);
    g_free (tick);
}

GSubprocess *
vmr_bench_spawn (const gchar *const *argv, const gchar *cwd, const gchar *log_path, GError **error)
{
    /* stdin is /dev/null; one file for both outputs, so that the log keeps their order */
    g_autoptr (GSubprocessLauncher) launcher
        = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDERR_MERGE);

    g_subprocess_launcher_set_cwd (launcher, cwd);
    g_subprocess_launcher_set_child_setup (launcher, child_setup_cb, NULL, NULL);
    g_subprocess_launcher_set_stdout_file_path (launcher, log_path);
    return g_subprocess_launcher_spawnv (launcher, argv, error);
}

gboolean
vmr_bench_wait_listening (GSubprocess *proc, const gchar *socket, const gchar *log_path,
                          gint64 deadline_mono, GError **error)
{
    /* it creates its socket once it listens */
    while (!g_file_test (socket, G_FILE_TEST_EXISTS)) {
        g_main_context_iteration (NULL, FALSE);
        if (!vmr_bench_is_running (proc) || g_get_monotonic_time () > deadline_mono) {
            g_autofree gchar *tail = vmr_bench_log_tail (log_path, 3);

            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "nbdkit did not listen on %s: %s",
                         socket, tail);
            return FALSE;
        }
        g_usleep (10 * 1000);
    }
    return TRUE;
}

gboolean
vmr_bench_is_running (GSubprocess *proc)
{
    return proc != NULL && g_subprocess_get_identifier (proc) != NULL;
}

typedef struct {
    gboolean done;   /* the wait finished, one way or the other */
    gboolean exited; /* ... because the process exited */
    gint64 end_mono; /* when the bench learnt of the end */
} ExitWait;

static void
exited_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ExitWait *wait = user_data;

    wait->exited = g_subprocess_wait_finish (G_SUBPROCESS (source), res, NULL);
    wait->end_mono = g_get_monotonic_time ();
    wait->done = TRUE;
}

gboolean
vmr_bench_wait_exit (GSubprocess *proc, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;
    g_autoptr (GCancellable) cancellable = g_cancellable_new ();
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();
    ExitWait wait = { FALSE, FALSE };

    g_subprocess_wait_async (proc, cancellable, exited_cb, &wait);
    while (!wait.done && g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
    /* the callback points into this frame: it must run before we return */
    g_cancellable_cancel (cancellable);
    while (!wait.done)
        g_main_context_iteration (NULL, TRUE);
    return wait.exited;
}

gboolean
vmr_bench_wait_process (GSubprocess *proc, guint timeout_s, const gboolean *interrupted,
                        const gchar *what, gint64 *end_mono, GError **error)
{
    gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;
    g_autoptr (GCancellable) cancellable = g_cancellable_new ();
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();
    ExitWait wait = { FALSE, FALSE, 0 };

    /* the callback wakes the loop at once: the tick only bounds the checks below */
    g_subprocess_wait_async (proc, cancellable, exited_cb, &wait);
    while (!wait.done && !*interrupted && g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
    if (!wait.done) {
        g_cancellable_cancel (cancellable);
        while (!wait.done)
            g_main_context_iteration (NULL, TRUE);
        g_subprocess_force_exit (proc);
        vmr_bench_wait_exit (proc, 30);
        g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "%s %s", what,
                     *interrupted ? "interrupted" : "did not end in time");
        return FALSE;
    }
    if (end_mono != NULL)
        *end_mono = wait.end_mono;
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s failed", what);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_wait_stamp (const gint64 *stamp, GSubprocess *qemu, const gboolean *interrupted,
                      guint timeout_s, const gchar *what, GError **error)
{
    gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;
    /* a blocking loop that still wakes up now and then for the checks below */
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (*stamp == 0) {
        if (*interrupted) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "interrupted waiting for %s", what);
            return FALSE;
        }
        if (qemu != NULL && !vmr_bench_is_running (qemu)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "QEMU exited waiting for %s", what);
            return FALSE;
        }
        if (g_get_monotonic_time () > deadline) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "no %s within %u s", what, timeout_s);
            return FALSE;
        }
        g_main_context_iteration (NULL, TRUE);
    }
    return TRUE;
}

gchar *
vmr_bench_log_tail (const gchar *path, guint lines)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) all = NULL;
    guint n, first;

    if (!g_file_get_contents (path, &text, NULL, NULL))
        return g_strdup ("(no log)");
    g_strchomp (text);
    all = g_strsplit (text, "\n", -1);
    n = g_strv_length (all);
    first = n > lines ? n - lines : 0;
    return g_strjoinv ("\n", all + first);
}

void
vmr_bench_append_output (GError **error, const gchar *output)
{
    gchar *message;

    if (error == NULL || *error == NULL)
        return;
    message = g_strdup_printf ("%s; it printed:\n%s", (*error)->message, output);
    g_free ((*error)->message);
    (*error)->message = message;
}

gdouble
vmr_bench_cpu_ms (GSubprocess *proc)
{
    const gchar *pid = g_subprocess_get_identifier (proc);
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_auto (GStrv) fields = NULL;
    const gchar *end;
    clockid_t clock;
    struct timespec ts;

    if (pid == NULL)
        return -1;
    if (clock_getcpuclockid ((pid_t) atoi (pid), &clock) == 0 && clock_gettime (clock, &ts) == 0)
        return (gdouble) ts.tv_sec * 1000.0 + (gdouble) ts.tv_nsec / 1e6;
    path = g_strdup_printf ("/proc/%s/stat", pid);
    if (!g_file_get_contents (path, &text, NULL, NULL) || (end = strrchr (text, ')')) == NULL
        || end[1] == '\0')
        return -1;
    /* after "(comm)": state is field 3, utime 14 and stime 15 (proc(5)) */
    fields = g_strsplit (end + 2, " ", 0);
    if (g_strv_length (fields) < 13)
        return -1;
    return (gdouble) (g_ascii_strtoull (fields[11], NULL, 10)
                      + g_ascii_strtoull (fields[12], NULL, 10))
           * 1000.0 / (gdouble) sysconf (_SC_CLK_TCK);
}

gdouble
vmr_bench_rss_mib (GSubprocess *proc)
{
    const gchar *pid = g_subprocess_get_identifier (proc);
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    const gchar *line;

    if (pid == NULL)
        return 0;
    path = g_strdup_printf ("/proc/%s/status", pid);
    if (!g_file_get_contents (path, &text, NULL, NULL)
        || (line = strstr (text, "\nVmRSS:")) == NULL)
        return 0;
    return g_ascii_strtod (line + strlen ("\nVmRSS:"), NULL) / 1024.0;
}

void
vmr_bench_kill (GSubprocess **proc)
{
    if (*proc == NULL)
        return;
    if (vmr_bench_is_running (*proc)) {
        /* g_subprocess_force_exit() is kill (pid, SIGKILL) */
        g_subprocess_force_exit (*proc);
        if (!vmr_bench_wait_exit (*proc, 30))
            g_warning ("process %s survived SIGKILL", g_subprocess_get_identifier (*proc));
    }
    g_clear_object (proc);
}

VmrQmpClient *
vmr_bench_connect (GSubprocess *proc, const gchar *path, const gchar *what, guint timeout_s,
                   GError **error)
{
    gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (GError) local_error = NULL;
        VmrQmpClient *client = NULL;

        if (!vmr_bench_is_running (proc)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s exited at start", what);
            return NULL;
        }
        if (g_file_test (path, G_FILE_TEST_EXISTS))
            client = vmr_qmp_client_connect_sync (path, timeout_s * 1000, &local_error);
        if (client != NULL)
            return client;
        if (g_get_monotonic_time () > deadline) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "%s did not listen on %s: %s", what,
                         path, local_error != NULL ? local_error->message : "no socket");
            return NULL;
        }
        g_usleep (10 * 1000);
    }
}

gchar *
vmr_bench_qemu_version (VmrQmpClient *client)
{
    JsonObject *greeting = vmr_qmp_client_get_greeting (client);
    JsonObject *qemu = vmr_json_get_object (vmr_json_get_object (greeting, "version"), "qemu");

    if (qemu == NULL)
        return NULL;
    return g_strdup_printf ("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT,
                            vmr_json_int_or (qemu, "major", 0), vmr_json_int_or (qemu, "minor", 0),
                            vmr_json_int_or (qemu, "micro", 0));
}

void
vmr_bench_close (VmrQmpClient **client, gpointer handler_data)
{
    if (*client == NULL)
        return;
    g_signal_handlers_disconnect_by_data (*client, handler_data);
    vmr_qmp_client_close (*client);
    g_clear_object (client);
}

void
vmr_bench_remove_tree (const gchar *path)
{
    GStatBuf st;

    if (path == NULL || g_lstat (path, &st) != 0)
        return;
    if (S_ISDIR (st.st_mode)) {
        g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
        const gchar *name;

        while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
            g_autofree gchar *child = g_build_filename (path, name, NULL);

            vmr_bench_remove_tree (child);
        }
        if (g_rmdir (path) != 0)
            g_warning ("cannot remove %s: %s", path, g_strerror (errno));
    } else if (g_unlink (path) != 0) {
        g_warning ("cannot remove %s: %s", path, g_strerror (errno));
    }
}

gchar *
vmr_bench_load_average (void)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) fields = NULL;

    if (!g_file_get_contents ("/proc/loadavg", &text, NULL, NULL))
        return g_strdup ("?");
    fields = g_strsplit (text, " ", 2);
    return g_strdup (fields[0] != NULL ? fields[0] : "?");
}

gchar *
vmr_bench_pick_program (const gchar *option, const gchar *env_name, const gchar *fallback)
{
    const gchar *env = env_name != NULL ? g_getenv (env_name) : NULL;
    const gchar *name = fallback;

    if (option != NULL)
        name = option;
    else if (env != NULL && *env != '\0')
        name = env;
    if (strchr (name, '/') == NULL)
        return g_strdup (name);
    return g_canonicalize_filename (name, NULL);
}

static gboolean
interrupt_cb (gpointer flag)
{
    gboolean *interrupted = flag;

    *interrupted = TRUE;
    return G_SOURCE_CONTINUE;
}

void
vmr_bench_catch_signals (gboolean *interrupted)
{
    g_unix_signal_add (SIGINT, interrupt_cb, interrupted);
    g_unix_signal_add (SIGTERM, interrupt_cb, interrupted);
    g_unix_signal_add (SIGHUP, interrupt_cb, interrupted);
}

gboolean
vmr_bench_parse_options (const gchar *name, const gchar *params, const gchar *summary,
                         const GOptionEntry *entries, const VmrBenchCommonOptions *common,
                         gint *argc, gchar ***argv)
{
    const GOptionEntry shared[] = {
        { "dir", 'd', 0, G_OPTION_ARG_FILENAME, common->dir,
          "Put the images in a new directory under DIR (default: the temporary directory)", "DIR" },
        { "daemon", 0, 0, G_OPTION_ARG_FILENAME, common->daemon,
          "virt-mirrord to run (env VMR_DAEMON, default: the one built with the bench)", "PATH" },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, common->qemu,
          "QEMU binary (env VMR_QEMU, default qemu-system-x86_64)", "PATH" },
        { "daemon-log", 0, 0, G_OPTION_ARG_FILENAME, common->daemon_log,
          "Run the daemon with --verbose and keep its log in FILE", "FILE" },
    };
    /* zero-terminated: the last entry is the table's NULL one */
    g_autoptr (GArray) all = g_array_new (TRUE, TRUE, sizeof (GOptionEntry));
    g_autoptr (GOptionContext) context = g_option_context_new (params);
    g_autoptr (GError) error = NULL;

    for (gsize i = 0; entries[i].long_name != NULL; i++)
        g_array_append_val (all, entries[i]);
    for (gsize i = 0; i < G_N_ELEMENTS (shared); i++) {
        if (shared[i].arg_data != NULL)
            g_array_append_val (all, shared[i]);
    }
    if (summary != NULL)
        g_option_context_set_summary (context, summary);
    g_option_context_add_main_entries (context, (const GOptionEntry *) all->data, NULL);
    if (!g_option_context_parse (context, argc, argv, &error)) {
        g_printerr ("%s: %s\n", name, error->message);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_make_dirs (const gchar *image_parent, gchar **out_run_dir, gchar **out_image_dir,
                     GError **error)
{
    g_autofree gchar *parent = NULL;
    g_autofree gchar *template = NULL;

    /* sockets stay in a short path: UNIX socket names are limited to 107 bytes */
    *out_run_dir = g_dir_make_tmp ("vmr-bench-XXXXXX", error);
    if (*out_run_dir == NULL)
        return FALSE;
    /* never the same directory: the daemon refuses destinations in its socket's directory */
    if (image_parent == NULL) {
        *out_image_dir = g_dir_make_tmp ("vmr-bench-images-XXXXXX", error);
        return *out_image_dir != NULL;
    }
    /* QEMU and the daemon are handed absolute paths */
    parent = g_canonicalize_filename (image_parent, NULL);
    template = g_build_filename (parent, "vmr-bench-XXXXXX", NULL);
    if (g_mkdtemp (template) == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot make a directory in %s: %s",
                     parent, g_strerror (errno));
        return FALSE;
    }
    *out_image_dir = g_steal_pointer (&template);
    return TRUE;
}

void
vmr_bench_remove_dirs (const gchar *run_dir, const gchar *image_dir, gboolean keep)
{
    gboolean apart = image_dir != NULL && g_strcmp0 (image_dir, run_dir) != 0;

    if (keep) {
        if (run_dir != NULL)
            g_printerr ("kept %s%s%s\n", run_dir, apart ? " and " : "", apart ? image_dir : "");
        return;
    }
    if (apart)
        vmr_bench_remove_tree (image_dir);
    vmr_bench_remove_tree (run_dir);
}

GSubprocess *
vmr_bench_start_daemon (const VmrBenchDaemonSpec *spec, const gchar *policy_path, guint run_number,
                        VmrQmpClient **out_control, gchar **out_version, GError **error)
{
    g_autofree gchar *suffix = run_number > 0 ? g_strdup_printf ("-%u", run_number) : g_strdup ("");
    g_autofree gchar *state_dir = g_strdup_printf ("%s/state%s", spec->run_dir, suffix);
    g_autofree gchar *log_path
        = spec->log_path != NULL ? g_strdup (spec->log_path)
                                 : g_strdup_printf ("%s/virt-mirrord%s.log", spec->run_dir, suffix);
    const gchar *const fixed_args[]
        = { spec->daemon_path,    "--foreground", "--no-libvirt", "--socket",
            spec->control_socket, "--state-dir",  state_dir };
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autoptr (GSubprocess) daemon = NULL;
    g_autoptr (VmrQmpClient) control = NULL;
    g_autoptr (JsonNode) version = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS (fixed_args); i++)
        g_ptr_array_add (argv, (gpointer) fixed_args[i]);
    if (policy_path != NULL) {
        g_ptr_array_add (argv, "--policy");
        g_ptr_array_add (argv, (gpointer) policy_path);
    }
    if (spec->verbose)
        g_ptr_array_add (argv, "--verbose");
    g_ptr_array_add (argv, NULL);
    daemon = vmr_bench_spawn ((const gchar *const *) argv->pdata, spec->run_dir, log_path, error);
    if (daemon == NULL) {
        g_prefix_error (error, "cannot start %s: ", spec->daemon_path);
        return NULL;
    }
    /* an answer to query-version is the readiness check */
    control
        = vmr_bench_connect (daemon, spec->control_socket, "virt-mirrord", spec->timeout_s, error);
    if (control != NULL)
        version = vmr_qmp_client_execute_sync (control, "query-version", NULL, 0, error);
    if (version != NULL && !JSON_NODE_HOLDS_OBJECT (version)) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                             "query-version did not return an object");
        g_clear_pointer (&version, json_node_unref);
    }
    if (version == NULL) {
        g_prefix_error (error, "see %s: ", log_path);
        if (control != NULL)
            vmr_qmp_client_close (control);
        vmr_bench_kill (&daemon);
        return NULL;
    }
    if (out_version != NULL)
        *out_version = g_strdup (vmr_json_get_string (json_node_get_object (version), "version"));
    if (out_control != NULL)
        *out_control = g_steal_pointer (&control);
    else
        vmr_qmp_client_close (control);
    return g_steal_pointer (&daemon);
}

void
vmr_bench_stop_daemon (GSubprocess **daemon, guint timeout_s)
{
    if (*daemon == NULL)
        return;
    if (vmr_bench_is_running (*daemon)) {
        /* SIGTERM first, so that it removes its socket */
        g_subprocess_send_signal (*daemon, SIGTERM);
        if (!vmr_bench_wait_exit (*daemon, timeout_s))
            vmr_bench_kill (daemon);
    }
    g_clear_object (daemon);
}

GSubprocess *
vmr_bench_start_copy_daemon (const gchar *daemon_path, const gchar *run_dir,
                             const gchar *control_socket, const gchar *log_path, guint timeout_s,
                             VmrBenchJobEnd *job_end, VmrQmpClient **out_control,
                             gchar **out_version, GError **error)
{
    const VmrBenchDaemonSpec spec = {
        .daemon_path = daemon_path,
        .run_dir = run_dir,
        .control_socket = control_socket,
        .log_path = log_path,
        .verbose = log_path != NULL,
        .timeout_s = timeout_s,
    };
    GSubprocess *daemon = vmr_bench_start_daemon (&spec, NULL, 0, out_control, out_version, error);

    if (daemon != NULL)
        vmr_bench_job_end_watch (job_end, *out_control);
    return daemon;
}

JsonObject *
vmr_bench_control_call (VmrQmpClient *control, const gchar *command, JsonObject *args,
                        GError **error)
{
    g_autoptr (JsonNode) reply = vmr_qmp_client_execute_sync (control, command, args, 0, error);
    JsonObject *obj;

    if (reply == NULL) {
        g_prefix_error (error, "%s: ", command);
        return NULL;
    }
    obj = vmr_json_node_object (reply);
    if (obj == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "%s: reply is not an object", command);
        return NULL;
    }
    return json_object_ref (obj);
}

static void
job_end_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                  gpointer user_data)
{
    VmrBenchJobEnd *self = user_data;
    const gchar *state = vmr_json_get_string (data, "state");

    if (g_strcmp0 (name, "JOB_STATE_CHANGED") != 0 || self->domain == NULL
        || g_strcmp0 (vmr_json_get_string (data, "domain"), self->domain) != 0
        || self->final_mono != 0)
        return;
    if (g_strcmp0 (state, "completed") != 0 && g_strcmp0 (state, "failed") != 0
        && g_strcmp0 (state, "cancelled") != 0)
        return;
    self->final_mono = g_get_monotonic_time ();
    if (g_strcmp0 (state, "completed") != 0)
        self->error = g_strdup_printf ("the daemon reports %s: %s", state,
                                       vmr_json_get_string (data, "reason"));
}

void
vmr_bench_job_end_watch (VmrBenchJobEnd *self, VmrQmpClient *control)
{
    g_signal_connect (control, "event", G_CALLBACK (job_end_event_cb), self);
}

void
vmr_bench_job_end_follow (VmrBenchJobEnd *self, const gchar *domain)
{
    g_free (self->domain);
    self->domain = g_strdup (domain);
    g_clear_pointer (&self->error, g_free);
    self->final_mono = 0;
}

gboolean
vmr_bench_job_end_wait (VmrBenchJobEnd *self, GSubprocess *qemu, const gboolean *interrupted,
                        guint timeout_s, GError **error)
{
    if (!vmr_bench_wait_stamp (&self->final_mono, qemu, interrupted, timeout_s,
                               "end of the migration", error))
        return FALSE;
    if (self->error != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s", self->error);
        return FALSE;
    }
    return TRUE;
}

GSubprocess *
vmr_bench_start_paused_qemu (const gchar *qemu_path, const gchar *run_dir, const gchar *log_path,
                             const gchar *image, const gchar *const *monitors, GError **error)
{
    g_autofree gchar *file_arg = g_strdup_printf ("driver=file,filename=%s,node-name=f0", image);
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    const gchar *fixed[] = { "-machine",  "pc",
                             "-accel",    "tcg",
                             "-S",        "-nodefaults",
                             "-display",  "none",
                             "-blockdev", file_arg,
                             "-blockdev", "driver=raw,file=f0,node-name=d0",
                             "-device",   "virtio-blk-pci,drive=d0,id=disk0",
                             NULL };
    GSubprocess *qemu;

    g_ptr_array_add (argv, g_strdup (qemu_path));
    for (guint i = 0; fixed[i] != NULL; i++)
        g_ptr_array_add (argv, g_strdup (fixed[i]));
    for (guint i = 0; monitors[i] != NULL; i++) {
        g_ptr_array_add (argv, g_strdup ("-qmp"));
        g_ptr_array_add (argv, g_strdup_printf ("unix:%s,server=on,wait=off", monitors[i]));
    }
    g_ptr_array_add (argv, NULL);
    qemu = vmr_bench_spawn ((const gchar *const *) argv->pdata, run_dir, log_path, error);
    if (qemu == NULL)
        g_prefix_error (error, "cannot start %s: ", qemu_path);
    return qemu;
}

gboolean
vmr_bench_quit_qemu (GSubprocess **qemu, VmrQmpClient **watch, gpointer handler_data,
                     guint timeout_s, GError **error)
{
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) quit_error = NULL;
    gboolean clean;

    /* QEMU may close the monitor before its reply arrives */
    reply = vmr_qmp_client_execute_sync (*watch, "quit", NULL, 0, &quit_error);
    vmr_bench_close (watch, handler_data);
    if (!vmr_bench_wait_exit (*qemu, timeout_s)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "QEMU did not quit within %u s",
                     timeout_s);
        vmr_bench_kill (qemu);
        return FALSE;
    }
    clean = g_subprocess_get_if_exited (*qemu) && g_subprocess_get_exit_status (*qemu) == 0;
    g_clear_object (qemu);
    if (!clean)
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "QEMU did not exit cleanly on quit");
    return clean;
}
