#define G_LOG_DOMAIN "vmr-cli"

#include "cli-json.h"

#include <stdio.h>

#include "vmr-error.h"

static JsonNode *
get_member (JsonObject *obj, const gchar *name)
{
    if (obj == NULL)
        return NULL;
    return json_object_get_member (obj, name);
}

const gchar *
vmr_cli_json_get_string (JsonObject *obj, const gchar *name)
{
    JsonNode *node = get_member (obj, name);

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string (node);
}

JsonObject *
vmr_cli_json_get_object (JsonObject *obj, const gchar *name)
{
    JsonNode *node = get_member (obj, name);

    if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
        return NULL;
    return json_node_get_object (node);
}

JsonArray *
vmr_cli_json_get_array (JsonObject *obj, const gchar *name)
{
    JsonNode *node = get_member (obj, name);

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node))
        return NULL;
    return json_node_get_array (node);
}

gboolean
vmr_cli_json_get_double (JsonObject *obj, const gchar *name, gdouble *out)
{
    JsonNode *node = get_member (obj, name);
    GType type;

    if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
        return FALSE;
    type = json_node_get_value_type (node);
    if (type == G_TYPE_INT64)
        *out = (gdouble) json_node_get_int (node);
    else if (type == G_TYPE_DOUBLE)
        *out = json_node_get_double (node);
    else
        return FALSE;
    return TRUE;
}

gboolean
vmr_cli_json_get_int (JsonObject *obj, const gchar *name, gint64 *out)
{
    JsonNode *node = get_member (obj, name);
    GType type;

    if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
        return FALSE;
    type = json_node_get_value_type (node);
    if (type != G_TYPE_INT64 && type != G_TYPE_DOUBLE)
        return FALSE;
    *out = json_node_get_int (node);
    return TRUE;
}

gboolean
vmr_cli_json_get_boolean (JsonObject *obj, const gchar *name, gboolean fallback)
{
    JsonNode *node = get_member (obj, name);

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
        return fallback;
    return json_node_get_boolean (node);
}

JsonObject *
vmr_cli_json_expect_object (JsonNode *node, const gchar *command, GError **error)
{
    if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' from virt-mirrord: not an object", command);
        return NULL;
    }
    return json_node_get_object (node);
}

JsonArray *
vmr_cli_json_expect_array (JsonNode *node, const gchar *command, GError **error)
{
    if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' from virt-mirrord: not a list", command);
        return NULL;
    }
    return json_node_get_array (node);
}

gchar *
vmr_cli_json_to_string (JsonNode *node, gboolean pretty)
{
    g_autoptr (JsonGenerator) generator = json_generator_new ();

    json_generator_set_pretty (generator, pretty);
    json_generator_set_indent (generator, 2);
    json_generator_set_root (generator, node);
    return json_generator_to_data (generator, NULL);
}

void
vmr_cli_json_print (JsonNode *node)
{
    g_autofree gchar *text = vmr_cli_json_to_string (node, TRUE);

    /* JSON is UTF-8 whatever the locale, so no charset conversion */
    fputs (text, stdout);
    fputc ('\n', stdout);
    fflush (stdout);
}

void
vmr_cli_json_print_error (const gchar *class_name, const gchar *desc)
{
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) root = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "error");
    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "class");
    json_builder_add_string_value (builder, class_name);
    json_builder_set_member_name (builder, "desc");
    json_builder_add_string_value (builder, desc);
    json_builder_end_object (builder);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    vmr_cli_json_print (root);
}
