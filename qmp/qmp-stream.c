#define G_LOG_DOMAIN "vmr-qmp"

#include "qmp-stream.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <gio/gunixfdmessage.h>

#include "vmr-error.h"
#include "vmr-json.h"

struct _VmrQmpStream {
    GObject parent_instance;

    GIOStream *stream;
    GByteArray *pending;            /* read, not yet a whole line; never over the limit */
    gsize scanned;                  /* of which the first bytes hold no newline */
    guint8 *chunk;                  /* what one read fills */
    GCancellable *cancellable;      /* cancelled on close */
    GCancellable *read_cancellable; /* cancelled on close, also when writes may finish */
    GQueue write_queue;             /* of QueuedWrite *, head is being written */
    gsize queued;                   /* bytes in write_queue */
    gsize max_line;                 /* see vmr_qmp_stream_set_limits() */
    gsize max_queued;
    guint line_timeout_s;
    guint idle_timeout_s;  /* see vmr_qmp_stream_set_idle_timeout() */
    gint64 last_read_us;   /* when the peer last sent something (monotonic) */
    guint line_timer;      /* the deadline of the unfinished line in pending, 0: none */
    guint idle_timer;      /* the end of the peer's silence, 0: none */
    guint overflow_idle;   /* the cut-off of a peer that does not read, 0: none */
    guint flush_timer;     /* the end of the last writes after a cut-off, 0: none */
    GMainContext *context; /* where the signals are emitted, and the timers run */
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
/* how long the last writes may take after a peer was cut off */
#define FLUSH_TIMEOUT_S 2

/* a line to write, and a descriptor that goes with its first bytes */
typedef struct {
    GBytes *bytes;
    gint fd; /* sent as SCM_RIGHTS, then closed; -1 = none */
} QueuedWrite;

static void
queued_write_free (QueuedWrite *write)
{
    g_bytes_unref (write->bytes);
    if (write->fd >= 0)
        close (write->fd);
    g_free (write);
}

static void read_next_line (VmrQmpStream *self);
static void write_next (VmrQmpStream *self);

JsonObject *
vmr_qmp_parse_line (const gchar *line, gsize len, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new_immutable ();
    g_autoptr (GError) parse_error = NULL;
    JsonObject *root;

    if (!vmr_json_parser_load (parser, line, (gssize) len, &parse_error)) {
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

/* a timer on the stream's context (0 s: an idle); its id */
static guint
add_timer (VmrQmpStream *self, guint seconds, GSourceFunc func)
{
    g_autoptr (GSource) source
        = seconds > 0 ? g_timeout_source_new_seconds (seconds) : g_idle_source_new ();

    /*
     * as soon as the stream's I/O: an idle source's low priority would wait
     * behind a peer that never stops sending (it starved a cut-off)
     */
    g_source_set_priority (source, G_PRIORITY_DEFAULT);
    g_source_set_callback (source, func, self, NULL);
    return g_source_attach (source, self->context);
}

/* removes the timer *@id of the stream's context */
static void
clear_timer (VmrQmpStream *self, guint *id)
{
    GSource *source = *id != 0 ? g_main_context_find_source_by_id (self->context, *id) : NULL;

    if (source != NULL)
        g_source_destroy (source);
    *id = 0;
}

/* with @flush, what is queued is still written (see cut_off_line()) */
static void
emit_closed_full (VmrQmpStream *self, const GError *error, gboolean flush)
{
    if (self->closed)
        return;
    self->closed = TRUE;
    clear_timer (self, &self->line_timer);
    clear_timer (self, &self->idle_timer);
    clear_timer (self, &self->overflow_idle);
    g_cancellable_cancel (self->read_cancellable);
    if (!flush)
        g_cancellable_cancel (self->cancellable);
    g_signal_emit (self, signals[SIGNAL_CLOSED], 0, error);
}

static void
emit_closed (VmrQmpStream *self, const GError *error)
{
    emit_closed_full (self, error, FALSE);
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
    if (len > self->max_line) {
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

static gboolean
flush_timeout_cb (gpointer user_data)
{
    VmrQmpStream *self = user_data;

    self->flush_timer = 0;
    g_cancellable_cancel (self->cancellable);
    return G_SOURCE_REMOVE;
}

/*
 * closes the connection of a peer that broke the line rules: "malformed"
 * with @reason (whose handler may queue one reply), then "closed" with
 * @reason as a VMR_ERROR_PROTOCOL; what is queued gets FLUSH_TIMEOUT_S to
 * be written
 */
static void
cut_off_line (VmrQmpStream *self, const gchar *reason)
{
    g_autoptr (GError) error = g_error_new_literal (VMR_ERROR, VMR_ERROR_PROTOCOL, reason);

    g_object_ref (self);
    g_signal_emit (self, signals[SIGNAL_MALFORMED], 0, "", reason);
    emit_closed_full (self, error, TRUE);
    if (g_queue_is_empty (&self->write_queue))
        g_io_stream_close (self->stream, NULL, NULL);
    else if (self->flush_timer == 0 && !g_cancellable_is_cancelled (self->cancellable))
        self->flush_timer = add_timer (self, FLUSH_TIMEOUT_S, flush_timeout_cb);
    g_object_unref (self);
}

/* a limit for a message: "16 MiB", or "1000 bytes" when it is not whole MiB */
static gchar *
size_text (gsize bytes)
{
    if (bytes % (1024 * 1024) == 0)
        return g_strdup_printf ("%" G_GSIZE_FORMAT " MiB", bytes / (1024 * 1024));
    return g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", bytes);
}

/* closes the connection of a peer whose line is longer than any message */
static void
cut_off (VmrQmpStream *self)
{
    g_autofree gchar *limit = size_text (self->max_line);
    g_autofree gchar *reason = g_strdup_printf ("the peer sent a line longer than %s", limit);

    cut_off_line (self, reason);
}

static gboolean
line_timeout_cb (gpointer user_data)
{
    VmrQmpStream *self = user_data;
    g_autofree gchar *reason
        = g_strdup_printf ("the peer left a line unfinished for %u s", self->line_timeout_s);

    self->line_timer = 0;
    cut_off_line (self, reason);
    return G_SOURCE_REMOVE;
}

/* a deadline runs while an unfinished line is pending */
static void
update_line_timer (VmrQmpStream *self)
{
    if (self->pending->len == 0 || self->line_timeout_s == 0)
        clear_timer (self, &self->line_timer);
    else if (self->line_timer == 0)
        self->line_timer = add_timer (self, self->line_timeout_s, line_timeout_cb);
}

static gboolean
idle_timeout_cb (gpointer user_data)
{
    VmrQmpStream *self = user_data;
    gint64 limit_us = (gint64) self->idle_timeout_s * G_USEC_PER_SEC;
    gint64 silent_us = g_get_monotonic_time () - self->last_read_us;
    g_autofree gchar *reason = NULL;

    self->idle_timer = 0;
    if (silent_us < limit_us) {
        /* the peer sent something since the timer was set: the rest of the time */
        self->idle_timer = add_timer (
            self, (guint) ((limit_us - silent_us + G_USEC_PER_SEC - 1) / G_USEC_PER_SEC),
            idle_timeout_cb);
        return G_SOURCE_REMOVE;
    }
    reason = g_strdup_printf ("the peer sent nothing for %u s", self->idle_timeout_s);
    cut_off_line (self, reason);
    return G_SOURCE_REMOVE;
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
    self->last_read_us = g_get_monotonic_time ();
    /*
     * a peer that sends a line longer than any message, or no newline at all,
     * is cut off here, before it can grow our memory any further (what is
     * pending is one unfinished line)
     */
    if (self->pending->len + (gsize) n > self->max_line
        && memchr (self->chunk, '\n', (gsize) n) == NULL) {
        cut_off (self);
        return;
    }
    g_byte_array_append (self->pending, self->chunk, (guint) n);
    if (!handle_pending_lines (self))
        return;
    if (self->pending->len > self->max_line) {
        cut_off (self);
        return;
    }
    update_line_timer (self);
    read_next_line (self);
}

static void
read_next_line (VmrQmpStream *self)
{
    g_input_stream_read_async (g_io_stream_get_input_stream (self->stream), self->chunk, READ_CHUNK,
                               G_PRIORITY_DEFAULT, self->read_cancellable, read_cb,
                               g_object_ref (self));
}

void
vmr_qmp_stream_start (VmrQmpStream *self)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    g_return_if_fail (!self->started);

    self->started = TRUE;
    g_main_context_unref (self->context);
    self->context = g_main_context_ref_thread_default ();
    self->last_read_us = g_get_monotonic_time ();
    if (self->idle_timeout_s > 0)
        self->idle_timer = add_timer (self, self->idle_timeout_s, idle_timeout_cb);
    read_next_line (self);
}

/* the head of the queue was written, or writing failed with @error */
static void
head_written (VmrQmpStream *self, const GError *error)
{
    if (error != NULL) {
        if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_debug ("write failed: %s", error->message);
        g_queue_clear_full (&self->write_queue, (GDestroyNotify) queued_write_free);
        self->queued = 0;
    } else {
        QueuedWrite *done = g_queue_pop_head (&self->write_queue);

        self->queued -= g_bytes_get_size (done->bytes);
        queued_write_free (done);
    }
    if (!g_queue_is_empty (&self->write_queue)) {
        write_next (self);
    } else if (self->closed) {
        /* the last writes after a cut-off */
        clear_timer (self, &self->flush_timer);
        g_io_stream_close (self->stream, NULL, NULL);
    }
}

static void
write_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrQmpStream) self = user_data;
    g_autoptr (GError) error = NULL;

    g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), res, NULL, &error);
    head_written (self, error);
}

static gboolean
overflow_cb (gpointer user_data)
{
    VmrQmpStream *self = user_data;
    g_autofree gchar *limit = size_text (self->max_queued);
    g_autoptr (GError) error
        = g_error_new (VMR_ERROR, VMR_ERROR_BUSY, "the peer left more than %s unread", limit);

    self->overflow_idle = 0;
    g_object_ref (self);
    emit_closed (self, error);
    g_io_stream_close (self->stream, NULL, NULL);
    g_object_unref (self);
    return G_SOURCE_REMOVE;
}

static void write_with_fd (VmrQmpStream *self);

static gboolean
socket_writable_cb (GSocket *socket, GIOCondition condition, gpointer user_data)
{
    write_with_fd (user_data);
    return G_SOURCE_REMOVE;
}

/*
 * The head of the queue, whose descriptor goes with its first bytes in one
 * sendmsg(); the rest, if the socket took only part, as any other line
 */
static void
write_with_fd (VmrQmpStream *self)
{
    QueuedWrite *head = g_queue_peek_head (&self->write_queue);
    GSocket *socket = g_socket_connection_get_socket (G_SOCKET_CONNECTION (self->stream));
    g_autoptr (GSocketControlMessage) message = g_unix_fd_message_new ();
    g_autoptr (GError) error = NULL;
    GOutputVector vector;
    gsize written = 0;
    GPollableReturn sent;

    vector.buffer = g_bytes_get_data (head->bytes, &vector.size);
    if (!g_unix_fd_message_append_fd (G_UNIX_FD_MESSAGE (message), head->fd, &error)) {
        head_written (self, error);
        return;
    }
    sent = g_socket_send_message_with_timeout (socket, NULL, &vector, 1, &message, 1,
                                               G_SOCKET_MSG_NONE, 0, &written, self->cancellable,
                                               &error);
    if (sent == G_POLLABLE_RETURN_WOULD_BLOCK) {
        g_autoptr (GSource) source = g_socket_create_source (socket, G_IO_OUT, self->cancellable);

        g_source_set_callback (source, G_SOURCE_FUNC (socket_writable_cb), g_object_ref (self),
                               g_object_unref);
        g_source_attach (source, self->context);
        return;
    }
    if (sent != G_POLLABLE_RETURN_OK) {
        head_written (self, error);
        return;
    }
    close (head->fd);
    head->fd = -1;
    if (written == vector.size) {
        head_written (self, NULL);
        return;
    }
    /* the descriptor went with the first bytes: the rest is a plain write */
    self->queued -= written;
    g_bytes_unref (g_steal_pointer (&head->bytes));
    head->bytes = g_bytes_new ((const guint8 *) vector.buffer + written, vector.size - written);
    write_next (self);
}

static void
write_next (VmrQmpStream *self)
{
    QueuedWrite *head = g_queue_peek_head (&self->write_queue);
    gsize size = 0;
    gconstpointer data;

    if (head->fd >= 0) {
        write_with_fd (self);
        return;
    }
    data = g_bytes_get_data (head->bytes, &size);
    g_output_stream_write_all_async (g_io_stream_get_output_stream (self->stream), data, size,
                                     G_PRIORITY_DEFAULT, self->cancellable, write_cb,
                                     g_object_ref (self));
}

/* queues @msg with @fd (may be -1, else owned) for writing */
static void
queue_message (VmrQmpStream *self, JsonObject *msg, gint fd)
{
    g_autofree gchar *line = vmr_qmp_serialize (msg);
    gsize len = strlen (line);
    QueuedWrite *write;

    debug_line ("->", line, len - 1);
    if (self->overflow_idle != 0) {
        if (fd >= 0)
            close (fd);
        return;
    }
    write = g_new0 (QueuedWrite, 1);
    write->bytes = g_bytes_new_take (g_steal_pointer (&line), len);
    write->fd = fd;
    g_queue_push_tail (&self->write_queue, write);
    self->queued += len;
    if (g_queue_get_length (&self->write_queue) == 1) {
        write_next (self);
    } else if (self->max_queued != 0 && self->queued > self->max_queued) {
        /* from the main loop: the caller may be going through every stream */
        self->overflow_idle = add_timer (self, 0, overflow_cb);
    }
}

void
vmr_qmp_stream_send (VmrQmpStream *self, JsonObject *msg)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    if (self->closed)
        return;
    queue_message (self, msg, -1);
}

gboolean
vmr_qmp_stream_send_with_fd (VmrQmpStream *self, JsonObject *msg, gint fd, GError **error)
{
    gint copy;

    g_return_val_if_fail (VMR_IS_QMP_STREAM (self), FALSE);
    g_return_val_if_fail (fd >= 0, FALSE);
    if (!G_IS_SOCKET_CONNECTION (self->stream)
        || g_socket_get_family (g_socket_connection_get_socket (G_SOCKET_CONNECTION (self->stream)))
               != G_SOCKET_FAMILY_UNIX) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_FAILED,
                             "a file descriptor can only be passed over a UNIX socket");
        return FALSE;
    }
    if (self->closed) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_DISCONNECTED, "the connection is closed");
        return FALSE;
    }
    copy = fcntl (fd, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot duplicate a file descriptor: %s",
                     g_strerror (errno));
        return FALSE;
    }
    queue_message (self, msg, copy);
    return TRUE;
}

void
vmr_qmp_stream_set_limits (VmrQmpStream *self, gsize max_line, gsize max_queued,
                           guint line_timeout_s)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    g_return_if_fail (max_line > 0 && max_line <= VMR_QMP_STREAM_MAX_LINE);

    self->max_line = max_line;
    self->max_queued = max_queued;
    self->line_timeout_s = line_timeout_s;
}

void
vmr_qmp_stream_set_idle_timeout (VmrQmpStream *self, guint idle_timeout_s)
{
    g_return_if_fail (VMR_IS_QMP_STREAM (self));
    g_return_if_fail (!self->started);

    self->idle_timeout_s = idle_timeout_s;
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
    self->context = g_main_context_ref_thread_default ();
    return self;
}

static void
vmr_qmp_stream_finalize (GObject *object)
{
    VmrQmpStream *self = VMR_QMP_STREAM (object);

    clear_timer (self, &self->line_timer);
    clear_timer (self, &self->idle_timer);
    clear_timer (self, &self->overflow_idle);
    clear_timer (self, &self->flush_timer);
    g_cancellable_cancel (self->cancellable);
    g_cancellable_cancel (self->read_cancellable);
    g_queue_clear_full (&self->write_queue, (GDestroyNotify) queued_write_free);
    g_byte_array_unref (self->pending);
    g_free (self->chunk);
    if (self->stream != NULL)
        g_io_stream_close (self->stream, NULL, NULL);
    g_clear_object (&self->stream);
    g_clear_object (&self->cancellable);
    g_clear_object (&self->read_cancellable);
    g_clear_pointer (&self->context, g_main_context_unref);
    G_OBJECT_CLASS (vmr_qmp_stream_parent_class)->finalize (object);
}

static void
vmr_qmp_stream_init (VmrQmpStream *self)
{
    self->cancellable = g_cancellable_new ();
    self->read_cancellable = g_cancellable_new ();
    self->max_line = VMR_QMP_STREAM_MAX_LINE;
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
