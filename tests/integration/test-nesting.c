#define G_LOG_DOMAIN "vmr-test"

/*
 * Text that nests arrays a megabyte deep, from every peer the daemon reads
 * JSON from, against the real daemon (docs/reliability.md, "Threat
 * model"): json-glib would recurse once per level and overflow the
 * daemon's stack. Each time the daemon refuses or drops that text with one
 * line and goes on serving, the same process:
 *  - a request line of 1 MiB of '[' on the read-only socket, from another
 *    user (through setpriv), and on the control socket, from root: one
 *    error reply, and the connection still answers query-jobs;
 *  - a QEMU monitor that answers qmp_capabilities so (a scripted peer: a
 *    real QEMU cannot be made to), `virt-mirror attach`ed: attach fails
 *    with one line, the VM attached before is still served;
 *  - a job record in the state directory when the daemon starts: one line
 *    in its log, the other records taken, no job of it;
 *  - values in a real etcd, put with etcdctl under the cluster's queue and
 *    its evacuations: skipped, and a copy admitted through that queue
 *    completes with the bytes of its source.
 */

#include <string.h>

#include <glib/gstdio.h>

#include "etcd-fixture.h"
#include "peer-fixture.h"

#define GROUP      "vmr-nesting-test"
#define MIB        (1024 * 1024)
#define IMAGE_SIZE (16 * MIB)
#define TOO_DEEP   "arrays and objects nested deeper than 64 levels"

typedef VmrPeerTest Fixture;

/* the etcd of the one case that needs it, killed in teardown whatever happens */
static VmrEtcdCluster etcd;

static void
fixture_teardown (Fixture *t, gconstpointer user_data)
{
    vmr_etcd_cluster_clear (&etcd);
    vmr_peer_test_teardown (t, user_data);
}

/* a file in the test's directory: @prefix, then '[' up to @size bytes, and a newline if @line */
static gchar *
write_deep (VmrHarness *h, const gchar *name, const gchar *prefix, gsize size, gboolean line)
{
    g_autofree gchar *path = vmr_harness_path (h, name);
    GString *text = g_string_new (prefix);

    while (text->len < size - (line ? 1 : 0))
        g_string_append_c (text, '[');
    if (line)
        g_string_append_c (text, '\n');
    g_assert_true (g_file_set_contents (path, text->str, (gssize) text->len, NULL));
    g_string_free (text, TRUE);
    return g_steal_pointer (&path);
}

/* the daemon is the process it was, and serves */
static void
assert_same_daemon (VmrHarness *h, GPid pid)
{
    g_assert_cmpint (h->daemon_pid, ==, pid);
    g_assert_true (g_subprocess_get_identifier (h->daemon) != NULL);
    vmr_harness_assert_daemon_serving (h);
}

/* disk0 of @vm copied, the guest writing while it copies; the job's id */
static gchar *
copy_with_writes (VmrHarness *h, VmrHarnessVm *vm)
{
    gchar *id = vmr_harness_start_slow_migration (h, vm, NULL);
    g_autoptr (JsonObject) sped = NULL;
    g_autoptr (JsonObject) done = NULL;

    vmr_harness_writer_write (vm->writer, 10);
    sped = vmr_harness_job_command (h, "set-speed", id, "0");
    done = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    return id;
}

/* `peer-client send` of @file on @socket as @user: one error reply, then query-jobs answered */
static void
assert_line_refused (const gchar *user, const gchar *group, const gchar *socket, const gchar *file)
{
    const gchar *args[] = { "send", socket, file, NULL };
    g_autoptr (VmrPeer) peer = vmr_peer_client (user, group, args);
    g_autofree gchar *reply = vmr_peer_read_line (peer, 60);
    g_autofree gchar *then = vmr_peer_read_line (peer, 60);

    g_free (vmr_peer_finish (peer));
    g_test_message ("%s on %s: %s", user, socket, reply);
    g_assert_cmpstr (
        reply, ==,
        "reply {\"error\":{\"class\":\"GenericError\",\"desc\":\"JSON parse error: " TOO_DEEP
        "\"}}");
    g_assert_cmpstr (then, ==, "then {\"return\":[]}");
}

/* a megabyte of '[' on each control socket, from root and from another user */
static void
test_sockets (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *line = NULL;
    GPid pid;

    if (vmr_harness_skipped (h))
        return;
    vmr_peer_test_start_daemon (t, NULL);
    pid = h->daemon_pid;
    /* a request line of 1 MiB with its newline, the longest the daemon takes */
    line = write_deep (h, "deep-line", "", MIB, TRUE);
    assert_line_refused ("nobody", GROUP, t->readonly_socket, line);
    assert_line_refused ("root", "root", h->socket, line);
    /* the group's CLI too */
    {
        const gchar *argv[] = { g_getenv ("VMR_CLI"), "-r", "jobs", NULL };
        const gchar *env[] = { NULL, NULL };
        g_autofree gchar *socket_env
            = g_strdup_printf ("VIRT_MIRROR_READONLY_SOCKET=%s", t->readonly_socket);
        g_autoptr (VmrPeer) cli = NULL;
        g_autofree gchar *out = NULL;

        env[0] = socket_env;
        cli = vmr_peer_start ("nobody", GROUP, argv, env);
        out = vmr_peer_finish (cli);
        g_assert_nonnull (strstr (out, "No jobs."));
    }
    assert_same_daemon (h, pid);
}

/* a "QEMU" that greets, then answers qmp_capabilities with a reply nesting a megabyte deep */
typedef struct {
    GSocket *listener;
    gboolean hung_up; /* the daemon closed the connection after the reply */
} DeepMonitor;

static gpointer
deep_monitor_thread (gpointer user_data)
{
    DeepMonitor *monitor = user_data;
    static const gchar greeting[] = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, "
                                    "\"minor\": 0, \"major\": 10}, \"package\": \"\"}, "
                                    "\"capabilities\": []}}\n";
    g_autoptr (GSocket) conn = g_socket_accept (monitor->listener, NULL, NULL);
    g_autoptr (GString) reply = g_string_new ("{\"return\": ");
    gchar buf[4096];
    gssize n;

    if (conn == NULL)
        return NULL;
    g_socket_set_timeout (conn, 30);
    if (g_socket_send (conn, greeting, strlen (greeting), NULL, NULL) <= 0)
        return NULL;
    /* the daemon's qmp_capabilities */
    if (g_socket_receive (conn, buf, sizeof buf, NULL, NULL) <= 0)
        return NULL;
    while (reply->len < MIB)
        g_string_append_c (reply, '[');
    g_string_append_c (reply, '\n');
    for (gsize sent = 0; sent < reply->len; sent += (gsize) n) {
        n = g_socket_send (conn, reply->str + sent, reply->len - sent, NULL, NULL);
        if (n <= 0)
            return NULL;
    }
    while ((n = g_socket_receive (conn, buf, sizeof buf, NULL, NULL)) > 0)
        ;
    monitor->hung_up = n == 0;
    return NULL;
}

static void
test_qmp_monitor (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *path = NULL;
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (GThread) thread = NULL;
    g_autoptr (VmrCliResult) attach = NULL;
    g_autoptr (VmrCliResult) domains = NULL;
    DeepMonitor monitor = { 0 };
    GPid pid;

    if (vmr_harness_skipped (h))
        return;
    vmr_harness_restart_daemon (h, NULL);
    pid = h->daemon_pid;
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 31);
    path = vmr_harness_path (h, "deep-monitor.sock");
    address = g_unix_socket_address_new (path);
    monitor.listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                     G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_no_error (error);
    g_assert_true (g_socket_bind (monitor.listener, address, FALSE, &error));
    g_assert_true (g_socket_listen (monitor.listener, &error));
    thread = g_thread_new ("deep-monitor", deep_monitor_thread, &monitor);

    attach = vmr_harness_cli (h, "attach", "deep", "--qmp", path, NULL);
    g_thread_join (g_steal_pointer (&thread));
    g_socket_close (monitor.listener, NULL);
    g_clear_object (&monitor.listener);
    g_test_message ("attach: %s", attach->err);
    vmr_cli_result_assert_error (attach, 1);
    g_assert_nonnull (strstr (attach->err, TOO_DEEP));
    g_assert_true (monitor.hung_up);

    /* the VM attached before is served as before, by the same daemon */
    domains = vmr_harness_cli (h, "domains", NULL);
    vmr_cli_result_assert_ok (domains);
    g_assert_nonnull (strstr (domains->out, vm.source));
    g_assert_null (strstr (domains->out, "deep"));
    assert_same_daemon (h, pid);
}

/* a record that nests a megabyte deep, beside a good one, when the daemon starts */
static void
test_job_record (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *jobs_dir = g_build_filename (h->state_dir, "jobs", NULL);
    g_autofree gchar *deep = NULL;
    g_autofree gchar *deep_path = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *logged = NULL;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;

    if (vmr_harness_skipped (h))
        return;
    g_assert_cmpint (g_mkdir_with_parents (jobs_dir, 0700), ==, 0);
    deep = write_deep (h, "deep-record",
                       "{\"id\": \"vmr-7\", \"state\": \"copying\", \"history\": ", MIB, FALSE);
    deep_path = g_build_filename (jobs_dir, "vmr-7.json", NULL);
    g_assert_cmpint (g_rename (deep, deep_path), ==, 0);
    h->daemon_log = g_strdup (t->log);
    vmr_harness_restart_daemon (h, NULL);
    log = vmr_peer_test_log (t);
    logged = g_strdup_printf ("cannot read job record %s: " TOO_DEEP, deep_path);
    if (strstr (log, logged) == NULL)
        vmr_fail ("the daemon did not say \"%s\":\n%s", logged, log);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);

    /* it goes on with its jobs: the next one's number is past the record's */
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 32);
    id = copy_with_writes (h, &vm);
    g_assert_cmpstr (id, ==, "vmr-8");
    vmr_harness_assert_daemon_serving (h);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* `etcdctl put KEY` with @value_file on stdin */
static void
etcd_put (const gchar *endpoints, const gchar *key, const gchar *value_file)
{
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *err = NULL;

    g_subprocess_launcher_setenv (launcher, "ETCDCTL_API", "3", TRUE);
    g_subprocess_launcher_set_stdin_file_path (launcher, value_file);
    proc = g_subprocess_launcher_spawn (launcher, &error, "etcdctl", "--endpoints", endpoints,
                                        "put", key, NULL);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_communicate_utf8 (proc, NULL, NULL, NULL, &err, &error));
    g_assert_no_error (error);
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0)
        vmr_fail ("etcdctl put %s: %s", key, err);
}

/*
 * values nesting a megabyte deep under the cluster's queue (read whole by
 * each admission, and seen by its watch) and under its evacuations (which
 * every daemon watches): skipped; a copy goes through the queue
 */
static void
test_etcd_values (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *endpoints = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *value = NULL;
    g_autofree gchar *etcd_dir = NULL;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    const gchar *args[] = { "--policy", NULL, NULL };
    GPid pid;

    if (vmr_harness_skipped (h) || !vmr_harness_require (h, "etcd", "etcdctl", NULL))
        return;
    etcd_dir = vmr_harness_path (h, "etcd");
    g_assert_cmpint (g_mkdir_with_parents (etcd_dir, 0700), ==, 0);
    vmr_etcd_cluster_start (&etcd, etcd_dir);
    endpoints = vmr_etcd_cluster_endpoints (&etcd);
    policy = g_strdup_printf ("[cluster]\nname = nest\netcd = %s\nhost = here\nmax-parallel = 1\n",
                              endpoints);
    args[1] = vmr_harness_write_policy (h, policy);
    vmr_harness_restart_daemon (h, args);
    g_free ((gchar *) args[1]);
    pid = h->daemon_pid;
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 33);

    /* under 1.5 MiB, etcd's largest request */
    value = write_deep (h, "deep-value", "{\"host\": \"elsewhere\", \"source\": ", MIB, FALSE);
    etcd_put (endpoints, "/virt-mirror/nest/queue/elsewhere/vmr-1", value);
    etcd_put (endpoints, "/virt-mirror/nest/evacuations/deep", value);

    id = copy_with_writes (h, &vm);
    assert_same_daemon (h, pid);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    g_test_add ("/nesting/sockets", Fixture, GROUP, vmr_peer_test_setup, test_sockets,
                fixture_teardown);
    g_test_add ("/nesting/qmp-monitor", Fixture, GROUP, vmr_peer_test_setup, test_qmp_monitor,
                fixture_teardown);
    g_test_add ("/nesting/job-record", Fixture, GROUP, vmr_peer_test_setup, test_job_record,
                fixture_teardown);
    g_test_add ("/nesting/etcd-values", Fixture, GROUP, vmr_peer_test_setup, test_etcd_values,
                fixture_teardown);
    return g_test_run ();
}
