/*
 * The backend for a domain that libvirt runs. libvirt owns the domain's
 * block graph, so the copy goes through libvirt's block-copy API (so that
 * libvirt's live and persistent definitions name the destination after the
 * pivot); what libvirt has no API for (pausing and resuming the copy) goes
 * through QMP passthrough on libvirt's own job. Every libvirt call runs in a
 * GTask thread; libvirt's block job events arrive through the connection.
 */
#pragma once

#include "backend.h"
#include "libvirt-connection.h"

G_BEGIN_DECLS

#define VMR_TYPE_BACKEND_LIBVIRT (vmr_backend_libvirt_get_type ())
G_DECLARE_FINAL_TYPE (VmrBackendLibvirt, vmr_backend_libvirt, VMR, BACKEND_LIBVIRT, VmrBackend)

/* the backend of the running domain @name (@uuid) on @connection */
VmrBackend *vmr_backend_libvirt_new (VmrLibvirtConnection *connection, const gchar *name,
                                     const gchar *uuid);

const gchar *vmr_backend_libvirt_get_uuid (VmrBackendLibvirt *self);

G_END_DECLS
