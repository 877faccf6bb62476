/*
 * Reading the daemon's replies without trusting their shape, and printing
 * them as JSON.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* the string member @name of @obj; NULL when absent, null or not a string */
const gchar *vmr_cli_json_get_string (JsonObject *obj, const gchar *name);

/* the object or array member @name; NULL when absent or of another type */
JsonObject *vmr_cli_json_get_object (JsonObject *obj, const gchar *name);
JsonArray *vmr_cli_json_get_array (JsonObject *obj, const gchar *name);

/* a number member; FALSE (and *@out untouched) when absent, null or not a number */
gboolean vmr_cli_json_get_double (JsonObject *obj, const gchar *name, gdouble *out);
gboolean vmr_cli_json_get_int (JsonObject *obj, const gchar *name, gint64 *out);

/* a boolean member, or @fallback when absent or not a boolean */
gboolean vmr_cli_json_get_boolean (JsonObject *obj, const gchar *name, gboolean fallback);

/*
 * The reply @node of @command as an object or an array (borrowed from
 * @node); sets VMR_ERROR_PROTOCOL when it has another type.
 */
JsonObject *vmr_cli_json_expect_object (JsonNode *node, const gchar *command, GError **error);
JsonArray *vmr_cli_json_expect_array (JsonNode *node, const gchar *command, GError **error);

/* @node as JSON text; free with g_free() */
gchar *vmr_cli_json_to_string (JsonNode *node, gboolean pretty);

/* @node as indented JSON plus a newline on stdout */
void vmr_cli_json_print (JsonNode *node);

/* {"error": {"class": @class_name, "desc": @desc}} plus a newline on stdout */
void vmr_cli_json_print_error (const gchar *class_name, const gchar *desc);

G_END_DECLS
