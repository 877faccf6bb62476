/*
 * Verifying the copy of a libvirt domain's disk after its pivot, as
 * blocking calls for a worker thread. libvirt has no API for it, so it goes
 * through QMP passthrough, as pausing a copy does: just before the pivot a
 * dirty bitmap on the node libvirt copies to starts recording the guest's
 * writes; to verify, QEMU's NBD server, started on a listening socket the
 * daemon hands it, exports that node and frozen copies of the bitmap, and
 * qemu-nbd, run by libnbd, serves the old source (libvirt took it out of
 * QEMU at the pivot). The comparison is VmrNbdCompare's.
 */
#pragma once

#include "destination.h"
#include "job.h"
#include "libvirt-connection.h"
#include "nbd-compare.h"

G_BEGIN_DECLS

/*
 * Just before the pivot of @job_id: adds the bitmap that records every
 * write to the node of @destination from then on. Logs a failure (the
 * pivot goes on; a verification then says what is missing).
 */
void vmr_libvirt_verify_mark_pivot (virDomain *dom, const gchar *job_id,
                                    const VmrDestination *destination);

typedef struct _VmrLibvirtVerify VmrLibvirtVerify;

/*
 * The verification of the completed @job, with its sockets in @work_dir;
 * nothing happens yet. Its comparison's figures may be read meanwhile.
 */
VmrLibvirtVerify *vmr_libvirt_verify_new (VmrJob *job, const gchar *work_dir);
void vmr_libvirt_verify_free (VmrLibvirtVerify *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrLibvirtVerify, vmr_libvirt_verify_free)

/* its comparison: figures any time, the differences after the run */
VmrNbdCompare *vmr_libvirt_verify_get_compare (VmrLibvirtVerify *self);

/*
 * Sets up the exports in the QEMU of @dom, compares, and removes whatever
 * it set up, on every path. Blocking: a worker thread. FALSE with @error
 * when the comparison could not be made or finished; differences are no
 * failure.
 */
gboolean vmr_libvirt_verify_run (VmrLibvirtVerify *self, virDomain *dom, GCancellable *cancellable,
                                 GError **error);

G_END_DECLS
