/*
 * Comparing two NBD exports of the same size, as the verification of a copy
 * does: the old source of a disk and the disk the guest now runs on, while
 * the guest keeps writing the latter. Ranges that block status says are
 * zero on both sides are skipped, and so are the ranges a dirty bitmap of
 * the destination marks as written by the guest. QEMU exports only a
 * frozen bitmap read-only, so the record of the writes comes as snapshots,
 * each in an export of its own that the caller makes on demand: one for
 * the first pass, and a newer one for each re-check. A difference is only
 * reported once it is still there, and not marked written in a snapshot
 * taken after a wait, twice (QEMU marks a write when it completes, not
 * when its bytes become visible).
 *
 * vmr_nbd_compare_run() blocks on its reads: run it in a thread. The
 * progress may be read from any thread while it runs.
 */
#pragma once

#include <gio/gio.h>

#include "nbd-ranges.h"

G_BEGIN_DECLS

/* one side of a comparison */
typedef struct {
    const gchar *socket;      /* path of the NBD server's UNIX socket */
    const gchar *export_name; /* the export */
    /* the raw image the export serves, to read with pread() as qemu-img does
     * (block status still comes from the export); NULL: read through it */
    const gchar *raw_path;
    /* or else a server to run (argv, NULL-terminated), that libnbd starts
     * with systemd socket activation and that ends when the comparison lets
     * go of it, e.g. qemu-nbd --read-only; NULL: connect to socket */
    const gchar *const *command;
} VmrNbdExport;

/*
 * Makes a snapshot of the record of the guest's writes to the destination
 * and exports it on the destination's server; called in the comparison's
 * thread, blocking, with @round 0 before the first pass and 1, 2 before
 * each re-check. Sets the export's name and its meta context (e.g.
 * "qemu:dirty-bitmap:vmr-3-verify-0") or returns FALSE with @error.
 */
typedef gboolean (*VmrNbdDirtySnapshotFunc) (gpointer user_data, guint round, gchar **export_name,
                                             gchar **context, GError **error);

typedef struct {
    VmrNbdExport source;
    VmrNbdExport dest;
    /* NULL: nothing writes the destination, every byte is compared */
    VmrNbdDirtySnapshotFunc dirty_snapshot;
    gpointer dirty_snapshot_data;
    /* bytes per read; 0 = VMR_NBD_COMPARE_FILE_CHUNK when both sides are raw
     * files, else VMR_NBD_COMPARE_CHUNK */
    guint64 chunk_size;
    guint recheck_delay_ms[2]; /* the waits before each re-check; 0, 0 = 200 ms, 1 s */
} VmrNbdCompareSpec;

#define VMR_NBD_COMPARE_CHUNK      (4u << 20)
#define VMR_NBD_COMPARE_FILE_CHUNK (256u << 10)

/* the granule in which differences are reported */
#define VMR_NBD_COMPARE_GRANULE 4096

typedef struct {
    guint64 size;             /* of each export, bytes */
    guint64 covered_bytes;    /* of the disk, gone over so far */
    guint64 compared_bytes;   /* read on both sides and compared */
    guint64 zero_bytes;       /* zero on both sides: skipped */
    guint64 written_bytes;    /* written by the guest since the bitmap began: skipped */
    guint64 mismatched_bytes; /* bytes that differ in the confirmed ranges */
} VmrNbdCompareFigures;

typedef struct _VmrNbdCompare VmrNbdCompare;

/* a comparison of the two exports of @spec (copied); connects to nothing yet */
VmrNbdCompare *vmr_nbd_compare_new (const VmrNbdCompareSpec *spec);
void vmr_nbd_compare_free (VmrNbdCompare *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrNbdCompare, vmr_nbd_compare_free)

/*
 * Connects to both exports and compares them. Returns TRUE when it went
 * over the whole disk (the confirmed differences, if any, are then in
 * vmr_nbd_compare_get_mismatches()); FALSE with @error when it could not:
 * VMR_ERROR_FAILED for a connection or a read that failed, sizes that
 * differ or a dirty bitmap the destination does not offer,
 * G_IO_ERROR_CANCELLED when @cancellable was cancelled.
 */
gboolean vmr_nbd_compare_run (VmrNbdCompare *self, GCancellable *cancellable, GError **error);

/*
 * Closes the connections (a server of a command ends) and the raw images;
 * the figures and the differences stay. Any time the run is not running.
 */
void vmr_nbd_compare_disconnect (VmrNbdCompare *self);

/* the figures so far; any thread */
VmrNbdCompareFigures vmr_nbd_compare_get_figures (VmrNbdCompare *self);

/* the confirmed differences, in granules of VMR_NBD_COMPARE_GRANULE; after the run */
const VmrRangeList *vmr_nbd_compare_get_mismatches (VmrNbdCompare *self);

G_END_DECLS
