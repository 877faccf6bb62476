#define G_LOG_DOMAIN "vmr-test"

#ifndef _GNU_SOURCE
/* sigaction, prctl under -std=c17 */
#define _GNU_SOURCE
#endif

#include "harness-e2e-private.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define LIBVIRTD_PIDFILE "/run/libvirtd.pid"
#define VIRTLOGD_PIDFILE "/run/virtlogd.pid"
#define HOOKS_DIR        "/etc/libvirt/hooks/qemu.d"
/* how long a daemon gets to stop on SIGTERM before SIGKILL */
#define STOP_TIMEOUT_US (10 * G_USEC_PER_SEC)
/* the environment libvirt's daemons get: not the test's (G_DEBUG, MALLOC_PERTURB_) */
static const gchar *const daemon_envp[]
    = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8", NULL };

/* what this test program did to libvirt, to put it back at the end */
static struct {
    gboolean wanted;  /* the program's tests need libvirt */
    gboolean ready;   /* libvirtd runs with the hook installed */
    gchar *problem;   /* why it is not ready */
    gchar *dir;       /* hook.conf and the hook's run log */
    gchar *wrapper;   /* the wrapper in HOOKS_DIR */
    gboolean systemd; /* libvirtd is systemd's */
    gboolean libvirtd_was_running;
    gboolean sockets_were_active; /* systemd's libvirtd.socket */
    gboolean touched_libvirtd;    /* stopped or started by us */
    gboolean made_hooks_dir;      /* HOOKS_DIR did not exist */
    gboolean started_virtlogd;
    pid_t virtlogd_pid;
    guint domain_counter;
} env;

/* for the crash handler: a shell command that undoes the above, and the daemon's pid */
static char crash_cmd[8192];
static volatile sig_atomic_t daemon_pid;
static struct sigaction previous_actions[NSIG];

static void
crash_handler (int signum)
{
    if (daemon_pid > 0)
        kill ((pid_t) daemon_pid, SIGKILL);
    if (crash_cmd[0] != '\0') {
        pid_t pid = fork ();

        if (pid == 0) {
            execl ("/bin/sh", "sh", "-c", crash_cmd, (char *) NULL);
            _exit (127);
        }
        if (pid > 0)
            waitpid (pid, NULL, 0);
    }
    /* then the integration harness's handler: its children, its directory, the signal */
    sigaction (signum, &previous_actions[signum], NULL);
    if (previous_actions[signum].sa_handler != SIG_DFL
        && previous_actions[signum].sa_handler != SIG_IGN)
        previous_actions[signum].sa_handler (signum);
    else
        raise (signum);
}

void
vmr_e2e_init (int *argc, char ***argv)
{
    const int signals[] = { SIGABRT, SIGTRAP, SIGSEGV, SIGBUS, SIGTERM };
    struct sigaction action = { 0 };

    vmr_harness_init (argc, argv);
    action.sa_handler = crash_handler;
    action.sa_flags = SA_RESETHAND;
    sigemptyset (&action.sa_mask);
    for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
        sigaction (signals[i], &action, &previous_actions[signals[i]]);
}

/* ---- processes ---- */

static gboolean
run_quiet (const gchar *const *argv, gchar **out, GError **error)
{
    g_autofree gchar *err = NULL;
    gint status = 0;

    /* our stdout is TAP */
    if (!g_spawn_sync (NULL, (gchar **) argv, (gchar **) daemon_envp,
                       G_SPAWN_SEARCH_PATH | (out == NULL ? G_SPAWN_STDOUT_TO_DEV_NULL : 0), NULL,
                       NULL, out, &err, &status, error))
        return FALSE;
    if (!g_spawn_check_wait_status (status, error)) {
        g_prefix_error (error, "%s: %s: ", argv[0], g_strstrip (err));
        return FALSE;
    }
    return TRUE;
}

/* the pid in @pidfile when that process runs, else 0 */
static pid_t
running_pid (const gchar *pidfile)
{
    g_autofree gchar *text = NULL;
    g_autofree gchar *stat_path = NULL;
    g_autofree gchar *stat = NULL;
    gint64 pid;

    if (!g_file_get_contents (pidfile, &text, NULL, NULL))
        return 0;
    pid = g_ascii_strtoll (g_strstrip (text), NULL, 10);
    if (pid <= 0)
        return 0;
    /* a daemon that exited may stay a zombie when nobody reaps orphans */
    stat_path = g_strdup_printf ("/proc/%" G_GINT64_FORMAT "/stat", pid);
    if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
        return 0;
    if (strstr (stat, ") Z ") != NULL || strstr (stat, ") X ") != NULL)
        return 0;
    return (pid_t) pid;
}

/* SIGTERM, then SIGKILL for a daemon that hangs in its shutdown (libvirtd can) */
static gboolean
stop_by_pidfile (const gchar *pidfile, GError **error)
{
    pid_t pid = running_pid (pidfile);
    gint64 kill_at = g_get_monotonic_time () + STOP_TIMEOUT_US;
    gint64 deadline = kill_at + STOP_TIMEOUT_US;

    if (pid == 0)
        return TRUE;
    kill (pid, SIGTERM);
    while (running_pid (pidfile) == pid) {
        if (kill_at != 0 && g_get_monotonic_time () > kill_at) {
            g_test_message ("%s: pid %d ignored SIGTERM; killing it", pidfile, (int) pid);
            kill (pid, SIGKILL);
            kill_at = 0;
        }
        if (g_get_monotonic_time () > deadline) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "pid %d of %s did not exit",
                         (int) pid, pidfile);
            return FALSE;
        }
        g_usleep (50 * 1000);
    }
    return TRUE;
}

static gboolean
libvirt_answers (void)
{
    const gchar *argv[] = { "virsh", "-q", "-c", VMR_E2E_URI, "version", NULL };

    return run_quiet (argv, NULL, NULL);
}

static gboolean
start_libvirtd (GError **error)
{
    const gchar *systemd_argv[] = { "systemctl", "restart", "libvirtd.service", NULL };
    const gchar *argv[] = { "libvirtd", "-d", NULL };
    gint64 deadline = g_get_monotonic_time () + VMR_E2E_START_TIMEOUT_US;

    if (!run_quiet (env.systemd ? systemd_argv : argv, NULL, error))
        return FALSE;
    while (!libvirt_answers ()) {
        if (g_get_monotonic_time () > deadline) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "libvirtd does not answer on %s",
                         VMR_E2E_URI);
            return FALSE;
        }
        g_usleep (100 * 1000);
    }
    return TRUE;
}

static gboolean
stop_libvirtd (GError **error)
{
    /* its sockets too: a connection to one would start it again */
    const gchar *argv[] = { "systemctl",
                            "stop",
                            "libvirtd.service",
                            "libvirtd.socket",
                            "libvirtd-ro.socket",
                            "libvirtd-admin.socket",
                            NULL };

    if (env.systemd)
        return run_quiet (argv, NULL, error);
    return stop_by_pidfile (LIBVIRTD_PIDFILE, error);
}

static gboolean
restore_sockets (GError **error)
{
    const gchar *argv[]
        = { "systemctl", "start", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket",
            NULL };

    return !env.sockets_were_active || run_quiet (argv, NULL, error);
}

void
vmr_e2e_restart_libvirtd (void)
{
    g_autoptr (GError) error = NULL;

    g_test_message ("restarting libvirtd");
    if (!(env.systemd || stop_libvirtd (&error)) || !start_libvirtd (&error))
        vmr_fail ("cannot restart libvirtd: %s", error->message);
}

void
vmr_e2e_stop_libvirtd (void)
{
    g_autoptr (GError) error = NULL;

    g_test_message ("stopping libvirtd");
    if (!stop_libvirtd (&error))
        vmr_fail ("cannot stop libvirtd: %s", error->message);
}

void
vmr_e2e_start_libvirtd (void)
{
    g_autoptr (GError) error = NULL;

    g_test_message ("starting libvirtd");
    if (!start_libvirtd (&error))
        vmr_fail ("cannot start libvirtd: %s", error->message);
}

/* ---- the hook ---- */

void
vmr_e2e_point_hook (const gchar *socket)
{
    g_autofree gchar *path = g_build_filename (env.dir, "hook.conf", NULL);
    g_autofree gchar *text = g_strdup_printf ("[hook]\nsocket=%s\n", socket);
    g_autoptr (GError) error = NULL;

    g_assert_nonnull (env.dir);
    g_file_set_contents (path, text, -1, &error);
    g_assert_no_error (error);
}

/* the first line after the shebang of every wrapper this harness writes */
#define WRAPPER_MARK "# virt-mirror's e2e tests: the hook under test, for as long as they run"

/*
 * Removes the wrappers of e2e runs that died before they could remove
 * their own (a killed test): each names a hook in a build tree that may be
 * gone, and libvirtd refuses to start a domain when a hook fails. Only a
 * file of this harness's name and first lines, whose process is gone, is
 * removed: nothing another program put there.
 */
static void
remove_stale_wrappers (void)
{
    g_autoptr (GDir) dir = g_dir_open (HOOKS_DIR, 0, NULL);
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
        g_autofree gchar *path = g_build_filename (HOOKS_DIR, name, NULL);
        g_autofree gchar *text = NULL;
        gchar *end = NULL;
        gint64 pid;

        if (!g_str_has_prefix (name, "vmr-e2e-"))
            continue;
        pid = g_ascii_strtoll (name + strlen ("vmr-e2e-"), &end, 10);
        if (end == NULL || *end != '\0' || pid <= 0 || pid > G_MAXINT)
            continue;
        if (kill ((pid_t) pid, 0) == 0 || errno != ESRCH)
            continue;
        if (!g_file_get_contents (path, &text, NULL, NULL)
            || strstr (text, "\n" WRAPPER_MARK "\n") == NULL)
            continue;
        if (g_unlink (path) == 0)
            g_test_message ("removed %s, left by an e2e run whose process is gone", path);
    }
}

static gboolean
install_wrapper (GError **error)
{
    g_autofree gchar *hook = g_getenv ("VMR_HOOK") != NULL
                                 ? g_canonicalize_filename (g_getenv ("VMR_HOOK"), NULL)
                                 : NULL;
    g_autofree gchar *config = g_build_filename (env.dir, "hook.conf", NULL);
    g_autofree gchar *log = g_build_filename (env.dir, "hook-runs.log", NULL);
    g_autofree gchar *q_config = g_shell_quote (config);
    g_autofree gchar *q_log = g_shell_quote (log);
    g_autofree gchar *q_hook = NULL;
    g_autofree gchar *script = NULL;

    if (hook == NULL || !g_file_test (hook, G_FILE_TEST_IS_EXECUTABLE)) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                     "VMR_HOOK is not the built hook: run through meson test");
        return FALSE;
    }
    q_hook = g_shell_quote (hook);
    /* the hook's own exit status goes back to libvirtd, as it would installed */
    script = g_strdup_printf ("#!/bin/sh\n" WRAPPER_MARK "\n"
                              "start=$(date +%%s%%N)\n"
                              "VIRT_MIRROR_HOOK_CONFIG=%s %s \"$@\"\n"
                              "status=$?\n"
                              "end=$(date +%%s%%N)\n"
                              "echo \"$1 $2 $3 $status $((start / 1000)) $(((end - start) / "
                              "1000))\" >> %s\n"
                              "exit $status\n",
                              q_config, q_hook, q_log);
    env.made_hooks_dir = !g_file_test (HOOKS_DIR, G_FILE_TEST_IS_DIR);
    if (g_mkdir_with_parents (HOOKS_DIR, 0755) < 0) {
        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "cannot create %s: %s",
                     HOOKS_DIR, g_strerror (errno));
        return FALSE;
    }
    remove_stale_wrappers ();
    env.wrapper = g_strdup_printf ("%s/vmr-e2e-%d", HOOKS_DIR, (int) getpid ());
    if (!g_file_set_contents_full (env.wrapper, script, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0755,
                                   error))
        return FALSE;
    vmr_e2e_point_hook ("/nonexistent/virt-mirrord.sock");
    return TRUE;
}

void
vmr_e2e_hook_run_free (VmrE2eHookRun *run)
{
    g_free (run->domain);
    g_free (run->op);
    g_free (run->subop);
    g_free (run);
}

GPtrArray *
vmr_e2e_hook_runs (const gchar *domain)
{
    g_autofree gchar *path = g_build_filename (env.dir, "hook-runs.log", NULL);
    g_autofree gchar *text = NULL;
    g_auto (GStrv) lines = NULL;
    GPtrArray *runs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_e2e_hook_run_free);

    if (!g_file_get_contents (path, &text, NULL, NULL))
        return runs;
    lines = g_strsplit (text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto (GStrv) fields = g_strsplit (lines[i], " ", -1);
        VmrE2eHookRun *run;

        if (g_strv_length (fields) != 6 || g_strcmp0 (fields[0], domain) != 0)
            continue;
        run = g_new0 (VmrE2eHookRun, 1);
        run->domain = g_strdup (fields[0]);
        run->op = g_strdup (fields[1]);
        run->subop = g_strdup (fields[2]);
        run->status = (gint) g_ascii_strtoll (fields[3], NULL, 10);
        run->start_us = g_ascii_strtoll (fields[4], NULL, 10);
        run->elapsed_us = g_ascii_strtoll (fields[5], NULL, 10);
        g_ptr_array_add (runs, run);
    }
    return runs;
}

/* ---- libvirt for the whole program ---- */

static void
set_crash_cmd (void)
{
    g_autoptr (GString) cmd = g_string_new ("PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH; ");
    g_autofree gchar *q_wrapper = g_shell_quote (env.wrapper);
    g_autofree gchar *q_dir = g_shell_quote (env.dir);

    g_string_append_printf (cmd,
                            "for d in $(virsh -q -c %s list --all --name | grep '^vmr-e2e-%d-'); "
                            "do virsh -q -c %s destroy \"$d\"; virsh -q -c %s undefine \"$d\"; "
                            "done >/dev/null 2>&1; rm -f %s; ",
                            VMR_E2E_URI, (int) getpid (), VMR_E2E_URI, VMR_E2E_URI, q_wrapper);
    if (env.systemd)
        g_string_append_printf (cmd, "systemctl %s libvirtd.service; ",
                                env.libvirtd_was_running ? "restart" : "stop");
    else
        g_string_append_printf (
            cmd,
            "pid=$(cat %s 2>/dev/null); if [ -n \"$pid\" ]; then kill $pid; "
            "for i in $(seq 100); do [ -d /proc/$pid ] || break; "
            "grep -qs '^State:.Z' /proc/$pid/status && break; sleep 0.1; done; "
            "kill -9 $pid 2>/dev/null; sleep 0.2; fi; %s",
            LIBVIRTD_PIDFILE,
            env.libvirtd_was_running ? "env -i PATH=$PATH LC_ALL=C.UTF-8 libvirtd -d; " : "");
    if (env.started_virtlogd)
        g_string_append_printf (cmd, "kill %d 2>/dev/null; ", (int) env.virtlogd_pid);
    g_string_append_printf (cmd, "rm -rf %s", q_dir);
    if (cmd->len < sizeof crash_cmd)
        memcpy (crash_cmd, cmd->str, cmd->len + 1);
}

static gboolean
libvirt_up (GError **error)
{
    const gchar *virtlogd_argv[] = { "virtlogd", "-d", NULL };
    const gchar *programs[] = { "virsh", "libvirtd", "virtlogd", NULL };

    if (g_strcmp0 (g_getenv ("VMR_DAEMON_LIBVIRT"), "1") != 0) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                     "virt-mirrord was built without libvirt (install libvirt-dev)");
        return FALSE;
    }
    for (guint i = 0; programs[i] != NULL; i++) {
        g_autofree gchar *path = g_find_program_in_path (programs[i]);
        g_autofree gchar *sbin = g_build_filename ("/usr/sbin", programs[i], NULL);

        if (path == NULL && !g_file_test (sbin, G_FILE_TEST_IS_EXECUTABLE)) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                         "%s not found (scripts/install-deps installs libvirt)", programs[i]);
            return FALSE;
        }
    }
    env.dir = g_dir_make_tmp ("vmr-e2e-XXXXXX", error);
    if (env.dir == NULL)
        return FALSE;
    /* libvirtd runs the hook as root, but keep it readable like the images */
    g_chmod (env.dir, 0755);
    if (!install_wrapper (error))
        return FALSE;
    env.systemd = g_file_test ("/run/systemd/system", G_FILE_TEST_IS_DIR);
    if (env.systemd) {
        const gchar *argv[] = { "systemctl", "is-active", "--quiet", "libvirtd.service", NULL };

        const gchar *sockets_argv[]
            = { "systemctl", "is-active", "--quiet", "libvirtd.socket", NULL };

        /* virtlogd is socket-activated there */
        env.libvirtd_was_running = run_quiet (argv, NULL, NULL);
        env.sockets_were_active = run_quiet (sockets_argv, NULL, NULL);
    } else {
        env.libvirtd_was_running = running_pid (LIBVIRTD_PIDFILE) != 0;
        if (running_pid (VIRTLOGD_PIDFILE) == 0) {
            if (!run_quiet (virtlogd_argv, NULL, error))
                return FALSE;
            for (guint i = 0; i < 100 && env.virtlogd_pid == 0; i++) {
                env.virtlogd_pid = running_pid (VIRTLOGD_PIDFILE);
                g_usleep (50 * 1000);
            }
            env.started_virtlogd = env.virtlogd_pid != 0;
        }
    }
    set_crash_cmd ();
    g_test_message ("libvirtd %s; hook wrapper %s",
                    env.libvirtd_was_running ? "restarted" : "started", env.wrapper);
    /* libvirtd reads its hooks when it starts */
    env.touched_libvirtd = TRUE;
    if (env.libvirtd_was_running && !env.systemd && !stop_libvirtd (error))
        return FALSE;
    return start_libvirtd (error);
}

static void
libvirt_down (void)
{
    g_autoptr (GError) error = NULL;

    if (env.wrapper != NULL)
        g_unlink (env.wrapper);
    if (env.made_hooks_dir)
        g_rmdir (HOOKS_DIR);
    /* back as it was: running without the hook, or not running */
    if (env.touched_libvirtd) {
        gboolean ok;

        if (env.systemd)
            ok = env.libvirtd_was_running ? start_libvirtd (&error)
                                          : stop_libvirtd (&error) && restore_sockets (&error);
        else
            ok = stop_libvirtd (&error) && (!env.libvirtd_was_running || start_libvirtd (&error));
        if (!ok)
            g_printerr ("# putting libvirtd back: %s\n", error->message);
    }
    if (env.started_virtlogd)
        kill (env.virtlogd_pid, SIGTERM);
    if (env.dir != NULL) {
        const gchar *argv[] = { "rm", "-rf", env.dir, NULL };

        run_quiet (argv, NULL, NULL);
    }
    crash_cmd[0] = '\0';
}

/* which libvirtd and QEMU the program runs against, once, in its TAP log */
static void
report_versions (void)
{
    g_autoptr (VmrCliResult) version = vmr_e2e_virsh ("version", "--daemon", NULL);
    g_auto (GStrv) lines = g_strsplit (version->out != NULL ? version->out : "", "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++)
        if (g_str_has_prefix (lines[i], "Running "))
            g_test_message ("%s", lines[i]);
}

int
vmr_e2e_run (gboolean libvirt)
{
    g_autoptr (GError) error = NULL;
    int status;

    env.wanted = libvirt;
    if (libvirt) {
        env.ready = libvirt_up (&error);
        if (!env.ready)
            env.problem = g_strdup_printf ("libvirt is not usable here: %s", error->message);
        else
            report_versions ();
    }
    status = g_test_run ();
    if (libvirt)
        libvirt_down ();

    g_free (env.problem);
    g_free (env.dir);
    g_free (env.wrapper);
    return status;
}

/* ---- for the fixture ---- */

const gchar *
vmr_e2e_libvirt_problem (void)
{
    if (!env.wanted)
        return NULL;
    return env.ready ? NULL : env.problem;
}

gboolean
vmr_e2e_libvirt_wanted (void)
{
    return env.wanted;
}

guint
vmr_e2e_next_domain_number (void)
{
    return ++env.domain_counter;
}

void
vmr_e2e_track_daemon (pid_t pid)
{
    daemon_pid = pid;
}
