#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The libvirt backend's main-loop side: the VmrBackendLibvirt object and
 * its VmrBackend vfuncs, the copies it tracks, libvirt's block job events
 * on them and the end of each copy. Every call into libvirt is handed to a
 * GTask thread (backend-libvirt-calls.c) with copies of what it needs; the
 * callbacks here take its answer back to the tracks.
 */

#include "backend-libvirt.h"

#include "backend-libvirt-private.h"

#include "destination.h"
#include "libvirt-verify.h"
#include "vmr-error.h"

struct _VmrBackendLibvirt {
    VmrBackend parent_instance;

    VmrLibvirtConnection *connection;
    gchar *name;
    gchar *uuid;
    GHashTable *tracks; /* job id -> CopyTrack *, owned */
    gulong block_job_handler;
    gulong connected_handler;
    VmrVerifier *verifier; /* the verifications, one at a time: QEMU has one NBD server */
};

G_DEFINE_TYPE (VmrBackendLibvirt, vmr_backend_libvirt, VMR_TYPE_BACKEND)

static void
copy_track_free (CopyTrack *track)
{
    g_free (track->job_id);
    g_free (track->target);
    g_free (track->source);
    g_clear_pointer (&track->destination, vmr_destination_unref);
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

static void
call_free (Call *call)
{
    g_object_unref (call->connection);
    g_free (call->uuid);
    g_free (call->job_id);
    g_free (call->target);
    g_free (call->source);
    g_clear_pointer (&call->destination, vmr_destination_unref);
    g_clear_pointer (&call->handle, vmr_destination_handle_unref);
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
        call->destination = vmr_destination_ref (track->destination);
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
        copy->destination = vmr_destination_ref (track->destination);
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
vmr_backend_libvirt_query_disks_async (VmrBackend *backend, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    run_call (self, call_new (self, NULL), vmr_backend_libvirt_query_disks_thread, cancellable,
              callback, user_data);
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
        run_call (self, call_new (self, track), vmr_backend_libvirt_persist_thread, NULL,
                  persist_done_cb, g_steal_pointer (&job_id));
        return;
    }
    /* the domain stays on its source; the engine removes a file it made for the copy */
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
    /* the end of a copy whose start is not answered yet: start_copy_cb() decides */
    if (!track->started && status != VIR_DOMAIN_BLOCK_JOB_READY) {
        track->adopt_event = status;
        return;
    }
    track_block_job_event (self, track, status);
}

/* ---- starting a copy ---- */

static void schedule_end (VmrBackendLibvirt *self, CopyTrack *track);

static void
start_copy_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendLibvirt *self = g_task_get_source_object (task);
    const gchar *job_id = g_task_get_task_data (task);
    CopyTrack *track = g_hash_table_lookup (self->tracks, job_id);
    g_autoptr (GError) error = NULL;

    if (!g_task_propagate_boolean (G_TASK (res), &error)) {
        /* an end event of the copy it aborted goes with it */
        g_hash_table_remove (self->tracks, job_id);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (track != NULL) {
        track->started = TRUE;
        if (track->adopt_event >= 0)
            schedule_end (self, track);
    }
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
    track->destination = vmr_destination_ref (job->dest);
    track->adopt_event = -1;
    g_task_set_task_data (task, g_strdup (job->id), g_free);
    call = call_new (self, track);
    call->speed = job->speed;
    call->granularity = job->granularity;
    call->buf_size = job->buf_size;
    if (job->dest_handle != NULL)
        call->handle = vmr_destination_handle_ref (job->dest_handle);
    /* events may come before the call returns */
    g_hash_table_insert (self->tracks, g_strdup (job->id), track);
    run_call (self, call, vmr_backend_libvirt_start_copy_thread, cancellable, start_copy_cb, task);
}

/* ---- commands on a running copy ---- */

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
    call->mark_pivot = command == VMR_BACKEND_COMMAND_PIVOT && job->verify;
    call->speed = speed;
    /* a copy under a storage's budget keeps its limit through the pivot */
    call->old_speed = job->under_budget ? 0 : job->speed;
    run_call (self, call, vmr_backend_libvirt_job_command_thread, cancellable, job_command_cb,
              task);
}

/* ---- progress ---- */

static void
vmr_backend_libvirt_query_progress_async (VmrBackend *backend, GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);
    Call *call = call_new (self, NULL);

    call->tracks = started_tracks (self);
    run_call (self, call, vmr_backend_libvirt_query_progress_thread, cancellable, callback,
              user_data);
}

/* ---- guest load ---- */

static void
vmr_backend_libvirt_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    run_call (self, call_new (self, NULL), vmr_backend_libvirt_query_load_thread, cancellable,
              callback, user_data);
}

static GHashTable *
vmr_backend_libvirt_query_load_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- after libvirt came back ---- */

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
        if (vmr_destination_same_target (track->destination, result->disk_path)) {
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
    run_call (self, call, vmr_backend_libvirt_resync_thread, NULL, resync_cb, NULL);
}

/* ---- a copy that an earlier run of the daemon started ---- */

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

/* the end event that came before the start or the adoption was answered, from the main loop */
static void
schedule_end (VmrBackendLibvirt *self, CopyTrack *track)
{
    AdoptedEnd *end = g_new0 (AdoptedEnd, 1);

    end->self = g_object_ref (self);
    end->job_id = g_strdup (track->job_id);
    end->status = track->adopt_event;
    track->adopt_event = -1;
    g_idle_add_full (G_PRIORITY_DEFAULT_IDLE, adopted_end_cb, end,
                     (GDestroyNotify) adopted_end_free);
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
    g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
    schedule_end (self, track);
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
    track->destination = vmr_destination_ref (job->dest);
    track->adopting = TRUE;
    track->adopt_event = -1;
    g_task_set_task_data (task, g_strdup (job->id), g_free);
    call = call_new (self, track);
    /* QMP passthrough taints the domain: ask only when our record says paused */
    call->query_paused = job->state == VMR_JOB_STATE_PAUSED || job->user_paused;
    /* events that come while the thread looks wait in the track */
    g_hash_table_insert (self->tracks, g_strdup (job->id), track);
    run_call (self, call, vmr_backend_libvirt_adopt_copy_thread, cancellable, adopt_copy_cb, task);
}

static VmrBackendAdoption *
vmr_backend_libvirt_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- verifying a copy after its pivot, one at a time ---- */

static void
vmr_backend_libvirt_verify_copy_async (VmrBackend *backend, VmrJob *job,
                                       VmrVerification *verification, const gchar *work_dir,
                                       GCancellable *cancellable, GAsyncReadyCallback callback,
                                       gpointer user_data)
{
    VmrBackendLibvirt *self = VMR_BACKEND_LIBVIRT (backend);

    vmr_libvirt_verify_async (self->verifier, self, self->connection, self->uuid, job, verification,
                              work_dir, cancellable, callback, user_data);
}

/* ---- object ---- */

static gboolean
vmr_backend_libvirt_follows_domain (VmrBackend *backend)
{
    return TRUE;
}

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
    /* a verification holds the object: none is waiting or running now */
    vmr_verifier_free (self->verifier);
    g_free (self->name);
    g_free (self->uuid);
    G_OBJECT_CLASS (vmr_backend_libvirt_parent_class)->finalize (object);
}

static void
vmr_backend_libvirt_init (VmrBackendLibvirt *self)
{
    self->tracks
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) copy_track_free);
    self->verifier = vmr_verifier_new ();
}

static void
vmr_backend_libvirt_class_init (VmrBackendLibvirtClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);
    VmrBackendClass *backend_class = VMR_BACKEND_CLASS (klass);

    object_class->finalize = vmr_backend_libvirt_finalize;
    backend_class->get_kind = vmr_backend_libvirt_get_kind;
    backend_class->follows_domain = vmr_backend_libvirt_follows_domain;
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
    backend_class->verify_copy_async = vmr_backend_libvirt_verify_copy_async;
    backend_class->verify_copy_finish = propagate_boolean;
    backend_class->close = vmr_backend_libvirt_close;
}
