#define G_LOG_DOMAIN "vmr-cluster"

/*
 * The storages' budgets shared across the cluster. Each host with copies
 * on a budgeted storage holds a share of its budget in etcd, under its
 * lease, at /virt-mirror/CLUSTER/budgets/STORAGE/HOST; a host with no
 * copies on it holds none, so the budget is split equally among the hosts
 * that use it. Every host reads the shares once and follows them with a
 * watch. A host lowers on its own: it lowers its copies first (the engine
 * reports what they use once every lower is answered), then puts its lower
 * share. It raises only by a transaction that holds if no share of the
 * storage changed since the view it computed the room on, so that the
 * shares written never add up to more than the budget, and the speeds set
 * never exceed the shares written. Without its lease a host has no share.
 */

#include "cluster-private.h"
#include "cluster-share.h"

#include "vmr-json.h"

/* this host's part of one storage's budget */
typedef struct {
    gchar *storage;
    VmrShareState state; /* the budget from this host's policy, its copies, its share */
    guint64 told;        /* the share the engine was last told of */
    gint64 written;      /* etcd's revision after its last write: an older view does not show it */
} LocalShare;

/* a share as etcd holds it: every host's */
typedef struct {
    gchar *storage;
    gchar *host;
    gchar *lease;
    guint64 share;
    guint copies;
} ShareEntry;

struct _VmrClusterBudgets {
    GHashTable *local; /* storage -> LocalShare * */
    GHashTable *view;  /* key -> ShareEntry *: every host's shares */
    gint64 revision;   /* etcd's revision the view stands at */
    gboolean synced;   /* the view is read and watched under the current lease */
    VmrEtcdWatch *watch;
    guint notify_source;  /* "shares-changed" on its way */
    guint refresh_source; /* the shares read again while this host has copies on a storage */
    gboolean reading;     /* a read of the shares is on its way */
};

static void
local_share_free (LocalShare *local)
{
    g_free (local->storage);
    g_free (local);
}

static void
share_entry_free (ShareEntry *entry)
{
    g_free (entry->storage);
    g_free (entry->host);
    g_free (entry->lease);
    g_free (entry);
}

VmrClusterBudgets *
vmr_cluster_budgets_new (void)
{
    VmrClusterBudgets *budgets = g_new0 (VmrClusterBudgets, 1);

    budgets->local
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) local_share_free);
    budgets->view = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify) share_entry_free);
    return budgets;
}

void
vmr_cluster_budgets_stop (VmrClusterBudgets *budgets)
{
    g_clear_pointer (&budgets->watch, vmr_etcd_watch_free);
    budgets->synced = FALSE;
}

void
vmr_cluster_budgets_free (VmrClusterBudgets *budgets)
{
    if (budgets == NULL)
        return;
    vmr_cluster_budgets_stop (budgets);
    g_clear_handle_id (&budgets->notify_source, g_source_remove);
    g_clear_handle_id (&budgets->refresh_source, g_source_remove);
    g_hash_table_unref (budgets->local);
    g_hash_table_unref (budgets->view);
    g_free (budgets);
}

/* /virt-mirror/CLUSTER/budgets/, or with @storage, that storage's shares */
static gchar *
budgets_prefix (VmrCluster *self, const gchar *storage)
{
    return g_strdup_printf ("/virt-mirror/%s/budgets/%s%s", self->config->name,
                            storage != NULL ? storage : "", storage != NULL ? "/" : "");
}

static gchar *
share_key (VmrCluster *self, const gchar *storage)
{
    return g_strdup_printf ("/virt-mirror/%s/budgets/%s/%s", self->config->name, storage,
                            self->config->host);
}

static gchar *
share_value (VmrCluster *self, const LocalShare *local, guint64 share)
{
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) root = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "storage");
    json_builder_add_string_value (builder, local->storage);
    json_builder_set_member_name (builder, "host");
    json_builder_add_string_value (builder, self->config->host);
    json_builder_set_member_name (builder, "budget");
    json_builder_add_int_value (builder, (gint64) local->state.budget);
    json_builder_set_member_name (builder, "share");
    json_builder_add_int_value (builder, (gint64) share);
    json_builder_set_member_name (builder, "copies");
    json_builder_add_int_value (builder, local->state.copies);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    return json_to_string (root, FALSE);
}

/* the other hosts holding a share of @storage, and the sum of their shares */
static VmrShareOthers
others_on (VmrCluster *self, const gchar *storage)
{
    VmrShareOthers others = { 0, 0 };
    GHashTableIter iter;
    ShareEntry *entry;

    g_hash_table_iter_init (&iter, self->budgets->view);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        if (!g_str_equal (entry->storage, storage) || g_str_equal (entry->host, self->config->host))
            continue;
        others.hosts++;
        others.shares += entry->share;
    }
    return others;
}

/* what this host's copies may use of @local's storage now */
static guint64
share_of (VmrCluster *self, const LocalShare *local)
{
    VmrShareOthers others = others_on (self, local->storage);

    return vmr_share_usable (&local->state, self->lease_id != NULL, &others);
}

guint64
vmr_cluster_budget_share (VmrCluster *self, const gchar *storage)
{
    LocalShare *local = g_hash_table_lookup (self->budgets->local, storage);

    return local != NULL ? share_of (self, local) : 0;
}

static gboolean
notify_cb (gpointer user_data)
{
    VmrCluster *self = user_data;

    self->budgets->notify_source = 0;
    g_signal_emit_by_name (self, "shares-changed");
    return G_SOURCE_REMOVE;
}

void
vmr_cluster_budgets_notify (VmrCluster *self)
{
    GHashTableIter iter;
    LocalShare *local;
    gboolean changed = FALSE;

    g_hash_table_iter_init (&iter, self->budgets->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        guint64 share = share_of (self, local);

        changed = changed || share != local->told;
        local->told = share;
    }
    if (changed && self->budgets->notify_source == 0)
        self->budgets->notify_source = g_idle_add (notify_cb, self);
}

static void step (VmrCluster *self, LocalShare *local);
static void schedule_refresh (VmrCluster *self);

typedef struct {
    gchar *storage;
    gchar *lease_id;       /* the request's */
    VmrShareAction action; /* a drop, a lower or a raise (a transaction) */
    guint64 share;         /* what it puts */
} ShareWrite;

static void
share_write_free (ShareWrite *write)
{
    g_free (write->storage);
    g_free (write->lease_id);
    g_free (write);
}

/* @action on its way for @local: a lower or a drop taken at once (cluster-share.c) */
static ShareWrite *
share_write_begin (VmrCluster *self, LocalShare *local, VmrShareAction action, guint64 share)
{
    ShareWrite *write = g_new0 (ShareWrite, 1);

    write->storage = g_strdup (local->storage);
    write->lease_id = g_strdup (self->lease_id);
    write->action = action;
    write->share = share;
    vmr_share_begin (&local->state, action, share);
    return write;
}

static void
written_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    ShareWrite *write = user_data;
    LocalShare *local = g_hash_table_lookup (self->budgets->local, write->storage);
    gboolean current;
    gboolean taken;

    if (local == NULL)
        return;
    current = reply != NULL && g_strcmp0 (write->lease_id, self->lease_id) == 0;
    taken = current
            && (write->action != VMR_SHARE_RAISE || vmr_json_bool_or (reply, "succeeded", FALSE));
    vmr_share_written (&local->state, write->action, write->share, taken);
    if (reply == NULL) {
        /* the next sync reads what etcd holds */
        vmr_cluster_set_unavailable (self, error);
        return;
    }
    if (!current)
        return;
    if (!taken) {
        /* the shares moved since the view: the watch brings them, or brought them already */
        if (self->budgets->revision >= vmr_etcd_json_revision (reply))
            step (self, local);
        else if (!self->budgets->reading)
            vmr_cluster_budgets_sync (self);
        return;
    }
    local->written = MAX (local->written, vmr_etcd_json_revision (reply));
    g_debug ("cluster: %s's share of %s: %" G_GUINT64_FORMAT " bytes/s", self->config->host,
             local->storage, local->state.granted);
    vmr_cluster_budgets_notify (self);
    step (self, local);
}

/* the transaction that puts @value at @key if no share of @local's storage moved since the view */
static JsonObject *
raise_txn (VmrCluster *self, LocalShare *local, const gchar *key, const gchar *value)
{
    JsonObject *txn = json_object_new ();
    JsonArray *compare = json_array_new ();
    JsonArray *success = json_array_new ();
    JsonObject *condition = json_object_new ();
    JsonObject *operation = json_object_new ();
    g_autofree gchar *prefix = budgets_prefix (self, local->storage);
    g_autofree gchar *encoded = vmr_etcd_encode (prefix);
    g_autofree gchar *end = vmr_etcd_prefix_end (prefix);
    g_autofree gchar *revision = g_strdup_printf ("%" G_GINT64_FORMAT, self->budgets->revision + 1);

    json_object_set_string_member (condition, "key", encoded);
    json_object_set_string_member (condition, "range_end", end);
    json_object_set_string_member (condition, "target", "MOD");
    json_object_set_string_member (condition, "result", "LESS");
    json_object_set_string_member (condition, "mod_revision", revision);
    json_array_add_object_element (compare, condition);
    json_object_set_object_member (operation, "request_put",
                                   vmr_cluster_put_text (self, key, value));
    json_array_add_object_element (success, operation);
    json_object_set_array_member (txn, "compare", compare);
    json_object_set_array_member (txn, "success", success);
    return txn;
}

/*
 * writes @local's key under the lease as @action says: a delete when no
 * copy remains (its share goes to the others), a put of a lower @share, or
 * a raise to @share by a transaction
 */
static void
write_share (VmrCluster *self, LocalShare *local, VmrShareAction action, guint64 share)
{
    g_autofree gchar *key = share_key (self, local->storage);
    g_autofree gchar *value = share_value (self, local, share);
    ShareWrite *write = share_write_begin (self, local, action, share);

    if (action == VMR_SHARE_DROP) {
        g_autofree gchar *encoded = vmr_etcd_encode (key);
        JsonObject *request = json_object_new ();

        json_object_set_string_member (request, "key", encoded);
        vmr_cluster_call (self, "kv/deleterange", request, written_cb, write,
                          (GDestroyNotify) share_write_free);
    } else if (action == VMR_SHARE_RAISE) {
        vmr_cluster_call (self, "kv/txn", raise_txn (self, local, key, value), written_cb, write,
                          (GDestroyNotify) share_write_free);
    } else {
        vmr_cluster_call (self, "kv/put", vmr_cluster_put_text (self, key, value), written_cb,
                          write, (GDestroyNotify) share_write_free);
    }
}

/* one step towards @local's equal share (cluster-share.c): one write of the key at a time */
static void
step (VmrCluster *self, LocalShare *local)
{
    VmrShareOthers others;
    VmrShareAction action;
    guint64 share;

    if (!self->budgets->synced || self->lease_id == NULL)
        return;
    others = others_on (self, local->storage);
    action = vmr_share_next (&local->state, &others, &share);
    if (action != VMR_SHARE_KEEP)
        write_share (self, local, action, share);
}

static void
step_all (VmrCluster *self)
{
    GHashTableIter iter;
    LocalShare *local;

    g_hash_table_iter_init (&iter, self->budgets->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local))
        step (self, local);
    vmr_cluster_budgets_notify (self);
}

void
vmr_cluster_budget_demand (VmrCluster *self, const gchar *storage, guint64 budget, guint copies,
                           guint64 used)
{
    LocalShare *local = g_hash_table_lookup (self->budgets->local, storage);

    if (local == NULL) {
        local = g_new0 (LocalShare, 1);
        local->storage = g_strdup (storage);
        g_hash_table_insert (self->budgets->local, local->storage, local);
    }
    local->state.budget = budget;
    local->state.copies = copies;
    local->state.used = used;
    step (self, local);
    if (self->budgets->synced)
        schedule_refresh (self);
    vmr_cluster_budgets_notify (self);
}

/* ---- every host's shares: read once, then watched ---- */

/* @kv into the view; FALSE when it is no share */
static gboolean
view_put (VmrCluster *self, JsonObject *kv)
{
    g_autofree gchar *key = vmr_etcd_decode (vmr_json_get_string (kv, "key"));
    g_autoptr (JsonObject) value = vmr_etcd_kv_object (kv);
    ShareEntry *entry;

    if (key == NULL || value == NULL || vmr_json_get_string (value, "storage") == NULL
        || vmr_json_get_string (value, "host") == NULL)
        return FALSE;
    entry = g_new0 (ShareEntry, 1);
    entry->storage = g_strdup (vmr_json_get_string (value, "storage"));
    entry->host = g_strdup (vmr_json_get_string (value, "host"));
    entry->lease = g_strdup (vmr_json_get_string (value, "lease"));
    entry->share = vmr_json_uint_or (value, "share", 0);
    entry->copies = (guint) vmr_json_uint_or (value, "copies", 0);
    g_hash_table_replace (self->budgets->view, g_steal_pointer (&key), entry);
    return TRUE;
}

/* a share of this host that etcd no longer holds under its lease: gone */
static void
reconcile_own (VmrCluster *self)
{
    GHashTableIter iter;
    LocalShare *local;

    g_hash_table_iter_init (&iter, self->budgets->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        g_autofree gchar *key = share_key (self, local->storage);
        ShareEntry *entry = g_hash_table_lookup (self->budgets->view, key);

        if (local->state.in_flight || self->budgets->revision < local->written)
            continue;
        vmr_share_seen (&local->state,
                        entry != NULL && g_strcmp0 (entry->lease, self->lease_id) == 0,
                        entry != NULL ? entry->share : 0);
    }
}

static void
watch_result_cb (JsonObject *result, gpointer user_data)
{
    VmrCluster *self = user_data;
    JsonArray *events = vmr_json_get_array (result, "events");
    gint64 revision = vmr_etcd_json_revision (result);

    if (vmr_json_bool_or (result, "canceled", FALSE)) {
        vmr_cluster_budgets_stop (self->budgets);
        vmr_cluster_set_unavailable (self, NULL);
        return;
    }
    for (guint i = 0; events != NULL && i < json_array_get_length (events); i++) {
        JsonObject *event = json_array_get_object_element (events, i);
        JsonObject *kv = vmr_json_get_object (event, "kv");
        g_autofree gchar *key
            = kv != NULL ? vmr_etcd_decode (vmr_json_get_string (kv, "key")) : NULL;

        if (key == NULL)
            continue;
        /* PUT is the enum's zero, which etcd's JSON leaves out */
        if (g_strcmp0 (vmr_json_get_string (event, "type"), "DELETE") == 0)
            g_hash_table_remove (self->budgets->view, key);
        else
            view_put (self, kv);
    }
    if (revision > self->budgets->revision)
        self->budgets->revision = revision;
    reconcile_own (self);
    step_all (self);
}

static void
watch_closed_cb (const GError *error, gpointer user_data)
{
    VmrCluster *self = user_data;

    /* the watch frees itself after this; the keep-alive's next sync reads again */
    self->budgets->watch = NULL;
    self->budgets->synced = FALSE;
    vmr_cluster_set_unavailable (self, error);
}

static gboolean
refresh_cb (gpointer user_data)
{
    VmrCluster *self = user_data;

    self->budgets->refresh_source = 0;
    if (!self->budgets->reading)
        vmr_cluster_budgets_sync (self);
    return G_SOURCE_REMOVE;
}

/*
 * While this host has copies on a budgeted storage, the shares are read
 * again every third of the lease's TTL: a watch that stopped bringing
 * events without closing delays a rebalance by no more than that
 */
static void
schedule_refresh (VmrCluster *self)
{
    GHashTableIter iter;
    LocalShare *local;

    g_hash_table_iter_init (&iter, self->budgets->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local)) {
        if (local->state.copies > 0 && self->budgets->refresh_source == 0) {
            self->budgets->refresh_source
                = g_timeout_add ((guint) (self->config->lease_ttl_us / 1000 / 3), refresh_cb, self);
            return;
        }
    }
}

static void
range_done_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    g_autofree gchar *prefix = budgets_prefix (self, NULL);
    g_autofree gchar *encoded = vmr_etcd_encode (prefix);
    g_autofree gchar *end = vmr_etcd_prefix_end (prefix);
    g_autofree gchar *start = NULL;
    JsonArray *kvs;
    JsonObject *create;

    self->budgets->reading = FALSE;
    if (reply == NULL) {
        vmr_cluster_set_unavailable (self, error);
        return;
    }
    if (self->lease_id == NULL)
        return;
    g_hash_table_remove_all (self->budgets->view);
    kvs = vmr_json_get_array (reply, "kvs");
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++)
        view_put (self, json_array_get_object_element (kvs, i));
    self->budgets->revision = vmr_etcd_json_revision (reply);
    start = g_strdup_printf ("%" G_GINT64_FORMAT, self->budgets->revision + 1);
    create = json_object_new ();
    json_object_set_string_member (create, "key", encoded);
    json_object_set_string_member (create, "range_end", end);
    json_object_set_string_member (create, "start_revision", start);
    g_clear_pointer (&self->budgets->watch, vmr_etcd_watch_free);
    self->budgets->watch
        = vmr_etcd_client_watch (self->client, create, watch_result_cb, watch_closed_cb, self);
    self->budgets->synced = TRUE;
    reconcile_own (self);
    step_all (self);
    schedule_refresh (self);
}

void
vmr_cluster_budgets_sync (VmrCluster *self)
{
    g_autofree gchar *prefix = budgets_prefix (self, NULL);
    g_autofree gchar *encoded = vmr_etcd_encode (prefix);
    g_autofree gchar *end = vmr_etcd_prefix_end (prefix);
    JsonObject *range = json_object_new ();

    vmr_cluster_budgets_stop (self->budgets);
    self->budgets->reading = TRUE;
    json_object_set_string_member (range, "key", encoded);
    json_object_set_string_member (range, "range_end", end);
    vmr_cluster_call (self, "kv/range", range, range_done_cb, NULL, NULL);
}

/* ---- what `cluster status` shows ---- */

/* the object of @storage in @array, made with @budget if there is none yet */
static JsonObject *
status_of (JsonArray *array, const gchar *storage, guint64 budget)
{
    JsonObject *object;

    for (guint i = 0; i < json_array_get_length (array); i++) {
        object = json_array_get_object_element (array, i);
        if (g_strcmp0 (vmr_json_get_string (object, "storage"), storage) == 0)
            return object;
    }
    object = json_object_new ();
    json_object_set_string_member (object, "storage", storage);
    json_object_set_int_member (object, "budget", (gint64) budget);
    json_object_set_int_member (object, "held", 0);
    json_object_set_array_member (object, "shares", json_array_new ());
    json_array_add_object_element (array, object);
    return object;
}

JsonArray *
vmr_cluster_budgets_status (VmrCluster *self, GPtrArray *shares)
{
    JsonArray *array = json_array_new ();
    GHashTableIter iter;
    LocalShare *local;

    /* the budgets of this host's policy first, with or without holders */
    g_hash_table_iter_init (&iter, self->budgets->local);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &local))
        status_of (array, local->storage, local->state.budget);
    for (guint i = 0; i < shares->len; i++) {
        JsonObject *value = g_ptr_array_index (shares, i);
        const gchar *storage = vmr_json_get_string (value, "storage");
        JsonObject *object;
        JsonObject *share;

        if (storage == NULL || vmr_json_get_string (value, "host") == NULL)
            continue;
        object = status_of (array, storage, vmr_json_uint_or (value, "budget", 0));
        share = json_object_new ();
        json_object_set_string_member (share, "host", vmr_json_get_string (value, "host"));
        json_object_set_int_member (share, "share", vmr_json_int_or (value, "share", 0));
        json_object_set_int_member (share, "copies", vmr_json_int_or (value, "copies", 0));
        json_object_set_string_member (share, "lease", vmr_json_get_string (value, "lease"));
        json_array_add_object_element (vmr_json_get_array (object, "shares"), share);
        json_object_set_int_member (object, "held",
                                    vmr_json_int_or (object, "held", 0)
                                        + vmr_json_int_or (value, "share", 0));
    }
    return array;
}
