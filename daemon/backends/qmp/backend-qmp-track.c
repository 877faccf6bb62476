#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: a mirror job it tracks in QEMU, and the end of one
 * (dismiss it, release the nodes it leaves behind, report how it ended);
 * with the two small helpers every file's commands use.
 */

#include "backend-qmp-private.h"

#include "destination.h"
#include "qmp-client.h"

MirrorTrack *
vmr_backend_qmp_track_new (VmrJob *job, const gchar *source_node, const gchar *source_file_node)
{
    MirrorTrack *track = g_new0 (MirrorTrack, 1);

    /* the names start_copy gives them */
    track->job_id = g_strdup (job->id);
    track->dest_node = g_strdup_printf ("%s-dst", job->id);
    track->destination = vmr_destination_ref (job->dest);
    track->source_node = g_strdup (source_node);
    track->source_file_node = g_strdup (source_file_node);
    return track;
}

void
vmr_backend_qmp_track_free (MirrorTrack *track)
{
    g_free (track->job_id);
    g_free (track->dest_node);
    g_clear_pointer (&track->destination, vmr_destination_unref);
    g_free (track->source_node);
    g_free (track->source_file_node);
    g_free (track->error);
    g_free (track);
}

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

    if (node == NULL) {
        g_task_return_boolean (task, TRUE);
        g_object_unref (task);
        return;
    }
    g_task_set_task_data (task, g_strdup (node), g_free);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_blockdev_del (node), 0, NULL, release_cb,
                              task);
}

static void
pruned_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;

    g_task_return_boolean (task, TRUE);
}

static void
object_del_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL)
        g_debug ("object-del %s: %s", (const gchar *) g_task_get_task_data (task), error->message);
    vmr_backend_qmp_prune_fdsets_async (self, pruned_cb, task);
}

static void
release_tls_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    const gchar *tls_id = g_task_get_task_data (task);

    /* the fd set a file was passed in goes with the node */
    if (tls_id == NULL) {
        vmr_backend_qmp_prune_fdsets_async (self, pruned_cb, task);
        return;
    }
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_object_del (tls_id), 0, NULL, object_del_cb,
                              task);
}

void
vmr_backend_qmp_release_destination_async (VmrBackendQmp *self, const VmrDestination *dest,
                                           const gchar *node, gboolean node_added,
                                           GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, NULL, callback, user_data);

    /* the node goes first: it holds the object */
    g_task_set_task_data (task, vmr_destination_tls_object_id (dest, node), g_free);
    vmr_backend_qmp_release_node_async (self, node_added ? node : NULL, release_tls_cb, task);
}

typedef struct {
    VmrBackendQmp *self;
    gchar *job_id;
    VmrBackendOutcome outcome;
    gchar *reason;
    gchar *second_node; /* released after the first */
} FinishData;

static void
finish_data_free (FinishData *data)
{
    g_object_unref (data->self);
    g_free (data->job_id);
    g_free (data->reason);
    g_free (data->second_node);
    g_free (data);
}

static void
finish_done (FinishData *data)
{
    g_hash_table_remove (data->self->tracks, data->job_id);
    vmr_backend_emit_job_finished (VMR_BACKEND (data->self), data->job_id, data->outcome,
                                   data->reason);
    finish_data_free (data);
}

static void
finish_pruned_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    finish_done (user_data);
}

static void
second_release_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    FinishData *data = user_data;

    /* the old image may have come from an fd set of an earlier copy */
    vmr_backend_qmp_prune_fdsets_async (data->self, finish_pruned_cb, data);
}

static void
destination_released_cb (GObject *source, GAsyncResult *res, gpointer user_data)
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
        vmr_backend_qmp_release_destination_async (data->self, track->destination, track->dest_node,
                                                   TRUE, destination_released_cb, data);
        return;
    }
    vmr_backend_qmp_release_node_async (data->self, first_node, first_release_cb, data);
}

void
vmr_backend_qmp_finish_track (VmrBackendQmp *self, MirrorTrack *track)
{
    FinishData *data;

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
        /* the mirror stops at its first failed request: which side failed is the reason */
        if (track->io_error != NULL)
            data->reason
                = g_strdup_printf ("the copy failed: %s (%s)", track->error, track->io_error);
        else
            data->reason = g_strdup_printf ("the copy failed: %s", track->error);
    } else if (track->completed) {
        data->outcome = VMR_BACKEND_OUTCOME_COMPLETED;
    } else {
        data->outcome = VMR_BACKEND_OUTCOME_FAILED;
        data->reason = g_strdup ("QEMU ended the job without saying why");
    }
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_job_dismiss (track->job_id), 0, NULL,
                              dismiss_cb, data);
}
