/*
 * The destination of a migration: what it is (a file or a block device on
 * this host), the checks made before anything is changed, creating and
 * removing it, the group the admission limits count it in, and how each
 * backend names it (QMP's blockdev-add, libvirt's disk XML).
 *
 * A new kind (an NBD export next) adds one case to each switch in
 * destination.c and to each backend's switch on @kind.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "disk.h"

G_BEGIN_DECLS

typedef enum {
    VMR_DESTINATION_FILE,  /* a regular file on this host, existing or made for the copy */
    VMR_DESTINATION_BLOCK, /* a block device on this host */
} VmrDestinationKind;

/*
 * An atomic reference-counted box (g_atomic_rc_box), never changed once
 * made, so that a backend's thread may hold a reference too. Read the
 * fields; make one with vmr_destination_new().
 */
typedef struct {
    VmrDestinationKind kind;
    gchar *location;      /* absolute path */
    gchar *format;        /* "raw" or "qcow2" */
    gboolean created;     /* the copy makes it (it did not exist): removed if the copy fails */
    gchar *admission_key; /* what max-parallel-per-destination groups by: the directory of a
                           * file, the block device itself */
} VmrDestination;

/* TRUE for the formats a destination may have: "raw" and "qcow2" */
gboolean vmr_destination_format_is_valid (const gchar *format);

/*
 * Checks @format with vmr_destination_format_is_valid(); sets
 * VMR_ERROR_INVALID_ARGUMENT "unsupported destination format ..." otherwise.
 */
gboolean vmr_destination_check_format (const gchar *format, GError **error);

/*
 * The destination at @location in @format (NULL = raw); @created says the
 * copy makes it. Its kind is what @location is now: a block device, or else
 * a file (one that does not exist yet included). Sets
 * VMR_ERROR_INVALID_ARGUMENT when @location is not an absolute path or the
 * format is not valid; touches nothing. Free with vmr_destination_unref().
 */
VmrDestination *vmr_destination_new (const gchar *location, const gchar *format, gboolean created,
                                     GError **error);
VmrDestination *vmr_destination_ref (VmrDestination *self);
void vmr_destination_unref (VmrDestination *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrDestination, vmr_destination_unref)

/*
 * Checks that @self can receive the copy of a source of @source_size bytes
 * without touching anything: it is not one of @in_use (the paths of every
 * disk of the domain, NULL-terminated; compared with
 * vmr_destination_same_target()), lies in a writable directory that exists,
 * and exists if and only if it is not to be created; an existing raw file or
 * block device must not be smaller than the source. *@out_size (may be NULL)
 * is the size of an existing destination, 0 otherwise. Sets
 * VMR_ERROR_INVALID_ARGUMENT with one line naming the problem.
 */
gboolean vmr_destination_check (const VmrDestination *self, guint64 source_size,
                                const gchar *const *in_use, guint64 *out_size, GError **error);

/*
 * TRUE when @location (a disk's path, as QEMU, libvirt or a request names
 * it) leads to @self: the same inode, whatever links lead there, or the same
 * path once made canonical when either is missing. FALSE for a NULL @location.
 */
gboolean vmr_destination_same_target (const VmrDestination *self, const gchar *location);

/*
 * TRUE when the format records the image's virtual size (qcow2), which
 * QEMU reports once it has opened it; FALSE when the size is that of the
 * file or device (raw).
 */
gboolean vmr_destination_has_virtual_size (const VmrDestination *self);

/*
 * Creates @self, which must be a file to be created, for a copy of @size
 * bytes, with the mode and owner of @like_path when that can be read. A raw
 * file is sparse; qcow2 is made by qemu-img. Fails if it exists: sets
 * VMR_ERROR_INVALID_ARGUMENT, or VMR_ERROR_FAILED when making it failed.
 */
void vmr_destination_create_async (VmrDestination *self, guint64 size, const gchar *like_path,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean vmr_destination_create_finish (GAsyncResult *res, GError **error);

/* removes @self if the copy made it (@self->created); logs instead of failing */
void vmr_destination_remove (const VmrDestination *self);

/*
 * The arguments of QMP's blockdev-add that open @self as the format node
 * @node_name over a protocol node "@node_name-file", with the cache modes
 * of @source at both levels; an existing raw destination larger than
 * @source is opened for @source's size only. A new object.
 */
JsonObject *vmr_destination_to_blockdev_add (const VmrDestination *self, const gchar *node_name,
                                             const VmrDisk *source);

/*
 * The <disk> element libvirt's virDomainBlockCopy() takes for @self, e.g.
 * <disk type='file'><source file='...'/><driver type='raw'/></disk>. A new
 * string.
 */
gchar *vmr_destination_to_libvirt_xml (const VmrDestination *self);

G_END_DECLS
