#define G_LOG_DOMAIN "vmr-test"

/*
 * What the documentation promises and no other test holds: the control
 * socket is root's alone (mode 0600); a second daemon on the same socket
 * refuses to start and the first keeps serving; the destination is opened
 * with the source's cache mode; a reused raw file larger than the source is
 * copied onto without the guest seeing a larger disk, and its tail is left
 * alone; `policy check` from the CLI; `migrate --wait` interrupted by SIGINT
 * stops waiting, not the copy; finished jobs are kept as the policy says
 * (keep-finished-count, keep-finished), then gone from `jobs` and from disk.
 */

#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "guest-disk.h"
#include "harness.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
#define WRITES     30

/* operations.md and protocol.md: the control socket is created mode 0600 */
static void
test_socket_mode (VmrHarness *h, gconstpointer user_data)
{
    GStatBuf st;

    g_assert_cmpint (g_stat (h->socket, &st), ==, 0);
    g_assert_true (S_ISSOCK (st.st_mode));
    g_assert_cmpint (st.st_mode & 07777, ==, 0600);
    g_assert_cmpint (st.st_uid, ==, getuid ());
}

/*
 * operations.md: the daemon refuses to start when another daemon serves the
 * socket; the first one keeps its socket and keeps serving
 */
static void
test_second_daemon (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) second = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    GStatBuf before, after;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x2d);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    g_assert_cmpint (g_stat (h->socket, &before), ==, 0);

    second = vmr_harness_run_daemon (h, "--no-libvirt", NULL);
    g_test_message ("second daemon: status %d, stderr: %s", second->status, second->err);
    g_assert_cmpint (second->status, >, 0);
    if (strstr (second->err, h->socket) == NULL)
        vmr_fail ("the second daemon's refusal does not name the socket: %s", second->err);

    /* the same socket file, still answering; the copy goes on */
    g_assert_cmpint (g_stat (h->socket, &after), ==, 0);
    g_assert_cmpuint (after.st_ino, ==, before.st_ino);
    vmr_harness_assert_daemon_serving (h);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_json_job_state (job), ==, "copying");
    vmr_harness_writer_write (vm.writer, WRITES);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "set-speed", id, "0");
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* the cache object of the node @node_name in query-named-block-nodes, a new reference */
static JsonObject *
node_cache (VmrHarness *h, const gchar *node_name)
{
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    JsonArray *array = vmr_harness_json_node_array (nodes);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *node = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_json_get_string (node, "node-name"), node_name) == 0)
            return json_object_ref (vmr_harness_json_object (node, "cache"));
    }
    vmr_fail ("QEMU has no block node %s", node_name);
}

/*
 * design.md: the destination is opened with the source's cache mode at both
 * levels. A source opened with cache.direct=on gives a destination node
 * (and its protocol node) with cache.direct on, in sync and after the pivot.
 */
static void
test_cache_mode (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *dst_node = NULL;
    g_autofree gchar *dst_file_node = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    VmrHarnessDisk disk = { .id = "disk0", .format = "raw", .scsi = TRUE, .cache_direct = TRUE };
    const gchar *nodes[2];
    const gchar *const source_nodes[2] = { "test-fmt0", "test-file0" };

    source = vmr_harness_create_image (h, "source.raw", "raw", IMAGE_SIZE, 0xcac);
    if (!vmr_guest_disk_takes_o_direct (source)) {
        vmr_harness_skip (h, "the test directory does not take O_DIRECT (cache.direct=on)");
        return;
    }
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    writer = vmr_harness_writer_new (h, "disk0", expected, 0xcac);
    vmr_harness_attach (h, "vm");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--manual-pivot", NULL);
    vmr_harness_writer_write (writer, WRITES);
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    /* the daemon names the destination's nodes after the job (design.md) */
    dst_node = g_strdup_printf ("%s-dst", id);
    dst_file_node = g_strdup_printf ("%s-dst-file", id);
    nodes[0] = dst_node;
    nodes[1] = dst_file_node;
    /* level by level: the format node as the source's format node, the file node as its file node
     */
    for (guint i = 0; i < G_N_ELEMENTS (nodes); i++) {
        g_autoptr (JsonObject) cache = node_cache (h, nodes[i]);
        g_autoptr (JsonObject) source_cache = node_cache (h, source_nodes[i]);

        g_test_message ("%s: direct %d no-flush %d; %s: direct %d no-flush %d", nodes[i],
                        vmr_harness_json_bool (cache, "direct"),
                        vmr_harness_json_bool (cache, "no-flush"), source_nodes[i],
                        vmr_harness_json_bool (source_cache, "direct"),
                        vmr_harness_json_bool (source_cache, "no-flush"));
        if (vmr_harness_json_bool (cache, "direct")
                != vmr_harness_json_bool (source_cache, "direct")
            || vmr_harness_json_bool (cache, "no-flush")
                   != vmr_harness_json_bool (source_cache, "no-flush"))
            vmr_fail ("the destination node %s has another cache mode than %s", nodes[i],
                      source_nodes[i]);
    }
    /* the level that matters, the file's, is O_DIRECT on both sides */
    {
        g_autoptr (JsonObject) cache = node_cache (h, dst_file_node);

        g_assert_true (vmr_harness_json_bool (cache, "direct"));
    }
    vmr_harness_writer_write (writer, WRITES);
    pivoted = vmr_harness_job_command (h, "pivot", id, NULL);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    {
        g_autoptr (JsonObject) cache = node_cache (h, dst_file_node);

        g_assert_true (vmr_harness_json_bool (cache, "direct"));
    }
    vmr_harness_writer_write (writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* the virtual size of the device @qdev_id's image, from query-block */
static gint64
device_size (VmrHarness *h, const gchar *qdev_id)
{
    g_autoptr (JsonNode) blocks = vmr_harness_qmp (h, "query-block", NULL);
    JsonArray *array = vmr_harness_json_node_array (blocks);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *entry = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_json_get_string (entry, "qdev"), qdev_id) == 0)
            return vmr_harness_json_int (
                vmr_harness_json_object (vmr_harness_json_object (entry, "inserted"), "image"),
                "virtual-size");
    }
    vmr_fail ("query-block has no device %s", qdev_id);
}

/*
 * design.md: a reused raw file larger than the source is opened with the
 * raw driver's size, so the guest sees the same size; the copy fills the
 * first IMAGE_SIZE bytes and the rest of the file stays as it was
 */
static void
test_reuse_larger (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *tail = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) completed = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x1a);
    g_free (vmr_harness_create_file (h, "dest.raw", 2 * IMAGE_SIZE, 0x5a));
    tail = vmr_harness_create_file (h, "tail.raw", 2 * IMAGE_SIZE, 0x5a);
    g_assert_cmpint (device_size (h, "disk0"), ==, IMAGE_SIZE);

    id = vmr_harness_migrate (h, "vm", "disk0", vm.dest, "--reuse", "--speed",
                              VMR_HARNESS_SLOW_SPEED, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);
    job = vmr_harness_job_command (h, "set-speed", id, "0");
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_false (vmr_harness_json_bool (completed, "created-destination"));
    /* the guest's disk did not grow */
    g_assert_cmpint (device_size (h, "disk0"), ==, IMAGE_SIZE);
    vmr_harness_writer_write (vm.writer, WRITES);
    /*
     * QEMU names the node json:{"driver": "raw", "size": ..., "file": {...
     * "/dev/fdset/N" ...}}, the fd set in which the daemon passed the file
     */
    {
        g_autoptr (JsonNode) blocks = vmr_harness_qmp (h, "query-block", NULL);
        g_autofree gchar *text = json_to_string (blocks, FALSE);
        g_autofree gchar *size = g_strdup_printf ("\\\"size\\\": %d", IMAGE_SIZE);
        const gchar *fdset = strstr (text, "/dev/fdset/");
        g_autofree gchar *name
            = fdset != NULL
                  ? g_strndup (fdset, strlen ("/dev/fdset/")
                                          + strspn (fdset + strlen ("/dev/fdset/"), "0123456789"))
                  : NULL;
        g_autofree gchar *file = vmr_harness_node_file (h, name);

        if (g_strcmp0 (file, vm.dest) != 0 || strstr (text, size) == NULL)
            vmr_fail ("the disk is not on %s limited to %d bytes: %s", vm.dest, IMAGE_SIZE, text);
    }
    vmr_harness_assert_node_released (h, vm.source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_range_equals (vm.dest, vm.expected, 0, IMAGE_SIZE);
    vmr_harness_assert_range_equals (vm.dest, tail, IMAGE_SIZE, IMAGE_SIZE);
}

/* cli.md: `policy check [FILE]` runs locally: exit 0 "FILE: OK", 1 with FILE:LINE lines */
static void
test_policy_check (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *good = NULL;
    g_autofree gchar *bad = NULL;
    g_autofree gchar *missing = NULL;
    g_autofree gchar *ok_line = NULL;
    g_autofree gchar *where = NULL;
    g_autoptr (VmrCliResult) passed = NULL;
    g_autoptr (VmrCliResult) failed = NULL;
    g_autoptr (VmrCliResult) absent = NULL;
    g_autoptr (VmrCliResult) as_json = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *obj;

    good = vmr_harness_write_policy (h, "[defaults]\nspeed = 100M\n[domain web*]\nhold = 10s\n");
    passed = vmr_harness_cli (h, "policy", "check", good, NULL);
    vmr_cli_result_assert_ok (passed);
    ok_line = g_strdup_printf ("%s: OK", good);
    g_assert_nonnull (strstr (passed->out, ok_line));

    bad = vmr_harness_path (h, "bad.conf");
    g_assert_true (g_file_set_contents (
        bad, "[defaults]\nspeed = 100M\nhold = 5x\niops-throttle = many\n", -1, NULL));
    failed = vmr_harness_cli (h, "policy", "check", bad, NULL);
    g_assert_cmpint (failed->status, ==, 1);
    where = g_strdup_printf ("%s:3: [defaults] hold:", bad);
    if (strstr (failed->out, where) == NULL && strstr (failed->err, where) == NULL)
        vmr_fail ("`policy check` does not name %s: %s%s", where, failed->out, failed->err);
    g_clear_pointer (&where, g_free);
    where = g_strdup_printf ("%s:4: [defaults] iops-throttle:", bad);
    if (strstr (failed->out, where) == NULL && strstr (failed->err, where) == NULL)
        vmr_fail ("`policy check` does not name %s: %s%s", where, failed->out, failed->err);

    missing = vmr_harness_path (h, "missing.conf");
    absent = vmr_harness_cli (h, "policy", "check", missing, NULL);
    vmr_cli_result_assert_error (absent, 1);
    g_assert_nonnull (strstr (absent->err, missing));

    as_json = vmr_harness_cli (h, "--json", "policy", "check", bad, NULL);
    g_assert_cmpint (as_json->status, ==, 1);
    reply = vmr_cli_result_parse_json (as_json);
    obj = vmr_harness_json_node_object (reply);
    g_assert_cmpstr (vmr_harness_json_string (obj, "file"), ==, bad);
    g_assert_false (vmr_harness_json_bool (obj, "valid"));
    g_assert_cmpuint (json_array_get_length (vmr_harness_json_array (obj, "errors")), ==, 2);
    /* it asked no daemon: nothing changed there */
    vmr_harness_assert_daemon_serving (h);
}

/*
 * cluster.md: tls-creds beside an http:// endpoint is refused by `policy
 * check` at its line, one line, and by a reload, which keeps the policy in
 * force
 */
static void
test_policy_check_tls_http (VmrHarness *h, gconstpointer user_data)
{
    static const gchar text[] = "[cluster]\nname = prod-a\n"
                                "etcd = https://127.0.0.1:2379, http://127.0.0.1:2381\n"
                                "tls-creds = /etc/virt-mirror/etcd\n";
    g_autofree gchar *policy = NULL;
    g_autofree gchar *where = NULL;
    g_autoptr (VmrCliResult) checked = NULL;
    g_autoptr (VmrCliResult) reloaded = NULL;

    policy = vmr_harness_write_policy (h, "[defaults]\nspeed = 100M\n");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    g_assert_true (g_file_set_contents (policy, text, -1, NULL));
    checked = vmr_harness_cli (h, "policy", "check", policy, NULL);
    g_test_message ("policy check: %s%s", checked->out, checked->err);
    g_assert_cmpint (checked->status, ==, 1);
    where = g_strdup_printf ("%s:4: [cluster] tls-creds: set beside the endpoint "
                             "http://127.0.0.1:2381, which is plain HTTP",
                             policy);
    if (strstr (checked->out, where) == NULL && strstr (checked->err, where) == NULL)
        vmr_fail ("`policy check` does not say \"%s\": %s%s", where, checked->out, checked->err);
    g_assert_cmpuint (vmr_harness_count_lines (checked->out, "tls-creds")
                          + vmr_harness_count_lines (checked->err, "tls-creds"),
                      ==, 1);
    /* it is the daemon's file: a reload is refused, and the daemon goes on with the last one */
    reloaded = vmr_harness_cli (h, "reload", NULL);
    g_assert_cmpint (reloaded->status, ==, 1);
    g_assert_nonnull (strstr (reloaded->err, where));
    g_assert_nonnull (strstr (reloaded->err, "the policy is unchanged"));
    vmr_harness_assert_daemon_serving (h);
}

/*
 * cli.md: on SIGINT `migrate --wait` stops waiting, not the job, and exits 1
 * with one line saying the job keeps running
 */
static void
test_wait_sigint (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) waited = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) completed = NULL;
    VmrCliRun *run;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x5167);
    run = vmr_harness_cli_spawn (h, "migrate", "vm", "disk0", vm.dest, "--speed",
                                 VMR_HARNESS_SLOW_SPEED, "--wait", NULL);
    vmr_harness_wait_job_count (h, 1);
    job = vmr_harness_wait_job (h, "vmr-1", "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_cli_signal (run, SIGINT);
    waited = vmr_harness_cli_wait (run);
    vmr_cli_result_assert_error (waited, 1);
    if (strstr (waited->err, "interrupted: job vmr-1 keeps running") == NULL)
        vmr_fail ("the interrupted wait does not say the job keeps running: %s", waited->err);

    /* the copy goes on, in the daemon and in QEMU */
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_get_job (h, "vmr-1");
    g_assert_cmpstr (vmr_json_job_state (job), ==, "copying");
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "running");
    vmr_harness_writer_write (vm.writer, WRITES);
    unlimited = vmr_harness_job_command (h, "set-speed", "vmr-1", "0");
    completed = vmr_harness_wait_job (h, "vmr-1", "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, "vmr-1", "disk0", vm.source, vm.dest, "raw", vm.expected);
}

static gboolean
record_exists (VmrHarness *h, const gchar *id)
{
    g_autofree gchar *name = g_strconcat (id, ".json", NULL);
    g_autofree gchar *path = g_build_filename (h->state_dir, "jobs", name, NULL);

    return g_file_test (path, G_FILE_TEST_EXISTS);
}

/* migrates disk0 of "vm" to @to with guest writes, until it completed */
static gchar *
migrate_with_writes (VmrHarness *h, VmrHarnessVm *vm, const gchar *to)
{
    gchar *id = vmr_harness_migrate (h, "vm", "disk0", to, NULL);
    g_autoptr (JsonObject) job = NULL;

    vmr_harness_writer_write (vm->writer, WRITES);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_disk_on (h, "disk0", to);
    return id;
}

/*
 * policy.md: at most keep-finished-count finished jobs are kept, and none
 * longer than keep-finished; a dropped job is gone from `jobs`, `job show`
 * and the state directory, and its number is never given again
 */
static void
test_retention (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *policy = NULL;
    g_autofree gchar *second_dest = NULL;
    g_autofree gchar *third_dest = NULL;
    g_autofree gchar *third = NULL;
    g_autofree gchar *first = NULL;
    g_autofree gchar *second = NULL;
    g_autoptr (VmrCliResult) show = NULL;
    g_autoptr (VmrCliResult) reload = NULL;
    gint64 deadline;

    policy = vmr_harness_write_policy (h, "[defaults]\nkeep-finished-count = 1\n");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e);
    second_dest = vmr_harness_path (h, "second.raw");
    third_dest = vmr_harness_path (h, "third.raw");

    first = migrate_with_writes (h, &vm, vm.dest);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 1);
    g_assert_true (record_exists (h, first));
    /* the disk moves on: the second finished job pushes the first out */
    second = migrate_with_writes (h, &vm, second_dest);
    g_assert_cmpstr (second, !=, first);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 1);
    g_assert_false (record_exists (h, first));
    g_assert_true (record_exists (h, second));
    show = vmr_harness_cli (h, "job", first, NULL);
    g_assert_cmpint (show->status, !=, 0);
    if (strstr (show->err, "unknown job") == NULL)
        vmr_fail ("job show of a dropped job: %s", show->err);

    /* a reload with a time limit drops the last one about a second later */
    g_free (vmr_harness_write_policy (h, "[defaults]\nkeep-finished = 1s\n"));
    reload = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reload);
    deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;
    while (vmr_harness_count_jobs (h) > 0 && g_get_monotonic_time () < deadline)
        g_usleep (100 * 1000);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    g_assert_false (record_exists (h, second));

    /* after a restart the numbers go on from where they were */
    vmr_harness_stop_daemon (h);
    {
        const gchar *const extra[] = { "--policy", policy, NULL };

        vmr_harness_restart_daemon (h, extra);
    }
    vmr_harness_attach (h, "vm");
    third = migrate_with_writes (h, &vm, third_dest);
    g_assert_cmpstr (third, ==, "vmr-3");
    /* every write of the three copies is there */
    vmr_harness_assert_migrated (h, third, "disk0", second_dest, third_dest, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/promises/socket-mode", NULL, test_socket_mode);
    VMR_HARNESS_ADD ("/promises/second-daemon", NULL, test_second_daemon);
    VMR_HARNESS_ADD ("/promises/cache-mode", NULL, test_cache_mode);
    VMR_HARNESS_ADD ("/promises/reuse-larger", NULL, test_reuse_larger);
    VMR_HARNESS_ADD ("/promises/policy-check", NULL, test_policy_check);
    VMR_HARNESS_ADD_NO_DAEMON ("/promises/policy-check-tls-http", NULL, test_policy_check_tls_http);
    VMR_HARNESS_ADD ("/promises/wait-sigint", NULL, test_wait_sigint);
    VMR_HARNESS_ADD_NO_DAEMON ("/promises/retention", NULL, test_retention);
    return g_test_run ();
}
