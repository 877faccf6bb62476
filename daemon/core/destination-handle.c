#define G_LOG_DOMAIN "vmr-daemon"

#include "destination-handle.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vmr-error.h"
#include "vmr-json.h"

struct _VmrDestinationHandle {
    VmrDestination *dest; /* owned */
    gchar *dir;           /* the directory as the request names it, made canonical */
    gchar *name;          /* the last component */
    gint dir_fd;          /* O_PATH, the directory resolved once */
    gint fd;              /* the file or device, read-write; -1 before it is opened */
    gboolean made;        /* the handle made the file: identity says which */
    VmrDestinationMade identity;
};

/* ---- the identity of a file the daemon made ---- */

static void
set_number (JsonObject *obj, const gchar *name, guint64 value)
{
    g_autofree gchar *text = g_strdup_printf ("%" G_GUINT64_FORMAT, value);

    /* a string: a JSON number does not hold every 64-bit inode number */
    json_object_set_string_member (obj, name, text);
}

static gboolean
get_number (JsonObject *obj, const gchar *name, guint64 *value)
{
    const gchar *text = vmr_json_get_string (obj, name);

    return text != NULL && g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, value, NULL);
}

JsonObject *
vmr_destination_made_to_json (const VmrDestinationMade *made)
{
    JsonObject *obj = json_object_new ();

    set_number (obj, "dev", made->dev);
    set_number (obj, "ino", made->ino);
    set_number (obj, "dir-dev", made->dir_dev);
    set_number (obj, "dir-ino", made->dir_ino);
    return obj;
}

VmrDestinationMade *
vmr_destination_made_from_json (JsonObject *obj)
{
    VmrDestinationMade made = { 0 };

    if (obj == NULL || !get_number (obj, "dev", &made.dev) || !get_number (obj, "ino", &made.ino)
        || !get_number (obj, "dir-dev", &made.dir_dev)
        || !get_number (obj, "dir-ino", &made.dir_ino))
        return NULL;
    return g_memdup2 (&made, sizeof made);
}

static gboolean
same_identity (const struct stat *st, guint64 dev, guint64 ino)
{
    return (guint64) st->st_dev == dev && (guint64) st->st_ino == ino;
}

/* ---- the object ---- */

static void
handle_clear (VmrDestinationHandle *self)
{
    vmr_destination_unref (self->dest);
    g_free (self->dir);
    g_free (self->name);
    if (self->dir_fd >= 0)
        close (self->dir_fd);
    if (self->fd >= 0)
        close (self->fd);
}

VmrDestinationHandle *
vmr_destination_handle_ref (VmrDestinationHandle *self)
{
    return g_atomic_rc_box_acquire (self);
}

void
vmr_destination_handle_unref (VmrDestinationHandle *self)
{
    g_atomic_rc_box_release_full (self, (GDestroyNotify) handle_clear);
}

VmrDestination *
vmr_destination_handle_get_destination (VmrDestinationHandle *self)
{
    return self->dest;
}

const VmrDestinationMade *
vmr_destination_handle_get_made (VmrDestinationHandle *self)
{
    return self->made ? &self->identity : NULL;
}

gint
vmr_destination_handle_get_fd (VmrDestinationHandle *self)
{
    return self->fd;
}

/* the path the kernel gives the open descriptor @fd now, or NULL */
static gchar *
path_of_fd (gint fd)
{
    g_autofree gchar *link = g_strdup_printf ("/proc/self/fd/%d", fd);

    return fd >= 0 ? g_file_read_link (link, NULL) : NULL;
}

gchar *
vmr_destination_handle_dir_path (VmrDestinationHandle *self)
{
    return path_of_fd (self->dir_fd);
}

gchar *
vmr_destination_handle_file_path (VmrDestinationHandle *self)
{
    return path_of_fd (self->fd);
}

/* ---- the directory, resolved once ---- */

/*
 * @dir opened as an O_PATH directory descriptor by openat2(), which glibc
 * does not wrap: no magic link of /proc followed, and no symbolic link at
 * all with @refuse_symlinks; -1 with errno
 */
static gint
open_dir_fd (const gchar *dir, gboolean refuse_symlinks)
{
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_NO_MAGICLINKS | (refuse_symlinks ? RESOLVE_NO_SYMLINKS : 0),
    };

    return (gint) syscall (SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
}

VmrDestinationHandle *
vmr_destination_handle_open_dir (VmrDestination *dest, gboolean refuse_symlinks, GError **error)
{
    g_autofree gchar *path = NULL;
    VmrDestinationHandle *self;
    gint dir_fd;

    g_return_val_if_fail (dest->kind != VMR_DESTINATION_NBD, NULL);
    /* "." and ".." taken away as the checks take them: the directory they judged */
    path = g_canonicalize_filename (dest->location, "/");
    if (g_strcmp0 (path, "/") == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "destination %s is a directory",
                     dest->location);
        return NULL;
    }
    self = g_atomic_rc_box_new0 (VmrDestinationHandle);
    self->dest = vmr_destination_ref (dest);
    self->dir = g_path_get_dirname (path);
    self->name = g_path_get_basename (path);
    self->dir_fd = -1;
    self->fd = -1;
    dir_fd = open_dir_fd (self->dir, refuse_symlinks);
    if (dir_fd < 0) {
        gint saved = errno;

        if (saved == ELOOP && refuse_symlinks)
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s: a directory on its way is a symbolic link, which the "
                         "policy's destination-symlinks = refuse does not allow",
                         dest->location);
        else
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "cannot open the directory %s of destination %s: %s", self->dir,
                         dest->location, g_strerror (saved));
        vmr_destination_handle_unref (self);
        return NULL;
    }
    self->dir_fd = dir_fd;
    return self;
}

/* ---- making the file ---- */

/* the owner and permission bits of @like_path (a regular file) on @fd; never set-id bits */
static void
copy_owner_and_mode (VmrDestinationHandle *self, const gchar *like_path)
{
    struct stat like;

    if (like_path == NULL || stat (like_path, &like) < 0 || !S_ISREG (like.st_mode))
        return;
    /* QEMU must be able to open the new file as it opened the old one */
    if (fchown (self->fd, like.st_uid, like.st_gid) < 0)
        g_debug ("cannot chown %s: %s", self->dest->location, g_strerror (errno));
    if (fchmod (self->fd, like.st_mode & 0777) < 0)
        g_debug ("cannot chmod %s: %s", self->dest->location, g_strerror (errno));
}

/* after a failure: the file made goes again, by its identity */
static void
undo_create (VmrDestinationHandle *self)
{
    g_autoptr (GError) error = NULL;

    if (!self->made)
        return;
    if (!vmr_destination_remove_made (self->dest, &self->identity, self, &error))
        g_warning ("%s", error->message);
    self->made = FALSE;
    close (self->fd);
    self->fd = -1;
}

/* the file, made empty with O_EXCL in the held directory; FALSE with @error */
static gboolean
make_file (VmrDestinationHandle *self, GError **error)
{
    struct stat st, dir_st;
    gint fd = openat (self->dir_fd, self->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);

    if (fd < 0 && errno == EEXIST) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s exists (it was made by someone else after the request); "
                     "it is left as it is",
                     self->dest->location);
        return FALSE;
    }
    if (fd < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s",
                     self->dest->location, g_strerror (errno));
        return FALSE;
    }
    self->fd = fd;
    if (fstat (fd, &st) < 0 || fstat (self->dir_fd, &dir_st) < 0) {
        /* cannot happen on a descriptor just opened; without its identity it stays */
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot read back %s: %s",
                     self->dest->location, g_strerror (errno));
        return FALSE;
    }
    self->made = TRUE;
    self->identity.dev = (guint64) st.st_dev;
    self->identity.ino = (guint64) st.st_ino;
    self->identity.dir_dev = (guint64) dir_st.st_dev;
    self->identity.dir_ino = (guint64) dir_st.st_ino;
    return TRUE;
}

typedef struct {
    VmrDestinationHandle *handle;
    gchar *like_path;
} CreateData;

static void
create_data_free (CreateData *data)
{
    vmr_destination_handle_unref (data->handle);
    g_free (data->like_path);
    g_free (data);
}

static void
qemu_img_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    CreateData *data = g_task_get_task_data (task);
    VmrDestinationHandle *self = data->handle;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *stderr_text = NULL;

    if (!g_subprocess_communicate_utf8_finish (G_SUBPROCESS (source), res, NULL, &stderr_text,
                                               &error)) {
        undo_create (self);
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                 "cannot create %s: qemu-img: %s", self->dest->location,
                                 error->message);
        return;
    }
    if (!g_subprocess_get_successful (G_SUBPROCESS (source))) {
        undo_create (self);
        g_task_return_new_error (
            task, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", self->dest->location,
            stderr_text != NULL ? g_strstrip (stderr_text) : "qemu-img failed");
        return;
    }
    copy_owner_and_mode (self, data->like_path);
    g_task_return_boolean (task, TRUE);
}

/* qcow2, written by qemu-img into the descriptor: its child's fd 3, never the path */
static void
format_qcow2 (GTask *task, guint64 size)
{
    CreateData *data = g_task_get_task_data (task);
    VmrDestinationHandle *self = data->handle;
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autofree gchar *size_arg = g_strdup_printf ("%" G_GUINT64_FORMAT, size);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    gint child_fd = fcntl (self->fd, F_DUPFD_CLOEXEC, 3);

    if (child_fd >= 0)
        g_subprocess_launcher_take_fd (launcher, child_fd, 3);
    proc = child_fd < 0 ? NULL
                        : g_subprocess_launcher_spawn (launcher, &error, "qemu-img", "create", "-q",
                                                       "-f", "qcow2", "/dev/fd/3", size_arg, NULL);
    if (proc == NULL) {
        undo_create (self);
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                 "cannot create %s: cannot run qemu-img: %s", self->dest->location,
                                 error != NULL ? error->message : g_strerror (errno));
        g_object_unref (task);
        return;
    }
    g_subprocess_communicate_utf8_async (proc, NULL, g_task_get_cancellable (task), qemu_img_cb,
                                         task);
}

void
vmr_destination_handle_create_async (VmrDestinationHandle *self, guint64 size,
                                     const gchar *like_path, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task;
    CreateData *data;
    g_autoptr (GError) error = NULL;

    g_return_if_fail (self->fd < 0 && self->dest->kind == VMR_DESTINATION_FILE);
    task = g_task_new (NULL, cancellable, callback, user_data);
    data = g_new0 (CreateData, 1);
    data->handle = vmr_destination_handle_ref (self);
    data->like_path = g_strdup (like_path);
    g_task_set_task_data (task, data, (GDestroyNotify) create_data_free);

    if (!make_file (self, &error)) {
        undo_create (self);
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (vmr_destination_has_virtual_size (self->dest)) {
        format_qcow2 (task, size);
        return;
    }
    /* a sparse raw file */
    if (ftruncate (self->fd, (off_t) size) < 0) {
        gint saved = errno;

        undo_create (self);
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                 "cannot size %s to %" G_GUINT64_FORMAT " bytes: %s",
                                 self->dest->location, size, g_strerror (saved));
        g_object_unref (task);
        return;
    }
    copy_owner_and_mode (self, like_path);
    g_task_return_boolean (task, TRUE);
    g_object_unref (task);
}

gboolean
vmr_destination_handle_create_finish (GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

/* ---- an existing destination ---- */

gboolean
vmr_destination_handle_open_existing (VmrDestinationHandle *self, GError **error)
{
    gboolean block = self->dest->kind == VMR_DESTINATION_BLOCK;
    struct stat st;
    gint fd;

    g_return_val_if_fail (self->fd < 0, FALSE);
    /* the last component may be a link: /dev/VG/LV is one */
    fd = openat (self->dir_fd, self->name, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot open destination %s: %s",
                     self->dest->location, g_strerror (errno));
        return FALSE;
    }
    if (fstat (fd, &st) < 0 || (block ? !S_ISBLK (st.st_mode) : !S_ISREG (st.st_mode))) {
        close (fd);
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is no longer a %s", self->dest->location,
                     block ? "block device" : "regular file");
        return FALSE;
    }
    self->fd = fd;
    return TRUE;
}

gint
vmr_destination_handle_reopen (VmrDestinationHandle *self, gboolean direct, GError **error)
{
    g_autofree gchar *link = g_strdup_printf ("/proc/self/fd/%d", self->fd);
    /* the magic link leads to the open file itself, whatever its name is now */
    gint fd = self->fd < 0 ? -1 : open (link, O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));

    if (fd < 0)
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot open %s%s: %s",
                     self->dest->location,
                     direct ? " with O_DIRECT (cache.direct, as its source)" : "",
                     g_strerror (self->fd < 0 ? EBADF : errno));
    return fd;
}

gboolean
vmr_destination_handle_check_named (VmrDestinationHandle *self, GError **error)
{
    struct stat named, opened;
    gint flags = self->made ? AT_SYMLINK_NOFOLLOW : 0;

    if (fstat (self->fd, &opened) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot read destination %s: %s",
                     self->dest->location, g_strerror (errno));
        return FALSE;
    }
    /* in the held directory, and by the whole path as anyone else resolves it (libvirt does) */
    if (fstatat (self->dir_fd, self->name, &named, flags) == 0
        && same_identity (&named, (guint64) opened.st_dev, (guint64) opened.st_ino)
        && stat (self->dest->location, &named) == 0
        && same_identity (&named, (guint64) opened.st_dev, (guint64) opened.st_ino))
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "destination %s no longer leads to the file the copy writes (it was moved, "
                 "removed or replaced after the daemon opened it)",
                 self->dest->location);
    return FALSE;
}

/* ---- removing a file the daemon made ---- */

/*
 * The directory of @made as @dest names it, opened again; -1 with @error,
 * or -1 with *@gone set when it no longer exists
 */
static gint
reopen_made_dir (const VmrDestination *dest, const VmrDestinationMade *made, gboolean *gone,
                 GError **error)
{
    g_autofree gchar *path = g_canonicalize_filename (dest->location, "/");
    g_autofree gchar *dir = g_path_get_dirname (path);
    /* links are followed as they may have been: the directory is proven by its inode */
    gint dir_fd = open_dir_fd (dir, FALSE);
    struct stat st;

    *gone = dir_fd < 0 && errno == ENOENT;
    if (dir_fd < 0) {
        if (!*gone)
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "not removing %s: %s", dest->location,
                         g_strerror (errno));
        return -1;
    }
    if (fstat (dir_fd, &st) < 0 || !same_identity (&st, made->dir_dev, made->dir_ino)) {
        close (dir_fd);
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "not removing %s: its directory is not the one the daemon made it in",
                     dest->location);
        return -1;
    }
    return dir_fd;
}

/*
 * Unlinks @name in @dir_fd when it is the file @made: renamed to a private
 * name first, so that what is checked is what goes; a file that is not the
 * one made is put back
 */
static gboolean
unlink_made (const VmrDestination *dest, gint dir_fd, const gchar *name,
             const VmrDestinationMade *made, GError **error)
{
    g_autofree gchar *private
        = g_strdup_printf (".vmr-removing-%08x%08x", g_random_int (), g_random_int ());
    struct stat st;

    if (fstatat (dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT;
    if (!same_identity (&st, made->dev, made->ino)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "not removing %s: it is not the file the daemon made (it was replaced)",
                     dest->location);
        return FALSE;
    }
    if (renameat2 (dir_fd, name, dir_fd, private, RENAME_NOREPLACE) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot remove %s: %s", dest->location,
                     g_strerror (errno));
        return FALSE;
    }
    if (fstatat (dir_fd, private, &st, AT_SYMLINK_NOFOLLOW) == 0
        && same_identity (&st, made->dev, made->ino)) {
        if (unlinkat (dir_fd, private, 0) == 0)
            return TRUE;
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot remove %s: %s", dest->location,
                     g_strerror (errno));
        return FALSE;
    }
    /* swapped in the instant between the check and the rename: it goes back */
    if (renameat2 (dir_fd, private, dir_fd, name, RENAME_NOREPLACE) < 0)
        g_warning ("%s was replaced while it was being removed; the file found there is "
                   "left beside it as %s",
                   dest->location, private);
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "not removing %s: it was replaced while it was being removed", dest->location);
    return FALSE;
}

gboolean
vmr_destination_check_made (const VmrDestination *dest, const VmrDestinationMade *made,
                            GError **error)
{
    g_autofree gchar *path = g_canonicalize_filename (dest->location, "/");
    g_autofree gchar *name = g_path_get_basename (path);
    gboolean gone = FALSE;
    gint dir_fd = reopen_made_dir (dest, made, &gone, error);
    struct stat st;
    gboolean named;

    if (dir_fd < 0) {
        if (gone)
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "the directory of destination %s is gone", dest->location);
        return FALSE;
    }
    named = fstatat (dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
            && same_identity (&st, made->dev, made->ino) && stat (dest->location, &st) == 0
            && same_identity (&st, made->dev, made->ino);
    close (dir_fd);
    if (!named)
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s no longer leads to the file the copy writes (it was moved, "
                     "removed or replaced after the daemon made it)",
                     dest->location);
    return named;
}

gboolean
vmr_destination_remove_made (const VmrDestination *dest, const VmrDestinationMade *made,
                             VmrDestinationHandle *handle, GError **error)
{
    g_autofree gchar *path = NULL;
    g_autofree gchar *name = NULL;
    gboolean gone = FALSE;
    gint dir_fd;
    gboolean removed;

    g_return_val_if_fail (dest->kind == VMR_DESTINATION_FILE && made != NULL, FALSE);
    if (handle != NULL)
        return unlink_made (dest, handle->dir_fd, handle->name, made, error);
    dir_fd = reopen_made_dir (dest, made, &gone, error);
    if (dir_fd < 0)
        return gone;
    path = g_canonicalize_filename (dest->location, "/");
    name = g_path_get_basename (path);
    removed = unlink_made (dest, dir_fd, name, made, error);
    close (dir_fd);
    return removed;
}
