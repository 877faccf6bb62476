/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "vmr-json.h"

#include <math.h>
#include <string.h>

#include "vmr-error.h"

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

/* ---- the nesting of a text, before json-glib sees it ---- */

typedef enum {
    SCAN_VALUES,        /* between tokens */
    SCAN_STRING,        /* in "...", with escapes */
    SCAN_STRING_SINGLE, /* in '...', which json-glib takes too, without escapes */
    /*
     * from a '/' to the next one, which json-glib skips as a comment: its
     * C comments and "//" are such spans too
     */
    SCAN_COMMENT,
} ScanState;

static gint
hex_value (gchar c)
{
    return g_ascii_isxdigit (c) ? g_ascii_xdigit_value (c) : -1;
}

/* the four hex digits at @text, or -1 when they are not (@left bytes remain) */
static gint
unicode_unit (const gchar *text, gsize left)
{
    gint unit = 0;

    if (left < 4)
        return -1;
    for (guint i = 0; i < 4; i++) {
        if (hex_value (text[i]) < 0)
            return -1;
        unit = unit * 16 + hex_value (text[i]);
    }
    return unit;
}

/*
 * The length of the escape that starts at @text (its backslash; @left bytes
 * remain): 2, 6 for \uXXXX, 12 for a surrogate pair. 0 for a \u escape
 * that json-glib reads otherwise: it swallows the first byte after "\u"
 * that is no hex digit, a closing quote too, and the two bytes after a high
 * surrogate whatever they are, so its string would not end where ours does.
 */
static gsize
escape_length (const gchar *text, gsize left)
{
    gint unit;

    if (left < 2 || text[1] != 'u')
        return MIN (left, 2);
    unit = unicode_unit (text + 2, left - 2);
    if (unit < 0)
        return 0;
    if (unit < 0xd800 || unit > 0xdbff)
        return 6;
    if (left < 12 || text[6] != '\\' || text[7] != 'u')
        return 0;
    unit = unicode_unit (text + 8, left - 8);
    return unit >= 0xdc00 && unit <= 0xdfff ? 12 : 0;
}

gboolean
vmr_json_check_depth (const gchar *text, gssize length, guint max_depth, GError **error)
{
    gsize end = length < 0 ? strlen (text) : (gsize) length;
    ScanState state = SCAN_VALUES;
    guint depth = 0;

    for (gsize i = 0; i < end; i++) {
        gchar c = text[i];

        switch (state) {
            case SCAN_STRING:
                if (c == '"') {
                    state = SCAN_VALUES;
                } else if (c == '\\') {
                    gsize escape = escape_length (text + i, end - i);

                    if (escape == 0) {
                        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                                             "a \\u escape that is not four hex digits, or half "
                                             "a surrogate pair");
                        return FALSE;
                    }
                    i += escape - 1;
                }
                break;
            case SCAN_STRING_SINGLE:
                if (c == '\'')
                    state = SCAN_VALUES;
                break;
            case SCAN_COMMENT:
                if (c == '/')
                    state = SCAN_VALUES;
                break;
            case SCAN_VALUES:
                if (c == '"')
                    state = SCAN_STRING;
                else if (c == '\'')
                    state = SCAN_STRING_SINGLE;
                else if (c == '/')
                    state = SCAN_COMMENT;
                else if ((c == '[' || c == '{') && ++depth > max_depth) {
                    g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                                 "arrays and objects nested deeper than %u levels", max_depth);
                    return FALSE;
                } else if ((c == ']' || c == '}') && depth > 0)
                    depth--;
                break;
        }
    }
    return TRUE;
}

gboolean
vmr_json_parser_load (JsonParser *parser, const gchar *text, gssize length, GError **error)
{
    g_return_val_if_fail (JSON_IS_PARSER (parser), FALSE);
    g_return_val_if_fail (text != NULL, FALSE);

    if (!vmr_json_check_depth (text, length, VMR_JSON_MAX_DEPTH, error))
        return FALSE;
    return json_parser_load_from_data (parser, text, length, error);
}
