#define G_LOG_DOMAIN "vmr-daemon"

#include "disk.h"

VmrDisk *
vmr_disk_new (void)
{
    return g_new0 (VmrDisk, 1);
}

void
vmr_disk_free (VmrDisk *self)
{
    if (self == NULL)
        return;
    g_free (self->id);
    g_free (self->node);
    g_free (self->file_node);
    g_free (self->format);
    g_free (self->path);
    g_free (self->iothread);
    g_strfreev (self->iothreads);
    g_free (self);
}

static JsonArray *
iothreads_to_json (const VmrDisk *self)
{
    JsonArray *array = json_array_new ();

    for (guint i = 0; self->iothreads != NULL && self->iothreads[i] != NULL; i++)
        json_array_add_string_element (array, self->iothreads[i]);
    return array;
}

JsonObject *
vmr_disk_to_json (const VmrDisk *self, const gchar *job_id)
{
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "id", self->id);
    json_object_set_string_member (obj, "node", self->node);
    json_object_set_string_member (obj, "format", self->format);
    json_object_set_string_member (obj, "path", self->path);
    json_object_set_int_member (obj, "size", (gint64) self->size);
    json_object_set_int_member (obj, "allocated", (gint64) self->allocated);
    if (self->iothread != NULL)
        json_object_set_string_member (obj, "iothread", self->iothread);
    else
        json_object_set_null_member (obj, "iothread");
    json_object_set_array_member (obj, "iothreads", iothreads_to_json (self));
    if (job_id != NULL)
        json_object_set_string_member (obj, "job", job_id);
    return obj;
}

VmrDisk *
vmr_disk_lookup (GPtrArray *disks, const gchar *name)
{
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (disks, i);

        if (g_strcmp0 (disk->id, name) == 0)
            return disk;
    }
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (disks, i);

        if (g_strcmp0 (disk->node, name) == 0)
            return disk;
    }
    return NULL;
}
