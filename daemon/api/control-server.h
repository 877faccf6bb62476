/*
 * The daemon's control socket: QMP-shaped JSON lines (docs/protocol.md),
 * translated into calls on the engine.
 */
#pragma once

#include <gio/gio.h>

#include "control-limits.h"
#include "engine.h"

G_BEGIN_DECLS

#define VMR_TYPE_CONTROL_SERVER (vmr_control_server_get_type ())
G_DECLARE_FINAL_TYPE (VmrControlServer, vmr_control_server, VMR, CONTROL_SERVER, GObject)

VmrControlServer *vmr_control_server_new (VmrEngine *engine);

/*
 * How many connections it holds and how long one may stay silent
 * (control-limits.h); set before it listens. Without it, the defaults.
 */
void vmr_control_server_set_limits (VmrControlServer *self, const VmrControlLimits *limits);

/*
 * Listens on the UNIX socket @path (mode 0600), creating its directory. A
 * stale socket file is replaced; a socket another daemon still serves is an
 * error. A command that changes anything is served to the daemon's own
 * user (root) only, and logged with the client's uid and pid.
 */
gboolean vmr_control_server_listen (VmrControlServer *self, const gchar *path, GError **error);

/*
 * Listens on the read-only socket @path too (mode 0660, group @gid), as
 * vmr_control_server_listen() does: it serves the commands that change
 * nothing (jobs, domains, the policy) and the events, and refuses the
 * others with VMR_ERROR_PERMISSION_DENIED.
 */
gboolean vmr_control_server_listen_readonly (VmrControlServer *self, const gchar *path, gid_t gid,
                                             GError **error);

/* stops listening, closes every connection and removes the socket files */
void vmr_control_server_stop (VmrControlServer *self);

G_END_DECLS
