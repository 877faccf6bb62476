#define G_LOG_DOMAIN "vmr-test"

/*
 * Guest writes during copies: random extents written through a device's
 * own block backend, as the guest's own writes go, and applied to the
 * image's expected copy, so that the whole destination can be compared
 * with it at the end.
 *
 * The writes go through QEMU's human monitor: `qemu-io -d DEV "write -P
 * PATTERN OFFSET LENGTH"`. Only a device that owns its block backend takes
 * -d (scsi-hd does; virtio-blk's qdev id is its PCI proxy's), so the
 * harness puts a writable disk on a scsi-hd (VmrHarnessDisk.scsi). Errors
 * come back as text in a successful QMP reply (qemu-io's report of a
 * write goes to QEMU's stdout), so a reply that is not empty fails the
 * write; the final comparison of the whole image is the proof that every
 * write landed.
 */

#include "harness-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

/* extents are multiples of this, at offsets aligned to it (O_DIRECT takes it) */
#define WRITER_ALIGN      4096
#define WRITER_MIN_EXTENT (4 * 1024)
#define WRITER_MAX_EXTENT (256 * 1024)

struct _VmrHarnessWriter {
    VmrHarnessHmpFunc hmp;
    gpointer hmp_data;
    gchar *qdev_id;
    gchar *expected;
    gint expected_fd;
    guint64 size;
    guint64 seed;
    GRand *rand;
    guint written; /* extents so far */
};

/* a human monitor command over the test's own QMP monitor */
static gchar *
hmp_over_qmp (const gchar *command_line, gpointer user_data)
{
    VmrHarness *h = user_data;
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;

    json_object_set_string_member (args, "command-line", command_line);
    g_assert_nonnull (h->mon);
    reply = vmr_qmp_client_execute_sync (h->mon, "human-monitor-command", args, 0, &error);
    if (error != NULL)
        vmr_fail ("writer: %s on the test monitor: %s", command_line, error->message);
    if (vmr_json_node_string (reply) == NULL)
        return g_strdup ("(a reply that is not text)");
    return g_strdup (vmr_json_node_string (reply));
}

VmrHarnessWriter *
vmr_harness_writer_new (VmrHarness *h, const gchar *qdev_id, const gchar *expected, guint64 seed)
{
    return vmr_harness_writer_new_hmp (qdev_id, expected, seed, hmp_over_qmp, h);
}

VmrHarnessWriter *
vmr_harness_writer_new_hmp (const gchar *qdev_id, const gchar *expected, guint64 seed,
                            VmrHarnessHmpFunc hmp, gpointer hmp_data)
{
    VmrHarnessWriter *w = g_new0 (VmrHarnessWriter, 1);
    GStatBuf st;

    if (g_stat (expected, &st) != 0)
        vmr_fail ("writer: cannot stat %s: %s", expected, g_strerror (errno));
    g_assert_cmpuint ((guint64) st.st_size, >=, WRITER_MAX_EXTENT);
    w->hmp = hmp;
    w->hmp_data = hmp_data;
    w->qdev_id = g_strdup (qdev_id);
    w->expected = g_strdup (expected);
    w->expected_fd = open (expected, O_WRONLY | O_CLOEXEC);
    if (w->expected_fd < 0)
        vmr_fail ("writer: cannot open %s: %s", expected, g_strerror (errno));
    w->size = (guint64) st.st_size;
    w->seed = seed;
    w->rand = g_rand_new_with_seed ((guint32) (seed ^ (seed >> 32)));
    return w;
}

void
vmr_harness_writer_free (VmrHarnessWriter *w)
{
    if (w == NULL)
        return;
    if (w->expected_fd >= 0)
        close (w->expected_fd);
    g_rand_free (w->rand);
    g_free (w->qdev_id);
    g_free (w->expected);
    g_free (w);
}

guint
vmr_harness_writer_count (VmrHarnessWriter *w)
{
    return w->written;
}

/* applies one extent to the expected image */
static void
apply_expected (VmrHarnessWriter *w, guint64 offset, gsize length, guint8 pattern)
{
    g_autofree guint8 *buf = g_malloc (length);

    memset (buf, pattern, length);
    if (pwrite (w->expected_fd, buf, length, (off_t) offset) != (ssize_t) length)
        vmr_fail ("writer: writing %s: %s", w->expected, g_strerror (errno));
}

gboolean
vmr_harness_writer_try_one (VmrHarnessWriter *w, gchar **error_text)
{
    guint64 blocks = w->size / WRITER_ALIGN;
    gsize length = (gsize) g_rand_int_range (w->rand, WRITER_MIN_EXTENT / WRITER_ALIGN,
                                             WRITER_MAX_EXTENT / WRITER_ALIGN + 1)
                   * WRITER_ALIGN;
    guint64 offset = (guint64) g_rand_double_range (w->rand, 0,
                                                    (gdouble) (blocks - length / WRITER_ALIGN + 1));
    guint8 pattern = (guint8) g_rand_int_range (w->rand, 1, 256);
    g_autofree gchar *command = NULL;
    g_autofree gchar *text = NULL;

    offset *= WRITER_ALIGN;
    g_assert_cmpuint (offset + length, <=, w->size);
    command = g_strdup_printf ("qemu-io -d %s \"write -P 0x%02x %" G_GUINT64_FORMAT
                               " %" G_GSIZE_FORMAT "\"",
                               w->qdev_id, pattern, offset, length);
    /* qemu-io's own report goes to QEMU's stdout; the reply carries only errors */
    text = w->hmp (command, w->hmp_data);
    if (text == NULL || *g_strstrip (text) != '\0') {
        /* not written: the expected image stays as it is */
        if (error_text != NULL)
            *error_text
                = g_strdup_printf ("%s answered: %s", command, text != NULL ? text : "(no text)");
        return FALSE;
    }
    apply_expected (w, offset, length, pattern);
    w->written++;
    return TRUE;
}

void
vmr_harness_writer_write (VmrHarnessWriter *w, guint count)
{
    for (guint i = 0; i < count; i++) {
        g_autofree gchar *problem = NULL;

        if (!vmr_harness_writer_try_one (w, &problem)) {
            g_autofree gchar *line = vmr_harness_one_line (problem);

            vmr_fail ("writer (seed %" G_GUINT64_FORMAT ", after %u extents): %s", w->seed,
                      w->written, line);
        }
    }
}
