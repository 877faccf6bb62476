#define G_LOG_DOMAIN "vmr-cluster"

/*
 * The cluster's calls to etcd, each answered on the main loop unless the
 * cluster is disposed, and the requests the other files build on: puts
 * of text and of queue keys under the lease, deletes.
 */

#include "cluster-private.h"

#include "vmr-error.h"
#include "vmr-json.h"

void
vmr_cluster_emit_changed (VmrCluster *self)
{
    g_signal_emit_by_name (self, "changed");
}

void
vmr_cluster_set_unavailable (VmrCluster *self, const GError *error)
{
    if (self->available)
        g_warning ("cluster %s: etcd lost (%s): no new copy starts until it is back",
                   self->config->name, error != NULL ? error->message : "its watch ended");
    self->available = FALSE;
    vmr_cluster_emit_changed (self);
}

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
void
vmr_cluster_call (VmrCluster *self, const gchar *method, JsonObject *body, ReplyFunc func,
                  gpointer data, GDestroyNotify destroy)
{
    Call *call;

    if (self->left && !g_str_equal (method, "lease/revoke")) {
        g_autoptr (GError) error = g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                                "cluster %s: left", self->config->name);

        json_object_unref (body);
        func (self, NULL, error, data);
        if (destroy != NULL)
            destroy (data);
        return;
    }
    call = g_new0 (Call, 1);
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

/* a PutRequest of @local's key and value under the lease */
JsonObject *
vmr_cluster_put_job (VmrCluster *self, const LocalJob *local)
{
    JsonObject *put = json_object_new ();
    g_autofree gchar *value = value_of (self, local);

    json_object_set_string_member (put, "key", local->key);
    json_object_set_string_member (put, "value", value);
    json_object_set_string_member (put, "lease", self->lease_id);
    return encode_put (put);
}

JsonObject *
vmr_cluster_put_text (VmrCluster *self, const gchar *key, const gchar *value)
{
    JsonObject *put = json_object_new ();
    g_autofree gchar *encoded_key = vmr_etcd_encode (key);
    g_autofree gchar *encoded_value = vmr_etcd_encode (value);

    json_object_set_string_member (put, "key", encoded_key);
    json_object_set_string_member (put, "value", encoded_value);
    json_object_set_string_member (put, "lease", self->lease_id);
    return put;
}

void
vmr_cluster_delete_key (VmrCluster *self, const gchar *key, ReplyFunc func)
{
    JsonObject *request = json_object_new ();
    g_autofree gchar *encoded = vmr_etcd_encode (key);

    json_object_set_string_member (request, "key", encoded);
    vmr_cluster_call (self, "kv/deleterange", request, func, NULL, NULL);
}
