#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster-private.h"

#include "vmr-error.h"
#include "vmr-json.h"

#include <glib/gstdio.h>

G_DEFINE_FINAL_TYPE (VmrCluster, vmr_cluster, G_TYPE_OBJECT)

enum {
    SIGNAL_CHANGED,
    SIGNAL_SHARES_CHANGED,
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
    g_clear_handle_id (&self->lease_deadline_source, g_source_remove);
    g_clear_handle_id (&self->keepalive_retry_source, g_source_remove);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    g_clear_pointer (&self->holder_watch, vmr_etcd_watch_free);
    vmr_cluster_budgets_stop (self->budgets);
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
    g_free (self->lost_lease);
    g_free (self->lease_file);
    g_free (self->instance);
    g_free (self->machine_id);
    g_free (self->refused_by);
    g_free (self->identity_error);
    g_hash_table_unref (self->local);
    g_hash_table_unref (self->released);
    g_hash_table_unref (self->published);
    g_hash_table_unref (self->writes);
    g_hash_table_unref (self->kept);
    vmr_cluster_queue_free (self->view);
    vmr_cluster_budgets_free (self->budgets);
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
    signals[SIGNAL_SHARES_CHANGED]
        = g_signal_new ("shares-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL,
                        NULL, NULL, G_TYPE_NONE, 0);
}

/* a lease given up takes this host's shares of the budgets with it */
static void
changed_cb (VmrCluster *self, gpointer user_data)
{
    vmr_cluster_budgets_notify (self);
}

static void
vmr_cluster_init (VmrCluster *self)
{
    self->cancellable = g_cancellable_new ();
    self->local
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) local_job_free);
    self->released = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    self->published = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->writes = vmr_cluster_writes_new ();
    self->kept = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->view = vmr_cluster_queue_new ();
    self->budgets = vmr_cluster_budgets_new ();
    g_signal_connect (self, "changed", G_CALLBACK (changed_cb), NULL);
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

/* /etc/machine-id, or NULL when there is none */
static gchar *
read_machine_id (void)
{
    g_autofree gchar *text = NULL;

    if (!g_file_get_contents ("/etc/machine-id", &text, NULL, NULL))
        return NULL;
    g_strstrip (text);
    return *text != '\0' ? g_steal_pointer (&text) : NULL;
}

VmrCluster *
vmr_cluster_new (const VmrClusterConfig *config, const gchar *instance, const gchar *lease_file,
                 GError **error)
{
    g_autoptr (VmrCluster) self = g_object_new (VMR_TYPE_CLUSTER, NULL);

    self->instance = g_strdup (instance);
    self->lease_file = g_strdup (lease_file);
    self->machine_id = read_machine_id ();

    self->client
        = vmr_etcd_client_new ((const gchar *const *) config->endpoints, config->tls_creds, error);
    if (self->client == NULL)
        return NULL;
    self->config = vmr_cluster_config_copy (config);
    self->prefix = g_strdup_printf ("/virt-mirror/%s/queue/", config->name);
    self->prefix_b64 = vmr_etcd_encode (self->prefix);
    self->prefix_end = vmr_etcd_prefix_end (self->prefix);
    vmr_cluster_connect (self);
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

/* @job's queue key: under this host and this daemon's instance */
static gchar *
job_key (VmrCluster *self, const gchar *job)
{
    return g_strdup_printf ("%s%s/%s/%s", self->prefix, self->config->host, self->instance, job);
}

static LocalJob *
local_job (VmrCluster *self, const gchar *job, const gchar *source, const gchar *destination)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);

    if (local != NULL)
        return local;
    local = g_new0 (LocalJob, 1);
    local->job = g_strdup (job);
    local->key = job_key (self, job);
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
        vmr_cluster_set_unavailable (self, error);
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
        vmr_cluster_emit_changed (self);
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
            vmr_cluster_emit_changed (self);
        return;
    }
    g_debug ("cluster: %s took a slot", local->job);
    local->started = TRUE;
    local->suspended = FALSE;
    vmr_cluster_emit_changed (self);
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
    put = vmr_cluster_put_job (self, local);
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
    vmr_cluster_call (self, "kv/txn", txn, take_slot_done_cb, key_request_new (self, local),
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
            vmr_cluster_call (self, "kv/put", vmr_cluster_put_job (self, local), register_done_cb,
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

    /* a copy whose slot went with the lease takes one again through the queue only */
    if (local->started || local->suspended)
        return;
    if (self->lapsed) {
        /* an earlier run's, whose lease expired meanwhile: the others may hold its slot */
        local->suspended = TRUE;
        g_message ("cluster %s: %s runs, but its slot went with the lease of the daemon's "
                   "earlier run: it stops until it takes a slot again",
                   self->config->name, job);
        vmr_cluster_emit_changed (self);
        return;
    }
    /* a copy runs that the cluster did not grant here: an earlier run's, picked up */
    local->started = TRUE;
    local->registered = FALSE;
    g_message ("cluster %s: %s runs: registering its slot", self->config->name, job);
    if (self->available && self->lease_id != NULL) {
        local->registered = TRUE;
        vmr_cluster_call (self, "kv/put", vmr_cluster_put_job (self, local), register_done_cb,
                          key_request_new (self, local), (GDestroyNotify) key_request_free);
    }
}

gboolean
vmr_cluster_is_suspended (VmrCluster *self, const gchar *job)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);

    return local != NULL && local->suspended;
}

static void
release_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    if (reply == NULL)
        vmr_cluster_set_unavailable (self, error);
}

void
vmr_cluster_release (VmrCluster *self, const gchar *job)
{
    LocalJob *local = g_hash_table_lookup (self->local, job);
    g_autofree gchar *key = job_key (self, job);

    /*
     * one this run never asked for may have a key an earlier run put under
     * the lease kept across the restart: deleted if the view has it, or by
     * the sync when the view is not read yet
     */
    if (local == NULL && self->available && !vmr_cluster_queue_contains (self->view, key))
        return;
    /* a later sync deletes it if this does not reach etcd */
    g_hash_table_add (self->released, g_strdup (key));
    vmr_cluster_delete_key (self, key, release_done_cb);
    if (local == NULL)
        return;
    g_hash_table_remove (self->local, job);
    vmr_cluster_emit_changed (self);
}

gboolean
vmr_cluster_reconfigure (VmrCluster *self, const VmrClusterConfig *config, const gchar **out_key)
{
    const VmrClusterConfig *old = self->config;
    VmrClusterConfig *copy;

    *out_key = g_strcmp0 (old->name, config->name) != 0 ? "name"
               : !g_strv_equal ((const gchar *const *) old->endpoints,
                                (const gchar *const *) config->endpoints)
                   ? "etcd"
               : g_strcmp0 (old->tls_creds, config->tls_creds) != 0 ? "tls-creds"
               : g_strcmp0 (old->host, config->host) != 0           ? "host"
               : old->lease_ttl_us != config->lease_ttl_us          ? "lease-ttl"
                                                                    : NULL;
    if (*out_key != NULL)
        return FALSE;
    copy = vmr_cluster_config_copy (config);
    vmr_cluster_config_free (self->config);
    self->config = copy;
    vmr_cluster_emit_changed (self);
    return TRUE;
}

static void
revoked_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    if (reply == NULL)
        g_message ("cluster %s: the lease was not revoked (%s): its keys go when it expires",
                   self->config->name, error->message);
}

void
vmr_cluster_leave (VmrCluster *self)
{
    JsonObject *request;

    /* what is on its way is answered to nobody: no new lease, no sync */
    g_cancellable_cancel (self->cancellable);
    g_object_unref (self->cancellable);
    self->cancellable = g_cancellable_new ();
    g_clear_handle_id (&self->keepalive_source, g_source_remove);
    g_clear_handle_id (&self->lease_deadline_source, g_source_remove);
    g_clear_handle_id (&self->keepalive_retry_source, g_source_remove);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    vmr_cluster_budgets_stop (self->budgets);
    self->available = FALSE;
    self->left = TRUE;
    /* a later run takes a lease of its own */
    if (self->lease_file != NULL)
        (void) g_unlink (self->lease_file);
    if (self->lease_id == NULL)
        return;
    request = json_object_new ();
    json_object_set_string_member (request, "ID", self->lease_id);
    vmr_cluster_call (self, "lease/revoke", request, revoked_cb, NULL, NULL);
    g_clear_pointer (&self->lease_id, g_free);
}

VmrEtcdClient *
vmr_cluster_get_client (VmrCluster *self)
{
    return self->client;
}
