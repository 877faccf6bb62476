/*
 * The QMP arguments that read a node and the guest's writes to it through
 * QEMU's own NBD server, as the verification of a copy does in both
 * backends: the server on a socket, a read-only export, and a frozen copy of
 * a dirty bitmap (QEMU exports only a disabled bitmap read-only).
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/*
 * The arguments of nbd-server-start on the socket address of @type ("unix"
 * with the path @value, or "fd" with the name of a descriptor given to QEMU
 * with getfd), in the legacy form that command takes. Free with
 * json_object_unref().
 */
JsonObject *vmr_qmp_nbd_server_args (const gchar *type, const gchar *value);

/*
 * The arguments of block-export-add for a read-only NBD export @id (named
 * @id too) of the node @node, with the disabled dirty bitmap @bitmap as
 * "qemu:dirty-bitmap:BITMAP" when not NULL. Free with json_object_unref().
 */
JsonObject *vmr_qmp_nbd_export_args (const gchar *id, const gchar *node, const gchar *bitmap);

/*
 * The arguments of a transaction that adds the disabled bitmap @copy to
 * @node and merges @bitmap into it: a frozen copy, made at once or not at
 * all. Free with json_object_unref().
 */
JsonObject *vmr_qmp_bitmap_copy_args (const gchar *node, const gchar *bitmap, const gchar *copy);

G_END_DECLS
