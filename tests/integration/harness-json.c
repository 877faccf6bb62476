#define G_LOG_DOMAIN "vmr-test"

/*
 * Members of the JSON the daemon, the CLI and QEMU print, read with
 * vmr-json: a member the test needs and does not find fails the test with
 * its name, never a critical.
 */

#include "harness.h"

/* @value, unless it is NULL: then the test fails, @member is not @what */
static gpointer
member_needed (gconstpointer value, const gchar *member, const gchar *what)
{
    if (value == NULL)
        vmr_fail ("member '%s' is missing or not %s", member, what);
    return (gpointer) value;
}

/* @value, unless it is NULL: then the test fails, a node is not @what */
static gpointer
node_needed (gpointer value, const gchar *what)
{
    if (value == NULL)
        vmr_fail ("expected %s", what);
    return value;
}

const gchar *
vmr_harness_json_string (JsonObject *object, const gchar *member)
{
    return member_needed (vmr_json_get_string (object, member), member, "a string");
}

gint64
vmr_harness_json_int (JsonObject *object, const gchar *member)
{
    gint64 value = 0;

    if (!vmr_json_get_int (object, member, &value))
        vmr_fail ("member '%s' is missing or not an integer", member);
    return value;
}

gboolean
vmr_harness_json_bool (JsonObject *object, const gchar *member)
{
    gboolean value = FALSE;

    if (!vmr_json_get_bool (object, member, &value))
        vmr_fail ("member '%s' is missing or not a boolean", member);
    return value;
}

JsonObject *
vmr_harness_json_object (JsonObject *object, const gchar *member)
{
    return member_needed (vmr_json_get_object (object, member), member, "an object");
}

JsonArray *
vmr_harness_json_array (JsonObject *object, const gchar *member)
{
    return member_needed (vmr_json_get_array (object, member), member, "an array");
}

gboolean
vmr_harness_json_is_null (JsonObject *object, const gchar *member)
{
    JsonNode *node = object != NULL ? json_object_get_member (object, member) : NULL;

    return node != NULL && JSON_NODE_HOLDS_NULL (node);
}

JsonObject *
vmr_harness_json_element (JsonArray *array, guint index)
{
    JsonObject *element = vmr_json_array_object (array, index);

    if (element == NULL)
        vmr_fail ("element %u is missing or not an object", index);
    return element;
}

JsonObject *
vmr_harness_json_node_object (JsonNode *node)
{
    return node_needed (vmr_json_node_object (node), "a JSON object");
}

JsonArray *
vmr_harness_json_node_array (JsonNode *node)
{
    return node_needed (vmr_json_node_array (node), "a JSON array");
}
