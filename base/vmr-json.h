/*
 * Typed reads of JSON that came from a peer: QEMU, libvirt, a control
 * client, the daemon or a record on disk. One rule for all of them: a member
 * that is missing, null or of another type reads as absent. Nothing here
 * raises a critical, whatever the peer sent; @obj and @array may be NULL.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/*
 * The deepest nesting of arrays and objects taken from a peer. json-glib
 * recurses once per level before it checks anything, so a line of 100 KB of
 * '[' overflows the stack; the daemon's own messages and records nest less
 * than 10 levels deep.
 */
#define VMR_JSON_MAX_DEPTH 64

/*
 * Whether @text (@length bytes, or up to its NUL when @length is -1) nests
 * arrays and objects at most @max_depth deep, read as json-glib reads it:
 * brackets in strings (double-quoted, with escapes, and single-quoted) and
 * in comments do not count. A \u escape that is not four hex digits, or a
 * high surrogate without its low half, is refused too: json-glib reads
 * past the end of such a string. FALSE with VMR_ERROR_PROTOCOL otherwise,
 * one line ("arrays and objects nested deeper than 64 levels"). The text need not be
 * valid JSON otherwise: json-glib says what else is wrong.
 */
gboolean vmr_json_check_depth (const gchar *text, gssize length, guint max_depth, GError **error);

/*
 * Loads @text into @parser as json_parser_load_from_data() does, once
 * vmr_json_check_depth() allowed it with VMR_JSON_MAX_DEPTH: every text
 * from a peer is parsed through here, never by json-glib alone.
 */
gboolean vmr_json_parser_load (JsonParser *parser, const gchar *text, gssize length,
                               GError **error);

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
