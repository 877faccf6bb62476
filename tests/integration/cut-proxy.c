#define G_LOG_DOMAIN "vmr-test"

#include "cut-proxy.h"

#include <gio/gio.h>

struct _VmrCutProxy {
    guint target;
    guint port;
    GSocketListener *listener;
    GMainContext *context;
    GMainLoop *loop;
    GThread *thread;
    GMutex lock;
    gboolean cut;              /* under @lock */
    GCancellable *connections; /* cancelled at a cut: the splices close their streams; @lock */
    GCancellable *stop;        /* the listener's */
};

static void accept_next (VmrCutProxy *self);

static void
spliced_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_io_stream_splice_finish (result, NULL);
}

static void
accepted_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    VmrCutProxy *self = user_data;
    g_autoptr (GSocketConnection) incoming
        = g_socket_listener_accept_finish (G_SOCKET_LISTENER (source), result, NULL, NULL);
    g_autoptr (GSocketClient) client = NULL;
    g_autoptr (GSocketConnection) outgoing = NULL;
    g_autoptr (GCancellable) connections = NULL;
    gboolean cut;

    if (incoming == NULL)
        return; /* stopped */
    accept_next (self);
    g_mutex_lock (&self->lock);
    cut = self->cut;
    connections = g_object_ref (self->connections);
    g_mutex_unlock (&self->lock);
    if (!cut) {
        client = g_socket_client_new ();
        outgoing = g_socket_client_connect_to_host (client, "127.0.0.1", self->target, NULL, NULL);
    }
    if (outgoing == NULL) {
        g_io_stream_close (G_IO_STREAM (incoming), NULL, NULL);
        return;
    }
    g_io_stream_splice_async (G_IO_STREAM (incoming), G_IO_STREAM (outgoing),
                              G_IO_STREAM_SPLICE_CLOSE_STREAM1 | G_IO_STREAM_SPLICE_CLOSE_STREAM2,
                              G_PRIORITY_DEFAULT, connections, spliced_cb, NULL);
}

static void
accept_next (VmrCutProxy *self)
{
    g_socket_listener_accept_async (self->listener, self->stop, accepted_cb, self);
}

static gpointer
run (gpointer user_data)
{
    VmrCutProxy *self = user_data;

    g_main_context_push_thread_default (self->context);
    accept_next (self);
    g_main_loop_run (self->loop);
    g_main_context_pop_thread_default (self->context);
    return NULL;
}

VmrCutProxy *
vmr_cut_proxy_new (guint target)
{
    VmrCutProxy *self = g_new0 (VmrCutProxy, 1);
    g_autoptr (GError) error = NULL;

    self->target = target;
    g_mutex_init (&self->lock);
    self->connections = g_cancellable_new ();
    self->stop = g_cancellable_new ();
    self->listener = g_socket_listener_new ();
    {
        g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
        g_autoptr (GSocketAddress) bound = NULL;

        g_socket_listener_add_address (self->listener, address, G_SOCKET_TYPE_STREAM,
                                       G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error);
        g_assert_no_error (error);
        self->port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
    }
    self->context = g_main_context_new ();
    self->loop = g_main_loop_new (self->context, FALSE);
    self->thread = g_thread_new ("cut-proxy", run, self);
    return self;
}

guint
vmr_cut_proxy_get_port (VmrCutProxy *self)
{
    return self->port;
}

void
vmr_cut_proxy_set_cut (VmrCutProxy *self, gboolean cut)
{
    g_mutex_lock (&self->lock);
    self->cut = cut;
    if (cut) {
        g_cancellable_cancel (self->connections);
        g_object_unref (self->connections);
        self->connections = g_cancellable_new ();
    }
    g_mutex_unlock (&self->lock);
}

static gboolean
quit_cb (gpointer user_data)
{
    VmrCutProxy *self = user_data;

    g_cancellable_cancel (self->stop);
    g_socket_listener_close (self->listener);
    g_main_loop_quit (self->loop);
    return G_SOURCE_REMOVE;
}

void
vmr_cut_proxy_free (VmrCutProxy *self)
{
    vmr_cut_proxy_set_cut (self, TRUE);
    g_main_context_invoke (self->context, quit_cb, self);
    g_thread_join (self->thread);
    g_main_loop_unref (self->loop);
    g_main_context_unref (self->context);
    g_object_unref (self->listener);
    g_object_unref (self->connections);
    g_object_unref (self->stop);
    g_mutex_clear (&self->lock);
    g_free (self);
}
