#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The engine's facade: it builds the parts and keeps them in step. Each part
 * calls only the ones below it (docs/hacking.md has the map); what a lower
 * part has to tell an upper one goes through the job table's "job-changed"
 * or the events of engine-observers.h, whose one table of observers is here.
 */

#include "engine.h"

#include "engine-private.h"

#include "vmr-error.h"

enum { SIGNAL_JOB_CHANGED, SIGNAL_HOOK_EVENT, SIGNAL_JOB_PROGRESS, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE (VmrEngine, vmr_engine, G_TYPE_OBJECT)

/* jobs_ended counts the final states in their order */
G_STATIC_ASSERT (VMR_JOB_STATE_FAILED == VMR_JOB_STATE_COMPLETED + 1
                 && VMR_JOB_STATE_CANCELLED == VMR_JOB_STATE_COMPLETED + 2);

void
vmr_engine_hook_event (VmrEngine *self, const gchar *domain, const gchar *op, const gchar *subop,
                       const gchar *uuid)
{
    g_debug ("hook: %s %s %s", domain, op, subop != NULL ? subop : "-");
    g_signal_emit (self, signals[SIGNAL_HOOK_EVENT], 0, domain, op, subop, uuid);
}

/* ---- jobs ---- */

JsonObject *
vmr_engine_job_to_json (VmrEngine *self, VmrJob *job)
{
    JsonObject *obj = vmr_job_to_json (job);

    json_object_set_object_member (obj, "policy", vmr_engine_policy_describe_job (self, job));
    return obj;
}

JsonArray *
vmr_engine_list_jobs (VmrEngine *self)
{
    g_autoptr (GPtrArray) jobs = vmr_job_table_list (self->jobs);
    JsonArray *result = json_array_new ();

    for (guint i = 0; i < jobs->len; i++)
        json_array_add_object_element (result,
                                       vmr_engine_job_to_json (self, g_ptr_array_index (jobs, i)));
    return result;
}

void
vmr_engine_count_jobs (VmrEngine *self, guint *out_running, guint *out_queued)
{
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    *out_running = 0;
    *out_queued = 0;
    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        /* a job that ended is in the table's active ones until its handlers ran */
        if (vmr_job_state_is_final (job->state))
            continue;
        if (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED)
            (*out_queued)++;
        else
            (*out_running)++;
    }
}

VmrJob *
vmr_engine_lookup_job (VmrEngine *self, const gchar *id, GError **error)
{
    VmrJob *job = vmr_job_table_lookup (self->jobs, id);

    if (job == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "unknown job '%s'",
                     id != NULL ? id : "");
    return job;
}

VmrJob *
vmr_engine_read_job (VmrEngine *self, const gchar *id, GError **error)
{
    VmrJob *job = vmr_job_table_read (self->jobs, id);

    if (job == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "unknown job '%s'",
                     id != NULL ? id : "");
    return job;
}

void
vmr_engine_shutdown (VmrEngine *self)
{
    g_hash_table_remove_all (self->domains);
}

/* ---- keeping the parts in step ---- */

/*
 * After every transition, in this order: the last point of an ended job's
 * timeline, the watchers outside the engine
 * (the control socket's events), the job's group, the admission limits and
 * the domain's progress timer. The job's waiters complete after all of them.
 */
static void
job_changed_cb (VmrJobTable *table, gpointer job_ptr, gint previous, gpointer user_data)
{
    VmrEngine *self = user_data;
    VmrJob *job = job_ptr;
    DomainEntry *entry;

    if (vmr_job_state_is_final (job->state))
        vmr_engine_series_job_ended (self, job);
    if (vmr_job_state_is_final (job->state) && !vmr_job_state_is_final ((VmrJobState) previous))
        self->jobs_ended[job->state - VMR_JOB_STATE_COMPLETED]++;
    g_signal_emit (self, signals[SIGNAL_JOB_CHANGED], 0, job, previous);
    vmr_engine_group_job_changed (self, job, (VmrJobState) previous);
    vmr_engine_cluster_job_changed (self, job, (VmrJobState) previous);
    vmr_engine_admission_job_changed (self, job, (VmrJobState) previous);
    vmr_engine_budget_job_changed (self, job, (VmrJobState) previous);
    vmr_engine_verify_job_changed (self, job, (VmrJobState) previous);
    vmr_engine_destination_job_changed (self, job, (VmrJobState) previous);
    entry = g_hash_table_lookup (self->domains, job->domain);
    if (entry != NULL)
        vmr_engine_update_timers (self, entry);
}

/* after a reading of a copy's progress: the watchers outside the engine */
static void
progress_read_cb (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    if (vmr_engine_job_is_active (job))
        g_signal_emit (self, signals[SIGNAL_JOB_PROGRESS], 0, job);
}

/* after a sample of a domain's load and the decisions on it: the guest's figures of each job */
static void
load_sampled_cb (VmrEngine *self, DomainEntry *entry)
{
    g_autoptr (GPtrArray) jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    /* a watcher may act on a job: work on a copy of the list */
    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        if (vmr_engine_job_is_active (job) && g_strcmp0 (job->domain, entry->name) == 0)
            g_ptr_array_add (jobs, vmr_job_ref (job));
    }
    for (guint i = 0; i < jobs->len; i++)
        g_signal_emit (self, signals[SIGNAL_JOB_PROGRESS], 0, g_ptr_array_index (jobs, i));
}

/*
 * The engine's observers (engine-observers.h): each event's handlers run in
 * this order.
 */
static const VmrEngineObserver observers[] = {
    /* a known domain's load is sampled */
    { .domain_added = vmr_engine_sampling_watch },
    /* the jobs an earlier run left with the domain are picked up */
    { .domain_added = vmr_engine_adopt_jobs },
    /* a copy in sync is cut over, alone or with its group, or kept for a user's pivot */
    { .copy_in_sync = vmr_engine_job_in_sync },
    /* after a reading of a copy's progress: its convergence, then a copy stopped for space */
    { .progress_read = vmr_engine_converge_progress },
    { .progress_read = vmr_engine_space_progress },
    /* the cluster's queue changed: an admission pass */
    { .cluster_changed = vmr_engine_admission_schedule },
    /* the cluster's evacuations: a part waiting for the domains, the cluster joined or left */
    { .domain_added = vmr_engine_evacuations_domain_added,
      .cluster_joined = vmr_engine_evacuations_cluster_joined,
      .cluster_leaving = vmr_engine_evacuations_cluster_leaving },
    /* the watchers outside the engine, after the parts */
    { .progress_read = progress_read_cb, .load_sampled = load_sampled_cb },
};

VmrEngine *
vmr_engine_new (const gchar *state_dir)
{
    VmrEngine *self = g_object_new (VMR_TYPE_ENGINE, NULL);

    self->state_dir = g_strdup (state_dir);
    vmr_engine_protect_directory (self, "state directory", state_dir);
    self->jobs = vmr_job_table_new (state_dir);
    self->policy = vmr_policy_new_default ();
    vmr_engine_apply_retention (self);
    self->observers = observers;
    self->n_observers = G_N_ELEMENTS (observers);
    g_signal_connect (self->jobs, "job-changed", G_CALLBACK (job_changed_cb), self);
    vmr_engine_load_unfinished (self);
    return self;
}

static void
vmr_engine_dispose (GObject *object)
{
    VmrEngine *self = VMR_ENGINE (object);

    g_clear_handle_id (&self->admission_source, g_source_remove);
    vmr_engine_cluster_clear (self);
    /* the domains' backends first: their callbacks name jobs of the table */
    g_hash_table_remove_all (self->domains);
    if (self->jobs != NULL)
        g_signal_handlers_disconnect_by_data (self->jobs, self);
    g_clear_object (&self->jobs);
    G_OBJECT_CLASS (vmr_engine_parent_class)->dispose (object);
}

static void
vmr_engine_finalize (GObject *object)
{
    VmrEngine *self = VMR_ENGINE (object);

    g_hash_table_unref (self->domains);
    g_clear_pointer (&self->cluster_taken_part, g_hash_table_unref);
    g_clear_pointer (&self->cluster_evacuations, g_hash_table_unref);
    g_clear_pointer (&self->policy, vmr_policy_unref);
    g_free (self->policy_path);
    g_free (self->policy_refusal);
    g_free (self->cluster_error);
    g_free (self->state_dir);
    g_hash_table_unref (self->protected_dirs);
    g_ptr_array_unref (self->defined_disks);
    g_hash_table_unref (self->decision_counts);
    vmr_engine_budget_free (self->budget);
    G_OBJECT_CLASS (vmr_engine_parent_class)->finalize (object);
}

static void
vmr_engine_init (VmrEngine *self)
{
    self->progress_interval_ms = PROGRESS_INTERVAL_MS;
    self->domains = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify) vmr_engine_domain_entry_free);
    self->protected_dirs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->defined_disks
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_engine_defined_disk_free);
    self->decision_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->budget = vmr_engine_budget_new ();
}

void
vmr_engine_protect_directory (VmrEngine *self, const gchar *what, const gchar *dir)
{
    g_hash_table_insert (self->protected_dirs, g_canonicalize_filename (dir, "/"), g_strdup (what));
}

void
vmr_engine_defined_disk_free (VmrEngineDefinedDisk *disk)
{
    g_free (disk->domain);
    g_free (disk->disk);
    g_free (disk->path);
    g_free (disk);
}

void
vmr_engine_set_defined_disks (VmrEngine *self, GPtrArray *disks)
{
    g_return_if_fail (VMR_IS_ENGINE (self));
    g_ptr_array_unref (self->defined_disks);
    self->defined_disks
        = disks != NULL
              ? g_ptr_array_ref (disks)
              : g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_engine_defined_disk_free);
}

static void
vmr_engine_class_init (VmrEngineClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->dispose = vmr_engine_dispose;
    object_class->finalize = vmr_engine_finalize;
    signals[SIGNAL_JOB_CHANGED]
        = g_signal_new ("job-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_INT);
    signals[SIGNAL_HOOK_EVENT] = g_signal_new (
        "hook-event", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
        G_TYPE_NONE, 4, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_STRING);
    signals[SIGNAL_JOB_PROGRESS]
        = g_signal_new ("job-progress", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}
