#define G_LOG_DOMAIN "vmr-daemon"

#include "metrics-server.h"

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "engine-stats.h"
#include "log-throttle.h"
#include "metrics-text.h"
#include "unix-socket.h"
#include "vmr-error.h"

#define METRICS_PATH "/metrics"
/* at most one refused connection logged in this time */
#define REFUSAL_LOG_INTERVAL_US (10 * G_USEC_PER_SEC)

/* a connection being served: soup owns its socket, which it names */
typedef struct {
    VmrMetricsServer *server; /* not referenced: it forgets its clients before it goes */
    GSocket *socket;          /* weak: gone when soup drops it */
    gint64 since_us;          /* when its request started or was read (monotonic) */
    gboolean shut;            /* shut down for its time: soup is to close it */
} MetricsClient;

struct _VmrMetricsServer {
    GObject parent_instance;

    VmrEngine *engine;
    SoupServer *server; /* NULL until it listens */
    gchar *unix_path;   /* the UNIX socket it made, removed when it stops; NULL: TCP */
    GPtrArray *clients; /* of MetricsClient *, owned */
    guint sweep_id;     /* the check of the clients' time, 0: none */
    VmrLogThrottle refusal_log;
};

G_DEFINE_TYPE (VmrMetricsServer, vmr_metrics_server, G_TYPE_OBJECT)

/* ---- addresses ---- */

static GSocketAddress *
parse_inet_address (const gchar *text, gboolean allow_remote, GError **error)
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
                     "'%s' is not ADDR:PORT or unix:PATH: give an IP address and a port from 1 "
                     "to 65535, e.g. 127.0.0.1:9474 or [::1]:9474, or an absolute path",
                     text);
        return NULL;
    }
    /* 0.0.0.0 and [::] are every address of the host, not loopback */
    if (!allow_remote && !g_inet_address_get_is_loopback (address)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a loopback address: anyone who reaches it reads the metrics, "
                     "without authentication; give --metrics-allow-remote to serve them there",
                     text);
        return NULL;
    }
    return g_inet_socket_address_new (address, port);
}

GSocketAddress *
vmr_metrics_server_parse_address (const gchar *text, gboolean allow_remote, GError **error)
{
    const gchar *path;

    if (!g_str_has_prefix (text, "unix:"))
        return parse_inet_address (text, allow_remote, error);
    path = text + strlen ("unix:");
    if (!g_path_is_absolute (path)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not unix:PATH with an absolute path", text);
        return NULL;
    }
    return g_unix_socket_address_new (path);
}

/* ---- what one client may cost ---- */

static void client_gone_cb (gpointer data, GObject *where_the_socket_was);

static void
client_free (MetricsClient *client)
{
    if (client->socket != NULL)
        g_object_weak_unref (G_OBJECT (client->socket), client_gone_cb, client);
    g_free (client);
}

static void
client_gone_cb (gpointer data, GObject *where_the_socket_was)
{
    MetricsClient *client = data;

    client->socket = NULL;
    g_ptr_array_remove_fast (client->server->clients, client);
}

static MetricsClient *
find_client (VmrMetricsServer *self, GSocket *socket)
{
    for (guint i = 0; i < self->clients->len; i++) {
        MetricsClient *client = g_ptr_array_index (self->clients, i);

        if (client->socket == socket)
            return client;
    }
    return NULL;
}

/* forgets the clients whose connection soup closed (it may keep their socket a while) */
static void
forget_closed (VmrMetricsServer *self)
{
    for (guint i = self->clients->len; i > 0; i--) {
        MetricsClient *client = g_ptr_array_index (self->clients, i - 1);

        if (g_socket_is_closed (client->socket))
            g_ptr_array_remove_index_fast (self->clients, i - 1);
    }
}

/*
 * a client past its time is shut down, and soup closes its connection; one
 * that soup still has not closed a period later is closed here, so that its
 * descriptor is freed whatever soup does
 */
static gboolean
sweep_cb (gpointer user_data)
{
    VmrMetricsServer *self = user_data;
    gint64 now = g_get_monotonic_time ();

    forget_closed (self);
    for (guint i = 0; i < self->clients->len; i++) {
        MetricsClient *client = g_ptr_array_index (self->clients, i);

        if (now - client->since_us >= VMR_METRICS_REQUEST_TIMEOUT_S * G_USEC_PER_SEC) {
            g_debug ("closing a metrics connection silent for %d s", VMR_METRICS_REQUEST_TIMEOUT_S);
            if (client->shut)
                g_socket_close (client->socket, NULL);
            else
                g_socket_shutdown (client->socket, TRUE, TRUE, NULL);
            client->shut = TRUE;
            client->since_us = now;
        }
    }
    return G_SOURCE_CONTINUE;
}

/* an answer written straight to a client soup has not answered, then its end */
static void
answer_and_close (GSocket *socket, const gchar *status_line)
{
    g_autofree gchar *answer = g_strdup_printf (
        "HTTP/1.1 %s\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status_line);

    /* a connection soup just took has room for it in its buffer, or is gone */
    g_socket_send_with_blocking (socket, answer, strlen (answer), FALSE, NULL, NULL);
    g_socket_shutdown (socket, TRUE, TRUE, NULL);
}

static void
request_started_cb (SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
    VmrMetricsServer *self = user_data;
    GSocket *socket = soup_server_message_get_socket (msg);
    MetricsClient *client = NULL;
    guint left_out = 0;

    if (socket == NULL)
        return;
    forget_closed (self);
    client = find_client (self, socket);
    if (client == NULL && self->clients->len >= VMR_METRICS_MAX_CLIENTS) {
        if (vmr_log_throttle_pass (&self->refusal_log, &left_out))
            g_message ("refused a metrics connection of %s: %d connections already%s",
                       soup_server_message_get_remote_host (msg) != NULL
                           ? soup_server_message_get_remote_host (msg)
                           : "a local client",
                       VMR_METRICS_MAX_CLIENTS,
                       left_out > 0 ? " (and more refused since the last one logged)" : "");
        answer_and_close (socket, "503 Service Unavailable");
        return;
    }
    if (client == NULL) {
        client = g_new0 (MetricsClient, 1);
        client->server = self;
        client->socket = socket;
        g_object_weak_ref (G_OBJECT (socket), client_gone_cb, client);
        g_ptr_array_add (self->clients, client);
    }
    client->since_us = g_get_monotonic_time ();
}

static void
request_read_cb (SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
    GSocket *socket = soup_server_message_get_socket (msg);
    MetricsClient *client = socket != NULL ? find_client (user_data, socket) : NULL;

    if (client != NULL)
        client->since_us = g_get_monotonic_time ();
}

/*
 * Every answer closes its connection: libsoup 3.2 leaves a kept-alive
 * connection that its client closed open for good (fixed in 3.3), one
 * descriptor per scrape. A request with a body is refused before soup
 * reads it: soup would keep all of it in memory.
 */
static void
early_cb (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
          gpointer user_data)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers (msg);
    SoupEncoding encoding = soup_message_headers_get_encoding (headers);
    GSocket *socket = soup_server_message_get_socket (msg);
    g_autoptr (GIOStream) stolen = NULL;

    soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Connection",
                                  "close");
    if (encoding == SOUP_ENCODING_NONE
        || (encoding == SOUP_ENCODING_CONTENT_LENGTH
            && soup_message_headers_get_content_length (headers) == 0)
        || socket == NULL)
        return;
    g_object_ref (socket);
    stolen = soup_server_message_steal_connection (msg);
    answer_and_close (socket, "413 Content Too Large");
    g_io_stream_close (stolen, NULL, NULL);
    g_object_unref (socket);
}

static void
metrics_cb (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
            gpointer user_data)
{
    VmrMetricsServer *self = user_data;
    const gchar *method = soup_server_message_get_method (msg);
    g_autoptr (VmrEngineStats) stats = NULL;
    gchar *text;

    /* it serves every path, /metrics alone with the metrics */
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

/* ---- the server ---- */

VmrMetricsServer *
vmr_metrics_server_new (VmrEngine *engine)
{
    VmrMetricsServer *self = g_object_new (VMR_TYPE_METRICS_SERVER, NULL);

    self->engine = g_object_ref (engine);
    return self;
}

/* @server listening on @address, a UNIX socket (mode by @gid) or TCP */
static gboolean
server_listen (SoupServer *server, GSocketAddress *address, gid_t gid, GError **error)
{
    g_autoptr (GSocket) socket = NULL;
    const gchar *path;

    if (!G_IS_UNIX_SOCKET_ADDRESS (address))
        return soup_server_listen (server, address, 0, error);
    path = g_unix_socket_address_get_path (G_UNIX_SOCKET_ADDRESS (address));
    socket = vmr_unix_socket_listen (path, gid != (gid_t) -1 ? 0660 : 0600, gid,
                                     VMR_METRICS_MAX_CLIENTS, error);
    if (socket == NULL)
        return FALSE;
    if (!soup_server_listen_socket (server, socket, 0, error)) {
        g_unlink (path);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_metrics_server_listen (VmrMetricsServer *self, const gchar *text, gboolean allow_remote,
                           gid_t gid, GError **error)
{
    g_autoptr (GSocketAddress) address
        = vmr_metrics_server_parse_address (text, allow_remote, error);
    g_autoptr (SoupServer) server = NULL;
    g_autoptr (GError) local_error = NULL;

    if (address == NULL)
        return FALSE;
    server = soup_server_new ("server-header", "virt-mirrord", NULL);
    /* every path: soup asks the early handler of the path it serves only */
    soup_server_add_early_handler (server, NULL, early_cb, self, NULL);
    soup_server_add_handler (server, NULL, metrics_cb, self, NULL);
    g_signal_connect (server, "request-started", G_CALLBACK (request_started_cb), self);
    g_signal_connect (server, "request-read", G_CALLBACK (request_read_cb), self);
    if (!server_listen (server, address, gid, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot serve the metrics on %s: %s", text,
                     local_error->message);
        return FALSE;
    }
    vmr_metrics_server_stop (self);
    self->server = g_steal_pointer (&server);
    if (G_IS_UNIX_SOCKET_ADDRESS (address))
        self->unix_path
            = g_strdup (g_unix_socket_address_get_path (G_UNIX_SOCKET_ADDRESS (address)));
    self->sweep_id = g_timeout_add_seconds (1, sweep_cb, self);
    if (self->unix_path != NULL)
        g_message ("metrics on %s (GET " METRICS_PATH ")", text);
    else
        g_message ("metrics on http://%s" METRICS_PATH, text);
    return TRUE;
}

void
vmr_metrics_server_stop (VmrMetricsServer *self)
{
    g_clear_handle_id (&self->sweep_id, g_source_remove);
    g_ptr_array_set_size (self->clients, 0);
    if (self->server == NULL)
        return;
    g_signal_handlers_disconnect_by_data (self->server, self);
    soup_server_disconnect (self->server);
    g_clear_object (&self->server);
    if (self->unix_path != NULL)
        g_unlink (self->unix_path);
    g_clear_pointer (&self->unix_path, g_free);
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
vmr_metrics_server_finalize (GObject *object)
{
    VmrMetricsServer *self = VMR_METRICS_SERVER (object);

    g_ptr_array_unref (self->clients);
    G_OBJECT_CLASS (vmr_metrics_server_parent_class)->finalize (object);
}

static void
vmr_metrics_server_init (VmrMetricsServer *self)
{
    self->clients = g_ptr_array_new_with_free_func ((GDestroyNotify) client_free);
    self->refusal_log = (VmrLogThrottle) VMR_LOG_THROTTLE_INIT (REFUSAL_LOG_INTERVAL_US);
}

static void
vmr_metrics_server_class_init (VmrMetricsServerClass *klass)
{
    G_OBJECT_CLASS (klass)->dispose = vmr_metrics_server_dispose;
    G_OBJECT_CLASS (klass)->finalize = vmr_metrics_server_finalize;
}
