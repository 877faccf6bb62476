#define G_LOG_DOMAIN "vmr-qmp"

#include "qmp-client.h"

#include <errno.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "qmp-stream.h"
#include "vmr-error.h"
#include "vmr-json.h"

struct _VmrQmpClient {
    GObject parent_instance;

    VmrQmpStream *stream;
    GMainContext *context; /* where replies, events and timeouts run */
    JsonObject *greeting;  /* the "QMP" member, NULL until received */
    GTask *connect_task;   /* while the greeting and capabilities are pending */
    GHashTable *pending;   /* PendingCommand id -> GTask *, owned */
    guint64 next_id;
    GError *disconnect_error; /* set once the peer is gone */
    GSource *connect_timeout; /* while the greeting is pending */
    GSource *connect_cancel;  /* while the greeting is pending, with a cancellable */
    guint connect_timeout_ms; /* also bounds the capabilities negotiation */
};

enum { SIGNAL_EVENT, SIGNAL_DISCONNECTED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE (VmrQmpClient, vmr_qmp_client, G_TYPE_OBJECT)

typedef struct {
    gchar *command;
    gchar *id;
    GSource *timeout_source;
    GSource *cancel_source; /* NULL without a cancellable */
} PendingCommand;

static void
clear_source (GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy (*source);
    g_clear_pointer (source, g_source_unref);
}

static void
pending_command_free (PendingCommand *cmd)
{
    clear_source (&cmd->timeout_source);
    clear_source (&cmd->cancel_source);
    g_free (cmd->command);
    g_free (cmd->id);
    g_free (cmd);
}

static void
fail_all_pending (VmrQmpClient *self, const GError *error)
{
    g_autoptr (GList) tasks = NULL;

    tasks = g_hash_table_get_values (self->pending);
    g_hash_table_steal_all (self->pending);
    for (GList *l = tasks; l != NULL; l = l->next) {
        g_autoptr (GTask) task = l->data;
        PendingCommand *cmd = g_task_get_task_data (task);

        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                 "%s (while waiting for the reply to '%s')", error->message,
                                 cmd->command);
    }
}

static GError *
error_from_qmp (JsonObject *error_obj)
{
    const gchar *class_name = vmr_json_get_string (error_obj, "class");
    const gchar *desc = vmr_json_get_string (error_obj, "desc");

    return g_error_new_literal (VMR_ERROR, vmr_error_code_from_class (class_name),
                                desc != NULL ? desc : "unknown error");
}

static void
handle_reply (VmrQmpClient *self, JsonObject *msg)
{
    g_autoptr (GTask) task = NULL;
    const gchar *id = vmr_json_get_string (msg, "id");
    PendingCommand *cmd;

    if (id == NULL) {
        g_debug ("dropping a reply without a known id");
        return;
    }
    if (!g_hash_table_steal_extended (self->pending, id, NULL, (gpointer *) &task)) {
        g_debug ("dropping a reply to '%s', which is no longer pending", id);
        return;
    }
    cmd = g_task_get_task_data (task);
    if (json_object_has_member (msg, "error")) {
        JsonObject *err = vmr_json_get_object (msg, "error");

        if (err == NULL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_PROTOCOL,
                                     "malformed error reply to '%s'", cmd->command);
            return;
        }
        g_task_return_error (task, error_from_qmp (err));
        return;
    }
    g_task_return_pointer (task, json_node_copy (json_object_get_member (msg, "return")),
                           (GDestroyNotify) json_node_unref);
}

static void
handle_greeting (VmrQmpClient *self, JsonObject *msg)
{
    JsonObject *qmp = vmr_json_get_object (msg, "QMP");

    if (qmp == NULL) {
        g_autoptr (GTask) task = g_steal_pointer (&self->connect_task);

        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_PROTOCOL, "malformed QMP greeting");
        return;
    }
    self->greeting = json_object_ref (qmp);
}

static void
capabilities_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrQmpClient *self = VMR_QMP_CLIENT (source);
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (self, res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QMP capabilities negotiation failed: ");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_pointer (task, g_object_ref (self), g_object_unref);
}

static void
stream_message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    /* returning a task may drop the last other reference to the client */
    g_autoptr (VmrQmpClient) self = g_object_ref (user_data);

    /* an error instead of the greeting: a peer that refuses the connection, as a busy daemon */
    if (self->connect_task != NULL && self->greeting == NULL
        && vmr_json_get_object (msg, "error") != NULL) {
        g_autoptr (GTask) task = g_steal_pointer (&self->connect_task);
        GError *error = error_from_qmp (vmr_json_get_object (msg, "error"));

        clear_source (&self->connect_timeout);
        clear_source (&self->connect_cancel);
        g_prefix_error (&error, "the connection was refused: ");
        g_task_return_error (task, error);
        return;
    }
    if (json_object_has_member (msg, "return") || json_object_has_member (msg, "error")) {
        handle_reply (self, msg);
        return;
    }
    if (json_object_has_member (msg, "event")) {
        const gchar *name = vmr_json_get_string (msg, "event");
        JsonObject *data_given = vmr_json_get_object (msg, "data");
        JsonObject *ts = vmr_json_get_object (msg, "timestamp");
        g_autoptr (JsonObject) data = NULL;
        gint64 timestamp_us = 0;

        if (name == NULL) {
            g_debug ("dropping an event without a name");
            return;
        }
        data = data_given != NULL ? json_object_ref (data_given) : json_object_new ();
        if (ts != NULL)
            timestamp_us = vmr_json_int_or (ts, "seconds", 0) * G_USEC_PER_SEC
                           + vmr_json_int_or (ts, "microseconds", 0);
        g_signal_emit (self, signals[SIGNAL_EVENT], 0, name, data, timestamp_us);
        return;
    }
    if (json_object_has_member (msg, "QMP") && self->connect_task != NULL) {
        GTask *task;

        clear_source (&self->connect_timeout);
        clear_source (&self->connect_cancel);

        handle_greeting (self, msg);
        if (self->connect_task == NULL)
            return;
        task = g_steal_pointer (&self->connect_task);
        vmr_qmp_client_execute_async (self, "qmp_capabilities", NULL, self->connect_timeout_ms,
                                      g_task_get_cancellable (task), capabilities_cb, task);
        return;
    }
    g_debug ("dropping a message that is neither a reply nor an event");
}

static void
stream_malformed_cb (VmrQmpStream *stream, const gchar *line, const gchar *reason,
                     gpointer user_data)
{
    VmrQmpClient *self = user_data;
    g_autoptr (GError) error = NULL;

    /* a peer that sends garbage cannot be trusted to match replies any more */
    g_debug ("malformed line from peer: %s", line);
    error = g_error_new (VMR_ERROR, VMR_ERROR_PROTOCOL, "malformed message from peer: %s", reason);
    if (self->disconnect_error == NULL)
        self->disconnect_error = g_error_copy (error);
    vmr_qmp_stream_close (stream);
}

static void
stream_closed_cb (VmrQmpStream *stream, GError *error, gpointer user_data)
{
    VmrQmpClient *self = user_data;

    g_object_ref (self);
    if (self->disconnect_error == NULL) {
        if (error != NULL)
            self->disconnect_error = g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                                  "connection lost: %s", error->message);
        else
            self->disconnect_error = g_error_new_literal (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                                          "connection closed by peer");
    }
    if (self->connect_task != NULL) {
        g_autoptr (GTask) task = g_steal_pointer (&self->connect_task);

        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_PROTOCOL, "no QMP greeting: %s",
                                 self->disconnect_error->message);
    }
    fail_all_pending (self, self->disconnect_error);
    g_signal_emit (self, signals[SIGNAL_DISCONNECTED], 0, self->disconnect_error);
    g_object_unref (self);
}

static void
abort_connect (VmrQmpClient *self, GError *error)
{
    g_autoptr (GTask) task = g_steal_pointer (&self->connect_task);

    clear_source (&self->connect_timeout);
    clear_source (&self->connect_cancel);
    g_signal_handlers_disconnect_by_data (self->stream, self);
    vmr_qmp_stream_close (self->stream);
    g_task_return_error (task, error);
}

static gboolean
connect_timeout_cb (gpointer user_data)
{
    VmrQmpClient *self = user_data;

    if (self->connect_task != NULL)
        abort_connect (self, g_error_new_literal (VMR_ERROR, VMR_ERROR_TIMEOUT,
                                                  "no QMP greeting in time: is this a QEMU "
                                                  "monitor socket?"));
    return G_SOURCE_REMOVE;
}

static gboolean
connect_cancelled_cb (GCancellable *cancellable, gpointer user_data)
{
    VmrQmpClient *self = user_data;
    GError *error = NULL;

    if (self->connect_task != NULL) {
        g_cancellable_set_error_if_cancelled (cancellable, &error);
        abort_connect (self, error);
    }
    return G_SOURCE_REMOVE;
}

/*
 * The two ends of a wait on @self's context: a timeout after @timeout_ms (0:
 * the default) calling @timeout_cb, and with @cancellable (nullable) its
 * cancellation calling @cancel_cb, both with @data. The sources are stored in
 * *@out_timeout and *@out_cancel (left alone without @cancellable).
 */
static void
attach_wait_ends (VmrQmpClient *self, guint timeout_ms, GCancellable *cancellable,
                  GSourceFunc timeout_cb, GSourceFunc cancel_cb, gpointer data,
                  GSource **out_timeout, GSource **out_cancel)
{
    *out_timeout = g_timeout_source_new (timeout_ms != 0 ? timeout_ms : VMR_QMP_DEFAULT_TIMEOUT_MS);
    g_source_set_callback (*out_timeout, timeout_cb, data, NULL);
    g_source_attach (*out_timeout, self->context);
    if (cancellable == NULL)
        return;
    *out_cancel = g_cancellable_source_new (cancellable);
    g_source_set_callback (*out_cancel, cancel_cb, data, NULL);
    g_source_attach (*out_cancel, self->context);
}

static void
start_on_stream (GIOStream *stream, guint timeout_ms, GTask *task)
{
    g_autoptr (VmrQmpClient) self = g_object_new (VMR_TYPE_QMP_CLIENT, NULL);
    GCancellable *cancellable = g_task_get_cancellable (task);

    self->context = g_main_context_ref_thread_default ();
    self->stream = vmr_qmp_stream_new (stream);
    g_signal_connect (self->stream, "message", G_CALLBACK (stream_message_cb), self);
    g_signal_connect (self->stream, "malformed", G_CALLBACK (stream_malformed_cb), self);
    g_signal_connect (self->stream, "closed", G_CALLBACK (stream_closed_cb), self);
    self->connect_task = task;
    self->connect_timeout_ms = timeout_ms;

    /* the task keeps the client alive until the greeting is handled */
    g_task_set_task_data (task, g_object_ref (self), g_object_unref);
    attach_wait_ends (self, timeout_ms, cancellable, connect_timeout_cb,
                      G_SOURCE_FUNC (connect_cancelled_cb), self, &self->connect_timeout,
                      &self->connect_cancel);
    vmr_qmp_stream_start (self->stream);
}

void
vmr_qmp_client_new_for_stream_async (GIOStream *stream, guint timeout_ms, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (NULL, cancellable, callback, user_data);

    g_task_set_source_tag (task, vmr_qmp_client_connect_async);
    start_on_stream (stream, timeout_ms, task);
}

typedef struct {
    gchar *path;
    guint timeout_ms;
} ConnectData;

static void
connect_data_free (ConnectData *data)
{
    g_free (data->path);
    g_free (data);
}

static void
socket_connect_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocketConnection) conn = NULL;
    ConnectData *data = g_object_get_data (G_OBJECT (task), "vmr-connect");

    conn = g_socket_client_connect_finish (G_SOCKET_CLIENT (source), res, &error);
    if (conn == NULL) {
        GStatBuf st;

        /* "Connection refused" says little of a path that is no socket at all */
        if (g_stat (data->path, &st) != 0)
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                     "cannot connect to %s: %s", data->path, g_strerror (errno));
        else if (!S_ISSOCK (st.st_mode))
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                     "cannot connect to %s: it is not a socket", data->path);
        else
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                     "cannot connect to %s: %s", data->path, error->message);
        return;
    }
    start_on_stream (G_IO_STREAM (conn), data->timeout_ms, g_steal_pointer (&task));
}

void
vmr_qmp_client_connect_async (const gchar *path, guint timeout_ms, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GSocketClient) client = g_socket_client_new ();
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    GTask *task = g_task_new (NULL, cancellable, callback, user_data);
    ConnectData *data = g_new0 (ConnectData, 1);

    g_task_set_source_tag (task, vmr_qmp_client_connect_async);
    data->path = g_strdup (path);
    data->timeout_ms = timeout_ms;
    g_object_set_data_full (G_OBJECT (task), "vmr-connect", data,
                            (GDestroyNotify) connect_data_free);
    g_socket_client_connect_async (client, G_SOCKET_CONNECTABLE (address), cancellable,
                                   socket_connect_cb, task);
}

VmrQmpClient *
vmr_qmp_client_connect_finish (GAsyncResult *res, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (res, NULL), NULL);
    return g_task_propagate_pointer (G_TASK (res), error);
}

static void
sync_result_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GAsyncResult **out = user_data;

    *out = g_object_ref (res);
}

VmrQmpClient *
vmr_qmp_client_connect_sync (const gchar *path, guint timeout_ms, GError **error)
{
    g_autoptr (GAsyncResult) res = NULL;
    GMainContext *context = g_main_context_get_thread_default ();

    vmr_qmp_client_connect_async (path, timeout_ms, NULL, sync_result_cb, &res);
    while (res == NULL)
        g_main_context_iteration (context, TRUE);
    return vmr_qmp_client_connect_finish (res, error);
}

/*
 * Takes the command of @task out of the pending ones, so that a reply that
 * comes later is dropped as a late one, and drops *@fired, the source (in
 * the command's data) that ends the wait. NULL when it was no longer pending.
 */
static GTask *
take_pending (GTask *task, GSource **fired)
{
    VmrQmpClient *self = g_task_get_source_object (task);
    PendingCommand *cmd = g_task_get_task_data (task);
    GTask *owned = NULL;

    if (!g_hash_table_steal_extended (self->pending, cmd->id, NULL, (gpointer *) &owned))
        return NULL;
    g_clear_pointer (fired, g_source_unref);
    return owned;
}

static gboolean
command_timeout_cb (gpointer user_data)
{
    PendingCommand *cmd = g_task_get_task_data (user_data);
    g_autoptr (GTask) owned = take_pending (user_data, &cmd->timeout_source);

    if (owned != NULL)
        g_task_return_new_error (owned, VMR_ERROR, VMR_ERROR_TIMEOUT, "no reply to '%s' in time",
                                 cmd->command);
    return G_SOURCE_REMOVE;
}

static gboolean
command_cancelled_cb (GCancellable *cancellable, gpointer user_data)
{
    PendingCommand *cmd = g_task_get_task_data (user_data);
    /* QEMU may still run the command; its reply is dropped like a late one */
    g_autoptr (GTask) owned = take_pending (user_data, &cmd->cancel_source);

    if (owned != NULL)
        g_task_return_error_if_cancelled (owned);
    return G_SOURCE_REMOVE;
}

/* vmr_qmp_client_execute_async() with @fd (-1: none) */
static void
execute (VmrQmpClient *self, const gchar *command, JsonObject *arguments, gint fd, guint timeout_ms,
         GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GTask) task = NULL;
    g_autoptr (JsonObject) msg = json_object_new ();
    g_autoptr (GError) error = NULL;
    PendingCommand *cmd;

    task = g_task_new (self, cancellable, callback, user_data);
    g_task_set_source_tag (task, vmr_qmp_client_execute_async);
    if (g_task_return_error_if_cancelled (task))
        return;
    if (self->disconnect_error != NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED, "cannot run '%s': %s",
                                 command, self->disconnect_error->message);
        return;
    }
    cmd = g_new0 (PendingCommand, 1);
    cmd->command = g_strdup (command);
    cmd->id = g_strdup_printf ("vmr-%" G_GUINT64_FORMAT, ++self->next_id);
    g_task_set_task_data (task, cmd, (GDestroyNotify) pending_command_free);

    json_object_set_string_member (msg, "execute", command);
    if (arguments != NULL)
        json_object_set_object_member (msg, "arguments", json_object_ref (arguments));
    json_object_set_string_member (msg, "id", cmd->id);
    if (fd >= 0 && !vmr_qmp_stream_send_with_fd (self->stream, msg, fd, &error)) {
        g_prefix_error (&error, "cannot run '%s': ", command);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    attach_wait_ends (self, timeout_ms, cancellable, command_timeout_cb,
                      G_SOURCE_FUNC (command_cancelled_cb), task, &cmd->timeout_source,
                      &cmd->cancel_source);
    g_hash_table_insert (self->pending, cmd->id, g_object_ref (task));
    if (fd < 0)
        vmr_qmp_stream_send (self->stream, msg);
}

void
vmr_qmp_client_execute_async (VmrQmpClient *self, const gchar *command, JsonObject *arguments,
                              guint timeout_ms, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    g_return_if_fail (VMR_IS_QMP_CLIENT (self));
    g_return_if_fail (command != NULL);
    execute (self, command, arguments, -1, timeout_ms, cancellable, callback, user_data);
}

void
vmr_qmp_client_execute_with_fd_async (VmrQmpClient *self, const gchar *command,
                                      JsonObject *arguments, gint fd, guint timeout_ms,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data)
{
    g_return_if_fail (VMR_IS_QMP_CLIENT (self));
    g_return_if_fail (command != NULL);
    g_return_if_fail (fd >= 0);
    execute (self, command, arguments, fd, timeout_ms, cancellable, callback, user_data);
}

JsonNode *
vmr_qmp_client_execute_finish (VmrQmpClient *self, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (res, self), NULL);
    return g_task_propagate_pointer (G_TASK (res), error);
}

JsonNode *
vmr_qmp_client_execute_sync (VmrQmpClient *self, const gchar *command, JsonObject *arguments,
                             guint timeout_ms, GError **error)
{
    g_autoptr (GAsyncResult) res = NULL;

    vmr_qmp_client_execute_async (self, command, arguments, timeout_ms, NULL, sync_result_cb, &res);
    while (res == NULL)
        g_main_context_iteration (self->context, TRUE);
    return vmr_qmp_client_execute_finish (self, res, error);
}

JsonObject *
vmr_qmp_client_get_greeting (VmrQmpClient *self)
{
    g_return_val_if_fail (VMR_IS_QMP_CLIENT (self), NULL);
    return self->greeting;
}

gboolean
vmr_qmp_client_is_connected (VmrQmpClient *self)
{
    g_return_val_if_fail (VMR_IS_QMP_CLIENT (self), FALSE);
    return self->disconnect_error == NULL;
}

void
vmr_qmp_client_close (VmrQmpClient *self)
{
    g_return_if_fail (VMR_IS_QMP_CLIENT (self));
    if (self->disconnect_error == NULL)
        self->disconnect_error
            = g_error_new_literal (VMR_ERROR, VMR_ERROR_DISCONNECTED, "connection closed");
    vmr_qmp_stream_close (self->stream);
}

static void
vmr_qmp_client_dispose (GObject *object)
{
    VmrQmpClient *self = VMR_QMP_CLIENT (object);

    clear_source (&self->connect_timeout);
    clear_source (&self->connect_cancel);
    if (self->stream != NULL) {
        g_signal_handlers_disconnect_by_data (self->stream, self);
        vmr_qmp_stream_close (self->stream);
        g_clear_object (&self->stream);
    }
    G_OBJECT_CLASS (vmr_qmp_client_parent_class)->dispose (object);
}

static void
vmr_qmp_client_finalize (GObject *object)
{
    VmrQmpClient *self = VMR_QMP_CLIENT (object);

    g_hash_table_unref (self->pending);
    g_clear_pointer (&self->greeting, json_object_unref);
    g_clear_pointer (&self->context, g_main_context_unref);
    g_clear_error (&self->disconnect_error);
    G_OBJECT_CLASS (vmr_qmp_client_parent_class)->finalize (object);
}

static void
vmr_qmp_client_init (VmrQmpClient *self)
{
    /* keys are the ids in the tasks' data: stealing an entry frees nothing */
    self->pending = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_object_unref);
}

static void
vmr_qmp_client_class_init (VmrQmpClientClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->dispose = vmr_qmp_client_dispose;
    object_class->finalize = vmr_qmp_client_finalize;
    signals[SIGNAL_EVENT]
        = g_signal_new ("event", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                        G_TYPE_NONE, 3, G_TYPE_STRING, JSON_TYPE_OBJECT, G_TYPE_INT64);
    signals[SIGNAL_DISCONNECTED]
        = g_signal_new ("disconnected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

gboolean
vmr_qmp_schema_has_command (JsonNode *schema, const gchar *command)
{
    JsonArray *entries = vmr_json_node_array (schema);

    for (guint i = 0; entries != NULL && i < json_array_get_length (entries); i++) {
        JsonObject *entry = vmr_json_array_object (entries, i);

        if (g_strcmp0 (vmr_json_get_string (entry, "meta-type"), "command") == 0
            && g_strcmp0 (vmr_json_get_string (entry, "name"), command) == 0)
            return TRUE;
    }
    return FALSE;
}

JsonObject *
vmr_qmp_schema_copy_mode_args (JsonNode *schema, const gchar *job_id, GError **error)
{
    JsonObject *args;

    /* block-job-change came with QEMU 8.2: ask the schema, not the version */
    if (!vmr_qmp_schema_has_command (schema, "block-job-change")) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_FAILED,
                             "this QEMU cannot change the copy mode of a running mirror "
                             "(no block-job-change; QEMU 8.2 or later has it)");
        return NULL;
    }
    args = json_object_new ();
    json_object_set_string_member (args, "id", job_id);
    json_object_set_string_member (args, "type", "mirror");
    json_object_set_string_member (args, "copy-mode", "write-blocking");
    return args;
}
