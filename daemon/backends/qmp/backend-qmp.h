/*
 * The backend for a QEMU process that libvirt does not manage: everything
 * goes over its QMP monitor socket.
 */
#pragma once

#include "backend.h"

G_BEGIN_DECLS

#define VMR_TYPE_BACKEND_QMP (vmr_backend_qmp_get_type ())
G_DECLARE_FINAL_TYPE (VmrBackendQmp, vmr_backend_qmp, VMR, BACKEND_QMP, VmrBackend)

/* connects to the monitor at @monitor_path and checks that it is QEMU's */
void vmr_backend_qmp_connect_async (const gchar *monitor_path, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data);
VmrBackend *vmr_backend_qmp_connect_finish (GAsyncResult *res, GError **error);

G_END_DECLS
