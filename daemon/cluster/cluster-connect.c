#define G_LOG_DOMAIN "vmr-cluster"

/*
 * Connecting to the cluster: a lease, kept alive; every copy that runs here
 * registered under it; the queue read once and followed with a watch.
 * Only then is the daemon available and may it take new slots; whenever
 * etcd is lost, the same steps again once it answers.
 */

#include "cluster-private.h"

#include "vmr-json.h"

/* a watch that ends is opened again at once, unless it ended this soon after the last time */
#define RESYNC_MIN_INTERVAL_US G_USEC_PER_SEC

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
        vmr_cluster_set_unavailable (self, NULL);
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
        vmr_cluster_emit_changed (self);
}

static void
watch_closed_cb (const GError *error, gpointer user_data)
{
    VmrCluster *self = user_data;

    /* the watch frees itself after this */
    self->watch = NULL;
    vmr_cluster_set_unavailable (self, error);
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
        vmr_cluster_set_unavailable (self, error);
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
    vmr_cluster_emit_changed (self);
}

static void
read_view (VmrCluster *self)
{
    JsonObject *range = json_object_new ();

    json_object_set_string_member (range, "key", self->prefix_b64);
    json_object_set_string_member (range, "range_end", self->prefix_end);
    vmr_cluster_call (self, "kv/range", range, range_done_cb, NULL, NULL);
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
        vmr_cluster_set_unavailable (self, error);
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

/*
 * Registers again, under the lease, every copy that runs here, and deletes
 * the keys of jobs released meanwhile, then reads the view and watches it:
 * only then may a new slot be taken.
 */
static void
host_claimed (VmrCluster *self, const GError *error)
{
    GHashTableIter iter;
    LocalJob *local;
    const gchar *key;

    if (error != NULL) {
        /* another daemon's name, or etcd lost: the copies wait as when etcd is lost */
        self->syncing = FALSE;
        vmr_cluster_set_unavailable (self, error);
        return;
    }
    self->sync_failed = FALSE;
    self->sync_pending = 1; /* this function's own, so that nothing completes under it */
    g_hash_table_iter_init (&iter, self->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        if (!local->started)
            continue;
        self->sync_pending++;
        local->registered = TRUE;
        vmr_cluster_call (self, "kv/put", vmr_cluster_put_job (self, local), sync_step_cb, NULL,
                          NULL);
    }
    vmr_cluster_publish_all (self);
    g_hash_table_iter_init (&iter, self->released);
    while (g_hash_table_iter_next (&iter, (gpointer *) &key, NULL)) {
        self->sync_pending++;
        vmr_cluster_delete_key (self, key, sync_step_cb);
    }
    g_hash_table_remove_all (self->released);
    sync_step_done (self, NULL);
}

/*
 * Claims the host's name under the lease first (cluster-identity.c): a
 * daemon whose name another's live lease holds registers nothing.
 */
static void
start_sync (VmrCluster *self)
{
    if (self->syncing || self->lease_id == NULL)
        return;
    self->syncing = TRUE;
    self->last_sync = g_get_monotonic_time ();
    vmr_cluster_claim_host (self, host_claimed);
}

void
vmr_cluster_resync (VmrCluster *self)
{
    start_sync (self);
}

static void
grant_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    GHashTableIter iter;
    LocalJob *local;

    self->syncing = FALSE;
    if (reply == NULL || vmr_json_get_string (reply, "ID") == NULL) {
        g_debug ("cluster: no lease: %s", error != NULL ? error->message : "no ID in the reply");
        vmr_cluster_set_unavailable (self, error);
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
    vmr_cluster_call (self, "lease/grant", grant, grant_done_cb, NULL, NULL);
}

static void
keepalive_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    JsonObject *answer = reply != NULL ? vmr_json_get_object (reply, "result") : NULL;

    self->keepalive_in_flight = FALSE;
    if (reply == NULL) {
        vmr_cluster_set_unavailable (self, error);
        return;
    }
    if (answer == NULL || vmr_etcd_json_int64 (answer, "TTL") <= 0) {
        /* the lease expired while etcd could not be reached: a new one, and register again */
        g_warning ("cluster %s: the lease expired: registering again", self->config->name);
        g_clear_pointer (&self->lease_id, g_free);
        self->available = FALSE;
        vmr_cluster_emit_changed (self);
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
    vmr_cluster_call (self, "lease/keepalive", request, keepalive_done_cb, NULL, NULL);
    return G_SOURCE_CONTINUE;
}

void
vmr_cluster_connect (VmrCluster *self)
{
    guint interval_ms = (guint) (self->config->lease_ttl_us / 1000 / 3);

    self->keepalive_source = g_timeout_add (interval_ms, keepalive_cb, self);
    grant_lease (self);
}
