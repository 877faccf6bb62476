/*
 * The QMP client's dispatch: the greeting and the negotiation, replies
 * matched by id with several in flight, events, timeouts, cancellation, and
 * a peer that closes, misbehaves or sends what QEMU never would.
 *
 * The client talks to a peer in the same process over a socket pair (see
 * test-qmp.c for the framing); raw bytes are written only where a real peer
 * cannot be made to misbehave on demand.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>

#include "qmp-peer.h"
#include "vmr-error.h"
#include "vmr-json.h"

static void
test_client_connect (QmpPeerFixture *fx, gconstpointer user_data)
{
    JsonObject *greeting = vmr_qmp_client_get_greeting (fx->client);
    JsonObject *version;

    g_assert_true (vmr_qmp_client_is_connected (fx->client));
    g_assert_nonnull (greeting);
    version = vmr_json_get_object (greeting, "version");
    g_assert_cmpint (vmr_json_int_or (vmr_json_get_object (version, "qemu"), "major", -1), ==, 10);
    g_assert_true (json_object_has_member (greeting, "capabilities"));
}

/* what the client sent to negotiate: one qmp_capabilities, nothing more */
static void
test_client_negotiation (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult r = { 0 };
    JsonObject *cmd;

    qmp_peer_send_greeting (fx);
    vmr_qmp_client_new_for_stream_async (fx->client_conn, 5000, NULL, qmp_peer_connect_cb, &r);
    WAIT_UNTIL (r.done);
    g_assert_no_error (r.error);
    qmp_peer_adopt_client (fx, g_steal_pointer (&r.client));
    g_assert_cmpuint (fx->received->len, ==, 1);
    cmd = qmp_peer_received (fx, 0);
    g_assert_cmpstr (vmr_json_get_string (cmd, "execute"), ==, "qmp_capabilities");
    g_assert_false (json_object_has_member (cmd, "arguments"));
    g_assert_nonnull (vmr_json_get_string (cmd, "id"));
}

typedef struct {
    const gchar *name;
    const gchar *greeting; /* NULL: the peer closes instead */
    gboolean refuse_capabilities;
    gboolean ignore_capabilities;
    guint timeout_ms; /* 0: plenty */
    gint code;
    const gchar *message;
} BadGreetingCase;

static const BadGreetingCase bad_greetings[] = {
    { "malformed", "{\"QMP\": 1}", FALSE, FALSE, 0, VMR_ERROR_PROTOCOL, "malformed QMP greeting" },
    { "closed", NULL, FALSE, FALSE, 0, VMR_ERROR_PROTOCOL, "no QMP greeting" },
    { "refused", "{\"QMP\": {\"version\": {}, \"capabilities\": []}}", TRUE, FALSE, 0,
      VMR_ERROR_GENERIC,
      "QMP capabilities negotiation failed: Capabilities negotiation is already complete" },
    /* the connect timeout covers the negotiation too */
    { "unanswered", "{\"QMP\": {\"version\": {}, \"capabilities\": []}}", FALSE, TRUE, 100,
      VMR_ERROR_TIMEOUT, "QMP capabilities negotiation failed: no reply to 'qmp_capabilities'" },
};

static void
test_client_bad_greeting (QmpPeerFixture *fx, gconstpointer user_data)
{
    const BadGreetingCase *c = user_data;
    QmpPeerResult r = { 0 };

    fx->answer_capabilities = !c->refuse_capabilities && !c->ignore_capabilities;
    vmr_qmp_client_new_for_stream_async (fx->client_conn, c->timeout_ms != 0 ? c->timeout_ms : 5000,
                                         NULL, qmp_peer_connect_cb, &r);
    if (c->greeting == NULL) {
        vmr_qmp_stream_close (fx->peer);
    } else {
        qmp_peer_send_text (fx, c->greeting);
        if (c->refuse_capabilities) {
            WAIT_UNTIL (fx->received->len == 1);
            qmp_peer_reply (fx, qmp_peer_received (fx, 0),
                            "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Capabilities "
                            "negotiation is already complete\"}}");
        }
    }
    WAIT_UNTIL (r.done);
    g_assert_null (r.client);
    g_assert_error (r.error, VMR_ERROR, c->code);
    g_assert_nonnull (strstr (r.error->message, c->message));
    qmp_peer_result_clear (&r);
}

/* a peer that never greets (not a QEMU monitor): connect gives up in time */
static void
test_client_connect_timeout (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult r = { 0 };
    gint64 start = g_get_monotonic_time ();

    vmr_qmp_client_new_for_stream_async (fx->client_conn, 100, NULL, qmp_peer_connect_cb, &r);
    WAIT_UNTIL (r.done);
    g_assert_error (r.error, VMR_ERROR, VMR_ERROR_TIMEOUT);
    g_assert_cmpint (g_get_monotonic_time () - start, >=, 100 * 1000);
    /* and the connection is not left open */
    WAIT_UNTIL (fx->peer_closed);
    qmp_peer_result_clear (&r);
}

static void
test_client_connect_cancel (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (GCancellable) cancellable = g_cancellable_new ();
    QmpPeerResult r = { 0 };

    vmr_qmp_client_new_for_stream_async (fx->client_conn, 0, cancellable, qmp_peer_connect_cb, &r);
    qmp_peer_spin_for (20);
    g_assert_false (r.done);
    g_cancellable_cancel (cancellable);
    WAIT_UNTIL (r.done);
    g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    WAIT_UNTIL (fx->peer_closed);
    qmp_peer_result_clear (&r);
}

static gboolean
incoming_cb (GSocketService *service, GSocketConnection *conn, GObject *source, gpointer user_data)
{
    QmpPeerFixture *fx = user_data;

    g_assert_null (fx->peer);
    qmp_peer_start (fx, G_IO_STREAM (conn));
    qmp_peer_send_greeting (fx);
    return TRUE;
}

/* by socket path, with the blocking wrappers */
static void
test_client_connect_path (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocketService) service = g_socket_service_new ();
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-qmp-XXXXXX", &error);
    g_autofree gchar *path = NULL;
    g_autofree gchar *missing = NULL;
    VmrQmpClient *client;

    g_assert_no_error (error);
    path = g_build_filename (dir, "qmp.sock", NULL);
    missing = g_build_filename (dir, "missing.sock", NULL);
    address = g_unix_socket_address_new (path);
    g_socket_listener_add_address (G_SOCKET_LISTENER (service), address, G_SOCKET_TYPE_STREAM,
                                   G_SOCKET_PROTOCOL_DEFAULT, NULL, NULL, &error);
    g_assert_no_error (error);
    g_signal_connect (service, "incoming", G_CALLBACK (incoming_cb), fx);
    g_socket_service_start (service);

    client = vmr_qmp_client_connect_sync (missing, 1000, &error);
    g_assert_null (client);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
    g_assert_nonnull (strstr (error->message, missing));
    g_clear_error (&error);

    client = vmr_qmp_client_connect_sync (path, 5000, &error);
    g_assert_no_error (error);
    qmp_peer_adopt_client (fx, client);
    g_assert_nonnull (vmr_qmp_client_get_greeting (client));

    /* the peer answers from the same loop the blocking call iterates */
    g_assert_cmpuint (fx->received->len, ==, 1);
    fx->answer_all = "{\"return\": {\"status\": \"running\"}}";
    reply = vmr_qmp_client_execute_sync (client, "query-status", NULL, 5000, &error);
    g_assert_no_error (error);
    g_assert_cmpstr (vmr_json_get_string (vmr_json_node_object (reply), "status"), ==, "running");
    g_assert_cmpuint (fx->received->len, ==, 2);

    g_socket_service_stop (service);
    g_socket_listener_close (G_SOCKET_LISTENER (service));
    g_assert_no_errno (g_unlink (path));
    g_assert_no_errno (g_rmdir (dir));
}

/* client: commands */

/* several commands in flight, answered in another order, matched by id */
static void
test_client_out_of_order (QmpPeerFixture *fx, gconstpointer user_data)
{
    static const guint answer_order[] = { 2, 0, 3, 1 };
    QmpPeerResult results[G_N_ELEMENTS (answer_order)] = { 0 };
    g_autoptr (GHashTable) ids = g_hash_table_new (g_str_hash, g_str_equal);

    for (guint i = 0; i < G_N_ELEMENTS (results); i++) {
        g_autofree gchar *args = g_strdup_printf ("{\"n\": %u}", i);

        qmp_peer_execute (fx, "query-block-jobs", args, 0, NULL, &results[i]);
    }
    WAIT_UNTIL (fx->received->len == G_N_ELEMENTS (results));
    for (guint i = 0; i < G_N_ELEMENTS (results); i++) {
        const gchar *id = vmr_json_get_string (qmp_peer_received (fx, i), "id");

        g_assert_nonnull (id);
        g_assert_false (g_hash_table_contains (ids, id));
        g_hash_table_add (ids, (gpointer) id);
    }

    for (guint k = 0; k < G_N_ELEMENTS (answer_order); k++) {
        JsonObject *cmd = qmp_peer_received (fx, answer_order[k]);
        gint64 n = vmr_json_int_or (vmr_json_get_object (cmd, "arguments"), "n", -1);
        g_autofree gchar *reply
            = g_strdup_printf ("{\"return\": {\"n\": %" G_GINT64_FORMAT "}}", n);

        qmp_peer_reply (fx, cmd, reply);
        WAIT_UNTIL (results[answer_order[k]].done);
        /* the others still wait */
        for (guint later = k + 1; later < G_N_ELEMENTS (answer_order); later++)
            g_assert_false (results[answer_order[later]].done);
    }
    for (guint i = 0; i < G_N_ELEMENTS (results); i++) {
        g_assert_no_error (results[i].error);
        g_assert_cmpint (vmr_json_int_or (vmr_json_node_object (results[i].node), "n", -1), ==, i);
        qmp_peer_result_clear (&results[i]);
    }
}

typedef struct {
    const gchar *class_name; /* NULL: no class member */
    const gchar *desc;       /* NULL: no desc member */
    gint code;
    const gchar *message;
} ErrorReplyCase;

static const ErrorReplyCase error_replies[] = {
    { "GenericError", "Could not open '/nonexistent.raw': No such file or directory",
      VMR_ERROR_GENERIC, "Could not open '/nonexistent.raw': No such file or directory" },
    { "CommandNotFound", "The command block-job-frob has not been found",
      VMR_ERROR_COMMAND_NOT_FOUND, "The command block-job-frob has not been found" },
    { "DeviceNotActive", "No active block job on device 'vmr-3'", VMR_ERROR_DEVICE_NOT_ACTIVE,
      "No active block job on device 'vmr-3'" },
    { "DeviceNotFound", "Device 'disk9' not found", VMR_ERROR_DEVICE_NOT_FOUND,
      "Device 'disk9' not found" },
    { "KVMMissingCap", "Using KVM without irqfd", VMR_ERROR_KVM_MISSING_CAP,
      "Using KVM without irqfd" },
    /* virt-mirror's own classes travel the same way */
    { "Busy", "disk0 of web01 is already migrating", VMR_ERROR_BUSY,
      "disk0 of web01 is already migrating" },
    { "NotFound", "no job vmr-9", VMR_ERROR_NOT_FOUND, "no job vmr-9" },
    /* a class from a newer QEMU */
    { "SomethingNew", "new kind of trouble", VMR_ERROR_GENERIC, "new kind of trouble" },
    { NULL, "no class at all", VMR_ERROR_GENERIC, "no class at all" },
    { "GenericError", NULL, VMR_ERROR_GENERIC, "unknown error" },
};

static void
test_client_error_reply (QmpPeerFixture *fx, gconstpointer user_data)
{
    for (guint i = 0; i < G_N_ELEMENTS (error_replies); i++) {
        const ErrorReplyCase *c = &error_replies[i];
        g_autoptr (JsonObject) reply = json_object_new ();
        g_autoptr (JsonObject) error_obj = json_object_new ();
        JsonObject *cmd;
        QmpPeerResult r = { 0 };

        qmp_peer_execute (fx, "blockdev-mirror", NULL, 0, NULL, &r);
        WAIT_UNTIL (fx->received->len == i + 1);
        cmd = qmp_peer_received (fx, i);
        if (c->class_name != NULL)
            json_object_set_string_member (error_obj, "class", c->class_name);
        if (c->desc != NULL)
            json_object_set_string_member (error_obj, "desc", c->desc);
        json_object_set_object_member (reply, "error", g_steal_pointer (&error_obj));
        json_object_set_member (reply, "id", json_node_copy (json_object_get_member (cmd, "id")));
        vmr_qmp_stream_send (fx->peer, reply);
        WAIT_UNTIL (r.done);
        g_assert_null (r.node);
        g_assert_error (r.error, VMR_ERROR, c->code);
        g_assert_cmpstr (r.error->message, ==, c->message);
        qmp_peer_result_clear (&r);
    }
    /* errors are answers: the connection stays up */
    g_assert_true (vmr_qmp_client_is_connected (fx->client));
    g_assert_cmpuint (fx->n_disconnected, ==, 0);
}

static void
test_client_event (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerEvent *event;
    QmpPeerResult r = { 0 };

    qmp_peer_send_text (fx, "{\"event\": \"BLOCK_JOB_READY\", \"data\": {\"device\": \"vmr-3\", "
                            "\"len\": 2147483648, \"offset\": 2147483648, \"speed\": 0, \"type\": "
                            "\"mirror\"}, \"timestamp\": {\"seconds\": 1700000000, "
                            "\"microseconds\": 123456}}");
    WAIT_UNTIL (fx->events->len == 1);
    event = g_ptr_array_index (fx->events, 0);
    g_assert_cmpstr (event->name, ==, "BLOCK_JOB_READY");
    g_assert_cmpstr (vmr_json_get_string (event->data, "device"), ==, "vmr-3");
    g_assert_cmpint (vmr_json_int_or (event->data, "len", -1), ==, G_GINT64_CONSTANT (2147483648));
    g_assert_cmpint (event->timestamp_us, ==, G_GINT64_CONSTANT (1700000000123456));

    /* no data and no timestamp: an empty object and 0 */
    qmp_peer_send_text (fx, "{\"event\": \"RESUME\"}");
    WAIT_UNTIL (fx->events->len == 2);
    event = g_ptr_array_index (fx->events, 1);
    g_assert_cmpstr (event->name, ==, "RESUME");
    g_assert_nonnull (event->data);
    g_assert_cmpuint (json_object_get_size (event->data), ==, 0);
    g_assert_cmpint (event->timestamp_us, ==, 0);

    /* an event between a command and its reply does not disturb the reply */
    qmp_peer_execute (fx, "query-block-jobs", NULL, 0, NULL, &r);
    WAIT_UNTIL (fx->received->len == 1);
    qmp_peer_send_text (fx, "{\"event\": \"JOB_STATUS_CHANGE\", \"data\": {\"id\": \"vmr-3\", "
                            "\"status\": \"ready\"}, \"timestamp\": {\"seconds\": 1, "
                            "\"microseconds\": 2}}");
    qmp_peer_reply (fx, qmp_peer_received (fx, 0), "{\"return\": []}");
    WAIT_UNTIL (r.done);
    g_assert_no_error (r.error);
    g_assert_true (JSON_NODE_HOLDS_ARRAY (r.node));
    g_assert_cmpuint (fx->events->len, ==, 3);
    event = g_ptr_array_index (fx->events, 2);
    g_assert_cmpstr (event->name, ==, "JOB_STATUS_CHANGE");
    g_assert_cmpint (event->timestamp_us, ==, G_USEC_PER_SEC + 2);
    qmp_peer_result_clear (&r);
}

/* a command that is never answered times out; its late reply is harmless */
static void
test_client_timeout (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult slow = { 0 };
    QmpPeerResult next = { 0 };
    gint64 start = g_get_monotonic_time ();

    qmp_peer_execute (fx, "query-block-jobs", NULL, 50, NULL, &slow);
    WAIT_UNTIL (slow.done);
    g_assert_error (slow.error, VMR_ERROR, VMR_ERROR_TIMEOUT);
    g_assert_nonnull (strstr (slow.error->message, "query-block-jobs"));
    g_assert_cmpint (g_get_monotonic_time () - start, >=, 50 * 1000);
    g_assert_cmpuint (fx->received->len, ==, 1);

    /* the reply arrives after all, then the next command is answered */
    qmp_peer_reply (fx, qmp_peer_received (fx, 0), "{\"return\": [{\"device\": \"late\"}]}");
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &next);
    WAIT_UNTIL (fx->received->len == 2);
    qmp_peer_reply (fx, qmp_peer_received (fx, 1), "{\"return\": {\"status\": \"running\"}}");
    WAIT_UNTIL (next.done);
    g_assert_no_error (next.error);
    g_assert_cmpstr (vmr_json_get_string (vmr_json_node_object (next.node), "status"), ==,
                     "running");
    g_assert_true (vmr_qmp_client_is_connected (fx->client));
    g_assert_cmpuint (fx->n_disconnected, ==, 0);
    qmp_peer_result_clear (&slow);
    qmp_peer_result_clear (&next);
}

/* a cancelled command completes at once, not when the timeout comes */
static void
test_client_cancel (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (GCancellable) cancellable = g_cancellable_new ();
    QmpPeerResult cancelled = { 0 };
    QmpPeerResult next = { 0 };

    qmp_peer_execute (fx, "query-block-jobs", NULL, 0, cancellable, &cancelled);
    WAIT_UNTIL (fx->received->len == 1);
    g_cancellable_cancel (cancellable);
    WAIT_UNTIL (cancelled.done);
    g_assert_error (cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

    qmp_peer_reply (fx, qmp_peer_received (fx, 0), "{\"return\": []}");
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &next);
    WAIT_UNTIL (fx->received->len == 2);
    qmp_peer_reply (fx, qmp_peer_received (fx, 1), "{\"return\": {}}");
    WAIT_UNTIL (next.done);
    g_assert_no_error (next.error);
    qmp_peer_result_clear (&cancelled);
    qmp_peer_result_clear (&next);

    /* cancelled before it is even sent: it is not sent */
    qmp_peer_execute (fx, "query-status", NULL, 0, cancellable, &cancelled);
    WAIT_UNTIL (cancelled.done);
    g_assert_error (cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    qmp_peer_spin_for (20);
    g_assert_cmpuint (fx->received->len, ==, 2);
    qmp_peer_result_clear (&cancelled);
}

static void
assert_all_disconnected (QmpPeerResult *results, guint n_results)
{
    for (guint i = 0; i < n_results; i++) {
        WAIT_UNTIL (results[i].done);
        g_assert_null (results[i].node);
        g_assert_error (results[i].error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
        /* which command was lost */
        g_assert_nonnull (strstr (results[i].error->message, "query-"));
    }
}

/* the peer goes away with commands pending */
static void
test_client_peer_closes (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult results[3] = { 0 };
    QmpPeerResult after = { 0 };

    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_execute (fx, "query-block", NULL, 0, NULL, &results[i]);
    WAIT_UNTIL (fx->received->len == G_N_ELEMENTS (results));
    vmr_qmp_stream_close (fx->peer);
    assert_all_disconnected (results, G_N_ELEMENTS (results));
    WAIT_UNTIL (fx->n_disconnected > 0);
    g_assert_error (fx->disconnect_error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
    g_assert_false (vmr_qmp_client_is_connected (fx->client));

    /* once only, also when the owner closes afterwards */
    vmr_qmp_client_close (fx->client);
    qmp_peer_spin_for (50);
    g_assert_cmpuint (fx->n_disconnected, ==, 1);

    /* new commands fail at once */
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &after);
    WAIT_UNTIL (after.done);
    g_assert_error (after.error, VMR_ERROR, VMR_ERROR_DISCONNECTED);

    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_result_clear (&results[i]);
    qmp_peer_result_clear (&after);
}

/* the owner closes with commands pending */
static void
test_client_close (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult results[2] = { 0 };

    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_execute (fx, "query-block", NULL, 0, NULL, &results[i]);
    vmr_qmp_client_close (fx->client);
    assert_all_disconnected (results, G_N_ELEMENTS (results));
    g_assert_cmpuint (fx->n_disconnected, ==, 1);
    WAIT_UNTIL (fx->peer_closed);
    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_result_clear (&results[i]);
}

/* scripted: a line that is not JSON; the connection cannot be trusted after it */
static void
test_client_malformed (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult results[2] = { 0 };

    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_execute (fx, "query-block", NULL, 0, NULL, &results[i]);
    WAIT_UNTIL (fx->received->len == G_N_ELEMENTS (results));
    qmp_peer_send_raw (fx, "{\"return\": [}, \"id\": \"vmr-2\"}\n");
    assert_all_disconnected (results, G_N_ELEMENTS (results));
    g_assert_nonnull (strstr (results[0].error->message, "malformed"));
    WAIT_UNTIL (fx->n_disconnected > 0);
    g_assert_error (fx->disconnect_error, VMR_ERROR, VMR_ERROR_PROTOCOL);
    g_assert_false (vmr_qmp_client_is_connected (fx->client));
    /* the client hung up */
    WAIT_UNTIL (fx->peer_closed);
    qmp_peer_spin_for (20);
    g_assert_cmpuint (fx->n_disconnected, ==, 1);
    for (guint i = 0; i < G_N_ELEMENTS (results); i++)
        qmp_peer_result_clear (&results[i]);
}

/* scripted: half a reply, then the connection drops */
static void
test_client_disconnect_mid_reply (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult r = { 0 };
    g_autofree gchar *half = NULL;

    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &r);
    WAIT_UNTIL (fx->received->len == 1);
    /* a complete object, only the newline is missing: still not a message */
    half = g_strdup_printf ("{\"return\": {\"status\": \"running\"}, \"id\": \"%s\"}",
                            vmr_json_get_string (qmp_peer_received (fx, 0), "id"));
    qmp_peer_send_raw (fx, half);
    vmr_qmp_stream_close (fx->peer);
    WAIT_UNTIL (r.done);
    g_assert_null (r.node);
    g_assert_error (r.error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
    g_assert_nonnull (strstr (r.error->message, "middle of a message"));
    WAIT_UNTIL (fx->n_disconnected > 0);
    g_assert_error (fx->disconnect_error, VMR_ERROR, VMR_ERROR_DISCONNECTED);
    qmp_peer_spin_for (20);
    g_assert_cmpuint (fx->n_disconnected, ==, 1);
    qmp_peer_result_clear (&r);
}

/* well-formed JSON of the wrong shape: dropped or refused, never a crash */
static void
test_client_unexpected_shapes (QmpPeerFixture *fx, gconstpointer user_data)
{
    QmpPeerResult r = { 0 };
    QmpPeerEvent *event;

    /* events without a usable name are dropped; odd timestamps read as 0 */
    qmp_peer_send_text (fx, "{\"event\": {\"name\": \"X\"}}");
    qmp_peer_send_text (fx, "{\"event\": 7, \"data\": []}");
    qmp_peer_send_text (fx,
                        "{\"event\": \"STOP\", \"data\": [1], \"timestamp\": {\"seconds\": [1], "
                        "\"microseconds\": {\"a\": 1}}}");
    qmp_peer_send_text (fx, "{\"event\": \"RESET\", \"timestamp\": {\"seconds\": \"1\", "
                            "\"microseconds\": 5}}");
    /* neither reply nor event */
    qmp_peer_send_text (fx, "{\"hello\": \"world\"}");
    /* a reply nobody waits for, and replies with ids of the wrong type */
    qmp_peer_send_text (fx, "{\"return\": {}, \"id\": \"vmr-999\"}");
    qmp_peer_send_text (fx, "{\"return\": {}, \"id\": 1}");
    qmp_peer_send_text (fx, "{\"return\": {}}");
    WAIT_UNTIL (fx->events->len == 2);
    event = g_ptr_array_index (fx->events, 0);
    g_assert_cmpstr (event->name, ==, "STOP");
    g_assert_cmpuint (json_object_get_size (event->data), ==, 0);
    g_assert_cmpint (event->timestamp_us, ==, 0);
    event = g_ptr_array_index (fx->events, 1);
    g_assert_cmpstr (event->name, ==, "RESET");
    g_assert_cmpint (event->timestamp_us, ==, 5);

    /* an error member that is not an object */
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &r);
    WAIT_UNTIL (fx->received->len == 1);
    qmp_peer_reply (fx, qmp_peer_received (fx, 0), "{\"error\": \"boom\"}");
    WAIT_UNTIL (r.done);
    g_assert_error (r.error, VMR_ERROR, VMR_ERROR_PROTOCOL);
    g_assert_nonnull (strstr (r.error->message, "query-status"));
    qmp_peer_result_clear (&r);

    /* class and desc of the wrong types */
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &r);
    WAIT_UNTIL (fx->received->len == 2);
    qmp_peer_reply (fx, qmp_peer_received (fx, 1),
                    "{\"error\": {\"class\": {}, \"desc\": [\"x\"]}}");
    WAIT_UNTIL (r.done);
    g_assert_error (r.error, VMR_ERROR, VMR_ERROR_GENERIC);
    g_assert_cmpstr (r.error->message, ==, "unknown error");
    qmp_peer_result_clear (&r);

    /* a null return is a return */
    qmp_peer_execute (fx, "query-status", NULL, 0, NULL, &r);
    WAIT_UNTIL (fx->received->len == 3);
    qmp_peer_reply (fx, qmp_peer_received (fx, 2), "{\"return\": null}");
    WAIT_UNTIL (r.done);
    g_assert_no_error (r.error);
    g_assert_nonnull (r.node);
    g_assert_true (JSON_NODE_HOLDS_NULL (r.node));
    qmp_peer_result_clear (&r);

    g_assert_true (vmr_qmp_client_is_connected (fx->client));
    g_assert_cmpuint (fx->n_disconnected, ==, 0);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);

#define ADD(path, setup, func)                                                                     \
    g_test_add (path, QmpPeerFixture, NULL, setup, func, qmp_peer_teardown)
    ADD ("/qmp/client/connect", qmp_peer_setup_connected, test_client_connect);
    ADD ("/qmp/client/negotiation", qmp_peer_setup_pair, test_client_negotiation);
    for (gsize i = 0; i < G_N_ELEMENTS (bad_greetings); i++) {
        g_autofree gchar *path
            = g_strdup_printf ("/qmp/client/bad-greeting/%s", bad_greetings[i].name);

        g_test_add (path, QmpPeerFixture, &bad_greetings[i], qmp_peer_setup_pair,
                    test_client_bad_greeting, qmp_peer_teardown);
    }
    ADD ("/qmp/client/connect-timeout", qmp_peer_setup_pair, test_client_connect_timeout);
    ADD ("/qmp/client/connect-cancel", qmp_peer_setup_pair, test_client_connect_cancel);
    ADD ("/qmp/client/connect-path", qmp_peer_setup_base, test_client_connect_path);
    ADD ("/qmp/client/out-of-order", qmp_peer_setup_connected, test_client_out_of_order);
    ADD ("/qmp/client/error-reply", qmp_peer_setup_connected, test_client_error_reply);
    ADD ("/qmp/client/event", qmp_peer_setup_connected, test_client_event);
    ADD ("/qmp/client/timeout", qmp_peer_setup_connected, test_client_timeout);
    ADD ("/qmp/client/cancel", qmp_peer_setup_connected, test_client_cancel);
    ADD ("/qmp/client/peer-closes", qmp_peer_setup_connected, test_client_peer_closes);
    ADD ("/qmp/client/close", qmp_peer_setup_connected, test_client_close);
    ADD ("/qmp/client/malformed", qmp_peer_setup_connected, test_client_malformed);
    ADD ("/qmp/client/disconnect-mid-reply", qmp_peer_setup_connected,
         test_client_disconnect_mid_reply);
    ADD ("/qmp/client/unexpected-shapes", qmp_peer_setup_connected, test_client_unexpected_shapes);
#undef ADD

    return g_test_run ();
}
