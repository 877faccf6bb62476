/*
 * Keeps the engine's set of libvirt domains in step with libvirt: the
 * running domains at start and after every reconnection, then libvirt's
 * lifecycle events and the hook's news. A domain that starts is added with
 * a libvirt backend; one that stops is removed, its jobs failed with
 * "domain stopped".
 */
#pragma once

#include "engine.h"

G_BEGIN_DECLS

#define VMR_TYPE_LIBVIRT_TRACKER (vmr_libvirt_tracker_get_type ())
G_DECLARE_FINAL_TYPE (VmrLibvirtTracker, vmr_libvirt_tracker, VMR, LIBVIRT_TRACKER, GObject)

/* follows the domains of libvirt at @uri for @engine; call _start() next */
VmrLibvirtTracker *vmr_libvirt_tracker_new (VmrEngine *engine, const gchar *uri);

/* connects to libvirt (in the background, again and again while it is away) */
void vmr_libvirt_tracker_start (VmrLibvirtTracker *self);

/* closes the connection to libvirt; the engine's domains stay until it shuts down */
void vmr_libvirt_tracker_stop (VmrLibvirtTracker *self);

G_END_DECLS
