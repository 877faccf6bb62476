/*
 * The daemon's one connection to libvirt: opening it (again and again while
 * libvirtd is away), libvirt's event loop on a thread of its own, and
 * libvirt's domain events brought over to the main context as signals.
 *
 * Blocking libvirt calls never run on the main context: the libvirt backend
 * and the tracker run them in GTask threads, each with its own reference to
 * the connection from vmr_libvirt_connection_ref_conn().
 */
#pragma once

#include <gio/gio.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

G_BEGIN_DECLS

/* virConnectClose() drops a reference; virDomainFree() likewise */
G_DEFINE_AUTOPTR_CLEANUP_FUNC (virConnect, virConnectClose)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (virDomain, virDomainFree)

/* how long to wait before opening the connection again after a failure */
#define VMR_LIBVIRT_RETRY_INTERVAL_S 2

#define VMR_TYPE_LIBVIRT_CONNECTION (vmr_libvirt_connection_get_type ())
G_DECLARE_FINAL_TYPE (VmrLibvirtConnection, vmr_libvirt_connection, VMR, LIBVIRT_CONNECTION,
                      GObject)

/*
 * Signals, all emitted on the main context of the thread that made the
 * object:
 *   "connected"    ()                              the connection is (again) open
 *   "disconnected" (const gchar *reason)           it was lost; a new one is tried
 *   "lifecycle"    (const gchar *name, const gchar *uuid, gint event, gint detail)
 *                  a virDomainEventType with its detail
 *   "block-job"    (const gchar *uuid, const gchar *target, gint type, gint status)
 *                  VIR_DOMAIN_EVENT_ID_BLOCK_JOB_2: @target is the disk, e.g. "vda"
 */
VmrLibvirtConnection *vmr_libvirt_connection_new (const gchar *uri);

/* starts the event loop thread and the first attempt to connect */
void vmr_libvirt_connection_start (VmrLibvirtConnection *self);

/* closes the connection and stops the event loop thread */
void vmr_libvirt_connection_stop (VmrLibvirtConnection *self);

/* tries to connect now when there is no connection and no attempt under way */
void vmr_libvirt_connection_try_now (VmrLibvirtConnection *self);

gboolean vmr_libvirt_connection_is_connected (VmrLibvirtConnection *self);
const gchar *vmr_libvirt_connection_get_uri (VmrLibvirtConnection *self);

/*
 * A new reference to the open connection, for any thread; release it with
 * virConnectClose(). NULL with VMR_ERROR_DISCONNECTED when there is none.
 */
virConnect *vmr_libvirt_connection_ref_conn (VmrLibvirtConnection *self, GError **error);

/*
 * The running domain @uuid, for any thread; free with virDomainFree().
 * NULL with VMR_ERROR_NOT_FOUND when it is not running (or not defined),
 * VMR_ERROR_DISCONNECTED when libvirt is away.
 */
virDomain *vmr_libvirt_connection_lookup (VmrLibvirtConnection *self, const gchar *uuid,
                                          GError **error);

/*
 * Sets @error to "WHAT: libvirt's message" from the last libvirt error of
 * the calling thread, with a VMR_ERROR code that fits it.
 */
void vmr_libvirt_set_error (GError **error, const gchar *format, ...) G_GNUC_PRINTF (2, 3);

G_END_DECLS
