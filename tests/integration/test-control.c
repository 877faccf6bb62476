#define G_LOG_DOMAIN "vmr-test"

/*
 * Controlling running jobs: cancel, manual pivot, pause/resume, speed
 * changes, copy-mode switches, detach while busy, QEMU dying under a copy, `migrate --wait` of
 * a job that is cancelled, and SIGTERM to the daemon mid-copy. The copies that
 * must still be running are rate-limited (QEMU's mirror copies its first
 * buffer at once and then keeps to the limit, so a 32 MiB disk at 1 MiB/s
 * stays in `copying` for about 16 s). The guest writes through its disk in
 * every phase a test goes through (copying, paused, synced, after the pivot
 * or the cancel), and the disk the VM ends on must hold every write.
 */

#include "harness.h"
#include "qmp-client.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
#define MIB        (1024 * 1024)
/* guest writes in each phase */
#define WRITES 40

/* cancel before READY: the VM stays on its source, the new file goes away */
static void
test_cancel (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) cancelled = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_true (vmr_harness_json_bool (job, "created-destination"));
    g_assert_true (g_file_test (vm.dest, G_FILE_TEST_EXISTS));
    vmr_harness_writer_write (vm.writer, WRITES);

    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "cancel", id, NULL);
    cancelled = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_assert_nonnull (vmr_json_job_reason (cancelled));
    g_assert_cmpstr (vmr_json_job_reason (cancelled), !=, "");
    vmr_harness_assert_job_record (h, id, "cancelled");
    /* the daemon created the destination, so it removes it, and QEMU let go of it */
    g_assert_false (g_file_test (vm.dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_node_released (h, vm.dest);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* --manual-pivot: the job waits in synced until `pivot ID` */
static void
test_manual_pivot (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) still = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (JsonArray) samples = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_migrate (h, "vm", "disk0", vm.dest, "--manual-pivot", NULL);
    vmr_harness_writer_write (vm.writer, WRITES);
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_true (vmr_harness_json_bool (synced, "manual-pivot"));
    /* writes in sync go to both sides until the pivot */
    vmr_harness_writer_write (vm.writer, WRITES);

    /* nothing happens by itself, in two of the daemon's decisions: still synced, QEMU's job
     * ready, the VM on its source */
    samples = vmr_harness_wait_job_samples (h, id, 2);
    vmr_harness_assert_samples_state (samples, "synced");
    still = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (still, "state"), ==, "synced");
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "ready");
    vmr_harness_assert_disk_on (h, "disk0", vm.source);

    vmr_harness_writer_write (vm.writer, WRITES);
    pivoted = vmr_harness_job_command (h, "pivot", id, NULL);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* pause shows in the job and in QEMU; resume lets the job complete */
static void
test_pause_resume (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) pause_reply = NULL;
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) later = NULL;
    g_autoptr (JsonObject) resume_reply = NULL;
    g_autoptr (JsonObject) resumed_block_job = NULL;
    g_autoptr (JsonObject) speed_reply = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (JsonArray) samples = NULL;
    JsonObject *progress;
    gint64 offset;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);

    pause_reply = vmr_harness_job_command (h, "pause", id, NULL);
    paused = vmr_harness_wait_job (h, id, "paused", VMR_HARNESS_JOB_TIMEOUT_S);
    /* QEMU flags the pause at once; its status follows at the job's next pause point */
    block_job = vmr_harness_get_block_job (h);
    g_assert_true (vmr_harness_json_bool (block_job, "paused"));

    /* a paused job stays paused, and copies nothing, in two of the daemon's decisions */
    samples = vmr_harness_wait_job_samples (h, id, 2);
    vmr_harness_assert_samples_state (samples, "paused");
    g_assert_cmpint (vmr_harness_json_int (vmr_harness_json_element (samples, 0), "processed"), ==,
                     vmr_harness_json_int (vmr_harness_json_element (samples, 1), "processed"));
    later = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (later, "state"), ==, "paused");
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_get_block_job (h);
    g_assert_true (vmr_harness_json_bool (block_job, "paused"));
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "paused");
    offset = vmr_harness_json_int (block_job, "offset");
    g_assert_cmpint (offset, <, IMAGE_SIZE);
    /* and QEMU's offset holds still until the daemon's next decision */
    g_clear_pointer (&samples, json_array_unref);
    samples = vmr_harness_wait_job_samples (h, id, 1);
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpint (vmr_harness_json_int (block_job, "offset"), ==, offset);
    vmr_harness_assert_disk_on (h, "disk0", vm.source);
    /* progress is QEMU's len and offset, which hold still while paused */
    progress = vmr_harness_json_object (later, "progress");
    g_assert_cmpint (vmr_harness_json_int (progress, "total"), ==, IMAGE_SIZE);
    g_assert_cmpint (vmr_harness_json_int (progress, "done"), ==, offset);
    g_assert_cmpint (vmr_harness_json_int (progress, "backlog"), ==, IMAGE_SIZE - offset);
    /* the guest writes on while the copy is paused: those blocks are copied after the resume */
    vmr_harness_writer_write (vm.writer, WRITES);

    resume_reply = vmr_harness_job_command (h, "resume", id, NULL);
    g_assert_cmpstr (vmr_harness_json_string (resume_reply, "state"), !=, "paused");
    resumed_block_job = vmr_harness_get_block_job (h);
    g_assert_false (vmr_harness_json_bool (resumed_block_job, "paused"));
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpint (vmr_harness_json_int (block_job, "speed"), ==, 1 * MIB);
    vmr_harness_writer_write (vm.writer, WRITES);
    /* the rest unlimited: at the slow speed it would take half a minute */
    speed_reply = vmr_harness_job_command (h, "set-speed", id, "0");
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* set-speed reaches QEMU's job; 0 lifts the limit and the copy finishes */
static void
test_set_speed (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) reply = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) completed = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpint (vmr_harness_json_int (job, "speed"), ==, 1 * MIB);
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpint (vmr_harness_json_int (block_job, "speed"), ==, 1 * MIB);
    /* writes during a throttled copy */
    vmr_harness_writer_write (vm.writer, WRITES);

    reply = vmr_harness_job_command (h, "set-speed", id, "2M");
    g_assert_cmpint (vmr_harness_json_int (reply, "speed"), ==, 2 * MIB);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpint (vmr_harness_json_int (job, "speed"), ==, 2 * MIB);
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpint (vmr_harness_json_int (block_job, "speed"), ==, 2 * MIB);
    vmr_harness_writer_write (vm.writer, WRITES);

    unlimited = vmr_harness_job_command (h, "set-speed", id, "0");
    g_assert_cmpint (vmr_harness_json_int (unlimited, "speed"), ==, 0);
    g_clear_pointer (&block_job, json_object_unref);
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpint (vmr_harness_json_int (block_job, "speed"), ==, 0);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* whether the test's QEMU has block-job-change (QEMU 8.2), as the daemon asks */
static gboolean
qemu_has_block_job_change (VmrHarness *h)
{
    g_autoptr (JsonNode) schema = vmr_harness_qmp (h, "query-qmp-schema", NULL);

    return vmr_qmp_schema_has_command (schema, "block-job-change");
}

/*
 * a QEMU without block-job-change (7.2): set-copy-mode is refused with one
 * line, the copy goes on in background mode and completes with the right bytes
 */
static void
copy_mode_refused (VmrHarness *h, VmrHarnessVm *vm, const gchar *id)
{
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) completed = NULL;

    refused = vmr_harness_cli (h, "set-copy-mode", id, "active", NULL);
    vmr_cli_result_assert_error (refused, 1);
    /* one line */
    g_assert_true (strchr (refused->err, '\n') == refused->err + strlen (refused->err) - 1);
    g_assert_nonnull (strstr (refused->err, "no block-job-change; QEMU 8.2 or later has it"));
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (job, "copy-mode"), ==, "background");
    g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "copying");
    vmr_harness_writer_write (vm->writer, WRITES);

    unlimited = vmr_harness_job_command (h, "set-speed", id, "0");
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (synced, "copy-mode"), ==, "background");
    vmr_harness_writer_write (vm->writer, WRITES);
    pivoted = vmr_harness_job_command (h, "pivot", id, NULL);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", vm->source, vm->dest, "raw", vm->expected);
}

/*
 * set-copy-mode active turns the running mirror write-blocking through
 * block-job-change: the job says so, QEMU's job becomes actively synced once
 * it converges, and the copy still completes with the right bytes
 */
static void
test_copy_mode (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) changed = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) block_job = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (VmrCliResult) confirmed = NULL;
    g_autoptr (VmrCliResult) backwards = NULL;
    g_autoptr (VmrCliResult) again = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, "--manual-pivot");
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (job, "copy-mode"), ==, "background");

    /* QEMU cannot go back to background: refused before it reaches QEMU */
    backwards = vmr_harness_cli (h, "set-copy-mode", id, "background", NULL);
    vmr_cli_result_assert_error (backwards, 1);
    g_assert_nonnull (strstr (backwards->err, "not supported"));

    if (!qemu_has_block_job_change (h)) {
        copy_mode_refused (h, &vm, id);
        return;
    }
    confirmed = vmr_harness_cli (h, "set-copy-mode", id, "active", NULL);
    vmr_cli_result_assert_ok (confirmed);
    g_assert_nonnull (strstr (confirmed->out, "copy mode set to write-blocking"));
    changed = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (changed, "copy-mode"), ==, "write-blocking");
    g_assert_cmpstr (vmr_harness_json_string (changed, "state"), ==, "copying");
    again = vmr_harness_cli (h, "set-copy-mode", id, "write-blocking", NULL);
    vmr_cli_result_assert_error (again, 1);
    /* a write-blocking mirror copies each guest write before it completes */
    vmr_harness_writer_write (vm.writer, WRITES);

    unlimited = vmr_harness_job_command (h, "set-speed", id, "0");
    synced = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (synced, "copy-mode"), ==, "write-blocking");
    /* only a write-blocking mirror is ever actively synced */
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "ready");
    g_assert_true (vmr_harness_json_bool (block_job, "actively-synced"));
    vmr_harness_writer_write (vm.writer, WRITES);

    pivoted = vmr_harness_job_command (h, "pivot", id, NULL);
    completed = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (completed, "copy-mode"), ==, "write-blocking");
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/* detach is refused while a job runs, and works once it ended */
static void
test_detach_busy (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (VmrCliResult) detached = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    g_autoptr (JsonNode) domains = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    refused = vmr_harness_cli (h, "detach", "vm", NULL);
    vmr_cli_result_assert_error (refused, 1);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "copying");
    domains = vmr_harness_cli_json (h, "domains", NULL);
    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (domains)), ==, 1);

    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "cancel", id, NULL);
    cancelled = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    detached = vmr_harness_cli (h, "detach", "vm", NULL);
    vmr_cli_result_assert_ok (detached);
    g_clear_pointer (&domains, json_node_unref);
    domains = vmr_harness_cli_json (h, "domains", NULL);
    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (domains)), ==, 0);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* QEMU dies mid-copy: the job fails with a reason, the daemon keeps serving */
static void
test_qemu_killed (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) failed = NULL;
    g_autoptr (JsonNode) domains = NULL;
    JsonObject *domain;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_assert_true (g_file_test (vm.dest, G_FILE_TEST_EXISTS));
    vmr_harness_kill_qemu (h);

    failed = vmr_harness_wait_job (h, id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_nonnull (vmr_json_job_reason (failed));
    g_assert_cmpstr (vmr_json_job_reason (failed), !=, "");
    vmr_harness_assert_job_record (h, id, "failed");
    vmr_harness_assert_daemon_serving (h);
    domains = vmr_harness_cli_json (h, "domains", NULL);
    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (domains)), ==, 1);
    domain = vmr_harness_json_element (vmr_harness_json_node_array (domains), 0);
    g_assert_false (vmr_harness_json_bool (domain, "connected"));
    /* the daemon created the destination: a copy that failed leaves nothing behind */
    g_assert_false (g_file_test (vm.dest, G_FILE_TEST_EXISTS));
    /* the source was authoritative until the end: its bytes are intact */
    vmr_harness_assert_image_equals (vm.source, "raw", vm.expected);
}

/* `migrate --wait` exits 1 when its job ends without completing */
static void
test_wait_cancelled (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autoptr (VmrCliResult) waited = NULL;
    g_autoptr (VmrCliResult) cancel = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    g_autoptr (JsonObject) copying = NULL;
    VmrCliRun *run;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    run = vmr_harness_cli_spawn (h, "migrate", "vm", "disk0", vm.dest, "--speed",
                                 VMR_HARNESS_SLOW_SPEED, "--wait", NULL);
    /* the job shows up while that CLI waits */
    vmr_harness_wait_job_count (h, 1);
    id = g_strdup ("vmr-1");
    copying = vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    cancel = vmr_harness_cli (h, "cancel", id, NULL);
    vmr_cli_result_assert_ok (cancel);
    cancelled = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    waited = vmr_harness_cli_wait (run);
    vmr_cli_result_assert_error (waited, 1);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/*
 * SIGTERM while a copy runs: the daemon still exits 0 and removes its
 * socket; the guest stays on its source and the job's record is kept
 */
static void
test_sigterm_while_copying (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *id = NULL;
    g_autofree gchar *record_name = NULL;
    g_autofree gchar *record = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0xc0de);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    vmr_harness_stop_daemon (h);
    record_name = g_strdup_printf ("%s.json", id);
    record = g_build_filename (h->state_dir, "jobs", record_name, NULL);
    g_assert_true (g_file_test (record, G_FILE_TEST_IS_REGULAR));
    vmr_harness_assert_disk_on (h, "disk0", vm.source);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (vm.source, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/control/cancel", NULL, test_cancel);
    VMR_HARNESS_ADD ("/control/manual-pivot", NULL, test_manual_pivot);
    VMR_HARNESS_ADD ("/control/pause-resume", NULL, test_pause_resume);
    VMR_HARNESS_ADD ("/control/set-speed", NULL, test_set_speed);
    VMR_HARNESS_ADD ("/control/copy-mode", NULL, test_copy_mode);
    VMR_HARNESS_ADD ("/control/detach-busy", NULL, test_detach_busy);
    VMR_HARNESS_ADD ("/control/qemu-killed", NULL, test_qemu_killed);
    VMR_HARNESS_ADD ("/control/wait-cancelled", NULL, test_wait_cancelled);
    VMR_HARNESS_ADD ("/control/sigterm-while-copying", NULL, test_sigterm_while_copying);
    return g_test_run ();
}
