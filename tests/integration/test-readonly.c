#define G_LOG_DOMAIN "vmr-test"

/*
 * Who may do what on the control sockets, with the CLI run as an
 * unprivileged user (nobody, through setpriv) against a real daemon and
 * QEMU: the read-only socket (mode 0660, a group of the test's own) serves
 * jobs, job, domains, policy show and the job events to that group, and
 * refuses every command that changes something with its own error; the
 * control socket refuses such commands to anyone but root, even when its
 * mode lets them in; the daemon logs every one with the client's uid and
 * pid. After all of it the copy that was running is cancelled by root and
 * the VM is on its source with its bytes.
 */

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "peer-fixture.h"

#define IMAGE_SIZE (16 * 1024 * 1024)
#define GROUP      "vmr-readonly-test"
#define USER       "nobody"

typedef VmrPeerTest Fixture;

/* a CLI run: its result and the pid it ran as */
typedef struct {
    VmrCliResult *result;
    gchar *pid;
} Run;

static void
run_clear (Run *run)
{
    g_clear_pointer (&run->result, vmr_cli_result_free);
    g_clear_pointer (&run->pid, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Run, run_clear)

/*
 * the CLI with @args (NULL-terminated), as USER in GROUP when @as_user
 * (else as root), with VIRT_MIRROR_READONLY_SOCKET set for --readonly
 */
static void
run_cli (Fixture *t, gboolean as_user, const gchar *const *args, Run *out)
{
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    VmrCliResult *result = g_new0 (VmrCliResult, 1);

    if (as_user) {
        /* setpriv execs the CLI: the pid the daemon sees is this one */
        g_ptr_array_add (argv, "setpriv");
        g_ptr_array_add (argv, "--reuid=" USER);
        g_ptr_array_add (argv, "--regid=" GROUP);
        g_ptr_array_add (argv, "--clear-groups");
    }
    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_CLI"));
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_READONLY_SOCKET", t->readonly_socket,
                                  TRUE);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_SOCKET", t->h.socket, TRUE);
    result->cmdline = g_strjoinv (" ", (gchar **) argv->pdata);
    proc = g_subprocess_launcher_spawnv (launcher, (const gchar *const *) argv->pdata, &error);
    g_assert_no_error (error);
    out->pid = g_strdup (g_subprocess_get_identifier (proc));
    g_assert_true (
        g_subprocess_communicate_utf8 (proc, NULL, NULL, &result->out, &result->err, &error));
    g_assert_no_error (error);
    result->status = g_subprocess_get_exit_status (proc);
    out->result = result;
}

#define RUN(t, as_user, run, ...)                                                                  \
    do {                                                                                           \
        const gchar *const run_args_[] = { __VA_ARGS__, NULL };                                    \
        run_cli ((t), (as_user), run_args_, (run));                                                \
    } while (0)

/* as USER on the read-only socket, `@args` is refused, as @wire_name, and logged */
static void
assert_readonly_refuses (Fixture *t, const gchar *wire_name, const gchar *const *args)
{
    g_auto (Run) run = { 0 };
    g_autofree gchar *reason
        = g_strdup_printf ("the read-only socket does not allow '%s'", wire_name);
    g_autofree gchar *logged = NULL;
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();

    g_ptr_array_add (argv, "--readonly");
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    run_cli (t, TRUE, (const gchar *const *) argv->pdata, &run);
    vmr_cli_result_assert_error (run.result, 1);
    if (strstr (run.result->err, reason) == NULL)
        vmr_fail ("`%s` was refused, but not for \"%s\": %s", run.result->cmdline, reason,
                  run.result->err);
    logged = g_strdup_printf ("%s from uid %u pid %s refused on the read-only socket", wire_name,
                              (guint) getpwnam (USER)->pw_uid, run.pid);
    vmr_peer_test_assert_logged (t, logged);
}

#define READONLY_REFUSES(t, wire_name, ...)                                                        \
    do {                                                                                           \
        const gchar *const refused_args_[] = { __VA_ARGS__, NULL };                                \
        assert_readonly_refuses ((t), (wire_name), refused_args_);                                 \
    } while (0)

/* what a client of the read-only socket heard */
typedef struct {
    gchar *state; /* the first JOB_STATE_CHANGED's state */
} EventSeen;

static void
event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
          gpointer user_data)
{
    EventSeen *seen = user_data;

    if (g_strcmp0 (name, "JOB_STATE_CHANGED") == 0 && seen->state == NULL)
        seen->state = g_strdup (vmr_json_get_string (data, "state"));
}

/* the group reads: jobs, job, domains, policy show, metrics */
static void
assert_group_reads (Fixture *t, const gchar *id, const VmrHarnessVm *vm)
{
    {
        g_auto (Run) jobs = { 0 };
        g_auto (Run) one = { 0 };
        g_auto (Run) domains = { 0 };
        g_auto (Run) shown = { 0 };

        RUN (t, TRUE, &jobs, "-r", "jobs");
        vmr_cli_result_assert_ok (jobs.result);
        g_assert_nonnull (strstr (jobs.result->out, id));
        RUN (t, TRUE, &one, "--readonly", "--json", "job", id);
        vmr_cli_result_assert_ok (one.result);
        g_assert_nonnull (strstr (one.result->out, "\"copying\""));
        RUN (t, TRUE, &domains, "-r", "domains");
        vmr_cli_result_assert_ok (domains.result);
        g_assert_nonnull (strstr (domains.result->out, vm->source));
        RUN (t, TRUE, &shown, "-r", "policy", "show", "vm", "disk0");
        vmr_cli_result_assert_ok (shown.result);
        g_assert_nonnull (strstr (shown.result->out, "10s"));
    }
    /* ... and the metrics */
    {
        g_auto (Run) metrics = { 0 };
        g_autofree gchar *info = g_strdup_printf ("virt_mirror_job_info{job=\"%s\"", id);

        RUN (t, TRUE, &metrics, "-r", "metrics");
        vmr_cli_result_assert_ok (metrics.result);
        g_assert_nonnull (strstr (metrics.result->out, info));
    }
}

/* the read-only socket changes nothing: each refusal is its own error, logged with the peer */
static void
assert_readonly_changes_nothing (Fixture *t, const gchar *id)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *dest2 = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) block_job = NULL;

    dest2 = vmr_harness_path (h, "other.raw");
    READONLY_REFUSES (t, "migrate", "migrate", "vm", "disk0", dest2);
    READONLY_REFUSES (t, "job-cancel", "cancel", id);
    READONLY_REFUSES (t, "job-pause", "pause", id);
    READONLY_REFUSES (t, "job-set-speed", "set-speed", id, "0");
    READONLY_REFUSES (t, "detach", "detach", "vm");
    READONLY_REFUSES (t, "reload", "reload");
    READONLY_REFUSES (t, "attach", "attach", "other", "--qmp", h->qemu_monitor);
    READONLY_REFUSES (t, "evacuate", "evacuate", "--from", h->dir, "--to", "/srv", "--dry-run");
    g_assert_false (g_file_test (dest2, G_FILE_TEST_EXISTS));
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_json_job_state (job), ==, "copying");
    block_job = vmr_harness_find_block_job (h, id);
    g_assert_nonnull (block_job);

    /* the read-only socket is read-only for root too */
    {
        g_auto (Run) run = { 0 };

        RUN (t, FALSE, &run, "-r", "cancel", id);
        vmr_cli_result_assert_error (run.result, 1);
        g_assert_nonnull (strstr (run.result->err, "does not allow 'job-cancel'"));
    }
}

/* the group's users reach the control socket neither by its mode nor by mistake */
static void
assert_users_kept_out (Fixture *t, const gchar *id, guint uid)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *logged = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (GError) error = NULL;

    /* the user cannot reach the control socket ... */
    {
        g_auto (Run) run = { 0 };

        RUN (t, TRUE, &run, "cancel", id);
        vmr_cli_result_assert_error (run.result, 1);
        g_assert_nonnull (strstr (run.result->err, "permission denied"));
    }
    /* ... and when its mode lets them in by mistake, the daemon still says no */
    g_assert_cmpint (g_chmod (h->socket, 0666), ==, 0);
    {
        g_auto (Run) reads = { 0 };
        g_auto (Run) run = { 0 };
        g_autofree gchar *reason = g_strdup_printf ("'job-cancel' is for root only (the client "
                                                    "is uid %u)",
                                                    uid);

        RUN (t, TRUE, &reads, "jobs");
        vmr_cli_result_assert_ok (reads.result);
        RUN (t, TRUE, &run, "cancel", id);
        vmr_cli_result_assert_error (run.result, 1);
        g_assert_nonnull (strstr (run.result->err, reason));
        logged = g_strdup_printf ("job-cancel from uid %u pid %s refused", uid, run.pid);
        vmr_peer_test_assert_logged (t, logged);
    }
    g_assert_cmpint (g_chmod (h->socket, 0600), ==, 0);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_json_job_state (job), ==, "copying");

    /* a user outside the group does not get in */
    {
        const gchar *argv[] = { "setpriv",
                                "--reuid=" USER,
                                "--regid=nogroup",
                                "--clear-groups",
                                g_getenv ("VMR_CLI"),
                                "-r",
                                "jobs",
                                NULL };
        g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
            G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr (GSubprocess) proc = NULL;
        g_autofree gchar *err = NULL;

        g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_READONLY_SOCKET", t->readonly_socket,
                                      TRUE);
        proc = g_subprocess_launcher_spawnv (launcher, argv, &error);
        g_assert_no_error (error);
        g_assert_true (g_subprocess_communicate_utf8 (proc, NULL, NULL, NULL, &err, &error));
        g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 1);
        g_assert_nonnull (strstr (err, "permission denied"));
    }
}

static void
test_readonly_socket (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *policy = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *logged = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (VmrQmpClient) watcher = NULL;
    g_autoptr (GError) error = NULL;
    EventSeen seen = { NULL };
    struct stat st;
    guint uid;

    if (vmr_harness_skipped (h))
        return;
    uid = (guint) getpwnam (USER)->pw_uid;
    policy = vmr_harness_write_policy (h, "[defaults]\nhold = 10s\n");
    h->daemon_log = g_strdup (t->log);
    vmr_harness_start_daemon (h, "--policy", policy, "--readonly-socket", t->readonly_socket,
                              "--readonly-group", GROUP, NULL);
    g_assert_cmpint (g_stat (t->readonly_socket, &st), ==, 0);
    g_assert_cmpint (st.st_mode & 0777, ==, 0660);
    g_assert_cmpint (st.st_gid, ==, getgrnam (GROUP)->gr_gid);
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 21);
    vmr_harness_writer_write (vm.writer, 10);

    /* root migrates on the control socket: logged with its uid and pid */
    {
        g_auto (Run) run = { 0 };
        g_autoptr (JsonNode) reply = NULL;

        RUN (t, FALSE, &run, "--json", "migrate", "vm", "disk0", vm.dest, "--speed",
             VMR_HARNESS_SLOW_SPEED);
        vmr_cli_result_assert_ok (run.result);
        reply = vmr_cli_result_parse_json (run.result);
        id = g_strdup (vmr_harness_json_string (vmr_harness_json_node_object (reply), "id"));
        logged = g_strdup_printf ("migrate from uid 0 pid %s", run.pid);
        vmr_peer_test_assert_logged (t, logged);
    }
    job = vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);

    assert_group_reads (t, id, &vm);
    assert_readonly_changes_nothing (t, id);
    assert_users_kept_out (t, id, uid);

    /* the events reach the read-only socket's clients; root cancels */
    watcher = vmr_qmp_client_connect_sync (t->readonly_socket, 5000, &error);
    g_assert_no_error (error);
    g_signal_connect (watcher, "event", G_CALLBACK (event_cb), &seen);
    {
        g_auto (Run) run = { 0 };
        gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;

        RUN (t, FALSE, &run, "cancel", id);
        vmr_cli_result_assert_ok (run.result);
        g_clear_pointer (&logged, g_free);
        logged = g_strdup_printf ("job-cancel from uid 0 pid %s", run.pid);
        vmr_peer_test_assert_logged (t, logged);
        while (seen.state == NULL && g_get_monotonic_time () < deadline) {
            if (!g_main_context_iteration (NULL, FALSE))
                g_usleep (10 * 1000);
        }
        g_assert_nonnull (seen.state);
    }
    g_free (seen.state);
    g_signal_handlers_disconnect_by_data (watcher, &seen);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_daemon_serving (h);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_PEER_TEST_ADD ("/readonly/socket", GROUP, test_readonly_socket);
    return g_test_run ();
}
