/*
 * What the daemon asks of libvirt about one running domain, as blocking
 * calls for a worker thread (never the main context): its disks, its guest
 * load, QMP passthrough on libvirt's own block job, and keeping its
 * persistent definition in step after a pivot.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "destination.h"
#include "libvirt-connection.h"
#include "qmp-vocab.h"

G_BEGIN_DECLS

/*
 * The XML of @dom (virDomainGetXMLDesc with @flags; free with g_free), or NULL
 * with the libvirt error, or VMR_ERROR_PROTOCOL when it is longer than the
 * bound on what the daemon parses (see vmr_libvirt_reply_check()).
 */
gchar *vmr_libvirt_domain_get_xml (virDomain *dom, guint flags, GError **error);

/*
 * The disks of @dom that can move (files and block devices, not removable
 * media or network disks): a GPtrArray of VmrDisk with the target name as
 * id, the I/O thread from the XML and the virtual size from libvirt.
 */
GPtrArray *vmr_libvirt_domain_read_disks (virDomain *dom, GError **error);

/* the guest's I/O counters of each disk: target name -> VmrIoCounters * */
GHashTable *vmr_libvirt_domain_read_load (virDomain *dom, GError **error);

/*
 * Runs @cmd (a builder's of qmp-vocab.h, consumed) through libvirt: the
 * same JSON as the QMP backend sends. Returns its "return" value. A QMP
 * error is VMR_ERROR_GENERIC with QEMU's text; a reply over the bound of
 * vmr_libvirt_reply_check() is VMR_ERROR_PROTOCOL, not parsed. libvirt
 * marks the domain tainted ("custom-monitor") the first time.
 */
JsonNode *vmr_libvirt_domain_run (virDomain *dom, VmrQmpCmd *cmd, GError **error);

/* as vmr_libvirt_domain_run(), handing QEMU the file descriptor @fd with @cmd (as for getfd) */
JsonNode *vmr_libvirt_domain_run_with_fd (virDomain *dom, VmrQmpCmd *cmd, gint fd, GError **error);

/*
 * QEMU's query-block-jobs entry of libvirt's copy job on the disk @target
 * (transfer full), or NULL; VMR_ERROR_NOT_FOUND when QEMU runs none.
 */
JsonObject *vmr_libvirt_domain_query_copy_job (virDomain *dom, const gchar *target, GError **error);

/*
 * The <driver discard> of the disk @target in the live definition of @dom
 * ("unmap", "ignore"), "ignore" when it names none, NULL when the definition
 * cannot be read or has no such disk. A new string.
 */
gchar *vmr_libvirt_domain_disk_discard (virDomain *dom, const gchar *target);

/* QEMU's name of libvirt's copy job on the disk @target ("copy-vda-..."), or NULL */
gchar *vmr_libvirt_domain_find_copy_job (virDomain *dom, const gchar *target, GError **error);

/*
 * After a pivot: makes the persistent definition of @dom name @destination
 * for @target if it still names @source (libvirt 11 does that itself; older
 * ones may not), and logs what it found and did. A definition naming a
 * third image was changed on purpose and is left alone.
 */
void vmr_libvirt_domain_persist_disk (virDomain *dom, const gchar *job_id, const gchar *target,
                                      const gchar *source, const VmrDestination *destination);

G_END_DECLS
