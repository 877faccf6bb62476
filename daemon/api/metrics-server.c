#define G_LOG_DOMAIN "vmr-daemon"

#include "metrics-server.h"

#include <libsoup/soup.h>

#include "engine-stats.h"
#include "metrics-text.h"
#include "vmr-error.h"

#define METRICS_PATH "/metrics"

struct _VmrMetricsServer {
    GObject parent_instance;

    VmrEngine *engine;
    SoupServer *server; /* NULL until it listens */
};

G_DEFINE_TYPE (VmrMetricsServer, vmr_metrics_server, G_TYPE_OBJECT)

GSocketAddress *
vmr_metrics_server_parse_address (const gchar *text, GError **error)
{
    g_autoptr (GSocketConnectable) parsed = NULL;
    g_autoptr (GInetAddress) address = NULL;
    const gchar *host;
    guint16 port;

    /* a port is required: the parse gives 0 without one */
    parsed = g_network_address_parse (text, 0, NULL);
    host = parsed != NULL ? g_network_address_get_hostname (G_NETWORK_ADDRESS (parsed)) : NULL;
    port = parsed != NULL ? g_network_address_get_port (G_NETWORK_ADDRESS (parsed)) : 0;
    address = host != NULL ? g_inet_address_new_from_string (host) : NULL;
    if (address == NULL || port == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not ADDR:PORT: give an IP address and a port from 1 to 65535, "
                     "e.g. 127.0.0.1:9474 or [::1]:9474",
                     text);
        return NULL;
    }
    return g_inet_socket_address_new (address, port);
}

static void
metrics_cb (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
            gpointer user_data)
{
    VmrMetricsServer *self = user_data;
    const gchar *method = soup_server_message_get_method (msg);
    g_autoptr (VmrEngineStats) stats = NULL;
    gchar *text;

    /* the handler also gets the paths below its own */
    if (!g_str_equal (path, METRICS_PATH)) {
        soup_server_message_set_status (msg, SOUP_STATUS_NOT_FOUND, NULL);
        return;
    }
    if (!g_str_equal (method, SOUP_METHOD_GET) && !g_str_equal (method, SOUP_METHOD_HEAD)) {
        soup_message_headers_append (soup_server_message_get_response_headers (msg), "Allow",
                                     "GET, HEAD");
        soup_server_message_set_status (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, NULL);
        return;
    }
    stats = vmr_engine_get_stats (self->engine);
    text = vmr_metrics_format (stats);
    soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response (msg, VMR_METRICS_CONTENT_TYPE, SOUP_MEMORY_TAKE, text,
                                      strlen (text));
}

VmrMetricsServer *
vmr_metrics_server_new (VmrEngine *engine)
{
    VmrMetricsServer *self = g_object_new (VMR_TYPE_METRICS_SERVER, NULL);

    self->engine = g_object_ref (engine);
    return self;
}

gboolean
vmr_metrics_server_listen (VmrMetricsServer *self, const gchar *text, GError **error)
{
    g_autoptr (GSocketAddress) address = vmr_metrics_server_parse_address (text, error);
    g_autoptr (SoupServer) server = NULL;
    g_autoptr (GError) local_error = NULL;

    if (address == NULL)
        return FALSE;
    server = soup_server_new ("server-header", "virt-mirrord", NULL);
    soup_server_add_handler (server, METRICS_PATH, metrics_cb, self, NULL);
    if (!soup_server_listen (server, address, 0, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot serve the metrics on %s: %s", text,
                     local_error->message);
        return FALSE;
    }
    vmr_metrics_server_stop (self);
    self->server = g_steal_pointer (&server);
    g_message ("metrics on http://%s" METRICS_PATH, text);
    return TRUE;
}

void
vmr_metrics_server_stop (VmrMetricsServer *self)
{
    if (self->server == NULL)
        return;
    soup_server_disconnect (self->server);
    g_clear_object (&self->server);
}

static void
vmr_metrics_server_dispose (GObject *object)
{
    VmrMetricsServer *self = VMR_METRICS_SERVER (object);

    vmr_metrics_server_stop (self);
    g_clear_object (&self->engine);
    G_OBJECT_CLASS (vmr_metrics_server_parent_class)->dispose (object);
}

static void
vmr_metrics_server_init (VmrMetricsServer *self)
{
}

static void
vmr_metrics_server_class_init (VmrMetricsServerClass *klass)
{
    G_OBJECT_CLASS (klass)->dispose = vmr_metrics_server_dispose;
}
