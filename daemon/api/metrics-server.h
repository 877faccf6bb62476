/*
 * The metrics over HTTP: GET /metrics answers the engine's statistics in
 * the Prometheus text format (metrics-text.h), with libsoup's SoupServer.
 * It has no authentication: on a TCP address any local user reads it, so
 * an address that is not loopback must be allowed by name, and unix:PATH
 * serves it on a UNIX socket that only root and the read-only socket's
 * group may open. What one client may cost is bounded (docs/metrics.md):
 * VMR_METRICS_MAX_CLIENTS connections at once, a request without a body
 * that comes whole within VMR_METRICS_REQUEST_TIMEOUT_S, one request per
 * connection.
 */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "engine.h"

G_BEGIN_DECLS

/* connections at once; past it, a connection gets 503 and is closed */
#define VMR_METRICS_MAX_CLIENTS 16
/* a connection that has not sent its request, or not read its answer, in this time is closed */
#define VMR_METRICS_REQUEST_TIMEOUT_S 10

#define VMR_TYPE_METRICS_SERVER (vmr_metrics_server_get_type ())
G_DECLARE_FINAL_TYPE (VmrMetricsServer, vmr_metrics_server, VMR, METRICS_SERVER, GObject)

VmrMetricsServer *vmr_metrics_server_new (VmrEngine *engine);

/*
 * The socket address of @text: ADDR:PORT, an IPv4 address or an IPv6 one
 * in brackets and a port from 1 to 65535, which must be a loopback address
 * unless @allow_remote (0.0.0.0 and [::] are not); or unix:PATH, an
 * absolute path. NULL with VMR_ERROR_INVALID_ARGUMENT, one line saying
 * what is wrong.
 */
GSocketAddress *vmr_metrics_server_parse_address (const gchar *text, gboolean allow_remote,
                                                  GError **error);

/*
 * Listens on @text (see vmr_metrics_server_parse_address()); a UNIX socket
 * is made mode 0660 with the group @gid, or 0600 when @gid is (gid_t) -1.
 * Fails when @text is no such address or it cannot be bound.
 */
gboolean vmr_metrics_server_listen (VmrMetricsServer *self, const gchar *text,
                                    gboolean allow_remote, gid_t gid, GError **error);

/* stops listening and closes every connection */
void vmr_metrics_server_stop (VmrMetricsServer *self);

G_END_DECLS
