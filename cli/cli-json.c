#define G_LOG_DOMAIN "vmr-cli"

#include "cli-json.h"

#include <stdio.h>

#include "vmr-error.h"
#include "vmr-json.h"

JsonObject *
vmr_cli_json_expect_object (JsonNode *node, const gchar *command, GError **error)
{
    JsonObject *obj = vmr_json_node_object (node);

    if (obj == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' from virt-mirrord: not an object", command);
    return obj;
}

JsonArray *
vmr_cli_json_expect_array (JsonNode *node, const gchar *command, GError **error)
{
    JsonArray *array = vmr_json_node_array (node);

    if (array == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' from virt-mirrord: not a list", command);
    return array;
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
