/*
 * Typed reads of JSON that came from a peer: QEMU, libvirt, a control
 * client, the daemon or a record on disk. One rule for all of them: a member
 * that is missing, null or of another type reads as absent. Nothing here
 * raises a critical, whatever the peer sent; @obj and @array may be NULL.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* the string member @name, or NULL */
const gchar *vmr_json_get_string (JsonObject *obj, const gchar *name);

/* the object member @name, or NULL */
JsonObject *vmr_json_get_object (JsonObject *obj, const gchar *name);

/* the array member @name, or NULL */
JsonArray *vmr_json_get_array (JsonObject *obj, const gchar *name);

/* the integer member @name (a number without a fraction); FALSE otherwise */
gboolean vmr_json_get_int (JsonObject *obj, const gchar *name, gint64 *out);

/* the integer member @name when it is not negative; FALSE otherwise */
gboolean vmr_json_get_uint (JsonObject *obj, const gchar *name, guint64 *out);

/* the number member @name, with or without a fraction; FALSE otherwise */
gboolean vmr_json_get_double (JsonObject *obj, const gchar *name, gdouble *out);

/* the boolean member @name; FALSE otherwise */
gboolean vmr_json_get_bool (JsonObject *obj, const gchar *name, gboolean *out);

/* the same, with @fallback when the member is absent or of another type */
gint64 vmr_json_int_or (JsonObject *obj, const gchar *name, gint64 fallback);
guint64 vmr_json_uint_or (JsonObject *obj, const gchar *name, guint64 fallback);
gdouble vmr_json_double_or (JsonObject *obj, const gchar *name, gdouble fallback);
gboolean vmr_json_bool_or (JsonObject *obj, const gchar *name, gboolean fallback);

/* @node's object or array, or NULL when @node is NULL or holds something else */
JsonObject *vmr_json_node_object (JsonNode *node);
JsonArray *vmr_json_node_array (JsonNode *node);
/* @node's string, or NULL */
const gchar *vmr_json_node_string (JsonNode *node);

/* element @index of @array as an object or a string, or NULL (also past the end) */
JsonObject *vmr_json_array_object (JsonArray *array, guint index);
const gchar *vmr_json_array_string (JsonArray *array, guint index);

G_END_DECLS
