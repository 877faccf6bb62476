#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: the object and its connection to a QEMU monitor,
 * starting a copy, and the end of a job (see backend-qmp-private.h for the
 * other files).
 */

#include "backend-qmp-private.h"

#include "destination.h"
#include "qmp-client.h"
#include "vmr-error.h"

/* how long a monitor may take to greet us before we decide it is not QEMU */
#define GREETING_TIMEOUT_MS 5000

G_DEFINE_TYPE (VmrBackendQmp, vmr_backend_qmp, VMR_TYPE_BACKEND)

static void
mirror_track_free (MirrorTrack *track)
{
    g_free (track->job_id);
    g_free (track->dest_node);
    g_clear_pointer (&track->destination, vmr_destination_unref);
    g_free (track->source_node);
    g_free (track->source_file_node);
    g_free (track->error);
    g_free (track);
}

JsonArray *
vmr_backend_qmp_reply_array (JsonNode *reply, const gchar *command, GError **error)
{
    if (reply == NULL || !JSON_NODE_HOLDS_ARRAY (reply)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' (expected an array)", command);
        return NULL;
    }
    return json_node_get_array (reply);
}

JsonObject *
vmr_backend_qmp_member_object (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    return node != NULL && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

const gchar *
vmr_backend_qmp_member_string (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string (node);
}

gint64
vmr_backend_qmp_member_int (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
        return 0;
    return json_node_get_int (node);
}

gboolean
vmr_backend_qmp_member_bool (JsonObject *obj, const gchar *name)
{
    JsonNode *node = obj != NULL ? json_object_get_member (obj, name) : NULL;

    if (node == NULL || json_node_get_value_type (node) != G_TYPE_BOOLEAN)
        return FALSE;
    return json_node_get_boolean (node);
}

JsonObject *
vmr_backend_qmp_args_device (const gchar *key, const gchar *value)
{
    JsonObject *args = json_object_new ();

    json_object_set_string_member (args, key, value);
    return args;
}

/* runs a command whose failure only matters for the log */
void
vmr_backend_qmp_best_effort_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autofree gchar *what = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL)
        g_debug ("%s: %s", what, error->message);
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
        g_autoptr (JsonObject) args = vmr_backend_qmp_args_device ("node-name", data->dest_node);

        vmr_qmp_client_execute_async (self->client, "blockdev-del", args, 0, NULL,
                                      vmr_backend_qmp_best_effort_cb,
                                      g_strdup_printf ("releasing %s", data->job->dest->location));
    }
    vmr_destination_remove (data->job->dest);
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
    nodes = reply != NULL ? vmr_backend_qmp_reply_array (reply, "query-named-block-nodes", &error)
                          : NULL;
    if (nodes == NULL) {
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    for (guint i = 0; i < json_array_get_length (nodes); i++) {
        JsonObject *node = json_array_get_object_element (nodes, i);
        guint64 size;

        if (g_strcmp0 (vmr_backend_qmp_member_string (node, "node-name"), data->dest_node) != 0)
            continue;
        size = (guint64) vmr_backend_qmp_member_int (vmr_backend_qmp_member_object (node, "image"),
                                                     "virtual-size");
        if (size != data->disk->size) {
            start_fail (task, g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                           "destination %s has a virtual size of %" G_GUINT64_FORMAT
                                           " bytes, the source %" G_GUINT64_FORMAT,
                                           data->job->dest->location, size, data->disk->size));
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
        g_prefix_error (&error, "QEMU cannot open %s: ", data->job->dest->location);
        start_fail (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    data->dest_added = TRUE;
    if (vmr_destination_has_virtual_size (data->job->dest)) {
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
    g_autoptr (JsonObject) args
        = vmr_destination_to_blockdev_add (data->job->dest, data->dest_node, data->disk);

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
    data->track->destination = vmr_destination_ref (job->dest);
    data->track->source_node = g_strdup (disk->node);
    data->track->source_file_node = g_strdup (disk->file_node);
    g_task_set_task_data (task, data, (GDestroyNotify) start_data_free);

    if (job->dest->created) {
        vmr_destination_create_async (job->dest, disk->size, disk->path, cancellable, create_cb,
                                      task);
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
void
vmr_backend_qmp_release_node_async (VmrBackendQmp *self, const gchar *node,
                                    GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, NULL, callback, user_data);
    g_autoptr (JsonObject) args = NULL;

    if (node == NULL) {
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
        return;
    }
    g_task_set_task_data (task, g_strdup (node), g_free);
    args = vmr_backend_qmp_args_device ("node-name", node);
    vmr_qmp_client_execute_async (self->client, "blockdev-del", args, 0, NULL, release_cb, task);
}

typedef struct {
    VmrBackendQmp *self;
    gchar *job_id;
    VmrBackendOutcome outcome;
    gchar *reason;
    gchar *second_node;                 /* released after the first */
    VmrDestination *remove_destination; /* removed at the end if the copy made it, or NULL */
} FinishData;

static void
finish_data_free (FinishData *data)
{
    g_object_unref (data->self);
    g_free (data->job_id);
    g_free (data->reason);
    g_free (data->second_node);
    g_clear_pointer (&data->remove_destination, vmr_destination_unref);
    g_free (data);
}

static void
finish_done (FinishData *data)
{
    if (data->remove_destination != NULL)
        vmr_destination_remove (data->remove_destination);
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

    vmr_backend_qmp_release_node_async (data->self, data->second_node, second_release_cb, data);
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
        data->remove_destination = vmr_destination_ref (track->destination);
    }
    vmr_backend_qmp_release_node_async (data->self, first_node, first_release_cb, data);
}

void
vmr_backend_qmp_finish_track (VmrBackendQmp *self, MirrorTrack *track)
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
    args = vmr_backend_qmp_args_device ("id", track->job_id);
    vmr_qmp_client_execute_async (self->client, "job-dismiss", args, 0, NULL, dismiss_cb, data);
}

static void
client_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *event_data,
                 gint64 timestamp_us, gpointer user_data)
{
    VmrBackendQmp *self = user_data;
    const gchar *job_id = vmr_backend_qmp_member_string (event_data, "id");
    MirrorTrack *track;

    if (g_str_has_prefix (name, "BLOCK_JOB_"))
        job_id = vmr_backend_qmp_member_string (event_data, "device");
    if (job_id == NULL)
        return;
    track = g_hash_table_lookup (self->tracks, job_id);
    if (track == NULL)
        return;
    g_debug ("job %s: event %s", job_id, name);

    if (g_strcmp0 (name, "BLOCK_JOB_COMPLETED") == 0) {
        const gchar *error = vmr_backend_qmp_member_string (event_data, "error");

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
                       vmr_backend_qmp_member_string (event_data, "operation"));
        track->io_error_logged = TRUE;
    } else if (g_strcmp0 (name, "BLOCK_JOB_READY") == 0
               || (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0
                   && g_strcmp0 (vmr_backend_qmp_member_string (event_data, "status"), "ready")
                          == 0)) {
        if (!track->ready) {
            track->ready = TRUE;
            vmr_backend_emit_job_ready (VMR_BACKEND (self), job_id);
        }
    } else if (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0
               && g_strcmp0 (vmr_backend_qmp_member_string (event_data, "status"), "concluded")
                      == 0) {
        vmr_backend_qmp_finish_track (self, track);
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
    version = vmr_backend_qmp_member_object (vmr_qmp_client_get_greeting (client), "version");
    if (vmr_backend_qmp_member_object (version, "qemu") == NULL) {
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
