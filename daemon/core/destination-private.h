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

G_END_DECLS
