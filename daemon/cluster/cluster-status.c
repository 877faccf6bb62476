#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster-status.h"

#include <string.h>

#include "cluster-private.h"
#include "cluster-queue.h"
#include "etcd-client.h"
#include "vmr-json.h"

static gint
compare_revisions (gconstpointer a, gconstpointer b)
{
    gint64 first = json_object_get_int_member (*(JsonObject *const *) a, "revision");
    gint64 second = json_object_get_int_member (*(JsonObject *const *) b, "revision");

    return first < second ? -1 : first > second ? 1 : 0;
}

static JsonArray *
sorted_array (GPtrArray *objects)
{
    JsonArray *array = json_array_new ();

    g_ptr_array_sort (objects, compare_revisions);
    for (guint i = 0; i < objects->len; i++)
        json_array_add_object_element (array, json_object_ref (g_ptr_array_index (objects, i)));
    return array;
}

static void
range_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrCluster *self = g_task_get_source_object (task);
    const VmrClusterConfig *config = vmr_cluster_get_config (self);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) reply
        = vmr_etcd_client_call_finish (VMR_ETCD_CLIENT (source), result, &error);
    g_autofree gchar *prefix = g_strdup_printf ("/virt-mirror/%s/", config->name);
    g_autoptr (GPtrArray) members
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    g_autoptr (GPtrArray) jobs
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    g_autoptr (GPtrArray) queue
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    g_autoptr (GPtrArray) shares
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    JsonArray *kvs;
    JsonObject *status;

    if (reply == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    kvs = vmr_json_get_array (reply, "kvs");
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++) {
        JsonNode *node = json_array_get_element (kvs, i);
        JsonObject *kv = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
        g_autofree gchar *key
            = kv != NULL ? vmr_etcd_decode (vmr_json_get_string (kv, "key")) : NULL;
        JsonObject *value = kv != NULL ? vmr_etcd_kv_object (kv) : NULL;
        const gchar *rest;

        if (key == NULL || value == NULL || !g_str_has_prefix (key, prefix)) {
            g_clear_pointer (&value, json_object_unref);
            continue;
        }
        rest = key + strlen (prefix);
        if (g_str_has_prefix (rest, "members/"))
            g_ptr_array_add (members, value);
        else if (g_str_has_prefix (rest, "jobs/"))
            g_ptr_array_add (jobs, value);
        else if (g_str_has_prefix (rest, "queue/"))
            g_ptr_array_add (queue, value);
        else if (g_str_has_prefix (rest, "budgets/"))
            g_ptr_array_add (shares, value);
        else
            json_object_unref (value);
    }
    status = json_object_new ();
    json_object_set_string_member (status, "name", config->name);
    json_object_set_string_member (status, "host", config->host);
    json_object_set_boolean_member (status, "available", vmr_cluster_is_available (self));
    if (self->identity_error != NULL)
        json_object_set_string_member (status, "refused", self->identity_error);
    json_object_set_string_member (status, "endpoint",
                                   vmr_etcd_client_get_endpoint (vmr_cluster_get_client (self)));
    json_object_set_int_member (status, "max-parallel", (gint64) config->max_parallel);
    json_object_set_int_member (status, "max-parallel-per-source", (gint64) config->max_per_source);
    json_object_set_int_member (status, "max-parallel-per-destination",
                                (gint64) config->max_per_destination);
    json_object_set_int_member (status, "revision", vmr_etcd_json_revision (reply));
    json_object_set_array_member (status, "members", sorted_array (members));
    json_object_set_array_member (status, "jobs", sorted_array (jobs));
    json_object_set_array_member (status, "queue", sorted_array (queue));
    g_ptr_array_sort (shares, compare_revisions);
    json_object_set_array_member (status, "budgets", vmr_cluster_budgets_status (self, shares));
    g_task_return_pointer (task, status, (GDestroyNotify) json_object_unref);
}

void
vmr_cluster_status_async (VmrCluster *self, GCancellable *cancellable, GAsyncReadyCallback callback,
                          gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    g_autofree gchar *prefix
        = g_strdup_printf ("/virt-mirror/%s/", vmr_cluster_get_config (self)->name);
    g_autofree gchar *key = vmr_etcd_encode (prefix);
    g_autofree gchar *end = vmr_etcd_prefix_end (prefix);
    JsonObject *range = json_object_new ();

    json_object_set_string_member (range, "key", key);
    json_object_set_string_member (range, "range_end", end);
    vmr_etcd_client_call_async (vmr_cluster_get_client (self), "kv/range", range, cancellable,
                                range_done_cb, task);
}

JsonObject *
vmr_cluster_status_finish (VmrCluster *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}
