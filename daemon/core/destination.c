#define G_LOG_DOMAIN "vmr-daemon"

#include "destination.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "units.h"
#include "vmr-error.h"

gboolean
vmr_destination_same_file (const gchar *a, const gchar *b)
{
    GStatBuf sa, sb;
    g_autofree gchar *ca = NULL;
    g_autofree gchar *cb = NULL;

    if (g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    ca = g_canonicalize_filename (a, "/");
    cb = g_canonicalize_filename (b, "/");
    return g_strcmp0 (ca, cb) == 0;
}

static gboolean
file_size (const gchar *path, const GStatBuf *st, guint64 *out_size, GError **error)
{
    if (S_ISBLK (st->st_mode)) {
        guint64 bytes = 0;
        int fd = open (path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || ioctl (fd, BLKGETSIZE64, &bytes) < 0) {
            int saved = errno;

            if (fd >= 0)
                close (fd);
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "cannot read the size of %s: %s", path, g_strerror (saved));
            return FALSE;
        }
        close (fd);
        *out_size = bytes;
        return TRUE;
    }
    *out_size = (guint64) st->st_size;
    return TRUE;
}

gboolean
vmr_destination_check (const VmrDestinationCheck *check, guint64 *out_size, GError **error)
{
    g_autofree gchar *dir = NULL;
    GStatBuf st;
    gboolean exists;

    *out_size = 0;
    if (check->path == NULL || !g_path_is_absolute (check->path)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination '%s' is not an absolute path", check->path ? check->path : "");
        return FALSE;
    }
    if (g_strcmp0 (check->format, "raw") != 0 && g_strcmp0 (check->format, "qcow2") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "unsupported destination format '%s' (use raw or qcow2)", check->format);
        return FALSE;
    }
    for (guint i = 0; check->in_use != NULL && check->in_use[i] != NULL; i++) {
        if (vmr_destination_same_file (check->path, check->in_use[i])) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s is a disk of the domain already", check->path);
            return FALSE;
        }
    }
    dir = g_path_get_dirname (check->path);
    if (!g_file_test (dir, G_FILE_TEST_IS_DIR)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination directory %s does not exist", dir);
        return FALSE;
    }
    exists = g_stat (check->path, &st) == 0;
    if (!exists && errno != ENOENT) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot use destination %s: %s",
                     check->path, g_strerror (errno));
        return FALSE;
    }
    if (!exists) {
        if (check->reuse) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s does not exist (--reuse needs an existing file)",
                         check->path);
            return FALSE;
        }
        /* access() also reports a read-only or immutable directory for root */
        if (access (dir, W_OK | X_OK) < 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination directory %s is not writable: %s", dir, g_strerror (errno));
            return FALSE;
        }
        return TRUE;
    }
    if (!check->reuse) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s exists; pass --reuse to copy onto it", check->path);
        return FALSE;
    }
    if (S_ISDIR (st.st_mode)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "destination %s is a directory",
                     check->path);
        return FALSE;
    }
    if (!S_ISREG (st.st_mode) && !S_ISBLK (st.st_mode)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is neither a file nor a block device", check->path);
        return FALSE;
    }
    if (access (check->path, R_OK | W_OK) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is not writable: %s", check->path, g_strerror (errno));
        return FALSE;
    }
    if (!file_size (check->path, &st, out_size, error))
        return FALSE;
    /* a qcow2 file's virtual size is checked once QEMU has opened it */
    if (g_strcmp0 (check->format, "raw") == 0 && *out_size < check->source_size) {
        g_autofree gchar *have = vmr_units_format_bytes (*out_size);
        g_autofree gchar *need = vmr_units_format_bytes (check->source_size);

        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is smaller than the source (%s < %s)", check->path, have,
                     need);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_destination_get_size (const gchar *path, guint64 *out_size, GError **error)
{
    GStatBuf st;

    if (g_stat (path, &st) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot use %s: %s", path,
                     g_strerror (errno));
        return FALSE;
    }
    return file_size (path, &st, out_size, error);
}

gboolean
vmr_destination_is_block_device (const gchar *path)
{
    GStatBuf st;

    return g_stat (path, &st) == 0 && S_ISBLK (st.st_mode);
}

static void
copy_owner_and_mode (const gchar *path, const gchar *like_path)
{
    GStatBuf like;

    if (like_path == NULL || g_stat (like_path, &like) < 0 || !S_ISREG (like.st_mode))
        return;
    /* QEMU must be able to open the new file as it opened the old one */
    if (chown (path, like.st_uid, like.st_gid) < 0)
        g_debug ("cannot chown %s: %s", path, g_strerror (errno));
    if (chmod (path, like.st_mode & 07777) < 0)
        g_debug ("cannot chmod %s: %s", path, g_strerror (errno));
}

typedef struct {
    gchar *path;
    gchar *like_path;
} CreateData;

static void
create_data_free (CreateData *data)
{
    g_free (data->path);
    g_free (data->like_path);
    g_free (data);
}

static void
qemu_img_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    CreateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autofree gchar *stderr_text = NULL;

    if (!g_subprocess_communicate_utf8_finish (G_SUBPROCESS (source), res, NULL, &stderr_text,
                                               &error)) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                 "cannot create %s: qemu-img: %s", data->path, error->message);
        return;
    }
    if (!g_subprocess_get_successful (G_SUBPROCESS (source))) {
        g_task_return_new_error (
            task, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", data->path,
            stderr_text != NULL ? g_strstrip (stderr_text) : "qemu-img failed");
        vmr_destination_remove (data->path);
        return;
    }
    copy_owner_and_mode (data->path, data->like_path);
    g_task_return_boolean (task, TRUE);
}

void
vmr_destination_create_async (const gchar *path, const gchar *format, guint64 size,
                              const gchar *like_path, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
    CreateData *data = g_new0 (CreateData, 1);

    data->path = g_strdup (path);
    data->like_path = g_strdup (like_path);
    g_task_set_task_data (task, data, (GDestroyNotify) create_data_free);

    if (g_strcmp0 (format, "qcow2") == 0) {
        g_autoptr (GError) error = NULL;
        g_autofree gchar *size_arg = g_strdup_printf ("%" G_GUINT64_FORMAT, size);
        g_autoptr (GSubprocess) proc = NULL;

        if (g_file_test (path, G_FILE_TEST_EXISTS)) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "destination %s exists", path);
            return;
        }
        proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                 &error, "qemu-img", "create", "-q", "-f", "qcow2", path, size_arg,
                                 NULL);
        if (proc == NULL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                     "cannot create %s: cannot run qemu-img: %s", path,
                                     error->message);
            return;
        }
        g_subprocess_communicate_utf8_async (proc, NULL, cancellable, qemu_img_cb,
                                             g_steal_pointer (&task));
        return;
    }

    {
        int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

        if (fd < 0) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "cannot create %s: %s", path, g_strerror (errno));
            return;
        }
        if (ftruncate (fd, (off_t) size) < 0) {
            int saved = errno;

            close (fd);
            vmr_destination_remove (path);
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                     "cannot size %s to %" G_GUINT64_FORMAT " bytes: %s", path,
                                     size, g_strerror (saved));
            return;
        }
        close (fd);
        copy_owner_and_mode (path, like_path);
        g_task_return_boolean (task, TRUE);
    }
}

gboolean
vmr_destination_create_finish (GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

void
vmr_destination_remove (const gchar *path)
{
    if (g_unlink (path) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", path, g_strerror (errno));
    else
        g_debug ("removed %s", path);
}
