#define G_LOG_DOMAIN "vmr-daemon"

#include "backend-qmp.h"

#include <math.h>
#include <unistd.h>

#include "destination.h"
#include "qmp-client.h"
#include "vmr-error.h"

/* how long a monitor may take to greet us before we decide it is not QEMU */
#define GREETING_TIMEOUT_MS 5000

/* what we track of a mirror job of ours inside QEMU */
typedef struct {
    gchar *job_id;
    gchar *dest_node;        /* format node of the destination */
    gchar *destination;      /* its file */
    gboolean created;        /* we created the file */
    gchar *source_node;      /* released after a pivot */
    gchar *source_file_node; /* likewise, NULL if none */
    gboolean ready;
    gboolean pivot_requested;
    gboolean cancel_requested;
    gboolean cancelled;       /* BLOCK_JOB_CANCELLED seen */
    gboolean io_error_logged; /* a BLOCK_JOB_ERROR was logged */
    gboolean completed;       /* BLOCK_JOB_COMPLETED without error seen */
    gchar *error;             /* BLOCK_JOB_COMPLETED's error */
    gboolean finishing;
} MirrorTrack;

struct _VmrBackendQmp {
    VmrBackend parent_instance;

    gchar *monitor_path;
    VmrQmpClient *client;
    GHashTable *tracks;       /* job id -> MirrorTrack *, owned */
    JsonArray *iothreads;     /* the domain's I/O threads as last queried, NULL before */
    GHashTable *iothread_cpu; /* I/O thread id -> IothreadReading *, owned */
};

/* CPU time of one I/O thread at one moment, for the next reading's difference */
typedef struct {
    gint64 thread_id;
    guint64 ticks;  /* utime + stime, clock ticks */
    gint64 time_us; /* monotonic */
} IothreadReading;

G_DEFINE_TYPE (VmrBackendQmp, vmr_backend_qmp, VMR_TYPE_BACKEND)

static void
mirror_track_free (MirrorTrack *track)
{
    g_free (track->job_id);
    g_free (track->dest_node);
    g_free (track->destination);
    g_free (track->source_node);
    g_free (track->source_file_node);
    g_free (track->error);
    g_free (track);
}

static JsonArray *
reply_array (JsonNode *reply, const gchar *command, GError **error)
{
    if (reply == NULL || !JSON_NODE_HOLDS_ARRAY (reply)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' (expected an array)", command);
        return NULL;
    }
    return json_node_get_array (reply);
}

static JsonObject *
member_object (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    return node != NULL && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

static const gchar *
member_string (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string (node);
}

static gint64
member_int (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
        return 0;
    return json_node_get_int (node);
}

static gboolean
member_bool (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
        return FALSE;
    return json_node_get_boolean (node);
}

static JsonObject *
args_device (const gchar *key, const gchar *value)
{
    JsonObject *args = json_object_new ();

    json_object_set_string_member (args, key, value);
    return args;
}

/* runs a command whose failure only matters for the log */
static void
best_effort_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autofree gchar *what = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL)
        g_debug ("%s: %s", what, error->message);
}

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
        const gchar *filename = member_string (obj, "filename");

        if (filename != NULL)
            return g_strdup (filename);
        obj = member_object (obj, "file");
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
        const gchar *id = JSON_NODE_HOLDS_OBJECT (entry)
                              ? member_string (json_node_get_object (entry), "iothread")
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
    threads = reply != NULL ? reply_array (reply, "query-iothreads", &error) : NULL;
    if (threads == NULL) {
        g_debug ("cannot list the I/O threads of %s: %s", self->monitor_path, error->message);
        query_disks_done_one (task);
        return;
    }
    result = json_array_new ();
    for (guint i = 0; i < json_array_get_length (threads); i++) {
        JsonNode *node = json_array_get_element (threads, i);
        JsonObject *thread = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
        const gchar *id = member_string (thread, "id");
        gint64 thread_id = member_int (thread, "thread-id");
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
        g_autoptr (JsonObject) args = args_device ("path", qdev);
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
    nodes = reply != NULL ? reply_array (reply, "query-named-block-nodes", &error) : NULL;
    if (nodes == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* the protocol node below each disk's top node: same file, protocol driver */
    for (guint i = 0; i < data->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (data->disks, i);

        for (guint j = 0; j < json_array_get_length (nodes); j++) {
            JsonObject *node = json_array_get_object_element (nodes, j);
            const gchar *drv = member_string (node, "drv");
            JsonObject *cache = member_object (node, "cache");

            g_autofree gchar *filename = plain_filename (member_string (node, "file"));

            if (g_strcmp0 (member_string (node, "node-name"), disk->node) == 0
                || g_strcmp0 (filename, disk->path) != 0)
                continue;
            if (g_strcmp0 (drv, "file") != 0 && g_strcmp0 (drv, "host_device") != 0)
                continue;
            disk->file_node = g_strdup (member_string (node, "node-name"));
            disk->file_cache_direct = member_bool (cache, "direct");
            disk->file_cache_no_flush = member_bool (cache, "no-flush");
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
            g_autoptr (JsonObject) args = args_device ("path", path);
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
static gchar *
inserted_path (JsonObject *inserted)
{
    JsonObject *image = member_object (inserted, "image");

    return plain_filename (image != NULL && member_string (image, "filename") != NULL
                               ? member_string (image, "filename")
                               : member_string (inserted, "file"));
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
    devices = reply != NULL ? reply_array (reply, "query-block", &error) : NULL;
    if (devices == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *dev = json_array_get_object_element (devices, i);
        JsonObject *inserted = member_object (dev, "inserted");
        JsonObject *image = member_object (inserted, "image");
        JsonObject *cache = member_object (inserted, "cache");
        VmrDisk *disk;

        /* an empty drive has nothing to migrate */
        if (inserted == NULL || member_string (inserted, "node-name") == NULL)
            continue;
        disk = vmr_disk_new ();
        disk->node = g_strdup (member_string (inserted, "node-name"));
        disk->id = qdev_id_from_path (member_string (dev, "qdev"), member_string (dev, "device"),
                                      disk->node);
        disk->format = g_strdup (member_string (inserted, "drv"));
        disk->path = inserted_path (inserted);
        disk->size = (guint64) member_int (image, "virtual-size");
        disk->cache_direct = member_bool (cache, "direct");
        disk->cache_no_flush = member_bool (cache, "no-flush");
        disk->read_only = member_bool (inserted, "ro");
        g_ptr_array_add (data->disks, disk);
        g_ptr_array_add (data->qdev_paths, g_strdup (member_string (dev, "qdev")));
    }
    json_object_set_boolean_member (args, "flat", TRUE);
    vmr_qmp_client_execute_async (self->client, "query-named-block-nodes", args, 0,
                                  g_task_get_cancellable (task), named_nodes_cb,
                                  g_object_ref (task));
}

static void
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

static GPtrArray *
vmr_backend_qmp_query_disks_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- starting a copy ---- */

typedef struct {
    VmrJob *job;
    VmrDisk *disk;      /* a copy of what the caller gave */
    MirrorTrack *track; /* owned until handed to self->tracks, then NULL */
    gchar *dest_node;
    gboolean dest_added;
} StartData;

static void
start_data_free (StartData *data)
{
    vmr_job_unref (data->job);
    vmr_disk_free (data->disk);
    g_free (data->dest_node);
    if (data->track != NULL)
        mirror_track_free (data->track);
    g_free (data);
}

static VmrDisk *
disk_copy (const VmrDisk *disk)
{
    VmrDisk *copy = vmr_disk_new ();

    *copy = *disk;
    copy->id = g_strdup (disk->id);
    copy->node = g_strdup (disk->node);
    copy->file_node = g_strdup (disk->file_node);
    copy->format = g_strdup (disk->format);
    copy->path = g_strdup (disk->path);
    copy->iothread = g_strdup (disk->iothread);
    copy->iothreads = g_strdupv (disk->iothreads);
    return copy;
}

static JsonObject *
cache_object (gboolean direct, gboolean no_flush)
{
    JsonObject *cache = json_object_new ();

    json_object_set_boolean_member (cache, "direct", direct);
    json_object_set_boolean_member (cache, "no-flush", no_flush);
    return cache;
}

/* undoes what start_copy did so far, then fails the task */
static void
start_fail (GTask *task, GError *error)
{
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);

    /* the track is ours or in the table, never both */
    if (data->track == NULL)
        g_hash_table_remove (self->tracks, data->job->id);
    if (data->dest_added) {
        g_autoptr (JsonObject) args = args_device ("node-name", data->dest_node);

        vmr_qmp_client_execute_async (self->client, "blockdev-del", args, 0, NULL, best_effort_cb,
                                      g_strdup_printf ("releasing %s", data->job->destination));
    }
    if (data->job->created_destination)
        vmr_destination_remove (data->job->destination);
    g_task_return_error (task, error);
}

static void
mirror_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QEMU refused to start the mirror: ");
        start_fail (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

static void
start_mirror (GTask *task)
{
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);
    g_autoptr (JsonObject) args = json_object_new ();
    g_autofree gchar *filter = g_strdup_printf ("%s-mirror", data->job->id);

    json_object_set_string_member (args, "job-id", data->job->id);
    json_object_set_string_member (args, "device", data->disk->node);
    json_object_set_string_member (args, "target", data->dest_node);
    json_object_set_string_member (args, "sync", "full");
    json_object_set_boolean_member (args, "auto-dismiss", FALSE);
    json_object_set_string_member (args, "filter-node-name", filter);
    if (data->job->speed > 0)
        json_object_set_int_member (args, "speed", (gint64) data->job->speed);

    /* events about the job may arrive before the reply */
    g_hash_table_insert (self->tracks, g_strdup (data->job->id), g_steal_pointer (&data->track));
    vmr_qmp_client_execute_async (self->client, "blockdev-mirror", args, 0,
                                  g_task_get_cancellable (task), mirror_cb, task);
}

static void
check_dest_size_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    StartData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *nodes;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    nodes = reply != NULL ? reply_array (reply, "query-named-block-nodes", &error) : NULL;
    if (nodes == NULL) {
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    for (guint i = 0; i < json_array_get_length (nodes); i++) {
        JsonObject *node = json_array_get_object_element (nodes, i);
        guint64 size;

        if (g_strcmp0 (member_string (node, "node-name"), data->dest_node) != 0)
            continue;
        size = (guint64) member_int (member_object (node, "image"), "virtual-size");
        if (size != data->disk->size) {
            start_fail (task, g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                           "destination %s has a virtual size of %" G_GUINT64_FORMAT
                                           " bytes, the source %" G_GUINT64_FORMAT,
                                           data->job->destination, size, data->disk->size));
            g_object_unref (task);
            return;
        }
    }
    start_mirror (task);
}

static void
blockdev_add_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QEMU cannot open %s: ", data->job->destination);
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    data->dest_added = TRUE;
    if (g_strcmp0 (data->job->format, "raw") != 0) {
        g_autoptr (JsonObject) args = json_object_new ();

        json_object_set_boolean_member (args, "flat", TRUE);
        vmr_qmp_client_execute_async (self->client, "query-named-block-nodes", args, 0,
                                      g_task_get_cancellable (task), check_dest_size_cb, task);
        return;
    }
    start_mirror (task);
}

static void
add_destination (GTask *task)
{
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);
    g_autoptr (JsonObject) args = json_object_new ();
    JsonObject *file = json_object_new ();
    g_autofree gchar *file_node = g_strdup_printf ("%s-dst-file", data->job->id);

    json_object_set_string_member (
        file, "driver",
        vmr_destination_is_block_device (data->job->destination) ? "host_device" : "file");
    json_object_set_string_member (file, "filename", data->job->destination);
    json_object_set_string_member (file, "node-name", file_node);
    json_object_set_object_member (
        file, "cache",
        cache_object (data->disk->file_cache_direct, data->disk->file_cache_no_flush));

    json_object_set_string_member (args, "driver", data->job->format);
    json_object_set_string_member (args, "node-name", data->dest_node);
    json_object_set_object_member (args, "file", file);
    json_object_set_object_member (
        args, "cache", cache_object (data->disk->cache_direct, data->disk->cache_no_flush));
    json_object_set_string_member (args, "discard", "unmap");
    /* a larger raw file or device is used for its first bytes only */
    if (g_strcmp0 (data->job->format, "raw") == 0 && !data->job->created_destination) {
        guint64 dest_size = 0;

        if (vmr_destination_get_size (data->job->destination, &dest_size, NULL)
            && dest_size > data->disk->size)
            json_object_set_int_member (args, "size", (gint64) data->disk->size);
    }
    vmr_qmp_client_execute_async (self->client, "blockdev-add", args, 0,
                                  g_task_get_cancellable (task), blockdev_add_cb, task);
}

static void
create_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_destination_create_finish (res, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    add_destination (task);
}

static void
vmr_backend_qmp_start_copy_async (VmrBackend *backend, VmrJob *job, const VmrDisk *disk,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    StartData *data = g_new0 (StartData, 1);

    data->job = vmr_job_ref (job);
    data->disk = disk_copy (disk);
    data->track = g_new0 (MirrorTrack, 1);
    data->track->job_id = g_strdup (job->id);
    data->track->dest_node = g_strdup_printf ("%s-dst", job->id);
    data->dest_node = g_strdup (data->track->dest_node);
    data->track->destination = g_strdup (job->destination);
    data->track->created = job->created_destination;
    data->track->source_node = g_strdup (disk->node);
    data->track->source_file_node = g_strdup (disk->file_node);
    g_task_set_task_data (task, data, (GDestroyNotify) start_data_free);

    if (job->created_destination) {
        vmr_destination_create_async (job->destination, job->format, disk->size, disk->path,
                                      cancellable, create_cb, task);
        return;
    }
    add_destination (task);
}

static gboolean
vmr_backend_qmp_start_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

/* ---- the end of a job ---- */

static void finish_track (VmrBackendQmp *self, MirrorTrack *track);

static void
release_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    const gchar *node = g_task_get_task_data (task);

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    /* nodes that QEMU created for -drive go away by themselves */
    if (reply == NULL)
        g_debug ("not releasing node %s: %s", node, error->message);
    g_task_return_boolean (task, TRUE);
}

/* blockdev-del of @node, if it exists; never fails */
static void
release_node_async (VmrBackendQmp *self, const gchar *node, GAsyncReadyCallback callback,
                    gpointer user_data)
{
    GTask *task = g_task_new (self, NULL, callback, user_data);
    g_autoptr (JsonObject) args = NULL;

    if (node == NULL) {
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
        return;
    }
    g_task_set_task_data (task, g_strdup (node), g_free);
    args = args_device ("node-name", node);
    vmr_qmp_client_execute_async (self->client, "blockdev-del", args, 0, NULL, release_cb, task);
}

typedef struct {
    VmrBackendQmp *self;
    gchar *job_id;
    VmrBackendOutcome outcome;
    gchar *reason;
    gchar *second_node; /* released after the first */
    gchar *remove_file; /* unlinked at the end */
} FinishData;

static void
finish_data_free (FinishData *data)
{
    g_object_unref (data->self);
    g_free (data->job_id);
    g_free (data->reason);
    g_free (data->second_node);
    g_free (data->remove_file);
    g_free (data);
}

static void
finish_done (FinishData *data)
{
    if (data->remove_file != NULL)
        vmr_destination_remove (data->remove_file);
    g_hash_table_remove (data->self->tracks, data->job_id);
    vmr_backend_emit_job_finished (VMR_BACKEND (data->self), data->job_id, data->outcome,
                                   data->reason);
    finish_data_free (data);
}

static void
second_release_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    finish_done (user_data);
}

static void
first_release_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    FinishData *data = user_data;

    release_node_async (data->self, data->second_node, second_release_cb, data);
}

static void
dismiss_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    FinishData *data = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    MirrorTrack *track = g_hash_table_lookup (data->self->tracks, data->job_id);
    const gchar *first_node = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL)
        g_debug ("job-dismiss %s: %s", data->job_id, error->message);
    if (track == NULL) {
        finish_done (data);
        return;
    }
    if (data->outcome == VMR_BACKEND_OUTCOME_COMPLETED) {
        /* the VM runs on the destination now: let go of the old image */
        first_node = track->source_node;
        data->second_node = g_strdup (track->source_file_node);
    } else {
        /* the VM stays on its source: close the destination again */
        first_node = track->dest_node;
        if (track->created)
            data->remove_file = g_strdup (track->destination);
    }
    release_node_async (data->self, first_node, first_release_cb, data);
}

static void
finish_track (VmrBackendQmp *self, MirrorTrack *track)
{
    FinishData *data;
    g_autoptr (JsonObject) args = NULL;

    if (track->finishing)
        return;
    track->finishing = TRUE;
    data = g_new0 (FinishData, 1);
    data->self = g_object_ref (self);
    data->job_id = g_strdup (track->job_id);
    if (track->cancelled) {
        data->outcome = VMR_BACKEND_OUTCOME_CANCELLED;
        data->reason = g_strdup (track->cancel_requested ? "cancelled on request"
                                                         : "cancelled outside virt-mirror");
    } else if (track->error != NULL) {
        data->outcome = VMR_BACKEND_OUTCOME_FAILED;
        data->reason = g_strdup_printf ("the copy failed: %s", track->error);
    } else if (track->completed) {
        data->outcome = VMR_BACKEND_OUTCOME_COMPLETED;
    } else {
        data->outcome = VMR_BACKEND_OUTCOME_FAILED;
        data->reason = g_strdup ("QEMU ended the job without saying why");
    }
    args = args_device ("id", track->job_id);
    vmr_qmp_client_execute_async (self->client, "job-dismiss", args, 0, NULL, dismiss_cb, data);
}

static void
client_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *event_data,
                 gint64 timestamp_us, gpointer user_data)
{
    VmrBackendQmp *self = user_data;
    const gchar *job_id = member_string (event_data, "id");
    MirrorTrack *track;

    if (g_str_has_prefix (name, "BLOCK_JOB_"))
        job_id = member_string (event_data, "device");
    if (job_id == NULL)
        return;
    track = g_hash_table_lookup (self->tracks, job_id);
    if (track == NULL)
        return;
    g_debug ("job %s: event %s", job_id, name);

    if (g_strcmp0 (name, "BLOCK_JOB_COMPLETED") == 0) {
        const gchar *error = member_string (event_data, "error");

        if (error != NULL) {
            g_free (track->error);
            track->error = g_strdup (error);
        } else {
            track->completed = TRUE;
        }
    } else if (g_strcmp0 (name, "BLOCK_JOB_CANCELLED") == 0) {
        track->cancelled = TRUE;
    } else if (g_strcmp0 (name, "BLOCK_JOB_ERROR") == 0) {
        /* QEMU reports every failed request; one line per job says it */
        if (!track->io_error_logged)
            g_message ("job %s: I/O error during %s", job_id,
                       member_string (event_data, "operation"));
        track->io_error_logged = TRUE;
    } else if (g_strcmp0 (name, "BLOCK_JOB_READY") == 0
               || (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0
                   && g_strcmp0 (member_string (event_data, "status"), "ready") == 0)) {
        if (!track->ready) {
            track->ready = TRUE;
            vmr_backend_emit_job_ready (VMR_BACKEND (self), job_id);
        }
    } else if (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0
               && g_strcmp0 (member_string (event_data, "status"), "concluded") == 0) {
        finish_track (self, track);
    }
}

/* ---- picking up a copy of an earlier run ---- */

typedef struct {
    VmrJob *job;
    JsonObject *info; /* our job in query-block-jobs, NULL if QEMU has none */
    VmrBackendAdoption *adoption;
} AdoptData;

static void
adopt_data_free (AdoptData *data)
{
    vmr_job_unref (data->job);
    if (data->info != NULL)
        json_object_unref (data->info);
    g_free (data->adoption);
    g_free (data);
}

static MirrorTrack *
track_from_job (VmrJob *job)
{
    MirrorTrack *track = g_new0 (MirrorTrack, 1);

    /* the names start_copy gave them */
    track->job_id = g_strdup (job->id);
    track->dest_node = g_strdup_printf ("%s-dst", job->id);
    track->destination = g_strdup (job->destination);
    track->created = job->created_destination;
    track->source_node = g_strdup (job->source_node);
    track->source_file_node = g_strdup (job->source_file_node);
    return track;
}

static void
adopt_return (GTask *task, VmrBackendAdoptOutcome outcome)
{
    AdoptData *data = g_task_get_task_data (task);

    data->adoption->outcome = outcome;
    g_task_return_pointer (task, g_steal_pointer (&data->adoption), g_free);
    g_object_unref (task);
}

static void
adopt_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;

    adopt_return (task, GPOINTER_TO_INT (g_object_get_data (G_OBJECT (task), "vmr-outcome")));
}

static void
adopt_first_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    AdoptData *data = g_task_get_task_data (task);

    release_node_async (self, data->job->source_file_node, adopt_released_cb, task);
}

static void
adopt_block_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    AdoptData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    JsonArray *devices = reply != NULL ? reply_array (reply, "query-block", &error) : NULL;
    g_autofree gchar *dest_node = g_strdup_printf ("%s-dst", data->job->id);
    gboolean on_destination = FALSE;
    gboolean dest_in_use = FALSE;
    MirrorTrack *track;

    if (devices == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *inserted
            = member_object (json_array_get_object_element (devices, i), "inserted");
        g_autofree gchar *path = inserted_path (inserted);

        if (inserted == NULL)
            continue;
        if (g_strcmp0 (member_string (inserted, "node-name"), dest_node) == 0)
            on_destination = TRUE;
        if (g_strcmp0 (path, data->job->destination) == 0)
            dest_in_use = TRUE;
    }

    if (data->info != NULL) {
        const gchar *status = member_string (data->info, "status");

        track = track_from_job (data->job);
        track->ready = member_bool (data->info, "ready") || g_strcmp0 (status, "ready") == 0;
        g_hash_table_replace (self->tracks, g_strdup (track->job_id), track);
        if (g_strcmp0 (status, "concluded") == 0) {
            /* it ended unseen: how, QEMU's error and the device's node say */
            /* a cancel shows as QEMU's (unlocalised) strerror (ECANCELED) */
            if (g_strcmp0 (member_string (data->info, "error"), "Operation canceled") == 0)
                track->cancelled = TRUE;
            else if (member_string (data->info, "error") != NULL)
                track->error = g_strdup (member_string (data->info, "error"));
            else if (on_destination)
                track->completed = TRUE;
            else
                track->cancelled = TRUE;
            track->cancel_requested = FALSE;
            finish_track (self, track);
            adopt_return (task, VMR_BACKEND_ADOPT_ENDING);
            return;
        }
        if (g_strcmp0 (status, "aborting") == 0) {
            /* its end comes as events, to the track */
            adopt_return (task, VMR_BACKEND_ADOPT_ENDING);
            return;
        }
        data->adoption->ready = track->ready;
        data->adoption->paused = member_bool (data->info, "paused");
        data->adoption->speed = (guint64) member_int (data->info, "speed");
        data->adoption->total_bytes = (guint64) member_int (data->info, "len");
        data->adoption->done_bytes = (guint64) member_int (data->info, "offset");
        adopt_return (task, VMR_BACKEND_ADOPT_RUNNING);
        return;
    }
    /* no copy and a disk on the destination file: it pivoted (QEMU may even have been
     * started again on the new image, under other node names) */
    if (on_destination || dest_in_use) {
        /* it pivoted and was dismissed: let go of the old image, as after a pivot */
        g_object_set_data (G_OBJECT (task), "vmr-outcome",
                           GINT_TO_POINTER (VMR_BACKEND_ADOPT_ON_DESTINATION));
        release_node_async (self, data->job->source_node, adopt_first_released_cb, task);
        return;
    }
    /* no copy, the disk on its source: close the destination, remove what the job made */
    if (data->job->created_destination && !dest_in_use && data->job->state != VMR_JOB_STATE_QUEUED
        && data->job->state != VMR_JOB_STATE_DELAYED)
        vmr_destination_remove (data->job->destination);
    g_object_set_data (G_OBJECT (task), "vmr-outcome", GINT_TO_POINTER (VMR_BACKEND_ADOPT_GONE));
    release_node_async (self, dest_node, adopt_released_cb, task);
}

static void
adopt_jobs_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    AdoptData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    JsonArray *jobs = reply != NULL ? reply_array (reply, "query-block-jobs", &error) : NULL;

    if (jobs == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *info = json_array_get_object_element (jobs, i);

        if (g_strcmp0 (member_string (info, "device"), data->job->id) == 0)
            data->info = json_object_ref (info);
    }
    vmr_qmp_client_execute_async (VMR_QMP_CLIENT (source), "query-block", NULL, 0,
                                  g_task_get_cancellable (task), adopt_block_cb, task);
}

static void
vmr_backend_qmp_adopt_copy_async (VmrBackend *backend, VmrJob *job, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    AdoptData *data = g_new0 (AdoptData, 1);

    data->job = vmr_job_ref (job);
    data->adoption = g_new0 (VmrBackendAdoption, 1);
    g_task_set_task_data (task, data, (GDestroyNotify) adopt_data_free);
    vmr_qmp_client_execute_async (self->client, "query-block-jobs", NULL, 0, cancellable,
                                  adopt_jobs_cb, task);
}

static VmrBackendAdoption *
vmr_backend_qmp_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- commands on a running job ---- */

static void
command_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QEMU refused '%s': ", (const gchar *) g_task_get_task_data (task));
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

static void
copy_mode_schema_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    g_autofree gchar *job_id = g_strdup (g_task_get_task_data (task));
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) schema = NULL;
    g_autoptr (JsonObject) args = json_object_new ();

    schema = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (schema == NULL) {
        g_prefix_error (&error, "QEMU refused 'query-qmp-schema': ");
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (!vmr_qmp_schema_has_command (schema, "block-job-change")) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                                 "this QEMU cannot change the copy mode of a running mirror "
                                 "(no block-job-change; QEMU 8.2 or later has it)");
        g_object_unref (task);
        return;
    }
    json_object_set_string_member (args, "id", job_id);
    json_object_set_string_member (args, "type", "mirror");
    json_object_set_string_member (args, "copy-mode", "write-blocking");
    g_task_set_task_data (task, g_strdup ("block-job-change"), g_free);
    vmr_qmp_client_execute_async (VMR_QMP_CLIENT (source), "block-job-change", args, 0,
                                  g_task_get_cancellable (task), command_cb, task);
}

static void
vmr_backend_qmp_job_command_async (VmrBackend *backend, VmrJob *job, VmrBackendCommand command,
                                   guint64 speed, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    MirrorTrack *track = g_hash_table_lookup (self->tracks, job->id);
    g_autoptr (JsonObject) args = args_device ("device", job->id);
    const gchar *qmp_command = NULL;

    switch (command) {
        case VMR_BACKEND_COMMAND_PAUSE:
            qmp_command = "block-job-pause";
            break;
        case VMR_BACKEND_COMMAND_RESUME:
            qmp_command = "block-job-resume";
            break;
        case VMR_BACKEND_COMMAND_CANCEL:
            /* force: a READY mirror must not complete, it must abort */
            qmp_command = "block-job-cancel";
            json_object_set_boolean_member (args, "force", TRUE);
            if (track != NULL)
                track->cancel_requested = TRUE;
            break;
        case VMR_BACKEND_COMMAND_PIVOT:
            /* a rate-limited job sleeps between chunks; lifting the limit
             * wakes it so that the pivot does not wait for the next chunk */
            if (job->speed > 0) {
                g_autoptr (JsonObject) speed_args = args_device ("device", job->id);

                json_object_set_int_member (speed_args, "speed", 0);
                vmr_qmp_client_execute_async (self->client, "block-job-set-speed", speed_args, 0,
                                              NULL, best_effort_cb,
                                              g_strdup_printf ("unthrottling %s", job->id));
            }
            qmp_command = "job-complete";
            json_object_remove_member (args, "device");
            json_object_set_string_member (args, "id", job->id);
            if (track != NULL)
                track->pivot_requested = TRUE;
            break;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            qmp_command = "block-job-set-speed";
            json_object_set_int_member (args, "speed", (gint64) speed);
            break;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            /* block-job-change came with QEMU 8.2: ask the schema, not the version */
            g_task_set_task_data (task, g_strdup (job->id), g_free);
            vmr_qmp_client_execute_async (self->client, "query-qmp-schema", NULL, 0, cancellable,
                                          copy_mode_schema_cb, task);
            return;
        default:
            g_assert_not_reached ();
    }
    g_task_set_task_data (task, g_strdup (qmp_command), g_free);
    vmr_qmp_client_execute_async (self->client, qmp_command, args, 0, cancellable, command_cb,
                                  task);
}

static gboolean
vmr_backend_qmp_job_command_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

static void
query_jobs_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) result = NULL;
    JsonArray *jobs;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    jobs = reply != NULL ? reply_array (reply, "query-block-jobs", &error) : NULL;
    if (jobs == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    result = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_progress_free);
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *info = json_array_get_object_element (jobs, i);
        const gchar *id = member_string (info, "device");
        VmrBackendProgress *progress;

        if (id == NULL || !g_hash_table_contains (self->tracks, id))
            continue;
        progress = g_new0 (VmrBackendProgress, 1);
        progress->job_id = g_strdup (id);
        progress->total_bytes = (guint64) member_int (info, "len");
        progress->done_bytes = (guint64) member_int (info, "offset");
        progress->speed = (guint64) member_int (info, "speed");
        progress->paused = member_bool (info, "paused");
        progress->ready = member_bool (info, "ready");
        g_ptr_array_add (result, progress);
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_ptr_array_unref);
}

static void
vmr_backend_qmp_query_progress_async (VmrBackend *backend, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_execute_async (self->client, "query-block-jobs", NULL, 0, cancellable,
                                  query_jobs_cb, task);
}

static GPtrArray *
vmr_backend_qmp_query_progress_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
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
    entries = reply != NULL ? reply_array (reply, "query-blockstats", &error) : NULL;
    if (entries == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    result = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < json_array_get_length (entries); i++) {
        JsonObject *entry = json_array_get_object_element (entries, i);
        JsonObject *stats = member_object (entry, "stats");
        const gchar *qdev = member_string (entry, "qdev");
        VmrIoCounters *counters;

        /* keyed by the device: its node changes at the pivot and a mirror
         * filter sits on top while copying, but the device stays */
        if (stats == NULL || qdev == NULL || *qdev == '\0')
            continue;
        counters = g_new0 (VmrIoCounters, 1);
        counters->read_ops = (guint64) member_int (stats, "rd_operations");
        counters->write_ops = (guint64) member_int (stats, "wr_operations");
        counters->read_time_ns = (guint64) member_int (stats, "rd_total_time_ns");
        counters->write_time_ns = (guint64) member_int (stats, "wr_total_time_ns");
        g_hash_table_insert (result,
                             qdev_id_from_path (qdev, member_string (entry, "device"),
                                                member_string (entry, "node-name")),
                             counters);
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_hash_table_unref);
}

static void
vmr_backend_qmp_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_execute_async (self->client, "query-blockstats", NULL, 0, cancellable,
                                  blockstats_cb, task);
}

static GHashTable *
vmr_backend_qmp_query_load_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- connection ---- */

static void
client_disconnected_cb (VmrQmpClient *client, GError *error, gpointer user_data)
{
    VmrBackendQmp *self = user_data;

    g_message ("QEMU monitor %s: %s", self->monitor_path, error->message);
    vmr_backend_emit_disconnected (VMR_BACKEND (self), error);
}

static void
connect_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    const gchar *path = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrQmpClient) client = NULL;
    VmrBackendQmp *self;
    JsonObject *version;

    client = vmr_qmp_client_connect_finish (res, &error);
    if (client == NULL) {
        if (g_error_matches (error, VMR_ERROR, VMR_ERROR_DISCONNECTED))
            g_task_return_error (task, g_steal_pointer (&error));
        else
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "%s is not a QEMU monitor: %s", path, error->message);
        return;
    }
    version = member_object (vmr_qmp_client_get_greeting (client), "version");
    if (member_object (version, "qemu") == NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "%s is not a QEMU monitor (its greeting names no QEMU version)",
                                 path);
        return;
    }
    self = g_object_new (VMR_TYPE_BACKEND_QMP, NULL);
    self->monitor_path = g_strdup (path);
    self->client = g_steal_pointer (&client);
    g_signal_connect (self->client, "event", G_CALLBACK (client_event_cb), self);
    g_signal_connect (self->client, "disconnected", G_CALLBACK (client_disconnected_cb), self);
    g_task_return_pointer (task, self, g_object_unref);
}

void
vmr_backend_qmp_connect_async (const gchar *monitor_path, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (NULL, cancellable, callback, user_data);

    g_task_set_task_data (task, g_strdup (monitor_path), g_free);
    vmr_qmp_client_connect_async (monitor_path, GREETING_TIMEOUT_MS, cancellable, connect_cb, task);
}

VmrBackend *
vmr_backend_qmp_connect_finish (GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

static const gchar *
vmr_backend_qmp_get_kind (VmrBackend *backend)
{
    return "qmp";
}

static JsonObject *
vmr_backend_qmp_describe (VmrBackend *backend)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "monitor", self->monitor_path);
    if (self->iothreads != NULL)
        json_object_set_array_member (obj, "iothreads", json_array_ref (self->iothreads));
    else
        json_object_set_array_member (obj, "iothreads", json_array_new ());
    return obj;
}

static void
vmr_backend_qmp_close (VmrBackend *backend)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (backend);

    if (self->client != NULL) {
        g_signal_handlers_disconnect_by_data (self->client, self);
        vmr_qmp_client_close (self->client);
    }
}

static void
vmr_backend_qmp_finalize (GObject *object)
{
    VmrBackendQmp *self = VMR_BACKEND_QMP (object);

    if (self->client != NULL)
        g_signal_handlers_disconnect_by_data (self->client, self);
    g_clear_object (&self->client);
    g_hash_table_unref (self->tracks);
    g_hash_table_unref (self->iothread_cpu);
    g_clear_pointer (&self->iothreads, json_array_unref);
    g_free (self->monitor_path);
    G_OBJECT_CLASS (vmr_backend_qmp_parent_class)->finalize (object);
}

static void
vmr_backend_qmp_init (VmrBackendQmp *self)
{
    self->tracks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify) mirror_track_free);
    self->iothread_cpu = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

static void
vmr_backend_qmp_class_init (VmrBackendQmpClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);
    VmrBackendClass *backend_class = VMR_BACKEND_CLASS (klass);

    object_class->finalize = vmr_backend_qmp_finalize;
    backend_class->get_kind = vmr_backend_qmp_get_kind;
    backend_class->describe = vmr_backend_qmp_describe;
    backend_class->query_disks_async = vmr_backend_qmp_query_disks_async;
    backend_class->query_disks_finish = vmr_backend_qmp_query_disks_finish;
    backend_class->start_copy_async = vmr_backend_qmp_start_copy_async;
    backend_class->start_copy_finish = vmr_backend_qmp_start_copy_finish;
    backend_class->job_command_async = vmr_backend_qmp_job_command_async;
    backend_class->job_command_finish = vmr_backend_qmp_job_command_finish;
    backend_class->query_progress_async = vmr_backend_qmp_query_progress_async;
    backend_class->query_progress_finish = vmr_backend_qmp_query_progress_finish;
    backend_class->query_load_async = vmr_backend_qmp_query_load_async;
    backend_class->query_load_finish = vmr_backend_qmp_query_load_finish;
    backend_class->adopt_copy_async = vmr_backend_qmp_adopt_copy_async;
    backend_class->adopt_copy_finish = vmr_backend_qmp_adopt_copy_finish;
    backend_class->close = vmr_backend_qmp_close;
}
