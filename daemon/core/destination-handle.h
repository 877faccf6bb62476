/*
 * A file or block device destination as the daemon opened it, so that
 * nothing resolves its path again once the checks have passed: its
 * directory held by a descriptor (resolved once, without following a
 * symbolic link when the policy refuses them), the file made there with
 * O_CREAT|O_EXCL|O_NOFOLLOW or the existing one opened, and its owner and
 * mode set through the descriptor. QEMU is handed the descriptor; libvirt,
 * which opens by path, is checked against it.
 *
 * A file the daemon made is known by its identity (VmrDestinationMade,
 * kept in the job's record): it is removed only while its name still leads
 * to that inode, in that directory, and nothing else is ever removed.
 */
#pragma once

#include <gio/gio.h>

#include "destination.h"

G_BEGIN_DECLS

/* the identity of a file the daemon made for a copy, and of its directory */
typedef struct {
    guint64 dev; /* st_dev and st_ino of the file */
    guint64 ino;
    guint64 dir_dev; /* and of the directory it was made in */
    guint64 dir_ino;
} VmrDestinationMade;

/* the made file's identity as a job record holds it; a new object */
JsonObject *vmr_destination_made_to_json (const VmrDestinationMade *made);

/* the identity of vmr_destination_made_to_json(), or NULL when @obj is NULL or incomplete */
VmrDestinationMade *vmr_destination_made_from_json (JsonObject *obj);

typedef struct _VmrDestinationHandle VmrDestinationHandle;

/*
 * Opens the directory of @dest (a file or block device) once, as an O_PATH
 * descriptor, following no symbolic link anywhere on the way when
 * @refuse_symlinks, and no "magic" link of /proc ever. Sets
 * VMR_ERROR_INVALID_ARGUMENT with one line naming the destination (a
 * symbolic link on the way, a directory that does not exist). Free with
 * vmr_destination_handle_unref().
 */
VmrDestinationHandle *vmr_destination_handle_open_dir (VmrDestination *dest,
                                                       gboolean refuse_symlinks, GError **error);
VmrDestinationHandle *vmr_destination_handle_ref (VmrDestinationHandle *self);
void vmr_destination_handle_unref (VmrDestinationHandle *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrDestinationHandle, vmr_destination_handle_unref)

/* the destination @self opens; not a reference */
VmrDestination *vmr_destination_handle_get_destination (VmrDestinationHandle *self);

/*
 * The path of the directory @self holds as the kernel names it now (every
 * link resolved); NULL when it cannot be read. A new string.
 */
gchar *vmr_destination_handle_dir_path (VmrDestinationHandle *self);

/*
 * The path of the opened file or device as the kernel names it now; NULL
 * before it is open or when it cannot be read. A new string.
 */
gchar *vmr_destination_handle_file_path (VmrDestinationHandle *self);

/*
 * Makes the file in the held directory, for a copy of @size bytes: with
 * O_CREAT|O_EXCL|O_NOFOLLOW, sparse for raw, formatted by qemu-img on the
 * descriptor (/dev/fd/3 of the child) for qcow2; then the owner and the
 * permission bits (mode & 0777, never setuid, setgid or sticky) of
 * @like_path (may be NULL) through the descriptor. Fails with
 * VMR_ERROR_INVALID_ARGUMENT when the name exists (the file there is left
 * alone), VMR_ERROR_FAILED when making it failed (what was made is removed
 * again). Must be called once, on a handle whose destination is a file to
 * be made.
 */
void vmr_destination_handle_create_async (VmrDestinationHandle *self, guint64 size,
                                          const gchar *like_path, GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data);
gboolean vmr_destination_handle_create_finish (GAsyncResult *res, GError **error);

/*
 * Opens the existing destination in the held directory for reading and
 * writing (its last component may be a link, as /dev/VG/LV is); it must be
 * of @self's kind. Sets VMR_ERROR_INVALID_ARGUMENT with one line otherwise.
 */
gboolean vmr_destination_handle_open_existing (VmrDestinationHandle *self, GError **error);

/* the identity of the file @self made, or NULL when it made none */
const VmrDestinationMade *vmr_destination_handle_get_made (VmrDestinationHandle *self);

/* the descriptor of the opened file or device, -1 before; owned by @self */
gint vmr_destination_handle_get_fd (VmrDestinationHandle *self);

/*
 * A new descriptor of the same open file, read-write, with O_DIRECT when
 * @direct (QEMU matches its cache mode against the descriptor's flags),
 * reopened through the descriptor and never by name; -1 with
 * VMR_ERROR_FAILED. Close it with close().
 */
gint vmr_destination_handle_reopen (VmrDestinationHandle *self, gboolean direct, GError **error);

/*
 * Checks that the destination still leads to the opened file: its name in
 * the held directory (the last link followed, for a destination that was
 * not made), and its whole path as anyone else resolves it (libvirt does,
 * and whoever starts the domain again). Sets VMR_ERROR_INVALID_ARGUMENT with
 * one line when it was moved, removed or replaced, or a directory on its
 * way was.
 */
gboolean vmr_destination_handle_check_named (VmrDestinationHandle *self, GError **error);

/*
 * Checks, without a handle (after a restart), that the name of @dest still
 * leads to the file @made, in the directory it was made in. Sets
 * VMR_ERROR_INVALID_ARGUMENT with one line when it does not.
 */
gboolean vmr_destination_check_made (const VmrDestination *dest, const VmrDestinationMade *made,
                                     GError **error);

/*
 * Removes the file @made of @dest, which the daemon made: in the directory
 * @handle holds (may be NULL: its directory is opened again, and must be
 * the one @made names), only while its name leads to that file. The name
 * is first renamed to a private one, checked again there and then
 * unlinked; a file found there that is not the one made is put back.
 * TRUE when it was removed or is gone; FALSE with one line saying why
 * the file was left (VMR_ERROR_INVALID_ARGUMENT: not the file the daemon
 * made; VMR_ERROR_FAILED: the system refused).
 */
gboolean vmr_destination_remove_made (const VmrDestination *dest, const VmrDestinationMade *made,
                                      VmrDestinationHandle *handle, GError **error);

G_END_DECLS
