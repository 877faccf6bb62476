/*
 * The destination of a migration as a file on this host: the checks made
 * before anything is changed, and creating and removing the file.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
    const gchar *path;          /* absolute */
    const gchar *format;        /* "raw" or "qcow2" */
    gboolean reuse;             /* the file must exist and is used as it is */
    guint64 source_size;        /* virtual size of the source, bytes */
    const gchar *const *in_use; /* paths of every disk of the domain, NULL-terminated */
} VmrDestinationCheck;

/*
 * Checks that @check->path can receive the copy without touching anything:
 * it is absolute, not a disk of the domain, in a writable directory that
 * exists, and exists if and only if @check->reuse is set; a reused raw file
 * or block device must not be smaller than the source. *@out_size is the
 * size of an existing file (0 when it does not exist). Sets
 * VMR_ERROR_INVALID_ARGUMENT with one line naming the problem.
 */
gboolean vmr_destination_check (const VmrDestinationCheck *check, guint64 *out_size,
                                GError **error);

/*
 * TRUE when @a and @b are the same file (the same inode, whatever links
 * lead there), or the same path once made canonical when either is missing
 */
gboolean vmr_destination_same_file (const gchar *a, const gchar *b);

/*
 * Creates @path for a copy of @size bytes in @format, with the mode and owner
 * of @like_path when that can be read. A raw file is sparse; qcow2 is made by
 * qemu-img. Fails if @path exists.
 */
void vmr_destination_create_async (const gchar *path, const gchar *format, guint64 size,
                                   const gchar *like_path, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
gboolean vmr_destination_create_finish (GAsyncResult *res, GError **error);

/* removes a file that we created; logs instead of failing */
void vmr_destination_remove (const gchar *path);

/* the size in bytes of a file or block device */
gboolean vmr_destination_get_size (const gchar *path, guint64 *out_size, GError **error);

/* TRUE if @path is a block device */
gboolean vmr_destination_is_block_device (const gchar *path);

G_END_DECLS
