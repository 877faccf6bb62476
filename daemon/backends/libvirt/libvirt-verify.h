/*
 * libvirt's way to QEMU for the verification of a copy after its pivot
 * (see verifier.h). libvirt has no API for it, so the QMP commands go
 * through its passthrough, as pausing a copy does: just before the pivot a
 * dirty bitmap on the node libvirt copies to starts recording the guest's
 * writes; to verify, QEMU's NBD server, started on a listening socket the
 * daemon hands it, exports that node and frozen copies of the bitmap, and
 * qemu-nbd, run by libnbd, serves the old source (libvirt took it out of
 * QEMU at the pivot).
 */
#pragma once

#include "destination.h"
#include "job.h"
#include "libvirt-connection.h"
#include "verifier.h"

G_BEGIN_DECLS

/*
 * Just before the pivot of @job_id: adds the bitmap that records every
 * write to the node of @destination from then on. Logs a failure (the
 * pivot goes on; a verification then says what is missing).
 */
void vmr_libvirt_verify_mark_pivot (virDomain *dom, const gchar *job_id,
                                    const VmrDestination *destination);

/*
 * Verifies the completed @job of the domain @uuid of @connection with
 * @verifier, as vmr_verifier_verify_async() does; finish with
 * vmr_verifier_verify_finish().
 */
void vmr_libvirt_verify_async (VmrVerifier *verifier, gpointer source_object,
                               VmrLibvirtConnection *connection, const gchar *uuid, VmrJob *job,
                               VmrVerification *verification, const gchar *work_dir,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data);

G_END_DECLS
