#define G_LOG_DOMAIN "vmr-test"

/*
 * Verification of a copy after its pivot (migrate --verify, verify = yes,
 * virt-mirror verify ID), against real QEMU: a clean copy verifies clean
 * while guest writes go on; bytes flipped in the destination behind QEMU's
 * back, after the sync, are named by their range, loudly, and the old
 * source stays; the test guest writing hard during the verification causes
 * no false alarm. After each, QEMU keeps no export, no NBD server and no
 * node of the verification.
 */

#include "policy-fixture.h"

#include <glib/gstdio.h>
#include <string.h>

/* what the flip test changes in the destination: 8 KiB at 40 MiB + 12 KiB */
#define FLIP_OFFSET (40 * MIB + 12 * 1024)
#define FLIP_LENGTH (8 * 1024)

/* QEMU keeps nothing of a verification: no export, no old node, and its NBD server stopped */
static void
assert_no_leftovers (VmrHarness *h, const gchar *job_id)
{
    g_autoptr (JsonNode) exports = vmr_harness_qmp (h, "query-block-exports", NULL);
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    g_autofree gchar *old_node = g_strdup_printf ("%s-old", job_id);
    JsonArray *list = vmr_harness_json_node_array (nodes);
    g_autoptr (JsonObject) args = json_object_new ();
    JsonObject *addr = json_object_new ();
    JsonObject *data = json_object_new ();
    g_autofree gchar *probe = vmr_harness_path (h, "probe.sock");
    g_autoptr (JsonNode) started = NULL;
    g_autoptr (JsonNode) stopped = NULL;

    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (exports)), ==, 0);
    for (guint i = 0; i < json_array_get_length (list); i++)
        g_assert_cmpstr (vmr_json_get_string (vmr_harness_json_element (list, i), "node-name"), !=,
                         old_node);
    /* QEMU runs one NBD server: ours starts only if the daemon's was stopped */
    json_object_set_string_member (data, "path", probe);
    json_object_set_string_member (addr, "type", "unix");
    json_object_set_object_member (addr, "data", data);
    json_object_set_object_member (args, "addr", addr);
    started = vmr_harness_qmp (h, "nbd-server-start", args);
    stopped = vmr_harness_qmp (h, "nbd-server-stop", NULL);
}

/* the job's verification object, which must be there */
static JsonObject *
verification_of (JsonObject *job)
{
    return vmr_harness_json_object (job, "verification");
}

/* the destination image of a test in @format */
static gchar *
dest_path (VmrHarness *h, const gchar *format)
{
    return vmr_harness_path (h, g_str_equal (format, "raw") ? "dest.raw" : "dest.qcow2");
}

/*
 * A clean copy verifies clean: migrate --verify --wait while the writer
 * writes through the guest disk in every phase it reaches, the verification
 * included. The job records it passed, the bytes are the expected ones.
 */
static void
test_clean (VmrHarness *h, gconstpointer user_data)
{
    const gchar *format = user_data;
    g_autofree gchar *dest = NULL;
    g_autoptr (VmrCliResult) shown = NULL;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonObject) job = NULL;
    JsonObject *v;
    VmrCliRun *run;

    vmr_harness_start_vm (h, &vm, 64 * MIB, 41);
    dest = dest_path (h, format);
    run = vmr_harness_cli_spawn (h, "migrate", "vm", "disk0", dest, "--format", format, "--verify",
                                 "--wait", NULL);
    vmr_harness_wait_job_count (h, 1);
    /* the writer goes on through the copy, the pivot and the verification */
    for (guint i = 0; i < 2000 && !vmr_harness_verification_ended (h, "vmr-1"); i++)
        vmr_harness_writer_write (vm.writer, 1);
    result = vmr_harness_cli_wait (run);
    vmr_cli_result_assert_ok (result);
    assert_contains (result->out, "Job vmr-1 verified: ", "migrate --verify's output");
    job = vmr_harness_get_job (h, "vmr-1");
    v = verification_of (job);
    g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "passed");
    g_assert_cmpint (vmr_harness_json_int (v, "compared"), >, 0);
    g_assert_cmpint (vmr_harness_json_int (v, "covered"), ==, 64 * MIB);
    g_assert_cmpint (vmr_harness_json_int (v, "mismatched-ranges"), ==, 0);
    g_test_message ("compared %" G_GINT64_FORMAT ", zero %" G_GINT64_FORMAT
                    ", written %" G_GINT64_FORMAT " bytes; %u writes",
                    vmr_harness_json_int (v, "compared"), vmr_harness_json_int (v, "zero"),
                    vmr_harness_json_int (v, "written"), vmr_harness_writer_count (vm.writer));
    assert_no_leftovers (h, "vmr-1");
    shown = vmr_harness_cli (h, "job", "vmr-1", NULL);
    vmr_cli_result_assert_ok (shown);
    assert_contains (shown->out, "completed, verified", "job");
    assert_contains (shown->out, "verification passed", "job's history");
    /* the record says so too */
    vmr_harness_stop_daemon (h);
    {
        g_autofree gchar *record_path = g_build_filename (h->state_dir, "jobs", "vmr-1.json", NULL);
        g_autofree gchar *record = NULL;

        g_assert_true (g_file_get_contents (record_path, &record, NULL, NULL));
        assert_contains (record, "\"state\" : \"passed\"", "the job record");
    }
    vmr_harness_assert_migrated (h, "vmr-1", "disk0", vm.source, dest, format, vm.expected);
}

/*
 * Bytes flipped in the destination behind QEMU's back, after the sync and
 * before the pivot, in a range nothing writes: migrate --verify --wait fails
 * naming that range, the job shows it, a second `verify ID` finds it again,
 * and the old source is still there, untouched.
 */
static void
test_mismatch (VmrHarness *h, gconstpointer user_data)
{
    const gchar *format = user_data;
    g_autofree gchar *dest = NULL;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    g_autoptr (VmrCliResult) listing = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autofree gchar *range = g_strdup_printf ("%d+%d", FLIP_OFFSET, FLIP_LENGTH);
    VmrCliRun *run;

    vmr_harness_start_vm (h, &vm, 64 * MIB, 42);
    dest = dest_path (h, format);
    run = vmr_harness_cli_spawn (h, "migrate", "vm", "disk0", dest, "--format", format, "--verify",
                                 "--manual-pivot", "--wait", NULL);
    vmr_harness_wait_job_count (h, 1);
    synced = vmr_harness_wait_job (h, "vmr-1", "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    /* writes while in sync reach both images; none comes after the flip */
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_flip_bytes (dest, vm.expected, FLIP_OFFSET,
                            vmr_harness_host_offset (dest, format, FLIP_OFFSET), FLIP_LENGTH);
    vmr_harness_job_command (h, "pivot", "vmr-1", NULL);
    result = vmr_harness_cli_wait (run);
    g_test_message ("migrate --verify: %s", result->err);
    vmr_cli_result_assert_error (result, 1);
    assert_contains (result->err, "verify failed", "migrate --verify's error");
    assert_contains (result->err, range, "migrate --verify's error");

    vmr_harness_assert_verify_failed_at (h, "vmr-1", FLIP_OFFSET, FLIP_LENGTH);
    listing = vmr_harness_cli (h, "jobs", NULL);
    vmr_cli_result_assert_ok (listing);
    assert_contains (listing->out, "completed, verify failed", "jobs");
    assert_no_leftovers (h, "vmr-1");

    /* the bitmap of the pivot stays: the copy can be verified again */
    again = vmr_harness_cli (h, "verify", "vmr-1", NULL);
    vmr_cli_result_assert_error (again, 1);
    assert_contains (again->err, range, "verify's error");
    assert_no_leftovers (h, "vmr-1");

    /* the old source is the guest's disk as it was at the pivot */
    g_assert_true (g_file_test (vm.source, G_FILE_TEST_EXISTS));
    vmr_harness_assert_disk_on (h, "disk0", dest);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (vm.source, "raw", vm.expected);
}

/*
 * `verify ID` after a crash and a restart of the daemon, QEMU running on: refused with
 * one line until the domain is attached again, then the finished job comes
 * back from its record and verifies clean while the writer writes, and is
 * listed again.
 */
static void
test_after_restart (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *dest = NULL;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) detached = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    g_autoptr (VmrCliResult) listing = NULL;
    g_autoptr (JsonObject) job = NULL;
    VmrCliRun *run;

    vmr_harness_start_vm (h, &vm, 64 * MIB, 44);
    dest = dest_path (h, "raw");
    result = vmr_harness_cli (h, "migrate", "vm", "disk0", dest, "--verify", "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_kill_daemon (h);
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_restart_daemon (h, NULL);
    detached = vmr_harness_cli (h, "verify", "vmr-1", NULL);
    vmr_cli_result_assert_error (detached, 1);
    assert_contains (detached->err, "unknown domain 'vm'", "verify before the attach");
    vmr_harness_attach (h, "vm");
    run = vmr_harness_cli_spawn (h, "verify", "vmr-1", NULL);
    for (guint i = 0; i < 2000 && !vmr_harness_verification_ended (h, "vmr-1"); i++)
        vmr_harness_writer_write (vm.writer, 1);
    again = vmr_harness_cli_wait (run);
    vmr_cli_result_assert_ok (again);
    assert_contains (again->out, "Job vmr-1 verified: ", "verify after the restart");
    job = vmr_harness_get_job (h, "vmr-1");
    g_assert_cmpstr (vmr_json_job_state (job), ==, "completed");
    g_assert_cmpstr (vmr_harness_json_string (verification_of (job), "state"), ==, "passed");
    g_assert_cmpint (vmr_harness_json_int (verification_of (job), "covered"), ==, 64 * MIB);
    listing = vmr_harness_cli (h, "jobs", NULL);
    vmr_cli_result_assert_ok (listing);
    assert_contains (listing->out, "completed, verified", "jobs");
    assert_no_leftovers (h, "vmr-1");
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_stop_daemon (h);
    vmr_harness_assert_migrated (h, "vmr-1", "disk0", vm.source, dest, "raw", vm.expected);
}

/* what cannot be verified is refused with one line, and nothing changes */
static void
test_refusals (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autoptr (VmrCliResult) unknown = NULL;
    g_autoptr (VmrCliResult) running = NULL;
    g_autoptr (VmrCliResult) gone = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autofree gchar *id = NULL;

    vmr_harness_start_vm (h, &vm, 16 * MIB, 43);
    unknown = vmr_harness_cli (h, "verify", "vmr-77", NULL);
    vmr_cli_result_assert_error (unknown, 1);
    assert_contains (unknown->err, "unknown job 'vmr-77'", "verify of an unknown job");

    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    running = vmr_harness_cli (h, "verify", id, NULL);
    vmr_cli_result_assert_error (running, 1);
    assert_contains (running->err, "only a completed copy can be verified", "verify of a copy");
    job = vmr_harness_job_command (h, "set-speed", id, "0");
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_true (vmr_harness_json_is_null (job, "verification"));

    /* an old source that is gone cannot be compared */
    g_assert_cmpint (g_unlink (vm.source), ==, 0);
    gone = vmr_harness_cli (h, "verify", id, NULL);
    vmr_cli_result_assert_error (gone, 1);
    assert_contains (gone->err, "no longer exists", "verify without the old source");
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_get_job (h, id);
    g_assert_true (vmr_harness_json_is_null (job, "verification"));
    assert_no_leftovers (h, id);
}

/*
 * The verify guest writes hard (fio, unlimited IOPS, and reads back what
 * it wrote) while the copy pivots and is verified under verify = yes of the
 * policy, and verified once more with `verify ID`: no false alarm, and the
 * guest reads back right every block it wrote.
 */
static gint64
qemu_major (VmrHarness *h)
{
    g_autoptr (JsonNode) version = vmr_harness_qmp (h, "query-version", NULL);

    return vmr_harness_json_int (
        vmr_harness_json_object (vmr_harness_json_node_object (version), "qemu"), "major");
}

/*
 * a QEMU before 10.0 (7.2) would abort when the verification's NBD client of
 * a disk on an I/O thread leaves: the daemon does not verify it, says why in
 * one line, and the guest goes on writing to its new disk
 */
static void
guest_writes_not_verified (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) job = NULL;
    JsonObject *v;

    for (guint tries = 0; tries < 600 && !vmr_harness_verification_ended (h, id); tries++)
        g_usleep (100 * 1000);
    job = vmr_harness_get_job (h, id);
    v = verification_of (job);
    g_test_message ("verification: %s: %s", vmr_harness_json_string (v, "state"),
                    vmr_harness_json_string (v, "error"));
    g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "error");
    assert_contains (vmr_harness_json_string (v, "error"), "runs on I/O thread io0",
                     "the verification's error");
    g_assert_null (strchr (vmr_harness_json_string (v, "error"), '\n'));
    vmr_harness_guest_wait_iops (h, 2, 1, 60);
}

/*
 * a disk on an I/O thread: verified by QEMU 10.0; a QEMU before it would
 * abort when the verification's NBD client leaves, so the daemon does not
 * verify it, says why in one line, and QEMU goes on
 */
static void
test_iothread (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonObject) job = NULL;
    JsonObject *v;

    source = vmr_harness_create_image (h, "source.raw", "raw", 16 * MIB, 43);
    expected = vmr_harness_expected_path (source);
    dest = dest_path (h, "raw");
    vmr_harness_start_qemu (
        h, &(VmrHarnessDisk){ .id = "disk0", .path = source, .format = "raw", .iothread = "io0" },
        1);
    vmr_harness_attach (h, "vm");
    result = vmr_harness_cli (h, "migrate", "vm", "disk0", dest, "--format", "raw", "--verify",
                              "--wait", NULL);
    g_test_message ("migrate --verify: %s%s", result->out, result->err);
    job = vmr_harness_wait_job (h, "vmr-1", "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    v = verification_of (job);
    if (qemu_major (h) >= 10) {
        vmr_cli_result_assert_ok (result);
        g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "passed");
    } else {
        vmr_cli_result_assert_error (result, 1);
        g_assert_cmpuint (vmr_harness_count_lines (result->err, "I/O thread"), ==, 1);
        assert_contains (result->err, "disk0 runs on I/O thread io0", "migrate --verify's error");
        g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "error");
    }
    /* QEMU goes on, on its new disk */
    assert_no_leftovers (h, "vmr-1");
    vmr_harness_assert_migrated (h, "vmr-1", "disk0", source, dest, "raw", expected);
}

static void
test_guest_writes (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\nverify = yes\nconverge-after = 5s\n";
    const VmrHarnessGuestJob verify = { "verify", 0, 30, NULL, "64m", NULL };
    g_auto (GuestCopy) c = { 0 };
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    gint64 written_total = 0;

    if (!vmr_harness_require_guest (h))
        return;
    idle_guest_start (h, &c, &verify, 128 * MIB, policy);
    vmr_harness_guest_wait_iops (h, 2, 1, 60);
    c.id = vmr_harness_migrate (h, "vm", "disk0", c.dest, NULL);
    final = vmr_harness_wait_job (h, c.id, "completed", 120);
    g_assert_true (vmr_harness_json_bool (final, "verify"));
    if (qemu_major (h) < 10) {
        guest_writes_not_verified (h, c.id);
        return;
    }
    for (guint i = 0; i < 2; i++) {
        JsonObject *v;

        /* the first comes from the policy, the second is asked for while the guest writes */
        if (i == 1) {
            again = vmr_harness_cli (h, "verify", c.id, NULL);
            g_test_message ("verify while the guest writes: %s%s", again->out, again->err);
            vmr_cli_result_assert_ok (again);
        }
        for (guint tries = 0; tries < 600 && !vmr_harness_verification_ended (h, c.id); tries++)
            g_usleep (100 * 1000);
        g_clear_pointer (&final, json_object_unref);
        final = vmr_harness_get_job (h, c.id);
        v = verification_of (final);
        g_test_message ("verification %u: %s, compared %" G_GINT64_FORMAT
                        ", written %" G_GINT64_FORMAT,
                        i, vmr_harness_json_string (v, "state"),
                        vmr_harness_json_int (v, "compared"), vmr_harness_json_int (v, "written"));
        g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "passed");
        written_total += vmr_harness_json_int (v, "written");
    }
    /* the guest did write while the daemon compared: the bitmap left its writes out */
    g_assert_cmpint (written_total, >, 0);
    g_assert_false (vmr_harness_guest_has_line (h, "VMR-DONE"));
    assert_no_leftovers (h, c.id);
    assert_verify_guest (h, vmr_json_job_time_of (final, "completed"), c.source, c.dest, 128 * MIB);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    /* a raw destination is read with pread(), a qcow2 one through QEMU's NBD server */
    VMR_HARNESS_ADD ("/verify/clean", "raw", test_clean);
    VMR_HARNESS_ADD ("/verify/clean-qcow2", "qcow2", test_clean);
    VMR_HARNESS_ADD ("/verify/mismatch", "raw", test_mismatch);
    VMR_HARNESS_ADD ("/verify/mismatch-qcow2", "qcow2", test_mismatch);
    VMR_HARNESS_ADD ("/verify/refusals", NULL, test_refusals);
    VMR_HARNESS_ADD ("/verify/after-restart", NULL, test_after_restart);
    VMR_HARNESS_ADD ("/verify/iothread", NULL, test_iothread);
    VMR_HARNESS_ADD_NO_DAEMON ("/verify/guest-writes", NULL, test_guest_writes);
    return g_test_run ();
}
