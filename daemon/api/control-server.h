/*
 * The daemon's control socket: QMP-shaped JSON lines (docs/protocol.md),
 * translated into calls on the engine.
 */
#pragma once

#include <gio/gio.h>

#include "engine.h"

G_BEGIN_DECLS

#define VMR_TYPE_CONTROL_SERVER (vmr_control_server_get_type ())
G_DECLARE_FINAL_TYPE (VmrControlServer, vmr_control_server, VMR, CONTROL_SERVER, GObject)

VmrControlServer *vmr_control_server_new (VmrEngine *engine);

/*
 * Listens on the UNIX socket @path (mode 0600), creating its directory. A
 * stale socket file is replaced; a socket another daemon still serves is an
 * error.
 */
gboolean vmr_control_server_listen (VmrControlServer *self, const gchar *path, GError **error);

/* stops listening, closes every connection and removes the socket file */
void vmr_control_server_stop (VmrControlServer *self);

G_END_DECLS
