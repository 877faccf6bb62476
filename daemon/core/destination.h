/*
 * The destination of a migration: what it is (a file or a block device on
 * this host, an NBD export), the checks made before anything is changed,
 * the group the admission limits count it in, and how each backend names it
 * (QMP's blockdev-add, libvirt's disk XML). Opening, making and removing a
 * file or device is destination-handle.h's.
 *
 * A new kind adds one case to each switch in destination.c and to each
 * backend's switch on @kind. An NBD export's own parts are in
 * destination-nbd.c.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "disk.h"
#include "nbd-preflight.h"
#include "nbd-uri.h"

G_BEGIN_DECLS

typedef enum {
    VMR_DESTINATION_FILE,  /* a regular file on this host, existing or made for the copy */
    VMR_DESTINATION_BLOCK, /* a block device on this host */
    VMR_DESTINATION_NBD,   /* an export of an NBD server, named by its URI */
} VmrDestinationKind;

/* what only an NBD destination has */
typedef struct {
    const gchar *tls_creds;  /* nbds: the directory of x509 files (ca-cert.pem,
                              * client-cert.pem, client-key.pem); NULL = none given */
    guint reconnect_delay_s; /* how long QEMU retries a lost connection, 0 = never */
} VmrDestinationNbdOptions;

/*
 * An atomic reference-counted box (g_atomic_rc_box), never changed once
 * made, so that a backend's thread may hold a reference too. Read the
 * fields; make one with vmr_destination_new().
 */
typedef struct {
    VmrDestinationKind kind;
    gchar *location;         /* absolute path, or the canonical URI of an NBD export */
    gchar *format;           /* "raw" or "qcow2" */
    gboolean created;        /* the copy makes it (it did not exist); see destination-handle.h */
    gchar *admission_key;    /* what max-parallel-per-destination groups by: the directory of a
                              * file, the block device itself, an NBD server */
    VmrNbdUri *nbd;          /* an NBD export's parts, NULL for the other kinds */
    gchar *tls_creds;        /* an nbds export's x509 directory, NULL otherwise */
    guint reconnect_delay_s; /* an NBD export's QEMU reconnect-delay */
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

/*
 * As vmr_destination_new(), and @location may be an NBD URI (nbd://, nbds://,
 * nbd+unix://, see nbd-uri.h) too: then the destination is that export,
 * which the copy never makes (@created is ignored), in raw format only, with
 * @nbd's options (NULL = none). Sets VMR_ERROR_INVALID_ARGUMENT for a
 * malformed URI.
 */
VmrDestination *vmr_destination_new_full (const gchar *location, const gchar *format,
                                          gboolean created, const VmrDestinationNbdOptions *nbd,
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
 * Checks what only a look at the destination itself can tell, off the main
 * loop: an NBD export is reached with libnbd (TLS when it asks for it) and
 * must be writable and at least @source_size bytes (vmr_nbd_preflight()).
 * Succeeds with *@out_facts (may be NULL) set to what the export offers, or
 * to NULL for the kinds that need no look. Free the facts with g_free().
 */
void vmr_destination_preflight_async (VmrDestination *self, guint64 source_size,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
gboolean vmr_destination_preflight_finish (GAsyncResult *res, VmrNbdExportFacts **out_facts,
                                           GError **error);

/* the export facts of a preflight as the job object shows them; a new object */
JsonObject *vmr_destination_facts_to_json (const VmrNbdExportFacts *facts);

/* the facts of vmr_destination_facts_to_json(), or NULL when @obj is NULL; free with g_free() */
VmrNbdExportFacts *vmr_destination_facts_from_json (JsonObject *obj);

/*
 * The detect-zeroes of the raw node QEMU opens on an export that the
 * preflight found @facts on: "unmap" when the server can write zeroes, so
 * that zero buffers a source writes become zero writes that may trim; NULL
 * (QEMU's default, off) when it cannot, or @facts is NULL, where detecting
 * would only cost the scan. The node always has discard=unmap.
 */
const gchar *vmr_destination_nbd_detect_zeroes (const VmrNbdExportFacts *facts);

/*
 * What a copy to an export with @facts costs beyond the time and the space
 * of its data, as one line for the job and the log (the server cannot zero:
 * holes are written as data), or NULL when nothing. A static string.
 */
const gchar *vmr_destination_nbd_zero_fallback (const VmrNbdExportFacts *facts);

/*
 * The arguments of QMP's object-add for the tls-creds-x509 object an nbds
 * destination opened as @node_name needs, or NULL when it needs none. Its
 * id is vmr_destination_tls_object_id(). A new object.
 */
JsonObject *vmr_destination_to_tls_object_add (const VmrDestination *self, const gchar *node_name);

/* the id of that object, "@node_name-tls", or NULL when there is none; a new string */
gchar *vmr_destination_tls_object_id (const VmrDestination *self, const gchar *node_name);

/*
 * The path of @self when it is a raw file or block device, that a reader
 * may pread() as QEMU's raw driver does; NULL for other destinations. Not
 * a copy.
 */
const gchar *vmr_destination_raw_path (const VmrDestination *self);

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
 * The arguments of QMP's blockdev-add that open @self as the format node
 * @node_name over a protocol node "@node_name-file", with the cache modes
 * of @source at both levels and discard=unmap; an existing raw destination
 * larger than @source is opened for @source's size only. An export also
 * gets the detect-zeroes of vmr_destination_nbd_detect_zeroes() for what
 * its preflight found, @facts (NULL for the other kinds). A new object.
 */
JsonObject *vmr_destination_to_blockdev_add (const VmrDestination *self, const gchar *node_name,
                                             const VmrDisk *source, const VmrNbdExportFacts *facts);

/*
 * The <disk> element libvirt's virDomainBlockCopy() takes for @self, e.g.
 * <disk type='file'><source file='...'/><driver type='raw'/></disk>. A new
 * string.
 */
gchar *vmr_destination_to_libvirt_xml (const VmrDestination *self);

/*
 * The <source> element of that disk for a network destination (an NBD
 * export), e.g. <source protocol='nbd' name='vm1' tls='no'><host .../></source>;
 * NULL for a file or a block device, whose source is a path. A new string.
 */
gchar *vmr_destination_to_libvirt_source (const VmrDestination *self);

G_END_DECLS
