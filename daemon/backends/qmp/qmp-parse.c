#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend's readings of QEMU's replies and events (see qmp-parse.h).
 */

#include "qmp-parse.h"

#include <string.h>

#include "vmr-error.h"
#include "vmr-json.h"

JsonArray *
vmr_qmp_parse_reply_array (JsonNode *reply, const gchar *command, GError **error)
{
    JsonArray *array = vmr_json_node_array (reply);

    if (array == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' (expected an array)", command);
    return array;
}

gboolean
vmr_qmp_parse_greeting_is_qemu (JsonObject *greeting)
{
    return vmr_json_get_object (vmr_json_get_object (greeting, "version"), "qemu") != NULL;
}

guint
vmr_qmp_parse_greeting_major (JsonObject *greeting)
{
    JsonObject *qemu = vmr_json_get_object (vmr_json_get_object (greeting, "version"), "qemu");
    gint64 major = 0;

    return qemu != NULL && vmr_json_get_int (qemu, "major", &major) && major > 0 ? (guint) major
                                                                                 : 0;
}

gchar *
vmr_qmp_parse_plain_filename (const gchar *name)
{
    g_autoptr (JsonParser) parser = NULL;
    JsonObject *obj;

    if (name == NULL || !g_str_has_prefix (name, "json:"))
        return g_strdup (name);
    parser = json_parser_new ();
    if (!vmr_json_parser_load (parser, name + 5, -1, NULL))
        return g_strdup (name);
    obj = vmr_json_node_object (json_parser_get_root (parser));
    while (obj != NULL) {
        const gchar *filename = vmr_json_get_string (obj, "filename");

        if (filename != NULL)
            return g_strdup (filename);
        obj = vmr_json_get_object (obj, "file");
    }
    return g_strdup (name);
}

gchar *
vmr_qmp_parse_inserted_path (JsonObject *inserted)
{
    const gchar *filename
        = vmr_json_get_string (vmr_json_get_object (inserted, "image"), "filename");

    return vmr_qmp_parse_plain_filename (filename != NULL ? filename
                                                          : vmr_json_get_string (inserted, "file"));
}

gchar *
vmr_qmp_parse_qdev_id (const gchar *qdev, const gchar *device, const gchar *node)
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

/*
 * What a full copy of @image writes: the actual-size of the image and of
 * each backing image below it (a full copy reads through them all), no more
 * than the @virtual_size; the virtual size when QEMU does not say
 */
static guint64
allocated_bytes (JsonObject *image, guint64 virtual_size)
{
    guint64 total = 0;

    if (image == NULL || !json_object_has_member (image, "actual-size"))
        return virtual_size;
    for (; image != NULL; image = vmr_json_get_object (image, "backing-image"))
        total += vmr_json_uint_or (image, "actual-size", 0);
    return MIN (total, virtual_size);
}

GPtrArray *
vmr_qmp_parse_block (JsonNode *reply, GPtrArray **qdev_paths, GError **error)
{
    JsonArray *devices = vmr_qmp_parse_reply_array (reply, "query-block", error);
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GPtrArray) paths = NULL;

    if (devices == NULL)
        return NULL;
    disks = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_disk_free);
    paths = g_ptr_array_new_with_free_func (g_free);
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *dev = vmr_json_array_object (devices, i);
        JsonObject *inserted = vmr_json_get_object (dev, "inserted");
        JsonObject *cache = vmr_json_get_object (inserted, "cache");
        const gchar *node = vmr_json_get_string (inserted, "node-name");
        VmrDisk *disk;

        /* an empty drive has nothing to migrate */
        if (node == NULL)
            continue;
        disk = vmr_disk_new ();
        disk->node = g_strdup (node);
        disk->id = vmr_qmp_parse_qdev_id (vmr_json_get_string (dev, "qdev"),
                                          vmr_json_get_string (dev, "device"), node);
        disk->format = g_strdup (vmr_json_get_string (inserted, "drv"));
        disk->path = vmr_qmp_parse_inserted_path (inserted);
        disk->size = vmr_json_uint_or (vmr_json_get_object (inserted, "image"), "virtual-size", 0);
        disk->allocated = allocated_bytes (vmr_json_get_object (inserted, "image"), disk->size);
        disk->cache_direct = vmr_json_bool_or (cache, "direct", FALSE);
        disk->cache_no_flush = vmr_json_bool_or (cache, "no-flush", FALSE);
        disk->read_only = vmr_json_bool_or (inserted, "ro", FALSE);
        g_ptr_array_add (disks, disk);
        g_ptr_array_add (paths, g_strdup (vmr_json_get_string (dev, "qdev")));
    }
    if (qdev_paths != NULL)
        *qdev_paths = g_steal_pointer (&paths);
    return g_steal_pointer (&disks);
}

gboolean
vmr_qmp_parse_file_nodes (JsonNode *reply, GPtrArray *disks, GError **error)
{
    JsonArray *nodes = vmr_qmp_parse_reply_array (reply, "query-named-block-nodes", error);

    if (nodes == NULL)
        return FALSE;
    /* the protocol node below each disk's top node: same file, protocol driver */
    for (guint i = 0; i < disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (disks, i);

        for (guint j = 0; j < json_array_get_length (nodes); j++) {
            JsonObject *node = vmr_json_array_object (nodes, j);
            const gchar *drv = vmr_json_get_string (node, "drv");
            const gchar *name = vmr_json_get_string (node, "node-name");
            JsonObject *cache = vmr_json_get_object (node, "cache");
            g_autofree gchar *filename
                = vmr_qmp_parse_plain_filename (vmr_json_get_string (node, "file"));

            if (g_strcmp0 (name, disk->node) == 0 || g_strcmp0 (filename, disk->path) != 0)
                continue;
            if (g_strcmp0 (drv, "file") != 0 && g_strcmp0 (drv, "host_device") != 0)
                continue;
            disk->file_node = g_strdup (name);
            /* a device reports no allocation: the copy reads and writes all of it */
            if (g_strcmp0 (drv, "host_device") == 0)
                disk->allocated = disk->size;
            disk->file_cache_direct = vmr_json_bool_or (cache, "direct", FALSE);
            disk->file_cache_no_flush = vmr_json_bool_or (cache, "no-flush", FALSE);
            break;
        }
    }
    return TRUE;
}

gboolean
vmr_qmp_parse_node_size (JsonArray *nodes, const gchar *node_name, guint64 *size)
{
    gboolean found = FALSE;

    for (guint i = 0; nodes != NULL && i < json_array_get_length (nodes); i++) {
        JsonObject *node = vmr_json_array_object (nodes, i);

        if (g_strcmp0 (vmr_json_get_string (node, "node-name"), node_name) != 0)
            continue;
        *size = vmr_json_uint_or (vmr_json_get_object (node, "image"), "virtual-size", 0);
        found = TRUE;
    }
    return found;
}

gchar *
vmr_qmp_parse_iothread (JsonNode *reply)
{
    const gchar *path = vmr_json_node_string (reply);
    const gchar *slash;

    /* devices without the property have no I/O thread of their own */
    if (path == NULL || *path == '\0')
        return NULL;
    slash = strrchr (path, '/');
    return g_strdup (slash != NULL ? slash + 1 : path);
}

GStrv
vmr_qmp_parse_vq_mapping (JsonNode *reply)
{
    JsonArray *mapping = vmr_json_node_array (reply);
    g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();
    g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

    /* [{"iothread": "io0", "vqs": [0]}, ...] */
    for (guint i = 0; mapping != NULL && i < json_array_get_length (mapping); i++) {
        const gchar *id = vmr_json_get_string (vmr_json_array_object (mapping, i), "iothread");

        if (id == NULL || !g_hash_table_add (seen, (gpointer) id))
            continue;
        g_strv_builder_add (builder, id);
    }
    if (g_hash_table_size (seen) == 0)
        return NULL;
    return g_strv_builder_end (builder);
}

gchar *
vmr_qmp_parse_bus_controller (JsonNode *reply)
{
    const gchar *bus = vmr_json_node_string (reply);
    const gchar *slash;

    /* devices on no bus, or a bus without a device above it, have no controller */
    if (bus == NULL || bus[0] != '/' || (slash = strrchr (bus, '/')) == bus)
        return NULL;
    return g_strndup (bus, (gsize) (slash - bus));
}

void
vmr_qmp_parse_settle_iothreads (GPtrArray *disks)
{
    for (guint i = 0; i < disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (disks, i);

        if (disk->iothreads != NULL && disk->iothread == NULL)
            disk->iothread = g_strdup (disk->iothreads[0]);
        if (disk->iothreads == NULL && disk->iothread != NULL) {
            const gchar *const one[] = { disk->iothread, NULL };

            disk->iothreads = g_strdupv ((gchar **) one);
        }
    }
}

void
vmr_qmp_iothread_free (VmrQmpIothread *self)
{
    if (self == NULL)
        return;
    g_free (self->id);
    g_free (self);
}

/*
 * The array reply to @command, each object with a string member @id_member
 * made an item by @item_new; the others are left out.
 */
static GPtrArray *
parse_list (JsonNode *reply, const gchar *command, const gchar *id_member,
            gpointer (*item_new) (JsonObject *obj, const gchar *id), GDestroyNotify item_free,
            GError **error)
{
    JsonArray *array = vmr_qmp_parse_reply_array (reply, command, error);
    GPtrArray *result;

    if (array == NULL)
        return NULL;
    result = g_ptr_array_new_with_free_func (item_free);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *obj = vmr_json_array_object (array, i);
        const gchar *id = vmr_json_get_string (obj, id_member);

        if (id != NULL)
            g_ptr_array_add (result, item_new (obj, id));
    }
    return result;
}

/* the entry @id of query-iothreads, a VmrQmpIothread */
static gpointer
iothread_new (JsonObject *thread, const gchar *id)
{
    VmrQmpIothread *iothread = g_new0 (VmrQmpIothread, 1);

    iothread->id = g_strdup (id);
    iothread->thread_id = vmr_json_int_or (thread, "thread-id", 0);
    return iothread;
}

GPtrArray *
vmr_qmp_parse_iothreads (JsonNode *reply, GError **error)
{
    return parse_list (reply, "query-iothreads", "id", iothread_new,
                       (GDestroyNotify) vmr_qmp_iothread_free, error);
}

gboolean
vmr_qmp_parse_proc_tgid (const gchar *status, gint64 *tgid)
{
    const gchar *line = status != NULL ? strstr (status, "\nTgid:") : NULL;
    gchar *end = NULL;
    gint64 value;

    if (line == NULL)
        return FALSE;
    value = g_ascii_strtoll (line + strlen ("\nTgid:"), &end, 10);
    if (end == line + strlen ("\nTgid:") || value <= 0)
        return FALSE;
    *tgid = value;
    return TRUE;
}

gboolean
vmr_qmp_parse_proc_ticks (const gchar *stat, guint64 *ticks)
{
    g_autofree gchar *rest = NULL;
    g_auto (GStrv) fields = NULL;
    const gchar *end;

    /* "pid (comm) state ...": comm may hold spaces and parentheses, the last ")" ends it */
    if (stat == NULL || (end = strrchr (stat, ')')) == NULL)
        return FALSE;
    rest = g_strdup (end + 1);
    /* after "pid (comm)": state is field 3, utime 14 and stime 15 */
    fields = g_strsplit (g_strstrip (rest), " ", -1);
    if (g_strv_length (fields) < 13)
        return FALSE;
    *ticks = g_ascii_strtoull (fields[11], NULL, 10) + g_ascii_strtoull (fields[12], NULL, 10);
    return TRUE;
}

GHashTable *
vmr_qmp_parse_blockstats (JsonNode *reply, GError **error)
{
    JsonArray *entries = vmr_qmp_parse_reply_array (reply, "query-blockstats", error);
    GHashTable *result;

    if (entries == NULL)
        return NULL;
    result = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < json_array_get_length (entries); i++) {
        JsonObject *entry = vmr_json_array_object (entries, i);
        JsonObject *stats = vmr_json_get_object (entry, "stats");
        const gchar *qdev = vmr_json_get_string (entry, "qdev");
        g_autofree gchar *id = NULL;
        VmrIoCounters *counters;

        /* keyed by the device: its node changes at the pivot and a mirror
         * filter sits on top while copying, but the device stays */
        if (stats == NULL || qdev == NULL || *qdev == '\0')
            continue;
        /* a QOM path of no peripheral, with no drive or node name: no disk of ours */
        id = vmr_qmp_parse_qdev_id (qdev, vmr_json_get_string (entry, "device"),
                                    vmr_json_get_string (entry, "node-name"));
        if (id == NULL)
            continue;
        counters = g_new0 (VmrIoCounters, 1);
        counters->read_ops = vmr_json_uint_or (stats, "rd_operations", 0);
        counters->write_ops = vmr_json_uint_or (stats, "wr_operations", 0);
        counters->read_time_ns = vmr_json_uint_or (stats, "rd_total_time_ns", 0);
        counters->write_time_ns = vmr_json_uint_or (stats, "wr_total_time_ns", 0);
        g_hash_table_insert (result, g_steal_pointer (&id), counters);
    }
    return result;
}

void
vmr_qmp_block_job_free (VmrQmpBlockJob *self)
{
    if (self == NULL)
        return;
    g_free (self->id);
    g_free (self->status);
    g_free (self->error);
    g_free (self);
}

/* the job @id of query-block-jobs, a VmrQmpBlockJob */
static gpointer
block_job_new (JsonObject *info, const gchar *id)
{
    VmrQmpBlockJob *job = g_new0 (VmrQmpBlockJob, 1);

    job->id = g_strdup (id);
    job->status = g_strdup (vmr_json_get_string (info, "status"));
    job->error = g_strdup (vmr_json_get_string (info, "error"));
    job->total_bytes = vmr_json_uint_or (info, "len", 0);
    job->done_bytes = vmr_json_uint_or (info, "offset", 0);
    job->speed = vmr_json_uint_or (info, "speed", 0);
    job->paused = vmr_json_bool_or (info, "paused", FALSE);
    job->ready = vmr_json_bool_or (info, "ready", FALSE);
    job->no_space = g_strcmp0 (vmr_json_get_string (info, "io-status"), "nospace") == 0;
    return job;
}

GPtrArray *
vmr_qmp_parse_block_jobs (JsonNode *reply, GError **error)
{
    return parse_list (reply, "query-block-jobs", "device", block_job_new,
                       (GDestroyNotify) vmr_qmp_block_job_free, error);
}

VmrQmpBlockJob *
vmr_qmp_block_jobs_find (GPtrArray *jobs, const gchar *id)
{
    VmrQmpBlockJob *found = NULL;

    for (guint i = 0; jobs != NULL && i < jobs->len; i++) {
        VmrQmpBlockJob *job = g_ptr_array_index (jobs, i);

        if (g_strcmp0 (job->id, id) == 0)
            found = job;
    }
    return found;
}

VmrBackendProgress *
vmr_qmp_block_job_to_progress (const VmrQmpBlockJob *job)
{
    VmrBackendProgress *progress = g_new0 (VmrBackendProgress, 1);

    progress->job_id = g_strdup (job->id);
    progress->total_bytes = job->total_bytes;
    progress->done_bytes = job->done_bytes;
    progress->speed = job->speed;
    progress->paused = job->paused;
    progress->no_space = job->no_space;
    progress->ready = job->ready;
    return progress;
}

/* ---- files passed by descriptor ---- */

#define FDSET_PREFIX  "/dev/fdset/"
#define OPAQUE_PREFIX "virt-mirror "

gchar *
vmr_qmp_parse_fdset_opaque (const gchar *path)
{
    return g_strconcat (OPAQUE_PREFIX, path, NULL);
}

gint64
vmr_qmp_parse_fdset_id (const gchar *filename)
{
    guint64 id = 0;

    if (filename == NULL || !g_str_has_prefix (filename, FDSET_PREFIX)
        || !g_ascii_string_to_unsigned (filename + strlen (FDSET_PREFIX), 10, 0, G_MAXINT64, &id,
                                        NULL))
        return -1;
    return (gint64) id;
}

GHashTable *
vmr_qmp_parse_fdsets (JsonNode *reply)
{
    JsonArray *sets = vmr_json_node_array (reply);
    GHashTable *paths = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);

    for (guint i = 0; sets != NULL && i < json_array_get_length (sets); i++) {
        JsonObject *set = vmr_json_array_object (sets, i);
        JsonArray *fds = vmr_json_get_array (set, "fds");
        const gchar *opaque = fds != NULL && json_array_get_length (fds) > 0
                                  ? vmr_json_get_string (vmr_json_array_object (fds, 0), "opaque")
                                  : NULL;
        gint64 id = 0;

        if (!vmr_json_get_int (set, "fdset-id", &id) || opaque == NULL
            || !g_str_has_prefix (opaque, OPAQUE_PREFIX))
            continue;
        g_hash_table_insert (paths, g_memdup2 (&id, sizeof id),
                             g_strdup (opaque + strlen (OPAQUE_PREFIX)));
    }
    return paths;
}

gchar *
vmr_qmp_parse_real_path (GHashTable *fdsets, const gchar *filename)
{
    gint64 id = vmr_qmp_parse_fdset_id (filename);
    const gchar *path = id >= 0 && fdsets != NULL ? g_hash_table_lookup (fdsets, &id) : NULL;

    return g_strdup (path != NULL ? path : filename);
}

/* adds the fd set @filename names, if any, to @in_use */
static void
add_fdset_in_use (GHashTable *in_use, const gchar *filename)
{
    g_autofree gchar *plain = vmr_qmp_parse_plain_filename (filename);
    gint64 id = vmr_qmp_parse_fdset_id (plain);

    if (id >= 0)
        g_hash_table_add (in_use, g_memdup2 (&id, sizeof id));
}

GHashTable *
vmr_qmp_parse_fdsets_in_use (JsonNode *reply)
{
    JsonArray *nodes = vmr_json_node_array (reply);
    GHashTable *in_use = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);

    for (guint i = 0; nodes != NULL && i < json_array_get_length (nodes); i++) {
        JsonObject *node = vmr_json_array_object (nodes, i);

        add_fdset_in_use (in_use, vmr_json_get_string (node, "file"));
        for (JsonObject *image = vmr_json_get_object (node, "image"); image != NULL;
             image = vmr_json_get_object (image, "backing-image"))
            add_fdset_in_use (in_use, vmr_json_get_string (image, "filename"));
    }
    return in_use;
}

gboolean
vmr_qmp_parse_block_uses (JsonNode *reply, GHashTable *fdsets, const gchar *node_name,
                          const VmrDestination *dest, gboolean *node_used, gboolean *path_used,
                          GError **error)
{
    JsonArray *devices = vmr_qmp_parse_reply_array (reply, "query-block", error);

    if (devices == NULL)
        return FALSE;
    *node_used = FALSE;
    *path_used = FALSE;
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *inserted = vmr_json_get_object (vmr_json_array_object (devices, i), "inserted");
        g_autofree gchar *image = NULL;

        if (inserted == NULL)
            continue;
        image = vmr_qmp_parse_inserted_path (inserted);
        if (fdsets != NULL) {
            gchar *real = vmr_qmp_parse_real_path (fdsets, image);

            g_free (image);
            image = real;
        }
        if (node_name != NULL
            && g_strcmp0 (vmr_json_get_string (inserted, "node-name"), node_name) == 0)
            *node_used = TRUE;
        if (dest != NULL && vmr_destination_same_target (dest, image))
            *path_used = TRUE;
    }
    return TRUE;
}

gboolean
vmr_qmp_parse_job_event (const gchar *name, JsonObject *data, VmrQmpJobEvent *event)
{
    const gchar *status = vmr_json_get_string (data, "status");

    memset (event, 0, sizeof (*event));
    if (name == NULL)
        return FALSE;
    /* the block job events name the job "device", the generic job events "id" */
    event->job_id
        = vmr_json_get_string (data, g_str_has_prefix (name, "BLOCK_JOB_") ? "device" : "id");
    if (event->job_id == NULL)
        return FALSE;
    if (g_strcmp0 (name, "BLOCK_JOB_COMPLETED") == 0) {
        event->error = vmr_json_get_string (data, "error");
        event->kind = event->error != NULL ? VMR_QMP_JOB_EVENT_FAILED : VMR_QMP_JOB_EVENT_COMPLETED;
    } else if (g_strcmp0 (name, "BLOCK_JOB_CANCELLED") == 0) {
        event->kind = VMR_QMP_JOB_EVENT_CANCELLED;
    } else if (g_strcmp0 (name, "BLOCK_JOB_ERROR") == 0) {
        event->kind = VMR_QMP_JOB_EVENT_IO_ERROR;
        event->operation = vmr_json_get_string (data, "operation");
    } else if (g_strcmp0 (name, "BLOCK_JOB_READY") == 0
               || (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0
                   && g_strcmp0 (status, "ready") == 0)) {
        event->kind = VMR_QMP_JOB_EVENT_READY;
    } else if (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0 && g_strcmp0 (status, "concluded") == 0) {
        event->kind = VMR_QMP_JOB_EVENT_CONCLUDED;
    }
    return TRUE;
}

const gchar *
vmr_qmp_parse_mirror_request (const gchar *operation)
{
    if (g_strcmp0 (operation, "read") == 0)
        return "a read from the source";
    if (g_strcmp0 (operation, "write") == 0)
        return "a write to the destination";
    return "a request of the copy";
}
