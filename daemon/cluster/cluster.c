#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster.h"

#include <json-glib/json-glib.h>

#include "cluster-queue.h"
#include "etcd-client.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* a watch that ends is opened again at once, unless it ended this soon after the last time */
#define RESYNC_MIN_INTERVAL_US G_USEC_PER_SEC

/* a job of this daemon that has asked for a slot, or holds one */
typedef struct {
    gchar *job;
    gchar *key; /* its queue key */
    gchar *source;
    gchar *destination;
    gboolean started;    /* it holds a slot: its bulk copy runs */
    gboolean registered; /* its key is in etcd under the current lease, as it stands */
    gboolean in_flight;  /* a put or a transaction on its key is on its way */
} LocalJob;

struct _VmrCluster {
    GObject parent_instance;

    VmrClusterConfig *config;
    VmrEtcdClient *client;
    GCancellable *cancellable;
    gchar *prefix;        /* /virt-mirror/NAME/queue/ */
    gchar *prefix_b64;    /* ... base64 */
    gchar *prefix_end;    /* the range's end, base64 */
    gchar *lease_id;      /* NULL: no lease */
    gboolean available;   /* the lease is alive, what runs is registered, the watch is open */
    gboolean syncing;     /* a registration of what runs, a read and a watch are on their way */
    guint sync_pending;   /* puts of the sync not yet answered */
    gboolean sync_failed; /* ... one of them failed */
    gint64 last_sync;     /* when the last sync started, monotonic µs */
    guint keepalive_source;
    gboolean keepalive_in_flight;
    GHashTable *local;     /* job id -> LocalJob * */
    GHashTable *released;  /* queue keys to delete once etcd answers */
    GHashTable *published; /* job id -> its summary as published, JSON text */
    VmrClusterQueue *view; /* every host's queue keys */
    gint64 view_revision;  /* etcd's revision the view stands at */
    VmrEtcdWatch *watch;
};

G_DEFINE_FINAL_TYPE (VmrCluster, vmr_cluster, G_TYPE_OBJECT)

enum {
    SIGNAL_CHANGED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
local_job_free (LocalJob *local)
{
    g_free (local->job);
    g_free (local->key);
    g_free (local->source);
    g_free (local->destination);
    g_free (local);
}

static void
vmr_cluster_dispose (GObject *object)
{
    VmrCluster *self = VMR_CLUSTER (object);

    g_cancellable_cancel (self->cancellable);
    g_clear_handle_id (&self->keepalive_source, g_source_remove);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    G_OBJECT_CLASS (vmr_cluster_parent_class)->dispose (object);
}

static void
vmr_cluster_finalize (GObject *object)
{
    VmrCluster *self = VMR_CLUSTER (object);

    vmr_cluster_config_free (self->config);
    g_clear_object (&self->client);
    g_clear_object (&self->cancellable);
    g_free (self->prefix);
    g_free (self->prefix_b64);
    g_free (self->prefix_end);
    g_free (self->lease_id);
    g_hash_table_unref (self->local);
    g_hash_table_unref (self->released);
    g_hash_table_unref (self->published);
    vmr_cluster_queue_free (self->view);
    G_OBJECT_CLASS (vmr_cluster_parent_class)->finalize (object);
}

static void
vmr_cluster_class_init (VmrClusterClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->dispose = vmr_cluster_dispose;
    object_class->finalize = vmr_cluster_finalize;
    signals[SIGNAL_CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
vmr_cluster_init (VmrCluster *self)
{
    self->cancellable = g_cancellable_new ();
    self->local
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) local_job_free);
    self->released = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    self->published = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->view = vmr_cluster_queue_new ();
}

static void
emit_changed (VmrCluster *self)
{
    g_signal_emit (self, signals[SIGNAL_CHANGED], 0);
}

static void
set_unavailable (VmrCluster *self, const GError *error)
{
    if (self->available)
        g_warning ("cluster %s: etcd lost (%s): no new copy starts until it is back",
                   self->config->name, error != NULL ? error->message : "its watch ended");
    self->available = FALSE;
    emit_changed (self);
}

/* ---- requests ---- */

/* what a call's reply goes to: @reply NULL with @error when it failed; never after dispose */
typedef void (*ReplyFunc) (VmrCluster *self, JsonObject *reply, const GError *error,
                           gpointer user_data);

typedef struct {
    VmrCluster *self; /* a reference */
    ReplyFunc func;
    gpointer data;
    GDestroyNotify destroy;
} Call;

static void
call_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    Call *call = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) reply
        = vmr_etcd_client_call_finish (VMR_ETCD_CLIENT (source), result, &error);

    if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        call->func (call->self, reply, error, call->data);
    if (call->destroy != NULL)
        call->destroy (call->data);
    g_object_unref (call->self);
    g_free (call);
}

/* POSTs @body (consumed) to etcd's /v3/@method; @func gets the reply, then @destroy @data */
static void
cluster_call (VmrCluster *self, const gchar *method, JsonObject *body, ReplyFunc func,
              gpointer data, GDestroyNotify destroy)
{
    Call *call = g_new0 (Call, 1);

    call->self = g_object_ref (self);
    call->func = func;
    call->data = data;
    call->destroy = destroy;
    vmr_etcd_client_call_async (self->client, method, body, self->cancellable, call_done_cb, call);
}

static gchar *
value_of (VmrCluster *self, const LocalJob *local)
{
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) root = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "host");
    json_builder_add_string_value (builder, self->config->host);
    json_builder_set_member_name (builder, "job");
    json_builder_add_string_value (builder, local->job);
    json_builder_set_member_name (builder, "source");
    json_builder_add_string_value (builder, local->source);
    json_builder_set_member_name (builder, "destination");
    json_builder_add_string_value (builder, local->destination);
    json_builder_set_member_name (builder, "started");
    json_builder_add_boolean_value (builder, local->started);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    return json_to_string (root, FALSE);
}

/* a PutRequest of @local's key and value under the lease */
static JsonObject *
put_request (VmrCluster *self, const LocalJob *local)
{
    JsonObject *put = json_object_new ();
    g_autofree gchar *value = value_of (self, local);

    json_object_set_string_member (put, "key", local->key);
    json_object_set_string_member (put, "value", value);
    json_object_set_string_member (put, "lease", self->lease_id);
    return put;
}

/* a PutRequest of @key and @value (text) under the lease, in base64 */
static JsonObject *
put_text (VmrCluster *self, const gchar *key, const gchar *value)
{
    JsonObject *put = json_object_new ();
    g_autofree gchar *encoded_key = vmr_etcd_encode (key);
    g_autofree gchar *encoded_value = vmr_etcd_encode (value);

    json_object_set_string_member (put, "key", encoded_key);
    json_object_set_string_member (put, "value", encoded_value);
    json_object_set_string_member (put, "lease", self->lease_id);
    return put;
}

/* where the daemon publishes @job (NULL: itself, the member key) */
static gchar *
published_key (VmrCluster *self, const gchar *job)
{
    if (job == NULL)
        return g_strdup_printf ("/virt-mirror/%s/members/%s", self->config->name,
                                self->config->host);
    return g_strdup_printf ("/virt-mirror/%s/jobs/%s/%s", self->config->name, self->config->host,
                            job);
}

/* @put with its key and value in base64, as etcd takes them */
static JsonObject *
encode_put (JsonObject *put)
{
    g_autofree gchar *key = vmr_etcd_encode (json_object_get_string_member (put, "key"));
    g_autofree gchar *value = vmr_etcd_encode (json_object_get_string_member (put, "value"));

    json_object_set_string_member (put, "key", key);
    json_object_set_string_member (put, "value", value);
    return put;
}

/* the copies of this daemon that hold a slot; the strings belong to the jobs */
static GArray *
own_copies (VmrCluster *self)
{
    GArray *own = g_array_new (FALSE, FALSE, sizeof (VmrQueueCopy));
    GHashTableIter iter;
    LocalJob *local;

    g_hash_table_iter_init (&iter, self->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        VmrQueueCopy copy = { local->key, local->source, local->destination };

        if (local->started)
            g_array_append_val (own, copy);
    }
    return own;
}

/* ---- connecting: the lease, what runs, the view, the watch ---- */

static void start_sync (VmrCluster *self);

static void
watch_result_cb (JsonObject *result, gpointer user_data)
{
    VmrCluster *self = user_data;
    JsonArray *events = vmr_json_get_array (result, "events");
    gint64 revision = vmr_etcd_json_revision (result);

    if (vmr_json_bool_or (result, "canceled", FALSE)) {
        /* compacted past the view: read it again */
        g_clear_pointer (&self->watch, vmr_etcd_watch_free);
        set_unavailable (self, NULL);
        start_sync (self);
        return;
    }
    for (guint i = 0; events != NULL && i < json_array_get_length (events); i++) {
        JsonNode *node = json_array_get_element (events, i);

        if (JSON_NODE_HOLDS_OBJECT (node))
            vmr_cluster_queue_apply_event (self->view, json_node_get_object (node));
    }
    if (revision > self->view_revision)
        self->view_revision = revision;
    if (events != NULL && json_array_get_length (events) > 0)
        emit_changed (self);
}

static void
watch_closed_cb (const GError *error, gpointer user_data)
{
    VmrCluster *self = user_data;

    /* the watch frees itself after this */
    self->watch = NULL;
    set_unavailable (self, error);
    if (!self->syncing && g_get_monotonic_time () - self->last_sync >= RESYNC_MIN_INTERVAL_US)
        start_sync (self);
}

static void
range_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    JsonArray *kvs;
    JsonObject *create;
    g_autofree gchar *start = NULL;

    self->syncing = FALSE;
    if (reply == NULL) {
        set_unavailable (self, error);
        return;
    }
    vmr_cluster_queue_clear (self->view);
    kvs = vmr_json_get_array (reply, "kvs");
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++) {
        JsonNode *node = json_array_get_element (kvs, i);

        if (JSON_NODE_HOLDS_OBJECT (node))
            vmr_cluster_queue_put (self->view, json_node_get_object (node));
    }
    self->view_revision = vmr_etcd_json_revision (reply);
    start = g_strdup_printf ("%" G_GINT64_FORMAT, self->view_revision + 1);
    create = json_object_new ();
    json_object_set_string_member (create, "key", self->prefix_b64);
    json_object_set_string_member (create, "range_end", self->prefix_end);
    json_object_set_string_member (create, "start_revision", start);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    self->watch
        = vmr_etcd_client_watch (self->client, create, watch_result_cb, watch_closed_cb, self);
    if (!self->available)
        g_message ("cluster %s: registered at %s as %s, %u queue keys", self->config->name,
                   vmr_etcd_client_get_endpoint (self->client), self->config->host,
                   vmr_cluster_queue_size (self->view));
    self->available = TRUE;
    emit_changed (self);
}

static void
read_view (VmrCluster *self)
{
    JsonObject *range = json_object_new ();

    json_object_set_string_member (range, "key", self->prefix_b64);
    json_object_set_string_member (range, "range_end", self->prefix_end);
    cluster_call (self, "kv/range", range, range_done_cb, NULL, NULL);
}

/* one put or delete of the sync answered */
static void
sync_step_done (VmrCluster *self, const GError *error)
{
    if (error != NULL && !self->sync_failed) {
        self->sync_failed = TRUE;
        g_debug ("cluster sync: %s", error->message);
    }
    if (--self->sync_pending > 0)
        return;
    if (self->sync_failed) {
        self->syncing = FALSE;
        set_unavailable (self, error);
        return;
    }
    read_view (self);
}

/* a put or a delete of the sync */
static void
sync_step_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    sync_step_done (self, error);
}

static void
delete_key (VmrCluster *self, const gchar *key, ReplyFunc func)
{
    JsonObject *request = json_object_new ();
    g_autofree gchar *encoded = vmr_etcd_encode (key);

    json_object_set_string_member (request, "key", encoded);
    cluster_call (self, "kv/deleterange", request, func, NULL, NULL);
}

/*
 * Registers again, under the lease, every copy that runs here, and deletes
 * the keys of jobs released meanwhile, then reads the view and watches it:
 * only then may a new slot be taken.
 */
static void
start_sync (VmrCluster *self)
{
    GHashTableIter iter;
    LocalJob *local;
    const gchar *key;
    const gchar *value;

    if (self->syncing || self->lease_id == NULL)
        return;
    self->syncing = TRUE;
    self->sync_failed = FALSE;
    self->sync_pending = 1; /* this function's own, so that nothing completes under it */
    self->last_sync = g_get_monotonic_time ();
    g_hash_table_iter_init (&iter, self->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        if (!local->started)
            continue;
        self->sync_pending++;
        local->registered = TRUE;
        cluster_call (self, "kv/put", encode_put (put_request (self, local)), sync_step_cb, NULL,
                      NULL);
    }
    {
        g_autofree gchar *member_key = published_key (self, NULL);
        g_autofree gchar *member = g_strdup_printf (
            "{\"host\":\"%s\",\"lease-ttl\":%" G_GINT64_FORMAT ",\"since\":%" G_GINT64_FORMAT "}",
            self->config->host, self->config->lease_ttl_us / G_USEC_PER_SEC, g_get_real_time ());

        self->sync_pending++;
        cluster_call (self, "kv/put", put_text (self, member_key, member), sync_step_cb, NULL,
                      NULL);
    }
    g_hash_table_iter_init (&iter, self->published);
    while (g_hash_table_iter_next (&iter, (gpointer *) &key, (gpointer *) &value)) {
        g_autofree gchar *job_key = published_key (self, key);

        self->sync_pending++;
        cluster_call (self, "kv/put", put_text (self, job_key, value), sync_step_cb, NULL, NULL);
    }
    g_hash_table_iter_init (&iter, self->released);
    while (g_hash_table_iter_next (&iter, (gpointer *) &key, NULL)) {
        self->sync_pending++;
        delete_key (self, key, sync_step_cb);
    }
    g_hash_table_remove_all (self->released);
    sync_step_done (self, NULL);
}

static void
grant_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    GHashTableIter iter;
    LocalJob *local;

    self->syncing = FALSE;
    if (reply == NULL || vmr_json_get_string (reply, "ID") == NULL) {
        g_debug ("cluster: no lease: %s", error != NULL ? error->message : "no ID in the reply");
        set_unavailable (self, error);
        return;
    }
    g_free (self->lease_id);
    self->lease_id = g_strdup (vmr_json_get_string (reply, "ID"));
    /* the keys of the old lease, if any are left, are taken over by the puts */
    g_hash_table_iter_init (&iter, self->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local))
        local->registered = FALSE;
    start_sync (self);
}

static void
grant_lease (VmrCluster *self)
{
    JsonObject *grant = json_object_new ();

    self->syncing = TRUE;
    json_object_set_int_member (grant, "TTL", self->config->lease_ttl_us / G_USEC_PER_SEC);
    cluster_call (self, "lease/grant", grant, grant_done_cb, NULL, NULL);
}

static void
keepalive_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    JsonObject *answer = reply != NULL ? vmr_json_get_object (reply, "result") : NULL;

    self->keepalive_in_flight = FALSE;
    if (reply == NULL) {
        set_unavailable (self, error);
        return;
    }
    if (answer == NULL || vmr_etcd_json_int64 (answer, "TTL") <= 0) {
        /* the lease expired while etcd could not be reached: a new one, and register again */
        g_warning ("cluster %s: the lease expired: registering again", self->config->name);
        g_clear_pointer (&self->lease_id, g_free);
        self->available = FALSE;
        emit_changed (self);
        grant_lease (self);
        return;
    }
    if (!self->available && !self->syncing)
        start_sync (self);
}

static gboolean
keepalive_cb (gpointer user_data)
{
    VmrCluster *self = user_data;
    JsonObject *request;

    if (self->lease_id == NULL) {
        if (!self->syncing)
            grant_lease (self);
        return G_SOURCE_CONTINUE;
    }
    if (self->keepalive_in_flight)
        return G_SOURCE_CONTINUE;
    self->keepalive_in_flight = TRUE;
    request = json_object_new ();
    json_object_set_string_member (request, "ID", self->lease_id);
    cluster_call (self, "lease/keepalive", request, keepalive_done_cb, NULL, NULL);
    return G_SOURCE_CONTINUE;
}

VmrCluster *
vmr_cluster_new (const VmrClusterConfig *config, GError **error)
{
    g_autoptr (VmrCluster) self = g_object_new (VMR_TYPE_CLUSTER, NULL);
    guint interval_ms = (guint) (config->lease_ttl_us / 1000 / 3);

    self->client
        = vmr_etcd_client_new ((const gchar *const *) config->endpoints, config->tls_creds, error);
    if (self->client == NULL)
        return NULL;
    self->config = vmr_cluster_config_copy (config);
    self->prefix = g_strdup_printf ("/virt-mirror/%s/queue/", config->name);
    self->prefix_b64 = vmr_etcd_encode (self->prefix);
    self->prefix_end = vmr_etcd_prefix_end (self->prefix);
    self->keepalive_source = g_timeout_add (interval_ms, keepalive_cb, self);
    grant_lease (self);
    return g_steal_pointer (&self);
}

const VmrClusterConfig *
vmr_cluster_get_config (VmrCluster *self)
{
    return self->config;
}

gboolean
vmr_cluster_is_available (VmrCluster *self)
{
    return self->available;
}

guint64
vmr_cluster_get_requests (VmrCluster *self)
{
    return vmr_etcd_client_get_requests (self->client);
}

/* ---- jobs ---- */

static LocalJob *
local_job (VmrCluster *self, const gchar *job, const gchar *source, const gchar *destination)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);

    if (local != NULL)
        return local;
    local = g_new0 (LocalJob, 1);
    local->job = g_strdup (job);
    local->key = g_strdup_printf ("%s%s/%s", self->prefix, self->config->host, job);
    local->source = g_strdup (source);
    local->destination = g_strdup (destination);
    g_hash_table_remove (self->released, local->key);
    g_hash_table_insert (self->local, local->job, local);
    return local;
}

typedef struct {
    gchar *job;
    gchar *lease_id; /* the request's */
} KeyRequest;

static KeyRequest *
key_request_new (VmrCluster *self, LocalJob *local)
{
    KeyRequest *request = g_new0 (KeyRequest, 1);

    request->job = g_strdup (local->job);
    request->lease_id = g_strdup (self->lease_id);
    local->in_flight = TRUE;
    return request;
}

static void
key_request_free (KeyRequest *request)
{
    g_free (request->job);
    g_free (request->lease_id);
    g_free (request);
}

/*
 * The job of @request, answered with @reply, if it still asks under the
 * lease the request was made with; NULL when not, or when the request
 * failed (etcd is then unavailable).
 */
static LocalJob *
key_request_answered (VmrCluster *self, KeyRequest *request, JsonObject *reply, const GError *error)
{
    LocalJob *local = g_hash_table_lookup (self->local, request->job);

    if (local != NULL)
        local->in_flight = FALSE;
    if (reply == NULL) {
        set_unavailable (self, error);
        return NULL;
    }
    if (local == NULL || g_strcmp0 (self->lease_id, request->lease_id) != 0)
        return NULL;
    return local;
}

static void
register_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    LocalJob *local = key_request_answered (self, user_data, reply, error);

    if (local == NULL)
        return;
    local->registered = TRUE;
    /* the watch brings the key into the view, with its place in the queue: maybe already */
    if (vmr_cluster_queue_contains (self->view, local->key))
        emit_changed (self);
}

static void
take_slot_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    LocalJob *local = key_request_answered (self, user_data, reply, error);

    if (local == NULL)
        return;
    if (!vmr_json_bool_or (reply, "succeeded", FALSE)) {
        /* the queue moved since the view: the watch brings it, and the next pass decides */
        g_debug ("cluster: %s: the queue changed, deciding again", local->job);
        if (vmr_etcd_json_revision (reply) <= self->view_revision)
            emit_changed (self);
        return;
    }
    g_debug ("cluster: %s took a slot", local->job);
    local->started = TRUE;
    emit_changed (self);
}

/* a transaction: mark @local started if no queue key changed since the view */
static void
take_slot (VmrCluster *self, LocalJob *local)
{
    JsonObject *txn = json_object_new ();
    JsonArray *compare = json_array_new ();
    JsonArray *success = json_array_new ();
    JsonObject *condition = json_object_new ();
    JsonObject *operation = json_object_new ();
    g_autofree gchar *revision = g_strdup_printf ("%" G_GINT64_FORMAT, self->view_revision + 1);
    JsonObject *put;

    local->started = TRUE;
    put = encode_put (put_request (self, local));
    local->started = FALSE;
    json_object_set_string_member (condition, "key", self->prefix_b64);
    json_object_set_string_member (condition, "range_end", self->prefix_end);
    json_object_set_string_member (condition, "target", "MOD");
    json_object_set_string_member (condition, "result", "LESS");
    json_object_set_string_member (condition, "mod_revision", revision);
    json_array_add_object_element (compare, condition);
    json_object_set_object_member (operation, "request_put", put);
    json_array_add_object_element (success, operation);
    json_object_set_array_member (txn, "compare", compare);
    json_object_set_array_member (txn, "success", success);
    cluster_call (self, "kv/txn", txn, take_slot_done_cb, key_request_new (self, local),
                  (GDestroyNotify) key_request_free);
}

gboolean
vmr_cluster_admit (VmrCluster *self, const gchar *job, const gchar *source,
                   const gchar *destination, const gchar **out_limit, gchar **out_reason)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);
    g_autoptr (GArray) own = NULL;

    if (local != NULL && local->started)
        return TRUE;
    *out_limit = "cluster";
    if (!self->available) {
        *out_reason = g_strdup (VMR_CLUSTER_UNAVAILABLE);
        return FALSE;
    }
    local = local_job (self, job, source, destination);
    if (!local->registered || !vmr_cluster_queue_contains (self->view, local->key)) {
        if (!local->registered && !local->in_flight)
            cluster_call (self, "kv/put", encode_put (put_request (self, local)), register_done_cb,
                          key_request_new (self, local), (GDestroyNotify) key_request_free);
        *out_reason = g_strdup ("joining the cluster's queue");
        return FALSE;
    }
    own = own_copies (self);
    if (!vmr_cluster_queue_admits (self->view, self->config, (const VmrQueueCopy *) own->data,
                                   own->len, local->key, out_limit, out_reason))
        return FALSE;
    if (!local->in_flight)
        take_slot (self, local);
    *out_limit = "cluster";
    g_free (*out_reason);
    *out_reason = g_strdup ("taking a slot of the cluster");
    return FALSE;
}

void
vmr_cluster_hold (VmrCluster *self, const gchar *job, const gchar *source, const gchar *destination)
{
    LocalJob *local = local_job (self, job, source, destination);

    if (local->started)
        return;
    /* a copy runs that the cluster did not grant here: an earlier run's, picked up */
    local->started = TRUE;
    local->registered = FALSE;
    g_message ("cluster %s: %s runs: registering its slot", self->config->name, job);
    if (self->available && self->lease_id != NULL) {
        local->registered = TRUE;
        cluster_call (self, "kv/put", encode_put (put_request (self, local)), register_done_cb,
                      key_request_new (self, local), (GDestroyNotify) key_request_free);
    }
}

static void
release_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    if (reply == NULL)
        set_unavailable (self, error);
}

void
vmr_cluster_release (VmrCluster *self, const gchar *job)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);

    if (local == NULL)
        return;
    /* a later sync deletes it if this does not reach etcd */
    g_hash_table_add (self->released, g_strdup (local->key));
    delete_key (self, local->key, release_done_cb);
    g_hash_table_remove (self->local, job);
    emit_changed (self);
}

static void
publish_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    /* a lost etcd shows in the keep-alive; the next sync publishes again */
    if (reply == NULL)
        g_debug ("cluster: publishing: %s", error->message);
}

void
vmr_cluster_publish_job (VmrCluster *self, const gchar *job, JsonObject *summary)
{
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), summary);
    g_autofree gchar *key = published_key (self, job);
    gchar *value;

    json_object_set_string_member (summary, "host", self->config->host);
    value = json_to_string (node, FALSE);
    g_hash_table_replace (self->published, g_strdup (job), value);
    if (self->lease_id != NULL)
        cluster_call (self, "kv/put", put_text (self, key, value), publish_done_cb, NULL, NULL);
}

void
vmr_cluster_unpublish_job (VmrCluster *self, const gchar *job)
{
    g_autofree gchar *key = published_key (self, job);

    if (!g_hash_table_remove (self->published, job))
        return;
    /* a key left behind by a lost etcd goes with the lease */
    if (self->lease_id != NULL)
        delete_key (self, key, publish_done_cb);
}

VmrEtcdClient *
vmr_cluster_get_client (VmrCluster *self)
{
    return self->client;
}
