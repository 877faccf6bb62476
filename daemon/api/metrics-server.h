/*
 * The metrics over HTTP: GET /metrics answers the engine's statistics in
 * the Prometheus text format (metrics-text.h), with libsoup's SoupServer.
 * It has no authentication: bind it to loopback or firewall it.
 */
#pragma once

#include <gio/gio.h>

#include "engine.h"

G_BEGIN_DECLS

#define VMR_TYPE_METRICS_SERVER (vmr_metrics_server_get_type ())
G_DECLARE_FINAL_TYPE (VmrMetricsServer, vmr_metrics_server, VMR, METRICS_SERVER, GObject)

VmrMetricsServer *vmr_metrics_server_new (VmrEngine *engine);

/*
 * The socket address of @text, ADDR:PORT: an IPv4 address, or an IPv6 one
 * in brackets, and a port from 1 to 65535. NULL with
 * VMR_ERROR_INVALID_ARGUMENT saying what is wrong.
 */
GSocketAddress *vmr_metrics_server_parse_address (const gchar *text, GError **error);

/*
 * Listens on @text (ADDR:PORT, see vmr_metrics_server_parse_address()).
 * Fails when @text is no such address or the address cannot be bound.
 */
gboolean vmr_metrics_server_listen (VmrMetricsServer *self, const gchar *text, GError **error);

/* stops listening and closes every connection */
void vmr_metrics_server_stop (VmrMetricsServer *self);

G_END_DECLS
