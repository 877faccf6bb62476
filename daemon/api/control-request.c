/*
 * A request on the control socket: its answer, a value or an error, sent on
 * the stream it came from, and the check of its arguments against the
 * schema of its command.
 */
#define G_LOG_DOMAIN "vmr-daemon"

#include "control-request.h"

#include "vmr-error.h"

/* ---- replies ---- */

Request *
vmr_control_request_new (VmrControlServer *server, VmrQmpStream *stream, JsonNode *id,
                         const gchar *command)
{
    Request *req = g_new0 (Request, 1);

    req->server = g_object_ref (server);
    req->stream = g_object_ref (stream);
    req->id = id != NULL ? json_node_copy (id) : NULL;
    req->command = g_strdup (command);
    return req;
}

static void
request_free (Request *req)
{
    g_object_unref (req->server);
    g_object_unref (req->stream);
    g_clear_pointer (&req->id, json_node_unref);
    g_free (req->command);
    g_free (req);
}

static void
request_reply (Request *req, const gchar *member, JsonNode *value)
{
    g_autoptr (JsonObject) msg = json_object_new ();

    json_object_set_member (msg, member, value);
    if (req->id != NULL)
        json_object_set_member (msg, "id", json_node_copy (req->id));
    vmr_qmp_stream_send (req->stream, msg);
}

/* answers with @value (consumed) and frees @req */
static void
request_return (Request *req, JsonNode *value)
{
    request_reply (req, "return", value);
    request_free (req);
}

void
vmr_control_request_return_object (Request *req, JsonObject *obj)
{
    JsonNode *node = json_node_new (JSON_NODE_OBJECT);

    json_node_take_object (node, obj);
    request_return (req, node);
}

void
vmr_control_request_return_array (Request *req, JsonArray *array)
{
    JsonNode *node = json_node_new (JSON_NODE_ARRAY);

    json_node_take_array (node, array);
    request_return (req, node);
}

/* answers with @error and frees @req */
void
vmr_control_request_error (Request *req, const GError *error)
{
    JsonNode *node = json_node_new (JSON_NODE_OBJECT);

    g_message ("%s: %s", req->command, error->message);
    json_node_take_object (node, vmr_control_error_object (error));
    request_reply (req, "error", node);
    request_free (req);
}

JsonObject *
vmr_control_error_object (const GError *error)
{
    JsonObject *err = json_object_new ();
    gint code = error->domain == VMR_ERROR ? error->code : VMR_ERROR_FAILED;

    json_object_set_string_member (err, "class", vmr_error_class_name (code));
    json_object_set_string_member (err, "desc", error->message);
    return err;
}

/* ---- arguments ---- */

gboolean
vmr_control_check_args (JsonObject *args, const ArgSpec *spec, GError **error)
{
    g_autoptr (GList) members = json_object_get_members (args);

    for (GList *l = members; l != NULL; l = l->next) {
        gboolean known = FALSE;

        for (const ArgSpec *s = spec; s != NULL && s->name != NULL; s++)
            known |= g_strcmp0 (s->name, l->data) == 0;
        if (!known) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "parameter '%s' is unexpected", (const gchar *) l->data);
            return FALSE;
        }
    }
    for (const ArgSpec *s = spec; s != NULL && s->name != NULL; s++) {
        JsonNode *node = json_object_get_member (args, s->name);
        GType value_type;

        if (node == NULL || JSON_NODE_HOLDS_NULL (node)) {
            if (s->required) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "parameter '%s' is missing", s->name);
                return FALSE;
            }
            continue;
        }
        value_type = JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node) : G_TYPE_NONE;
        if (s->type == ARG_ARRAY) {
            if (!JSON_NODE_HOLDS_ARRAY (node)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "parameter '%s' must be an array", s->name);
                return FALSE;
            }
            continue;
        }
        if ((s->type == ARG_STRING && value_type != G_TYPE_STRING)
            || (s->type == ARG_BOOL && value_type != G_TYPE_BOOLEAN)
            || (s->type == ARG_UINT
                && (value_type != G_TYPE_INT64 || json_node_get_int (node) < 0))) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "parameter '%s' must be %s",
                         s->name,
                         s->type == ARG_STRING ? "a string"
                         : s->type == ARG_BOOL ? "a boolean"
                                               : "a non-negative integer");
            return FALSE;
        }
    }
    return TRUE;
}
