/*
 * The events of the control socket: JOB_STATE_CHANGED on every transition,
 * JOB_PROGRESS paced per job (what a live view such as `virt-mirror watch`
 * redraws from, without polling).
 */
#define G_LOG_DOMAIN "vmr-daemon"

#include "control-events.h"

#include "vmr-json.h"

/* the members of the job object that JOB_PROGRESS carries, besides "policy" */
static const gchar *const progress_members[]
    = { "id", "domain", "disk", "group", "state", "speed", "progress", NULL };

JsonObject *
vmr_control_event_new (const gchar *name, JsonObject *data)
{
    JsonObject *msg = json_object_new ();
    JsonObject *timestamp = json_object_new ();
    gint64 now = g_get_real_time ();

    json_object_set_int_member (timestamp, "seconds", now / G_USEC_PER_SEC);
    json_object_set_int_member (timestamp, "microseconds", now % G_USEC_PER_SEC);
    json_object_set_string_member (msg, "event", name);
    json_object_set_object_member (msg, "data", data);
    json_object_set_object_member (msg, "timestamp", timestamp);
    return msg;
}

JsonObject *
vmr_control_event_job_state (VmrJob *job, VmrJobState previous)
{
    JsonObject *data = json_object_new ();

    json_object_set_string_member (data, "id", job->id);
    json_object_set_string_member (data, "domain", job->domain);
    json_object_set_string_member (data, "disk", job->disk);
    json_object_set_string_member (data, "state", vmr_job_state_to_string (job->state));
    json_object_set_string_member (data, "previous", vmr_job_state_to_string (previous));
    if (job->reason != NULL && vmr_job_state_is_final (job->state))
        json_object_set_string_member (data, "reason", job->reason);
    else
        json_object_set_null_member (data, "reason");
    return vmr_control_event_new ("JOB_STATE_CHANGED", data);
}

JsonObject *
vmr_control_event_job_progress (VmrEngine *engine, VmrJob *job)
{
    g_autoptr (JsonObject) full = vmr_engine_job_to_json (engine, job);
    JsonObject *policy = vmr_json_get_object (full, "policy");
    JsonObject *data = json_object_new ();

    for (guint i = 0; progress_members[i] != NULL; i++) {
        JsonNode *member = json_object_get_member (full, progress_members[i]);

        if (member != NULL)
            json_object_set_member (data, progress_members[i], json_node_copy (member));
    }
    /* the controller's history of speeds grows to hundreds of points: not once a second */
    if (policy != NULL) {
        json_object_remove_member (policy, "controller");
        json_object_set_object_member (data, "policy", json_object_ref (policy));
    }
    return vmr_control_event_new ("JOB_PROGRESS", data);
}

/* ---- the pace of JOB_PROGRESS ---- */

struct _VmrControlProgress {
    VmrEngine *engine; /* not owned: it outlives us */
    VmrControlBroadcastFunc broadcast;
    gpointer user_data;
    GHashTable *jobs; /* job id -> Pending *, owned */
    gulong progress_id;
    gulong changed_id;
};

/* one job's pace */
typedef struct {
    VmrControlProgress *owner;
    gchar *job_id;
    gint64 sent_us; /* monotonic time of the last JOB_PROGRESS, 0 = none yet */
    guint timer_id; /* a JOB_PROGRESS is due when it fires, 0 = none due */
} Pending;

static void
pending_free (Pending *pending)
{
    g_clear_handle_id (&pending->timer_id, g_source_remove);
    g_free (pending->job_id);
    g_free (pending);
}

static void
send_progress (VmrControlProgress *self, Pending *pending, VmrJob *job)
{
    g_autoptr (JsonObject) msg = vmr_control_event_job_progress (self->engine, job);

    pending->sent_us = g_get_monotonic_time ();
    self->broadcast (msg, self->user_data);
}

static gboolean
pending_due_cb (gpointer user_data)
{
    Pending *pending = user_data;
    VmrJob *job = vmr_engine_lookup_job (pending->owner->engine, pending->job_id, NULL);

    pending->timer_id = 0;
    if (job != NULL && !vmr_job_state_is_final (job->state))
        send_progress (pending->owner, pending, job);
    return G_SOURCE_REMOVE;
}

static void
job_progress_cb (VmrEngine *engine, gpointer job_ptr, gpointer user_data)
{
    VmrControlProgress *self = user_data;
    VmrJob *job = job_ptr;
    Pending *pending = g_hash_table_lookup (self->jobs, job->id);
    gint64 interval_us = (gint64) VMR_CONTROL_PROGRESS_INTERVAL_MS * 1000;
    gint64 since_us;

    if (pending == NULL) {
        pending = g_new0 (Pending, 1);
        pending->owner = self;
        pending->job_id = g_strdup (job->id);
        g_hash_table_insert (self->jobs, pending->job_id, pending);
    }
    if (pending->timer_id != 0)
        return;
    since_us = g_get_monotonic_time () - pending->sent_us;
    if (pending->sent_us == 0 || since_us >= interval_us) {
        send_progress (self, pending, job);
        return;
    }
    pending->timer_id
        = g_timeout_add ((guint) ((interval_us - since_us + 999) / 1000), pending_due_cb, pending);
}

/* a job that ended gets no more */
static void
job_changed_cb (VmrEngine *engine, gpointer job_ptr, gint previous, gpointer user_data)
{
    VmrControlProgress *self = user_data;
    VmrJob *job = job_ptr;

    if (vmr_job_state_is_final (job->state))
        g_hash_table_remove (self->jobs, job->id);
}

VmrControlProgress *
vmr_control_progress_new (VmrEngine *engine, VmrControlBroadcastFunc broadcast, gpointer user_data)
{
    VmrControlProgress *self = g_new0 (VmrControlProgress, 1);

    self->engine = engine;
    self->broadcast = broadcast;
    self->user_data = user_data;
    self->jobs
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) pending_free);
    self->progress_id
        = g_signal_connect (engine, "job-progress", G_CALLBACK (job_progress_cb), self);
    self->changed_id = g_signal_connect (engine, "job-changed", G_CALLBACK (job_changed_cb), self);
    return self;
}

void
vmr_control_progress_free (VmrControlProgress *self)
{
    if (self == NULL)
        return;
    g_clear_signal_handler (&self->progress_id, self->engine);
    g_clear_signal_handler (&self->changed_id, self->engine);
    g_hash_table_unref (self->jobs);
    g_free (self);
}
