#define G_LOG_DOMAIN "vmr-cluster"

/*
 * What this daemon publishes under its lease for `cluster status` and
 * `cluster jobs`: its member key, /virt-mirror/CLUSTER/members/HOST, and
 * each unfinished job at its last transition, /virt-mirror/CLUSTER/jobs/HOST/JOB.
 */

#include "cluster-private.h"

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

guint
vmr_cluster_publish_all (VmrCluster *self, ReplyFunc func)
{
    g_autofree gchar *member_key = published_key (self, NULL);
    g_autofree gchar *member = g_strdup_printf (
        "{\"host\":\"%s\",\"lease-ttl\":%" G_GINT64_FORMAT ",\"since\":%" G_GINT64_FORMAT "}",
        self->config->host, self->config->lease_ttl_us / G_USEC_PER_SEC, g_get_real_time ());
    GHashTableIter iter;
    const gchar *job;
    const gchar *value;

    vmr_cluster_call (self, "kv/put", vmr_cluster_put_text (self, member_key, member), func, NULL,
                      NULL);
    g_hash_table_iter_init (&iter, self->published);
    while (g_hash_table_iter_next (&iter, (gpointer *) &job, (gpointer *) &value)) {
        g_autofree gchar *job_key = published_key (self, job);

        vmr_cluster_call (self, "kv/put", vmr_cluster_put_text (self, job_key, value), func, NULL,
                          NULL);
    }
    return 1 + g_hash_table_size (self->published);
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
        vmr_cluster_call (self, "kv/put", vmr_cluster_put_text (self, key, value), publish_done_cb,
                          NULL, NULL);
}

void
vmr_cluster_unpublish_job (VmrCluster *self, const gchar *job)
{
    g_autofree gchar *key = published_key (self, job);

    if (!g_hash_table_remove (self->published, job))
        return;
    /* a key left behind by a lost etcd goes with the lease */
    if (self->lease_id != NULL)
        vmr_cluster_delete_key (self, key, publish_done_cb);
}
