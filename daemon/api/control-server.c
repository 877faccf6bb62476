/*
 * The control socket's server: listening, the client connections, dispatch
 * of a message to its command (control-commands.c) and the job events sent
 * to every client (made in control-events.c). Requests are answered through control-request.c.
 */
#define G_LOG_DOMAIN "vmr-daemon"

#include "control-server-private.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unix-socket.h"
#include "vmr-error.h"
#include "vmr-json.h"

G_DEFINE_TYPE (VmrControlServer, vmr_control_server, G_TYPE_OBJECT)

/* the Peer of a connection's stream */
#define PEER_KEY "vmr-control-peer"

/*
 * What one client may cost (docs/protocol.md): the longest request line, the
 * replies and events it may leave unread, how long a line may stay
 * unfinished; and the connections waiting to be accepted
 */
#define CLIENT_MAX_LINE       (1024 * 1024)
#define CLIENT_MAX_QUEUED     (4 * 1024 * 1024)
#define CLIENT_LINE_TIMEOUT_S 10
#define LISTEN_BACKLOG        1024
/* at most one refused connection logged in this time, see log_refusal() */
#define REFUSAL_LOG_INTERVAL_US (10 * G_USEC_PER_SEC)

/* ---- dispatch ---- */

/*
 * Whether @peer may run @spec: anyone may read; changing anything takes the
 * control socket and the daemon's own user (root), whatever the socket's
 * mode says. A command that changes something is logged with its peer.
 */
static gboolean
peer_may_run (const Peer *peer, const CommandSpec *spec, GError **error)
{
    if (spec->read_only)
        return TRUE;
    if (peer->read_only || peer->uid != (gint64) geteuid ()) {
        g_message ("%s from uid %" G_GINT64_FORMAT " pid %" G_GINT64_FORMAT " refused%s",
                   spec->name, peer->uid, peer->pid,
                   peer->read_only ? " on the read-only socket" : "");
        if (peer->read_only)
            g_set_error (error, VMR_ERROR, VMR_ERROR_PERMISSION_DENIED,
                         "the read-only socket does not allow '%s'", spec->name);
        else
            g_set_error (error, VMR_ERROR, VMR_ERROR_PERMISSION_DENIED,
                         "'%s' is for root only (the client is uid %" G_GINT64_FORMAT ")",
                         spec->name, peer->uid);
        return FALSE;
    }
    g_message ("%s from uid %" G_GINT64_FORMAT " pid %" G_GINT64_FORMAT, spec->name, peer->uid,
               peer->pid);
    return TRUE;
}

static void
dispatch (VmrControlServer *self, VmrQmpStream *stream, JsonObject *msg)
{
    const gchar *command = vmr_json_get_string (msg, "execute");
    JsonNode *args_node = json_object_get_member (msg, "arguments");
    JsonObject *args_given = vmr_json_node_object (args_node);
    Request *req = vmr_control_request_new (self, stream, json_object_get_member (msg, "id"),
                                            command != NULL ? command : "(none)");
    g_autoptr (JsonObject) args = NULL;
    g_autoptr (GError) error = NULL;

    if (command == NULL) {
        error = g_error_new_literal (VMR_ERROR, VMR_ERROR_GENERIC,
                                     "expected a member 'execute' naming a command");
        vmr_control_request_error (req, error);
        return;
    }
    if (args_node != NULL && args_given == NULL && !JSON_NODE_HOLDS_NULL (args_node)) {
        error = g_error_new_literal (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "'arguments' must be an object");
        vmr_control_request_error (req, error);
        return;
    }
    args = args_given != NULL ? json_object_ref (args_given) : json_object_new ();
    for (gsize i = 0; i < vmr_control_n_commands; i++) {
        if (g_strcmp0 (vmr_control_commands[i].name, req->command) != 0)
            continue;
        if (!peer_may_run (g_object_get_data (G_OBJECT (stream), PEER_KEY),
                           &vmr_control_commands[i], &error)) {
            vmr_control_request_error (req, error);
            return;
        }
        if (vmr_control_commands[i].args != NULL
            && !vmr_control_check_args (args, vmr_control_commands[i].args, &error)) {
            g_prefix_error (&error, "%s: ", req->command);
            vmr_control_request_error (req, error);
            return;
        }
        g_debug ("command %s", req->command);
        vmr_control_commands[i].handler (req, args);
        return;
    }
    error = g_error_new (VMR_ERROR, VMR_ERROR_COMMAND_NOT_FOUND,
                         "the command %s has not been found", req->command);
    vmr_control_request_error (req, error);
}

/* ---- connections ---- */

static void
stream_message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    dispatch (VMR_CONTROL_SERVER (user_data), stream, msg);
}

/* {"error": ...} for @error, the line a client gets for a request or a connection refused */
static JsonObject *
error_message (const GError *error)
{
    JsonObject *msg = json_object_new ();

    json_object_set_object_member (msg, "error", vmr_control_error_object (error));
    return msg;
}

static void
stream_malformed_cb (VmrQmpStream *stream, const gchar *line, const gchar *reason,
                     gpointer user_data)
{
    g_autoptr (GError) error = g_error_new_literal (VMR_ERROR, VMR_ERROR_GENERIC, reason);
    g_autoptr (JsonObject) msg = error_message (error);

    vmr_qmp_stream_send (stream, msg);
}

/* @stream's connection is no longer counted against its user */
static void
forget_stream (VmrControlServer *self, VmrQmpStream *stream)
{
    const Peer *peer = g_object_get_data (G_OBJECT (stream), PEER_KEY);

    g_signal_handlers_disconnect_by_data (stream, self);
    vmr_control_clients_release (self->clients, peer->uid);
}

static void
stream_closed_cb (VmrQmpStream *stream, GError *error, gpointer user_data)
{
    VmrControlServer *self = user_data;

    /* the stream's own limits: the client broke one of them */
    if (error != NULL && error->domain == VMR_ERROR)
        g_message ("cut off %s: %s", (const gchar *) g_object_get_data (G_OBJECT (stream), "name"),
                   error->message);
    forget_stream (self, stream);
    g_ptr_array_remove (self->connections, stream);
}

/*
 * who is at the other end of @connection: from SO_PEERCRED for a socket; a
 * stream the daemon made itself (vmr_control_server_serve()) is its own
 */
static Peer *
peer_new (GIOStream *connection, gboolean read_only)
{
    Peer *peer = g_new0 (Peer, 1);
    g_autoptr (GError) error = NULL;
    g_autoptr (GCredentials) credentials = NULL;

    peer->read_only = read_only;
    peer->uid = -1;
    peer->pid = -1;
    if (!G_IS_SOCKET_CONNECTION (connection)) {
        peer->uid = (gint64) getuid ();
        peer->pid = (gint64) getpid ();
        return peer;
    }
    credentials = g_socket_get_credentials (
        g_socket_connection_get_socket (G_SOCKET_CONNECTION (connection)), &error);
    if (credentials == NULL) {
        g_message ("a client's credentials are unknown (%s): it may only read", error->message);
        return peer;
    }
    peer->uid = (gint64) g_credentials_get_unix_user (credentials, NULL);
    peer->pid = (gint64) g_credentials_get_unix_pid (credentials, NULL);
    return peer;
}

/* "client N (pid P)", for the log */
static gchar *
client_name (VmrControlServer *self, const Peer *peer)
{
    self->n_clients++;
    if (peer->pid <= 0)
        return g_strdup_printf ("client %" G_GUINT64_FORMAT, self->n_clients);
    return g_strdup_printf ("client %" G_GUINT64_FORMAT " (pid %" G_GINT64_FORMAT ")",
                            self->n_clients, peer->pid);
}

/* one line, at most one every REFUSAL_LOG_INTERVAL_US (log-throttle.h) */
static void
log_refusal (VmrControlServer *self, const Peer *peer, const GError *error)
{
    guint left_out = 0;
    g_autofree gchar *more = NULL;

    if (!vmr_log_throttle_pass (&self->refusal_log, &left_out))
        return;
    if (left_out > 0)
        more = g_strdup_printf (" (and %u more refused since the last one logged)", left_out);
    g_message ("refused a connection of uid %" G_GINT64_FORMAT " pid %" G_GINT64_FORMAT ": %s%s",
               peer->uid, peer->pid, error->message, more != NULL ? more : "");
}

/*
 * One error line instead of the greeting, written without waiting (a new
 * connection's socket buffer is empty: it fits, or the client is gone),
 * then the connection is closed
 */
static void
refuse_connection (GIOStream *connection, const GError *error)
{
    g_autoptr (JsonObject) msg = error_message (error);
    g_autofree gchar *line = vmr_qmp_serialize (msg);
    GOutputStream *output = g_io_stream_get_output_stream (connection);

    if (G_IS_POLLABLE_OUTPUT_STREAM (output)
        && g_pollable_output_stream_can_poll (G_POLLABLE_OUTPUT_STREAM (output)))
        g_pollable_output_stream_write_nonblocking (G_POLLABLE_OUTPUT_STREAM (output), line,
                                                    strlen (line), NULL, NULL);
    else
        g_output_stream_write (output, line, strlen (line), NULL, NULL);
    g_io_stream_close (connection, NULL, NULL);
}

void
vmr_control_server_serve (VmrControlServer *self, GIOStream *connection, gboolean read_only)
{
    g_autoptr (VmrQmpStream) stream = NULL;
    g_autoptr (JsonObject) greeting = NULL;
    g_autoptr (GError) error = NULL;
    JsonObject *qmp;
    JsonObject *version;
    Peer *peer = peer_new (connection, read_only);

    if (!vmr_control_clients_admit (self->clients, peer->uid, &error)) {
        log_refusal (self, peer, error);
        refuse_connection (connection, error);
        g_free (peer);
        return;
    }
    stream = vmr_qmp_stream_new (connection);
    greeting = json_object_new ();
    qmp = json_object_new ();
    version = json_object_new ();
    g_object_set_data_full (G_OBJECT (stream), PEER_KEY, peer, g_free);

    json_object_set_string_member (version, "virt-mirror", VMR_VERSION);
    json_object_set_object_member (qmp, "version", version);
    json_object_set_array_member (qmp, "capabilities", json_array_new ());
    json_object_set_object_member (greeting, "QMP", qmp);

    g_object_set_data_full (G_OBJECT (stream), "name", client_name (self, peer), g_free);
    vmr_qmp_stream_set_limits (stream, CLIENT_MAX_LINE, CLIENT_MAX_QUEUED, CLIENT_LINE_TIMEOUT_S);
    vmr_qmp_stream_set_idle_timeout (stream,
                                     vmr_control_clients_idle_timeout (self->clients, peer->uid));
    g_signal_connect (stream, "message", G_CALLBACK (stream_message_cb), self);
    g_signal_connect (stream, "malformed", G_CALLBACK (stream_malformed_cb), self);
    g_signal_connect (stream, "closed", G_CALLBACK (stream_closed_cb), self);
    g_ptr_array_add (self->connections, g_object_ref (stream));
    vmr_qmp_stream_send (stream, greeting);
    vmr_qmp_stream_start (stream);
}

static gboolean
incoming_cb (GSocketService *service, GSocketConnection *connection, GObject *source_object,
             gpointer user_data)
{
    VmrControlServer *self = user_data;

    vmr_control_server_serve (self, G_IO_STREAM (connection), service == self->readonly_service);
    return TRUE;
}

static void
broadcast (JsonObject *msg, gpointer user_data)
{
    VmrControlServer *self = user_data;

    for (guint i = 0; i < self->connections->len; i++)
        vmr_qmp_stream_send (g_ptr_array_index (self->connections, i), msg);
}

static void
job_changed_cb (VmrEngine *engine, gpointer job_ptr, gint previous, gpointer user_data)
{
    g_autoptr (JsonObject) msg = vmr_control_event_job_state (job_ptr, (VmrJobState) previous);

    broadcast (msg, user_data);
}

/* listens on @path with @mode, of group @gid (-1: the daemon's), for @service */
static gboolean
listen_on (VmrControlServer *self, GSocketService *service, const gchar *path, mode_t mode,
           gid_t gid, GError **error)
{
    g_autoptr (GSocket) socket = vmr_unix_socket_listen (path, mode, gid, LISTEN_BACKLOG, error);
    g_autoptr (GError) local_error = NULL;

    if (socket == NULL)
        return FALSE;
    if (!g_socket_listener_add_socket (G_SOCKET_LISTENER (service), socket, NULL, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot listen on %s: %s", path,
                     local_error->message);
        g_unlink (path);
        return FALSE;
    }
    g_socket_service_start (service);
    return TRUE;
}

gboolean
vmr_control_server_listen (VmrControlServer *self, const gchar *path, GError **error)
{
    /* only root may drive the daemon */
    if (!listen_on (self, self->service, path, 0600, (gid_t) -1, error))
        return FALSE;
    self->path = g_strdup (path);
    return TRUE;
}

gboolean
vmr_control_server_listen_readonly (VmrControlServer *self, const gchar *path, gid_t gid,
                                    GError **error)
{
    if (!listen_on (self, self->readonly_service, path, 0660, gid, error))
        return FALSE;
    self->readonly_path = g_strdup (path);
    return TRUE;
}

void
vmr_control_server_stop (VmrControlServer *self)
{
    g_autoptr (GPtrArray) connections = NULL;

    g_socket_service_stop (self->service);
    g_socket_listener_close (G_SOCKET_LISTENER (self->service));
    g_socket_service_stop (self->readonly_service);
    g_socket_listener_close (G_SOCKET_LISTENER (self->readonly_service));
    connections = g_steal_pointer (&self->connections);
    self->connections = g_ptr_array_new_with_free_func (g_object_unref);
    for (guint i = 0; i < connections->len; i++) {
        VmrQmpStream *stream = g_ptr_array_index (connections, i);

        forget_stream (self, stream);
        vmr_qmp_stream_close (stream);
    }
    if (self->path != NULL) {
        g_unlink (self->path);
        g_clear_pointer (&self->path, g_free);
    }
    if (self->readonly_path != NULL) {
        g_unlink (self->readonly_path);
        g_clear_pointer (&self->readonly_path, g_free);
    }
}

void
vmr_control_server_set_limits (VmrControlServer *self, const VmrControlLimits *limits)
{
    g_return_if_fail (VMR_IS_CONTROL_SERVER (self));
    g_return_if_fail (self->connections->len == 0);

    vmr_control_clients_free (self->clients);
    self->clients = vmr_control_clients_new (limits, (gint64) geteuid ());
}

VmrControlServer *
vmr_control_server_new (VmrEngine *engine)
{
    VmrControlServer *self = g_object_new (VMR_TYPE_CONTROL_SERVER, NULL);

    self->engine = g_object_ref (engine);
    self->job_changed_id
        = g_signal_connect (engine, "job-changed", G_CALLBACK (job_changed_cb), self);
    self->progress = vmr_control_progress_new (engine, broadcast, self);
    return self;
}

static void
vmr_control_server_finalize (GObject *object)
{
    VmrControlServer *self = VMR_CONTROL_SERVER (object);

    g_clear_signal_handler (&self->job_changed_id, self->engine);
    g_clear_pointer (&self->progress, vmr_control_progress_free);
    g_clear_object (&self->engine);
    g_clear_object (&self->service);
    g_clear_object (&self->readonly_service);
    g_ptr_array_unref (self->connections);
    vmr_control_clients_free (self->clients);
    g_free (self->path);
    g_free (self->readonly_path);
    G_OBJECT_CLASS (vmr_control_server_parent_class)->finalize (object);
}

static void
vmr_control_server_init (VmrControlServer *self)
{
    VmrControlLimits limits;

    vmr_control_limits_init (&limits);
    self->clients = vmr_control_clients_new (&limits, (gint64) geteuid ());
    self->refusal_log = (VmrLogThrottle) VMR_LOG_THROTTLE_INIT (REFUSAL_LOG_INTERVAL_US);
    self->service = g_socket_service_new ();
    self->readonly_service = g_socket_service_new ();
    self->connections = g_ptr_array_new_with_free_func (g_object_unref);
    g_signal_connect (self->service, "incoming", G_CALLBACK (incoming_cb), self);
    g_signal_connect (self->readonly_service, "incoming", G_CALLBACK (incoming_cb), self);
}

static void
vmr_control_server_class_init (VmrControlServerClass *klass)
{
    G_OBJECT_CLASS (klass)->finalize = vmr_control_server_finalize;
}
