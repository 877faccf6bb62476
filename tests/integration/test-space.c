#define G_LOG_DOMAIN "vmr-test"

/*
 * A destination file system that runs out of space, on a small tmpfs the
 * test mounts (docs/operations.md, "Destination space"):
 *   - a copy whose allocated data and space-margin exceed the free space is
 *     refused with one line, before anything is made;
 *   - a thin source whose virtual size exceeds the free space, but whose data
 *     fits, is copied;
 *   - two copies into the same file system are counted together: the second
 *     is refused while the first still has to write, though it would fit
 *     alone;
 *   - two copies pause when another file fills the file system, with the
 *     reason in the job, while the guest writes on without an error to its
 *     sources; they resume when the file goes and complete with every byte;
 *   - a copy that QEMU itself stops on ENOSPC (the daemon samples too rarely
 *     to see it coming) is paused, not failed, and resumed once there is room.
 * The bytes of every disk the VM ends on are compared with what the guest wrote.
 */

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define MIB ((guint64) 1024 * 1024)
/* guest writes in each phase */
#define WRITES 20

/* the disks of "vm", their images in the test's directory and destinations on @fs */
typedef struct {
    guint n;
    gchar *ids[2];
    gchar *sources[2];
    gchar *expected[2];
    gchar *dests[2];
    gchar *jobs[2];
    VmrHarnessWriter *writers[2];
} SpaceVm;

static void
space_vm_clear (SpaceVm *vm)
{
    for (guint i = 0; i < G_N_ELEMENTS (vm->ids); i++) {
        g_free (vm->ids[i]);
        g_free (vm->sources[i]);
        g_free (vm->expected[i]);
        g_free (vm->dests[i]);
        g_free (vm->jobs[i]);
        g_clear_pointer (&vm->writers[i], vmr_harness_writer_free);
    }
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SpaceVm, space_vm_clear)

/* QEMU with @n scsi disks of @size bytes, full of data, attached as "vm" */
static void
space_vm_start (VmrHarness *h, SpaceVm *vm, guint n, gsize size, const gchar *fs)
{
    VmrHarnessDisk disks[2] = { 0 };

    g_assert_cmpuint (n, <=, G_N_ELEMENTS (disks));
    vm->n = n;
    for (guint i = 0; i < n; i++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", i);
        g_autofree gchar *dest_name = g_strdup_printf ("dest%u.raw", i);

        vm->ids[i] = g_strdup_printf ("disk%u", i);
        vm->sources[i] = vmr_harness_create_image (h, name, "raw", size, 0x5ace + i);
        vm->expected[i] = vmr_harness_expected_path (vm->sources[i]);
        vm->dests[i] = g_build_filename (fs, dest_name, NULL);
        disks[i] = (VmrHarnessDisk){ vm->ids[i], vm->sources[i], "raw", .scsi = TRUE };
    }
    vmr_harness_start_qemu (h, disks, n);
    for (guint i = 0; i < n; i++)
        vm->writers[i] = vmr_harness_writer_new (h, vm->ids[i], vm->expected[i], 0x5ace0 + i);
    vmr_harness_attach (h, "vm");
}

/*
 * The daemon with @policy_text as its policy, and a tmpfs of @fs_size bytes
 * for the destinations; NULL when the test is skipped
 */
static gchar *
space_setup (VmrHarness *h, const gchar *policy_text, gsize fs_size)
{
    g_autofree gchar *policy = NULL;

    if (vmr_harness_skipped (h))
        return NULL;
    policy = vmr_harness_write_policy (h, policy_text);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    return vmr_harness_mount_tmpfs (h, "small-fs", fs_size);
}

/* the number of entries of @dir */
static guint
count_entries (const gchar *dir)
{
    g_autoptr (GDir) listing = g_dir_open (dir, 0, NULL);
    guint n = 0;

    g_assert_nonnull (listing);
    while (g_dir_read_name (listing) != NULL)
        n++;
    return n;
}

/*
 * `migrate vm DISK DEST` refused with one line, which is returned (free
 * with g_free()); asserts that nothing was made and the daemon still serves
 */
static gchar *
assert_refused (VmrHarness *h, const gchar *disk, const gchar *dest, guint jobs_before)
{
    g_autoptr (VmrCliResult) result
        = vmr_harness_cli (h, "migrate", "vm", disk, dest, "--speed", "1M", NULL);

    g_test_message ("refused: %s", result->err);
    vmr_cli_result_assert_error (result, 1);
    g_assert_nonnull (strstr (result->err, "not enough space for "));
    g_assert_nonnull (strstr (result->err, dest));
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, jobs_before);
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_daemon_serving (h);
    return g_strdup (result->err);
}

/* data over the free space: refused before anything is made; the VM stays where it was */
static void
test_refused (VmrHarness *h, gconstpointer user_data)
{
    g_auto (SpaceVm) vm = { 0 };
    g_autofree gchar *fs = NULL;
    g_autofree gchar *line = NULL;

    fs = space_setup (h, "[defaults]\nspace-margin = 4M\n", 32 * MIB);
    if (fs == NULL)
        return;
    space_vm_start (h, &vm, 1, 48 * MIB, fs);
    line = assert_refused (h, "disk0", vm.dests[0], 0);
    /* it names the file system, its free space and what the copy needs */
    g_assert_nonnull (strstr (line, fs));
    g_assert_nonnull (strstr (line, "has 32 MiB free"));
    g_assert_nonnull (strstr (line, "needs 52 MiB (48 MiB of data and a space-margin of 4 MiB)"));
    g_assert_cmpuint (count_entries (fs), ==, 0);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_writer_write (vm.writers[0], WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.sources[0], "raw", vm.expected[0]);
    vmr_harness_unmount_tmpfs (h);
}

/* a thin source: 8 MiB of data in a 512 MiB disk moves to a 32 MiB file system */
static void
test_thin_fits (VmrHarness *h, gconstpointer user_data)
{
    g_auto (SpaceVm) vm = { 0 };
    g_autofree gchar *fs = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    VmrHarnessDisk disk = { "disk0", NULL, "raw", .scsi = TRUE };
    const guint64 virtual_size = 512 * MIB;

    fs = space_setup (h, "[defaults]\nspace-margin = 4M\n", 32 * MIB);
    if (fs == NULL)
        return;
    /* the data at the start, a hole after it */
    source = vmr_harness_create_image (h, "source.raw", "raw", 8 * MIB, 0x7417);
    expected = vmr_harness_expected_path (source);
    g_assert_cmpint (truncate (source, (off_t) virtual_size), ==, 0);
    g_assert_cmpint (truncate (expected, (off_t) virtual_size), ==, 0);
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    vm.writers[0] = vmr_harness_writer_new (h, "disk0", expected, 0x74170);
    vmr_harness_attach (h, "vm");
    vm.dests[0] = g_build_filename (fs, "dest.raw", NULL);
    g_assert_cmpuint (vmr_harness_free_bytes (fs), <, virtual_size);

    id = vmr_harness_migrate (h, "vm", "disk0", vm.dests[0], "--speed", "4M", NULL);
    json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (vm.writers[0], WRITES);
    json_object_unref (vmr_harness_job_command (h, "set-speed", id, "0"));
    json_object_unref (vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (vm.writers[0], WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", source, vm.dests[0], "raw", expected);
    vmr_harness_unmount_tmpfs (h);
}

/*
 * Two copies into one file system count together: the second is refused
 * while the first has most of its data still to write, though the free
 * space would hold it alone
 */
static void
test_shared_refused (VmrHarness *h, gconstpointer user_data)
{
    g_auto (SpaceVm) vm = { 0 };
    g_autofree gchar *fs = NULL;
    g_autofree gchar *line = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    guint64 room;

    fs = space_setup (h, "[defaults]\nspace-margin = 8M\nmax-parallel-per-iothread = 0\n",
                      58 * MIB);
    if (fs == NULL)
        return;
    space_vm_start (h, &vm, 2, 28 * MIB, fs);
    vm.jobs[0] = vmr_harness_migrate (h, "vm", "disk0", vm.dests[0], "--speed", "256K", NULL);
    json_object_unref (vmr_harness_wait_job (h, vm.jobs[0], "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (vm.writers[0], WRITES);

    line = assert_refused (h, "disk1", vm.dests[1], 1);
    room = vmr_harness_free_bytes (fs);
    g_assert_nonnull (strstr (line, "1 other copy to it still writes"));
    /* alone it would fit: the first copy's share is what refused it */
    g_assert_cmpuint (room, >=, 28 * MIB + 8 * MIB);

    cancelled = vmr_harness_job_command (h, "cancel", vm.jobs[0], NULL);
    g_assert_cmpstr (vmr_json_job_state (cancelled), ==, "cancelled");
    g_assert_cmpuint (count_entries (fs), ==, 0);
    for (guint i = 0; i < vm.n; i++) {
        vmr_harness_writer_write (vm.writers[i], WRITES);
        vmr_harness_assert_disk_on (h, vm.ids[i], vm.sources[i]);
    }
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    for (guint i = 0; i < vm.n; i++)
        vmr_harness_assert_image_equals (vm.sources[i], "raw", vm.expected[i]);
    vmr_harness_unmount_tmpfs (h);
}

/* the reason a job gives for its pause for space */
static const gchar *
space_pause_reason (JsonObject *job)
{
    return vmr_harness_json_string (vmr_harness_json_object (job, "space"), "paused");
}

/*
 * QEMU's job @id is paused part-way, with the I/O status @io_status (NULL:
 * not checked)
 */
static void
assert_qemu_paused (VmrHarness *h, const gchar *id, const gchar *io_status)
{
    g_autoptr (JsonObject) block_job = vmr_harness_find_block_job (h, id);

    g_assert_nonnull (block_job);
    g_assert_true (vmr_harness_json_bool (block_job, "paused"));
    g_test_message ("%s: QEMU's job paused at %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT, id,
                    vmr_harness_json_int (block_job, "offset"),
                    vmr_harness_json_int (block_job, "len"));
    g_assert_cmpint (vmr_harness_json_int (block_job, "offset"), <,
                     vmr_harness_json_int (block_job, "len"));
    if (io_status != NULL)
        g_assert_cmpstr (vmr_harness_json_string (block_job, "io-status"), ==, io_status);
}

/* the copies of @vm complete; every disk holds what the guest wrote */
static void
finish_and_check (VmrHarness *h, SpaceVm *vm)
{
    for (guint i = 0; i < vm->n; i++)
        json_object_unref (vmr_harness_job_command (h, "set-speed", vm->jobs[i], "0"));
    for (guint i = 0; i < vm->n; i++)
        json_object_unref (
            vmr_harness_wait_job (h, vm->jobs[i], "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    for (guint i = 0; i < vm->n; i++) {
        vmr_harness_writer_write (vm->writers[i], WRITES);
        vmr_harness_assert_disk_on (h, vm->ids[i], vm->dests[i]);
        vmr_harness_assert_node_released (h, vm->sources[i]);
        vmr_harness_assert_job_record (h, vm->jobs[i], "completed");
    }
    vmr_harness_quit_qemu (h);
    for (guint i = 0; i < vm->n; i++)
        vmr_harness_assert_image_equals (vm->dests[i], "raw", vm->expected[i]);
}

/*
 * Two copies into one file system pause when another file fills it, and
 * resume when the file is removed; the guest writes to its sources all along
 */
static void
test_pause_resume (VmrHarness *h, gconstpointer user_data)
{
    g_auto (SpaceVm) vm = { 0 };
    g_autofree gchar *fs = NULL;
    g_autofree gchar *filler = NULL;
    g_autofree gchar *expected_reason = NULL;

    fs = space_setup (h,
                      "[defaults]\nspace-margin = 24M\nsample-interval = 200ms\n"
                      "max-parallel-per-iothread = 0\n",
                      128 * MIB);
    if (fs == NULL)
        return;
    space_vm_start (h, &vm, 2, 40 * MIB, fs);
    for (guint i = 0; i < vm.n; i++) {
        vm.jobs[i] = vmr_harness_migrate (h, "vm", vm.ids[i], vm.dests[i], "--speed",
                                          VMR_HARNESS_SLOW_SPEED, NULL);
        json_object_unref (
            vmr_harness_wait_job (h, vm.jobs[i], "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    }
    for (guint i = 0; i < vm.n; i++)
        vmr_harness_writer_write (vm.writers[i], WRITES);

    /*
     * under the margin, with more room left than QEMU's mirror writes at
     * once (a rate-limited copy writes its 16 MiB buffer in one go, then
     * sleeps): both pause, with the reason, before the file system is full
     */
    filler = vmr_harness_fill_leaving (fs, 20 * MIB);
    expected_reason = g_strdup_printf ("destination file system %s has ", fs);
    for (guint i = 0; i < vm.n; i++) {
        g_autoptr (JsonObject) paused
            = vmr_harness_wait_job (h, vm.jobs[i], "paused", VMR_HARNESS_JOB_TIMEOUT_S);
        const gchar *reason = space_pause_reason (paused);

        g_test_message ("%s: %s", vm.jobs[i], reason);
        g_assert_nonnull (strstr (reason, expected_reason));
        g_assert_nonnull (strstr (reason, "space-margin of 24 MiB"));
        assert_qemu_paused (h, vm.jobs[i], NULL);
    }
    g_assert_cmpuint (vmr_harness_free_bytes (fs), >, 0);
    /* the guest writes on, to its sources, without an error */
    for (guint i = 0; i < vm.n; i++) {
        vmr_harness_writer_write (vm.writers[i], WRITES);
        vmr_harness_assert_disk_on (h, vm.ids[i], vm.sources[i]);
    }
    /* a user cannot resume them while there is no room */
    {
        g_autoptr (VmrCliResult) resume = vmr_harness_cli (h, "resume", vm.jobs[0], NULL);

        vmr_cli_result_assert_error (resume, 1);
        g_assert_nonnull (strstr (resume->err, "paused for space"));
    }

    /* room again: both go on, and complete */
    g_assert_cmpint (g_unlink (filler), ==, 0);
    for (guint i = 0; i < vm.n; i++) {
        g_autoptr (JsonObject) copying
            = vmr_harness_wait_job (h, vm.jobs[i], "copying", VMR_HARNESS_JOB_TIMEOUT_S);

        g_assert_true (
            vmr_harness_json_is_null (vmr_harness_json_object (copying, "space"), "paused"));
    }
    for (guint i = 0; i < vm.n; i++)
        vmr_harness_writer_write (vm.writers[i], WRITES);
    finish_and_check (h, &vm);
    vmr_harness_unmount_tmpfs (h);
}

/*
 * The daemon looks once a minute, so QEMU meets the full file system
 * first: its mirror stops on ENOSPC (on-target-error = enospc) and the
 * daemon shows the copy paused; a policy that looks often resumes it once
 * the filler is gone
 */
static void
test_enospc_stops (VmrHarness *h, gconstpointer user_data)
{
    g_auto (SpaceVm) vm = { 0 };
    g_autofree gchar *fs = NULL;
    g_autofree gchar *filler = NULL;
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (VmrCliResult) reload = NULL;
    const gchar *reason;

    fs = space_setup (h, "[defaults]\nspace-margin = 0\nsample-interval = 60s\n", 64 * MIB);
    if (fs == NULL)
        return;
    space_vm_start (h, &vm, 1, 24 * MIB, fs);
    vm.jobs[0] = vmr_harness_migrate (h, "vm", "disk0", vm.dests[0], "--speed",
                                      VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (h, vm.jobs[0], "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (vm.writers[0], WRITES);

    filler = vmr_harness_fill_leaving (fs, 0);
    paused = vmr_harness_wait_job (h, vm.jobs[0], "paused", VMR_HARNESS_JOB_TIMEOUT_S);
    reason = space_pause_reason (paused);
    g_test_message ("%s: %s", vm.jobs[0], reason);
    g_assert_nonnull (strstr (reason, "QEMU stopped the copy"));
    g_assert_nonnull (strstr (reason, g_strerror (ENOSPC)));
    assert_qemu_paused (h, vm.jobs[0], "nospace");
    vmr_harness_writer_write (vm.writers[0], WRITES);
    vmr_harness_assert_disk_on (h, "disk0", vm.sources[0]);

    g_assert_cmpint (g_unlink (filler), ==, 0);
    g_free (
        vmr_harness_write_policy (h, "[defaults]\nspace-margin = 0\nsample-interval = 200ms\n"));
    reload = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reload);
    json_object_unref (vmr_harness_wait_job (h, vm.jobs[0], "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (vm.writers[0], WRITES);
    finish_and_check (h, &vm);
    vmr_harness_unmount_tmpfs (h);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/space/refused", NULL, test_refused);
    VMR_HARNESS_ADD_NO_DAEMON ("/space/thin-fits", NULL, test_thin_fits);
    VMR_HARNESS_ADD_NO_DAEMON ("/space/shared-refused", NULL, test_shared_refused);
    VMR_HARNESS_ADD_NO_DAEMON ("/space/pause-resume", NULL, test_pause_resume);
    VMR_HARNESS_ADD_NO_DAEMON ("/space/enospc-stops", NULL, test_enospc_stops);
    return g_test_run ();
}
