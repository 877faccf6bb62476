#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: a domain's disks (query-block, query-named-block-nodes),
 * their I/O threads and those threads' CPU use, and the guest's load on
 * each disk (query-blockstats).
 */

#include "backend-qmp-private.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "qmp-client.h"
#include "vmr-error.h"

/* ---- disk discovery ---- */

typedef struct {
    GPtrArray *disks;      /* of VmrDisk * */
    GPtrArray *qdev_paths; /* QOM path per disk, for the iothread look-up */
    guint pending;
} QueryDisksData;

static void
query_disks_data_free (QueryDisksData *data)
{
    g_ptr_array_unref (data->disks);
    g_ptr_array_unref (data->qdev_paths);
    g_free (data);
}

/*
 * QEMU names an image "json:{...}" when it was opened with options beyond a
 * plain file name; the file name then sits in the innermost "file" object.
 */
static gchar *
plain_filename (const gchar *name)
{
    g_autoptr (JsonParser) parser = NULL;
    JsonObject *obj;

    if (name == NULL || !g_str_has_prefix (name, "json:"))
        return g_strdup (name);
    parser = json_parser_new ();
    if (!json_parser_load_from_data (parser, name + 5, -1, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
        return g_strdup (name);
    obj = json_node_get_object (json_parser_get_root (parser));
    while (obj != NULL) {
        const gchar *filename = vmr_backend_qmp_member_string (obj, "filename");

        if (filename != NULL)
            return g_strdup (filename);
        obj = vmr_backend_qmp_member_object (obj, "file");
    }
    return g_strdup (name);
}

/* "/machine/peripheral/disk0/virtio-backend" -> "disk0" */
static gchar *
qdev_id_from_path (const gchar *qdev, const gchar *device, const gchar *node)
{
    const gchar *prefix = "/machine/peripheral/";

    if (qdev != NULL && g_str_has_prefix (qdev, prefix)) {
        const gchar *start = qdev + strlen (prefix);
        const gchar *end = strchr (start, '/');

        return end != NULL ? g_strndup (start, (gsize) (end - start)) : g_strdup (start);
    }
    if (qdev != NULL && *qdev != '\0' && strchr (qdev, '/') == NULL)
        return g_strdup (qdev);
    if (device != NULL && *device != '\0')
        return g_strdup (device);
    return g_strdup (node);
}

/* ends one look-up; after the last, the disks' single and listed I/O threads agree */
static void
query_disks_done_one (GTask *task)
{
    QueryDisksData *data = g_task_get_task_data (task);

    if (--data->pending != 0)
        return;
    for (guint i = 0; i < data->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (data->disks, i);

        if (disk->iothreads != NULL && disk->iothread == NULL)
            disk->iothread = g_strdup (disk->iothreads[0]);
        if (disk->iothreads == NULL && disk->iothread != NULL) {
            const gchar *const one[] = { disk->iothread, NULL };

            disk->iothreads = g_strdupv ((gchar **) one);
        }
    }
    g_task_return_pointer (task, g_ptr_array_ref (data->disks), (GDestroyNotify) g_ptr_array_unref);
}

/* iothread-vq-mapping: [{"iothread": "io0", "vqs": [0]}, ...], each thread once */
static GStrv
vq_mapping_iothreads (JsonArray *mapping)
{
    g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();
    g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

    for (guint i = 0; i < json_array_get_length (mapping); i++) {
        JsonNode *entry = json_array_get_element (mapping, i);
        const gchar *id
            = JSON_NODE_HOLDS_OBJECT (entry)
                  ? vmr_backend_qmp_member_string (json_node_get_object (entry), "iothread")
                  : NULL;

        if (id == NULL || !g_hash_table_add (seen, (gpointer) id))
            continue;
        g_strv_builder_add (builder, id);
    }
    if (g_hash_table_size (seen) == 0)
        return NULL;
    return g_strv_builder_end (builder);
}

/* the reply to qom-get of "iothread" (a path) or of "iothread-vq-mapping" (a list) */
static void
iothread_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrDisk *disk = g_object_get_data (G_OBJECT (res), "vmr-disk");
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    /* devices without the property have no I/O thread of their own */
    if (reply != NULL && json_node_get_value_type (reply) == G_TYPE_STRING) {
        const gchar *path = json_node_get_string (reply);

        if (path != NULL && *path != '\0') {
            const gchar *slash = strrchr (path, '/');

            disk->iothread = g_strdup (slash != NULL ? slash + 1 : path);
        }
    } else if (reply != NULL && JSON_NODE_HOLDS_ARRAY (reply) && disk->iothreads == NULL) {
        disk->iothreads = vq_mapping_iothreads (json_node_get_array (reply));
    }
    query_disks_done_one (task);
}

/* the CPU time of QEMU's thread @thread_id, in clock ticks; FALSE if it cannot be read */
static gboolean
read_thread_ticks (gint64 thread_id, guint64 *ticks)
{
    g_autofree gchar *status_path
        = g_strdup_printf ("/proc/%" G_GINT64_FORMAT "/status", thread_id);
    g_autofree gchar *status = NULL;
    g_autofree gchar *stat_path = NULL;
    g_autofree gchar *stat = NULL;
    g_auto (GStrv) fields = NULL;
    const gchar *tgid;
    const gchar *end;

    /* the process QEMU runs as, so that the thread is read as one of its tasks */
    if (!g_file_get_contents (status_path, &status, NULL, NULL)
        || (tgid = strstr (status, "\nTgid:")) == NULL)
        return FALSE;
    stat_path = g_strdup_printf ("/proc/%" G_GINT64_FORMAT "/task/%" G_GINT64_FORMAT "/stat",
                                 g_ascii_strtoll (tgid + 6, NULL, 10), thread_id);
    if (!g_file_get_contents (stat_path, &stat, NULL, NULL) || (end = strrchr (stat, ')')) == NULL)
        return FALSE;
    /* after "pid (comm)": state is field 3, utime 14 and stime 15 */
    fields = g_strsplit (g_strstrip ((gchar *) end + 1), " ", -1);
    if (g_strv_length (fields) < 13)
        return FALSE;
    *ticks = g_ascii_strtoull (fields[11], NULL, 10) + g_ascii_strtoull (fields[12], NULL, 10);
    return TRUE;
}

/* query-iothreads: each thread with its CPU use since the previous reading */
static void
query_iothreads_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *threads;
    JsonArray *result;
    gint64 now = g_get_monotonic_time ();
    glong ticks_per_s = sysconf (_SC_CLK_TCK);

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    threads = reply != NULL ? vmr_backend_qmp_reply_array (reply, "query-iothreads", &error) : NULL;
    if (threads == NULL) {
        g_debug ("cannot list the I/O threads of %s: %s", self->monitor_path, error->message);
        query_disks_done_one (task);
        return;
    }
    result = json_array_new ();
    for (guint i = 0; i < json_array_get_length (threads); i++) {
        JsonNode *node = json_array_get_element (threads, i);
        JsonObject *thread = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
        const gchar *id = vmr_backend_qmp_member_string (thread, "id");
        gint64 thread_id = vmr_backend_qmp_member_int (thread, "thread-id");
        IothreadReading *previous;
        JsonObject *entry;
        guint64 ticks = 0;

        if (id == NULL)
            continue;
        entry = json_object_new ();
        json_object_set_string_member (entry, "id", id);
        json_object_set_int_member (entry, "thread-id", thread_id);
        json_object_set_null_member (entry, "cpu");
        previous = g_hash_table_lookup (self->iothread_cpu, id);
        if (thread_id > 0 && ticks_per_s > 0 && read_thread_ticks (thread_id, &ticks)) {
            IothreadReading *reading = g_new0 (IothreadReading, 1);

            if (previous != NULL && previous->thread_id == thread_id && now > previous->time_us
                && ticks >= previous->ticks) {
                gdouble busy_s = (gdouble) (ticks - previous->ticks) / (gdouble) ticks_per_s;
                gdouble percent = busy_s * 1e8 / (gdouble) (now - previous->time_us);

                json_object_set_double_member (entry, "cpu", round (percent * 10.0) / 10.0);
            }
            reading->thread_id = thread_id;
            reading->ticks = ticks;
            reading->time_us = now;
            g_hash_table_replace (self->iothread_cpu, g_strdup (id), reading);
        }
        json_array_add_object_element (result, entry);
    }
    g_clear_pointer (&self->iothreads, json_array_unref);
    self->iothreads = result;
    query_disks_done_one (task);
}

typedef struct {
    GTask *task;
    VmrDisk *disk;
} IothreadLookup;

static void
iothread_lookup_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    IothreadLookup *lookup = user_data;

    g_object_set_data (G_OBJECT (res), "vmr-disk", lookup->disk);
    iothread_cb (source, res, lookup->task);
    g_free (lookup);
}

/*
 * asks for the I/O thread properties of the device at the QOM path @qdev:
 * one thread for the device, or (QEMU 9.0+) a thread per group of queues
 */
static void
look_up_iothreads (VmrBackendQmp *self, GTask *task, VmrDisk *disk, const gchar *qdev)
{
    static const gchar *const properties[] = { "iothread", "iothread-vq-mapping" };
    QueryDisksData *data = g_task_get_task_data (task);

    for (guint p = 0; p < G_N_ELEMENTS (properties); p++) {
        g_autoptr (JsonObject) args = vmr_backend_qmp_args_device ("path", qdev);
        IothreadLookup *lookup = g_new0 (IothreadLookup, 1);

        json_object_set_string_member (args, "property", properties[p]);
        lookup->task = g_object_ref (task);
        lookup->disk = disk;
        data->pending++;
        vmr_qmp_client_execute_async (self->client, "qom-get", args, 0,
                                      g_task_get_cancellable (task), iothread_lookup_cb, lookup);
    }
}

/*
 * "/machine/peripheral/scsi0/virtio-backend/scsi0.0", the bus of a scsi-hd:
 * the controller's virtio device, two levels up, has the I/O thread
 */
static void
parent_bus_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    IothreadLookup *lookup = user_data;
    g_autoptr (GTask) task = lookup->task;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *bus;
    const gchar *slash;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    bus = reply != NULL && json_node_get_value_type (reply) == G_TYPE_STRING
              ? json_node_get_string (reply)
              : NULL;
    /* devices on no bus, or a bus without a device above it, have no thread of theirs */
    if (bus != NULL && bus[0] == '/' && (slash = strrchr (bus, '/')) != NULL && slash != bus) {
        g_autofree gchar *controller = g_strndup (bus, (gsize) (slash - bus));

        look_up_iothreads (self, task, lookup->disk, controller);
    }
    g_free (lookup);
    query_disks_done_one (task);
}

static void
named_nodes_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    QueryDisksData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *nodes;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    nodes = reply != NULL ? vmr_backend_qmp_reply_array (reply, "query-named-block-nodes", &error)
                          : NULL;
    if (nodes == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* the protocol node below each disk's top node: same file, protocol driver */
    for (guint i = 0; i < data->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (data->disks, i);

        for (guint j = 0; j < json_array_get_length (nodes); j++) {
            JsonObject *node = json_array_get_object_element (nodes, j);
            const gchar *drv = vmr_backend_qmp_member_string (node, "drv");
            JsonObject *cache = vmr_backend_qmp_member_object (node, "cache");

            g_autofree gchar *filename
                = plain_filename (vmr_backend_qmp_member_string (node, "file"));

            if (g_strcmp0 (vmr_backend_qmp_member_string (node, "node-name"), disk->node) == 0
                || g_strcmp0 (filename, disk->path) != 0)
                continue;
            if (g_strcmp0 (drv, "file") != 0 && g_strcmp0 (drv, "host_device") != 0)
                continue;
            disk->file_node = g_strdup (vmr_backend_qmp_member_string (node, "node-name"));
            disk->file_cache_direct = vmr_backend_qmp_member_bool (cache, "direct");
            disk->file_cache_no_flush = vmr_backend_qmp_member_bool (cache, "no-flush");
            break;
        }
    }
    data->pending = 2;
    for (guint i = 0; i < data->disks->len; i++) {
        const gchar *qdev = g_ptr_array_index (data->qdev_paths, i);
        VmrDisk *disk = g_ptr_array_index (data->disks, i);

        if (qdev == NULL || *qdev == '\0')
            continue;
        if (qdev[0] == '/') {
            look_up_iothreads (self, task, disk, qdev);
        } else {
            /* a device of a bus (scsi-hd): the I/O thread is its controller's */
            g_autofree gchar *path = g_strdup_printf ("/machine/peripheral/%s", qdev);
            g_autoptr (JsonObject) args = vmr_backend_qmp_args_device ("path", path);
            IothreadLookup *lookup = g_new0 (IothreadLookup, 1);

            json_object_set_string_member (args, "property", "parent_bus");
            lookup->task = g_object_ref (task);
            lookup->disk = disk;
            data->pending++;
            vmr_qmp_client_execute_async (self->client, "qom-get", args, 0,
                                          g_task_get_cancellable (task), parent_bus_cb, lookup);
        }
    }
    vmr_qmp_client_execute_async (self->client, "query-iothreads", NULL, 0,
                                  g_task_get_cancellable (task), query_iothreads_cb,
                                  g_object_ref (task));
    query_disks_done_one (task);
}

/* the image file of a query-block "inserted" object, plain; NULL for none */
gchar *
vmr_backend_qmp_inserted_path (JsonObject *inserted)
{
    JsonObject *image = vmr_backend_qmp_member_object (inserted, "image");

    return plain_filename (image != NULL
                                   && vmr_backend_qmp_member_string (image, "filename") != NULL
                               ? vmr_backend_qmp_member_string (image, "filename")
                               : vmr_backend_qmp_member_string (inserted, "file"));
}

static void
query_block_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    QueryDisksData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (JsonObject) args = json_object_new ();
    JsonArray *devices;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    devices = reply != NULL ? vmr_backend_qmp_reply_array (reply, "query-block", &error) : NULL;
    if (devices == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *dev = json_array_get_object_element (devices, i);
        JsonObject *inserted = vmr_backend_qmp_member_object (dev, "inserted");
        JsonObject *image = vmr_backend_qmp_member_object (inserted, "image");
        JsonObject *cache = vmr_backend_qmp_member_object (inserted, "cache");
        VmrDisk *disk;

        /* an empty drive has nothing to migrate */
        if (inserted == NULL || vmr_backend_qmp_member_string (inserted, "node-name") == NULL)
            continue;
        disk = vmr_disk_new ();
        disk->node = g_strdup (vmr_backend_qmp_member_string (inserted, "node-name"));
        disk->id = qdev_id_from_path (vmr_backend_qmp_member_string (dev, "qdev"),
                                      vmr_backend_qmp_member_string (dev, "device"), disk->node);
        disk->format = g_strdup (vmr_backend_qmp_member_string (inserted, "drv"));
        disk->path = vmr_backend_qmp_inserted_path (inserted);
        disk->size = (guint64) vmr_backend_qmp_member_int (image, "virtual-size");
        disk->cache_direct = vmr_backend_qmp_member_bool (cache, "direct");
        disk->cache_no_flush = vmr_backend_qmp_member_bool (cache, "no-flush");
        disk->read_only = vmr_backend_qmp_member_bool (inserted, "ro");
        g_ptr_array_add (data->disks, disk);
        g_ptr_array_add (data->qdev_paths, g_strdup (vmr_backend_qmp_member_string (dev, "qdev")));
    }
    json_object_set_boolean_member (args, "flat", TRUE);
    vmr_qmp_client_execute_async (self->client, "query-named-block-nodes", args, 0,
                                  g_task_get_cancellable (task), named_nodes_cb,
                                  g_object_ref (task));
}

void
vmr_backend_qmp_query_disks_async (VmrBackend *backend, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    QueryDisksData *data = g_new0 (QueryDisksData, 1);

    data->disks = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_disk_free);
    data->qdev_paths = g_ptr_array_new_with_free_func (g_free);
    g_task_set_task_data (task, data, (GDestroyNotify) query_disks_data_free);
    vmr_qmp_client_execute_async (self->client, "query-block", NULL, 0, cancellable, query_block_cb,
                                  task);
}

GPtrArray *
vmr_backend_qmp_query_disks_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- guest load ---- */

static void
blockstats_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GHashTable) result = NULL;
    JsonArray *entries;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    entries
        = reply != NULL ? vmr_backend_qmp_reply_array (reply, "query-blockstats", &error) : NULL;
    if (entries == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    result = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < json_array_get_length (entries); i++) {
        JsonObject *entry = json_array_get_object_element (entries, i);
        JsonObject *stats = vmr_backend_qmp_member_object (entry, "stats");
        const gchar *qdev = vmr_backend_qmp_member_string (entry, "qdev");
        VmrIoCounters *counters;

        /* keyed by the device: its node changes at the pivot and a mirror
         * filter sits on top while copying, but the device stays */
        if (stats == NULL || qdev == NULL || *qdev == '\0')
            continue;
        counters = g_new0 (VmrIoCounters, 1);
        counters->read_ops = (guint64) vmr_backend_qmp_member_int (stats, "rd_operations");
        counters->write_ops = (guint64) vmr_backend_qmp_member_int (stats, "wr_operations");
        counters->read_time_ns = (guint64) vmr_backend_qmp_member_int (stats, "rd_total_time_ns");
        counters->write_time_ns = (guint64) vmr_backend_qmp_member_int (stats, "wr_total_time_ns");
        g_hash_table_insert (result,
                             qdev_id_from_path (qdev,
                                                vmr_backend_qmp_member_string (entry, "device"),
                                                vmr_backend_qmp_member_string (entry, "node-name")),
                             counters);
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_hash_table_unref);
}

void
vmr_backend_qmp_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_execute_async (self->client, "query-blockstats", NULL, 0, cancellable,
                                  blockstats_cb, task);
}

GHashTable *
vmr_backend_qmp_query_load_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
