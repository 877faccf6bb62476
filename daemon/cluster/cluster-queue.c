#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster-queue.h"

#include "etcd-client.h"
#include "vmr-json.h"

/* a queue key as the view has it */
typedef struct {
    gchar *key;
    gint64 create_revision;
    gchar *host;
    gchar *job;
    gchar *source;
    gchar *destination;
    gboolean started;
} QueueEntry;

struct _VmrClusterQueue {
    GHashTable *entries; /* key -> QueueEntry * */
};

static void
queue_entry_free (QueueEntry *entry)
{
    g_free (entry->key);
    g_free (entry->host);
    g_free (entry->job);
    g_free (entry->source);
    g_free (entry->destination);
    g_free (entry);
}

gint64
vmr_etcd_json_revision (JsonObject *reply)
{
    JsonObject *header = vmr_json_get_object (reply, "header");

    return header != NULL ? vmr_etcd_json_int64 (header, "revision") : 0;
}

/* a queue entry from a KeyValue of etcd, or NULL when it is not one of ours */
static QueueEntry *
parse_entry (JsonObject *kv)
{
    g_autofree gchar *key = vmr_etcd_decode (vmr_json_get_string (kv, "key"));
    g_autofree gchar *value = vmr_etcd_decode (vmr_json_get_string (kv, "value"));
    g_autoptr (JsonParser) parser = json_parser_new ();
    gint64 create = vmr_etcd_json_int64 (kv, "create_revision");
    JsonObject *object;
    QueueEntry *entry;

    if (key == NULL || value == NULL || create <= 0
        || !vmr_json_parser_load (parser, value, -1, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
        g_debug ("a queue key that is not ours: %s", key != NULL ? key : "(not text)");
        return NULL;
    }
    object = json_node_get_object (json_parser_get_root (parser));
    if (vmr_json_get_string (object, "source") == NULL
        || vmr_json_get_string (object, "destination") == NULL)
        return NULL;
    entry = g_new0 (QueueEntry, 1);
    entry->key = g_steal_pointer (&key);
    entry->create_revision = create;
    entry->host = g_strdup (vmr_json_get_string (object, "host"));
    entry->job = g_strdup (vmr_json_get_string (object, "job"));
    entry->source = g_strdup (vmr_json_get_string (object, "source"));
    entry->destination = g_strdup (vmr_json_get_string (object, "destination"));
    entry->started = vmr_json_bool_or (object, "started", FALSE);
    return entry;
}

static gint
compare_entries (gconstpointer a, gconstpointer b)
{
    const QueueEntry *first = *(const QueueEntry *const *) a;
    const QueueEntry *second = *(const QueueEntry *const *) b;

    return first->create_revision < second->create_revision   ? -1
           : first->create_revision > second->create_revision ? 1
                                                              : 0;
}

static guint
count_of (GHashTable *counts, const gchar *group)
{
    return GPOINTER_TO_UINT (g_hash_table_lookup (counts, group));
}

static void
count_in (GHashTable *counts, const gchar *group)
{
    g_hash_table_insert (counts, (gpointer) group, GUINT_TO_POINTER (count_of (counts, group) + 1));
}

static const gchar *
copies (guint n)
{
    return n == 1 ? "copy" : "copies";
}

static void
count_copy (guint *total, GHashTable *sources, GHashTable *destinations, const gchar *source,
            const gchar *destination)
{
    (*total)++;
    count_in (sources, source);
    count_in (destinations, destination);
}

static gboolean
is_own (const VmrQueueCopy *own, guint n_own, const gchar *key)
{
    for (guint i = 0; i < n_own; i++) {
        if (g_str_equal (own[i].key, key))
            return TRUE;
    }
    return FALSE;
}

gboolean
vmr_cluster_queue_admits (VmrClusterQueue *self, const VmrClusterConfig *config,
                          const VmrQueueCopy *own, guint n_own, const gchar *key,
                          const gchar **out_limit, gchar **out_reason)
{
    g_autoptr (GPtrArray) waiting = g_ptr_array_new ();
    g_autoptr (GHashTable) sources = g_hash_table_new (g_str_hash, g_str_equal);
    g_autoptr (GHashTable) destinations = g_hash_table_new (g_str_hash, g_str_equal);
    g_autoptr (GHashTable) blocked_sources = g_hash_table_new (g_str_hash, g_str_equal);
    g_autoptr (GHashTable) blocked_destinations = g_hash_table_new (g_str_hash, g_str_equal);
    guint total = 0;
    GHashTableIter iter;
    QueueEntry *entry;

    for (guint i = 0; i < n_own; i++)
        count_copy (&total, sources, destinations, own[i].source, own[i].destination);
    g_hash_table_iter_init (&iter, self->entries);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        if (is_own (own, n_own, entry->key))
            continue;
        /* this daemon's own key is waiting whatever an older value says */
        if (entry->started && !g_str_equal (entry->key, key))
            count_copy (&total, sources, destinations, entry->source, entry->destination);
        else
            g_ptr_array_add (waiting, entry);
    }
    g_ptr_array_sort (waiting, compare_entries);
    for (guint i = 0; i < waiting->len; i++) {
        const gchar *limit = NULL;
        g_autofree gchar *reason = NULL;

        entry = g_ptr_array_index (waiting, i);
        if (config->max_parallel > 0 && total >= config->max_parallel) {
            limit = "max-parallel";
            reason = g_strdup_printf ("held by the cluster's max-parallel (%u %s in cluster %s)",
                                      total, copies (total), config->name);
        } else if (config->max_per_source > 0
                   && (count_of (sources, entry->source) >= config->max_per_source
                       || g_hash_table_contains (blocked_sources, entry->source))) {
            limit = "max-parallel-per-source";
            reason
                = g_strdup_printf ("held by the cluster's max-parallel-per-source (%u %s from %s)",
                                   count_of (sources, entry->source),
                                   copies (count_of (sources, entry->source)), entry->source);
            g_hash_table_add (blocked_sources, entry->source);
        } else if (config->max_per_destination > 0
                   && (count_of (destinations, entry->destination) >= config->max_per_destination
                       || g_hash_table_contains (blocked_destinations, entry->destination))) {
            limit = "max-parallel-per-destination";
            reason
                = g_strdup_printf ("held by the cluster's max-parallel-per-destination (%u "
                                   "copies to %s)",
                                   count_of (destinations, entry->destination), entry->destination);
            g_hash_table_add (blocked_destinations, entry->destination);
        } else {
            count_copy (&total, sources, destinations, entry->source, entry->destination);
        }
        if (g_str_equal (entry->key, key)) {
            *out_limit = limit;
            *out_reason = g_steal_pointer (&reason);
            return limit == NULL;
        }
    }
    *out_limit = "cluster";
    *out_reason = g_strdup ("waiting for its place in the cluster's queue");
    return FALSE;
}

void
vmr_cluster_queue_apply_event (VmrClusterQueue *self, JsonObject *event)
{
    JsonObject *kv = vmr_json_get_object (event, "kv");
    g_autofree gchar *key = kv != NULL ? vmr_etcd_decode (vmr_json_get_string (kv, "key")) : NULL;

    if (key == NULL)
        return;
    /* PUT is the enum's zero, which etcd's JSON leaves out */
    if (g_strcmp0 (vmr_json_get_string (event, "type"), "DELETE") == 0) {
        g_hash_table_remove (self->entries, key);
        return;
    }
    vmr_cluster_queue_put (self, kv);
}

VmrClusterQueue *
vmr_cluster_queue_new (void)
{
    VmrClusterQueue *self = g_new0 (VmrClusterQueue, 1);

    self->entries
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) queue_entry_free);
    return self;
}

void
vmr_cluster_queue_free (VmrClusterQueue *self)
{
    if (self == NULL)
        return;
    g_hash_table_unref (self->entries);
    g_free (self);
}

void
vmr_cluster_queue_clear (VmrClusterQueue *self)
{
    g_hash_table_remove_all (self->entries);
}

void
vmr_cluster_queue_put (VmrClusterQueue *self, JsonObject *kv)
{
    QueueEntry *entry = parse_entry (kv);

    if (entry != NULL)
        g_hash_table_replace (self->entries, entry->key, entry);
}

gboolean
vmr_cluster_queue_contains (VmrClusterQueue *self, const gchar *key)
{
    return g_hash_table_contains (self->entries, key);
}

guint
vmr_cluster_queue_size (VmrClusterQueue *self)
{
    return g_hash_table_size (self->entries);
}
