#define G_LOG_DOMAIN "vmr-test"

/*
 * A destination tree that someone else writes too, between the request and
 * the copy: a directory swapped for a symbolic link that leads out of the
 * allowed tree while the job waits its turn; the file the daemon made moved
 * away and replaced by a link to a file elsewhere while it is formatted
 * (a qemu-img first in the daemon's PATH does the swap, then runs the real
 * one: the step is the same every time); the policy tightened by a reload
 * while a job waits. Nothing outside the allowed tree is made, written or
 * chowned (a snapshot of it, and the owner and mode of the file there, are
 * the same before and after), the job fails with one line, and the copies
 * that go on move their bytes. And the owner and permission bits the daemon
 * gives a file it makes: the source's, never its set-id bits.
 */

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "harness.h"

#define MIB (1024 * 1024)
/* the copy ahead: at 1 MiB/s after its first 16 MiB, busy for most of a minute */
#define AHEAD_SIZE (64 * MIB)
#define WAITS_SIZE (8 * MIB)
#define ONE_AT_A_TIME                                                                              \
    "[defaults]\nmax-parallel = 1\nmax-parallel-per-iothread = 0\nsample-interval = 60s\n"
#define PRECIOUS "a file outside the allowed tree, which no copy may touch\n"

static gchar *
make_dir (VmrHarness *h, const gchar *name)
{
    gchar *path = vmr_harness_path (h, name);

    g_assert_cmpint (g_mkdir (path, 0755), ==, 0);
    return path;
}

/* a VM "vm" with disk0 (AHEAD_SIZE) and disk1 (WAITS_SIZE), the daemon with @policy */
typedef struct {
    gchar *sources[2];
    gchar *expected[2];
    gchar *policy;
} TwoDisks;

static void
two_disks_clear (TwoDisks *t)
{
    for (guint i = 0; i < 2; i++) {
        g_free (t->sources[i]);
        g_free (t->expected[i]);
    }
    g_free (t->policy);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TwoDisks, two_disks_clear)

static void
start_two_disks (VmrHarness *h, TwoDisks *t, const gchar *policy)
{
    static const gchar *const ids[] = { "disk0", "disk1" };
    const gsize sizes[] = { AHEAD_SIZE, WAITS_SIZE };
    VmrHarnessDisk disks[2];

    for (guint i = 0; i < 2; i++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", i);

        t->sources[i] = vmr_harness_create_image (h, name, "raw", sizes[i], 0x29a + i);
        t->expected[i] = vmr_harness_expected_path (t->sources[i]);
        disks[i] = (VmrHarnessDisk){ ids[i], t->sources[i], "raw", NULL };
    }
    t->policy = vmr_harness_write_policy (h, policy);
    vmr_harness_start_qemu (h, disks, 2);
    vmr_harness_start_daemon (h, "--policy", t->policy, NULL);
    vmr_harness_attach (h, "vm");
}

/* disk0 copies slowly to @dest0, and waits for a manual pivot; disk1 waits its turn for @dest1 */
static void
queue_behind (VmrHarness *h, const gchar *dest0, const gchar *dest1, gchar **id0, gchar **id1)
{
    g_autoptr (JsonObject) ahead = NULL;
    g_autoptr (JsonObject) waits = NULL;

    *id0 = vmr_harness_migrate (h, "vm", "disk0", dest0, "--speed", VMR_HARNESS_SLOW_SPEED,
                                "--manual-pivot", NULL);
    ahead = vmr_harness_wait_job (h, *id0, "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    *id1 = vmr_harness_migrate (h, "vm", "disk1", dest1, NULL);
    waits = vmr_harness_get_job (h, *id1);
    g_assert_cmpstr (vmr_json_job_state (waits), ==, "queued");
    g_assert_cmpstr (vmr_harness_json_string (waits, "waiting-for"), ==, "max-parallel");
}

/* @id failed with one line that says @reason, and left nothing in QEMU */
static void
assert_failed_for (VmrHarness *h, const gchar *id, const gchar *reason)
{
    vmr_harness_assert_failed_with (h, id, reason);
    g_assert_null (vmr_harness_find_block_job (h, id));
}

/* the copy ahead, unlimited, in sync: the job behind it has its turn */
static void
sync_ahead (VmrHarness *h, const gchar *id0)
{
    json_object_unref (vmr_harness_job_command (h, "set-speed", id0, "0"));
    json_object_unref (vmr_harness_wait_job (h, id0, "synced", 120));
}

/* the copy ahead cut over; then both disks' bytes */
static void
finish_ahead (VmrHarness *h, TwoDisks *t, const gchar *id0, const gchar *dest0)
{
    json_object_unref (vmr_harness_job_command (h, "pivot", id0, NULL));
    json_object_unref (vmr_harness_wait_job (h, id0, "completed", 60));
    vmr_harness_assert_disk_on (h, "disk1", t->sources[1]);
    vmr_harness_assert_migrated (h, id0, "disk0", t->sources[0], dest0, "raw", t->expected[0]);
    vmr_harness_assert_image_equals (t->sources[1], "raw", t->expected[1]);
}

/* ---- a directory swapped for a link while the job waits ---- */

typedef struct {
    gboolean refuse_links; /* destination-symlinks = refuse; else allowed-destinations */
    const gchar *reason;   /* what the job's line says */
} SwapCase;

static const SwapCase swap_refused = {
    TRUE,
    "is a symbolic link, which the policy's destination-symlinks = refuse does not allow",
};
static const SwapCase swap_outside = {
    FALSE,
    "is not in the policy's allowed-destinations",
};

static void
test_swapped_while_queued (VmrHarness *h, gconstpointer user_data)
{
    const SwapCase *c = user_data;
    g_auto (TwoDisks) t = { 0 };
    g_autofree gchar *allowed = NULL;
    g_autofree gchar *sub = NULL;
    g_autofree gchar *outside = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *dest0 = NULL;
    g_autofree gchar *dest1 = NULL;
    g_autofree gchar *aside = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *id0 = NULL;
    g_autofree gchar *id1 = NULL;

    allowed = make_dir (h, "allowed");
    sub = g_build_filename (allowed, "sub", NULL);
    g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
    outside = make_dir (h, "outside");
    g_free (vmr_harness_create_file (h, "outside/precious.raw", MIB, 0x77));
    policy = c->refuse_links
                 ? g_strdup (ONE_AT_A_TIME "destination-symlinks = refuse\n")
                 : g_strdup_printf (ONE_AT_A_TIME "allowed-destinations = %s/**\n", allowed);
    start_two_disks (h, &t, policy);
    dest0 = g_build_filename (allowed, "disk0.raw", NULL);
    dest1 = g_build_filename (sub, "disk1.raw", NULL);
    queue_behind (h, dest0, dest1, &id0, &id1);

    /* accepted as it was; while it waits, its directory becomes a link out of the tree */
    aside = g_strconcat (sub, ".before", NULL);
    g_assert_cmpint (g_rename (sub, aside), ==, 0);
    g_assert_cmpint (symlink (outside, sub), ==, 0);
    before = vmr_harness_snapshot (outside, NULL);

    /* its turn comes once the copy ahead is in sync */
    sync_ahead (h, id0);
    assert_failed_for (h, id1, c->reason);
    finish_ahead (h, &t, id0, dest0);
    after = vmr_harness_snapshot (outside, NULL);
    g_assert_cmpstr (after, ==, before);
    g_assert_false (g_file_test (dest1, G_FILE_TEST_EXISTS));
}

/* ---- the file swapped for a link between its making and QEMU's open ---- */

static void
test_swapped_while_formatting (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *allowed = NULL;
    g_autofree gchar *outside = NULL;
    g_autofree gchar *victim = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *bin = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *old_path = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *kept = NULL;
    g_autofree gchar *moved = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    struct stat st;

    allowed = make_dir (h, "allowed");
    outside = make_dir (h, "outside");
    victim = g_build_filename (outside, "victim.qcow2", NULL);
    g_assert_true (g_file_set_contents (victim, PRECIOUS, -1, NULL));
    g_assert_cmpint (g_chmod (victim, 0600), ==, 0);
    dest = g_build_filename (allowed, "disk0.qcow2", NULL);
    bin = vmr_harness_swapping_qemu_img (h, dest, victim);
    policy = vmr_harness_write_policy (h, "[defaults]\n");
    /* the daemon finds the swapping qemu-img first; the test's own calls do not */
    old_path = g_strdup (g_getenv ("PATH"));
    path = g_strconcat (bin, ":", old_path, NULL);
    g_setenv ("PATH", path, TRUE);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    g_setenv ("PATH", old_path, TRUE);
    vmr_harness_start_vm (h, &vm, WAITS_SIZE, 0x29c);
    /* the source's owner: what the daemon gives the file it makes, and nothing else */
    g_assert_cmpint (chown (vm.source, 4321, 4322), ==, 0);
    before = vmr_harness_snapshot (outside, NULL);

    vmr_harness_writer_write (vm.writer, 20);
    refused = vmr_harness_cli (h, "migrate", "vm", "disk0", dest, "--format", "qcow2", NULL);
    vmr_cli_result_assert_error (refused, 1);
    if (strstr (refused->err, "no longer leads to the file the copy writes") == NULL)
        vmr_fail ("the migration was refused, but not because its file was swapped: %s",
                  refused->err);
    assert_failed_for (h, "vmr-1", "no longer leads to the file the copy writes");

    /* outside the tree: not made, not written, not chowned */
    after = vmr_harness_snapshot (outside, NULL);
    g_assert_cmpstr (after, ==, before);
    g_assert_true (g_file_get_contents (victim, &kept, NULL, NULL));
    g_assert_cmpstr (kept, ==, PRECIOUS);
    g_assert_cmpint (stat (victim, &st), ==, 0);
    g_assert_cmpint (st.st_uid, ==, 0);
    g_assert_cmpint (st.st_mode & 07777, ==, 0600);
    /* what the daemon made went where the swap put it, formatted and owned as its source */
    moved = g_strconcat (dest, ".moved", NULL);
    g_assert_cmpint (lstat (moved, &st), ==, 0);
    g_assert_cmpint (st.st_uid, ==, 4321);
    g_assert_cmpint (st.st_gid, ==, 4322);
    g_assert_cmpint (lstat (dest, &st), ==, 0);
    g_assert_true (S_ISLNK (st.st_mode));

    vmr_harness_assert_node_released (h, dest);
    vmr_harness_assert_node_released (h, moved);
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* ---- a reload that tightens allowed-destinations ---- */

static void
test_reload_refuses_queued (VmrHarness *h, gconstpointer user_data)
{
    g_auto (TwoDisks) t = { 0 };
    g_autofree gchar *kept = NULL;
    g_autofree gchar *dropped = NULL;
    g_autofree gchar *dest0 = NULL;
    g_autofree gchar *dest1 = NULL;
    g_autofree gchar *tightened = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *id0 = NULL;
    g_autofree gchar *id1 = NULL;
    g_autoptr (VmrCliResult) reloaded = NULL;
    g_autoptr (JsonObject) ahead = NULL;

    kept = make_dir (h, "kept");
    dropped = make_dir (h, "dropped");
    start_two_disks (h, &t, ONE_AT_A_TIME);
    dest0 = g_build_filename (kept, "disk0.raw", NULL);
    dest1 = g_build_filename (dropped, "disk1.raw", NULL);
    queue_behind (h, dest0, dest1, &id0, &id1);
    before = vmr_harness_snapshot (dropped, NULL);

    tightened = g_strdup_printf (ONE_AT_A_TIME "allowed-destinations = %s/**\n", kept);
    g_free (vmr_harness_write_policy (h, tightened));
    reloaded = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reloaded);
    assert_failed_for (h, id1, "is not in the policy's allowed-destinations");
    /* the copy that runs goes on: its file is open in QEMU already */
    ahead = vmr_harness_get_job (h, id0);
    g_assert_cmpstr (vmr_json_job_state (ahead), ==, "copying");
    sync_ahead (h, id0);
    finish_ahead (h, &t, id0, dest0);
    after = vmr_harness_snapshot (dropped, NULL);
    g_assert_cmpstr (after, ==, before);
}

/* ---- the owner and mode of a file the daemon makes ---- */

static void
test_ownership (VmrHarness *h, gconstpointer user_data)
{
    static const gchar *const formats[] = { "raw", "qcow2" };
    g_auto (VmrHarnessVm) vm = { 0 };

    vmr_harness_start_vm (h, &vm, WAITS_SIZE, 0x29d);
    /* set-user-id and set-group-id on the source: never given to a copy */
    g_assert_cmpint (chown (vm.source, 4321, 4322), ==, 0);
    g_assert_cmpint (g_chmod (vm.source, 06640), ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
        g_autofree gchar *name = g_strdup_printf ("dest.%s", formats[i]);
        g_autofree gchar *dest = vmr_harness_path (h, name);
        g_autofree gchar *id = NULL;
        g_autoptr (JsonObject) job = NULL;
        struct stat st;

        vmr_harness_writer_write (vm.writer, 20);
        id = vmr_harness_migrate (h, "vm", "disk0", dest, "--format", formats[i], "--manual-pivot",
                                  NULL);
        job = vmr_harness_wait_job (h, id, "synced", VMR_HARNESS_JOB_TIMEOUT_S);
        g_assert_cmpint (stat (dest, &st), ==, 0);
        g_assert_cmpint (st.st_uid, ==, 4321);
        g_assert_cmpint (st.st_gid, ==, 4322);
        g_assert_cmpint (st.st_mode & 07777, ==, 0640);
        /* the copy is cancelled: its file goes, the source stays */
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_job_command (h, "cancel", id, NULL);
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
        g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    }
    vmr_harness_writer_write (vm.writer, 20);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/hostile/swapped-while-queued/refused-links", &swap_refused,
                               test_swapped_while_queued);
    VMR_HARNESS_ADD_NO_DAEMON ("/hostile/swapped-while-queued/out-of-the-tree", &swap_outside,
                               test_swapped_while_queued);
    VMR_HARNESS_ADD_NO_DAEMON ("/hostile/swapped-while-formatting", NULL,
                               test_swapped_while_formatting);
    VMR_HARNESS_ADD_NO_DAEMON ("/hostile/reload-refuses-queued", NULL, test_reload_refuses_queued);
    VMR_HARNESS_ADD ("/hostile/ownership", NULL, test_ownership);
    return g_test_run ();
}
