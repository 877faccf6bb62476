#define G_LOG_DOMAIN "vmr-test"

/*
 * Images filled with a deterministic pattern, and the comparisons that
 * prove a destination holds the source's guest-visible bytes.
 */

#include "harness-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <glib/gstdio.h>

/* xorshift64*: a fixed, seedable stream, so that any byte can be checked */
static void
fill_pattern (guint8 *buf, gsize len, guint64 *state)
{
    for (gsize i = 0; i < len; i += sizeof (guint64)) {
        guint64 word;

        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        word = *state * G_GUINT64_CONSTANT (2685821657736338717);
        memcpy (buf + i, &word, MIN (sizeof (word), len - i));
    }
}

static void
write_file_or_die (FILE *file, const guint8 *buf, gsize len, const gchar *path)
{
    if (fwrite (buf, 1, len, file) != len)
        vmr_fail ("writing %s: %s", path, g_strerror (errno));
}

gchar *
vmr_harness_expected_path (const gchar *image_path)
{
    return g_strconcat (image_path, ".expected.raw", NULL);
}

void
vmr_harness_qemu_img (const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;
    va_list ap;

    g_ptr_array_add (argv, "qemu-img");
    va_start (ap, first_arg);
    for (const gchar *arg = first_arg; arg != NULL; arg = va_arg (ap, const gchar *))
        g_ptr_array_add (argv, (gpointer) arg);
    va_end (ap);
    g_ptr_array_add (argv, NULL);
    g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                  &status, &error);
    g_assert_no_error (error);
    if (!g_spawn_check_wait_status (status, &error)) {
        g_autofree gchar *cmdline = g_strjoinv (" ", (gchar **) argv->pdata);
        g_autofree gchar *out_line = vmr_harness_one_line (out);
        g_autofree gchar *err_line = vmr_harness_one_line (err);

        vmr_fail ("%s: %s; stdout: %s; stderr: %s", cmdline, error->message, out_line, err_line);
    }
}

gchar *
vmr_harness_create_image (VmrHarness *h, const gchar *name, const gchar *format, gsize size,
                          guint64 seed)
{
    g_autofree gchar *path = vmr_harness_path (h, name);
    g_autofree gchar *expected = vmr_harness_expected_path (path);
    g_autofree guint8 *buf = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    gboolean is_raw = g_strcmp0 (format, "raw") == 0;
    guint64 state = seed != 0 ? seed : 1;
    FILE *expected_file = fopen (expected, "wb");
    FILE *image_file = is_raw ? fopen (path, "wb") : NULL;

    g_assert_nonnull (expected_file);
    g_assert_true (!is_raw || image_file != NULL);
    for (gsize done = 0; done < size; done += VMR_HARNESS_CHUNK_SIZE) {
        gsize len = MIN (VMR_HARNESS_CHUNK_SIZE, size - done);

        fill_pattern (buf, len, &state);
        write_file_or_die (expected_file, buf, len, expected);
        if (image_file != NULL)
            write_file_or_die (image_file, buf, len, path);
    }
    g_assert_cmpint (fclose (expected_file), ==, 0);
    if (image_file != NULL)
        g_assert_cmpint (fclose (image_file), ==, 0);
    if (!is_raw)
        vmr_harness_qemu_img ("convert", "-f", "raw", "-O", format, expected, path, NULL);
    return g_steal_pointer (&path);
}

gchar *
vmr_harness_create_file (VmrHarness *h, const gchar *name, gsize size, guchar fill)
{
    g_autofree gchar *path = vmr_harness_path (h, name);
    g_autofree guint8 *buf = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    FILE *file = fopen (path, "wb");

    g_assert_nonnull (file);
    memset (buf, fill, VMR_HARNESS_CHUNK_SIZE);
    for (gsize done = 0; done < size; done += VMR_HARNESS_CHUNK_SIZE)
        write_file_or_die (file, buf, MIN (VMR_HARNESS_CHUNK_SIZE, size - done), path);
    g_assert_cmpint (fclose (file), ==, 0);
    return g_steal_pointer (&path);
}

gchar *
vmr_harness_create_thin_image (VmrHarness *h, const gchar *name, gsize size, guint extents,
                               gsize extent_size, guint32 seed)
{
    g_autofree gchar *path = vmr_harness_path (h, name);
    g_autofree gchar *expected = vmr_harness_expected_path (path);
    const gchar *paths[] = { path, expected };
    g_autofree guint32 *buf = g_malloc (extent_size);
    g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
    int fds[G_N_ELEMENTS (paths)];

    for (guint p = 0; p < G_N_ELEMENTS (paths); p++) {
        fds[p] = open (paths[p], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fds[p] < 0 || ftruncate (fds[p], (off_t) size) < 0)
            vmr_fail ("cannot create %s: %s", paths[p], g_strerror (errno));
    }
    for (guint i = 0; i < extents; i++) {
        guint64 stride = size / extents;
        /* MiB-aligned, so that the extents are whole blocks of any file system */
        off_t offset = (off_t) ((i * stride + stride / 2) / (1024 * 1024) * (1024 * 1024));

        for (gsize w = 0; w < extent_size / sizeof (guint32); w++)
            buf[w] = g_rand_int (rand);
        for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
            if (pwrite (fds[p], buf, extent_size, offset) != (ssize_t) extent_size)
                vmr_fail ("cannot write %s: %s", paths[p], g_strerror (errno));
    }
    for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
        if (fsync (fds[p]) < 0 || close (fds[p]) < 0)
            vmr_fail ("cannot write %s: %s", paths[p], g_strerror (errno));
    return g_steal_pointer (&path);
}

gchar *
vmr_harness_create_sparse_file (VmrHarness *h, const gchar *name, gsize size)
{
    g_autofree gchar *path = vmr_harness_path (h, name);
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd < 0 || ftruncate (fd, (off_t) size) < 0 || close (fd) < 0)
        vmr_fail ("cannot create %s: %s", path, g_strerror (errno));
    return g_steal_pointer (&path);
}

void
vmr_harness_assert_thin (const gchar *what, guint64 alloc, guint64 data, guint writes)
{
    const guint64 write_max = 256 * 1024; /* the writer's longest extent */
    const guint64 chunk = 64 * 1024;      /* the mirror's default granularity */
    guint64 bound = (guint64) (1.1 * (gdouble) (data + writes * (write_max + 2 * chunk)));

    g_test_message ("%s: %" G_GUINT64_FORMAT " bytes allocated for %" G_GUINT64_FORMAT
                    " bytes of data and %u guest writes (bound %" G_GUINT64_FORMAT ")",
                    what, alloc, data, writes, bound);
    if (alloc > bound || alloc < data)
        vmr_fail ("%s takes %" G_GUINT64_FORMAT " bytes for %" G_GUINT64_FORMAT
                  " bytes of data and %u guest writes: not between the data and %" G_GUINT64_FORMAT,
                  what, alloc, data, writes, bound);
}

guint64
vmr_harness_allocated (const gchar *path)
{
    GStatBuf st;

    if (g_stat (path, &st) != 0)
        vmr_fail ("cannot stat %s: %s", path, g_strerror (errno));
    return (guint64) st.st_blocks * 512;
}

static gboolean
raw_equals (const gchar *path, const gchar *expected, GError **error)
{
    g_autofree guint8 *got_buf = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    g_autofree guint8 *want_buf = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    g_autoptr (GFile) got_file = g_file_new_for_path (path);
    g_autoptr (GFile) want_file = g_file_new_for_path (expected);
    g_autoptr (GFileInputStream) got = NULL;
    g_autoptr (GFileInputStream) want = NULL;
    GStatBuf got_st, want_st;
    guint64 offset = 0;

    if (g_stat (path, &got_st) != 0 || g_stat (expected, &want_st) != 0) {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "cannot stat %s or %s", path,
                     expected);
        return FALSE;
    }
    if (got_st.st_size != want_st.st_size) {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                     "%s is %" G_GINT64_FORMAT " bytes, expected %" G_GINT64_FORMAT, path,
                     (gint64) got_st.st_size, (gint64) want_st.st_size);
        return FALSE;
    }
    got = g_file_read (got_file, NULL, error);
    if (got == NULL)
        return FALSE;
    want = g_file_read (want_file, NULL, error);
    if (want == NULL)
        return FALSE;
    while (TRUE) {
        gsize got_len = 0;
        gsize want_len = 0;

        if (!g_input_stream_read_all (G_INPUT_STREAM (got), got_buf, VMR_HARNESS_CHUNK_SIZE,
                                      &got_len, NULL, error)
            || !g_input_stream_read_all (G_INPUT_STREAM (want), want_buf, VMR_HARNESS_CHUNK_SIZE,
                                         &want_len, NULL, error))
            return FALSE;
        if (got_len != want_len) {
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s changed size while read",
                         path);
            return FALSE;
        }
        if (want_len == 0)
            return TRUE;
        if (memcmp (got_buf, want_buf, want_len) != 0) {
            gsize i = 0;

            while (got_buf[i] == want_buf[i])
                i++;
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                         "%s differs from %s at byte %" G_GUINT64_FORMAT, path, expected,
                         offset + i);
            return FALSE;
        }
        offset += want_len;
    }
}

/* the virtual size of @path in @format, from qemu-img info; -1 on error */
static gint64
virtual_size (const gchar *path, const gchar *format, GError **error)
{
    const gchar *argv[] = { "qemu-img", "info", "--output=json", "-U", "-f", format, path, NULL };
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autofree gchar *out = NULL;
    gint64 size = -1;
    gint status = 0;

    if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                       &status, error)
        || !g_spawn_check_wait_status (status, error)
        || !json_parser_load_from_data (parser, out, -1, error))
        return -1;
    if (!vmr_json_get_int (vmr_json_node_object (json_parser_get_root (parser)), "virtual-size",
                           &size)) {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "qemu-img info %s: no virtual-size",
                     path);
        return -1;
    }
    return size;
}

gboolean
vmr_harness_image_equals (const gchar *path, const gchar *format, const gchar *expected,
                          GError **error)
{
    const gchar *argv[]
        = { "qemu-img", "compare", "-f", "raw", "-F", format, expected, path, NULL };
    g_autofree gchar *out = NULL;
    gint status = 0;

    if (!g_file_test (path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s is not a regular file", path);
        return FALSE;
    }
    if (g_strcmp0 (format, "raw") == 0)
        return raw_equals (path, expected, error);
    /* qemu-img compare takes a larger image whose excess reads as zeroes as equal */
    {
        GStatBuf want_st;
        gint64 size = virtual_size (path, format, error);

        if (size < 0)
            return FALSE;
        if (g_stat (expected, &want_st) != 0) {
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "cannot stat %s", expected);
            return FALSE;
        }
        if (size != (gint64) want_st.st_size) {
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                         "%s (%s) has a virtual size of %" G_GINT64_FORMAT
                         " bytes, expected %" G_GINT64_FORMAT,
                         path, format, size, (gint64) want_st.st_size);
            return FALSE;
        }
    }
    /* qemu-img compare reads guest-visible bytes: 0 same, 1 different, 2 error */
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                       &status, error))
        return FALSE;
    if (!g_spawn_check_wait_status (status, NULL)) {
        g_autofree gchar *out_line = vmr_harness_one_line (g_strstrip (out));

        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s (%s) differs from %s: %s", path,
                     format, expected, out_line);
        return FALSE;
    }
    return TRUE;
}

void
vmr_harness_assert_image_equals (const gchar *path, const gchar *format, const gchar *expected)
{
    g_autoptr (GError) error = NULL;

    if (!vmr_harness_image_equals (path, format, expected, &error))
        vmr_fail ("%s", error->message);
}

void
vmr_harness_assert_range_equals (const gchar *path, const gchar *expected, guint64 offset,
                                 guint64 length)
{
    g_autofree guint8 *got = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    g_autofree guint8 *want = g_malloc (VMR_HARNESS_CHUNK_SIZE);
    FILE *got_file = fopen (path, "rb");
    FILE *want_file = fopen (expected, "rb");

    if (got_file == NULL || want_file == NULL)
        vmr_fail ("cannot open %s or %s: %s", path, expected, g_strerror (errno));
    if (fseeko (got_file, (off_t) offset, SEEK_SET) != 0
        || fseeko (want_file, (off_t) offset, SEEK_SET) != 0)
        vmr_fail ("cannot seek to %" G_GUINT64_FORMAT " in %s or %s", offset, path, expected);
    for (guint64 done = 0; done < length;) {
        gsize len = (gsize) MIN ((guint64) VMR_HARNESS_CHUNK_SIZE, length - done);

        if (fread (got, 1, len, got_file) != len || fread (want, 1, len, want_file) != len)
            vmr_fail ("%s or %s ends before byte %" G_GUINT64_FORMAT, path, expected,
                      offset + length);
        if (memcmp (got, want, len) != 0) {
            gsize i = 0;

            while (got[i] == want[i])
                i++;
            vmr_fail ("%s differs from %s at byte %" G_GUINT64_FORMAT, path, expected,
                      offset + done + i);
        }
        done += len;
    }
    fclose (got_file);
    fclose (want_file);
}

/* a big-endian 64-bit number at @offset of @fd */
static guint64
read_be64 (gint fd, goffset offset)
{
    guint64 value = 0;

    g_assert_cmpint (pread (fd, &value, sizeof (value), offset), ==, sizeof (value));
    return GUINT64_FROM_BE (value);
}

/*
 * Where the guest's byte @offset of the image @path lies in the file: the
 * same for raw; for qcow2, through its L1 and L2 tables (the mirror flushed
 * them when it reached sync; the mirror's target shares no consistent read,
 * so qemu-img cannot open it meanwhile)
 */
goffset
vmr_harness_host_offset (const gchar *path, const gchar *format, goffset offset)
{
    const guint64 entry_mask = G_GUINT64_CONSTANT (0x00fffffffffffe00);
    guint32 cluster_bits_be = 0;
    guint64 cluster_size;
    guint64 l2_entries;
    guint64 l1_table;
    guint64 l2_table;
    guint64 cluster;
    gint fd;

    if (g_str_equal (format, "raw"))
        return offset;
    fd = open (path, O_RDONLY);
    g_assert_cmpint (fd, >=, 0);
    g_assert_cmpint (pread (fd, &cluster_bits_be, 4, 20), ==, 4);
    cluster_size = G_GUINT64_CONSTANT (1) << GUINT32_FROM_BE (cluster_bits_be);
    l2_entries = cluster_size / 8;
    l1_table = read_be64 (fd, 40);
    l2_table = read_be64 (fd, (goffset) (l1_table + 8 * (offset / cluster_size / l2_entries)))
               & entry_mask;
    g_assert_cmpuint (l2_table, !=, 0);
    cluster = read_be64 (fd, (goffset) (l2_table + 8 * ((offset / cluster_size) % l2_entries)))
              & entry_mask;
    close (fd);
    if (cluster == 0)
        vmr_fail ("%s has no cluster at %" G_GINT64_FORMAT, path, (gint64) offset);
    return (goffset) (cluster + offset % cluster_size);
}

/*
 * writes the bitwise complement of @expected's bytes [@offset, +@length)
 * into @path at @host_offset
 */
void
vmr_harness_flip_bytes (const gchar *path, const gchar *expected, goffset offset,
                        goffset host_offset, gsize length)
{
    g_autofree guint8 *bytes = g_malloc (length);
    gint fd = open (expected, O_RDONLY);

    g_assert_cmpint (fd, >=, 0);
    g_assert_cmpint (pread (fd, bytes, length, offset), ==, (gssize) length);
    close (fd);
    for (gsize i = 0; i < length; i++)
        bytes[i] = (guint8) ~bytes[i];
    fd = open (path, O_WRONLY);
    g_assert_cmpint (fd, >=, 0);
    g_assert_cmpint (pwrite (fd, bytes, length, host_offset), ==, (gssize) length);
    g_assert_cmpint (fsync (fd), ==, 0);
    close (fd);
}

/* ---- what a directory holds ---- */

static gint
compare_entry_names (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

static void
snapshot_dir (GString *out, const gchar *dir, const gchar *skip_name)
{
    g_autoptr (GDir) handle = g_dir_open (dir, 0, NULL);
    g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
    const gchar *name;

    g_assert_nonnull (handle);
    while ((name = g_dir_read_name (handle)) != NULL)
        g_ptr_array_add (names, g_strdup (name));
    g_ptr_array_sort (names, compare_entry_names);
    for (guint i = 0; i < names->len; i++) {
        g_autofree gchar *path = g_build_filename (dir, g_ptr_array_index (names, i), NULL);
        struct stat st;

        if (g_strcmp0 (g_ptr_array_index (names, i), skip_name) == 0)
            continue;
        g_assert_cmpint (lstat (path, &st), ==, 0);
        g_string_append_printf (out, "%s %o %" G_GINT64_FORMAT " %" G_GINT64_FORMAT ".%09ld\n",
                                path, st.st_mode, (gint64) st.st_size, (gint64) st.st_mtim.tv_sec,
                                st.st_mtim.tv_nsec);
        if (S_ISDIR (st.st_mode))
            snapshot_dir (out, path, skip_name);
    }
}

gchar *
vmr_harness_snapshot (const gchar *dir, const gchar *skip_name)
{
    GString *out = g_string_new (NULL);

    snapshot_dir (out, dir, skip_name);
    return g_string_free (out, FALSE);
}

/* what a writer other than root may still use on the file system of @dir */
guint64
vmr_harness_free_bytes (const gchar *dir)
{
    struct statvfs vfs;

    if (statvfs (dir, &vfs) != 0)
        vmr_fail ("statvfs %s: %s", dir, g_strerror (errno));
    return (guint64) vfs.f_bavail * vfs.f_frsize;
}

/* makes DIR/filler take all but @leave bytes of the free space of @dir; returns its path */
gchar *
vmr_harness_fill_leaving (const gchar *dir, guint64 leave)
{
    gchar *path = g_build_filename (dir, "filler", NULL);
    guint64 room = vmr_harness_free_bytes (dir);
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int err;

    g_assert_cmpint (fd, >=, 0);
    g_assert_cmpuint (room, >, leave);
    err = posix_fallocate (fd, 0, (off_t) (room - leave));
    if (err != 0)
        vmr_fail ("cannot fill %s: %s", dir, g_strerror (err));
    g_assert_cmpint (close (fd), ==, 0);
    g_test_message ("filled %s: %" G_GUINT64_FORMAT " bytes free", dir,
                    vmr_harness_free_bytes (dir));
    return path;
}
