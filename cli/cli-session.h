/*
 * One invocation's link to virt-mirrord: which socket, how to print, and the
 * control connection, opened on first use.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "qmp-client.h"

G_BEGIN_DECLS

typedef struct {
    gchar *socket_path;   /* control socket of virt-mirrord */
    gboolean json;        /* print replies as JSON instead of text */
    gboolean read_only;   /* the socket is the daemon's read-only one (--readonly) */
    VmrQmpClient *client; /* NULL until the first call */
} VmrCliSession;

/* a session for @socket_path; nothing is connected yet */
VmrCliSession *vmr_cli_session_new (const gchar *socket_path, gboolean json);

void vmr_cli_session_free (VmrCliSession *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliSession, vmr_cli_session_free)

/* replaces the socket; only before the first call */
void vmr_cli_session_set_socket (VmrCliSession *self, const gchar *socket_path);

/*
 * The connection to the daemon, opened on first use; owned by @self.
 * Sets VMR_ERROR_DISCONNECTED, naming the socket, when the daemon cannot be
 * reached or does not speak the control protocol.
 */
VmrQmpClient *vmr_cli_session_get_client (VmrCliSession *self, GError **error);

/*
 * Runs the control command @command with @arguments (nullable, not consumed)
 * and returns its "return" value (free with json_node_unref). An error reply
 * becomes a VMR_ERROR with the reply's class and desc.
 */
JsonNode *vmr_cli_session_call (VmrCliSession *self, const gchar *command, JsonObject *arguments,
                                GError **error);

G_END_DECLS
