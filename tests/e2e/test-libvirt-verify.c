#define G_LOG_DOMAIN "vmr-test"

/*
 * Verification of the copies of libvirt domains after their pivot
 * (migrate --verify, virt-mirror verify ID), with a real libvirtd: a clean
 * copy verifies clean while guest writes go on through the copy, the pivot
 * and the verifications; bytes flipped in the destination behind QEMU's
 * back, after the sync and before the pivot, are named by their range,
 * with exit status 1, and the old source stays as it was; a copy made
 * without --verify cannot be verified, and says why; `verify ID` works
 * after a restart of the daemon while QEMU and its bitmap are there. After each, QEMU keeps
 * no export, no NBD server and no copy of the bitmap.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "harness-e2e.h"

#define IMAGE_SIZE (64 * 1024 * 1024)
/* what the flip test changes in the destination: 8 KiB at 40 MiB + 12 KiB */
#define FLIP_OFFSET (40 * 1024 * 1024 + 12 * 1024)
#define FLIP_LENGTH (8 * 1024)
/*
 * guest writes in each phase, each one a virsh run (a few tenths of a second):
 * five random extents, all checked byte for byte at the end
 */
#define E2E_WRITES 5
/* at most this many guest writes while one command runs */
#define MAX_WRITES 2000

/* asserts that @text contains @part */
static void
assert_has (const gchar *text, const gchar *part, const gchar *what)
{
    if (text == NULL || strstr (text, part) == NULL)
        vmr_fail ("%s does not contain '%s': %s", what, part, text != NULL ? text : "(null)");
}

/* QEMU's whole reply to @command (a JSON object text) through libvirt */
static JsonObject *
monitor (const gchar *domain, const gchar *command)
{
    g_autofree gchar *out = vmr_e2e_virsh_ok ("qemu-monitor-command", domain, command, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();

    g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
    return json_object_ref (vmr_harness_json_node_object (json_parser_get_root (parser)));
}

/*
 * QEMU keeps nothing of a verification: no export, no NBD server (stopping
 * it fails), and of the job's bitmaps only the pivot's (libvirt keeps one of
 * its own)
 */
static void
assert_no_leftovers (const gchar *domain, const gchar *job_id)
{
    g_autoptr (JsonObject) exports = monitor (domain, "{\"execute\": \"query-block-exports\"}");
    g_autoptr (JsonObject) stopped = monitor (domain, "{\"execute\": \"nbd-server-stop\"}");
    g_autoptr (JsonObject) nodes = monitor (
        domain, "{\"execute\": \"query-named-block-nodes\", \"arguments\": {\"flat\": true}}");
    g_autofree gchar *pivot = g_strdup_printf ("%s-pivot", job_id);
    g_autofree gchar *prefix = g_strdup_printf ("%s-", job_id);
    JsonArray *list = vmr_harness_json_array (nodes, "return");

    g_assert_cmpuint (json_array_get_length (vmr_harness_json_array (exports, "return")), ==, 0);
    g_assert_true (json_object_has_member (stopped, "error"));
    for (guint i = 0; i < json_array_get_length (list); i++) {
        JsonObject *node = vmr_harness_json_element (list, i);
        JsonArray *bitmaps = json_object_has_member (node, "dirty-bitmaps")
                                 ? vmr_harness_json_array (node, "dirty-bitmaps")
                                 : NULL;

        for (guint b = 0; bitmaps != NULL && b < json_array_get_length (bitmaps); b++) {
            const gchar *name
                = vmr_harness_json_string (vmr_harness_json_element (bitmaps, b), "name");

            if (g_str_has_prefix (name, prefix))
                g_assert_cmpstr (name, ==, pivot);
        }
    }
}

static JsonObject *
verification_of (JsonObject *job)
{
    return vmr_harness_json_object (job, "verification");
}

/* what a test copies: the domain, its source, the source's pristine copy, the destination */
typedef struct {
    gchar *name;
    gchar *source;
    gchar *expected;
    gchar *dest;
    const gchar *format; /* the destination's */
    VmrHarnessWriter *writer;
} Copy;

static void
copy_clear (Copy *c)
{
    /* the writer names the domain: it goes first */
    g_clear_pointer (&c->writer, vmr_harness_writer_free);
    g_free (c->name);
    g_free (c->source);
    g_free (c->expected);
    g_free (c->dest);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Copy, copy_clear)

/* a running domain on a fresh raw vda known to the daemon, and a writer on it */
static void
start_domain (VmrE2e *e, const gchar *format, guint64 seed, Copy *c)
{
    VmrE2eDisk disk = { NULL, "raw", 0 };
    g_autofree gchar *dest_name = g_strdup_printf ("dest.%s", format);

    c->format = format;
    c->source = vmr_harness_create_image (&e->h, "source.raw", "raw", IMAGE_SIZE, seed);
    c->expected = vmr_harness_expected_path (c->source);
    c->dest = vmr_harness_path (&e->h, dest_name);
    disk.path = c->source;
    c->name = vmr_e2e_define_domain (e, &disk);
    vmr_e2e_start_domain (e, c->name);
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, c->name, TRUE, 10000));
    c->writer = vmr_e2e_writer_new (c->name, c->expected, seed);
}

/* runs the CLI with @args while the guest writes, until the job's verification has ended */
static VmrCliResult *
run_writing (VmrE2e *e, Copy *c, const gchar *const *args)
{
    VmrCliRun *run = vmr_harness_cli_spawnv (&e->h, args);

    vmr_harness_wait_job_count (&e->h, 1);
    for (guint i = 0; i < MAX_WRITES && !vmr_harness_verification_ended (&e->h, "vmr-1"); i++)
        vmr_harness_writer_write (c->writer, 1);
    return vmr_harness_cli_wait (run);
}

/*
 * A clean copy verifies clean: migrate --verify --wait while the guest
 * writes through the copy, the pivot and the verification, and `verify ID`
 * while it writes again. The job records it passed, the guest's writes were
 * left out, and the bytes the domain ends on are the expected ones.
 */
static void
test_clean (VmrE2e *e, gconstpointer data)
{
    g_auto (Copy) c = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    g_autoptr (VmrCliResult) shown = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autofree gchar *live = NULL;
    gint64 written = 0;

    if (vmr_harness_skipped (&e->h))
        return;
    start_domain (e, data, 51, &c);
    {
        const gchar *const args[] = { "migrate", c.name,     "vda",    c.dest, "--format",
                                      c.format,  "--verify", "--wait", NULL };

        result = run_writing (e, &c, args);
    }
    g_test_message ("migrate --verify: %s%s", result->out, result->err);
    vmr_cli_result_assert_ok (result);
    assert_has (result->out, "Job vmr-1 verified: ", "migrate --verify's output");
    for (guint round = 0; round < 2; round++) {
        JsonObject *v;

        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_get_job (&e->h, "vmr-1");
        v = verification_of (job);
        g_test_message (
            "verification %u: %s in %" G_GINT64_FORMAT " ms, compared %" G_GINT64_FORMAT
            ", zero %" G_GINT64_FORMAT ", written %" G_GINT64_FORMAT " bytes; %u writes",
            round, vmr_harness_json_string (v, "state"),
            (vmr_harness_json_int (v, "finished") - vmr_harness_json_int (v, "started")) / 1000,
            vmr_harness_json_int (v, "compared"), vmr_harness_json_int (v, "zero"),
            vmr_harness_json_int (v, "written"), vmr_harness_writer_count (c.writer));
        g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "passed");
        g_assert_cmpint (vmr_harness_json_int (v, "covered"), ==, IMAGE_SIZE);
        g_assert_cmpint (vmr_harness_json_int (v, "compared"), >, 0);
        g_assert_cmpint (vmr_harness_json_int (v, "mismatched-ranges"), ==, 0);
        written += vmr_harness_json_int (v, "written");
        assert_no_leftovers (c.name, "vmr-1");
        if (round == 0) {
            /* once more, asked for while the guest writes */
            const gchar *const args[] = { "verify", "vmr-1", NULL };

            again = run_writing (e, &c, args);
            g_test_message ("verify: %s%s", again->out, again->err);
            vmr_cli_result_assert_ok (again);
        }
    }
    /* the guest did write meanwhile: the bitmap left its writes out */
    g_assert_cmpint (written, >, 0);
    shown = vmr_harness_cli (&e->h, "job", "vmr-1", NULL);
    vmr_cli_result_assert_ok (shown);
    assert_has (shown->out, "completed, verified", "job");
    assert_has (shown->out, "verification passed", "job's history");
    live = vmr_e2e_domblk_source (c.name, "vda", FALSE);
    g_assert_cmpstr (live, ==, c.dest);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.dest, c.format, c.expected);
}

/*
 * Bytes flipped in the destination behind QEMU's back, after the sync and
 * before the pivot, in a range nothing writes afterwards: migrate --verify
 * --wait fails with exit status 1 naming that range, the job shows it, a
 * second `verify ID` finds it again, and the old source is the guest's disk
 * as it was at the pivot.
 */
static void
test_mismatch (VmrE2e *e, gconstpointer data)
{
    g_auto (Copy) c = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    g_autoptr (VmrCliResult) listing = NULL;
    g_autofree gchar *range = g_strdup_printf ("%d+%d", FLIP_OFFSET, FLIP_LENGTH);
    g_autofree gchar *live = NULL;
    VmrCliRun *run;

    if (vmr_harness_skipped (&e->h))
        return;
    start_domain (e, data, 52, &c);
    run = vmr_harness_cli_spawn (&e->h, "migrate", c.name, "vda", c.dest, "--format", c.format,
                                 "--verify", "--manual-pivot", "--wait", NULL);
    vmr_harness_wait_job_count (&e->h, 1);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    json_object_unref (vmr_harness_wait_job (&e->h, "vmr-1", "synced", VMR_HARNESS_JOB_TIMEOUT_S));
    /* writes while in sync reach both images; none comes after the flip */
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_harness_flip_bytes (c.dest, c.expected, FLIP_OFFSET,
                            vmr_harness_host_offset (c.dest, c.format, FLIP_OFFSET), FLIP_LENGTH);
    json_object_unref (vmr_harness_job_command (&e->h, "pivot", "vmr-1", NULL));
    result = vmr_harness_cli_wait (run);
    g_test_message ("migrate --verify: %s", result->err);
    vmr_cli_result_assert_error (result, 1);
    assert_has (result->err, "verify failed", "migrate --verify's error");
    assert_has (result->err, range, "migrate --verify's error");

    vmr_harness_assert_verify_failed_at (&e->h, "vmr-1", FLIP_OFFSET, FLIP_LENGTH);
    listing = vmr_harness_cli (&e->h, "jobs", NULL);
    vmr_cli_result_assert_ok (listing);
    assert_has (listing->out, "completed, verify failed", "jobs");
    assert_no_leftovers (c.name, "vmr-1");

    /* the bitmap of the pivot stays: the copy can be verified again */
    again = vmr_harness_cli (&e->h, "verify", "vmr-1", NULL);
    vmr_cli_result_assert_error (again, 1);
    assert_has (again->err, range, "verify's error");
    assert_no_leftovers (c.name, "vmr-1");

    /* the domain runs on the destination; the old source is the disk as it was at the pivot */
    live = vmr_e2e_domblk_source (c.name, "vda", FALSE);
    g_assert_cmpstr (live, ==, c.dest);
    g_assert_true (g_file_test (c.source, G_FILE_TEST_EXISTS));
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.source, "raw", c.expected);
    /* and the destination is that disk but for the flipped bytes */
    vmr_harness_flip_bytes (c.expected, c.expected, FLIP_OFFSET, FLIP_OFFSET, FLIP_LENGTH);
    vmr_harness_assert_image_equals (c.dest, c.format, c.expected);
}

/*
 * A copy made without --verify: passthrough taints a domain, so nothing
 * recorded the guest's writes after its pivot, and `verify ID` says so in
 * one line, records the error, and leaves nothing in QEMU.
 */
static void
test_unrecorded (VmrE2e *e, gconstpointer data)
{
    g_auto (Copy) c = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (JsonObject) job = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    start_domain (e, "raw", 53, &c);
    result = vmr_harness_cli (&e->h, "migrate", c.name, "vda", c.dest, "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    refused = vmr_harness_cli (&e->h, "verify", "vmr-1", NULL);
    g_test_message ("verify: %s", refused->err);
    vmr_cli_result_assert_error (refused, 1);
    assert_has (refused->err, "no record of the guest's writes since the pivot", "verify's error");
    job = vmr_harness_get_job (&e->h, "vmr-1");
    g_assert_cmpstr (vmr_harness_json_string (verification_of (job), "state"), ==, "error");
    assert_no_leftovers (c.name, "vmr-1");
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.dest, "raw", c.expected);
}

/*
 * `verify ID` after a restart of the daemon: the finished job comes back
 * from its record and verifies clean while the guest writes, as long as QEMU
 * and its bitmap are still there; once QEMU has restarted, the bitmap is
 * gone and the verification says so in one line. A job with no record is
 * unknown. An old source that qemu-nbd cannot open is one line too.
 */
static void
test_after_restart (VmrE2e *e, gconstpointer data)
{
    g_auto (Copy) c = { 0 };
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) again = NULL;
    g_autoptr (VmrCliResult) gone = NULL;
    g_autoptr (VmrCliResult) unknown = NULL;
    g_autoptr (JsonObject) job = NULL;
    const gchar *const verify[] = { "verify", "vmr-1", NULL };

    if (vmr_harness_skipped (&e->h))
        return;
    start_domain (e, "raw", 54, &c);
    result = vmr_harness_cli (&e->h, "migrate", c.name, "vda", c.dest, "--verify", "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_kill_daemon (e);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, c.name, TRUE, 10000));

    again = run_writing (e, &c, verify);
    g_test_message ("verify after the restart: %s%s", again->out, again->err);
    vmr_cli_result_assert_ok (again);
    assert_has (again->out, "Job vmr-1 verified: ", "verify's output");
    job = vmr_harness_get_job (&e->h, "vmr-1");
    g_assert_cmpstr (vmr_json_job_state (job), ==, "completed");
    g_assert_cmpstr (vmr_harness_json_string (verification_of (job), "state"), ==, "passed");
    g_assert_cmpint (vmr_harness_json_int (verification_of (job), "covered"), ==, IMAGE_SIZE);
    assert_no_leftovers (c.name, "vmr-1");

    /* an old source qemu-nbd cannot open: one line, and QEMU keeps nothing of the attempt */
    {
        g_autofree gchar *moved = g_strconcat (c.source, ".moved", NULL);
        g_autoptr (VmrCliResult) unreadable = NULL;

        g_assert_cmpint (g_rename (c.source, moved), ==, 0);
        g_assert_cmpint (g_mkdir (c.source, 0700), ==, 0);
        unreadable = vmr_harness_cli (&e->h, "verify", "vmr-1", NULL);
        g_test_message ("verify of a directory: %s", unreadable->err);
        vmr_cli_result_assert_error (unreadable, 1);
        assert_has (unreadable->err, "could not be verified", "verify's error");
        assert_no_leftovers (c.name, "vmr-1");
        g_assert_cmpint (g_rmdir (c.source), ==, 0);
        g_assert_cmpint (g_rename (moved, c.source), ==, 0);
    }

    unknown = vmr_harness_cli (&e->h, "verify", "vmr-9", NULL);
    vmr_cli_result_assert_error (unknown, 1);
    assert_has (unknown->err, "unknown job 'vmr-9'", "verify of an unknown job");

    /* a new QEMU (the domain restarted, on the destination) has no bitmap */
    g_clear_pointer (&c.writer, vmr_harness_writer_free);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.dest, "raw", c.expected);
    vmr_e2e_start_domain (e, c.name);
    json_object_unref (vmr_e2e_wait_domain (e, c.name, TRUE, 10000));
    gone = vmr_harness_cli (&e->h, "verify", "vmr-1", NULL);
    g_test_message ("verify after QEMU's restart: %s", gone->err);
    vmr_cli_result_assert_error (gone, 1);
    assert_has (gone->err, "no record of the guest's writes since the pivot", "verify's error");
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.dest, "raw", c.expected);
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    /* a raw destination is read with pread(), a qcow2 one through QEMU's NBD server */
    VMR_E2E_ADD ("/e2e/libvirt-verify/clean/raw", "raw", test_clean);
    VMR_E2E_ADD ("/e2e/libvirt-verify/clean/qcow2", "qcow2", test_clean);
    VMR_E2E_ADD ("/e2e/libvirt-verify/mismatch/raw", "raw", test_mismatch);
    VMR_E2E_ADD ("/e2e/libvirt-verify/mismatch/qcow2", "qcow2", test_mismatch);
    VMR_E2E_ADD ("/e2e/libvirt-verify/unrecorded", NULL, test_unrecorded);
    VMR_E2E_ADD ("/e2e/libvirt-verify/after-restart", NULL, test_after_restart);
    return vmr_e2e_run (TRUE);
}
