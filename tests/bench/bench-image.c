#define G_LOG_DOMAIN "vmr-bench"

#include "bench-image.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "vmr-error.h"
#include "vmr-json.h"

/* all @len bytes at @buf, written to @fd or read from it; a short read is a failure */
static gboolean
transfer_all (int fd, guint8 *buf, gsize len, gboolean writing)
{
    while (len > 0) {
        ssize_t n = writing ? write (fd, buf, len) : read (fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return FALSE;
        buf += n;
        len -= (gsize) n;
    }
    return TRUE;
}

/* splitmix64: a fast generator whose every state gives a good sequence */
static guint64
splitmix64 (guint64 *state)
{
    guint64 z = (*state += G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));

    z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/*
 * Fills @block (VMR_BENCH_BLOCK_SIZE bytes) with the data of the block at
 * @index of a source made with @seed: its state is a hash of (@seed,
 * @index), so no two blocks share a sequence.
 */
static void
fill_block (guint8 *block, guint32 seed, guint64 index)
{
    guint64 state = ((guint64) seed << 32) ^ index;

    state = splitmix64 (&state);
    for (gsize i = 0; i < VMR_BENCH_BLOCK_SIZE; i += sizeof (guint64)) {
        guint64 word = splitmix64 (&state);

        memcpy (block + i, &word, sizeof (word));
    }
}

/*
 * The end of writing a source: fdatasync(), as no writeback of it may run
 * during the measurements, and close(). @written is FALSE after a failed
 * write, whose errno is still set.
 */
static gboolean
finish_source (int fd, gboolean written, const gchar *path, GError **error)
{
    int saved_errno = 0;

    if (!written || fdatasync (fd) < 0)
        saved_errno = errno != 0 ? errno : EIO;
    if (close (fd) < 0 && saved_errno == 0)
        saved_errno = errno;
    if (saved_errno != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot write %s: %s", path,
                     g_strerror (saved_errno));
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_image_create_source (const gchar *path, guint64 size, guint32 seed, GError **error)
{
    g_autofree guint8 *block = g_malloc (VMR_BENCH_BLOCK_SIZE);
    gboolean written = TRUE;
    int fd;

    fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", path,
                     g_strerror (errno));
        return FALSE;
    }
    /*
     * Random, so that QEMU can neither skip zeroes nor detect a pattern, and
     * a different sequence in every MiB, so that a block copied to the wrong
     * offset cannot compare equal.
     */
    for (guint64 done = 0; written && done < size; done += VMR_BENCH_BLOCK_SIZE) {
        fill_block (block, seed, done / VMR_BENCH_BLOCK_SIZE);
        written = transfer_all (fd, block, MIN (VMR_BENCH_BLOCK_SIZE, size - done), TRUE);
    }
    return finish_source (fd, written, path, error);
}

gboolean
vmr_bench_image_create_sparse_source (const gchar *path, guint64 size, guint64 data_size,
                                      guint n_extents, guint32 seed, GError **error)
{
    g_autofree guint8 *block = g_malloc (VMR_BENCH_BLOCK_SIZE);
    guint64 extent_size = n_extents > 0 ? data_size / n_extents : 0;
    guint64 stride = n_extents > 0 ? size / n_extents : 0;
    gboolean written = TRUE;
    int fd;

    if (n_extents == 0 || extent_size % VMR_BENCH_BLOCK_SIZE != 0 || extent_size == 0
        || extent_size > stride / 2) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "cannot spread %" G_GUINT64_FORMAT
                     " bytes in %u extents over %" G_GUINT64_FORMAT " bytes",
                     data_size, n_extents, size);
        return FALSE;
    }
    fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", path,
                     g_strerror (errno));
        return FALSE;
    }
    if (ftruncate (fd, (off_t) size) < 0)
        written = FALSE;
    for (guint i = 0; written && i < n_extents; i++) {
        /* the middle of its share, so that neither the start nor the end is all data */
        guint64 start = (i * stride + stride / 2) / VMR_BENCH_BLOCK_SIZE * VMR_BENCH_BLOCK_SIZE;

        written = lseek (fd, (off_t) start, SEEK_SET) == (off_t) start;
        for (guint64 done = 0; written && done < extent_size; done += VMR_BENCH_BLOCK_SIZE) {
            /* the block's data depends on where it is, as in a full source */
            fill_block (block, seed, (start + done) / VMR_BENCH_BLOCK_SIZE);
            written = transfer_all (fd, block, VMR_BENCH_BLOCK_SIZE, TRUE);
        }
    }
    return finish_source (fd, written, path, error);
}

gboolean
vmr_bench_image_fill_holes (const gchar *path, GError **error)
{
    g_autofree guint8 *zeroes = g_malloc0 (VMR_BENCH_BLOCK_SIZE);
    gboolean written = TRUE;
    off_t size, hole;
    int fd = open (path, O_WRONLY | O_CLOEXEC);

    if (fd < 0 || (size = lseek (fd, 0, SEEK_END)) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot open %s: %s", path,
                     g_strerror (errno));
        if (fd >= 0)
            close (fd);
        return FALSE;
    }
    hole = lseek (fd, 0, SEEK_HOLE);
    while (written && hole >= 0 && hole < size) {
        off_t data = lseek (fd, hole, SEEK_DATA);
        off_t end = data < 0 ? size : data;

        written = lseek (fd, hole, SEEK_SET) == hole;
        for (off_t at = hole; written && at < end; at += VMR_BENCH_BLOCK_SIZE)
            written = transfer_all (fd, zeroes, (gsize) MIN (VMR_BENCH_BLOCK_SIZE, end - at), TRUE);
        hole = end < size ? lseek (fd, end, SEEK_HOLE) : size;
    }
    return finish_source (fd, written && hole >= 0, path, error);
}

gboolean
vmr_bench_image_create_destination (const gchar *path, guint64 size, GError **error)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int saved_errno = 0;

    if (fd < 0 || ftruncate (fd, (off_t) size) < 0)
        saved_errno = errno;
    if (fd >= 0)
        close (fd);
    if (saved_errno != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", path,
                     g_strerror (saved_errno));
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_image_compare (const gchar *source, const gchar *dest, guint64 size, GError **error)
{
    g_autofree guint8 *want = g_malloc (VMR_BENCH_BLOCK_SIZE);
    g_autofree guint8 *have = g_malloc (VMR_BENCH_BLOCK_SIZE);
    int source_fd = open (source, O_RDONLY | O_CLOEXEC);
    int dest_fd = open (dest, O_RDONLY | O_CLOEXEC);
    gboolean equal = source_fd >= 0 && dest_fd >= 0;
    guint64 offset = 0;

    while (equal && offset < size) {
        gsize len = MIN (VMR_BENCH_BLOCK_SIZE, size - offset);

        equal = transfer_all (source_fd, want, len, FALSE)
                && transfer_all (dest_fd, have, len, FALSE) && memcmp (want, have, len) == 0;
        if (equal)
            offset += len;
    }
    if (source_fd >= 0)
        close (source_fd);
    if (dest_fd >= 0)
        close (dest_fd);
    if (!equal) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "data check failed: %s differs from %s (or cannot be read) in the MiB at "
                     "offset %" G_GUINT64_FORMAT,
                     dest, source, offset);
        return FALSE;
    }
    return TRUE;
}

/* runs qemu-img with @argv (NULL-terminated, without the program); its stdout in *@out */
static gboolean
run_qemu_img (const gchar *const *argv, gchar **out, GError **error)
{
    g_autoptr (GPtrArray) full = g_ptr_array_new ();
    g_autoptr (GSubprocess) proc = NULL;
    g_autofree gchar *err = NULL;

    g_ptr_array_add (full, "qemu-img");
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add (full, (gpointer) argv[i]);
    g_ptr_array_add (full, NULL);
    proc = g_subprocess_newv ((const gchar *const *) full->pdata,
                              G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                              error);
    if (proc == NULL || !g_subprocess_communicate_utf8 (proc, NULL, NULL, out, &err, error)) {
        g_prefix_error (error, "qemu-img %s: ", argv[0]);
        return FALSE;
    }
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "qemu-img %s %s failed: %s%s", argv[0],
                     argv[g_strv_length ((gchar **) argv) - 1], g_strstrip (err),
                     *out != NULL ? g_strstrip (*out) : "");
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_image_allocated (const gchar *path, const gchar *format, guint64 *out_bytes,
                           GError **error)
{
    const gchar *argv[] = { "info", "--output=json", "-U", "-f", format, path, NULL };
    g_autofree gchar *out = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    JsonNode *root;
    GStatBuf st;

    if (g_strcmp0 (format, "qcow2") != 0) {
        if (g_stat (path, &st) < 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot stat %s: %s", path,
                         g_strerror (errno));
            return FALSE;
        }
        *out_bytes = (guint64) st.st_blocks * 512;
        return TRUE;
    }
    if (!run_qemu_img (argv, &out, error) || !json_parser_load_from_data (parser, out, -1, error))
        return FALSE;
    root = json_parser_get_root (parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)
        || !vmr_json_get_uint (json_node_get_object (root), "actual-size", out_bytes)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "qemu-img info %s reports no actual-size", path);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_bench_image_qemu_compare (const gchar *source, const gchar *source_format, const gchar *dest,
                              const gchar *dest_format, GError **error)
{
    /* without -s: a hole and allocated zeroes are alike, which is the point of a thin copy */
    const gchar *argv[]
        = { "compare", "-q", "-f", source_format, "-F", dest_format, source, dest, NULL };
    g_autofree gchar *out = NULL;

    if (!run_qemu_img (argv, &out, error)) {
        g_prefix_error (error, "data check: %s does not hold the bytes of %s: ", dest, source);
        return FALSE;
    }
    return TRUE;
}
