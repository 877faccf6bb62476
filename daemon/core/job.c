#define G_LOG_DOMAIN "vmr-daemon"

#include "job.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "vmr-error.h"
#include "vmr-json.h"

static const gchar *const state_names[] = {
    [VMR_JOB_STATE_QUEUED] = "queued",     [VMR_JOB_STATE_DELAYED] = "delayed",
    [VMR_JOB_STATE_COPYING] = "copying",   [VMR_JOB_STATE_THROTTLED] = "throttled",
    [VMR_JOB_STATE_PAUSED] = "paused",     [VMR_JOB_STATE_SYNCED] = "synced",
    [VMR_JOB_STATE_PIVOTING] = "pivoting", [VMR_JOB_STATE_COMPLETED] = "completed",
    [VMR_JOB_STATE_FAILED] = "failed",     [VMR_JOB_STATE_CANCELLED] = "cancelled",
};

/*
 * allowed[from] is the set of states a job may move to. The policy moves a
 * job between queued, delayed, copying, throttled and paused. A paused job
 * resumes to copying or throttled or, if QEMU became ready meanwhile, to
 * synced; QEMU's READY never goes back, so synced never returns to copying; a
 * pivot that QEMU refuses leaves the job synced. Every state before
 * completed may fail or be cancelled; the source stays authoritative until
 * the pivot.
 */
#define S(x) (1u << VMR_JOB_STATE_##x)
#define ENDS (S (FAILED) | S (CANCELLED))
static const guint allowed[VMR_JOB_STATE_LAST] = {
    [VMR_JOB_STATE_QUEUED] = S (DELAYED) | S (COPYING) | S (THROTTLED) | ENDS,
    [VMR_JOB_STATE_DELAYED] = S (COPYING) | S (THROTTLED) | ENDS,
    [VMR_JOB_STATE_COPYING] = S (THROTTLED) | S (PAUSED) | S (SYNCED) | ENDS,
    [VMR_JOB_STATE_THROTTLED] = S (COPYING) | S (PAUSED) | S (SYNCED) | ENDS,
    [VMR_JOB_STATE_PAUSED] = S (COPYING) | S (THROTTLED) | S (SYNCED) | ENDS,
    [VMR_JOB_STATE_SYNCED] = S (PAUSED) | S (PIVOTING) | ENDS,
    [VMR_JOB_STATE_PIVOTING] = S (SYNCED) | S (COMPLETED) | ENDS,
    [VMR_JOB_STATE_COMPLETED] = 0,
    [VMR_JOB_STATE_FAILED] = 0,
    [VMR_JOB_STATE_CANCELLED] = 0,
};
#undef ENDS
#undef S

const gchar *
vmr_job_state_to_string (VmrJobState state)
{
    if (state >= VMR_JOB_STATE_LAST)
        return "unknown";
    return state_names[state];
}

VmrJobState
vmr_job_state_from_string (const gchar *name)
{
    for (guint i = 0; i < VMR_JOB_STATE_LAST; i++) {
        if (g_strcmp0 (state_names[i], name) == 0)
            return (VmrJobState) i;
    }
    return VMR_JOB_STATE_LAST;
}

gboolean
vmr_job_state_is_final (VmrJobState state)
{
    return state == VMR_JOB_STATE_COMPLETED || state == VMR_JOB_STATE_FAILED
           || state == VMR_JOB_STATE_CANCELLED;
}

gboolean
vmr_job_state_can_transition (VmrJobState from, VmrJobState to)
{
    if (from >= VMR_JOB_STATE_LAST || to >= VMR_JOB_STATE_LAST)
        return FALSE;
    return (allowed[from] & (1u << to)) != 0;
}

VmrJob *
vmr_job_new (const gchar *id, const gchar *domain, const gchar *disk, gint64 now_us)
{
    VmrJob *self = g_new0 (VmrJob, 1);
    VmrJobTransition first = { VMR_JOB_STATE_QUEUED, now_us };

    self->ref_count = 1;
    self->id = g_strdup (id);
    self->domain = g_strdup (domain);
    self->disk = g_strdup (disk);
    self->state = VMR_JOB_STATE_QUEUED;
    self->created_us = now_us;
    self->updated_us = now_us;
    self->history = g_array_new (FALSE, FALSE, sizeof (VmrJobTransition));
    g_array_append_val (self->history, first);
    self->series = vmr_job_series_new (VMR_JOB_SERIES_MAX_POINTS);
    return self;
}

VmrJob *
vmr_job_ref (VmrJob *self)
{
    g_atomic_int_inc (&self->ref_count);
    return self;
}

void
vmr_job_unref (VmrJob *self)
{
    if (!g_atomic_int_dec_and_test (&self->ref_count))
        return;
    g_free (self->id);
    g_free (self->domain);
    g_free (self->disk);
    g_free (self->source);
    g_free (self->source_format);
    g_free (self->source_node);
    g_free (self->source_file_node);
    g_clear_pointer (&self->dest, vmr_destination_unref);
    g_free (self->dest_made);
    g_clear_pointer (&self->dest_handle, vmr_destination_handle_unref);
    g_free (self->nbd);
    g_free (self->reason);
    g_free (self->decision);
    g_free (self->decision_reason);
    g_free (self->pending_failure);
    g_free (self->waiting_for);
    g_clear_pointer (&self->adaptive, vmr_job_adaptive_free);
    g_free (self->group);
    g_free (self->group_cancel_reason);
    g_free (self->convergence_reason);
    g_free (self->space_paused);
    g_free (self->cluster_paused);
    g_clear_pointer (&self->backlog, g_array_unref);
    g_clear_pointer (&self->verification, vmr_verification_free);
    g_array_unref (self->history);
    g_clear_pointer (&self->len_points, g_array_unref);
    vmr_job_series_free (self->series);
    g_free (self);
}

void
vmr_job_adaptive_free (VmrJobAdaptive *self)
{
    g_free (self->reason);
    g_array_unref (self->speeds);
    g_clear_pointer (&self->neighbours, g_hash_table_unref);
    g_free (self);
}

gboolean
vmr_job_converges_at_full_speed (VmrJob *self)
{
    return g_strcmp0 (self->converged_by, "speed") == 0 && !self->convergence_failed;
}

gboolean
vmr_job_set_state (VmrJob *self, VmrJobState state, const gchar *reason, gint64 now_us)
{
    VmrJobTransition transition = { state, now_us };

    if (!vmr_job_state_can_transition (self->state, state))
        return FALSE;
    self->state = state;
    /* a reason stays with a job that ended; other reasons are only logged */
    if (reason != NULL && vmr_job_state_is_final (state)) {
        g_free (self->reason);
        self->reason = g_strdup (reason);
    }
    self->updated_us = now_us;
    g_array_append_val (self->history, transition);
    return TRUE;
}

/*
 * more points than this are kept only to span VMR_JOB_DIRTY_SPAN_US: while
 * QEMU updates len at every reading, the rate is read over the last few
 * seconds, and follows a rate that grows (the first pass of a copy makes
 * more and more of the disk dirty again)
 */
#define VMR_JOB_DIRTY_POINTS  8
#define VMR_JOB_DIRTY_SPAN_US (3 * G_USEC_PER_SEC)

/*
 * QEMU's mirror counts a guest write into what it already copied by
 * raising len: len's growth is the rate at which the guest dirties the
 * disk. QEMU updates len between its rounds of copying, seconds apart when
 * a cap spaces them out, so the rate is read between the readings at which
 * len grew, over the last VMR_JOB_DIRTY_WINDOW_US (at least the last two,
 * fewer when more span VMR_JOB_DIRTY_SPAN_US). A len of 0 is a mirror still
 * counting what it has to copy, and one that went down a new count:
 * neither is a guest's writes.
 */
static void
note_len (VmrJob *self, guint64 total_bytes, gint64 mono_us)
{
    VmrLenPoint point = { mono_us, total_bytes };
    const VmrLenPoint *points;
    guint n, drop = 0;

    if (self->len_points == NULL)
        self->len_points = g_array_new (FALSE, FALSE, sizeof (VmrLenPoint));
    if (total_bytes == 0 || total_bytes < self->total_bytes) {
        g_array_set_size (self->len_points, 0);
        self->dirty_rate = 0;
        return;
    }
    points = (const VmrLenPoint *) self->len_points->data;
    n = self->len_points->len;
    if (n == 0 || total_bytes > points[n - 1].len)
        g_array_append_val (self->len_points, point);
    points = (const VmrLenPoint *) self->len_points->data;
    n = self->len_points->len;
    while (n - drop > 2
           && (points[drop + 1].time_us <= mono_us - VMR_JOB_DIRTY_WINDOW_US
               || (n - drop > VMR_JOB_DIRTY_POINTS
                   && points[drop + 1].time_us <= points[n - 1].time_us - VMR_JOB_DIRTY_SPAN_US)))
        drop++;
    g_array_remove_range (self->len_points, 0, drop);
    points = (const VmrLenPoint *) self->len_points->data;
    n = self->len_points->len;
    /* len that has not grown for three windows: the guest no longer dirties the disk */
    if (n > 0 && mono_us - points[n - 1].time_us > 3 * VMR_JOB_DIRTY_WINDOW_US)
        self->dirty_rate = 0;
    else if (n >= 2 && points[n - 1].time_us - points[0].time_us >= G_USEC_PER_SEC)
        self->dirty_rate = (gdouble) (points[n - 1].len - points[0].len) * G_USEC_PER_SEC
                           / (gdouble) (points[n - 1].time_us - points[0].time_us);
}

void
vmr_job_set_dest_made (VmrJob *self, const VmrDestinationMade *made)
{
    g_return_if_fail (self != NULL);
    g_clear_pointer (&self->dest_made, g_free);
    if (made != NULL)
        self->dest_made = g_memdup2 (made, sizeof *made);
}

void
vmr_job_set_dest_handle (VmrJob *self, VmrDestinationHandle *handle)
{
    g_return_if_fail (self != NULL);
    if (handle != NULL)
        vmr_destination_handle_ref (handle);
    g_clear_pointer (&self->dest_handle, vmr_destination_handle_unref);
    self->dest_handle = handle;
}

void
vmr_job_update_progress (VmrJob *self, guint64 total_bytes, guint64 done_bytes, gint64 mono_us)
{
    g_return_if_fail (self != NULL);
    /* a len of 0 is a mirror still counting what it has to copy: the size known before stays,
     * or a copy that reaches sync before the next reading would end with a total of 0 */
    if (total_bytes == 0 && self->total_bytes != 0) {
        note_len (self, total_bytes, mono_us);
        return;
    }
    if (self->progress_time_us != 0 && mono_us > self->progress_time_us
        && done_bytes >= self->done_bytes) {
        gdouble seconds = (gdouble) (mono_us - self->progress_time_us) / G_USEC_PER_SEC;
        gdouble sample = (gdouble) (done_bytes - self->done_bytes) / seconds;

        /* smooth over a few samples so that the ETA does not jump about */
        self->rate = self->rate == 0 ? sample : 0.5 * self->rate + 0.5 * sample;
    }
    note_len (self, total_bytes, mono_us);
    self->total_bytes = total_bytes;
    self->done_bytes = done_bytes;
    self->progress_time_us = mono_us;
}

static void
set_nullable_string (JsonObject *obj, const gchar *name, const gchar *value)
{
    if (value != NULL)
        json_object_set_string_member (obj, name, value);
    else
        json_object_set_null_member (obj, name);
}

/* the "convergence" member: what was done about a copy that did not converge */
static void
set_convergence (JsonObject *obj, VmrJob *self)
{
    JsonObject *convergence;

    if (self->converged_by == NULL) {
        json_object_set_null_member (obj, "convergence");
        return;
    }
    convergence = json_object_new ();
    json_object_set_string_member (convergence, "state",
                                   self->convergence_failed ? "refused"
                                   : self->ready            ? "converged"
                                                            : "converging");
    json_object_set_string_member (convergence, "by", self->converged_by);
    json_object_set_int_member (convergence, "since", self->converged_us);
    set_nullable_string (convergence, "reason", self->convergence_reason);
    json_object_set_object_member (obj, "convergence", convergence);
}

/* a job of a record goes on as it was made to converge */
static void
read_convergence (VmrJob *self, JsonObject *convergence)
{
    const gchar *by = vmr_json_get_string (convergence, "by");

    if (g_strcmp0 (by, "speed") == 0)
        self->converged_by = "speed";
    else if (g_strcmp0 (by, "write-blocking") == 0)
        self->converged_by = "write-blocking";
    else
        return;
    self->converged_us = vmr_json_int_or (convergence, "since", 0);
    self->convergence_reason = g_strdup (vmr_json_get_string (convergence, "reason"));
    self->convergence_failed
        = g_strcmp0 (vmr_json_get_string (convergence, "state"), "refused") == 0;
}

/* the "space" member: what the copy writes into its file system, and a pause for space */
static void
set_space (JsonObject *obj, VmrJob *self)
{
    JsonObject *space = json_object_new ();

    json_object_set_int_member (space, "need", (gint64) self->space_need);
    set_nullable_string (space, "paused", self->space_paused);
    json_object_set_object_member (obj, "space", space);
}

static void
read_space (VmrJob *self, JsonObject *space)
{
    self->space_need = vmr_json_uint_or (space, "need", 0);
    self->space_paused = g_strdup (vmr_json_get_string (space, "paused"));
}

/* an NBD destination's options and what its preflight found */
static void
set_nbd (JsonObject *obj, VmrJob *self)
{
    JsonObject *nbd
        = self->nbd != NULL ? vmr_destination_facts_to_json (self->nbd) : json_object_new ();

    set_nullable_string (nbd, "tls-creds", self->dest->tls_creds);
    json_object_set_int_member (nbd, "reconnect-delay", self->dest->reconnect_delay_s);
    json_object_set_object_member (obj, "nbd", nbd);
}

JsonObject *
vmr_job_to_json (VmrJob *self)
{
    JsonObject *obj = json_object_new ();
    JsonObject *progress = json_object_new ();
    JsonArray *history = json_array_new ();
    guint64 backlog
        = self->total_bytes > self->done_bytes ? self->total_bytes - self->done_bytes : 0;

    json_object_set_string_member (obj, "id", self->id);
    json_object_set_string_member (obj, "domain", self->domain);
    json_object_set_string_member (obj, "disk", self->disk);
    set_nullable_string (obj, "source", self->source);
    set_nullable_string (obj, "source-format", self->source_format);
    set_nullable_string (obj, "source-node", self->source_node);
    set_nullable_string (obj, "source-file-node", self->source_file_node);
    set_nullable_string (obj, "destination", self->dest != NULL ? self->dest->location : NULL);
    json_object_set_string_member (obj, "format", self->dest != NULL ? self->dest->format : "raw");
    json_object_set_boolean_member (obj, "created-destination",
                                    self->dest != NULL && self->dest->created);
    if (self->dest != NULL && self->dest->kind == VMR_DESTINATION_NBD)
        set_nbd (obj, self);
    json_object_set_string_member (obj, "state", vmr_job_state_to_string (self->state));
    set_nullable_string (obj, "reason", self->reason);
    set_nullable_string (obj, "waiting-for", self->waiting_for);
    json_object_set_int_member (obj, "speed", (gint64) self->speed);
    json_object_set_boolean_member (obj, "manual-pivot", self->manual_pivot);
    if (self->group != NULL)
        json_object_set_string_member (obj, "group", self->group);
    if (self->orphaned)
        json_object_set_boolean_member (obj, "orphaned", TRUE);
    json_object_set_string_member (obj, "copy-mode",
                                   self->write_blocking ? "write-blocking" : "background");
    set_convergence (obj, self);
    set_space (obj, self);
    json_object_set_boolean_member (obj, "verify", self->verify);
    if (self->granularity > 0)
        json_object_set_int_member (obj, "granularity", (gint64) self->granularity);
    if (self->buf_size > 0)
        json_object_set_int_member (obj, "buf-size", (gint64) self->buf_size);
    if (self->verification != NULL)
        json_object_set_object_member (obj, "verification",
                                       vmr_verification_to_json (self->verification));
    else
        json_object_set_null_member (obj, "verification");

    json_object_set_int_member (progress, "total", (gint64) self->total_bytes);
    json_object_set_int_member (progress, "done", (gint64) self->done_bytes);
    json_object_set_int_member (progress, "backlog", (gint64) backlog);
    json_object_set_int_member (progress, "rate", (gint64) self->rate);
    json_object_set_int_member (progress, "dirty-rate", (gint64) self->dirty_rate);
    if (self->rate > 0 && !vmr_job_state_is_final (self->state))
        json_object_set_double_member (progress, "eta", (gdouble) backlog / self->rate);
    else
        json_object_set_null_member (progress, "eta");
    json_object_set_object_member (obj, "progress", progress);

    json_object_set_int_member (obj, "created", self->created_us);
    json_object_set_int_member (obj, "updated", self->updated_us);
    for (guint i = 0; i < self->history->len; i++) {
        VmrJobTransition *t = &g_array_index (self->history, VmrJobTransition, i);
        JsonObject *entry = json_object_new ();

        json_object_set_string_member (entry, "state", vmr_job_state_to_string (t->state));
        json_object_set_int_member (entry, "time", t->time_us);
        json_array_add_object_element (history, entry);
    }
    json_object_set_array_member (obj, "history", history);
    return obj;
}

gboolean
vmr_job_save (VmrJob *self, const gchar *state_dir, GError **error)
{
    g_autofree gchar *dir = g_build_filename (state_dir, "jobs", NULL);
    g_autofree gchar *basename = g_strconcat (self->id, ".json", NULL);
    g_autofree gchar *path = g_build_filename (dir, basename, NULL);
    g_autoptr (JsonObject) obj = vmr_job_to_json (self);
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);
    JsonObject *resume = json_object_new ();
    g_autofree gchar *text = NULL;
    g_autoptr (GError) local_error = NULL;

    /* what a restarted daemon needs beyond the job object */
    json_object_set_int_member (resume, "base-speed", (gint64) self->base_speed);
    json_object_set_boolean_member (resume, "speed-from-user", self->speed_from_user);
    json_object_set_boolean_member (resume, "user-paused", self->user_paused);
    json_object_set_boolean_member (resume, "ready", self->ready);
    /* a copy paused for the cluster waits for a slot again after a restart */
    if (self->cluster_paused != NULL) {
        json_object_set_string_member (resume, "cluster-paused", self->cluster_paused);
        json_object_set_boolean_member (resume, "cluster-resume", self->cluster_resume);
    }
    /* what proves a file ours: removal compares it, a record without it removes nothing */
    if (self->dest_made != NULL)
        json_object_set_object_member (resume, "destination-made",
                                       vmr_destination_made_to_json (self->dest_made));
    json_object_set_object_member (obj, "resume", resume);
    /* the timeline, for the report; not part of the job object, which stays small */
    json_object_set_object_member (obj, "series", vmr_job_series_to_json (self->series));

    if (g_mkdir_with_parents (dir, 0700) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", dir,
                     g_strerror (errno));
        return FALSE;
    }
    json_node_set_object (node, obj);
    text = json_to_string (node, TRUE);
    /* g_file_set_contents writes a temporary file and renames it over */
    if (!g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                   &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot save job %s: %s", self->id,
                     local_error->message);
        return FALSE;
    }
    return TRUE;
}

/* "vmr-N", as the job table names jobs: the records are sorted by N */
static gboolean
is_job_id (const gchar *id)
{
    const gchar *number = id != NULL && g_str_has_prefix (id, "vmr-") ? id + 4 : NULL;

    if (number == NULL || *number == '\0')
        return FALSE;
    for (const gchar *c = number; *c != '\0'; c++)
        if (!g_ascii_isdigit (*c))
            return FALSE;
    return TRUE;
}

/* the job of one record, or NULL with @error */
static VmrJob *
job_from_record (JsonObject *obj, GError **error)
{
    const gchar *id = vmr_json_get_string (obj, "id");
    const gchar *domain = vmr_json_get_string (obj, "domain");
    const gchar *disk = vmr_json_get_string (obj, "disk");
    const gchar *state = vmr_json_get_string (obj, "state");
    JsonObject *progress = vmr_json_get_object (obj, "progress");
    JsonObject *resume = vmr_json_get_object (obj, "resume");
    JsonArray *history = vmr_json_get_array (obj, "history");
    JsonObject *nbd = vmr_json_get_object (obj, "nbd");
    VmrDestinationNbdOptions nbd_options = {
        .tls_creds = vmr_json_get_string (nbd, "tls-creds"),
        .reconnect_delay_s = (guint) vmr_json_uint_or (nbd, "reconnect-delay", 0),
    };
    g_autoptr (VmrJob) job = NULL;
    guint64 export_size = 0;

    if (!is_job_id (id) || domain == NULL || disk == NULL || state == NULL
        || vmr_json_get_string (obj, "destination") == NULL
        || vmr_job_state_from_string (state) == VMR_JOB_STATE_LAST) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "not a job record (id, domain, disk, destination or state missing)");
        return NULL;
    }
    job = vmr_job_new (id, domain, disk, vmr_json_int_or (obj, "created", 0));
    job->source = g_strdup (vmr_json_get_string (obj, "source"));
    job->source_format = g_strdup (vmr_json_get_string (obj, "source-format"));
    job->source_node = g_strdup (vmr_json_get_string (obj, "source-node"));
    job->source_file_node = g_strdup (vmr_json_get_string (obj, "source-file-node"));
    /* its kind and admission group are those of what the path is now */
    job->dest = vmr_destination_new_full (
        vmr_json_get_string (obj, "destination"), vmr_json_get_string (obj, "format"),
        vmr_json_bool_or (obj, "created-destination", FALSE), &nbd_options, error);
    if (job->dest == NULL)
        return NULL;
    if (vmr_json_get_uint (nbd, "size", &export_size))
        job->nbd = vmr_destination_facts_from_json (nbd);
    job->manual_pivot = vmr_json_bool_or (obj, "manual-pivot", FALSE);
    job->group = g_strdup (vmr_json_get_string (obj, "group"));
    job->write_blocking = g_strcmp0 (vmr_json_get_string (obj, "copy-mode"), "write-blocking") == 0;
    read_convergence (job, vmr_json_get_object (obj, "convergence"));
    read_space (job, vmr_json_get_object (obj, "space"));
    job->verify = vmr_json_bool_or (obj, "verify", FALSE);
    job->granularity = vmr_json_uint_or (obj, "granularity", 0);
    job->buf_size = vmr_json_uint_or (obj, "buf-size", 0);
    job->verification = vmr_verification_from_json (vmr_json_get_object (obj, "verification"));
    job->speed = vmr_json_uint_or (obj, "speed", 0);
    job->base_speed = vmr_json_uint_or (resume, "base-speed", 0);
    job->speed_from_user = vmr_json_bool_or (resume, "speed-from-user", FALSE);
    job->user_paused = vmr_json_bool_or (resume, "user-paused", FALSE);
    job->ready = vmr_json_bool_or (resume, "ready", FALSE);
    job->cluster_paused = g_strdup (vmr_json_get_string (resume, "cluster-paused"));
    job->cluster_resume
        = job->cluster_paused != NULL && vmr_json_bool_or (resume, "cluster-resume", FALSE);
    job->dest_made
        = vmr_destination_made_from_json (vmr_json_get_object (resume, "destination-made"));
    job->total_bytes = vmr_json_uint_or (progress, "total", 0);
    job->done_bytes = vmr_json_uint_or (progress, "done", 0);
    /* the history as recorded; the state is the last of it */
    g_array_set_size (job->history, 0);
    for (guint i = 0; history != NULL && i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_json_array_object (history, i);
        VmrJobTransition t;

        if (vmr_json_get_string (entry, "state") == NULL)
            continue;
        t.state = vmr_job_state_from_string (vmr_json_get_string (entry, "state"));
        t.time_us = vmr_json_int_or (entry, "time", 0);
        if (t.state != VMR_JOB_STATE_LAST)
            g_array_append_val (job->history, t);
    }
    /* a record of an earlier version has none: the series is empty */
    vmr_job_series_free (job->series);
    job->series = vmr_job_series_new_from_json (vmr_json_get_object (obj, "series"),
                                                VMR_JOB_SERIES_MAX_POINTS);
    job->state = vmr_job_state_from_string (state);
    job->updated_us = vmr_json_int_or (obj, "updated", 0);
    job->orphaned = TRUE;
    return g_steal_pointer (&job);
}

VmrJob *
vmr_job_new_from_record (const gchar *text, gsize length, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new_immutable ();
    JsonObject *root;

    if (length > G_MAXSSIZE) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "record too long");
        return NULL;
    }
    if (!vmr_json_parser_load (parser, text, (gssize) length, error))
        return NULL;
    root = vmr_json_node_object (json_parser_get_root (parser));
    if (root == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "not a JSON object");
        return NULL;
    }
    return job_from_record (root, error);
}

static gint
compare_job_numbers (gconstpointer a, gconstpointer b)
{
    const VmrJob *ja = *(VmrJob *const *) a;
    const VmrJob *jb = *(VmrJob *const *) b;
    guint64 na = g_ascii_strtoull (ja->id + 4, NULL, 10);
    guint64 nb = g_ascii_strtoull (jb->id + 4, NULL, 10);

    return na < nb ? -1 : na > nb ? 1 : 0;
}

VmrJob *
vmr_job_load_record (const gchar *path, GError **error)
{
    g_autofree gchar *text = NULL;
    gsize length = 0;

    if (!g_file_get_contents (path, &text, &length, error))
        return NULL;
    return vmr_job_new_from_record (text, length, error);
}

GPtrArray *
vmr_job_load_records (const gchar *state_dir)
{
    g_autofree gchar *dir_path = g_build_filename (state_dir, "jobs", NULL);
    g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
    GPtrArray *jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
        g_autofree gchar *path = NULL;
        g_autoptr (GError) error = NULL;
        VmrJob *job;

        if (!g_str_has_prefix (name, "vmr-") || !g_str_has_suffix (name, ".json"))
            continue;
        path = g_build_filename (dir_path, name, NULL);
        job = vmr_job_load_record (path, &error);
        if (job == NULL) {
            g_warning ("cannot read job record %s: %s", path, error->message);
            continue;
        }
        g_ptr_array_add (jobs, job);
    }
    g_ptr_array_sort (jobs, compare_job_numbers);
    return jobs;
}

guint
vmr_job_scan_last_number (const gchar *state_dir)
{
    g_autofree gchar *dir_path = g_build_filename (state_dir, "jobs", NULL);
    g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
    const gchar *name;
    guint last = 0;

    if (dir == NULL)
        return 0;
    while ((name = g_dir_read_name (dir)) != NULL) {
        guint64 number;
        gchar *end = NULL;

        if (!g_str_has_prefix (name, "vmr-"))
            continue;
        number = g_ascii_strtoull (name + 4, &end, 10);
        if (end == name + 4 || g_strcmp0 (end, ".json") != 0 || number > G_MAXUINT)
            continue;
        last = MAX (last, (guint) number);
    }
    return last;
}
