/*
 * QMP framing: lines parsed and written, and a stream over a socket pair.
 * The client's dispatch is in test-qmp-client.c.
 *
 * The client talks to a peer in the same process over a socket pair. The
 * peer is a VmrQmpStream, the framing the daemon's own server uses; raw
 * bytes are written only where a real peer cannot be made to misbehave on
 * demand: malformed JSON and a connection cut in the middle of a message.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gunixfdmessage.h>
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
    /* the whole message before it was still taken, and the line reported once */
    g_assert_cmpuint (log.messages->len, ==, 1);
    g_assert_cmpuint (log.malformed->len, ==, 1);
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

/* ---- a descriptor passed with a command ---- */

/* what one recvmsg() of @socket gave: the bytes, and the descriptors that came with them */
static gchar *
receive_with_fds (GSocket *socket, GArray *fds)
{
    gchar buffer[4096];
    GInputVector vector = { buffer, sizeof buffer - 1 };
    GSocketControlMessage **messages = NULL;
    gint n_messages = 0;
    g_autoptr (GError) error = NULL;
    gssize n;

    g_socket_set_blocking (socket, TRUE);
    n = g_socket_receive_message (socket, NULL, &vector, 1, &messages, &n_messages, NULL, NULL,
                                  &error);
    g_assert_no_error (error);
    g_assert_cmpint (n, >, 0);
    buffer[n] = '\0';
    for (gint i = 0; i < n_messages; i++) {
        gint n_fds = 0;
        gint *stolen = g_unix_fd_message_steal_fds (G_UNIX_FD_MESSAGE (messages[i]), &n_fds);

        g_array_append_vals (fds, stolen, (guint) n_fds);
        g_free (stolen);
        g_object_unref (messages[i]);
    }
    g_free (messages);
    return g_strdup (buffer);
}

/*
 * the descriptor travels with its own line (SCM_RIGHTS), the lines keep
 * their order, and it is the same open file; a stream that is no UNIX
 * socket cannot pass one and says so
 */
static void
test_stream_send_fd (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-fd-XXXXXX", NULL);
    g_autofree gchar *path = g_build_filename (dir, "passed", NULL);
    g_autoptr (GSocket) ours = NULL;
    g_autoptr (GSocket) theirs = NULL;
    g_autoptr (GIOStream) conn = NULL;
    g_autoptr (VmrQmpStream) stream = NULL;
    g_autoptr (JsonObject) first = qmp_peer_json ("{\"execute\": \"first\"}");
    g_autoptr (JsonObject) add_fd = qmp_peer_json ("{\"execute\": \"add-fd\"}");
    g_autoptr (GArray) fds = g_array_new (FALSE, FALSE, sizeof (gint));
    g_autoptr (GError) error = NULL;
    g_autoptr (GString) received = g_string_new (NULL);
    struct stat st_file, st_passed;
    gint sockets[2];
    gint fd;

    g_assert_no_errno (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets));
    ours = g_socket_new_from_fd (sockets[0], &error);
    g_assert_no_error (error);
    theirs = g_socket_new_from_fd (sockets[1], &error);
    g_assert_no_error (error);
    conn = G_IO_STREAM (g_socket_connection_factory_create_connection (ours));
    stream = vmr_qmp_stream_new (conn);
    fd = open (path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    g_assert_cmpint (fd, >=, 0);

    vmr_qmp_stream_send (stream, first);
    g_assert_true (vmr_qmp_stream_send_with_fd (stream, add_fd, fd, &error));
    g_assert_no_error (error);
    /* ours is not taken: a duplicate went */
    close (fd);
    while (received->len == 0 || fds->len == 0) {
        g_autofree gchar *part = NULL;

        WAIT_UNTIL (g_socket_condition_check (theirs, G_IO_IN) != 0);
        part = receive_with_fds (theirs, fds);
        g_string_append (received, part);
    }
    while (strchr (strchr (received->str, '\n') + 1, '\n') == NULL) {
        g_autofree gchar *part = NULL;

        WAIT_UNTIL (g_socket_condition_check (theirs, G_IO_IN) != 0);
        part = receive_with_fds (theirs, fds);
        g_string_append (received, part);
    }
    g_assert_cmpstr (received->str, ==, "{\"execute\":\"first\"}\n{\"execute\":\"add-fd\"}\n");
    g_assert_cmpuint (fds->len, ==, 1);
    g_assert_cmpint (fstat (g_array_index (fds, gint, 0), &st_passed), ==, 0);
    g_assert_cmpint (stat (path, &st_file), ==, 0);
    g_assert_cmpuint (st_passed.st_ino, ==, st_file.st_ino);
    g_assert_cmpuint (st_passed.st_dev, ==, st_file.st_dev);
    close (g_array_index (fds, gint, 0));
    g_assert_cmpint (g_unlink (path), ==, 0);
    g_assert_cmpint (g_rmdir (dir), ==, 0);

    /* a stream of bytes in memory has no descriptor to pass */
    {
        g_autoptr (GInputStream) in = g_memory_input_stream_new ();
        g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
        g_autoptr (GIOStream) memory = g_simple_io_stream_new (in, out);
        g_autoptr (VmrQmpStream) other = vmr_qmp_stream_new (memory);

        g_assert_false (vmr_qmp_stream_send_with_fd (other, add_fd, 0, &error));
        g_assert_error (error, VMR_ERROR, VMR_ERROR_FAILED);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);

    g_test_add_func ("/qmp/parse-line", test_parse_line);
    g_test_add_func ("/qmp/serialize", test_serialize);
    g_test_add_func ("/qmp/stream/send-fd", test_stream_send_fd);

#define ADD(path, setup, func)                                                                     \
    g_test_add (path, QmpPeerFixture, NULL, setup, func, qmp_peer_teardown)
    ADD ("/qmp/stream/framing", qmp_peer_setup_pair, test_stream_framing);
    ADD ("/qmp/stream/truncated", qmp_peer_setup_pair, test_stream_truncated);
    ADD ("/qmp/stream/endless-line", qmp_peer_setup_pair, test_stream_endless_line);
    ADD ("/qmp/stream/send-order", qmp_peer_setup_pair, test_stream_send_order);
    ADD ("/qmp/stream/close", qmp_peer_setup_pair, test_stream_close);
#undef ADD

    return g_test_run ();
}
