#define G_LOG_DOMAIN "vmr-test"

/*
 * Injected I/O faults, against real peers: the test guest writes and
 * verifies its disk while the disk is copied to an NBD export served by
 * nbdkit behind its error filter; part-way through the copy the test
 * switches the filter on (its error file appears) and every write to the
 * export fails with EIO. The copy fails with a reason that names the I/O
 * error and the side it came from, the VM stays on its source, QEMU keeps
 * no block job, and the guest reads back right every block it wrote, before
 * the fault and after, and the rest of the source is as it was. Each test
 * prints its figures in a "FIGURES" line.
 */

#include "nbd-fixture.h"
#include "policy-fixture.h"

#include <glib/gstdio.h>

#define FAULT_DISK (64 * MIB)
/* the copies to the failing export, one after the other, under the same guest */
#define ROUNDS 3
/* slow enough that the copy is part-way when the fault comes: 64 MiB take 16 s */
#define COPY_SPEED "4M"
/* how much each copy has written to the export before the fault */
#define BEFORE_FAULT (4 * MIB)

/* waits until the job @id has copied @bytes, by its progress */
static void
wait_copied (VmrHarness *h, const gchar *id, gint64 bytes)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);
        gint64 done = vmr_harness_json_int (vmr_harness_json_object (job, "progress"), "done");

        if (done >= bytes)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s copied %" G_GINT64_FORMAT
                      " bytes in %d s, waiting for %" G_GINT64_FORMAT,
                      id, done, VMR_HARNESS_JOB_TIMEOUT_S, bytes);
        g_usleep (100 * 1000);
    }
}

/*
 * One copy to a fresh failing export: it runs, the fault comes, it fails
 * with the reason of the I/O error and leaves the VM on its source
 */
static void
copy_into_fault (VmrHarness *h, VmrNbdServers *servers, const gchar *source, guint round)
{
    g_autofree gchar *name = g_strdup_printf ("dest%u.sock", round);
    g_autofree gchar *socket = vmr_harness_path (h, name);
    g_autofree gchar *trigger_name = g_strdup_printf ("dest%u.fail", round);
    g_autofree gchar *trigger = vmr_harness_path (h, trigger_name);
    g_autofree gchar *uri = vmr_nbd_start_failing_export (servers, socket, FAULT_DISK, trigger);
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *reason;

    id = vmr_harness_migrate (h, "vm", "disk0", uri, "--speed", COPY_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    wait_copied (h, id, BEFORE_FAULT);
    /* still copying: the fault comes part-way */
    json_object_unref (vmr_harness_wait_job (h, id, "copying", 1));
    if (!g_file_set_contents (trigger, "", 0, &error))
        vmr_fail ("cannot create %s: %s", trigger, error->message);
    final = vmr_harness_wait_job (h, id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    reason = vmr_harness_json_string (final, "reason");
    g_test_message ("round %u failed: %s", round, reason);
    assert_contains (reason, "Input/output error", "the job's reason");
    assert_contains (reason, "a write to the destination", "the job's reason");
    vmr_harness_assert_disk_on (h, "disk0", source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_job_record (h, id, "failed");
}

/*
 * The guest's own check: it read back right every block it wrote (then
 * QEMU quits, and the rest of @source holds its pattern). Returns the
 * blocks it wrote
 */
static guint64
assert_guest_lost_nothing (VmrHarness *h, const gchar *source)
{
    g_autoptr (VmrConsoleLine) done = vmr_harness_guest_wait_line (h, "VMR-DONE", 120);
    guint64 written;

    assert_contains (done->text, "VMR-DONE verify ok", "the guest's result");
    written = assert_guest_verified (h);
    assert_beyond_verify_region (h, source, source, FAULT_DISK);
    return written;
}

static void
test_destination_fails (VmrHarness *h, gconstpointer user_data)
{
    const VmrHarnessGuestJob verify = { "verify", 200, 30, NULL, NULL, NULL };
    g_auto (GuestCopy) c = { 0 };
    VmrNbdServers servers;
    g_autoptr (GArray) writing = NULL;
    guint64 written;

    if (!vmr_harness_require_guest (h) || !vmr_nbd_require (h))
        return;
    vmr_nbd_servers_init (&servers, h);
    idle_guest_start (h, &c, &verify, FAULT_DISK, QUIET_POLICY);
    /* the guest writes before the first copy starts */
    writing = vmr_harness_guest_wait_iops (h, 1, 1, 60);
    for (guint round = 0; round < ROUNDS; round++)
        copy_into_fault (h, &servers, c.source, round);
    /* the guest still writes after the last failure, on its source */
    g_assert_false (vmr_harness_guest_has_line (h, "VMR-DONE"));
    written = assert_guest_lost_nothing (h, c.source);
    g_test_message ("FIGURES destination faults injected %u, jobs failed cleanly %u, guest blocks "
                    "written %" G_GUINT64_FORMAT ", writes lost 0",
                    ROUNDS, ROUNDS, written);
    vmr_nbd_servers_clear (&servers);
}

/*
 * QEMU's blkdebug rules for the source: every read of the 4 MiB sector
 * fails with EIO (errno 5), the guest's and the copy's alike. It lies in the
 * region the verify guest writes, then reads back at the end of its pass
 */
#define BAD_SECTOR 8192
#define SOURCE_RULES                                                                               \
    "[inject-error]\nevent = \"read_aio\"\niotype = \"read\"\nerrno = \"5\"\n"                     \
    "sector = \"" G_STRINGIFY (BAD_SECTOR) "\"\n"

/* a plain nbdkit export of the disk's size on @socket; returns its URI */
static gchar *
start_export (VmrNbdServers *s, const gchar *socket)
{
    g_autofree gchar *size = g_strdup_printf ("%u", FAULT_DISK);
    const gchar *argv[] = { "nbdkit", "-f", "-U", socket, "memory", size, NULL };

    vmr_nbd_start_server (s, argv, socket, 0);
    return g_strdup_printf ("nbd+unix:///?socket=%s", socket);
}

/*
 * A source that fails reads while its copy runs: the copy's read of the bad
 * sector fails it, with the reason naming a read from the source; the
 * guest's own read of it fails too, and it says so. The VM stays on its
 * source, and the source beyond what the guest wrote is as it was
 */
static void
test_source_fails (VmrHarness *h, gconstpointer user_data)
{
    const VmrHarnessGuestJob verify = { "verify", 200, 15, NULL, NULL, NULL };
    VmrNbdServers servers;
    g_autofree gchar *source = NULL;
    g_autofree gchar *rules = NULL;
    g_autofree gchar *on_source = NULL;
    g_autofree gchar *socket = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (GArray) writing = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *reason;

    if (!vmr_harness_require_guest (h) || !vmr_nbd_require (h))
        return;
    vmr_nbd_servers_init (&servers, h);
    g_free (start_policy_daemon (h, QUIET_POLICY));
    source = vmr_harness_create_image (h, "source.raw", "raw", FAULT_DISK, 0x5a17);
    rules = vmr_harness_path (h, "source.blkdebug");
    if (!g_file_set_contents (rules, SOURCE_RULES, -1, &error))
        vmr_fail ("cannot write %s: %s", rules, error->message);
    {
        VmrHarnessDisk disk = {
            .id = "disk0", .path = source, .format = "raw", .iothread = "io0", .blkdebug = rules
        };

        vmr_harness_start_guest (h, &disk, &verify);
    }
    vmr_harness_attach (h, "vm");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    writing = vmr_harness_guest_wait_iops (h, 1, 1, 60);
    socket = vmr_harness_path (h, "dest.sock");
    uri = start_export (&servers, socket);
    id = vmr_harness_migrate (h, "vm", "disk0", uri, "--speed", COPY_SPEED, NULL);
    final = vmr_harness_wait_job (h, id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    reason = vmr_harness_json_string (final, "reason");
    g_test_message ("the job: %s", reason);
    assert_contains (reason, "Input/output error", "the job's reason");
    assert_contains (reason, "a read from the source", "the job's reason");
    /* QEMU names the source through its rules */
    on_source = g_strdup_printf ("blkdebug:%s:%s", rules, source);
    vmr_harness_assert_disk_on (h, "disk0", on_source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_job_record (h, id, "failed");
    /* the guest saw the error too when it read its blocks back */
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 120);
    g_test_message ("the guest: %s", done->text);
    assert_contains (done->text, "VMR-DONE verify FAILED", "the guest's result");
    assert_contains (done->text, "Input/output error", "the guest's result");
    assert_beyond_verify_region (h, source, source, FAULT_DISK);
    g_test_message ("FIGURES source faults injected 1, jobs failed cleanly 1, errors hidden 0");
    vmr_nbd_servers_clear (&servers);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    VMR_HARNESS_ADD_NO_DAEMON ("/faults/destination-fails-part-way", NULL, test_destination_fails);
    VMR_HARNESS_ADD_NO_DAEMON ("/faults/source-fails-while-copying", NULL, test_source_fails);
    return g_test_run ();
}
