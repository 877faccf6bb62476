/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "vmr-json.h"

#include <math.h>

static JsonNode *
member (JsonObject *obj, const gchar *name)
{
    return obj != NULL && name != NULL ? json_object_get_member (obj, name) : NULL;
}

static GType
value_type (JsonNode *node)
{
    return node != NULL && JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node)
                                                        : G_TYPE_INVALID;
}

JsonObject *
vmr_json_node_object (JsonNode *node)
{
    return node != NULL && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

JsonArray *
vmr_json_node_array (JsonNode *node)
{
    return node != NULL && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const gchar *
vmr_json_node_string (JsonNode *node)
{
    return value_type (node) == G_TYPE_STRING ? json_node_get_string (node) : NULL;
}

const gchar *
vmr_json_get_string (JsonObject *obj, const gchar *name)
{
    return vmr_json_node_string (member (obj, name));
}

JsonObject *
vmr_json_get_object (JsonObject *obj, const gchar *name)
{
    return vmr_json_node_object (member (obj, name));
}

JsonArray *
vmr_json_get_array (JsonObject *obj, const gchar *name)
{
    return vmr_json_node_array (member (obj, name));
}

gboolean
vmr_json_get_int (JsonObject *obj, const gchar *name, gint64 *out)
{
    JsonNode *node = member (obj, name);
    GType type = value_type (node);
    gdouble value;

    if (type == G_TYPE_INT64) {
        *out = json_node_get_int (node);
        return TRUE;
    }
    if (type != G_TYPE_DOUBLE)
        return FALSE;
    /* a parser may read a large integer as a double: take it when it is whole */
    value = json_node_get_double (node);
    if (!isfinite (value) || value != floor (value) || value < -9.2e18 || value > 9.2e18)
        return FALSE;
    *out = (gint64) value;
    return TRUE;
}

gboolean
vmr_json_get_uint (JsonObject *obj, const gchar *name, guint64 *out)
{
    gint64 value;

    if (!vmr_json_get_int (obj, name, &value) || value < 0)
        return FALSE;
    *out = (guint64) value;
    return TRUE;
}

gboolean
vmr_json_get_double (JsonObject *obj, const gchar *name, gdouble *out)
{
    JsonNode *node = member (obj, name);
    GType type = value_type (node);

    if (type == G_TYPE_INT64)
        *out = (gdouble) json_node_get_int (node);
    else if (type == G_TYPE_DOUBLE)
        *out = json_node_get_double (node);
    else
        return FALSE;
    return TRUE;
}

gboolean
vmr_json_get_bool (JsonObject *obj, const gchar *name, gboolean *out)
{
    JsonNode *node = member (obj, name);

    if (value_type (node) != G_TYPE_BOOLEAN)
        return FALSE;
    *out = json_node_get_boolean (node);
    return TRUE;
}

gint64
vmr_json_int_or (JsonObject *obj, const gchar *name, gint64 fallback)
{
    gint64 value;

    return vmr_json_get_int (obj, name, &value) ? value : fallback;
}

guint64
vmr_json_uint_or (JsonObject *obj, const gchar *name, guint64 fallback)
{
    guint64 value;

    return vmr_json_get_uint (obj, name, &value) ? value : fallback;
}

gdouble
vmr_json_double_or (JsonObject *obj, const gchar *name, gdouble fallback)
{
    gdouble value;

    return vmr_json_get_double (obj, name, &value) ? value : fallback;
}

gboolean
vmr_json_bool_or (JsonObject *obj, const gchar *name, gboolean fallback)
{
    gboolean value;

    return vmr_json_get_bool (obj, name, &value) ? value : fallback;
}

JsonObject *
vmr_json_array_object (JsonArray *array, guint index)
{
    if (array == NULL || index >= json_array_get_length (array))
        return NULL;
    return vmr_json_node_object (json_array_get_element (array, index));
}

const gchar *
vmr_json_array_string (JsonArray *array, guint index)
{
    if (array == NULL || index >= json_array_get_length (array))
        return NULL;
    return vmr_json_node_string (json_array_get_element (array, index));
}
