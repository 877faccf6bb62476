/*
 * The daemon's replies: checking the type of a whole reply, and printing
 * JSON. Their members are read with vmr-json.h.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

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
