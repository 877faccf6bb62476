/*
 * The etcd client's unary calls against a local HTTP peer that answers as
 * a real etcd cannot be made to: a reply that says it is 10 GiB long, one
 * that never ends, one that nests a megabyte deep. The client reads a
 * reply as it comes and stops at its 4 MiB cap, never holding more; a
 * reply it takes is parsed with the nesting check.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "etcd-client.h"
#include "vmr-error.h"

#define MIB (1024 * 1024)
/* the client's cap (etcd-client.c) */
#define REPLY_CAP (4 * MIB)
/* what the peer sends at most of an endless body: far past the cap */
#define ENDLESS (64 * (guint64) MIB)
/* what the kernel's buffers may take beyond what the client read */
#define BUFFERS (8 * (guint64) MIB)

typedef enum {
    LENGTH_EXACT, /* Content-Length: the body's */
    LENGTH_HUGE,  /* Content-Length: 10 GiB */
    LENGTH_NONE,  /* the body ends when the connection does */
} LengthHeader;

typedef struct {
    const gchar *name;
    LengthHeader length;
    const gchar *body_start;
    gchar fill;        /* repeated after body_start, 0: none */
    guint64 fill_size; /* how many times at most */
    const gchar *body_end;
    const gchar *error_part; /* NULL: the call returns etcd's object */
    guint64 max_sent;        /* bytes of body the peer may have sent in all */
} PeerCase;

/* clang-format off */
static const PeerCase cases[] = {
    { "a reply as etcd gives it", LENGTH_EXACT, "{\"header\": {\"revision\": \"7\"}}", 0, 0, "",
      NULL, G_MAXUINT64 },
    { "a reply that says it is 10 GiB long", LENGTH_HUGE, "{\"kvs\": \"", 'a', ENDLESS, "",
      "a reply of 10737418240 bytes, over 4194304", BUFFERS },
    { "a reply that never ends", LENGTH_NONE, "{\"kvs\": \"", 'a', ENDLESS, "\"}",
      "a reply over 4194304 bytes", REPLY_CAP + BUFFERS },
    { "a reply that nests a megabyte deep", LENGTH_EXACT, "{\"kvs\": ", '[', MIB, "",
      "nested deeper than 64 levels", G_MAXUINT64 },
};
/* clang-format on */

typedef struct {
    const PeerCase *c;
    GSocket *listener;
    guint64 sent; /* bytes of the body sent */
    gint done;    /* the peer's thread returned (atomic) */
} Peer;

/* the request's headers and its body (the client's JSON), read and dropped */
static gboolean
read_request (GSocket *conn)
{
    GString *request = g_string_new (NULL);
    gchar buf[4096];
    gssize n;
    const gchar *end;
    guint64 length = 0;
    const gchar *header;

    while ((end = strstr (request->str, "\r\n\r\n")) == NULL) {
        n = g_socket_receive (conn, buf, sizeof buf, NULL, NULL);
        if (n <= 0) {
            g_string_free (request, TRUE);
            return FALSE;
        }
        g_string_append_len (request, buf, n);
    }
    header = strstr (request->str, "Content-Length: ");
    if (header != NULL)
        length = g_ascii_strtoull (header + strlen ("Content-Length: "), NULL, 10);
    length -= MIN (length, (guint64) (request->len - (gsize) (end + 4 - request->str)));
    while (length > 0
           && (n = g_socket_receive (conn, buf, MIN (sizeof buf, length), NULL, NULL)) > 0)
        length -= (guint64) n;
    g_string_free (request, TRUE);
    return TRUE;
}

static gboolean
send_all (Peer *peer, GSocket *conn, const gchar *data, gsize size)
{
    while (size > 0) {
        gssize n = g_socket_send (conn, data, size, NULL, NULL);

        if (n <= 0)
            return FALSE;
        peer->sent += (guint64) n;
        data += n;
        size -= (gsize) n;
    }
    return TRUE;
}

static void
peer_serve (Peer *peer)
{
    const PeerCase *c = peer->c;
    g_autoptr (GSocket) conn = g_socket_accept (peer->listener, NULL, NULL);
    g_autofree gchar *chunk = g_strnfill (64 * 1024, c->fill != 0 ? c->fill : ' ');
    guint64 body = strlen (c->body_start) + c->fill_size + strlen (c->body_end);
    g_autofree gchar *length = NULL;
    g_autofree gchar *head = NULL;

    if (conn == NULL || !read_request (conn))
        return;
    /* a client that stops reading must not hold the peer for ever */
    g_socket_set_timeout (conn, 10);
    if (c->length == LENGTH_EXACT)
        length = g_strdup_printf ("Content-Length: %" G_GUINT64_FORMAT "\r\n", body);
    else if (c->length == LENGTH_HUGE)
        length = g_strdup ("Content-Length: 10737418240\r\n");
    head = g_strdup_printf (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n%s\r\n",
        length != NULL ? length : "");
    if (!send_all (peer, conn, head, strlen (head)))
        return;
    peer->sent = 0;
    if (!send_all (peer, conn, c->body_start, strlen (c->body_start)))
        return;
    for (guint64 left = c->fill_size; left > 0;) {
        gsize size = (gsize) MIN (left, 64 * 1024);

        if (!send_all (peer, conn, chunk, size))
            return;
        left -= size;
    }
    send_all (peer, conn, c->body_end, strlen (c->body_end));
}

/* serves one call, then wakes the test's main loop, where the client's connection ends */
static gpointer
peer_thread (gpointer data)
{
    Peer *peer = data;

    peer_serve (peer);
    g_atomic_int_set (&peer->done, 1);
    g_main_context_wakeup (NULL);
    return NULL;
}

static void
call_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **) user_data = g_object_ref (result);
}

static void
test_etcd_client_replies (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        const PeerCase *c = &cases[i];
        Peer peer = { c, NULL, 0, 0 };
        g_autoptr (GSocketAddress) any = g_inet_socket_address_new_from_string ("127.0.0.1", 0);
        g_autoptr (GSocketAddress) bound = NULL;
        g_autofree gchar *endpoint = NULL;
        g_autoptr (VmrEtcdClient) client = NULL;
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (JsonObject) reply = NULL;
        g_autoptr (GError) error = NULL;
        GThread *thread;
        gint expected_code;

        g_test_message ("%s", c->name);
        peer.listener = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_DEFAULT, &error);
        g_assert_no_error (error);
        g_assert_true (g_socket_bind (peer.listener, any, TRUE, &error));
        g_assert_true (g_socket_listen (peer.listener, &error));
        bound = g_socket_get_local_address (peer.listener, &error);
        g_assert_no_error (error);
        endpoint = g_strdup_printf ("http://127.0.0.1:%u",
                                    g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
        thread = g_thread_new ("etcd-peer", peer_thread, &peer);

        client = vmr_etcd_client_new ((const gchar *const[]){ endpoint, NULL }, NULL, &error);
        g_assert_no_error (error);
        vmr_etcd_client_call_async (client, "kv/range", json_object_new (), NULL, call_done_cb,
                                    &result);
        while (result == NULL)
            g_main_context_iteration (NULL, TRUE);
        reply = vmr_etcd_client_call_finish (client, result, &error);
        /*
         * the client is gone: the peer's last send fails, or it ends. The
         * connection is closed in the main loop, which runs until then
         */
        g_clear_object (&client);
        while (!g_atomic_int_get (&peer.done))
            g_main_context_iteration (NULL, TRUE);
        g_thread_join (thread);
        g_object_unref (peer.listener);

        g_test_message ("the peer sent %" G_GUINT64_FORMAT " bytes of the body", peer.sent);
        g_assert_cmpuint (peer.sent, <=, c->max_sent);
        if (c->error_part == NULL) {
            g_assert_no_error (error);
            g_assert_nonnull (json_object_get_object_member (reply, "header"));
            continue;
        }
        /* a reply read whole is etcd's, a bad one; one cut at the cap, the endpoint's failure */
        expected_code = c->length == LENGTH_EXACT ? VMR_ERROR_PROTOCOL : VMR_ERROR_DISCONNECTED;
        g_assert_null (reply);
        g_assert_error (error, VMR_ERROR, expected_code);
        g_assert_nonnull (strstr (error->message, c->error_part));
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/etcd-client/replies", test_etcd_client_replies);
    return g_test_run ();
}
