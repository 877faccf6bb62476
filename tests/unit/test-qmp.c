/*
 * QMP framing and the client's dispatch.
 *
 * The client talks to a peer in the same process over a socket pair. The
 * peer is a VmrQmpStream, the framing the daemon's own server uses; raw
 * bytes are written only where a real peer cannot be made to misbehave on
 * demand: malformed JSON and a connection cut in the middle of a message.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>

#include "qmp-peer.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* framing */

static const gchar *const valid_lines[] = {
    "{}",
    "{\"execute\": \"query-status\"}",
    "  {\"return\": {\"running\": true, \"status\": \"running\"}, \"id\": \"vmr-1\"}  ",
    "{\"a\": [1, 2.5, {\"b\": null}], \"s\": \"caf\\u00e9\\n\"}",
};

typedef struct {
    const gchar *line;
    const gchar *why;
} InvalidLine;

static const InvalidLine invalid_lines[] = {
    { "", "empty" },
    { "   ", "blank" },
    { "[]", "an array" },
    { "1", "a number" },
    { "\"text\"", "a string" },
    { "null", "null" },
    { "{", "unterminated" },
    { "{\"a\": }", "missing value" },
    { "{\"a\": 1,}", "trailing comma" },
    { "{} x", "trailing garbage" },
    { "{\"a\": nan}", "not a JSON number" },
    { "{\"a\": \"\xff\"}", "not UTF-8" },
};

static void
test_parse_line (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (valid_lines); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (JsonObject) obj
            = vmr_qmp_parse_line (valid_lines[i], strlen (valid_lines[i]), &error);

        g_assert_no_error (error);
        g_assert_nonnull (obj);
    }
    for (gsize i = 0; i < G_N_ELEMENTS (invalid_lines); i++) {
        const InvalidLine *c = &invalid_lines[i];
        g_autoptr (GError) error = NULL;
        g_autoptr (JsonObject) obj = vmr_qmp_parse_line (c->line, strlen (c->line), &error);

        if (obj != NULL || !g_error_matches (error, VMR_ERROR, VMR_ERROR_PROTOCOL))
            g_test_fail_printf ("%s line '%s' was not refused as a protocol error", c->why,
                                c->line);
    }

    /* only @len bytes count */
    {
        g_autoptr (GError) error = NULL;
        g_autoptr (JsonObject) obj = vmr_qmp_parse_line ("{\"a\": 1}garbage", 8, &error);

        g_assert_no_error (error);
        g_assert_cmpint (vmr_json_int_or (obj, "a", -1), ==, 1);
    }
}

static void
test_serialize (void)
{
    static const gchar *const texts[] = {
        "{}",
        "{\"execute\": \"blockdev-mirror\", \"arguments\": {\"job-id\": \"vmr-3\", \"speed\": 0, "
        "\"sync\": \"full\"}, \"id\": \"vmr-7\"}",
        /* a newline inside a string must not end the line */
        "{\"desc\": \"line one\\nline two\\r\\n \\\"quoted\\\" caf\\u00e9 \\u0001\"}",
    };

    for (gsize i = 0; i < G_N_ELEMENTS (texts); i++) {
        g_autoptr (JsonObject) msg = qmp_peer_json (texts[i]);
        g_autoptr (JsonObject) back = NULL;
        g_autoptr (JsonNode) msg_node = json_node_init_object (json_node_alloc (), msg);
        g_autoptr (JsonNode) back_node = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree gchar *line = vmr_qmp_serialize (msg);
        gsize len = strlen (line);

        g_assert_cmpuint (len, >, 1);
        g_assert_cmpint (line[len - 1], ==, '\n');
        g_assert_null (memchr (line, '\n', len - 1));
        back = vmr_qmp_parse_line (line, len - 1, &error);
        g_assert_no_error (error);
        back_node = json_node_init_object (json_node_alloc (), back);
        g_assert_true (json_node_equal (msg_node, back_node));
    }
}

typedef struct {
    GPtrArray *messages;  /* of JsonObject * */
    GPtrArray *malformed; /* of gchar *, the reasons */
    gboolean closed;
    GError *closed_error;
} StreamLog;

static void
stream_log_message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    StreamLog *log = user_data;

    g_ptr_array_add (log->messages, json_object_ref (msg));
}

static void
stream_log_malformed_cb (VmrQmpStream *stream, const gchar *line, const gchar *reason,
                         gpointer user_data)
{
    StreamLog *log = user_data;

    g_assert_nonnull (reason);
    g_ptr_array_add (log->malformed, g_strdup (line));
}

static void
stream_log_closed_cb (VmrQmpStream *stream, GError *error, gpointer user_data)
{
    StreamLog *log = user_data;

    g_assert_false (log->closed);
    log->closed = TRUE;
    log->closed_error = error != NULL ? g_error_copy (error) : NULL;
}

static void
stream_log_init (StreamLog *log, VmrQmpStream *stream)
{
    log->messages = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    log->malformed = g_ptr_array_new_with_free_func (g_free);
    g_signal_connect (stream, "message", G_CALLBACK (stream_log_message_cb), log);
    g_signal_connect (stream, "malformed", G_CALLBACK (stream_log_malformed_cb), log);
    g_signal_connect (stream, "closed", G_CALLBACK (stream_log_closed_cb), log);
}

/* a pending read keeps the stream alive past the test: it must not call back */
static void
stream_log_clear (StreamLog *log, VmrQmpStream *stream)
{
    g_signal_handlers_disconnect_by_data (stream, log);
    vmr_qmp_stream_close (stream);
    g_ptr_array_unref (log->messages);
    g_ptr_array_unref (log->malformed);
    g_clear_error (&log->closed_error);
}

static gint64
message_int (StreamLog *log, guint index, const gchar *member)
{
    g_assert_cmpuint (index, <, log->messages->len);
    return vmr_json_int_or (g_ptr_array_index (log->messages, index), member, -1);
}

/* CRLF, blank lines, a line split across writes, a bad line in between */
static void
test_stream_framing (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (fx->client_conn);
    StreamLog log = { 0 };

    stream_log_init (&log, stream);
    vmr_qmp_stream_start (stream);

    qmp_peer_send_raw (fx, "{\"n\": 1}\r\n\n  \r\n{\"n\": 2}\n{\"n\"");
    WAIT_UNTIL (log.messages->len == 2);
    qmp_peer_send_raw (fx, ": 3}\nthis is not json\n[1, 2]\n{\"n\": 4}\n");
    WAIT_UNTIL (log.messages->len == 4);
    g_assert_cmpint (message_int (&log, 0, "n"), ==, 1);
    g_assert_cmpint (message_int (&log, 1, "n"), ==, 2);
    g_assert_cmpint (message_int (&log, 2, "n"), ==, 3);
    g_assert_cmpint (message_int (&log, 3, "n"), ==, 4);
    g_assert_cmpuint (log.malformed->len, ==, 2);
    g_assert_cmpstr (g_ptr_array_index (log.malformed, 0), ==, "this is not json");
    g_assert_false (log.closed);

    /* a clean end of stream is not an error */
    vmr_qmp_stream_close (fx->peer);
    WAIT_UNTIL (log.closed);
    g_assert_no_error (log.closed_error);
    g_assert_true (vmr_qmp_stream_is_closed (stream));
    stream_log_clear (&log, stream);
}

/* the peer goes away in the middle of a message: that is not a message */
static void
test_stream_truncated (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (fx->client_conn);
    StreamLog log = { 0 };

    stream_log_init (&log, stream);
    vmr_qmp_stream_start (stream);
    qmp_peer_send_raw (fx, "{\"n\": 1}\n{\"n\": 2}");
    vmr_qmp_stream_close (fx->peer);
    WAIT_UNTIL (log.closed);
    g_assert_cmpuint (log.messages->len, ==, 1);
    g_assert_cmpuint (log.malformed->len, ==, 0);
    g_assert_error (log.closed_error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
    stream_log_clear (&log, stream);
}

/*
 * a peer that never ends its line is cut off once it sent more than the
 * longest line taken: a protocol error, and nothing buffered beyond that
 */
static void
test_stream_endless_line (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (fx->client_conn);
    g_autofree gchar *chunk = g_strnfill (64 * 1024, 'x');
    gint64 deadline = g_get_monotonic_time () + WAIT_LIMIT_US;
    StreamLog log = { 0 };
    guint64 sent = 0;

    stream_log_init (&log, stream);
    vmr_qmp_stream_start (stream);
    qmp_peer_send_raw (fx, "{\"n\": 1}\n{\"endless\": \"");
    g_socket_set_blocking (fx->peer_socket, FALSE);
    while (!log.closed && sent < 3 * (guint64) VMR_QMP_STREAM_MAX_LINE) {
        g_autoptr (GError) error = NULL;
        gssize n = g_socket_send (fx->peer_socket, chunk, strlen (chunk), NULL, &error);

        if (n > 0)
            sent += (guint64) n;
        else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            break;
        g_main_context_iteration (NULL, n <= 0);
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
    }
    g_test_message ("closed after the peer sent %" G_GUINT64_FORMAT " bytes", sent);
    g_assert_true (log.closed);
    g_assert_error (log.closed_error, VMR_ERROR, VMR_ERROR_PROTOCOL);
    g_assert_cmpuint (sent, >=, VMR_QMP_STREAM_MAX_LINE);
    /* the whole message before it was still taken */
    g_assert_cmpuint (log.messages->len, ==, 1);
    g_assert_cmpuint (log.malformed->len, ==, 0);
    stream_log_clear (&log, stream);
}

/* writes keep their order, also behind a message too big for one write */
static void
test_stream_send_order (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (fx->client_conn);
    g_autoptr (JsonObject) big = json_object_new ();
    g_autofree gchar *filler = g_strnfill (1024 * 1024, 'x');
    StreamLog log = { 0 };
    const guint n_messages = 200;

    stream_log_init (&log, stream);
    vmr_qmp_stream_start (stream);
    json_object_set_int_member (big, "n", 0);
    json_object_set_string_member (big, "filler", filler);
    vmr_qmp_stream_send (fx->peer, big);
    for (guint i = 1; i < n_messages; i++) {
        g_autoptr (JsonObject) msg = json_object_new ();

        json_object_set_int_member (msg, "n", i);
        vmr_qmp_stream_send (fx->peer, msg);
    }
    WAIT_UNTIL (log.messages->len == n_messages);
    for (guint i = 0; i < n_messages; i++)
        g_assert_cmpint (message_int (&log, i, "n"), ==, i);
    g_assert_cmpuint (strlen (vmr_json_get_string (g_ptr_array_index (log.messages, 0), "filler")),
                      ==, strlen (filler));
    stream_log_clear (&log, stream);
}

/* closing locally: "closed" once, no error, nothing sent afterwards */
static void
test_stream_close (QmpPeerFixture *fx, gconstpointer user_data)
{
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (fx->client_conn);
    g_autoptr (JsonObject) msg = qmp_peer_json ("{\"n\": 1}");
    StreamLog log = { 0 };

    stream_log_init (&log, stream);
    vmr_qmp_stream_start (stream);
    vmr_qmp_stream_close (stream);
    g_assert_true (log.closed);
    g_assert_no_error (log.closed_error);
    g_assert_true (vmr_qmp_stream_is_closed (stream));
    vmr_qmp_stream_send (stream, msg);
    vmr_qmp_stream_close (stream);
    WAIT_UNTIL (fx->peer_closed);
    g_assert_cmpuint (fx->received->len, ==, 0);
    stream_log_clear (&log, stream);
}

/* client: connecting */

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

    g_test_add_func ("/qmp/parse-line", test_parse_line);
    g_test_add_func ("/qmp/serialize", test_serialize);

#define ADD(path, setup, func)                                                                     \
    g_test_add (path, QmpPeerFixture, NULL, setup, func, qmp_peer_teardown)
    ADD ("/qmp/stream/framing", qmp_peer_setup_pair, test_stream_framing);
    ADD ("/qmp/stream/truncated", qmp_peer_setup_pair, test_stream_truncated);
    ADD ("/qmp/stream/endless-line", qmp_peer_setup_pair, test_stream_endless_line);
    ADD ("/qmp/stream/send-order", qmp_peer_setup_pair, test_stream_send_order);
    ADD ("/qmp/stream/close", qmp_peer_setup_pair, test_stream_close);

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
