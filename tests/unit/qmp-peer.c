#define G_LOG_DOMAIN "vmr-test"

#include "qmp-peer.h"

#include <sys/socket.h>

#include "vmr-json.h"

static void
qmp_peer_event_free (QmpPeerEvent *event)
{
    g_free (event->name);
    json_object_unref (event->data);
    g_free (event);
}

void
qmp_peer_result_clear (QmpPeerResult *r)
{
    g_clear_object (&r->client);
    g_clear_pointer (&r->node, json_node_unref);
    g_clear_error (&r->error);
    r->done = FALSE;
}

JsonObject *
qmp_peer_json (const gchar *text)
{
    g_autoptr (GError) error = NULL;
    JsonObject *obj = vmr_qmp_parse_line (text, strlen (text), &error);

    g_assert_no_error (error);
    return obj;
}

static gboolean
tick_cb (gpointer user_data)
{
    return G_SOURCE_CONTINUE;
}

static gboolean
set_flag_cb (gpointer user_data)
{
    *(gboolean *) user_data = TRUE;
    return G_SOURCE_REMOVE;
}

void
qmp_peer_spin_for (guint ms)
{
    gboolean done = FALSE;

    g_timeout_add (ms, set_flag_cb, &done);
    WAIT_UNTIL (done);
}

/* peer side */

void
qmp_peer_send_text (QmpPeerFixture *fx, const gchar *text)
{
    g_autoptr (JsonObject) msg = qmp_peer_json (text);

    vmr_qmp_stream_send (fx->peer, msg);
}

void
qmp_peer_send_greeting (QmpPeerFixture *fx)
{
    qmp_peer_send_text (fx, "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 2, \"minor\": 0, "
                            "\"major\": 10}, \"package\": \"\"}, \"capabilities\": [\"oob\"]}}");
}

/* answers @cmd, one of fx->received, with @reply_text plus the command's id */
void
qmp_peer_reply (QmpPeerFixture *fx, JsonObject *cmd, const gchar *reply_text)
{
    g_autoptr (JsonObject) reply = qmp_peer_json (reply_text);

    json_object_set_member (reply, "id", json_node_copy (json_object_get_member (cmd, "id")));
    vmr_qmp_stream_send (fx->peer, reply);
}

JsonObject *
qmp_peer_received (QmpPeerFixture *fx, guint index)
{
    g_assert_cmpuint (index, <, fx->received->len);
    return g_ptr_array_index (fx->received, index);
}

/* writes raw bytes past the framing: only for what a real peer never sends */
void
qmp_peer_send_raw (QmpPeerFixture *fx, const gchar *bytes)
{
    g_autoptr (GError) error = NULL;
    gssize sent = g_socket_send (fx->peer_socket, bytes, strlen (bytes), NULL, &error);

    g_assert_no_error (error);
    g_assert_cmpint (sent, ==, (gssize) strlen (bytes));
}

static void
peer_message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    QmpPeerFixture *fx = user_data;
    JsonNode *execute = json_object_get_member (msg, "execute");

    g_ptr_array_add (fx->received, json_object_ref (msg));
    if (execute == NULL)
        return;
    if (g_strcmp0 (vmr_json_node_string (execute), "qmp_capabilities") == 0) {
        if (fx->answer_capabilities)
            qmp_peer_reply (fx, msg, "{\"return\": {}}");
    } else if (fx->answer_all != NULL) {
        qmp_peer_reply (fx, msg, fx->answer_all);
    }
}

static void
peer_closed_cb (VmrQmpStream *stream, GError *error, gpointer user_data)
{
    QmpPeerFixture *fx = user_data;

    fx->peer_closed = TRUE;
}

/* client side */

static void
client_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                 gpointer user_data)
{
    QmpPeerFixture *fx = user_data;
    QmpPeerEvent *event = g_new0 (QmpPeerEvent, 1);

    event->name = g_strdup (name);
    event->data = json_object_ref (data);
    event->timestamp_us = timestamp_us;
    g_ptr_array_add (fx->events, event);
}

static void
client_disconnected_cb (VmrQmpClient *client, GError *error, gpointer user_data)
{
    QmpPeerFixture *fx = user_data;

    fx->n_disconnected++;
    g_clear_error (&fx->disconnect_error);
    fx->disconnect_error = g_error_copy (error);
}

void
qmp_peer_connect_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    QmpPeerResult *r = user_data;

    r->client = vmr_qmp_client_connect_finish (res, &r->error);
    r->done = TRUE;
}

void
qmp_peer_execute_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    QmpPeerResult *r = user_data;

    r->node = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &r->error);
    r->done = TRUE;
}

void
qmp_peer_execute (QmpPeerFixture *fx, const gchar *command, const gchar *arguments_text,
                  guint timeout_ms, GCancellable *cancellable, QmpPeerResult *r)
{
    g_autoptr (JsonObject) arguments = NULL;

    if (arguments_text != NULL)
        arguments = qmp_peer_json (arguments_text);
    vmr_qmp_client_execute_async (fx->client, command, arguments, timeout_ms, cancellable,
                                  qmp_peer_execute_cb, r);
}

void
qmp_peer_adopt_client (QmpPeerFixture *fx, VmrQmpClient *client)
{
    fx->client = client;
    fx->client_alive = client;
    g_object_add_weak_pointer (G_OBJECT (client), (gpointer *) &fx->client_alive);
    g_signal_connect (client, "event", G_CALLBACK (client_event_cb), fx);
    g_signal_connect (client, "disconnected", G_CALLBACK (client_disconnected_cb), fx);
}

void
qmp_peer_start (QmpPeerFixture *fx, GIOStream *conn)
{
    fx->peer = vmr_qmp_stream_new (conn);
    g_signal_connect (fx->peer, "message", G_CALLBACK (peer_message_cb), fx);
    g_signal_connect (fx->peer, "closed", G_CALLBACK (peer_closed_cb), fx);
    vmr_qmp_stream_start (fx->peer);
}

void
qmp_peer_setup_base (QmpPeerFixture *fx, gconstpointer user_data)
{
    fx->received = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    fx->events = g_ptr_array_new_with_free_func ((GDestroyNotify) qmp_peer_event_free);
    fx->answer_capabilities = TRUE;
    fx->tick_id = g_timeout_add (20, tick_cb, NULL);
}

/* a connected socket pair, the peer reading, nothing said yet */
void
qmp_peer_setup_pair (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocket) client_socket = NULL;
    g_autoptr (GSocketConnection) peer_conn = NULL;
    int fds[2];

    qmp_peer_setup_base (fx, user_data);
    g_assert_no_errno (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds));
    client_socket = g_socket_new_from_fd (fds[0], &error);
    g_assert_no_error (error);
    fx->peer_socket = g_socket_new_from_fd (fds[1], &error);
    g_assert_no_error (error);
    fx->client_conn = G_IO_STREAM (g_socket_connection_factory_create_connection (client_socket));
    peer_conn = g_socket_connection_factory_create_connection (fx->peer_socket);
    qmp_peer_start (fx, G_IO_STREAM (peer_conn));
}

/* a client that went through greeting and negotiation */
void
qmp_peer_setup_connected (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult r = { 0 };

    qmp_peer_setup_pair (fx, user_data);
    qmp_peer_send_greeting (fx);
    vmr_qmp_client_new_for_stream_async (fx->client_conn, 5000, NULL, qmp_peer_connect_cb, &r);
    WAIT_UNTIL (r.done);
    g_assert_no_error (r.error);
    qmp_peer_adopt_client (fx, g_steal_pointer (&r.client));
    g_ptr_array_set_size (fx->received, 0);
}

void
qmp_peer_teardown (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_clear_object (&fx->client);
    if (fx->peer != NULL)
        vmr_qmp_stream_close (fx->peer);
    g_clear_object (&fx->peer);
    g_clear_object (&fx->peer_socket);
    g_clear_object (&fx->client_conn);
    /* let cancelled reads and returned tasks finish */
    while (g_main_context_iteration (NULL, FALSE))
        ;
    /* nothing may keep a client alive once its owner let go */
    g_assert_null (fx->client_alive);
    g_clear_handle_id (&fx->tick_id, g_source_remove);
    g_clear_pointer (&fx->received, g_ptr_array_unref);
    g_clear_pointer (&fx->events, g_ptr_array_unref);
    g_clear_error (&fx->disconnect_error);
}
