#define G_LOG_DOMAIN "vmr-hook"

#include "hook-message.h"

#include <string.h>

#include <json-glib/json-glib.h>

gchar *
vmr_hook_uuid_from_xml (const gchar *xml)
{
    const gchar *start = strstr (xml, "<uuid>");
    const gchar *end = start != NULL ? strstr (start, "</uuid>") : NULL;
    g_autofree gchar *uuid = NULL;

    /* the first <uuid> of a domain XML is the domain's own */
    if (end == NULL)
        return NULL;
    start += strlen ("<uuid>");
    uuid = g_strstrip (g_strndup (start, (gsize) (end - start)));
    if (!g_uuid_string_is_valid (uuid))
        return NULL;
    return g_steal_pointer (&uuid);
}

gchar *
vmr_hook_build_message (gchar **argv, const gchar *uuid)
{
    const gchar *names[] = { "domain", "op", "subop", "extra" };
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonGenerator) generator = json_generator_new ();
    g_autoptr (JsonNode) root = NULL;
    g_autofree gchar *text = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "execute");
    json_builder_add_string_value (builder, "hook-event");
    json_builder_set_member_name (builder, "arguments");
    json_builder_begin_object (builder);
    for (guint i = 0; i < G_N_ELEMENTS (names) && argv[i] != NULL; i++) {
        /* JSON strings must be UTF-8; libvirt's names are */
        if (!g_utf8_validate (argv[i], -1, NULL))
            continue;
        json_builder_set_member_name (builder, names[i]);
        json_builder_add_string_value (builder, argv[i]);
    }
    if (uuid != NULL) {
        json_builder_set_member_name (builder, "uuid");
        json_builder_add_string_value (builder, uuid);
    }
    json_builder_end_object (builder);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    json_generator_set_root (generator, root);
    text = json_generator_to_data (generator, NULL);
    return g_strconcat (text, "\n", NULL);
}
