#define G_LOG_DOMAIN "vmr-test"

/*
 * The harness's own checks, against QEMU alone: if these fail, the other
 * integration tests cannot be trusted, whatever the daemon does.
 */

#include <string.h>

#include <glib/gstdio.h>

#include "harness.h"
#include "vmr-error.h"

#define IMAGE_SIZE (32 * 1024 * 1024)

static void
add_no_daemon (const gchar *path, void (*func) (VmrHarness *, gconstpointer))
{
    g_test_add (path, VmrHarness, NULL, vmr_harness_setup_qemu_only, func, vmr_harness_teardown);
}

static void
flip_byte (const gchar *path, goffset offset)
{
    g_autoptr (GFile) file = g_file_new_for_path (path);
    g_autoptr (GFileIOStream) stream = g_file_open_readwrite (file, NULL, NULL);
    GInputStream *in = g_io_stream_get_input_stream (G_IO_STREAM (stream));
    GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (stream));
    guint8 byte = 0;

    g_assert_nonnull (stream);
    g_assert_true (g_seekable_seek (G_SEEKABLE (stream), offset, G_SEEK_SET, NULL, NULL));
    g_assert_cmpint (g_input_stream_read (in, &byte, 1, NULL, NULL), ==, 1);
    byte ^= 0xff;
    g_assert_true (g_seekable_seek (G_SEEKABLE (stream), offset, G_SEEK_SET, NULL, NULL));
    g_assert_cmpint (g_output_stream_write (out, &byte, 1, NULL, NULL), ==, 1);
    g_assert_true (g_io_stream_close (G_IO_STREAM (stream), NULL, NULL));
}

/* the pattern is deterministic per seed, differs between seeds, survives qcow2 */
static void
test_pattern (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *a = NULL;
    g_autofree gchar *b = NULL;
    g_autofree gchar *c = NULL;
    g_autofree gchar *q = NULL;
    g_autofree gchar *a_expected = NULL;
    g_autofree gchar *c_expected = NULL;
    g_autoptr (GError) error = NULL;

    if (vmr_harness_skipped (h))
        return;
    a = vmr_harness_create_image (h, "a.raw", "raw", IMAGE_SIZE, 7);
    b = vmr_harness_create_image (h, "b.raw", "raw", IMAGE_SIZE, 7);
    c = vmr_harness_create_image (h, "c.raw", "raw", IMAGE_SIZE, 8);
    q = vmr_harness_create_image (h, "q.qcow2", "qcow2", IMAGE_SIZE, 7);
    a_expected = vmr_harness_expected_path (a);
    c_expected = vmr_harness_expected_path (c);

    vmr_harness_assert_image_equals (a, "raw", a_expected);
    vmr_harness_assert_image_equals (b, "raw", a_expected);
    vmr_harness_assert_image_equals (q, "qcow2", a_expected);
    g_assert_false (vmr_harness_image_equals (c, "raw", a_expected, &error));
    g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED);
    g_clear_error (&error);
    g_assert_false (vmr_harness_image_equals (q, "qcow2", c_expected, &error));
    g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED);
    g_clear_error (&error);

    /* a single changed byte deep inside is found, and where */
    flip_byte (a, 12345678);
    g_assert_false (vmr_harness_image_equals (a, "raw", a_expected, &error));
    g_assert_nonnull (strstr (error->message, "at byte 12345678"));
    g_clear_error (&error);
    vmr_harness_qemu_img ("convert", "-f", "raw", "-O", "qcow2", a, q, NULL);
    g_assert_false (vmr_harness_image_equals (q, "qcow2", a_expected, &error));
    g_clear_error (&error);

    /* the format is checked: a raw file is not a qcow2 image */
    g_assert_false (vmr_harness_image_equals (b, "qcow2", a_expected, &error));
}

/* the status of the job @id in query-jobs, which lists block jobs and others */
static gchar *
job_status (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (jobs);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_harness_json_string (job, "id"), id) == 0)
            return g_strdup (vmr_harness_json_string (job, "status"));
    }
    return NULL;
}

static void
wait_job (VmrHarness *h, const gchar *id, const gchar *status)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_TIME_SPAN_SECOND;

    while (TRUE) {
        g_autofree gchar *now = job_status (h, id);

        if (g_strcmp0 (now, status) == 0)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s is %s, waiting for %s", id, now, status);
        g_usleep (50 * 1000);
    }
}

/* waits until the only block job has copied something */
static void
wait_offset (VmrHarness *h)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_TIME_SPAN_SECOND;

    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_block_job (h);

        if (vmr_harness_json_int (job, "offset") > 0)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the block job copied nothing in %d s", VMR_HARNESS_JOB_TIMEOUT_S);
        g_usleep (50 * 1000);
    }
}

static void
qmp_node (VmrHarness *h, const gchar *command, const gchar *json_args)
{
    g_autoptr (JsonNode) args = json_from_string (json_args, NULL);
    g_autoptr (JsonNode) reply = NULL;

    g_assert_nonnull (args);
    reply = vmr_harness_qmp (h, command, vmr_harness_json_node_object (args));
}

/*
 * a bare mirror over the test monitor, as the daemon would do it, passes
 * every check the migration tests make
 */
static void
test_qemu_mirror (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *src = NULL;
    g_autofree gchar *dst = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *args = NULL;
    VmrHarnessDisk disk = { "disk0", NULL, "raw", "io0" };
    g_autoptr (JsonObject) job = NULL;

    if (vmr_harness_skipped (h))
        return;
    src = vmr_harness_create_image (h, "src.raw", "raw", IMAGE_SIZE, 42);
    dst = vmr_harness_path (h, "dst.raw");
    expected = vmr_harness_expected_path (src);
    disk.path = src;
    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_assert_disk_on (h, "disk0", src);

    args = g_strdup_printf ("{\"job-id\": \"create\", \"options\": {\"driver\": \"file\", "
                            "\"filename\": \"%s\", \"size\": %d}}",
                            dst, IMAGE_SIZE);
    qmp_node (h, "blockdev-create", args);
    wait_job (h, "create", "concluded");
    qmp_node (h, "job-dismiss", "{\"id\": \"create\"}");
    g_clear_pointer (&args, g_free);
    args = g_strdup_printf (
        "{\"driver\": \"file\", \"filename\": \"%s\", \"node-name\": \"dst-file\"}", dst);
    qmp_node (h, "blockdev-add", args);
    qmp_node (h, "blockdev-add",
              "{\"driver\": \"raw\", \"file\": \"dst-file\", \"node-name\": \"dst\"}");
    qmp_node (h, "blockdev-mirror",
              "{\"job-id\": \"mirror\", \"device\": \"test-fmt0\", \"target\": \"dst\", "
              "\"sync\": \"full\", \"auto-dismiss\": false, \"speed\": 1048576}");

    /* a limited copy is still running once it copied its first bytes: what the slow tests
     * rely on */
    wait_offset (h);
    job = vmr_harness_get_block_job (h);
    g_assert_cmpstr (vmr_harness_json_string (job, "status"), ==, "running");
    g_assert_cmpint (vmr_harness_json_int (job, "speed"), ==, 1048576);
    g_assert_cmpint (vmr_harness_json_int (job, "offset"), <, IMAGE_SIZE);
    vmr_harness_assert_disk_on (h, "disk0", src);

    qmp_node (h, "block-job-set-speed", "{\"device\": \"mirror\", \"speed\": 0}");
    wait_job (h, "mirror", "ready");
    qmp_node (h, "job-complete", "{\"id\": \"mirror\"}");
    wait_job (h, "mirror", "concluded");
    qmp_node (h, "job-dismiss", "{\"id\": \"mirror\"}");
    qmp_node (h, "blockdev-del", "{\"node-name\": \"test-fmt0\"}");
    qmp_node (h, "blockdev-del", "{\"node-name\": \"test-file0\"}");

    vmr_harness_assert_disk_on (h, "disk0", dst);
    vmr_harness_assert_node_released (h, src);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (dst, "raw", expected);
    vmr_harness_assert_image_equals (src, "raw", expected);
}

/* a QEMU with two disks on qcow2 and raw starts, and both are found */
static void
test_qemu_disks (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *a = NULL;
    g_autofree gchar *b = NULL;
    VmrHarnessDisk disks[] = {
        { "disk0", NULL, "qcow2", NULL },
        { "disk1", NULL, "raw", "io1" },
    };

    if (vmr_harness_skipped (h))
        return;
    a = vmr_harness_create_image (h, "a.qcow2", "qcow2", IMAGE_SIZE, 1);
    b = vmr_harness_create_image (h, "b.raw", "raw", IMAGE_SIZE, 2);
    disks[0].path = a;
    disks[1].path = b;
    vmr_harness_start_qemu (h, disks, G_N_ELEMENTS (disks));
    vmr_harness_assert_disk_on (h, "disk0", a);
    vmr_harness_assert_disk_on (h, "disk1", b);
    vmr_harness_assert_no_block_jobs (h);
    /* killed by its pid; the teardown finds nothing left to do */
    vmr_harness_kill_qemu (h);
    g_assert_null (h->qemu);
}

/*
 * the writer's extents reach the image through the device, exactly as
 * applied to the expected copy: the image equals it afterwards, and no
 * longer equals the pristine pattern; a device that cannot take -d fails
 * the write with QEMU's answer
 */
static void
test_writer (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *src = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *pristine = NULL;
    g_autofree gchar *problem = NULL;
    g_autofree gchar *contents = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    g_autoptr (VmrHarnessWriter) wrong = NULL;
    g_autoptr (GError) error = NULL;
    VmrHarnessDisk disk = { .id = "disk0", .format = "raw", .scsi = TRUE };
    gsize len = 0;

    if (vmr_harness_skipped (h))
        return;
    src = vmr_harness_create_image (h, "src.raw", "raw", IMAGE_SIZE, 7);
    expected = vmr_harness_expected_path (src);
    pristine = vmr_harness_path (h, "pristine.raw");
    g_assert_true (g_file_get_contents (expected, &contents, &len, NULL));
    g_assert_true (g_file_set_contents (pristine, contents, (gssize) len, NULL));
    disk.path = src;
    vmr_harness_start_qemu (h, &disk, 1);
    writer = vmr_harness_writer_new (h, "disk0", expected, 99);
    vmr_harness_writer_write (writer, 100);
    g_assert_cmpuint (vmr_harness_writer_count (writer), ==, 100);

    wrong = vmr_harness_writer_new (h, "no-such-disk", pristine, 1);
    g_assert_false (vmr_harness_writer_try_one (wrong, &problem));
    g_assert_nonnull (strstr (problem, "no-such-disk"));
    g_assert_cmpuint (vmr_harness_writer_count (wrong), ==, 0);

    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (src, "raw", expected);
    g_assert_false (vmr_harness_image_equals (src, "raw", pristine, &error));
    g_assert_nonnull (error);
}

/* the silent listener accepts but never greets */
static void
test_silent_listener (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *path = NULL;
    g_autoptr (VmrQmpClient) client = NULL;
    g_autoptr (GError) error = NULL;

    if (vmr_harness_skipped (h))
        return;
    path = vmr_harness_silent_listener (h);
    client = vmr_qmp_client_connect_sync (path, 300, &error);
    g_assert_null (client);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT);
}

/* root cannot create a file in the unwritable directory */
static void
test_unwritable_dir (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *dir = NULL;
    g_autofree gchar *file = NULL;
    g_autoptr (GError) error = NULL;

    if (vmr_harness_skipped (h))
        return;
    dir = vmr_harness_unwritable_dir (h);
    if (dir == NULL)
        return;
    file = g_build_filename (dir, "dest.raw", NULL);
    g_assert_false (g_file_set_contents (file, "x", 1, &error));
    g_assert_nonnull (error);
    g_assert_false (g_file_test (file, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    add_no_daemon ("/harness/pattern", test_pattern);
    add_no_daemon ("/harness/qemu-mirror", test_qemu_mirror);
    add_no_daemon ("/harness/qemu-disks", test_qemu_disks);
    add_no_daemon ("/harness/writer", test_writer);
    add_no_daemon ("/harness/silent-listener", test_silent_listener);
    add_no_daemon ("/harness/unwritable-dir", test_unwritable_dir);
    return g_test_run ();
}
