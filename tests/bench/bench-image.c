#define G_LOG_DOMAIN "vmr-bench"

#include "bench-image.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "vmr-error.h"

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

gboolean
vmr_bench_image_create_source (const gchar *path, guint64 size, guint32 seed, GError **error)
{
    g_autofree guint8 *block = g_malloc (VMR_BENCH_BLOCK_SIZE);
    gboolean written = TRUE;
    int saved_errno = 0;
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
    /* no writeback of the source may run during the measurements */
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
