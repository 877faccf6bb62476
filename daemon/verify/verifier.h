/*
 * The verification of a copy after its pivot, written once for every
 * backend. At the pivot an enabled dirty bitmap on the destination's node
 * starts recording the guest's writes. To verify, QEMU's own NBD server
 * exports that node and frozen copies of the bitmap (QEMU exports only a
 * disabled bitmap read-only), the old source is read too (exported by QEMU,
 * or served by qemu-nbd), and VmrNbdCompare compares both in a thread.
 * Whatever a run sets up in QEMU is removed again on every path; the
 * pivot's bitmap stays, so that the copy can be verified again later.
 *
 * A backend provides only its way to QEMU, a VmrVerifyTransport: the same
 * QMP commands go over QMP or through libvirt's passthrough. Its calls
 * block and are made from the verification's thread.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "job.h"
#include "qmp-vocab.h"
#include "verification.h"

G_BEGIN_DECLS

typedef struct {
    /*
     * Finds the VM's QEMU, and checks that it can export the job's disk
     * safely (vmr_verification_qemu_can_verify()); FALSE with @error when
     * it cannot.
     */
    gboolean (*open) (gpointer transport, GError **error);
    /* the name of the destination's node that holds @bitmap; NULL with @error */
    gchar *(*find_node) (gpointer transport, const gchar *bitmap, GError **error);
    /*
     * runs one QMP command in QEMU, @cmd (a builder's of qmp-vocab.h,
     * consumed): the "return" of its reply, or NULL with @error
     */
    JsonNode *(*execute) (gpointer transport, VmrQmpCmd *cmd, GError **error);
    /*
     * The address of nbd-server-start ("addr" in its legacy form) on which
     * QEMU is to listen at the path @socket: its @type ("unix", "fd") and
     * @value (the path, the descriptor's name). FALSE with @error.
     */
    gboolean (*listen) (gpointer transport, const gchar *socket, gchar **type, gchar **value,
                        GError **error);
    /* gives up the address of listen() that no server took; NULL: nothing to give up */
    void (*unlisten) (gpointer transport, const gchar *value);
    /*
     * Opens the old source read-only as QEMU's node @node, for the server
     * to export; FALSE with @error. NULL: QEMU does not read it, qemu-nbd
     * serves it to the comparison.
     */
    gboolean (*open_old) (gpointer transport, const gchar *node, GError **error);
    /* closes the node of open_old(); a failure is logged only */
    void (*close_old) (gpointer transport, const gchar *node);
    /* frees the transport, on the main loop once the run has ended */
    void (*free) (gpointer transport);
} VmrVerifyTransportOps;

/*
 * The name of the dirty bitmap that records the writes to the destination
 * of @job_id from its pivot on; free with g_free().
 */
gchar *vmr_verifier_pivot_bitmap (const gchar *job_id);

/*
 * The block-dirty-bitmap-add that starts that record on the node @node, to
 * send just before the pivot. Free with vmr_qmp_cmd_free().
 */
VmrQmpCmd *vmr_verifier_mark_pivot_cmd (const gchar *job_id, const gchar *node);

/* the verifications of one QEMU, one at a time (QEMU has one NBD server) */
typedef struct _VmrVerifier VmrVerifier;

VmrVerifier *vmr_verifier_new (void);
void vmr_verifier_free (VmrVerifier *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrVerifier, vmr_verifier_free)

/*
 * Verifies the completed @job through @transport (taken, freed with @ops'
 * free), with the NBD server's socket in @work_dir, after the verifications
 * queued before it. The figures of @verification (the caller's, which must
 * outlive the call) follow the comparison while it runs, and take its
 * result at the end. The task's source object is @source_object. Finish
 * with vmr_verifier_verify_finish().
 */
void vmr_verifier_verify_async (VmrVerifier *self, gpointer source_object,
                                const VmrVerifyTransportOps *ops, gpointer transport, VmrJob *job,
                                VmrVerification *verification, const gchar *work_dir,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);

/*
 * TRUE when the comparison went over the whole disk (differences are no
 * failure: they are in the verification); FALSE with @error when it could
 * not be made or finished.
 */
gboolean vmr_verifier_verify_finish (GAsyncResult *res, GError **error);

G_END_DECLS
