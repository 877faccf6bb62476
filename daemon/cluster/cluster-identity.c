#define G_LOG_DOMAIN "vmr-cluster"

/*
 * One live identity per host name: the daemon's member key,
 * /virt-mirror/CLUSTER/members/HOST, is put under its lease by a
 * transaction that succeeds only if no key holds the name, or if the one
 * that does is this daemon's (its lease, or its instance: the same daemon
 * before a restart). A daemon that finds the name held by another's live
 * lease does not join: it says so on one line, and watches the key to try
 * again as soon as it goes.
 */

#include "cluster-private.h"

#include "vmr-json.h"

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
    self->holder_watch = vmr_etcd_client_watch (vmr_cluster_get_client (self), create,
                                                holder_watch_cb, holder_watch_closed_cb, self);
}

/* another daemon's live lease holds the name: one line, once per holder */
static void
refuse (VmrCluster *self, JsonObject *holder, gint64 revision, VmrClaimFunc done)
{
    g_autoptr (JsonObject) value = vmr_cluster_kv_object (holder);
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
    value = vmr_cluster_kv_object (holder);
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
