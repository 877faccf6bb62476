#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: a domain's disks (query-block, query-named-block-nodes),
 * their I/O threads and those threads' CPU use, and the guest's load on
 * each disk (query-blockstats).
 */

#include "backend-qmp-private.h"

#include <math.h>
#include <unistd.h>

#include "qmp-client.h"
#include "qmp-parse.h"
#include "vmr-json.h"

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

/* ends one look-up; after the last, the disks' single and listed I/O threads agree */
static void
query_disks_done_one (GTask *task)
{
    QueryDisksData *data = g_task_get_task_data (task);

    if (--data->pending != 0)
        return;
    vmr_qmp_parse_settle_iothreads (data->disks);
    g_task_return_pointer (task, g_ptr_array_ref (data->disks), (GDestroyNotify) g_ptr_array_unref);
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
    if (reply != NULL && vmr_json_node_string (reply) != NULL) {
        if (disk->iothread == NULL)
            disk->iothread = vmr_qmp_parse_iothread (reply);
    } else if (reply != NULL && disk->iothreads == NULL) {
        disk->iothreads = vmr_qmp_parse_vq_mapping (reply);
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
    gint64 tgid;

    /* the process QEMU runs as, so that the thread is read as one of its tasks */
    if (!g_file_get_contents (status_path, &status, NULL, NULL)
        || !vmr_qmp_parse_proc_tgid (status, &tgid))
        return FALSE;
    stat_path = g_strdup_printf ("/proc/%" G_GINT64_FORMAT "/task/%" G_GINT64_FORMAT "/stat", tgid,
                                 thread_id);
    return g_file_get_contents (stat_path, &stat, NULL, NULL)
           && vmr_qmp_parse_proc_ticks (stat, ticks);
}

/* a CPU figure spans at least this long once there is one: a clock tick is 10 ms */
#define CPU_SPAN_US G_USEC_PER_SEC

/*
 * The CPU figure of describe()'s "iothreads" for @usage: the percent of one
 * CPU between the thread's previous reading and this one, which becomes the
 * next one's base unless it came less than CPU_SPAN_US after a figure
 */
static JsonObject *
describe_iothread (VmrBackendQmp *self, const VmrIothreadUsage *usage, guint64 ticks,
                   glong ticks_per_s, gint64 now)
{
    JsonObject *entry = json_object_new ();
    IothreadReading *previous = g_hash_table_lookup (self->iothread_cpu, usage->id);
    IothreadReading *reading;

    json_object_set_string_member (entry, "id", usage->id);
    json_object_set_int_member (entry, "thread-id", usage->thread_id);
    json_object_set_null_member (entry, "cpu");
    if (!usage->has_cpu)
        return entry;
    if (previous != NULL && previous->thread_id == usage->thread_id && previous->has_percent
        && now - previous->time_us < CPU_SPAN_US) {
        json_object_set_double_member (entry, "cpu", previous->percent);
        return entry;
    }
    reading = g_new0 (IothreadReading, 1);
    reading->thread_id = usage->thread_id;
    reading->ticks = ticks;
    reading->time_us = now;
    if (previous != NULL && previous->thread_id == usage->thread_id && now > previous->time_us
        && ticks >= previous->ticks) {
        gdouble busy_s = (gdouble) (ticks - previous->ticks) / (gdouble) ticks_per_s;
        gdouble percent = busy_s * 1e8 / (gdouble) (now - previous->time_us);

        reading->percent = round (percent * 10.0) / 10.0;
        reading->has_percent = TRUE;
        json_object_set_double_member (entry, "cpu", reading->percent);
    }
    g_hash_table_replace (self->iothread_cpu, g_strdup (usage->id), reading);
    return entry;
}

/*
 * The I/O threads of a query-iothreads @reply with the CPU time of each
 * (a GPtrArray of VmrIothreadUsage *); refreshes describe()'s "iothreads"
 */
static GPtrArray *
read_iothreads (VmrBackendQmp *self, JsonNode *reply, GError **error)
{
    g_autoptr (GPtrArray) threads = vmr_qmp_parse_iothreads (reply, error);
    g_autoptr (GPtrArray) usages = NULL;
    JsonArray *described;
    gint64 now = g_get_monotonic_time ();
    glong ticks_per_s = sysconf (_SC_CLK_TCK);

    if (threads == NULL)
        return NULL;
    usages = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_iothread_usage_free);
    described = json_array_new ();
    for (guint i = 0; i < threads->len; i++) {
        const VmrQmpIothread *thread = g_ptr_array_index (threads, i);
        VmrIothreadUsage *usage = g_new0 (VmrIothreadUsage, 1);
        guint64 ticks = 0;

        usage->id = g_strdup (thread->id);
        usage->thread_id = thread->thread_id;
        usage->has_cpu = thread->thread_id > 0 && ticks_per_s > 0
                         && read_thread_ticks (thread->thread_id, &ticks);
        if (usage->has_cpu)
            usage->cpu_seconds = (gdouble) ticks / (gdouble) ticks_per_s;
        json_array_add_object_element (described,
                                       describe_iothread (self, usage, ticks, ticks_per_s, now));
        g_ptr_array_add (usages, usage);
    }
    g_clear_pointer (&self->iothreads, json_array_unref);
    self->iothreads = described;
    return g_steal_pointer (&usages);
}

/* query-iothreads while the disks are read: the threads' CPU for describe() */
static void
query_iothreads_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) usages = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    usages = reply != NULL ? read_iothreads (self, reply, &error) : NULL;
    if (usages == NULL)
        g_debug ("cannot list the I/O threads of %s: %s", self->monitor_path, error->message);
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
        IothreadLookup *lookup = g_new0 (IothreadLookup, 1);

        lookup->task = g_object_ref (task);
        lookup->disk = disk;
        data->pending++;
        vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_qom_get (qdev, properties[p]), 0,
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
    g_autofree gchar *controller = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    /* devices on no bus, or a bus without a device above it, have no thread of theirs */
    controller = reply != NULL ? vmr_qmp_parse_bus_controller (reply) : NULL;
    if (controller != NULL)
        look_up_iothreads (self, task, lookup->disk, controller);
    g_free (lookup);
    query_disks_done_one (task);
}

/* a disk on a file passed by descriptor ("/dev/fdset/N") is named by the file's path */
static void
fdsets_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    QueryDisksData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GHashTable) fdsets = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    fdsets = reply != NULL ? vmr_qmp_parse_fdsets (reply) : NULL;
    for (guint i = 0; fdsets != NULL && i < data->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (data->disks, i);
        gchar *path = vmr_qmp_parse_real_path (fdsets, disk->path);

        g_free (disk->path);
        disk->path = path;
    }
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

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL || !vmr_qmp_parse_file_nodes (reply, data->disks, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    data->pending = 3;
    /* after the file nodes, which are found by the names QEMU gives them */
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_fdsets (), 0,
                              g_task_get_cancellable (task), fdsets_cb, g_object_ref (task));
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
            IothreadLookup *lookup = g_new0 (IothreadLookup, 1);

            lookup->task = g_object_ref (task);
            lookup->disk = disk;
            data->pending++;
            vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_qom_get (path, "parent_bus"), 0,
                                      g_task_get_cancellable (task), parent_bus_cb, lookup);
        }
    }
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_iothreads (), 0,
                              g_task_get_cancellable (task), query_iothreads_cb,
                              g_object_ref (task));
    query_disks_done_one (task);
}

static void
query_block_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    QueryDisksData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GPtrArray) qdev_paths = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    disks = reply != NULL ? vmr_qmp_parse_block (reply, &qdev_paths, &error) : NULL;
    if (disks == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_ptr_array_unref (data->disks);
    data->disks = g_steal_pointer (&disks);
    g_ptr_array_unref (data->qdev_paths);
    data->qdev_paths = g_steal_pointer (&qdev_paths);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_named_block_nodes (TRUE), 0,
                              g_task_get_cancellable (task), named_nodes_cb, g_object_ref (task));
}

void
vmr_backend_qmp_query_disks_async (VmrBackend *backend, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    QueryDisksData *data = g_new0 (QueryDisksData, 1);

    data->disks = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_disk_free);
    data->qdev_paths = g_ptr_array_new_with_free_func (g_free);
    g_task_set_task_data (task, data, (GDestroyNotify) query_disks_data_free);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_block (), 0, cancellable,
                              query_block_cb, task);
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

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    result = reply != NULL ? vmr_qmp_parse_blockstats (reply, &error) : NULL;
    if (result == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_hash_table_unref);
}

void
vmr_backend_qmp_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_blockstats (), 0, cancellable,
                              blockstats_cb, task);
}

GHashTable *
vmr_backend_qmp_query_load_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- I/O threads, sampled with the load ---- */

static void
sampled_iothreads_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    GPtrArray *usages;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    usages = reply != NULL ? read_iothreads (self, reply, &error) : NULL;
    if (usages == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_pointer (task, usages, (GDestroyNotify) g_ptr_array_unref);
}

void
vmr_backend_qmp_query_iothreads_async (VmrBackend *backend, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_iothreads (), 0, cancellable,
                              sampled_iothreads_cb, task);
}

GPtrArray *
vmr_backend_qmp_query_iothreads_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
