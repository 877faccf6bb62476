#define G_LOG_DOMAIN "vmr-test"

/*
 * A daemon that dies (SIGKILL, as a crash would) while its jobs run, and is
 * started again on the same socket and state dir. It lists the jobs that
 * had not ended as orphaned until their domain is attached again, then asks
 * QEMU what became of each copy: one still running goes on, one in sync
 * waits for its pivot, one that ended meanwhile ends with it and QEMU is
 * cleaned up, one that had not started starts under the admission limits.
 * A queued job whose destination someone else wrote meanwhile fails with a
 * line, and the file keeps its bytes: the daemon removes only what it made.
 * An orphaned job can be cancelled, which leaves QEMU alone; every other
 * command on it is refused. A SIGTERM leaves the copies running in QEMU as a
 * crash does. QEMU's side is checked on the test's own monitor, and the bytes
 * after QEMU quits: the guest writes through its disk before the daemon
 * dies, while it is away and after it is back, and the disk the VM ends on
 * must hold every write.
 */

#include "harness.h"

#include <string.h>

/*
 * QEMU's mirror copies its first buffer (16 MiB) at once and then keeps to
 * its limit: at 1 MiB/s this disk copies for about 16 s, long enough for a
 * crash and a restart
 */
#define IMAGE_SIZE (32 * 1024 * 1024)
#define MIB        (1024 * 1024)
/* how long the daemon gets to clean up QEMU once a job ended */
#define CLEANUP_TIMEOUT_S 20
/* guest writes in each phase */
#define WRITES 40

/* starts a rate-limited migration of disk0 and waits until it copies */
static gchar *
start_slow_migration (VmrHarness *h, VmrHarnessVm *vm)
{
    g_autofree gchar *id = vmr_harness_start_slow_migration (h, vm, NULL);
    g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

    g_assert_true (vmr_harness_json_bool (job, "created-destination"));
    return g_steal_pointer (&id);
}

static gboolean
state_is_final (const gchar *state)
{
    return g_str_equal (state, "completed") || g_str_equal (state, "failed")
           || g_str_equal (state, "cancelled");
}

/* the job @id of a `jobs --json` list, a new reference */
static JsonObject *
listed_job (JsonNode *jobs, const gchar *id)
{
    JsonArray *array = vmr_harness_json_node_array (jobs);

    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_harness_json_string (job, "id"), id) == 0)
            return json_object_ref (job);
    }
    vmr_fail ("job %s is not in the list of jobs", id);
}

/*
 * After the restart, before any attach: `jobs --json` lists @id in @state,
 * orphaned, and so does the control socket; the table lists it too
 */
static void
assert_listed_orphan (VmrHarness *h, const gchar *id, const gchar *state, VmrHarnessVm *vm)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);
    g_autoptr (JsonObject) listed = listed_job (jobs, id);
    g_autoptr (JsonObject) queried = vmr_harness_get_job (h, id);
    g_autoptr (VmrCliResult) table = vmr_harness_cli (h, "jobs", NULL);

    g_assert_cmpstr (vmr_json_job_state (listed), ==, state);
    g_assert_true (vmr_json_job_orphaned (listed));
    g_assert_cmpstr (vmr_harness_json_string (listed, "domain"), ==, "vm");
    if (vm != NULL)
        g_assert_cmpstr (vmr_harness_json_string (listed, "destination"), ==, vm->dest);
    g_assert_cmpstr (vmr_json_job_state (queried), ==, state);
    g_assert_true (vmr_json_job_orphaned (queried));
    vmr_cli_result_assert_ok (table);
    g_assert_nonnull (strstr (table->out, id));
}

/* QEMU's block job @id, which must exist */
static JsonObject *
get_block_job (VmrHarness *h, const gchar *id)
{
    JsonObject *job = vmr_harness_find_block_job (h, id);

    if (job == NULL)
        vmr_fail ("QEMU has no block job %s", id);
    return job;
}

/* waits until QEMU's block job @id has @status, e.g. "concluded" */
static void
wait_block_job_status (VmrHarness *h, const gchar *id, const gchar *status)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonObject) job = get_block_job (h, id);

        if (g_str_equal (vmr_harness_json_string (job, "status"), status))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("QEMU's block job %s is still %s, waiting for %s", id,
                      vmr_harness_json_string (job, "status"), status);
        g_usleep (100 * 1000);
    }
}

/*
 * cancels QEMU's mirror @id through QMP, as someone else would, and waits
 * until it concluded (the daemon's mirrors are not dismissed automatically);
 * with @dismiss, dismisses it too, so that QEMU has no trace of it
 */
static void
cancel_in_qemu (VmrHarness *h, const gchar *id, gboolean dismiss)
{
    g_autoptr (JsonObject) cancel_args = json_object_new ();
    g_autoptr (JsonObject) dismiss_args = json_object_new ();
    g_autoptr (JsonNode) cancel_reply = NULL;
    g_autoptr (JsonNode) dismiss_reply = NULL;

    json_object_set_string_member (cancel_args, "device", id);
    json_object_set_boolean_member (cancel_args, "force", TRUE);
    cancel_reply = vmr_harness_qmp (h, "block-job-cancel", cancel_args);
    wait_block_job_status (h, id, "concluded");
    if (!dismiss)
        return;
    json_object_set_string_member (dismiss_args, "id", id);
    dismiss_reply = vmr_harness_qmp (h, "job-dismiss", dismiss_args);
    vmr_harness_assert_no_block_jobs (h);
}

/*
 * QEMU's mirror @id copies on without the daemon: running, not yet in sync,
 * at the speed it was given. (Its offset may hold still for a while: the
 * mirror copies its first buffer at once and then waits out the limit.)
 */
static void
assert_copy_runs_alone (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) job = get_block_job (h, id);

    g_assert_cmpstr (vmr_harness_json_string (job, "type"), ==, "mirror");
    g_assert_cmpstr (vmr_harness_json_string (job, "status"), ==, "running");
    g_assert_false (vmr_harness_json_bool (job, "ready"));
    g_assert_false (vmr_harness_json_bool (job, "paused"));
    g_assert_cmpint (vmr_harness_json_int (job, "speed"), ==, 1 * MIB);
}

/* polls the job until it is in a final state; returns it */
static JsonObject *
wait_ended (VmrHarness *h, const gchar *id)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

        if (state_is_final (vmr_json_job_state (job)))
            return g_steal_pointer (&job);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s is still %s after %d s, waiting for it to end", id,
                      vmr_json_job_state (job), VMR_HARNESS_JOB_TIMEOUT_S);
        g_usleep (100 * 1000);
    }
}

/* TRUE when a block node has @path open */
static gboolean
node_has_file (VmrHarness *h, const gchar *path)
{
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    JsonArray *array = vmr_harness_json_node_array (nodes);
    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *node = vmr_harness_json_element (array, i);
        g_autofree gchar *file = vmr_harness_node_file (h, vmr_json_get_string (node, "file"));

        if (g_strcmp0 (file, path) == 0)
            return TRUE;
    }
    return FALSE;
}

/*
 * Once a job ended, the daemon cleans up QEMU in its own time: waits until
 * no block job is left and no node has @dest open, then asserts both
 */
static void
wait_qemu_cleaned (VmrHarness *h, const gchar *dest)
{
    gint64 deadline = g_get_monotonic_time () + CLEANUP_TIMEOUT_S * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-block-jobs", NULL);

        if (json_array_get_length (vmr_harness_json_node_array (jobs)) == 0
            && !node_has_file (h, dest))
            break;
        if (g_get_monotonic_time () > deadline)
            break;
        g_usleep (100 * 1000);
    }
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_node_released (h, dest);
}

/*
 * a copy still running when the daemon died (SIGKILL, as a crash) or
 * stopped (SIGTERM, as an upgrade or `systemctl stop` does: copies are left
 * running in QEMU) goes on after the restart and completes
 */
static void
test_copying (VmrHarness *h, gconstpointer user_data)
{
    gboolean sigterm = GPOINTER_TO_INT (user_data);
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) adopted = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) completed = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e57);
    id = start_slow_migration (h, &vm);
    g_assert_cmpstr (id, ==, "vmr-1");
    vmr_harness_writer_write (vm.writer, WRITES);

    if (sigterm)
        vmr_harness_stop_daemon (h);
    else
        vmr_harness_kill_daemon (h);
    vmr_harness_assert_job_record (h, id, "copying");
    assert_copy_runs_alone (h, id);
    vmr_harness_assert_disk_on (h, "disk0", vm.source);
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_restart_daemon (h, NULL);
    assert_listed_orphan (h, id, "copying", &vm);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 1);

    vmr_harness_attach (h, "vm");
    adopted = vmr_harness_wait_adopted (h, id);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_assert_cmpstr (vmr_json_job_state (adopted), ==, "copying");
    g_assert_cmpstr (vmr_harness_json_string (adopted, "destination"), ==, vm.dest);
    /* the copy goes on where it was: QEMU's job is the same one */
    block_job = get_block_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "running");

    unlimited = vmr_harness_job_command (h, "set-speed", id, "0");
    g_assert_cmpint (vmr_harness_json_int (unlimited, "speed"), ==, 0);
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_find_block_job (h, id);
    /* the copy may already be over */
    if (block_job != NULL)
        g_assert_cmpint (vmr_harness_json_int (block_job, "speed"), ==, 0);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_false (vmr_json_job_orphaned (completed));
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* a --manual-pivot job in sync when the daemon died stays in sync until `pivot` */
static void
test_synced_manual (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) adopted = NULL;
    g_autoptr (JsonObject) still = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (JsonArray) samples = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e57);
    id = vmr_harness_migrate (h, "vm", "disk0", vm.dest, "--manual-pivot", NULL);
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_kill_daemon (h);
    vmr_harness_assert_job_record (h, id, "synced");
    block_job = get_block_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "ready");
    /* in sync without a daemon: QEMU still mirrors every write */
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_restart_daemon (h, NULL);
    assert_listed_orphan (h, id, "synced", &vm);

    vmr_harness_attach (h, "vm");
    adopted = vmr_harness_wait_adopted (h, id);
    g_assert_cmpstr (vmr_json_job_state (adopted), ==, "synced");
    g_assert_true (vmr_harness_json_bool (adopted, "manual-pivot"));

    /* still a manual pivot: nothing happens by itself, in two of the daemon's decisions */
    samples = vmr_harness_wait_job_samples (h, id, 2);
    vmr_harness_assert_samples_state (samples, "synced");
    still = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_json_job_state (still), ==, "synced");
    g_clear_pointer (&block_job, json_object_unref);
    block_job = get_block_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "ready");
    vmr_harness_assert_disk_on (h, "disk0", vm.source);
    vmr_harness_writer_write (vm.writer, WRITES);

    pivoted = vmr_harness_job_command (h, "pivot", id, NULL);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* waits until the created destination @path is removed */
static void
wait_removed (const gchar *path)
{
    gint64 deadline = g_get_monotonic_time () + CLEANUP_TIMEOUT_S * G_USEC_PER_SEC;

    while (g_file_test (path, G_FILE_TEST_EXISTS) && g_get_monotonic_time () < deadline)
        g_usleep (100 * 1000);
    g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
}

/*
 * The daemon dies mid-copy and the copy is cancelled through QMP meanwhile
 * (and dismissed too, with @dismiss: gone from QEMU), the guest writing
 * before and meanwhile; the daemon comes back and the domain is attached
 * again. Returns the job once it ended.
 */
static JsonObject *
cancel_while_away (VmrHarness *h, VmrHarnessVm *vm, const gchar *id, gboolean dismiss)
{
    JsonObject *ended;

    vmr_harness_writer_write (vm->writer, WRITES);
    vmr_harness_kill_daemon (h);
    cancel_in_qemu (h, id, dismiss);
    vmr_harness_writer_write (vm->writer, WRITES);

    vmr_harness_restart_daemon (h, NULL);
    assert_listed_orphan (h, id, "copying", vm);
    vmr_harness_attach (h, "vm");
    ended = wait_ended (h, id);
    g_test_message ("job %s ended %s: %s", id, vmr_json_job_state (ended),
                    vmr_json_job_reason (ended));
    g_assert_false (vmr_json_job_orphaned (ended));
    g_assert_nonnull (vmr_json_job_reason (ended));
    return ended;
}

/* a copy cancelled in QEMU while no daemon runs, and what the job becomes */
typedef struct {
    gboolean dismissed;       /* dismissed too: gone from QEMU */
    const gchar *final_state; /* the job's end once its domain is back */
    const gchar *reason;      /* a part of the job's reason, or NULL */
} AwayCancelCase;

/* QEMU reports the cancel as its error "Operation canceled": still a cancel */
static const AwayCancelCase cancelled_meanwhile = { FALSE, "cancelled", "outside virt-mirror" };
/* the copy is gone when the daemon comes back: the job fails */
static const AwayCancelCase gone_meanwhile = { TRUE, "failed", NULL };

/*
 * the copy is cancelled in QEMU while no daemon runs: once its domain is
 * back the job ends without completing, QEMU is cleaned up, the VM stays on
 * its source, and the destination the job created is removed
 */
static void
test_cancelled_meanwhile (VmrHarness *h, gconstpointer user_data)
{
    const AwayCancelCase *c = user_data;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) ended = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e57);
    id = start_slow_migration (h, &vm);
    ended = cancel_while_away (h, &vm, id, c->dismissed);
    g_assert_cmpstr (vmr_json_job_state (ended), ==, c->final_state);
    if (c->reason != NULL)
        g_assert_nonnull (strstr (vmr_json_job_reason (ended), c->reason));
    vmr_harness_assert_job_record (h, id, c->final_state);

    wait_qemu_cleaned (h, vm.dest);
    /* the daemon created the destination, so it removes it */
    wait_removed (vm.dest);
    vmr_harness_assert_daemon_serving (h);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/*
 * the copy is cut over through QMP (job-complete) while no daemon runs:
 * once its domain is back the job is completed, and the source released
 */
static void
test_completed_meanwhile (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) complete_args = json_object_new ();
    g_autoptr (JsonNode) complete_reply = NULL;
    g_autoptr (JsonObject) ended = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e57);
    id = vmr_harness_migrate (h, "vm", "disk0", vm.dest, "--manual-pivot", NULL);
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_kill_daemon (h);
    vmr_harness_writer_write (vm.writer, WRITES);
    json_object_set_string_member (complete_args, "id", id);
    complete_reply = vmr_harness_qmp (h, "job-complete", complete_args);
    wait_block_job_status (h, id, "concluded");
    vmr_harness_assert_disk_on (h, "disk0", vm.dest);
    /* on its destination now: these writes go there only */
    vmr_harness_writer_write (vm.writer, WRITES);

    vmr_harness_restart_daemon (h, NULL);
    assert_listed_orphan (h, id, "synced", &vm);
    vmr_harness_attach (h, "vm");
    ended = wait_ended (h, id);
    g_assert_cmpstr (vmr_json_job_state (ended), ==, "completed");
    g_assert_false (vmr_json_job_orphaned (ended));
    vmr_harness_writer_write (vm.writer, WRITES);
    wait_qemu_cleaned (h, vm.source);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* the policy of /restart/queued: one bulk copy at a time */
#define QUEUED_POLICY      "[defaults]\nmax-parallel = 1\nmax-parallel-per-iothread = 0\n"
#define QUEUED_SIZE0       (16 * MIB)
#define QUEUED_SIZE1       (8 * MIB)
#define ALL_DONE_TIMEOUT_S 80

/* two disks, disk0 copying slowly, disk1 queued behind it by max-parallel = 1 */
typedef struct {
    gchar *sources[2];
    gchar *expected[2];
    gchar *dests[2];
    gchar *ids[2];
    gchar *policy;
} QueuedPair;

static void
queued_pair_clear (QueuedPair *q)
{
    for (guint d = 0; d < 2; d++) {
        g_free (q->sources[d]);
        g_free (q->expected[d]);
        g_free (q->dests[d]);
        g_free (q->ids[d]);
    }
    g_free (q->policy);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (QueuedPair, queued_pair_clear)

static const gchar *const queued_disk_ids[] = { "disk0", "disk1" };

/* starts QEMU and the daemon, queues disk1 behind disk0's slow copy, then kills the daemon */
static void
queue_and_crash (VmrHarness *h, QueuedPair *q)
{
    const gsize sizes[] = { QUEUED_SIZE0, QUEUED_SIZE1 };
    VmrHarnessDisk disks[2];
    g_autoptr (JsonObject) queued = NULL;
    g_autoptr (JsonObject) first = NULL;

    for (guint d = 0; d < 2; d++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", d);
        g_autofree gchar *dest_name = g_strdup_printf ("dest%u.raw", d);

        q->sources[d] = vmr_harness_create_image (h, name, "raw", sizes[d], 0x9e0 + d);
        q->expected[d] = vmr_harness_expected_path (q->sources[d]);
        q->dests[d] = vmr_harness_path (h, dest_name);
        disks[d] = (VmrHarnessDisk){ queued_disk_ids[d], q->sources[d], "raw", NULL };
    }
    q->policy = vmr_harness_write_policy (h, QUEUED_POLICY);
    vmr_harness_start_qemu (h, disks, 2);
    vmr_harness_start_daemon (h, "--policy", q->policy, NULL);
    vmr_harness_attach (h, "vm");

    q->ids[0] = vmr_harness_migrate (h, "vm", "disk0", q->dests[0], "--speed",
                                     VMR_HARNESS_SLOW_SPEED, NULL);
    first = vmr_harness_wait_job (h, q->ids[0], "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    q->ids[1] = vmr_harness_migrate (h, "vm", "disk1", q->dests[1], NULL);
    queued = vmr_harness_get_job (h, q->ids[1]);
    g_assert_cmpstr (vmr_json_job_state (queued), ==, "queued");
    g_assert_cmpstr (vmr_harness_json_string (queued, "waiting-for"), ==, "max-parallel");

    vmr_harness_kill_daemon (h);
    vmr_harness_assert_job_record (h, q->ids[0], "copying");
    vmr_harness_assert_job_record (h, q->ids[1], "queued");
    assert_copy_runs_alone (h, q->ids[0]);
    g_assert_null (vmr_harness_find_block_job (h, q->ids[1]));
}

/* the daemon again, with the policy it had; the domain attached again; the first copy goes on */
static void
restart_and_attach (VmrHarness *h, QueuedPair *q)
{
    const gchar *restart_args[] = { "--policy", q->policy, NULL };
    g_autoptr (JsonObject) first = NULL;

    vmr_harness_restart_daemon (h, restart_args);
    assert_listed_orphan (h, q->ids[0], "copying", NULL);
    assert_listed_orphan (h, q->ids[1], "queued", NULL);
    /* without its domain, nothing starts */
    g_assert_null (vmr_harness_find_block_job (h, q->ids[1]));
    vmr_harness_attach (h, "vm");
    first = vmr_harness_wait_adopted (h, q->ids[0]);
    g_assert_cmpstr (vmr_json_job_state (first), ==, "copying");
}

/*
 * a job still queued behind max-parallel when the daemon died waits again
 * after the restart and starts once the copy ahead of it is in sync
 */
static void
test_queued (VmrHarness *h, gconstpointer user_data)
{
    g_auto (QueuedPair) q = { 0 };
    g_autoptr (JsonObject) first = NULL;
    g_autoptr (JsonObject) second = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    gint64 deadline;
    gboolean done = FALSE;

    queue_and_crash (h, &q);
    restart_and_attach (h, &q);
    second = vmr_harness_wait_adopted (h, q.ids[1]);
    /* still held by the limit while the first copies */
    g_assert_cmpstr (vmr_json_job_state (second), ==, "queued");
    g_assert_null (vmr_harness_find_block_job (h, q.ids[1]));

    unlimited = vmr_harness_job_command (h, "set-speed", q.ids[0], "0");
    deadline = g_get_monotonic_time () + ALL_DONE_TIMEOUT_S * G_USEC_PER_SEC;
    while (!done) {
        g_autoptr (JsonNode) reply = vmr_harness_qmp (h, "query-block-jobs", NULL);
        JsonArray *array = vmr_harness_json_node_array (reply);
        guint bulk = 0;

        /* never more than one copy not yet in sync */
        for (guint i = 0; i < json_array_get_length (array); i++) {
            JsonObject *block_job = vmr_harness_json_element (array, i);

            if (!vmr_json_bool_or (block_job, "ready", FALSE)
                && g_strcmp0 (vmr_harness_json_string (block_job, "status"), "running") == 0)
                bulk++;
        }
        if (bulk > 1)
            vmr_fail ("%u mirror jobs copy at once in QEMU, the limit is 1", bulk);
        done = TRUE;
        for (guint d = 0; d < 2; d++) {
            g_autoptr (JsonObject) job = vmr_harness_get_job (h, q.ids[d]);
            const gchar *state = vmr_json_job_state (job);

            if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
                vmr_fail ("job %s ended %s (reason: %s)", q.ids[d], state,
                          vmr_json_job_reason (job));
            done = done && g_str_equal (state, "completed");
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the jobs did not both complete in %d s", ALL_DONE_TIMEOUT_S);
        g_usleep (100 * 1000);
    }

    /* the second started only once the first was in sync */
    g_clear_pointer (&second, json_object_unref);
    first = vmr_harness_get_job (h, q.ids[0]);
    second = vmr_harness_get_job (h, q.ids[1]);
    g_assert_cmpint (vmr_json_job_time_of (second, "copying"), >=,
                     vmr_json_job_time_of (first, "synced"));

    for (guint d = 0; d < 2; d++) {
        vmr_harness_assert_disk_on (h, queued_disk_ids[d], q.dests[d]);
        vmr_harness_assert_node_released (h, q.sources[d]);
        vmr_harness_assert_job_record (h, q.ids[d], "completed");
    }
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    for (guint d = 0; d < 2; d++)
        vmr_harness_assert_image_equals (q.dests[d], "raw", q.expected[d]);
}

/*
 * issue 29's first finding: a file written where a queued job's destination
 * was to be made, as another host sharing the storage might, while the
 * daemon was down. The restarted daemon removes nothing it did not make:
 * the file keeps its bytes, the job fails with one line naming it, and the
 * copy ahead of it completes
 */
static void
test_queued_taken (VmrHarness *h, gconstpointer user_data)
{
    static const gchar precious[] = "written by another host sharing the storage\n";
    g_auto (QueuedPair) q = { 0 };
    g_autoptr (JsonObject) second = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) first = NULL;
    g_autofree gchar *kept = NULL;
    g_autofree gchar *reason = NULL;

    queue_and_crash (h, &q);
    g_assert_true (g_file_set_contents (q.dests[1], precious, -1, NULL));
    restart_and_attach (h, &q);
    second = vmr_harness_wait_adopted (h, q.ids[1]);
    /* the file first: it stays, whatever became of the job */
    if (!g_file_get_contents (q.dests[1], &kept, NULL, NULL))
        vmr_fail ("%s, which the daemon did not make, is gone", q.dests[1]);
    g_assert_cmpstr (kept, ==, precious);
    g_assert_cmpstr (vmr_json_job_state (second), ==, "failed");
    reason = g_strdup_printf ("destination %s exists; pass --reuse to copy onto it", q.dests[1]);
    g_assert_cmpstr (vmr_json_job_reason (second), ==, reason);
    g_assert_null (vmr_harness_find_block_job (h, q.ids[1]));

    unlimited = vmr_harness_job_command (h, "set-speed", q.ids[0], "0");
    first = vmr_harness_wait_job (h, q.ids[0], "completed", ALL_DONE_TIMEOUT_S);
    vmr_harness_assert_job_record (h, q.ids[1], "failed");
    vmr_harness_assert_disk_on (h, "disk1", q.sources[1]);
    vmr_harness_assert_migrated (h, q.ids[0], "disk0", q.sources[0], q.dests[0], "raw",
                                 q.expected[0]);
    vmr_harness_assert_image_equals (q.sources[1], "raw", q.expected[1]);
    g_clear_pointer (&kept, g_free);
    g_assert_true (g_file_get_contents (q.dests[1], &kept, NULL, NULL));
    g_assert_cmpstr (kept, ==, precious);
}

/*
 * without its domain, an orphaned job can be cancelled, which leaves QEMU
 * alone, and every other command on it is refused
 */
static void
test_orphan_cancel (VmrHarness *h, gconstpointer user_data)
{
    /*
     * every command but cancel waits for the domain, and the refusal says so
     */
    static const struct {
        const gchar *command;
        const gchar *arg;
        gboolean names_domain;
    } refused[] = {
        { "pause", NULL, TRUE },
        { "set-speed", "0", TRUE },
        { "resume", NULL, TRUE },
        { "pivot", NULL, TRUE },
    };
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (VmrCliResult) cancel = NULL;
    g_autoptr (JsonObject) still = NULL;
    g_autoptr (JsonObject) cancelled = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x4e57);
    id = start_slow_migration (h, &vm);

    vmr_harness_kill_daemon (h);
    vmr_harness_restart_daemon (h, NULL);
    assert_listed_orphan (h, id, "copying", &vm);

    for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
        g_autoptr (VmrCliResult) result
            = vmr_harness_cli (h, refused[i].command, id, refused[i].arg, NULL);

        vmr_cli_result_assert_error (result, 1);
        if (refused[i].names_domain && strstr (result->err, "domain") == NULL)
            vmr_fail ("`%s %s` refused without saying it waits for its domain: %s",
                      refused[i].command, id, result->err);
    }
    still = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_json_job_state (still), ==, "copying");
    g_assert_true (vmr_json_job_orphaned (still));
    /* none of them reached QEMU */
    assert_copy_runs_alone (h, id);

    cancel = vmr_harness_cli (h, "cancel", id, NULL);
    vmr_cli_result_assert_ok (cancel);
    cancelled = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_job_record (h, id, "cancelled");

    /* QEMU's copy is untouched: still running, at its speed, the VM on its source */
    assert_copy_runs_alone (h, id);
    /* and the file it writes to is still there */
    g_assert_true (g_file_test (vm.dest, G_FILE_TEST_IS_REGULAR));
    vmr_harness_assert_disk_on (h, "disk0", vm.source);
    vmr_harness_assert_daemon_serving (h);

    /* the test cleans up QEMU itself */
    cancel_in_qemu (h, id, TRUE);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/restart/copying", GINT_TO_POINTER (FALSE), test_copying);
    VMR_HARNESS_ADD ("/restart/sigterm", GINT_TO_POINTER (TRUE), test_copying);
    VMR_HARNESS_ADD ("/restart/synced-manual", NULL, test_synced_manual);
    VMR_HARNESS_ADD ("/restart/cancelled-meanwhile", &cancelled_meanwhile,
                     test_cancelled_meanwhile);
    VMR_HARNESS_ADD ("/restart/completed-meanwhile", NULL, test_completed_meanwhile);
    VMR_HARNESS_ADD ("/restart/gone", &gone_meanwhile, test_cancelled_meanwhile);
    VMR_HARNESS_ADD_NO_DAEMON ("/restart/queued", NULL, test_queued);
    VMR_HARNESS_ADD_NO_DAEMON ("/restart/queued-destination-taken", NULL, test_queued_taken);
    VMR_HARNESS_ADD ("/restart/orphan-cancel", NULL, test_orphan_cancel);
    return g_test_run ();
}
