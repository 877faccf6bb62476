#define G_LOG_DOMAIN "vmr-test"

/*
 * The destinations of libvirt's domains, with a real libvirtd: a file
 * written where a queued job's destination was to be made (libvirt would
 * refuse to copy onto it, "exists") stays with its bytes, and the job fails
 * with one line; the disk of a domain that is defined and does not run is
 * refused as a destination as a running domain's is, and keeps its bytes;
 * a file the daemon made and that was swapped for a link before libvirt
 * opened it (a qemu-img first in the daemon's PATH swaps it while it
 * formats the file) is never handed to libvirt, and what the link leads to
 * is not touched. The copies that run move their bytes, checked.
 */

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "harness-e2e.h"

#define MIB        (1024 * 1024)
#define IMAGE_SIZE (64 * MIB)
#define PRECIOUS   "written by another host sharing the storage\n"

/* a running domain with vda on the raw image @image_name (pattern @seed); its name */
static gchar *
start_domain (VmrE2e *e, const gchar *image_name, guint64 seed, gchar **out_source)
{
    g_autofree gchar *source
        = vmr_harness_create_image (&e->h, image_name, "raw", IMAGE_SIZE, seed);
    VmrE2eDisk disk = { source, "raw", 0 };
    g_autofree gchar *name = vmr_e2e_define_domain (e, &disk);

    vmr_e2e_start_domain (e, name);
    *out_source = g_steal_pointer (&source);
    return g_steal_pointer (&name);
}

static void
assert_holds (const gchar *path, const gchar *text)
{
    g_autofree gchar *contents = NULL;

    g_assert_true (g_file_get_contents (path, &contents, NULL, NULL));
    g_assert_cmpstr (contents, ==, text);
}

/* ---- a file written where a queued job's destination was to be made ---- */

static void
test_taken_while_queued (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source_a = NULL;
    g_autofree gchar *source_b = NULL;
    g_autofree gchar *a = NULL;
    g_autofree gchar *b = NULL;
    g_autofree gchar *dest_a = NULL;
    g_autofree gchar *dest_b = NULL;
    g_autofree gchar *id_a = NULL;
    g_autofree gchar *id_b = NULL;
    g_autofree gchar *reason = NULL;
    g_autoptr (JsonObject) waits = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) pivoted = NULL;
    g_autoptr (JsonObject) done = NULL;
    g_autofree gchar *expected_a = NULL;
    g_autofree gchar *expected_b = NULL;
    g_autofree gchar *live_b = NULL;
    g_autofree gchar *live_a = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    a = start_domain (e, "a.raw", 0x29e, &source_a);
    expected_a = vmr_harness_expected_path (source_a);
    b = start_domain (e, "b.raw", 0x29f, &source_b);
    expected_b = vmr_harness_expected_path (source_b);
    g_free (vmr_harness_write_policy (&e->h, "[defaults]\nmax-parallel = 1\n"
                                             "max-parallel-per-iothread = 0\n"));
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, a, TRUE, 10000));
    json_object_unref (vmr_e2e_wait_domain (e, b, TRUE, 10000));
    dest_a = vmr_harness_path (&e->h, "dest-a.raw");
    dest_b = vmr_harness_path (&e->h, "dest-b.raw");
    id_a = vmr_harness_migrate (&e->h, a, "vda", dest_a, "--speed", VMR_HARNESS_SLOW_SPEED,
                                "--manual-pivot", NULL);
    copying = vmr_harness_wait_job (&e->h, id_a, "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    id_b = vmr_harness_migrate (&e->h, b, "vda", dest_b, NULL);
    waits = vmr_harness_get_job (&e->h, id_b);
    g_assert_cmpstr (vmr_json_job_state (waits), ==, "queued");

    /* someone else's file, where libvirt would refuse to copy ("exists") */
    g_assert_true (g_file_set_contents (dest_b, PRECIOUS, -1, NULL));
    unlimited = vmr_harness_job_command (&e->h, "set-speed", id_a, "0");
    synced = vmr_harness_wait_job (&e->h, id_a, "synced", 120);
    /* the file first: it stays whatever the line says */
    json_object_unref (vmr_harness_wait_job (&e->h, id_b, "failed", VMR_HARNESS_JOB_TIMEOUT_S));
    assert_holds (dest_b, PRECIOUS);
    reason = g_strdup_printf ("destination %s exists; pass --reuse to copy onto it", dest_b);
    vmr_harness_assert_failed_with (&e->h, id_b, reason);
    live_b = vmr_e2e_domblk_source (b, "vda", FALSE);
    g_assert_cmpstr (live_b, ==, source_b);

    pivoted = vmr_harness_job_command (&e->h, "pivot", id_a, NULL);
    done = vmr_harness_wait_job (&e->h, id_a, "completed", 60);
    live_a = vmr_e2e_domblk_source (a, "vda", FALSE);
    g_assert_cmpstr (live_a, ==, dest_a);
    vmr_e2e_destroy_domain (e, a);
    vmr_e2e_destroy_domain (e, b);
    vmr_harness_assert_image_equals (dest_a, "raw", expected_a);
    vmr_harness_assert_image_equals (source_b, "raw", expected_b);
    assert_holds (dest_b, PRECIOUS);
}

/* ---- the disk of a domain that is defined and does not run ---- */

static void
test_defined_domain_disk (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *running = NULL;
    g_autofree gchar *other_image = NULL;
    g_autofree gchar *other = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *reason = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autofree gchar *other_expected = NULL;
    g_autofree gchar *expected = NULL;
    VmrE2eDisk other_disk = { NULL, "raw", 0 };

    if (vmr_harness_skipped (&e->h))
        return;
    other_image = vmr_harness_create_image (&e->h, "other.raw", "raw", IMAGE_SIZE, 0x2a0);
    other_expected = vmr_harness_expected_path (other_image);
    other_disk.path = other_image;
    other = vmr_e2e_define_domain (e, &other_disk);
    running = start_domain (e, "running.raw", 0x2a1, &source);
    expected = vmr_harness_expected_path (source);
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, running, TRUE, 10000));
    before = vmr_harness_snapshot (e->h.dir, "daemon.log");

    /* QEMU's locks would not stop it: the other domain does not run */
    refused = vmr_harness_cli (&e->h, "migrate", running, "vda", other_image, "--reuse", NULL);
    vmr_cli_result_assert_error (refused, 1);
    reason
        = g_strdup_printf ("is the disk vda of domain %s, which is defined and not running", other);
    if (strstr (refused->err, reason) == NULL)
        vmr_fail ("the migration was refused, but not for \"%s\": %s", reason, refused->err);
    after = vmr_harness_snapshot (e->h.dir, "daemon.log");
    g_assert_cmpstr (after, ==, before);
    vmr_harness_assert_image_equals (other_image, "raw", other_expected);
    vmr_e2e_destroy_domain (e, running);
    vmr_harness_assert_image_equals (source, "raw", expected);
}

/* ---- the file swapped for a link before libvirt opened it ---- */

static void
test_swapped_before_libvirt (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *bin = NULL;
    g_autofree gchar *outside = vmr_harness_path (&e->h, "outside");
    g_autofree gchar *victim = NULL;
    g_autofree gchar *dest = vmr_harness_path (&e->h, "dest.qcow2");
    g_autofree gchar *old_path = g_strdup (g_getenv ("PATH"));
    g_autofree gchar *path = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *live = NULL;
    struct stat st;

    if (vmr_harness_skipped (&e->h))
        return;
    g_assert_cmpint (g_mkdir (outside, 0755), ==, 0);
    victim = g_build_filename (outside, "victim.qcow2", NULL);
    g_assert_true (g_file_set_contents (victim, PRECIOUS, -1, NULL));
    g_assert_cmpint (g_chmod (victim, 0600), ==, 0);
    bin = vmr_harness_swapping_qemu_img (&e->h, dest, victim);

    name = start_domain (e, "source.raw", 0x2a2, &source);
    expected = vmr_harness_expected_path (source);
    /* the daemon finds the swapping qemu-img first; the test's own calls do not */
    path = g_strconcat (bin, ":", old_path, NULL);
    g_setenv ("PATH", path, TRUE);
    vmr_e2e_start_daemon (e, TRUE);
    g_setenv ("PATH", old_path, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, name, TRUE, 10000));
    before = vmr_harness_snapshot (outside, NULL);

    writer = vmr_e2e_writer_new (name, expected, 0x2a3);
    vmr_harness_writer_write (writer, 10);
    refused = vmr_harness_cli (&e->h, "migrate", name, "vda", dest, "--format", "qcow2", NULL);
    vmr_cli_result_assert_error (refused, 1);
    if (strstr (refused->err, "no longer leads to the file the copy writes") == NULL)
        vmr_fail ("the migration was refused, but not because its file was swapped: %s",
                  refused->err);
    vmr_harness_assert_failed_with (&e->h, "vmr-1", "no longer leads to the file the copy writes");
    /* libvirt never opened, labelled or wrote the file the link leads to */
    after = vmr_harness_snapshot (outside, NULL);
    g_assert_cmpstr (after, ==, before);
    assert_holds (victim, PRECIOUS);
    g_assert_cmpint (stat (victim, &st), ==, 0);
    g_assert_cmpint (st.st_uid, ==, 0);
    g_assert_cmpint (st.st_mode & 07777, ==, 0600);
    live = vmr_e2e_domblk_source (name, "vda", FALSE);
    g_assert_cmpstr (live, ==, source);
    vmr_harness_writer_write (writer, 10);
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (source, "raw", expected);
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    VMR_E2E_ADD ("/e2e/libvirt-destination/taken-while-queued", NULL, test_taken_while_queued);
    VMR_E2E_ADD ("/e2e/libvirt-destination/defined-domain-disk", NULL, test_defined_domain_disk);
    VMR_E2E_ADD ("/e2e/libvirt-destination/swapped-before-libvirt", NULL,
                 test_swapped_before_libvirt);
    return vmr_e2e_run (TRUE);
}
