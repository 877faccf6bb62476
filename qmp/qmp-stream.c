#define G_LOG_DOMAIN "vmr-qmp"

#include "qmp-stream.h"

#include <string.h>

#include "vmr-error.h"
#include "vmr-json.h"

struct _VmrQmpStream {
    GObject parent_instance;

    GIOStream *stream;
    GByteArray *pending;       /* read, not yet a whole line; never over the limit */
    gsize scanned;             /* of which the first bytes hold no newline */
    guint8 *chunk;             /* what one read fills */
    GCancellable *cancellable; /* cancelled on close */
    GQueue write_queue;        /* of GBytes *, head is being written */
    gboolean started;
    gboolean closed;
};

enum { SIGNAL_MESSAGE, SIGNAL_MALFORMED, SIGNAL_CLOSED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE (VmrQmpStream, vmr_qmp_stream, G_TYPE_OBJECT)

/*
 * longer messages are cut short in the debug log: journald and TAP readers
 * split long lines, and QEMU's schema alone is some 200 KiB
 */
#define DEBUG_LINE_MAX 16384
/* one read of the peer's stream */
#define READ_CHUNK (64 * 1024)

static void read_next_line (VmrQmpStream *self);
static void write_next (VmrQmpStream *self);

JsonObject *
vmr_qmp_parse_line (const gchar *line, gsize len, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new_immutable ();
    g_autoptr (GError) parse_error = NULL;
    JsonObject *root;

    if (!json_parser_load_from_data (parser, line, (gssize) len, &parse_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "JSON parse error: %s",
                     parse_error->message);
        return NULL;
    }
    root = vmr_json_node_object (json_parser_get_root (parser));
    if (root == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "expected a JSON object");
        return NULL;
    }
    return json_object_ref (root);
}

gchar *
vmr_qmp_serialize (JsonObject *msg)
{
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);
    g_autofree gchar *text = NULL;

    json_node_set_object (node, msg);
    text = json_to_string (node, FALSE);
    return g_strconcat (text, "\n", NULL);
}

static void
emit_closed (VmrQmpStream *self, const GError *error)
{
    if (self->closed)
        return;
    self->closed = TRUE;
    g_cancellable_cancel (self->cancellable);
    g_signal_emit (self, signals[SIGNAL_CLOSED], 0, error);
}

static void
debug_line (const gchar *direction, const gchar *line, gsize len)
{
    if (len <= DEBUG_LINE_MAX)
        g_debug ("%s %.*s", direction, (int) len, line);
    else
        g_debug ("%s %.*s... (%" G_GSIZE_FORMAT " bytes)", direction, DEBUG_LINE_MAX, line, len);
}

static void
handle_line (VmrQmpStream *self, gchar *line, gsize len)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) msg = NULL;

    /* QEMU ends its lines with "\r\n" */
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        line[--len] = '\0';
    if (len == 0)
        return;
    if (len > VMR_QMP_STREAM_MAX_LINE) {
        g_signal_emit (self, signals[SIGNAL_MALFORMED], 0, "", "line too long");
        return;
    }
    debug_line ("<-", line, len);
    msg = vmr_qmp_parse_line (line, len, &error);
    if (msg == NULL) {
        g_signal_emit (self, signals[SIGNAL_MALFORMED], 0, line, error->message);
        return;
    }
    g_signal_emit (self, signals[SIGNAL_MESSAGE], 0, msg);
}

/* the whole lines in self->pending, one message each; FALSE when a handler closed us */
static gboolean
handle_pending_lines (VmrQmpStream *self)
{
    gsize start = 0;

    while (!self->closed) {
        guint8 *data = self->pending->data;
        /* only what came since the last look: a long line is scanned once */
        gsize from = MAX (start, self->scanned);
        guint8 *end = memchr (data + from, '\n', self->pending->len - from);
        gsize len;

        if (end == NULL)
            break;
        len = (gsize) (end - (data + start));
        *end = '\0';
        handle_line (self, (gchar *) data + start, len);
        start += len + 1;
    }
    if (self->closed)
        return FALSE;
    g_byte_array_remove_range (self->pending, 0, (guint) start);
    self->scanned = self->pending->len;
    return TRUE;
}

/* closes the connection of a peer whose line is longer than any message */
static void
cut_off (VmrQmpStream *self)
{
    g_autoptr (GError) error = NULL;

    g_message ("closing a connection whose peer sent more than %d MiB without ending a line",
               VMR_QMP_STREAM_MAX_LINE / (1024 * 1024));
    error = g_error_new (VMR_ERROR, VMR_ERROR_PROTOCOL, "the peer sent a line longer than %d MiB",
                         VMR_QMP_STREAM_MAX_LINE / (1024 * 1024));
    emit_closed (self, error);
    g_io_stream_close (self->stream, NULL, NULL);
}

static void
read_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrQmpStream) self = user_data;
    g_autoptr (GError) error = NULL;
    gssize n;

    n = g_input_stream_read_finish (G_INPUT_STREAM (source), res, &error);
    if (self->closed)
        return;
    if (n < 0) {
        /* a cancelled read means somebody closed us on purpose */
        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_clear_error (&error);
        emit_closed (self, error);
        return;
    }
    if (n == 0) {
        /* the peer closed the stream: in the middle of a message, that is no whole one */
        for (guint i = 0; i < self->pending->len && error == NULL; i++) {
            if (!g_ascii_isspace (self->pending->data[i]))
                error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT,
                                             "connection closed in the middle of a message");
        }
        emit_closed (self, error);
        return;
    }
    /*
     * a peer that sends a line longer than any message, or no newline at all,
     * is cut off here, before it can grow our memory any further (what is
     * pending is one unfinished line)
     */
    if (self->pending->len + (gsize) n > VMR_QMP_STREAM_MAX_LINE
        && memchr (self->chunk, '\n', (gsize) n) == NULL) {
        cut_off (self);
        return;
    }
    g_byte_array_append (self->pending, self->chunk, (guint) n);
    if (!handle_pending_lines (self))
        return;
    if (self->pending->len > VMR_QMP_STREAM_MAX_LINE) {
        cut_off (self);
        return;
    }
    read_next_line (self);
}

static void
read_next_line (VmrQmpStream *self)
{
    g_input_stream_read_async (g_io_stream_get_input_stream (self->stream), self->chunk, READ_CHUNK,
                               G_PRIORITY_DEFAULT, self->cancellable, read_cb, g_object_ref (self));
}

void
vmr_qmp_stream_start (VmrQmpStream *self)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    g_return_if_fail (!self->started);

    self->started = TRUE;
    read_next_line (self);
}

static void
write_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrQmpStream) self = user_data;
    g_autoptr (GError) error = NULL;

    if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), res, NULL, &error)) {
        if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_debug ("write failed: %s", error->message);
        g_queue_clear_full (&self->write_queue, (GDestroyNotify) g_bytes_unref);
        return;
    }
    g_bytes_unref (g_queue_pop_head (&self->write_queue));
    if (!g_queue_is_empty (&self->write_queue))
        write_next (self);
}

static void
write_next (VmrQmpStream *self)
{
    GBytes *bytes = g_queue_peek_head (&self->write_queue);
    gsize size = 0;
    gconstpointer data = g_bytes_get_data (bytes, &size);

    g_output_stream_write_all_async (g_io_stream_get_output_stream (self->stream), data, size,
                                     G_PRIORITY_DEFAULT, self->cancellable, write_cb,
                                     g_object_ref (self));
}

void
vmr_qmp_stream_send (VmrQmpStream *self, JsonObject *msg)
{
    g_autofree gchar *line = NULL;
    gsize len;

    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    if (self->closed)
        return;
    line = vmr_qmp_serialize (msg);
    len = strlen (line);
    debug_line ("->", line, len - 1);
    g_queue_push_tail (&self->write_queue, g_bytes_new_take (g_steal_pointer (&line), len));
    if (g_queue_get_length (&self->write_queue) == 1)
        write_next (self);
}

void
vmr_qmp_stream_close (VmrQmpStream *self)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    g_object_ref (self);
    emit_closed (self, NULL);
    g_io_stream_close (self->stream, NULL, NULL);
    g_object_unref (self);
}

gboolean
vmr_qmp_stream_is_closed (VmrQmpStream *self)
{
    g_return_val_if_fail (VMR_IS_QMP_STREAM (self), TRUE);
    return self->closed;
}

gint
vmr_qmp_stream_get_peer_uid (VmrQmpStream *self)
{
    g_autoptr (GCredentials) creds = NULL;
    GSocket *socket;

    if (!G_IS_SOCKET_CONNECTION (self->stream))
        return -1;
    socket = g_socket_connection_get_socket (G_SOCKET_CONNECTION (self->stream));
    creds = g_socket_get_credentials (socket, NULL);
    if (creds == NULL)
        return -1;
    return (gint) g_credentials_get_unix_user (creds, NULL);
}

VmrQmpStream *
vmr_qmp_stream_new (GIOStream *stream)
{
    VmrQmpStream *self = g_object_new (VMR_TYPE_QMP_STREAM, NULL);

    self->stream = g_object_ref (stream);
    return self;
}

static void
vmr_qmp_stream_finalize (GObject *object)
{
    VmrQmpStream *self = VMR_QMP_STREAM (object);

    g_cancellable_cancel (self->cancellable);
    g_queue_clear_full (&self->write_queue, (GDestroyNotify) g_bytes_unref);
    g_byte_array_unref (self->pending);
    g_free (self->chunk);
    if (self->stream != NULL)
        g_io_stream_close (self->stream, NULL, NULL);
    g_clear_object (&self->stream);
    g_clear_object (&self->cancellable);
    G_OBJECT_CLASS (vmr_qmp_stream_parent_class)->finalize (object);
}

static void
vmr_qmp_stream_init (VmrQmpStream *self)
{
    self->cancellable = g_cancellable_new ();
    self->pending = g_byte_array_new ();
    self->chunk = g_malloc (READ_CHUNK);
    g_queue_init (&self->write_queue);
}

static void
vmr_qmp_stream_class_init (VmrQmpStreamClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->finalize = vmr_qmp_stream_finalize;
    signals[SIGNAL_MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 1, JSON_TYPE_OBJECT);
    signals[SIGNAL_MALFORMED]
        = g_signal_new ("malformed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
    signals[SIGNAL_CLOSED] = g_signal_new ("closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                           0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}
