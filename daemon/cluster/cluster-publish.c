#define G_LOG_DOMAIN "vmr-cluster"

/*
 * What this daemon publishes under its lease for `cluster jobs`: each
 * unfinished job at its last transition, /virt-mirror/CLUSTER/jobs/HOST/INSTANCE/JOB
 * (its member key is cluster-connect.c's).
 */

#include "cluster-private.h"

/* where the daemon publishes @job: under its host and instance, which no other daemon shares */
static gchar *
published_key (VmrCluster *self, const gchar *job)
{
    return g_strdup_printf ("/virt-mirror/%s/jobs/%s/%s/%s", self->config->name, self->config->host,
                            self->instance, job);
}

/* ---- writes of one key, one after the other ---- */

/*
 * The writes of one key: at most one on its way, and one waiting that the
 * newest value replaces. Two puts of one key on their way at once could
 * land in either order and leave etcd with the older value.
 */
typedef struct {
    gchar *pending;       /* the value to put next, or NULL */
    gboolean pending_set; /* a write waits: put @pending, or delete when it is NULL */
    gboolean in_flight;   /* a write is on its way */
    gboolean deleting;    /* ... and it is a delete */
} KeyWrites;

static void
key_writes_free (KeyWrites *writes)
{
    g_free (writes->pending);
    g_free (writes);
}

typedef struct {
    gchar *key;
} Written;

static void send_write (VmrCluster *self, const gchar *key, KeyWrites *writes, gchar *value,
                        gboolean delete);

static void
written_cb (VmrCluster *self, JsonObject *reply, const GError *error, gpointer user_data)
{
    Written *written = user_data;
    KeyWrites *writes = g_hash_table_lookup (self->writes, written->key);

    if (writes == NULL)
        return;
    writes->in_flight = FALSE;
    if (reply == NULL) {
        /* a lost etcd shows in the keep-alive; the next sync puts again what is published */
        g_debug ("cluster: writing %s: %s", written->key, error->message);
        if (writes->deleting)
            g_hash_table_add (self->released, g_strdup (written->key));
    }
    if (writes->pending_set) {
        gchar *next = g_steal_pointer (&writes->pending);

        writes->pending_set = FALSE;
        send_write (self, written->key, writes, next, next == NULL);
        return;
    }
    g_hash_table_remove (self->writes, written->key);
}

static void
written_free (Written *written)
{
    g_free (written->key);
    g_free (written);
}

/* sends the put of @value (consumed), or the delete when @delete */
static void
send_write (VmrCluster *self, const gchar *key, KeyWrites *writes, gchar *value, gboolean delete)
{
    g_autofree gchar *owned = value;
    Written *written = g_new0 (Written, 1);
    JsonObject *request;

    written->key = g_strdup (key);
    writes->in_flight = TRUE;
    writes->deleting = delete;
    if (delete) {
        g_autofree gchar *encoded = vmr_etcd_encode (key);

        request = json_object_new ();
        json_object_set_string_member (request, "key", encoded);
        vmr_cluster_call (self, "kv/deleterange", request, written_cb, written,
                          (GDestroyNotify) written_free);
        return;
    }
    vmr_cluster_call (self, "kv/put", vmr_cluster_put_text (self, key, owned), written_cb, written,
                      (GDestroyNotify) written_free);
}

void
vmr_cluster_write_key (VmrCluster *self, const gchar *key, const gchar *value)
{
    KeyWrites *writes = g_hash_table_lookup (self->writes, key);

    if (writes == NULL) {
        writes = g_new0 (KeyWrites, 1);
        g_hash_table_insert (self->writes, g_strdup (key), writes);
    }
    /* without a lease (not yet granted, or lost), or a name of its own, it waits for the next sync
     */
    if (writes->in_flight || self->lease_id == NULL || self->refused_by != NULL) {
        g_free (writes->pending);
        writes->pending = g_strdup (value);
        writes->pending_set = TRUE;
        return;
    }
    send_write (self, key, writes, g_strdup (value), value == NULL);
}

void
vmr_cluster_flush_writes (VmrCluster *self)
{
    GHashTableIter iter;
    const gchar *key;
    KeyWrites *writes;

    g_hash_table_iter_init (&iter, self->writes);
    while (g_hash_table_iter_next (&iter, (gpointer *) &key, (gpointer *) &writes)) {
        gchar *next;

        if (writes->in_flight || !writes->pending_set)
            continue;
        next = g_steal_pointer (&writes->pending);
        writes->pending_set = FALSE;
        send_write (self, key, writes, next, next == NULL);
    }
}

void
vmr_cluster_keep_key (VmrCluster *self, const gchar *key, const gchar *value)
{
    g_hash_table_replace (self->kept, g_strdup (key), g_strdup (value));
    vmr_cluster_write_key (self, key, value);
}

void
vmr_cluster_forget_key (VmrCluster *self, const gchar *key)
{
    if (g_hash_table_remove (self->kept, key))
        vmr_cluster_write_key (self, key, NULL);
}

GHashTable *
vmr_cluster_writes_new (void)
{
    return g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                  (GDestroyNotify) key_writes_free);
}

/* ---- what this daemon publishes ---- */

void
vmr_cluster_publish_all (VmrCluster *self)
{
    GHashTableIter iter;
    const gchar *job;
    const gchar *value;

    /* the jobs' keys in their turn: what `cluster jobs` shows, not what the sync waits for */
    g_hash_table_iter_init (&iter, self->published);
    while (g_hash_table_iter_next (&iter, (gpointer *) &job, (gpointer *) &value)) {
        g_autofree gchar *job_key = published_key (self, job);

        vmr_cluster_write_key (self, job_key, value);
    }
    g_hash_table_iter_init (&iter, self->kept);
    while (g_hash_table_iter_next (&iter, (gpointer *) &job, (gpointer *) &value))
        vmr_cluster_write_key (self, job, value);
    vmr_cluster_flush_writes (self);
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
        vmr_cluster_write_key (self, key, value);
}

void
vmr_cluster_unpublish_job (VmrCluster *self, const gchar *job)
{
    g_autofree gchar *key = published_key (self, job);

    /* one published by an earlier run, under the lease kept across the restart, goes too */
    if (!g_hash_table_remove (self->published, job) && !self->kept_from_earlier)
        return;
    /* a key left behind by a lost etcd goes with the lease, or at the next sync */
    if (self->lease_id != NULL)
        vmr_cluster_write_key (self, key, NULL);
}
