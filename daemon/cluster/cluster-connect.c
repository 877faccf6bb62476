#define G_LOG_DOMAIN "vmr-cluster"

/*
 * Connecting to the cluster: a lease, kept alive; every copy that runs here
 * registered under it; the queue read once and followed with a watch.
 * Only then is the daemon available and may it take new slots; whenever
 * etcd is lost, the same steps again once it answers.
 */

#include "cluster-private.h"

#include "vmr-json.h"

/*
 * One live identity per host name: the daemon's member key,
 * /virt-mirror/CLUSTER/members/HOST, is put under its lease by a
 * transaction that succeeds only if no key holds the name, or if the one
 * that does is this daemon's (its lease, or its instance: the same daemon
 * before a restart). A daemon that finds the name held by another's live
 * lease does not join: it says so on one line, and watches the key to try
 * again as soon as it goes.
 */

static gchar *
member_key (VmrCluster *self)
{
    return g_strdup_printf ("/virt-mirror/%s/members/%s", self->config->name, self->config->host);
}

/* the member key's value: who holds the name */
static gchar *
member_value (VmrCluster *self)
{
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) root = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "host");
    json_builder_add_string_value (builder, self->config->host);
    json_builder_set_member_name (builder, "lease-ttl");
    json_builder_add_int_value (builder, self->config->lease_ttl_us / G_USEC_PER_SEC);
    json_builder_set_member_name (builder, "since");
    json_builder_add_int_value (builder, g_get_real_time ());
    json_builder_set_member_name (builder, "instance");
    json_builder_add_string_value (builder, self->instance);
    if (self->machine_id != NULL) {
        json_builder_set_member_name (builder, "machine-id");
        json_builder_add_string_value (builder, self->machine_id);
    }
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    return json_to_string (root, FALSE);
}

/* a transaction: put the member key if @target of it is EQUAL to @value */
static JsonObject *
claim_txn (VmrCluster *self, const gchar *target, const gchar *field, const gchar *value)
{
    g_autofree gchar *key = member_key (self);
    g_autofree gchar *text = member_value (self);
    g_autofree gchar *encoded = vmr_etcd_encode (key);
    JsonObject *txn = json_object_new ();
    JsonObject *condition = json_object_new ();
    JsonObject *put_operation = json_object_new ();
    JsonObject *range_operation = json_object_new ();
    JsonObject *range = json_object_new ();
    JsonArray *compare = json_array_new ();
    JsonArray *success = json_array_new ();
    JsonArray *failure = json_array_new ();

    json_object_set_string_member (condition, "key", encoded);
    json_object_set_string_member (condition, "target", target);
    json_object_set_string_member (condition, "result", "EQUAL");
    json_object_set_string_member (condition, field, value);
    json_array_add_object_element (compare, condition);
    json_object_set_object_member (put_operation, "request_put",
                                   vmr_cluster_put_text (self, key, text));
    json_array_add_object_element (success, put_operation);
    json_object_set_string_member (range, "key", encoded);
    json_object_set_object_member (range_operation, "request_range", range);
    json_array_add_object_element (failure, range_operation);
    json_object_set_array_member (txn, "compare", compare);
    json_object_set_array_member (txn, "success", success);
    json_object_set_array_member (txn, "failure", failure);
    return txn;
}

/* the key-value the failed transaction @reply read, or NULL when the key has gone */
static JsonObject *
holder_of (JsonObject *reply)
{
    JsonArray *responses = vmr_json_get_array (reply, "responses");
    JsonObject *first = responses != NULL && json_array_get_length (responses) > 0
                            ? json_array_get_object_element (responses, 0)
                            : NULL;
    JsonObject *range = first != NULL ? vmr_json_get_object (first, "response_range") : NULL;
    JsonArray *kvs = range != NULL ? vmr_json_get_array (range, "kvs") : NULL;

    return kvs != NULL && json_array_get_length (kvs) > 0 ? json_array_get_object_element (kvs, 0)
                                                          : NULL;
}

typedef struct {
    VmrClaimFunc done;
    gboolean takeover; /* the transaction that takes the key over from this daemon's earlier run */
} Claim;

static void send_claim (VmrCluster *self, Claim *claim, JsonObject *txn);

/* the name went from the member key: try again */
static void
holder_watch_cb (JsonObject *result, gpointer user_data)
{
    VmrCluster *self = user_data;
    JsonArray *events = vmr_json_get_array (result, "events");

    for (guint i = 0; events != NULL && i < json_array_get_length (events); i++) {
        JsonObject *event = json_array_get_object_element (events, i);

        if (g_strcmp0 (vmr_json_get_string (event, "type"), "DELETE") != 0)
            continue;
        g_message ("cluster %s: host %s is free again: joining", self->config->name,
                   self->config->host);
        /* freed after this returns: the sync opens none while one is set */
        self->holder_watch_done = TRUE;
        vmr_cluster_resync (self);
        return;
    }
}

static void
holder_watch_closed_cb (const GError *error, gpointer user_data)
{
    VmrCluster *self = user_data;

    /* it frees itself after this; the keep-alive's next sync tries again */
    self->holder_watch = NULL;
}

/* follows the member key from @revision on, to claim it once its holder's lease is gone */
static void
watch_holder (VmrCluster *self, gint64 revision)
{
    g_autofree gchar *key = member_key (self);
    g_autofree gchar *encoded = vmr_etcd_encode (key);
    g_autofree gchar *start = g_strdup_printf ("%" G_GINT64_FORMAT, revision + 1);
    JsonObject *create = json_object_new ();

    json_object_set_string_member (create, "key", encoded);
    json_object_set_string_member (create, "start_revision", start);
    g_clear_pointer (&self->holder_watch, vmr_etcd_watch_free);
    self->holder_watch_done = FALSE;
    self->holder_watch = vmr_etcd_client_watch (self->client, create, holder_watch_cb,
                                                holder_watch_closed_cb, self);
}

/* another daemon's live lease holds the name: one line, once per holder */
static void
refuse (VmrCluster *self, JsonObject *holder, gint64 revision, VmrClaimFunc done)
{
    g_autoptr (JsonObject) value = vmr_etcd_kv_object (holder);
    const gchar *lease = vmr_json_get_string (holder, "lease");
    const gchar *machine_id = value != NULL ? vmr_json_get_string (value, "machine-id") : NULL;
    g_autofree gchar *message = g_strdup_printf (
        "host %s is held by another daemon's lease %" G_GINT64_MODIFIER "x (%s in etcd's JSON), "
        "machine-id %s: not joining; its copies wait until the name is free",
        self->config->host, lease != NULL ? g_ascii_strtoll (lease, NULL, 10) : 0,
        lease != NULL ? lease : "0", machine_id != NULL ? machine_id : "unknown");
    g_autoptr (GError) error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_EXISTS, message);

    if (g_strcmp0 (self->refused_by, lease) != 0)
        g_warning ("cluster %s: %s", self->config->name, message);
    g_free (self->refused_by);
    self->refused_by = g_strdup (lease != NULL ? lease : "0");
    g_free (self->identity_error);
    self->identity_error = g_steal_pointer (&message);
    if (self->holder_watch == NULL || self->holder_watch_done)
        watch_holder (self, revision);
    done (self, error);
}

static void
claim_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    Claim *claim = user_data;
    JsonObject *holder;
    g_autoptr (JsonObject) value = NULL;
    g_autofree gchar *mod_revision = NULL;

    if (reply == NULL) {
        claim->done (self, error);
        return;
    }
    if (vmr_json_bool_or (reply, "succeeded", FALSE)) {
        g_clear_pointer (&self->refused_by, g_free);
        g_clear_pointer (&self->identity_error, g_free);
        g_clear_pointer (&self->holder_watch, vmr_etcd_watch_free);
        claim->done (self, NULL);
        return;
    }
    holder = holder_of (reply);
    if (holder == NULL || claim->takeover) {
        /* gone or changed in between: once more from the start */
        claim->takeover = FALSE;
        send_claim (self, g_memdup2 (claim, sizeof *claim),
                    claim_txn (self, "CREATE", "create_revision", "0"));
        return;
    }
    value = vmr_etcd_kv_object (holder);
    if (g_strcmp0 (vmr_json_get_string (holder, "lease"), self->lease_id) != 0
        && (value == NULL
            || g_strcmp0 (vmr_json_get_string (value, "instance"), self->instance) != 0)) {
        refuse (self, holder, vmr_etcd_json_revision (reply), claim->done);
        return;
    }
    /* this daemon's, under this lease or before a restart: taken over as it stands */
    mod_revision
        = g_strdup_printf ("%" G_GINT64_FORMAT, vmr_etcd_json_int64 (holder, "mod_revision"));
    claim->takeover = TRUE;
    send_claim (self, g_memdup2 (claim, sizeof *claim),
                claim_txn (self, "MOD", "mod_revision", mod_revision));
}

static void
send_claim (VmrCluster *self, Claim *claim, JsonObject *txn)
{
    vmr_cluster_call (self, "kv/txn", txn, claim_done_cb, claim, g_free);
}

void
vmr_cluster_claim_host (VmrCluster *self, VmrClaimFunc done)
{
    Claim *claim = g_new0 (Claim, 1);

    claim->done = done;
    send_claim (self, claim, claim_txn (self, "CREATE", "create_revision", "0"));
}

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
    /* the lease was given up while the sync was on its way: the next one reads again */
    if (self->lease_id == NULL)
        return;
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
    vmr_cluster_budgets_sync (self);
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

    if (error != NULL || self->lease_id == NULL) {
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
 * Claims the host's name under the lease first (above): a
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

/* what a grant or a keep-alive was sent with */
typedef struct {
    gchar *lease_id; /* the keep-alive's lease; NULL for a grant */
    gint64 sent;     /* monotonic µs */
} LeaseCall;

static LeaseCall *
lease_call_new (const gchar *lease_id)
{
    LeaseCall *call = g_new0 (LeaseCall, 1);

    call->lease_id = g_strdup (lease_id);
    call->sent = g_get_monotonic_time ();
    return call;
}

static void
lease_call_free (LeaseCall *call)
{
    g_free (call->lease_id);
    g_free (call);
}

static gboolean lease_deadline_cb (gpointer user_data);

/*
 * The lease's ID kept across restarts, so that a daemon started again
 * before its lease expired keeps it alive and holds every key under it (the
 * slots of the copies that ran on in QEMU meanwhile among them)
 */
static void
keep_lease_id (VmrCluster *self)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *text = NULL;

    if (self->lease_file == NULL)
        return;
    /* the lease, and what it was taken as: a daemon that comes back as another keeps none */
    text = g_strdup_printf ("%s %s %s\n", self->lease_id, self->config->name, self->config->host);
    if (!g_file_set_contents (self->lease_file, text, -1, &error))
        g_warning ("cluster %s: %s: a restart takes a new lease, the earlier one's slots go "
                   "when it expires",
                   self->config->name, error->message);
}

/* the lease an earlier run kept in the same cluster as the same host, or NULL */
static gchar *
earlier_lease_id (VmrCluster *self)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) fields = NULL;
    gchar *end = NULL;

    if (self->lease_file == NULL || !g_file_get_contents (self->lease_file, &text, NULL, NULL))
        return NULL;
    fields = g_strsplit (g_strstrip (text), " ", 0);
    if (g_strv_length (fields) != 3 || g_ascii_strtoll (fields[0], &end, 10) <= 0 || *end != '\0'
        || g_strcmp0 (fields[1], self->config->name) != 0
        || g_strcmp0 (fields[2], self->config->host) != 0)
        return NULL;
    return g_strdup (fields[0]);
}

/*
 * The slots of the copies that run here are given up (the lease may expire,
 * or did): each such copy is suspended and takes a slot again through the
 * queue. Returns how many.
 */
static guint
give_up_slots (VmrCluster *self)
{
    GHashTableIter iter;
    LocalJob *local;
    guint given_up = 0;

    g_hash_table_iter_init (&iter, self->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        local->registered = FALSE;
        if (!local->started)
            continue;
        local->started = FALSE;
        local->suspended = TRUE;
        given_up++;
    }
    /* an earlier run's copies picked up from now on hold no slot either */
    if (self->resuming)
        self->lapsed = TRUE;
    self->resuming = FALSE;
    return given_up;
}

/*
 * The copies stop this long after the last keep-alive etcd answered was
 * sent: a third of the TTL before the lease can expire, and a third after
 * the next keep-alive went, so that one answered late stops nothing.
 */
#define LEASE_DEADLINE(ttl_us) ((ttl_us) *2 / 3)

/*
 * etcd answered for the lease a call sent at @sent: it lives until at least
 * TTL after @sent. The copies stop at LEASE_DEADLINE unless etcd answers again.
 */
static void
lease_confirmed (VmrCluster *self, gint64 sent)
{
    gint64 deadline = sent + LEASE_DEADLINE (self->config->lease_ttl_us);
    gint64 now = g_get_monotonic_time ();

    if (sent < self->lease_confirmed)
        return;
    self->lease_confirmed = sent;
    g_clear_handle_id (&self->lease_deadline_source, g_source_remove);
    self->lease_deadline_source
        = g_timeout_add ((guint) (MAX (deadline - now, 0) / 1000), lease_deadline_cb, self);
}

/*
 * No keep-alive answered for two thirds of the lease's TTL: the lease may expire
 * before etcd is back, and the other hosts then take the slots of the copies
 * that run here. The slots are given up now, while the lease still holds
 * them: the copies stop (the engine pauses them) and take a slot again
 * through the queue under a new lease. What is on its way under the old
 * lease is answered to nobody (the calls check the lease they were made
 * with); the old lease is revoked once etcd answers.
 */
static gboolean
lease_deadline_cb (gpointer user_data)
{
    VmrCluster *self = user_data;
    gboolean earlier = self->resuming;
    guint given_up;

    self->lease_deadline_source = 0;
    given_up = give_up_slots (self);
    if (earlier)
        g_warning ("cluster %s: etcd did not say within a third of its TTL whether lease %s of "
                   "the daemon's earlier run lives: giving it up; the copies of that run stop "
                   "until they take a slot again under a new lease",
                   self->config->name, self->lease_id);
    else
        g_warning ("cluster %s: no keep-alive of lease %s answered for %" G_GINT64_FORMAT
                   " ms (two thirds of its TTL): giving up its %u slots; their copies stop until "
                   "they take a slot again under a new lease",
                   self->config->name, self->lease_id,
                   (g_get_monotonic_time () - self->lease_confirmed) / 1000, given_up);
    g_free (self->lost_lease);
    self->lost_lease = g_steal_pointer (&self->lease_id);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    self->available = FALSE;
    vmr_cluster_emit_changed (self);
    return G_SOURCE_REMOVE;
}

static void
lost_revoked_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    if (reply == NULL)
        g_debug ("cluster: the lease given up was not revoked: %s", error->message);
}

/* the lease given up, if any: its keys not yet put again under the new one go at once */
static void
revoke_lost_lease (VmrCluster *self)
{
    JsonObject *request;

    if (self->lost_lease == NULL)
        return;
    request = json_object_new ();
    json_object_set_string_member (request, "ID", self->lost_lease);
    vmr_cluster_call (self, "lease/revoke", request, lost_revoked_cb, NULL, NULL);
    g_clear_pointer (&self->lost_lease, g_free);
}

static void
grant_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    LeaseCall *call = user_data;
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
    keep_lease_id (self);
    self->kept_from_earlier = FALSE;
    lease_confirmed (self, call->sent);
    revoke_lost_lease (self);
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
    vmr_cluster_call (self, "lease/grant", grant, grant_done_cb, lease_call_new (NULL),
                      (GDestroyNotify) lease_call_free);
}

static gboolean keepalive_cb (gpointer user_data);

static gboolean
keepalive_retry_cb (gpointer user_data)
{
    VmrCluster *self = user_data;

    self->keepalive_retry_source = 0;
    keepalive_cb (self);
    return G_SOURCE_REMOVE;
}

/* a keep-alive that failed is sent again soon, not a third of the TTL later */
static void
retry_keepalive (VmrCluster *self)
{
    if (self->keepalive_retry_source == 0 && self->lease_id != NULL)
        self->keepalive_retry_source = g_timeout_add (
            (guint) (self->config->lease_ttl_us / 1000 / 12), keepalive_retry_cb, self);
}

static void
keepalive_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    LeaseCall *call = user_data;
    JsonObject *answer = reply != NULL ? vmr_json_get_object (reply, "result") : NULL;

    self->keepalive_in_flight = FALSE;
    if (reply == NULL) {
        vmr_cluster_set_unavailable (self, error);
        retry_keepalive (self);
        return;
    }
    /* a lease given up meanwhile: the next tick asks for a new one */
    if (g_strcmp0 (call->lease_id, self->lease_id) != 0)
        return;
    if (answer == NULL || vmr_etcd_json_int64 (answer, "TTL") <= 0) {
        /*
         * the lease expired while etcd could not be reached, or while no
         * daemon kept it alive: the copies that ran on meanwhile held no
         * slot; a new lease, and register again
         */
        gboolean earlier = self->resuming;
        guint given_up = give_up_slots (self);

        if (earlier)
            g_warning ("cluster %s: lease %s of the daemon's earlier run expired before it was "
                       "back: the copies of that run stop until they take a slot again (%u "
                       "picked up yet)",
                       self->config->name, self->lease_id, given_up);
        else
            g_warning ("cluster %s: the lease expired: registering again (%u copies stop until "
                       "they take a slot again)",
                       self->config->name, given_up);
        g_clear_pointer (&self->lease_id, g_free);
        self->available = FALSE;
        vmr_cluster_emit_changed (self);
        grant_lease (self);
        return;
    }
    if (self->resuming) {
        g_message ("cluster %s: lease %s of the daemon's earlier run is still alive: kept, with "
                   "its slots",
                   self->config->name, self->lease_id);
        self->kept_from_earlier = TRUE;
    }
    self->resuming = FALSE;
    lease_confirmed (self, call->sent);
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
    vmr_cluster_call (self, "lease/keepalive", request, keepalive_done_cb,
                      lease_call_new (self->lease_id), (GDestroyNotify) lease_call_free);
    return G_SOURCE_CONTINUE;
}

/*
 * A lease an earlier run left is kept alive at once if etcd still holds it.
 * When it was last kept alive is not known: unless etcd says it lives
 * within a third of the TTL, its slots are given up as for a lease whose
 * keep-alives go unanswered.
 */
static gboolean
resume_lease (VmrCluster *self)
{
    g_autofree gchar *earlier = earlier_lease_id (self);

    if (earlier == NULL)
        return FALSE;
    self->lease_id = g_steal_pointer (&earlier);
    self->resuming = TRUE;
    self->lease_deadline_source
        = g_timeout_add ((guint) (self->config->lease_ttl_us / 1000 / 3), lease_deadline_cb, self);
    keepalive_cb (self);
    return TRUE;
}

void
vmr_cluster_connect (VmrCluster *self)
{
    guint interval_ms = (guint) (self->config->lease_ttl_us / 1000 / 3);

    self->keepalive_source = g_timeout_add (interval_ms, keepalive_cb, self);
    if (!resume_lease (self))
        grant_lease (self);
}
