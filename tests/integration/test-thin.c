#define G_LOG_DOMAIN "vmr-test"

/*
 * A thin disk stays thin: a 2 GiB raw source with 64 MiB of data in 16
 * extents spread over it moves to a raw and to a qcow2 file the daemon
 * creates, while the guest writes (the copy held back by a speed limit,
 * then let go) and after the pivot. The destination must hold every byte
 * the guest sees, and take on its file system at most 1.1 times the data
 * it holds: the source's data and the guest's extents, each of those
 * counted with the copy's granularity on both sides (a write into a hole
 * makes the mirror copy whole 64 KiB chunks, and a qcow2 allocate whole
 * clusters). What a file takes is its st_blocks, which is also the disk
 * size qemu-img info reports for a qcow2.
 *
 * The same source moves to an NBD export of nbdkit, its sparse memory
 * plugin or its file plugin on a sparse file, through the daemon: every
 * byte is read back through the server after the pivot, and what the
 * export holds that is not a hole (libnbd's block status; for the file
 * plugin also its file's st_blocks) is held to the same bound.
 */

#include "nbd-fixture.h"

#include <glib/gstdio.h>

#define MIB         ((guint64) 1024 * 1024)
#define IMAGE_SIZE  (2048 * MIB)
#define EXTENTS     16
#define EXTENT_SIZE (4 * MIB)
#define DATA_SIZE   (EXTENTS * EXTENT_SIZE)
/* guest writes in each phase, each at most this long */
#define WRITES            40
#define WRITE_PHASE_SPEED "4M"

typedef struct {
    const gchar *dest_format; /* a file in this format, NULL: an NBD export */
    gboolean memory;          /* the export: nbdkit's memory plugin, else its file plugin */
} ThinCase;

static const ThinCase to_raw = { "raw", FALSE };
static const ThinCase to_qcow2 = { "qcow2", FALSE };
static const ThinCase to_nbd_memory = { NULL, TRUE };
static const ThinCase to_nbd_file = { NULL, FALSE };

/*
 * A paused QEMU on a new thin source (its expected copy in *@out_expected),
 * attached to the daemon as "vm", with a writer on its disk; FALSE when the
 * test directory cannot hold a sparse file (the test is skipped)
 */
static gboolean
start_thin_vm (VmrHarness *h, gchar **out_source, gchar **out_expected,
               VmrHarnessWriter **out_writer)
{
    g_autofree gchar *source
        = vmr_harness_create_thin_image (h, "source.raw", IMAGE_SIZE, EXTENTS, EXTENT_SIZE, 0x7417);
    g_autofree gchar *expected = vmr_harness_expected_path (source);
    VmrHarnessDisk disk = { "disk0", NULL, "raw", .scsi = TRUE };
    guint64 source_alloc = vmr_harness_allocated (source);

    /* a file system that does not keep holes would make the test prove nothing */
    if (source_alloc > 2 * DATA_SIZE) {
        vmr_harness_skip (h, "the test directory's file system does not keep a file sparse");
        return FALSE;
    }
    g_assert_cmpuint (source_alloc, >=, DATA_SIZE);
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    *out_writer = vmr_harness_writer_new (h, "disk0", expected, 0x7417e);
    vmr_harness_attach (h, "vm");
    *out_source = g_steal_pointer (&source);
    *out_expected = g_steal_pointer (&expected);
    return TRUE;
}

/* migrates disk0 to @dest while the guest writes, held back at first, and after the pivot */
static gchar *
migrate_while_writing (VmrHarness *h, VmrHarnessWriter *writer, const gchar *dest,
                       const gchar *format)
{
    gchar *id = vmr_harness_migrate (h, "vm", "disk0", dest, "--format", format, "--speed",
                                     WRITE_PHASE_SPEED, NULL);

    json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (writer, WRITES);
    json_object_unref (vmr_harness_job_command (h, "set-speed", id, "0"));
    json_object_unref (vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (writer, WRITES);
    return id;
}

static void
test_thin (VmrHarness *h, gconstpointer user_data)
{
    const ThinCase *c = user_data;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest_name = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;

    if (!start_thin_vm (h, &source, &expected, &writer))
        return;
    dest_name = g_strdup_printf ("dest.%s", c->dest_format);
    dest = vmr_harness_path (h, dest_name);
    id = migrate_while_writing (h, writer, dest, c->dest_format);
    /* quits QEMU, so that the destination is flushed, and checks every byte */
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, c->dest_format, expected);
    vmr_harness_assert_thin (dest, vmr_harness_allocated (dest), DATA_SIZE,
                             vmr_harness_writer_count (writer));
}

/* nbdkit on a UNIX socket serving a sparse export of IMAGE_SIZE; its URI */
static gchar *
start_export (VmrNbdTest *t, const ThinCase *c, gchar **out_file)
{
    g_autofree gchar *socket = vmr_harness_path (&t->h, "export.sock");
    g_autofree gchar *file = vmr_harness_path (&t->h, "export.raw");
    g_autofree gchar *size_arg = g_strdup_printf ("size=%" G_GUINT64_FORMAT, IMAGE_SIZE);
    g_autofree gchar *file_arg = g_strdup_printf ("file=%s", file);
    const gchar *argv[] = {
        "nbdkit",
        "-f",
        "-U",
        socket,
        c->memory ? "memory" : "file",
        c->memory ? size_arg : file_arg,
        NULL,
    };

    if (!c->memory)
        *out_file = vmr_harness_create_sparse_file (&t->h, "export.raw", IMAGE_SIZE);
    vmr_nbd_start_server (&t->servers, argv, socket, 0);
    return g_strdup_printf ("nbd+unix:///?socket=%s", socket);
}

static void
test_thin_nbd (VmrNbdTest *t, gconstpointer user_data)
{
    const ThinCase *c = user_data;
    VmrHarness *h = &t->h;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *export_file = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *dest_node = NULL;
    g_autofree gchar *node = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    g_autoptr (JsonObject) job = NULL;

    if (!vmr_nbd_require (h) || !start_thin_vm (h, &source, &expected, &writer))
        return;
    uri = start_export (t, c, &export_file);
    id = migrate_while_writing (h, writer, uri, "raw");
    /* the guest runs on the export, opened for a server that zeroes and trims */
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (
        vmr_harness_json_string (vmr_harness_json_object (job, "nbd"), "detect-zeroes"), ==,
        "unmap");
    dest_node = g_strdup_printf ("%s-dst", id);
    node = vmr_nbd_device_node (h, "disk0");
    g_assert_cmpstr (node, ==, dest_node);
    vmr_harness_assert_node_released (h, source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_job_record (h, id, "completed");
    /* quitting flushes what QEMU wrote; then every byte, through the server */
    vmr_harness_quit_qemu (h);
    vmr_nbd_assert_export_equals (&t->servers, uri, NULL, expected);
    vmr_harness_assert_thin (uri, vmr_nbd_export_allocated (uri), DATA_SIZE,
                             vmr_harness_writer_count (writer));
    if (export_file != NULL)
        vmr_harness_assert_thin (export_file, vmr_harness_allocated (export_file), DATA_SIZE,
                                 vmr_harness_writer_count (writer));
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/thin/raw-to-raw", &to_raw, test_thin);
    VMR_HARNESS_ADD ("/thin/raw-to-qcow2", &to_qcow2, test_thin);
    VMR_NBD_ADD ("/thin/raw-to-nbd-memory", &to_nbd_memory, test_thin_nbd);
    VMR_NBD_ADD ("/thin/raw-to-nbd-file", &to_nbd_file, test_thin_nbd);
    return g_test_run ();
}
