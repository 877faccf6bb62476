#define G_LOG_DOMAIN "vmr-test"

/*
 * The fixture: the test's directory, the daemon, prerequisites, and the
 * cleanup that kills every child even when an assertion aborts the test.
 */

#ifndef _GNU_SOURCE
/* sigaction, lstat, S_ISSOCK, prctl under -std=c17 */
#define _GNU_SOURCE
#endif

#include "harness-private.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gio/gunixsocketaddress.h>

void
vmr_fail_at (const char *file, int line, const char *func, const char *format, ...)
{
    g_autofree gchar *message = NULL;
    va_list ap;

    va_start (ap, format);
    message = g_strdup_vprintf (format, ap);
    va_end (ap);
    g_assertion_message (G_LOG_DOMAIN, file, line, func, message);
    g_abort ();
}

/* @text on one line, for test messages (TAP comments are single lines) */
gchar *
vmr_harness_one_line (const gchar *text)
{
    return g_strescape (text != NULL ? text : "", NULL);
}

/*
 * An assertion aborts the test program, and then no teardown runs. So that
 * no QEMU or daemon outlives a failed test, their pids are also kept here
 * for a signal handler that kills them (kill(), fork() and exec are
 * async-signal-safe) and removes the test's directory. The children also
 * get PR_SET_PDEATHSIG, for a test program that is killed outright.
 */
#define MAX_TRACKED 8
static volatile sig_atomic_t tracked_pids[MAX_TRACKED];
static char crash_cleanup_cmd[3 * PATH_MAX];

static void
crash_handler (int signum)
{
    for (guint i = 0; i < MAX_TRACKED; i++) {
        if (tracked_pids[i] > 0)
            kill ((pid_t) tracked_pids[i], SIGKILL);
    }
    if (crash_cleanup_cmd[0] != '\0') {
        pid_t pid = fork ();

        if (pid == 0) {
            execl ("/bin/sh", "sh", "-c", crash_cleanup_cmd, (char *) NULL);
            _exit (127);
        }
        if (pid > 0)
            waitpid (pid, NULL, 0);
    }
    /* SA_RESETHAND restored the default action */
    raise (signum);
}

static void
install_crash_handler (void)
{
    struct sigaction action = { 0 };
    /* g_error() raises SIGTRAP; meson's timeout sends SIGTERM */
    const int signals[] = { SIGABRT, SIGTRAP, SIGSEGV, SIGBUS, SIGTERM };

    action.sa_handler = crash_handler;
    action.sa_flags = SA_RESETHAND;
    sigemptyset (&action.sa_mask);
    for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
        sigaction (signals[i], &action, NULL);
}

static void
update_crash_cleanup (VmrHarness *h)
{
    g_autofree gchar *dir_quoted = NULL;
    g_autofree gchar *cmd = NULL;

    crash_cleanup_cmd[0] = '\0';
    if (h->dir == NULL || g_getenv ("VMR_TEST_KEEP_DIR") != NULL)
        return;
    dir_quoted = g_shell_quote (h->dir);
    if (h->immutable_dir != NULL) {
        g_autofree gchar *imm_quoted = g_shell_quote (h->immutable_dir);

        cmd = g_strdup_printf ("chattr -i %s 2>/dev/null; rm -rf %s", imm_quoted, dir_quoted);
    } else {
        cmd = g_strdup_printf ("rm -rf %s", dir_quoted);
    }
    if (h->tmpfs_dir != NULL) {
        g_autofree gchar *tmpfs_quoted = g_shell_quote (h->tmpfs_dir);
        g_autofree gchar *rest = g_steal_pointer (&cmd);

        /* lazily: QEMU may still hold files there for a moment */
        cmd = g_strdup_printf ("umount -l %s 2>/dev/null; %s", tmpfs_quoted, rest);
    }
    if (strlen (cmd) < sizeof (crash_cleanup_cmd))
        memcpy (crash_cleanup_cmd, cmd, strlen (cmd) + 1);
}

static void
track_pid (GSubprocess *proc)
{
    const gchar *id = g_subprocess_get_identifier (proc);
    pid_t pid = id != NULL ? (pid_t) atoi (id) : 0;

    for (guint i = 0; i < MAX_TRACKED && pid > 0; i++) {
        if (tracked_pids[i] == 0) {
            tracked_pids[i] = pid;
            return;
        }
    }
}

void
vmr_harness_untrack_pid (pid_t pid)
{
    for (guint i = 0; i < MAX_TRACKED; i++) {
        if (tracked_pids[i] == pid)
            tracked_pids[i] = 0;
    }
}

static pid_t
pid_of (GSubprocess *proc)
{
    const gchar *id = proc != NULL ? g_subprocess_get_identifier (proc) : NULL;

    return id != NULL ? (pid_t) atoi (id) : 0;
}

static void
child_setup_cb (gpointer user_data)
{
    /* the child dies with the test program, even when that is SIGKILLed */
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* spawns @argv in the test's directory; stdout goes to our stderr unless piped */
GSubprocess *
vmr_harness_spawn (VmrHarness *h, const gchar *const *argv, GSubprocessFlags flags, pid_t *out_pid)
{
    return vmr_harness_spawn_logged (h, argv, flags, NULL, out_pid);
}

GSubprocess *
vmr_harness_spawn_logged (VmrHarness *h, const gchar *const *argv, GSubprocessFlags flags,
                          const gchar *log_path, pid_t *out_pid)
{
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (flags);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *cmdline = g_strjoinv (" ", (gchar **) argv);

    g_subprocess_launcher_set_cwd (launcher, h->dir);
    g_subprocess_launcher_set_child_setup (launcher, child_setup_cb, NULL, NULL);
    if (log_path != NULL) {
        int fd = open (log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

        g_assert_cmpint (fd, >=, 0);
        g_subprocess_launcher_take_stdout_fd (launcher, dup (fd));
        g_subprocess_launcher_take_stderr_fd (launcher, fd);
    }
    /* stdout of a test program is TAP: children must not write to it */
    else if ((flags & G_SUBPROCESS_FLAGS_STDOUT_PIPE) == 0)
        g_subprocess_launcher_take_stdout_fd (launcher, dup (STDERR_FILENO));
    g_test_message ("running: %s", cmdline);
    proc = g_subprocess_launcher_spawnv (launcher, argv, &error);
    g_assert_no_error (error);
    track_pid (proc);
    *out_pid = pid_of (proc);
    return g_steal_pointer (&proc);
}

/*
 * Waits until @proc exited (GLib reaps it in its worker thread), at most
 * @timeout_ms. Returns FALSE on timeout.
 */
gboolean
vmr_harness_wait_exit (GSubprocess *proc, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;

    while (TRUE) {
        g_autofree gchar *id = g_strdup (g_subprocess_get_identifier (proc));

        if (id == NULL)
            break;
        if (g_get_monotonic_time () > deadline)
            return FALSE;
        g_usleep (10 * 1000);
    }
    g_subprocess_wait (proc, NULL, NULL);
    return TRUE;
}

gchar *
vmr_harness_describe_exit (GSubprocess *proc)
{
    if (g_subprocess_get_if_exited (proc))
        return g_strdup_printf ("exit status %d", g_subprocess_get_exit_status (proc));
    if (g_subprocess_get_if_signaled (proc))
        return g_strdup_printf ("killed by signal %d", g_subprocess_get_term_sig (proc));
    return g_strdup ("unknown exit");
}

/* kills @proc (SIGKILL, by its pid) and reaps it */
void
vmr_harness_kill_process (GSubprocess **proc, pid_t pid)
{
    if (*proc == NULL)
        return;
    g_subprocess_send_signal (*proc, SIGKILL);
    if (!vmr_harness_wait_exit (*proc, VMR_HARNESS_STOP_TIMEOUT_MS))
        g_test_message ("process %d did not die on SIGKILL", (int) pid);
    vmr_harness_untrack_pid (pid);
    g_clear_object (proc);
}

guint64
vmr_harness_peak_kib (GPid pid)
{
    g_autofree gchar *path = g_strdup_printf ("/proc/%d/status", (int) pid);
    g_autofree gchar *status = NULL;
    const gchar *line;

    g_assert_true (g_file_get_contents (path, &status, NULL, NULL));
    line = strstr (status, "\nVmHWM:");
    g_assert_nonnull (line);
    return g_ascii_strtoull (line + strlen ("\nVmHWM:"), NULL, 10);
}

/* ---- prerequisites ---- */

static gboolean
integration_required (void)
{
    return g_strcmp0 (g_getenv ("REQUIRE_INTEGRATION"), "1") == 0;
}

void
vmr_harness_skip (VmrHarness *h, const gchar *reason)
{
    h->skipped = TRUE;
    if (h->skip_reason == NULL)
        h->skip_reason = g_strdup (reason);
    if (integration_required ())
        g_test_fail_printf ("%s (REQUIRE_INTEGRATION=1 makes this a failure)", reason);
    else
        g_test_skip (reason);
}

gboolean
vmr_harness_skipped (VmrHarness *h)
{
    return h->skipped;
}

/* the program was asked to list its cases (-l), not to run them */
static gboolean listing;

gint
vmr_harness_run_shared (VmrHarness *h)
{
    /* the cases are only listed: none runs, so none needs the setup */
    if (h->skipped && integration_required () && !listing) {
        g_autofree gchar *program = g_path_get_basename (g_get_prgname ());

        g_printerr ("%s: %s (REQUIRE_INTEGRATION=1 makes this a failure)\n", program,
                    h->skip_reason);
        return 1;
    }
    return g_test_run ();
}

gboolean
vmr_harness_require (VmrHarness *h, const gchar *first_program, ...)
{
    va_list ap;
    gboolean found_all = TRUE;

    va_start (ap, first_program);
    for (const gchar *name = first_program; name != NULL; name = va_arg (ap, const gchar *)) {
        g_autofree gchar *path = g_find_program_in_path (name);

        if (path == NULL) {
            g_autofree gchar *reason = g_strdup_printf ("%s not found", name);

            vmr_harness_skip (h, reason);
            found_all = FALSE;
            break;
        }
    }
    va_end (ap);
    return found_all;
}

/* the program named by the environment variable @var, which meson sets */
static gboolean
require_env_program (VmrHarness *h, const gchar *var)
{
    const gchar *path = g_getenv (var);
    g_autofree gchar *reason = NULL;

    if (path == NULL || *path == '\0')
        reason = g_strdup_printf ("%s not set: run through meson test", var);
    else if (!g_file_test (path, G_FILE_TEST_IS_EXECUTABLE))
        reason = g_strdup_printf ("%s=%s is not an executable", var, path);
    if (reason == NULL)
        return TRUE;
    vmr_harness_skip (h, reason);
    return FALSE;
}

/* ---- fixture ---- */

GPtrArray *
vmr_harness_daemon_argv (VmrHarness *h, const gchar *libvirt_uri, gboolean verbose,
                         const gchar *const *extra)
{
    GPtrArray *argv = g_ptr_array_new ();

    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_DAEMON"));
    g_ptr_array_add (argv, "--foreground");
    g_ptr_array_add (argv, "--socket");
    g_ptr_array_add (argv, h->socket);
    g_ptr_array_add (argv, "--state-dir");
    g_ptr_array_add (argv, h->state_dir);
    if (libvirt_uri != NULL) {
        g_ptr_array_add (argv, "--libvirt-uri");
        g_ptr_array_add (argv, (gpointer) libvirt_uri);
    } else {
        g_ptr_array_add (argv, "--no-libvirt");
    }
    if (verbose || g_getenv ("VMR_TEST_VERBOSE") != NULL)
        g_ptr_array_add (argv, "--verbose");
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) extra[i]);
    g_ptr_array_add (argv, NULL);
    return argv;
}

static void
start_daemon (VmrHarness *h, const gchar *const *extra)
{
    g_autoptr (GPtrArray) argv = vmr_harness_daemon_argv (h, NULL, FALSE, extra);
    gint64 deadline
        = g_get_monotonic_time () + VMR_HARNESS_START_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;

    g_assert_null (h->daemon);
    if (!g_file_test (h->state_dir, G_FILE_TEST_IS_DIR))
        g_assert_cmpint (g_mkdir (h->state_dir, 0700), ==, 0);
    h->daemon = vmr_harness_spawn_logged (h, (const gchar *const *) argv->pdata,
                                          G_SUBPROCESS_FLAGS_NONE, h->daemon_log, &h->daemon_pid);

    /* ready once it greets on its socket; that connection is kept for polling */
    while (h->control == NULL) {
        g_autoptr (GError) error = NULL;
        g_autofree gchar *id = g_strdup (g_subprocess_get_identifier (h->daemon));

        if (id == NULL) {
            g_autofree gchar *how = NULL;

            g_subprocess_wait (h->daemon, NULL, NULL);
            how = vmr_harness_describe_exit (h->daemon);
            vmr_harness_untrack_pid (h->daemon_pid);
            g_clear_object (&h->daemon);
            vmr_fail ("virt-mirrord exited at start: %s", how);
        }
        if (g_file_test (h->socket, G_FILE_TEST_EXISTS))
            h->control = vmr_qmp_client_connect_sync (h->socket, 5000, &error);
        if (h->control == NULL) {
            g_assert_cmpint (g_get_monotonic_time (), <, deadline);
            g_usleep (50 * 1000);
        }
    }
}

/* SIGTERM, then the daemon must exit 0 and remove its socket */
static void
stop_daemon (VmrHarness *h, gchar **out_problem)
{
    pid_t pid = h->daemon_pid;

    if (h->control != NULL) {
        vmr_qmp_client_close (h->control);
        g_clear_object (&h->control);
    }
    g_subprocess_send_signal (h->daemon, SIGTERM);
    if (!vmr_harness_wait_exit (h->daemon, VMR_HARNESS_STOP_TIMEOUT_MS)) {
        *out_problem = g_strdup ("virt-mirrord did not exit within 20 s of SIGTERM");
        vmr_harness_kill_process (&h->daemon, pid);
        return;
    }
    vmr_harness_untrack_pid (pid);
    if (!g_subprocess_get_if_exited (h->daemon) || g_subprocess_get_exit_status (h->daemon) != 0) {
        g_autofree gchar *how = vmr_harness_describe_exit (h->daemon);

        *out_problem = g_strdup_printf ("virt-mirrord on SIGTERM: %s, expected exit status 0", how);
    } else if (g_file_test (h->socket, G_FILE_TEST_EXISTS)) {
        *out_problem = g_strdup_printf ("virt-mirrord left its socket %s behind", h->socket);
    }
    g_clear_object (&h->daemon);
}

/* removes @path and everything below it; FALSE when something stayed */
static gboolean
remove_tree (const gchar *path)
{
    gboolean removed_all = TRUE;
    GStatBuf st;

    if (g_lstat (path, &st) != 0)
        return TRUE;
    if (S_ISDIR (st.st_mode)) {
        g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
        const gchar *name;

        while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
            g_autofree gchar *child = g_build_filename (path, name, NULL);

            removed_all &= remove_tree (child);
        }
        if (g_rmdir (path) != 0) {
            g_test_message ("cannot remove %s: %s", path, g_strerror (errno));
            removed_all = FALSE;
        }
    } else if (g_unlink (path) != 0) {
        g_test_message ("cannot remove %s: %s", path, g_strerror (errno));
        removed_all = FALSE;
    }
    return removed_all;
}

static GLogFunc test_log_handler;

static void
quiet_log_handler (const gchar *domain, GLogLevelFlags level, const gchar *message,
                   gpointer user_data)
{
    if ((level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO)) != 0)
        return;
    test_log_handler (domain, level, message, user_data);
}

void
vmr_harness_stop_daemon (VmrHarness *h)
{
    g_autofree gchar *problem = NULL;

    g_assert_nonnull (h->daemon);
    stop_daemon (h, &problem);
    if (problem != NULL)
        vmr_fail ("%s", problem);
}

void
vmr_harness_kill_daemon (VmrHarness *h)
{
    pid_t pid = h->daemon_pid;

    g_assert_nonnull (h->daemon);
    g_subprocess_send_signal (h->daemon, SIGKILL);
    if (!vmr_harness_wait_exit (h->daemon, VMR_HARNESS_STOP_TIMEOUT_MS))
        vmr_fail ("virt-mirrord (pid %d) did not die on SIGKILL", (int) pid);
    vmr_harness_untrack_pid (pid);
    /* after the kill, so that the daemon sees no disconnect first */
    if (h->control != NULL) {
        vmr_qmp_client_close (h->control);
        g_clear_object (&h->control);
    }
    if (!g_subprocess_get_if_signaled (h->daemon)
        || g_subprocess_get_term_sig (h->daemon) != SIGKILL) {
        g_autofree gchar *how = vmr_harness_describe_exit (h->daemon);

        g_clear_object (&h->daemon);
        vmr_fail ("virt-mirrord ended with %s before its SIGKILL", how);
    }
    g_clear_object (&h->daemon);
}

void
vmr_harness_restart_daemon (VmrHarness *h, const gchar *const *extra)
{
    g_assert_null (h->daemon);
    g_assert_null (h->control);
    start_daemon (h, extra);
}

void
vmr_harness_init (int *argc, char ***argv)
{
    for (gint i = 1; i < *argc; i++)
        if (g_str_equal ((*argv)[i], "-l"))
            listing = TRUE;
    g_test_init (argc, argv, NULL);
    /* every QMP line at debug level drowns the log; ask for it when needed */
    if (g_getenv ("VMR_TEST_VERBOSE") == NULL)
        test_log_handler = g_log_set_default_handler (quiet_log_handler, NULL);
    install_crash_handler ();
}

typedef enum {
    SETUP_QEMU_ONLY,      /* QEMU and qemu-img only */
    SETUP_DAEMON_LATER,   /* and the daemon and CLI, which the test starts */
    SETUP_DAEMON_STARTED, /* and the daemon, started */
} SetupKind;

static void
setup (VmrHarness *h, SetupKind kind)
{
    g_autoptr (GError) error = NULL;

    h->dir = g_dir_make_tmp ("vmr-test-XXXXXX", &error);
    g_assert_no_error (error);
    update_crash_cleanup (h);
    /* a directory of its own: the daemon refuses destinations in its socket's */
    h->socket = g_build_filename (h->dir, "run", "virt-mirrord.sock", NULL);
    h->state_dir = g_build_filename (h->dir, "state", NULL);
    h->qemu_monitor = g_build_filename (h->dir, "qmp.sock", NULL);
    h->test_monitor = g_build_filename (h->dir, "test.sock", NULL);

    if (!vmr_harness_require (h, vmr_harness_qemu_program (), "qemu-img", NULL))
        return;
    vmr_harness_report_qemu ();
    if (kind == SETUP_QEMU_ONLY)
        return;
    if (!require_env_program (h, "VMR_DAEMON") || !require_env_program (h, "VMR_CLI"))
        return;
    if (kind == SETUP_DAEMON_STARTED)
        start_daemon (h, NULL);
}

/* a case of vmr_harness_add(): its body and the data it was given */
typedef struct {
    VmrHarnessFunc func;
    gconstpointer user_data;
} HarnessCase;

static void
run_case (VmrHarness *h, gconstpointer data)
{
    const HarnessCase *c = data;

    if (!vmr_harness_skipped (h))
        c->func (h, c->user_data);
}

void
vmr_harness_add (const gchar *path, gconstpointer user_data, VmrHarnessFunc set_up,
                 VmrHarnessFunc func)
{
    /* kept as long as GLib keeps the case: for the whole run */
    HarnessCase *c = g_new0 (HarnessCase, 1);

    c->func = func;
    c->user_data = user_data;
    g_test_add (path, VmrHarness, c, set_up, run_case, vmr_harness_teardown);
}

void
vmr_harness_setup (VmrHarness *h, gconstpointer user_data)
{
    setup (h, SETUP_DAEMON_STARTED);
}

void
vmr_harness_setup_qemu_only (VmrHarness *h, gconstpointer user_data)
{
    setup (h, SETUP_QEMU_ONLY);
}

void
vmr_harness_setup_no_daemon (VmrHarness *h, gconstpointer user_data)
{
    setup (h, SETUP_DAEMON_LATER);
}

static GPtrArray *
collect_strings (const gchar *first, va_list ap)
{
    GPtrArray *strings = g_ptr_array_new ();

    for (const gchar *arg = first; arg != NULL; arg = va_arg (ap, const gchar *))
        g_ptr_array_add (strings, (gpointer) arg);
    g_ptr_array_add (strings, NULL);
    return strings;
}

void
vmr_harness_start_daemon (VmrHarness *h, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) extra = NULL;
    va_list ap;

    va_start (ap, first_arg);
    extra = collect_strings (first_arg, ap);
    va_end (ap);
    start_daemon (h, (const gchar *const *) extra->pdata);
}

VmrCliResult *
vmr_harness_run_daemon (VmrHarness *h, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) extra = NULL;
    g_autoptr (GPtrArray) argv = NULL;
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GBytes) out = NULL;
    g_autoptr (GBytes) err = NULL;
    g_autoptr (GError) error = NULL;
    VmrCliResult *result = g_new0 (VmrCliResult, 1);
    pid_t pid = 0;
    va_list ap;

    va_start (ap, first_arg);
    extra = collect_strings (first_arg, ap);
    va_end (ap);
    argv = vmr_harness_daemon_argv (h, NULL, FALSE, (const gchar *const *) extra->pdata);
    result->cmdline = g_strjoinv (" ", (gchar **) argv->pdata);
    proc
        = vmr_harness_spawn (h, (const gchar *const *) argv->pdata,
                             G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &pid);
    /* a daemon that starts after all never ends by itself: the wait is bounded */
    if (!vmr_harness_wait_exit (proc, VMR_HARNESS_START_TIMEOUT_MS)) {
        vmr_harness_kill_process (&proc, pid);
        vmr_fail ("%s did not exit within %d ms", result->cmdline, VMR_HARNESS_START_TIMEOUT_MS);
    }
    vmr_harness_untrack_pid (pid);
    g_subprocess_communicate (proc, NULL, NULL, &out, &err, &error);
    g_assert_no_error (error);
    /* an empty stream has no data at all: "" rather than NULL */
    result->out = g_strndup (g_bytes_get_size (out) > 0 ? g_bytes_get_data (out, NULL) : "",
                             g_bytes_get_size (out));
    result->err = g_strndup (g_bytes_get_size (err) > 0 ? g_bytes_get_data (err, NULL) : "",
                             g_bytes_get_size (err));
    if (g_subprocess_get_if_exited (proc))
        result->status = g_subprocess_get_exit_status (proc);
    else
        result->status = -g_subprocess_get_term_sig (proc);
    return result;
}

gchar *
vmr_harness_write_policy (VmrHarness *h, const gchar *text)
{
    g_autofree gchar *path = vmr_harness_path (h, "policy.conf");
    g_autoptr (GError) error = NULL;

    /* a new file renamed over the old one: a reload never reads half a file */
    g_file_set_contents (path, text, -1, &error);
    g_assert_no_error (error);
    g_test_message ("policy file %s:\n%s", path, text);
    return g_steal_pointer (&path);
}

void
vmr_harness_teardown (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *daemon_problem = NULL;
    gboolean removed = TRUE;

    /* everything is cleaned up first; the daemon's exit is asserted last */
    if (h->daemon != NULL)
        stop_daemon (h, &daemon_problem);
    if (h->qemu != NULL)
        vmr_harness_kill_process (&h->qemu, h->qemu_pid);
    /* after QEMU: its console reader may still be reading */
    vmr_harness_guest_clear (h);
    if (h->mon != NULL)
        vmr_qmp_client_close (h->mon);
    g_clear_object (&h->mon);
    if (h->silent_listener != NULL)
        g_socket_close (h->silent_listener, NULL);
    g_clear_object (&h->silent_listener);
    if (h->immutable_dir != NULL) {
        const gchar *argv[] = { "chattr", "-i", h->immutable_dir, NULL };

        g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                      NULL, NULL);
    }
    if (h->tmpfs_dir != NULL) {
        const gchar *argv[] = { "umount", "-l", h->tmpfs_dir, NULL };

        g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                      NULL, NULL);
    }
    if (g_getenv ("VMR_TEST_KEEP_DIR") != NULL)
        g_test_message ("kept %s", h->dir);
    else
        removed = remove_tree (h->dir);
    crash_cleanup_cmd[0] = '\0';
    g_clear_pointer (&h->immutable_dir, g_free);
    g_clear_pointer (&h->tmpfs_dir, g_free);
    g_clear_pointer (&h->skip_reason, g_free);
    g_clear_pointer (&h->dir, g_free);
    g_clear_pointer (&h->socket, g_free);
    g_clear_pointer (&h->daemon_log, g_free);
    g_clear_pointer (&h->state_dir, g_free);
    g_clear_pointer (&h->qemu_monitor, g_free);
    g_clear_pointer (&h->test_monitor, g_free);
    if (daemon_problem != NULL)
        vmr_fail ("%s", daemon_problem);
    g_assert_true (removed);
}

gchar *
vmr_harness_path (VmrHarness *h, const gchar *name)
{
    return g_build_filename (h->dir, name, NULL);
}

/* ---- odd peers and places ---- */

gchar *
vmr_harness_silent_listener (VmrHarness *h)
{
    g_autofree gchar *path = vmr_harness_path (h, "silent.sock");
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GError) error = NULL;

    g_assert_null (h->silent_listener);
    h->silent_listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                       G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_no_error (error);
    g_socket_bind (h->silent_listener, address, FALSE, &error);
    g_assert_no_error (error);
    /* connections complete in the kernel's backlog; nothing ever accepts them */
    g_socket_listen (h->silent_listener, &error);
    g_assert_no_error (error);
    return g_steal_pointer (&path);
}

static gboolean
can_create_in (const gchar *dir)
{
    g_autofree gchar *probe = g_build_filename (dir, "probe", NULL);
    int fd = open (probe, O_WRONLY | O_CREAT | O_EXCL, 0600);

    if (fd < 0)
        return FALSE;
    close (fd);
    g_unlink (probe);
    return TRUE;
}

gchar *
vmr_harness_unwritable_dir (VmrHarness *h)
{
    g_autofree gchar *dir = vmr_harness_path (h, "immutable");
    const gchar *argv[] = { "chattr", "+i", dir, NULL };
    gint status = 0;

    /*
     * tests run as root, and permission bits do not stop root. The immutable
     * attribute does: nobody, root included, can create a file in such a
     * directory until the attribute is removed (teardown does that).
     */
    g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
    if (g_spawn_sync (NULL, (gchar **) argv, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, NULL, NULL, &status, NULL)
        && g_spawn_check_wait_status (status, NULL)) {
        h->immutable_dir = g_strdup (dir);
        update_crash_cleanup (h);
        if (!can_create_in (dir))
            return g_steal_pointer (&dir);
    }
    /*
     * no chattr, or a filesystem without the attribute: sysfs refuses new
     * files to everybody, root included. That is another kind of refusal
     * than a directory's: under REQUIRE_INTEGRATION=1 it is not taken.
     */
    if (g_strcmp0 (g_getenv ("REQUIRE_INTEGRATION"), "1") != 0
        && g_file_test ("/sys/kernel", G_FILE_TEST_IS_DIR) && !can_create_in ("/sys/kernel"))
        return g_strdup ("/sys/kernel");
    vmr_harness_skip (h, "no directory that root cannot write to (chattr +i unsupported)");
    return NULL;
}

gchar *
vmr_harness_mount_tmpfs (VmrHarness *h, const gchar *name, gsize size)
{
    g_autofree gchar *dir = vmr_harness_path (h, name);
    g_autofree gchar *options = g_strdup_printf ("size=%" G_GSIZE_FORMAT, size);
    g_autofree gchar *err = NULL;
    const gchar *argv[] = { "mount", "-t", "tmpfs", "-o", options, "tmpfs", dir, NULL };
    gint status = 0;

    g_assert_null (h->tmpfs_dir);
    g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                       &status, NULL)
        || !g_spawn_check_wait_status (status, NULL)) {
        g_autofree gchar *line = vmr_harness_one_line (err);
        g_autofree gchar *reason = g_strdup_printf ("cannot mount a tmpfs (%s)", line);

        vmr_harness_skip (h, reason);
        return NULL;
    }
    h->tmpfs_dir = g_strdup (dir);
    update_crash_cleanup (h);
    return g_steal_pointer (&dir);
}

void
vmr_harness_unmount_tmpfs (VmrHarness *h)
{
    const gchar *argv[] = { "umount", h->tmpfs_dir, NULL };
    g_autofree gchar *err = NULL;
    gint status = 0;

    g_assert_nonnull (h->tmpfs_dir);
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                       &status, NULL)
        || !g_spawn_check_wait_status (status, NULL))
        vmr_fail ("umount %s: %s", h->tmpfs_dir, err != NULL ? err : "cannot run umount");
    g_clear_pointer (&h->tmpfs_dir, g_free);
    update_crash_cleanup (h);
}

GSocket *
vmr_harness_connect_unix (const gchar *path)
{
    g_autoptr (GSocket) socket = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                               G_SOCKET_PROTOCOL_DEFAULT, NULL);
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GError) error = NULL;

    g_assert_nonnull (socket);
    if (!g_socket_connect (socket, address, NULL, &error))
        vmr_fail ("cannot connect to %s: %s", path, error->message);
    g_socket_set_timeout (socket, 30);
    return g_steal_pointer (&socket);
}

gchar *
vmr_harness_socket_line (GSocket *socket, GString *buf)
{
    while (TRUE) {
        gchar *newline = memchr (buf->str, '\n', buf->len);
        gchar chunk[65536];
        gssize n;

        if (newline != NULL) {
            gchar *line = g_strndup (buf->str, (gsize) (newline - buf->str));

            g_string_erase (buf, 0, newline - buf->str + 1);
            return line;
        }
        n = g_socket_receive (socket, chunk, sizeof chunk, NULL, NULL);
        if (n <= 0)
            return NULL;
        g_string_append_len (buf, chunk, n);
    }
}

guint
vmr_harness_count_lines (const gchar *text, const gchar *needle)
{
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
    guint n = 0;

    for (guint i = 0; lines[i] != NULL; i++)
        n += strstr (lines[i], needle) != NULL;
    return n;
}
