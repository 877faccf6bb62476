#define G_LOG_DOMAIN "vmr-daemon"

#include "backend-libvirt.h"

#include "destination.h"
#include "libvirt-domain.h"
#include "libvirt-xml.h"
#include "qmp-client.h"
#include "vmr-error.h"

/* what we track of a copy of ours that libvirt runs */
typedef struct {
    gchar *job_id;      /* ours, e.g. "vmr-3"; libvirt names its job after the disk */
    gchar *target;      /* the disk, e.g. "vda" */
    gchar *source;      /* the image before the pivot */
    gchar *destination; /* absolute path */
    gchar *format;      /* of the destination */
    gboolean block;     /* the destination is a block device */
    gboolean created;   /* made for this copy (by libvirt): removed if the copy fails */
    gboolean started;   /* virDomainBlockCopy() succeeded */
    gboolean ready;
    gboolean cancel_requested;
    gboolean finishing;
    gboolean adopting; /* a copy of an earlier run, being looked for: its events wait */
    gint adopt_event;  /* the end event (VIR_DOMAIN_BLOCK_JOB_*) that came meanwhile, -1 = none */
} CopyTrack;

struct _VmrBackendLibvirt {
    VmrBackend parent_instance;

    VmrLibvirtConnection *connection;
    gchar *name;
    gchar *uuid;
    GHashTable *tracks; /* job id -> CopyTrack *, owned */
    gulong block_job_handler;
    gulong connected_handler;
};

G_DEFINE_TYPE (VmrBackendLibvirt, vmr_backend_libvirt, VMR_TYPE_BACKEND)

static void
copy_track_free (CopyTrack *track)
{
    g_free (track->job_id);
    g_free (track->target);
    g_free (track->source);
    g_free (track->destination);
    g_free (track->format);
    g_free (track);
}

static CopyTrack *
track_for_target (VmrBackendLibvirt *self, const gchar *target)
{
    GHashTableIter iter;
    CopyTrack *track;

    g_hash_table_iter_init (&iter, self->tracks);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &track)) {
        if (g_strcmp0 (track->target, target) == 0)
            return track;
    }
    return NULL;
}

/*
 * One call into libvirt, run in a GTask thread. It carries copies of what
 * the thread needs, never the backend's own state.
 */
typedef struct {
    VmrLibvirtConnection *connection;
    gchar *uuid;
    gchar *job_id;
    gchar *target;
    gchar *source;
    gchar *destination;
    gchar *format;
    gboolean block;
    gboolean reuse;
    gboolean created;      /* the copy made the destination */
    gboolean query_paused; /* ask QEMU whether the copy is paused */
    guint64 speed;
    guint64 old_speed;
    VmrBackendCommand command;
    GPtrArray *tracks; /* copies of the started tracks, for progress and resync */
} Call;

static void
call_free (Call *call)
{
    g_object_unref (call->connection);
    g_free (call->uuid);
    g_free (call->job_id);
    g_free (call->target);
    g_free (call->source);
    g_free (call->destination);
    g_free (call->format);
    g_clear_pointer (&call->tracks, g_ptr_array_unref);
    g_free (call);
}

static Call *
call_new (VmrBackendLibvirt *self, CopyTrack *track)
{
    Call *call = g_new0 (Call, 1);

    call->connection = g_object_ref (self->connection);
    call->uuid = g_strdup (self->uuid);
    if (track != NULL) {
        call->job_id = g_strdup (track->job_id);
        call->target = g_strdup (track->target);
        call->source = g_strdup (track->source);
        call->destination = g_strdup (track->destination);
        call->format = g_strdup (track->format);
        call->block = track->block;
        call->created = track->created;
    }
    return call;
}

/* copies of the tracks whose copy runs in libvirt */
static GPtrArray *
started_tracks (VmrBackendLibvirt *self)
{
    GPtrArray *tracks = g_ptr_array_new_with_free_func ((GDestroyNotify) copy_track_free);
    GHashTableIter iter;
    CopyTrack *track;

    g_hash_table_iter_init (&iter, self->tracks);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &track)) {
        CopyTrack *copy;

        if (!track->started || track->finishing)
            continue;
        copy = g_new0 (CopyTrack, 1);
        *copy = *track;
        copy->job_id = g_strdup (track->job_id);
        copy->target = g_strdup (track->target);
        copy->source = g_strdup (track->source);
        copy->destination = g_strdup (track->destination);
        copy->format = g_strdup (track->format);
        g_ptr_array_add (tracks, copy);
    }
    return tracks;
}

static void
run_call (VmrBackendLibvirt *self, Call *call, GTaskThreadFunc func, GCancellable *cancellable,
          GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);

    g_task_set_task_data (task, call, (GDestroyNotify) call_free);
    g_task_run_in_thread (task, func);
}

/* ---- disks ---- */

static void
query_disks_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    GPtrArray *disks = dom != NULL ? vmr_libvirt_domain_read_disks (dom, &error) : NULL;

    if (disks == NULL)
        g_task_return_error (task, g_steal_pointer (&error));
    else
        g_task_return_pointer (task, disks, (GDestroyNotify) g_ptr_array_unref);
}

static void
vmr_backend_libvirt_query_disks_async (VmrBackend *backend, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    run_call (self, call_new (self, NULL), query_disks_thread, cancellable, callback, user_data);
}

static GPtrArray *
propagate_pointer (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

static gboolean
propagate_boolean (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

/* ---- the end of a copy ---- */

static void
persist_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);

    if (dom != NULL)
        vmr_libvirt_domain_persist_disk (dom, call->job_id, call->target, call->source,
                                         call->destination, call->block, call->format);
    else
        g_message ("%s: not checking the persistent definition: %s", call->job_id, error->message);
    g_task_return_boolean (task, TRUE);
}

static void
persist_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autofree gchar *job_id = user_data;
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (source);

    g_hash_table_remove (self->tracks, job_id);
    vmr_backend_emit_job_finished (VMR_BACKEND (self), job_id, VMR_BACKEND_OUTCOME_COMPLETED, NULL);
}

/* ends @track once; the engine hears of it when libvirt has let go of the files */
static void
finish_track (VmrBackendLibvirt *self, CopyTrack *track, VmrBackendOutcome outcome,
              const gchar *reason)
{
    g_autofree gchar *job_id = g_strdup (track->job_id);

    if (track->finishing)
        return;
    track->finishing = TRUE;
    if (outcome == VMR_BACKEND_OUTCOME_COMPLETED) {
        run_call (self, call_new (self, track), persist_thread, NULL, persist_done_cb,
                  g_steal_pointer (&job_id));
        return;
    }
    /* the domain stays on its source: a destination made for the copy goes */
    if (track->created)
        vmr_destination_remove (track->destination);
    g_hash_table_remove (self->tracks, job_id);
    vmr_backend_emit_job_finished (VMR_BACKEND (self), job_id, outcome, reason);
}

/* what libvirt's block job event @status means for @track */
static void
track_block_job_event (VmrBackendLibvirt *self, CopyTrack *track, gint status)
{
    switch (status) {
        case VIR_DOMAIN_BLOCK_JOB_READY:
            if (!track->ready) {
                track->ready = TRUE;
                vmr_backend_emit_job_ready (VMR_BACKEND (self), track->job_id);
            }
            break;
        case VIR_DOMAIN_BLOCK_JOB_COMPLETED:
            /* for a copy, libvirt reports completed only after a pivot */
            finish_track (self, track, VMR_BACKEND_OUTCOME_COMPLETED, NULL);
            break;
        case VIR_DOMAIN_BLOCK_JOB_CANCELED:
            finish_track (self, track, VMR_BACKEND_OUTCOME_CANCELLED,
                          track->cancel_requested ? "cancelled on request"
                                                  : "cancelled outside virt-mirror");
            break;
        case VIR_DOMAIN_BLOCK_JOB_FAILED:
        default:
            finish_track (self, track, VMR_BACKEND_OUTCOME_FAILED,
                          "libvirt reported the copy as failed");
            break;
    }
}

static void
block_job_cb (VmrLibvirtConnection *connection, const gchar *uuid, const gchar *target, gint type,
              gint status, gpointer user_data)
{
    VmrBackendLibvirt *self = user_data;
    CopyTrack *track;

    if (g_strcmp0 (uuid, self->uuid) != 0 || type != VIR_DOMAIN_BLOCK_JOB_TYPE_COPY)
        return;
    track = track_for_target (self, target);
    if (track == NULL || track->finishing)
        return;
    g_debug ("%s: libvirt block job event %d", track->job_id, status);
    if (track->adopting) {
        /* adopt_copy_cb() weighs it against what the adoption found */
        if (status == VIR_DOMAIN_BLOCK_JOB_READY)
            track->ready = TRUE;
        else
            track->adopt_event = status;
        return;
    }
    track_block_job_event (self, track, status);
}

/* ---- starting a copy ---- */

static void
start_copy_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree gchar *dest_xml = NULL;
    virTypedParameterPtr params = NULL;
    int n_params = 0;
    int max_params = 0;
    /* a persistent domain needs TRANSIENT_JOB: the copy does not survive a restart of QEMU */
    unsigned int flags = VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB;
    int rc;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (call->reuse)
        flags |= VIR_DOMAIN_BLOCK_COPY_REUSE_EXT;
    if (call->speed > 0
        && virTypedParamsAddULLong (&params, &n_params, &max_params,
                                    VIR_DOMAIN_BLOCK_COPY_BANDWIDTH, call->speed)
               < 0) {
        vmr_libvirt_set_error (&error, "cannot set the copy bandwidth");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    dest_xml = vmr_libvirt_xml_copy_destination (call->destination, call->block, call->format);
    g_debug ("%s: virDomainBlockCopy %s %s flags 0x%x", call->job_id, call->target, dest_xml,
             flags);
    rc = virDomainBlockCopy (dom, call->target, dest_xml, params, n_params, flags);
    virTypedParamsFree (params, n_params);
    if (rc < 0) {
        vmr_libvirt_set_error (&error, "libvirt refused to copy %s to %s", call->target,
                               call->destination);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

static void
start_copy_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendLibvirt *self = g_task_get_source_object (task);
    const gchar *job_id = g_task_get_task_data (task);
    CopyTrack *track = g_hash_table_lookup (self->tracks, job_id);
    g_autoptr (GError) error = NULL;

    if (!g_task_propagate_boolean (G_TASK (res), &error)) {
        /* libvirt may have made the file before it failed */
        if (track != NULL && track->created)
            vmr_destination_remove (track->destination);
        g_hash_table_remove (self->tracks, job_id);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (track != NULL)
        track->started = TRUE;
    g_task_return_boolean (task, TRUE);
}

static void
vmr_backend_libvirt_start_copy_async (VmrBackend *backend, VmrJob *job, const VmrDisk *disk,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    CopyTrack *track = g_new0 (CopyTrack, 1);
    Call *call;

    track->job_id = g_strdup (job->id);
    track->target = g_strdup (disk->id);
    track->source = g_strdup (disk->path);
    track->destination = g_strdup (job->destination);
    track->format = g_strdup (job->format != NULL ? job->format : "raw");
    track->block = vmr_destination_is_block_device (job->destination);
    /* without REUSE_EXT libvirt creates the destination itself */
    track->created = job->created_destination;
    g_task_set_task_data (task, g_strdup (job->id), g_free);
    call = call_new (self, track);
    call->reuse = !job->created_destination;
    call->speed = job->speed;
    /* events may come before the call returns */
    g_hash_table_insert (self->tracks, g_strdup (job->id), track);
    run_call (self, call, start_copy_thread, cancellable, start_copy_cb, task);
}

/* ---- commands on a running copy ---- */

static void
job_command_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree gchar *qemu_job = NULL;
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    const unsigned int bytes = VIR_DOMAIN_BLOCK_JOB_SPEED_BANDWIDTH_BYTES;
    const gchar *what = "";
    const gchar *qmp_command;
    int rc = 0;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    switch (call->command) {
        case VMR_BACKEND_COMMAND_PAUSE:
        case VMR_BACKEND_COMMAND_RESUME:
            /* libvirt has no API for this: QMP on libvirt's own job */
            qmp_command = call->command == VMR_BACKEND_COMMAND_PAUSE ? "block-job-pause"
                                                                     : "block-job-resume";
            qemu_job = vmr_libvirt_domain_find_copy_job (dom, call->target, &error);
            if (qemu_job != NULL) {
                json_object_set_string_member (args, "device", qemu_job);
                reply = vmr_libvirt_domain_qemu_command (dom, qmp_command, args, &error);
            }
            if (reply == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
            }
            break;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            /* libvirt has no API for this either; the schema says whether QEMU can */
            reply = vmr_libvirt_domain_qemu_command (dom, "query-qmp-schema", NULL, &error);
            if (reply != NULL && !vmr_qmp_schema_has_command (reply, "block-job-change")) {
                g_set_error (&error, VMR_ERROR, VMR_ERROR_FAILED,
                             "this QEMU cannot change the copy mode of a running mirror "
                             "(no block-job-change; QEMU 8.2 or later has it)");
                g_clear_pointer (&reply, json_node_unref);
            }
            if (reply != NULL) {
                g_clear_pointer (&reply, json_node_unref);
                qemu_job = vmr_libvirt_domain_find_copy_job (dom, call->target, &error);
            }
            if (qemu_job != NULL) {
                json_object_set_string_member (args, "id", qemu_job);
                json_object_set_string_member (args, "type", "mirror");
                json_object_set_string_member (args, "copy-mode", "write-blocking");
                reply = vmr_libvirt_domain_qemu_command (dom, "block-job-change", args, &error);
            }
            if (reply == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
            }
            break;
        case VMR_BACKEND_COMMAND_CANCEL:
            what = "cancel";
            rc = virDomainBlockJobAbort (dom, call->target, 0);
            break;
        case VMR_BACKEND_COMMAND_PIVOT:
            what = "pivot";
            /* a rate-limited copy sleeps between chunks: lift the limit first */
            if (call->old_speed > 0 && virDomainBlockJobSetSpeed (dom, call->target, 0, bytes) < 0)
                g_debug ("%s: unthrottling: %s", call->job_id, virGetLastErrorMessage ());
            rc = virDomainBlockJobAbort (dom, call->target, VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT);
            break;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            what = "set the speed of";
            rc = virDomainBlockJobSetSpeed (dom, call->target, call->speed, bytes);
            break;
        default:
            g_assert_not_reached ();
    }
    if (rc < 0) {
        vmr_libvirt_set_error (&error, "libvirt refused to %s the copy of %s", what, call->target);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

static void
job_command_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendLibvirt *self = g_task_get_source_object (task);
    Call *call = g_task_get_task_data (G_TASK (res));
    CopyTrack *track = g_hash_table_lookup (self->tracks, call->job_id);
    g_autoptr (GError) error = NULL;

    if (!g_task_propagate_boolean (G_TASK (res), &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* both calls wait for the end of the job: its event may still be on its way */
    if (track != NULL && call->command == VMR_BACKEND_COMMAND_PIVOT)
        finish_track (self, track, VMR_BACKEND_OUTCOME_COMPLETED, NULL);
    else if (track != NULL && call->command == VMR_BACKEND_COMMAND_CANCEL)
        finish_track (self, track, VMR_BACKEND_OUTCOME_CANCELLED, "cancelled on request");
    g_task_return_boolean (task, TRUE);
}

static void
vmr_backend_libvirt_job_command_async (VmrBackend *backend, VmrJob *job, VmrBackendCommand command,
                                       guint64 speed, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    CopyTrack *track = g_hash_table_lookup (self->tracks, job->id);
    Call *call;

    if (track == NULL || !track->started) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                                 "libvirt runs no copy for job %s", job->id);
        g_object_unref (task);
        return;
    }
    if (command == VMR_BACKEND_COMMAND_CANCEL)
        track->cancel_requested = TRUE;
    call = call_new (self, track);
    call->command = command;
    call->speed = speed;
    call->old_speed = job->speed;
    run_call (self, call, job_command_thread, cancellable, job_command_cb, task);
}

/* ---- progress ---- */

static void
query_progress_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom = NULL;
    g_autoptr (GPtrArray) result
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_progress_free);

    if (call->tracks->len > 0)
        dom = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    if (call->tracks->len > 0 && dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    for (guint i = 0; i < call->tracks->len; i++) {
        CopyTrack *track = g_ptr_array_index (call->tracks, i);
        virDomainBlockJobInfo info = { 0 };
        VmrBackendProgress *progress;

        if (virDomainGetBlockJobInfo (dom, track->target, &info,
                                      VIR_DOMAIN_BLOCK_JOB_INFO_BANDWIDTH_BYTES)
            != 1)
            continue;
        progress = g_new0 (VmrBackendProgress, 1);
        progress->job_id = g_strdup (track->job_id);
        progress->total_bytes = info.end;
        progress->done_bytes = info.cur;
        progress->speed = info.bandwidth;
        progress->ready = track->ready;
        g_ptr_array_add (result, progress);
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_ptr_array_unref);
}

static void
vmr_backend_libvirt_query_progress_async (VmrBackend *backend, GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    Call *call = call_new (self, NULL);

    call->tracks = started_tracks (self);
    run_call (self, call, query_progress_thread, cancellable, callback, user_data);
}

/* ---- guest load ---- */

static void
query_load_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    GHashTable *load = dom != NULL ? vmr_libvirt_domain_read_load (dom, &error) : NULL;

    if (load == NULL)
        g_task_return_error (task, g_steal_pointer (&error));
    else
        g_task_return_pointer (task, load, (GDestroyNotify) g_hash_table_unref);
}

static void
vmr_backend_libvirt_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    run_call (self, call_new (self, NULL), query_load_thread, cancellable, callback, user_data);
}

static GHashTable *
vmr_backend_libvirt_query_load_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- where a copy stands ---- */

/* what libvirt says of one copy of ours: after a reconnection and at adoption */
typedef struct {
    gchar *job_id;
    gboolean running; /* libvirt still runs the copy */
    gboolean ready;
    GError *error;       /* libvirt could not say whether it runs; running is FALSE */
    gchar *disk_path;    /* what the live definition names for the disk */
    guint64 total_bytes; /* libvirt's end, while running */
    guint64 done_bytes;  /* libvirt's cur, while running */
    guint64 speed;       /* bytes/s, 0 = unlimited, while running */
} CopyProbe;

static void
copy_probe_free (CopyProbe *probe)
{
    g_free (probe->job_id);
    g_free (probe->disk_path);
    g_clear_error (&probe->error);
    g_free (probe);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CopyProbe, copy_probe_free)

/*
 * Where the copy @job_id of @target to @destination stands in @dom, whose
 * live definition has @disks. A copy job of the disk to another destination
 * is someone else's: ours is not running then.
 */
static CopyProbe *
probe_copy (virDomain *dom, GPtrArray *disks, const gchar *job_id, const gchar *target,
            const gchar *destination)
{
    VmrLibvirtDisk *disk = vmr_libvirt_xml_find_disk (disks, target);
    virDomainBlockJobInfo info = { 0 };
    CopyProbe *probe = g_new0 (CopyProbe, 1);
    int rc;

    probe->job_id = g_strdup (job_id);
    probe->disk_path = g_strdup (disk != NULL ? disk->path : NULL);
    /* a disk that is gone has no copy either */
    if (disk == NULL)
        return probe;
    rc = virDomainGetBlockJobInfo (dom, target, &info, VIR_DOMAIN_BLOCK_JOB_INFO_BANDWIDTH_BYTES);
    if (rc < 0)
        vmr_libvirt_set_error (&probe->error, "cannot read the block job of %s", target);
    probe->running = rc == 1 && info.type == VIR_DOMAIN_BLOCK_JOB_TYPE_COPY
                     && (disk->mirror_path == NULL || *disk->mirror_path == '\0'
                         || g_strcmp0 (disk->mirror_path, destination) == 0);
    if (rc == 1 && !probe->running)
        g_message ("%s: libvirt runs another block job (type %d) on %s", job_id, info.type, target);
    if (probe->running) {
        probe->ready = disk->mirror_ready;
        probe->total_bytes = info.end;
        probe->done_bytes = info.cur;
        probe->speed = info.bandwidth;
    }
    return probe;
}

/* ---- after libvirt came back ---- */

/* events may have been lost while libvirtd was away: ask where each copy is */
static void
resync_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autoptr (GPtrArray) results
        = g_ptr_array_new_with_free_func ((GDestroyNotify) copy_probe_free);
    g_autofree gchar *xml = NULL;
    g_autoptr (GPtrArray) disks = NULL;

    /* a domain that stopped meanwhile is the tracker's business */
    if (dom == NULL || (xml = virDomainGetXMLDesc (dom, 0)) == NULL
        || (disks = vmr_libvirt_xml_parse_disks (xml, NULL)) == NULL) {
        g_task_return_pointer (task, g_steal_pointer (&results),
                               (GDestroyNotify) g_ptr_array_unref);
        return;
    }
    for (guint i = 0; i < call->tracks->len; i++) {
        CopyTrack *track = g_ptr_array_index (call->tracks, i);

        g_ptr_array_add (results,
                         probe_copy (dom, disks, track->job_id, track->target, track->destination));
    }
    g_task_return_pointer (task, g_steal_pointer (&results), (GDestroyNotify) g_ptr_array_unref);
}

static void
resync_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (source);
    g_autoptr (GPtrArray) results = g_task_propagate_pointer (G_TASK (res), NULL);

    for (guint i = 0; results != NULL && i < results->len; i++) {
        CopyProbe *result = g_ptr_array_index (results, i);
        CopyTrack *track = g_hash_table_lookup (self->tracks, result->job_id);
        g_autofree gchar *reason = NULL;

        if (track == NULL || track->finishing)
            continue;
        if (result->error != NULL) {
            /* not knowing is no reason to end it: its events still come */
            g_message ("%s: %s", track->job_id, result->error->message);
            continue;
        }
        if (result->running) {
            if (result->ready && !track->ready) {
                track->ready = TRUE;
                vmr_backend_emit_job_ready (VMR_BACKEND (self), track->job_id);
            }
            continue;
        }
        if (g_strcmp0 (result->disk_path, track->destination) == 0) {
            finish_track (self, track, VMR_BACKEND_OUTCOME_COMPLETED, NULL);
            continue;
        }
        reason = g_strdup_printf ("the copy ended while libvirt was unreachable; %s stays on %s",
                                  track->target, track->source);
        finish_track (self, track, VMR_BACKEND_OUTCOME_FAILED, reason);
    }
}

static void
connected_cb (VmrLibvirtConnection *connection, gpointer user_data)
{
    VmrBackendLibvirt *self = user_data;
    Call *call;

    if (g_hash_table_size (self->tracks) == 0)
        return;
    call = call_new (self, NULL);
    call->tracks = started_tracks (self);
    run_call (self, call, resync_thread, NULL, resync_cb, NULL);
}

/* ---- a copy that an earlier run of the daemon started ---- */

/* TRUE when a disk of @dom, live or in its persistent definition, names @path */
static gboolean
path_in_use (virDomain *dom, GPtrArray *live_disks, const gchar *path)
{
    g_autofree gchar *inactive_xml = NULL;
    g_autoptr (GPtrArray) inactive_disks = NULL;
    GPtrArray *lists[2] = { live_disks, NULL };

    if (virDomainIsPersistent (dom) == 1) {
        inactive_xml = virDomainGetXMLDesc (dom, VIR_DOMAIN_XML_INACTIVE);
        /* a definition we cannot read may name it: keep the file then */
        if (inactive_xml == NULL
            || (inactive_disks = vmr_libvirt_xml_parse_disks (inactive_xml, NULL)) == NULL)
            return TRUE;
        lists[1] = inactive_disks;
    }
    for (guint l = 0; l < G_N_ELEMENTS (lists) && lists[l] != NULL; l++) {
        for (guint i = 0; i < lists[l]->len; i++) {
            VmrLibvirtDisk *disk = g_ptr_array_index (lists[l], i);

            if (g_strcmp0 (disk->path, path) == 0 || g_strcmp0 (disk->mirror_path, path) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

static void
adopt_copy_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree VmrBackendAdoption *adoption = g_new0 (VmrBackendAdoption, 1);
    g_autofree gchar *xml = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (CopyProbe) probe = NULL;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    xml = virDomainGetXMLDesc (dom, 0);
    if (xml == NULL) {
        vmr_libvirt_set_error (&error, "cannot read the definition of %s", virDomainGetName (dom));
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    disks = vmr_libvirt_xml_parse_disks (xml, &error);
    if (disks == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    probe = probe_copy (dom, disks, call->job_id, call->target, call->destination);
    if (probe->error != NULL) {
        g_task_return_error (task, g_steal_pointer (&probe->error));
        return;
    }
    if (probe->running) {
        adoption->outcome = VMR_BACKEND_ADOPT_RUNNING;
        adoption->ready = probe->ready;
        adoption->speed = probe->speed;
        adoption->total_bytes = probe->total_bytes;
        adoption->done_bytes = probe->done_bytes;
        if (call->query_paused) {
            g_autoptr (GError) qemu_error = NULL;
            g_autoptr (JsonObject) qemu_job
                = vmr_libvirt_domain_query_copy_job (dom, call->target, &qemu_error);

            if (qemu_job != NULL)
                adoption->paused
                    = json_object_get_boolean_member_with_default (qemu_job, "paused", FALSE);
            else
                g_message ("%s: cannot tell whether the copy is paused: %s", call->job_id,
                           qemu_error->message);
        }
        g_debug (
            "%s: libvirt still copies %s to %s (%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT ", %s%s)",
            call->job_id, call->target, call->destination, probe->done_bytes, probe->total_bytes,
            probe->ready ? "ready" : "not ready", adoption->paused ? ", paused" : "");
    } else if (g_strcmp0 (probe->disk_path, call->destination) == 0) {
        adoption->outcome = VMR_BACKEND_ADOPT_ON_DESTINATION;
        /* as after a pivot we saw: the definition must not send it back at the next boot */
        vmr_libvirt_domain_persist_disk (dom, call->job_id, call->target, call->source,
                                         call->destination, call->block, call->format);
    } else {
        adoption->outcome = VMR_BACKEND_ADOPT_GONE;
        if (g_strcmp0 (probe->disk_path, call->source) != 0)
            g_message ("%s: %s of %s runs on %s, neither source nor destination", call->job_id,
                       call->target, virDomainGetName (dom),
                       probe->disk_path != NULL ? probe->disk_path : "nothing");
        if (call->created && !path_in_use (dom, disks, call->destination))
            vmr_destination_remove (call->destination);
    }
    g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
}

typedef struct {
    VmrBackendLibvirt *self; /* owned */
    gchar *job_id;
    gint status; /* VIR_DOMAIN_BLOCK_JOB_* */
} AdoptedEnd;

static void
adopted_end_free (AdoptedEnd *end)
{
    g_object_unref (end->self);
    g_free (end->job_id);
    g_free (end);
}

/* the end event that came during the adoption, handled once the engine has its answer */
static gboolean
adopted_end_cb (gpointer user_data)
{
    AdoptedEnd *end = user_data;
    CopyTrack *track = g_hash_table_lookup (end->self->tracks, end->job_id);

    if (track != NULL && !track->finishing)
        track_block_job_event (end->self, track, end->status);
    return G_SOURCE_REMOVE;
}

static void
adopt_copy_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendLibvirt *self = g_task_get_source_object (task);
    const gchar *job_id = g_task_get_task_data (task);
    CopyTrack *track = g_hash_table_lookup (self->tracks, job_id);
    g_autoptr (GError) error = NULL;
    g_autofree VmrBackendAdoption *adoption = g_task_propagate_pointer (G_TASK (res), &error);
    AdoptedEnd *end;

    if (adoption == NULL || adoption->outcome != VMR_BACKEND_ADOPT_RUNNING || track == NULL) {
        g_hash_table_remove (self->tracks, job_id);
        if (adoption == NULL)
            g_task_return_error (task, g_steal_pointer (&error));
        else
            g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
        return;
    }
    track->adopting = FALSE;
    track->started = TRUE;
    track->ready = track->ready || adoption->ready;
    adoption->ready = track->ready;
    if (track->adopt_event < 0) {
        g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
        return;
    }
    /* it ended after the thread looked: the usual path ends it, once the engine knows */
    adoption->outcome = VMR_BACKEND_ADOPT_ENDING;
    end = g_new0 (AdoptedEnd, 1);
    end->self = g_object_ref (self);
    end->job_id = g_strdup (job_id);
    end->status = track->adopt_event;
    g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
    g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, adopted_end_cb, end,
                     (GDestroyNotify) adopted_end_free);
}

static void
vmr_backend_libvirt_adopt_copy_async (VmrBackend *backend, VmrJob *job, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    CopyTrack *track;
    Call *call;

    g_task_set_source_tag (task, vmr_backend_libvirt_adopt_copy_async);
    if (g_hash_table_contains (self->tracks, job->id)
        || track_for_target (self, job->disk) != NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_BUSY,
                                 "job %s or another copy of %s is followed already", job->id,
                                 job->disk);
        g_object_unref (task);
        return;
    }
    track = g_new0 (CopyTrack, 1);
    track->job_id = g_strdup (job->id);
    track->target = g_strdup (job->disk);
    track->source = g_strdup (job->source);
    track->destination = g_strdup (job->destination);
    track->format = g_strdup (job->format != NULL ? job->format : "raw");
    track->block = vmr_destination_is_block_device (job->destination);
    track->created = job->created_destination;
    track->adopting = TRUE;
    track->adopt_event = -1;
    g_task_set_task_data (task, g_strdup (job->id), g_free);
    call = call_new (self, track);
    /* QMP passthrough taints the domain: ask only when our record says paused */
    call->query_paused = job->state == VMR_JOB_STATE_PAUSED || job->user_paused;
    /* events that come while the thread looks wait in the track */
    g_hash_table_insert (self->tracks, g_strdup (job->id), track);
    run_call (self, call, adopt_copy_thread, cancellable, adopt_copy_cb, task);
}

static VmrBackendAdoption *
vmr_backend_libvirt_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- object ---- */

static const gchar *
vmr_backend_libvirt_get_kind (VmrBackend *backend)
{
    return "libvirt";
}

static JsonObject *
vmr_backend_libvirt_describe (VmrBackend *backend)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "uri", vmr_libvirt_connection_get_uri (self->connection));
    json_object_set_string_member (obj, "uuid", self->uuid);
    return obj;
}

static void
vmr_backend_libvirt_close (VmrBackend *backend)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    /* copies keep running in libvirt; nothing of ours is told about them */
    g_clear_signal_handler (&self->block_job_handler, self->connection);
    g_clear_signal_handler (&self->connected_handler, self->connection);
}

const gchar *
vmr_backend_libvirt_get_uuid (VmrBackendLibvirt *self)
{
    return self->uuid;
}

VmrBackend *
vmr_backend_libvirt_new (VmrLibvirtConnection *connection, const gchar *name, const gchar *uuid)
{
    VmrBackendLibvirt *self = g_object_new (VMR_TYPE_BACKEND_LIBVIRT, NULL);

    self->connection = g_object_ref (connection);
    self->name = g_strdup (name);
    self->uuid = g_strdup (uuid);
    self->block_job_handler
        = g_signal_connect (connection, "block-job", G_CALLBACK (block_job_cb), self);
    self->connected_handler
        = g_signal_connect (connection, "connected", G_CALLBACK (connected_cb), self);
    return VMR_BACKEND (self);
}

static void
vmr_backend_libvirt_finalize (GObject *object)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (object);

    vmr_backend_libvirt_close (VMR_BACKEND (self));
    g_object_unref (self->connection);
    g_hash_table_unref (self->tracks);
    g_free (self->name);
    g_free (self->uuid);
    G_OBJECT_CLASS (vmr_backend_libvirt_parent_class)->finalize (object);
}

static void
vmr_backend_libvirt_init (VmrBackendLibvirt *self)
{
    self->tracks
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) copy_track_free);
}

static void
vmr_backend_libvirt_class_init (VmrBackendLibvirtClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);
    VmrBackendClass *backend_class = VMR_BACKEND_CLASS (klass);

    object_class->finalize = vmr_backend_libvirt_finalize;
    backend_class->get_kind = vmr_backend_libvirt_get_kind;
    backend_class->describe = vmr_backend_libvirt_describe;
    backend_class->query_disks_async = vmr_backend_libvirt_query_disks_async;
    backend_class->query_disks_finish = propagate_pointer;
    backend_class->start_copy_async = vmr_backend_libvirt_start_copy_async;
    backend_class->start_copy_finish = propagate_boolean;
    backend_class->job_command_async = vmr_backend_libvirt_job_command_async;
    backend_class->job_command_finish = propagate_boolean;
    backend_class->query_progress_async = vmr_backend_libvirt_query_progress_async;
    backend_class->query_progress_finish = propagate_pointer;
    backend_class->query_load_async = vmr_backend_libvirt_query_load_async;
    backend_class->query_load_finish = vmr_backend_libvirt_query_load_finish;
    backend_class->adopt_copy_async = vmr_backend_libvirt_adopt_copy_async;
    backend_class->adopt_copy_finish = vmr_backend_libvirt_adopt_copy_finish;
    backend_class->close = vmr_backend_libvirt_close;
}
