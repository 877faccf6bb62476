#define G_LOG_DOMAIN "vmr-cluster"

#include "etcd-client.h"

#include <libsoup/soup.h>
#include <string.h>

#include "vmr-error.h"
#include "vmr-json.h"

/* a unary call that takes longer is taken for a lost endpoint */
#define CALL_TIMEOUT_S 3
/* the watches one daemon can hold at once, each on a connection of its own */
#define WATCH_CONNECTIONS 16
/* the longest message of a watch's stream, or reply, that is read */
#define MAX_MESSAGE_BYTES (4 * 1024 * 1024)
#define READ_CHUNK        65536

struct _VmrEtcdClient {
    GObject parent_instance;

    GStrv endpoints;
    guint current;                /* index of the endpoint that answered last */
    SoupSession *session;         /* unary calls, with a timeout */
    SoupSession *watch_session;   /* long-lived streams, no timeout */
    GTlsCertificate *certificate; /* this client's, or NULL */
    guint64 requests;
};

G_DEFINE_FINAL_TYPE (VmrEtcdClient, vmr_etcd_client, G_TYPE_OBJECT)

static void
vmr_etcd_client_finalize (GObject *object)
{
    VmrEtcdClient *self = VMR_ETCD_CLIENT (object);

    g_strfreev (self->endpoints);
    g_clear_object (&self->session);
    g_clear_object (&self->watch_session);
    g_clear_object (&self->certificate);
    G_OBJECT_CLASS (vmr_etcd_client_parent_class)->finalize (object);
}

static void
vmr_etcd_client_class_init (VmrEtcdClientClass *klass)
{
    G_OBJECT_CLASS (klass)->finalize = vmr_etcd_client_finalize;
}

static void
vmr_etcd_client_init (VmrEtcdClient *self)
{
}

VmrEtcdClient *
vmr_etcd_client_new (const gchar *const *endpoints, const gchar *tls_dir, GError **error)
{
    g_autoptr (VmrEtcdClient) self = g_object_new (VMR_TYPE_ETCD_CLIENT, NULL);
    g_autoptr (GTlsDatabase) database = NULL;

    if (tls_dir != NULL) {
        g_autofree gchar *ca = g_build_filename (tls_dir, "ca.pem", NULL);
        g_autofree gchar *cert = g_build_filename (tls_dir, "cert.pem", NULL);
        g_autofree gchar *key = g_build_filename (tls_dir, "key.pem", NULL);

        database = g_tls_file_database_new (ca, error);
        if (database == NULL) {
            g_prefix_error (error, "etcd's CA %s: ", ca);
            return NULL;
        }
        self->certificate = g_tls_certificate_new_from_files (cert, key, error);
        if (self->certificate == NULL) {
            g_prefix_error (error, "the client certificate %s: ", cert);
            return NULL;
        }
    }
    self->endpoints = g_strdupv ((gchar **) endpoints);
    self->session = soup_session_new_with_options ("timeout", CALL_TIMEOUT_S, "idle-timeout", 60,
                                                   "user-agent", "virt-mirrord", NULL);
    /* each watch holds its connection for as long as it lasts: libsoup's default of 2 per
     * host queued the third watch (slots, evacuations, budgets, a slot's holder) behind the
     * others for good, so its events never came */
    self->watch_session = soup_session_new_with_options (
        "timeout", 0, "idle-timeout", 0, "max-conns", WATCH_CONNECTIONS, "max-conns-per-host",
        WATCH_CONNECTIONS, "user-agent", "virt-mirrord", NULL);
    if (database != NULL) {
        soup_session_set_tls_database (self->session, database);
        soup_session_set_tls_database (self->watch_session, database);
    }
    return g_steal_pointer (&self);
}

guint64
vmr_etcd_client_get_requests (VmrEtcdClient *self)
{
    return self->requests;
}

const gchar *
vmr_etcd_client_get_endpoint (VmrEtcdClient *self)
{
    return self->endpoints[self->current];
}

static SoupMessage *
new_message (VmrEtcdClient *self, guint endpoint, const gchar *method, GBytes *body)
{
    g_autofree gchar *url = g_strdup_printf ("%s/v3/%s", self->endpoints[endpoint], method);
    SoupMessage *message = soup_message_new ("POST", url);

    soup_message_set_request_body_from_bytes (message, "application/json", body);
    if (self->certificate != NULL)
        soup_message_set_tls_client_certificate (message, self->certificate);
    self->requests++;
    return message;
}

/* the object of a reply's JSON, or NULL with @error */
static JsonObject *
parse_object (const gchar *text, gsize length, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    JsonObject *root;

    if (!vmr_json_parser_load (parser, text, (gssize) length, error)) {
        g_prefix_error (error, "etcd's reply: ");
        return NULL;
    }
    root = vmr_json_node_object (json_parser_get_root (parser));
    if (root == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                             "etcd's reply is not a JSON object");
        return NULL;
    }
    return json_object_ref (root);
}

/* ---- unary calls ---- */

typedef struct {
    gchar *method;
    GBytes *body;
    guint endpoint; /* being tried */
    guint tried;    /* endpoints tried so far */
    gchar *last_error;
    SoupMessage *message;
    GInputStream *stream; /* the reply being read */
    GByteArray *reply;    /* what came of it so far, never over MAX_MESSAGE_BYTES */
} Call;

static void
call_free (Call *call)
{
    g_free (call->method);
    g_bytes_unref (call->body);
    g_free (call->last_error);
    g_clear_object (&call->message);
    g_clear_object (&call->stream);
    g_clear_pointer (&call->reply, g_byte_array_unref);
    g_free (call);
}

static void call_send (GTask *task);

/* @task's endpoint cannot serve (@reason, consumed): the next one */
static void
call_next_endpoint (GTask *task, gchar *reason)
{
    VmrEtcdClient *self = g_task_get_source_object (task);
    Call *call = g_task_get_task_data (task);

    g_free (call->last_error);
    call->last_error = reason;
    g_debug ("etcd %s: %s: %s", self->endpoints[call->endpoint], call->method, call->last_error);
    g_clear_object (&call->stream);
    g_clear_pointer (&call->reply, g_byte_array_unref);
    call->endpoint = (call->endpoint + 1) % g_strv_length (self->endpoints);
    call_send (task);
}

/* @task ends with @error (consumed) */
static void
call_fail (GTask *task, GError *error)
{
    g_task_return_error (task, error);
    g_object_unref (task);
}

/* the whole reply was read: etcd's object, or its error */
static void
call_finish (GTask *task)
{
    VmrEtcdClient *self = g_task_get_source_object (task);
    Call *call = g_task_get_task_data (task);
    guint status = soup_message_get_status (call->message);
    g_autoptr (JsonObject) object = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *message;

    self->current = call->endpoint;
    object = parse_object ((const gchar *) call->reply->data, call->reply->len, &error);
    if (object == NULL) {
        call_fail (task, g_steal_pointer (&error));
        return;
    }
    if (status != SOUP_STATUS_OK) {
        message = vmr_json_get_string (object, "message") != NULL
                      ? vmr_json_get_string (object, "message")
                      : vmr_json_get_string (object, "error");
        call_fail (task, g_error_new (VMR_ERROR, VMR_ERROR_FAILED, "etcd %s: %s (HTTP %u)",
                                      call->method, message != NULL ? message : "", status));
        return;
    }
    g_task_return_pointer (task, g_steal_pointer (&object), (GDestroyNotify) json_object_unref);
    g_object_unref (task);
}

/* a part of the reply: kept while the whole stays under the cap, which is never read past */
static void
call_read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    Call *call = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GBytes) chunk
        = g_input_stream_read_bytes_finish (G_INPUT_STREAM (source), result, &error);

    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        call_fail (task, g_steal_pointer (&error));
        return;
    }
    if (chunk == NULL) {
        call_next_endpoint (task, g_strdup (error->message));
        return;
    }
    if (g_bytes_get_size (chunk) == 0) {
        call_finish (task);
        return;
    }
    if (call->reply->len + g_bytes_get_size (chunk) > MAX_MESSAGE_BYTES) {
        call_next_endpoint (task, g_strdup_printf ("a reply over %d bytes", MAX_MESSAGE_BYTES));
        return;
    }
    g_byte_array_append (call->reply, g_bytes_get_data (chunk, NULL),
                         (guint) g_bytes_get_size (chunk));
    g_input_stream_read_bytes_async (call->stream, READ_CHUNK, G_PRIORITY_DEFAULT,
                                     g_task_get_cancellable (task), call_read_cb, task);
}

static void
call_sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    Call *call = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GInputStream) stream
        = soup_session_send_finish (SOUP_SESSION (source), result, &error);
    guint status = soup_message_get_status (call->message);
    goffset length = soup_message_headers_get_content_length (
        soup_message_get_response_headers (call->message));

    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        call_fail (task, g_steal_pointer (&error));
        return;
    }
    if (stream == NULL || status >= 500) {
        call_next_endpoint (task, error != NULL ? g_strdup (error->message)
                                                : g_strdup_printf ("HTTP %u", status));
        return;
    }
    /* a reply that says it is too long is not read at all */
    if (length > MAX_MESSAGE_BYTES) {
        call_next_endpoint (task,
                            g_strdup_printf ("a reply of %" G_GOFFSET_FORMAT " bytes, over %d",
                                             length, MAX_MESSAGE_BYTES));
        return;
    }
    call->stream = g_steal_pointer (&stream);
    call->reply = g_byte_array_new ();
    g_input_stream_read_bytes_async (call->stream, READ_CHUNK, G_PRIORITY_DEFAULT,
                                     g_task_get_cancellable (task), call_read_cb, task);
}

/* sends @task's call to its endpoint; @task (consumed) is returned when it ends */
static void
call_send (GTask *task)
{
    VmrEtcdClient *self = g_task_get_source_object (task);
    Call *call = g_task_get_task_data (task);

    if (call->tried == g_strv_length (self->endpoints)) {
        call_fail (task, g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                      "no etcd endpoint answered (last: %s)", call->last_error));
        return;
    }
    call->tried++;
    g_clear_object (&call->message);
    call->message = new_message (self, call->endpoint, call->method, call->body);
    soup_session_send_async (self->session, call->message, G_PRIORITY_DEFAULT,
                             g_task_get_cancellable (task), call_sent_cb, task);
}

static GBytes *
body_bytes (JsonObject *body)
{
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), body);
    gsize length = 0;
    gchar *text = json_to_string (node, FALSE);

    length = strlen (text);
    return g_bytes_new_take (text, length);
}

void
vmr_etcd_client_call_async (VmrEtcdClient *self, const gchar *method, JsonObject *body,
                            GCancellable *cancellable, GAsyncReadyCallback callback,
                            gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    Call *call = g_new0 (Call, 1);

    call->method = g_strdup (method);
    call->body = body_bytes (body);
    json_object_unref (body);
    call->endpoint = self->current;
    g_task_set_task_data (task, call, (GDestroyNotify) call_free);
    call_send (task);
}

JsonObject *
vmr_etcd_client_call_finish (VmrEtcdClient *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- watches ---- */

struct _VmrEtcdWatch {
    VmrEtcdClient *client;
    GBytes *body;
    GCancellable *cancellable;
    SoupMessage *message;
    GInputStream *stream;
    GString *pending; /* a message not yet ended by its newline */
    VmrEtcdWatchFunc on_result;
    VmrEtcdWatchClosedFunc on_closed;
    gpointer user_data;
    guint tried;
    gchar *last_error;
};

void
vmr_etcd_watch_free (VmrEtcdWatch *watch)
{
    if (watch == NULL)
        return;
    /* the callbacks under way see the cancellation and free nothing */
    g_cancellable_cancel (watch->cancellable);
    watch->on_result = NULL;
    watch->on_closed = NULL;
}

static void
watch_destroy (VmrEtcdWatch *watch)
{
    g_object_unref (watch->client);
    g_bytes_unref (watch->body);
    g_object_unref (watch->cancellable);
    g_clear_object (&watch->message);
    g_clear_object (&watch->stream);
    g_string_free (watch->pending, TRUE);
    g_free (watch->last_error);
    g_free (watch);
}

/* ends @watch: tells its owner, unless it was freed, then frees it */
static void
watch_close (VmrEtcdWatch *watch, GError *error)
{
    if (watch->on_closed != NULL && !g_cancellable_is_cancelled (watch->cancellable))
        watch->on_closed (error, watch->user_data);
    g_clear_error (&error);
    watch_destroy (watch);
}

/* hands every whole line of @watch->pending to its owner */
static gboolean
watch_dispatch (VmrEtcdWatch *watch, GError **error)
{
    gchar *newline;

    while ((newline = memchr (watch->pending->str, '\n', watch->pending->len)) != NULL) {
        gsize length = (gsize) (newline - watch->pending->str);
        g_autoptr (JsonObject) message = NULL;
        JsonObject *result;

        if (length > 0) {
            message = parse_object (watch->pending->str, length, error);
            if (message == NULL)
                return FALSE;
            if (json_object_has_member (message, "error")) {
                const gchar *reason
                    = vmr_json_get_string (vmr_json_get_object (message, "error"), "message");

                g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "etcd's watch ended: %s",
                             reason != NULL ? reason : "an error");
                return FALSE;
            }
            result = vmr_json_get_object (message, "result");
            if (result != NULL && watch->on_result != NULL)
                watch->on_result (result, watch->user_data);
            if (g_cancellable_is_cancelled (watch->cancellable))
                return TRUE;
        }
        g_string_erase (watch->pending, 0, (gssize) length + 1);
    }
    if (watch->pending->len > MAX_MESSAGE_BYTES) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "a message of etcd's watch over %d bytes", MAX_MESSAGE_BYTES);
        return FALSE;
    }
    return TRUE;
}

static void
watch_read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    VmrEtcdWatch *watch = user_data;
    GError *error = NULL;
    g_autoptr (GBytes) chunk
        = g_input_stream_read_bytes_finish (G_INPUT_STREAM (source), result, &error);

    if (chunk == NULL || g_cancellable_is_cancelled (watch->cancellable)) {
        watch_close (watch, error);
        return;
    }
    if (g_bytes_get_size (chunk) == 0) {
        watch_close (watch, g_error_new_literal (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                                 "etcd closed the watch"));
        return;
    }
    g_string_append_len (watch->pending, g_bytes_get_data (chunk, NULL),
                         (gssize) g_bytes_get_size (chunk));
    if (!watch_dispatch (watch, &error) || g_cancellable_is_cancelled (watch->cancellable)) {
        watch_close (watch, error);
        return;
    }
    g_input_stream_read_bytes_async (watch->stream, READ_CHUNK, G_PRIORITY_DEFAULT,
                                     watch->cancellable, watch_read_cb, watch);
}

static void watch_send (VmrEtcdWatch *watch);

static void
watch_sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    VmrEtcdWatch *watch = user_data;
    GError *error = NULL;
    GInputStream *stream = soup_session_send_finish (SOUP_SESSION (source), result, &error);
    guint status = soup_message_get_status (watch->message);

    if (g_cancellable_is_cancelled (watch->cancellable)) {
        g_clear_object (&stream);
        watch_close (watch, error);
        return;
    }
    if (stream == NULL || status != SOUP_STATUS_OK) {
        VmrEtcdClient *client = watch->client;

        g_free (watch->last_error);
        watch->last_error
            = error != NULL ? g_strdup (error->message) : g_strdup_printf ("HTTP %u", status);
        g_clear_error (&error);
        g_clear_object (&stream);
        client->current = (client->current + 1) % g_strv_length (client->endpoints);
        watch_send (watch);
        return;
    }
    watch->stream = stream;
    g_input_stream_read_bytes_async (watch->stream, READ_CHUNK, G_PRIORITY_DEFAULT,
                                     watch->cancellable, watch_read_cb, watch);
}

static void
watch_send (VmrEtcdWatch *watch)
{
    VmrEtcdClient *client = watch->client;

    if (watch->tried == g_strv_length (client->endpoints)) {
        watch_close (watch,
                     g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                  "no etcd endpoint took the watch (last: %s)", watch->last_error));
        return;
    }
    watch->tried++;
    g_clear_object (&watch->message);
    watch->message = new_message (client, client->current, "watch", watch->body);
    soup_session_send_async (client->watch_session, watch->message, G_PRIORITY_DEFAULT,
                             watch->cancellable, watch_sent_cb, watch);
}

VmrEtcdWatch *
vmr_etcd_client_watch (VmrEtcdClient *self, JsonObject *create_request, VmrEtcdWatchFunc on_result,
                       VmrEtcdWatchClosedFunc on_closed, gpointer user_data)
{
    VmrEtcdWatch *watch = g_new0 (VmrEtcdWatch, 1);
    g_autoptr (JsonObject) request = json_object_new ();

    json_object_set_object_member (request, "create_request", create_request);
    watch->client = g_object_ref (self);
    watch->body = body_bytes (request);
    watch->cancellable = g_cancellable_new ();
    watch->pending = g_string_new (NULL);
    watch->on_result = on_result;
    watch->on_closed = on_closed;
    watch->user_data = user_data;
    watch_send (watch);
    return watch;
}

/* ---- keys ---- */

gchar *
vmr_etcd_encode (const gchar *text)
{
    return g_base64_encode ((const guchar *) text, strlen (text));
}

gchar *
vmr_etcd_decode (const gchar *encoded)
{
    gsize length = 0;
    guchar *bytes;
    gchar *text;

    if (encoded == NULL)
        return NULL;
    bytes = g_base64_decode (encoded, &length);
    text = g_strndup ((const gchar *) bytes, length);
    g_free (bytes);
    if (strlen (text) != length || !g_utf8_validate (text, -1, NULL)) {
        g_free (text);
        return NULL;
    }
    return text;
}

gchar *
vmr_etcd_prefix_end (const gchar *prefix)
{
    g_autofree gchar *end = g_strdup (prefix);
    gsize length = strlen (end);

    /* the prefixes here are ASCII and end in '/': the next byte value */
    g_assert (length > 0 && (guchar) end[length - 1] < 0x7f);
    end[length - 1]++;
    return vmr_etcd_encode (end);
}

/* an int64 of etcd's JSON, which spells them as strings; 0 when missing, as proto3 leaves it */
gint64
vmr_etcd_json_int64 (JsonObject *object, const gchar *name)
{
    const gchar *text = vmr_json_get_string (object, name);

    if (text != NULL)
        return g_ascii_strtoll (text, NULL, 10);
    return vmr_json_int_or (object, name, 0);
}

JsonObject *
vmr_etcd_kv_object (JsonObject *kv)
{
    g_autofree gchar *value = vmr_etcd_decode (vmr_json_get_string (kv, "value"));
    g_autoptr (JsonParser) parser = json_parser_new ();
    JsonObject *object;

    if (value == NULL || !vmr_json_parser_load (parser, value, -1, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
        return NULL;
    object = json_object_ref (json_node_get_object (json_parser_get_root (parser)));
    json_object_set_int_member (object, "revision", vmr_etcd_json_int64 (kv, "create_revision"));
    json_object_set_string_member (
        object, "lease",
        vmr_json_get_string (kv, "lease") != NULL ? vmr_json_get_string (kv, "lease") : "0");
    return object;
}
