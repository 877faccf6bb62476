/*
 * The internals of destination.c that its tests use: the kind a path's
 * stat() result makes, and a destination of a given kind that does not
 * have to exist on this host.
 */
#pragma once

#include <glib/gstdio.h>

#include "destination.h"

G_BEGIN_DECLS

/* the kind of a destination whose stat() gave @st; NULL when it does not exist */
VmrDestinationKind vmr_destination_kind_of (const GStatBuf *st);

/*
 * A destination of @kind at @location in @format, which must be valid,
 * without looking at @location. Free with vmr_destination_unref().
 */
VmrDestination *vmr_destination_new_of_kind (VmrDestinationKind kind, const gchar *location,
                                             const gchar *format, gboolean created);

/* ---- an NBD export (destination-nbd.c) ---- */

/* vmr_destination_same_target() of an export: @location names the same export */
gboolean vmr_destination_nbd_same_target (const VmrDestination *self, const gchar *location);

/* vmr_destination_check() of an export, what can be told without connecting */
gboolean vmr_destination_nbd_check (const VmrDestination *self, const gchar *const *in_use,
                                    GError **error);

/* the protocol node of blockdev-add for an export opened as @node_name, without node-name */
JsonObject *vmr_destination_nbd_blockdev_file (const VmrDestination *self, const gchar *node_name);

/* the libvirt <disk type='network'> of an export */
gchar *vmr_destination_nbd_to_libvirt_xml (const VmrDestination *self);

G_END_DECLS
