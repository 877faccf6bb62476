#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: the object and its connection to a QEMU monitor,
 * starting a copy, and following QEMU's events about a job (see
 * backend-qmp-private.h for the other files).
 */

#include "backend-qmp-private.h"

#include "destination.h"
#include "qmp-client.h"
#include "qmp-parse.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* how long a monitor may take to greet us before we decide it is not QEMU */
#define GREETING_TIMEOUT_MS 5000

G_DEFINE_TYPE (VmrBackendQmp, vmr_backend_qmp, VMR_TYPE_BACKEND)

/* ---- starting a copy ---- */

typedef struct {
    VmrJob *job;
    VmrDisk *disk;      /* a copy of what the caller gave */
    MirrorTrack *track; /* owned until handed to self->tracks, then NULL */
    gchar *dest_node;
    gchar *dest_filename; /* "/dev/fdset/N" of a destination passed by descriptor, or NULL */
    gboolean dest_added;
    GError *error; /* why it failed, returned once the destination is released */
} StartData;

static void
start_data_free (StartData *data)
{
    vmr_job_unref (data->job);
    vmr_disk_free (data->disk);
    g_free (data->dest_node);
    g_free (data->dest_filename);
    g_clear_error (&data->error);
    if (data->track != NULL)
        vmr_backend_qmp_track_free (data->track);
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

static void
start_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    StartData *data = g_task_get_task_data (task);

    g_task_return_error (task, g_steal_pointer (&data->error));
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
    data->error = error;
    /* QEMU has dropped what it made when the reply comes: a test may look then */
    vmr_backend_qmp_release_destination_async (self, data->job->dest, data->dest_node,
                                               data->dest_added, start_released_cb,
                                               g_object_ref (task));
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
    g_autofree gchar *filter = g_strdup_printf ("%s-mirror", data->job->id);
    /*
     * An I/O error on either side ends the copy at once, on its source; but
     * a file that fills up stops the copy instead of failing it, and the
     * daemon resumes it once there is room again (docs/operations.md)
     */
    const VmrQmpMirrorArgs args = {
        .job_id = data->job->id,
        .device = data->disk->node,
        .target = data->dest_node,
        .filter_node_name = filter,
        .on_target_error = data->job->dest->kind == VMR_DESTINATION_FILE && data->job->space_watched
                               ? "enospc"
                               : "report",
        .speed = data->job->speed,
        .granularity = data->job->granularity,
        .buf_size = data->job->buf_size,
    };

    /* events about the job may arrive before the reply */
    g_hash_table_insert (self->tracks, g_strdup (data->job->id), g_steal_pointer (&data->track));
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_blockdev_mirror (&args), 0,
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
    guint64 size = 0;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    nodes = reply != NULL ? vmr_qmp_parse_reply_array (reply, "query-named-block-nodes", &error)
                          : NULL;
    if (nodes == NULL) {
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (vmr_qmp_parse_node_size (nodes, data->dest_node, &size) && size != data->disk->size) {
        start_fail (task, g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                       "destination %s has a virtual size of %" G_GUINT64_FORMAT
                                       " bytes, the source %" G_GUINT64_FORMAT,
                                       data->job->dest->location, size, data->disk->size));
        g_object_unref (task);
        return;
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
        g_prefix_error (&error, "QEMU cannot open %s: ", data->job->dest->location);
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    data->dest_added = TRUE;
    /* QEMU has the file by its descriptor: the name must still lead there */
    if (data->job->dest_handle != NULL
        && !vmr_destination_handle_check_named (data->job->dest_handle, &error)) {
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (vmr_destination_has_virtual_size (data->job->dest)) {
        vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_named_block_nodes (TRUE), 0,
                                  g_task_get_cancellable (task), check_dest_size_cb, task);
        return;
    }
    start_mirror (task);
}

static void
add_node (GTask *task)
{
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);
    g_autoptr (JsonObject) options = vmr_destination_to_blockdev_add (
        data->job->dest, data->dest_node, data->disk, data->job->nbd);

    /* the file by its descriptor, not by its name */
    if (data->dest_filename != NULL)
        json_object_set_string_member (vmr_json_get_object (options, "file"), "filename",
                                       data->dest_filename);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_blockdev_add (options), 0,
                              g_task_get_cancellable (task), blockdev_add_cb, task);
}

static void
tls_object_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    StartData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error,
                        "QEMU cannot load the TLS credentials %s: ", data->job->dest->tls_creds);
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    add_node (task);
}

/* the destination's node, after the TLS object an NBD export over TLS needs */
static void
add_destination (GTask *task)
{
    VmrBackendQmp *self = g_task_get_source_object (task);
    StartData *data = g_task_get_task_data (task);
    g_autoptr (JsonObject) tls
        = vmr_destination_to_tls_object_add (data->job->dest, data->dest_node);

    if (tls == NULL) {
        add_node (task);
        return;
    }
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_object_add (tls), 0,
                              g_task_get_cancellable (task), tls_object_cb, task);
}

static void
passed_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    StartData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;

    data->dest_filename = vmr_backend_qmp_pass_destination_finish (res, &error);
    if (data->dest_filename == NULL) {
        g_prefix_error (&error, "cannot pass %s to QEMU: ", data->job->dest->location);
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    add_node (task);
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
    data->track = vmr_backend_qmp_track_new (job, disk->node, disk->file_node);
    data->dest_node = g_strdup (data->track->dest_node);
    g_task_set_task_data (task, data, (GDestroyNotify) start_data_free);

    /* a file or device the daemon opened: QEMU gets it by descriptor */
    if (job->dest_handle != NULL) {
        vmr_backend_qmp_pass_destination_async (self, job->dest_handle, disk->file_cache_direct,
                                                cancellable, passed_cb, task);
        return;
    }
    add_destination (task);
}

static gboolean
vmr_backend_qmp_start_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

static void
client_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *event_data,
                 gint64 timestamp_us, gpointer user_data)
{
    VmrBackendQmp *self = user_data;
    VmrQmpJobEvent event;
    MirrorTrack *track;

    if (g_strcmp0 (name, "RESUME") == 0)
        vmr_backend_qmp_fdsets_guest_resumed (self);
    if (!vmr_qmp_parse_job_event (name, event_data, &event))
        return;
    track = g_hash_table_lookup (self->tracks, event.job_id);
    if (track == NULL)
        return;
    g_debug ("job %s: event %s", event.job_id, name);

    switch (event.kind) {
        case VMR_QMP_JOB_EVENT_COMPLETED:
            track->completed = TRUE;
            break;
        case VMR_QMP_JOB_EVENT_FAILED:
            g_free (track->error);
            track->error = g_strdup (event.error);
            break;
        case VMR_QMP_JOB_EVENT_CANCELLED:
            track->cancelled = TRUE;
            break;
        case VMR_QMP_JOB_EVENT_IO_ERROR:
            /* QEMU reports every failed request; one line per job says it */
            if (track->io_error == NULL) {
                track->io_error = vmr_qmp_parse_mirror_request (event.operation);
                g_message ("job %s: I/O error in %s", event.job_id, track->io_error);
            }
            break;
        case VMR_QMP_JOB_EVENT_READY:
            if (!track->ready) {
                track->ready = TRUE;
                vmr_backend_emit_job_ready (VMR_BACKEND (self), event.job_id);
            }
            break;
        case VMR_QMP_JOB_EVENT_CONCLUDED:
            vmr_backend_qmp_finish_track (self, track);
            break;
        case VMR_QMP_JOB_EVENT_NONE:
            break;
    }
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

    client = vmr_qmp_client_connect_finish (res, &error);
    if (client == NULL) {
        if (g_error_matches (error, VMR_ERROR, VMR_ERROR_DISCONNECTED))
            g_task_return_error (task, g_steal_pointer (&error));
        else
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "%s is not a QEMU monitor: %s", path, error->message);
        return;
    }
    if (!vmr_qmp_parse_greeting_is_qemu (vmr_qmp_client_get_greeting (client))) {
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
    g_hash_table_unref (self->kept_fdsets);
    g_clear_pointer (&self->iothreads, json_array_unref);
    /* a verification holds a reference: none is queued by now */
    vmr_verifier_free (self->verifier);
    g_free (self->monitor_path);
    G_OBJECT_CLASS (vmr_backend_qmp_parent_class)->finalize (object);
}

static void
vmr_backend_qmp_init (VmrBackendQmp *self)
{
    self->tracks = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify) vmr_backend_qmp_track_free);
    self->iothread_cpu = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->kept_fdsets = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
    self->verifier = vmr_verifier_new ();
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
    backend_class->query_iothreads_async = vmr_backend_qmp_query_iothreads_async;
    backend_class->query_iothreads_finish = vmr_backend_qmp_query_iothreads_finish;
    backend_class->adopt_copy_async = vmr_backend_qmp_adopt_copy_async;
    backend_class->adopt_copy_finish = vmr_backend_qmp_adopt_copy_finish;
    backend_class->verify_copy_async = vmr_backend_qmp_verify_copy_async;
    backend_class->verify_copy_finish = vmr_backend_qmp_verify_copy_finish;
    backend_class->close = vmr_backend_qmp_close;
}
