#define G_LOG_DOMAIN "vmr-qmp"

#include "qmp-export.h"

JsonObject *
vmr_qmp_nbd_server_args (const gchar *type, const gchar *value)
{
    JsonObject *args = json_object_new ();
    JsonObject *addr = json_object_new ();
    JsonObject *data = json_object_new ();

    json_object_set_string_member (data, g_str_equal (type, "unix") ? "path" : "str", value);
    json_object_set_string_member (addr, "type", type);
    json_object_set_object_member (addr, "data", data);
    json_object_set_object_member (args, "addr", addr);
    return args;
}

JsonObject *
vmr_qmp_nbd_export_args (const gchar *id, const gchar *node, const gchar *bitmap)
{
    JsonObject *args = json_object_new ();

    json_object_set_string_member (args, "type", "nbd");
    json_object_set_string_member (args, "id", id);
    json_object_set_string_member (args, "node-name", node);
    json_object_set_string_member (args, "name", id);
    json_object_set_boolean_member (args, "writable", FALSE);
    if (bitmap != NULL) {
        JsonArray *bitmaps = json_array_new ();

        json_array_add_string_element (bitmaps, bitmap);
        json_object_set_array_member (args, "bitmaps", bitmaps);
    }
    return args;
}

JsonObject *
vmr_qmp_bitmap_copy_args (const gchar *node, const gchar *bitmap, const gchar *copy)
{
    JsonObject *args = json_object_new ();
    JsonArray *actions = json_array_new ();
    JsonObject *add = json_object_new ();
    JsonObject *add_data = json_object_new ();
    JsonObject *merge = json_object_new ();
    JsonObject *merge_data = json_object_new ();
    JsonArray *sources = json_array_new ();

    json_object_set_string_member (add_data, "node", node);
    json_object_set_string_member (add_data, "name", copy);
    json_object_set_boolean_member (add_data, "disabled", TRUE);
    json_object_set_string_member (add, "type", "block-dirty-bitmap-add");
    json_object_set_object_member (add, "data", add_data);
    json_array_add_string_element (sources, bitmap);
    json_object_set_string_member (merge_data, "node", node);
    json_object_set_string_member (merge_data, "target", copy);
    json_object_set_array_member (merge_data, "bitmaps", sources);
    json_object_set_string_member (merge, "type", "block-dirty-bitmap-merge");
    json_object_set_object_member (merge, "data", merge_data);
    json_array_add_object_element (actions, add);
    json_array_add_object_element (actions, merge);
    json_object_set_array_member (args, "actions", actions);
    return args;
}
