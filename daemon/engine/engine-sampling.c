#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Sampling the guests' load: each domain's I/O counters, read at the
 * smallest sample-interval of its disks; after each sample the policy decides
 * on the domain's running copies, the free space of the destinations' file
 * systems on every copy, and the admission limits on the waiting jobs. Then
 * each active job of the domain gets the point of its timeline that is due:
 * this is the series' one writer. The CPU time of the domain's I/O threads
 * is read with each sample, for the statistics, when the backend can read it.
 */

#include "engine-private.h"

/* samples are kept this much longer than the longest hold of the domain's rules */
#define HISTORY_MARGIN_US (G_GINT64_CONSTANT (60) * G_USEC_PER_SEC)

static gint64
keep_for (VmrEngine *self, DomainEntry *entry)
{
    gint64 keep = 0;

    for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (entry->disks, i);
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, entry->name, disk->id);

        keep = MAX (keep, rule->hold_us);
    }
    return keep + HISTORY_MARGIN_US;
}

/* a record is saved with its timeline every this many points, besides on each transition */
#define SERIES_SAVE_EVERY 30

/* the point of @job's timeline now: its progress, @disk_load's latest sample, its decision */
static void
append_point (VmrJob *job, VmrLoadHistory *disk_load)
{
    const VmrLoadSample *load = disk_load != NULL ? vmr_load_history_latest (disk_load) : NULL;
    VmrJobSeriesPoint point = {
        .time_us = g_get_real_time (),
        .rate = job->rate,
        .backlog = job->total_bytes > job->done_bytes ? job->total_bytes - job->done_bytes : 0,
        .processed = job->done_bytes,
        .speed_limit = job->speed,
        .iops = load != NULL ? load->iops : 0,
        .latency_us = load != NULL ? load->latency_us : 0,
        /* borrowed: the series copies them */
        .state = (gchar *) vmr_job_state_to_string (job->state),
        .action = job->decision,
        .reason = job->decision_reason,
    };

    vmr_job_series_append (job->series, &point);
}

/* the timelines of the domain's active jobs, each when its next point is due */
static void
record_series (VmrEngine *self, DomainEntry *entry)
{
    GPtrArray *active = vmr_job_table_get_active (self->jobs);
    gint64 now = g_get_real_time ();

    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        if (job->orphaned || g_strcmp0 (job->domain, entry->name) != 0
            || !vmr_job_series_is_due (job->series, now))
            continue;
        append_point (job, vmr_engine_domain_load (entry, job->disk));
        if (vmr_job_series_get_length (job->series) % SERIES_SAVE_EVERY == 0)
            vmr_engine_save_job (self, job);
    }
}

void
vmr_engine_series_job_ended (VmrEngine *self, VmrJob *job)
{
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);

    /* the last point: the job's final figures, whenever the last sample was */
    append_point (job, entry != NULL ? vmr_engine_domain_load (entry, job->disk) : NULL);
    vmr_engine_save_job (self, job);
}

static void
load_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrEngine) self = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (GHashTable) load = NULL;
    g_autoptr (GPtrArray) jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    DomainEntry *entry = NULL;
    GHashTableIter iter;
    DomainEntry *candidate;
    const gchar *disk_id;
    VmrIoCounters *counters;
    gint64 now = g_get_monotonic_time ();
    gint64 keep;
    g_autofree gchar *domain_name = NULL;

    load = vmr_backend_query_load_finish (VMR_BACKEND (source), res, &error);
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &candidate)) {
        if (candidate->backend == VMR_BACKEND (source))
            entry = candidate;
    }
    if (entry == NULL)
        return;
    entry->sample_in_flight = FALSE;
    if (load == NULL) {
        g_debug ("load of %s: %s", entry->name, error->message);
        return;
    }
    keep = keep_for (self, entry);
    domain_name = g_strdup (entry->name);
    g_hash_table_iter_init (&iter, load);
    while (g_hash_table_iter_next (&iter, (gpointer *) &disk_id, (gpointer *) &counters)) {
        VmrLoadHistory *history = g_hash_table_lookup (entry->load, disk_id);

        if (history == NULL) {
            history = vmr_load_history_new ();
            g_hash_table_insert (entry->load, g_strdup (disk_id), history);
        }
        vmr_load_history_add (history, counters, now, keep);
    }
    /* a decision may end a job: work on a copy of the list */
    for (guint i = 0; i < vmr_job_table_get_active (self->jobs)->len; i++) {
        VmrJob *job = g_ptr_array_index (vmr_job_table_get_active (self->jobs), i);
        gboolean waiting
            = job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED;

        /* jobs that have not started go through admission below */
        if (vmr_engine_job_is_active (job) && !waiting && !job->orphaned
            && g_strcmp0 (job->domain, entry->name) == 0)
            g_ptr_array_add (jobs, vmr_job_ref (job));
    }
    for (guint i = 0; i < jobs->len; i++)
        vmr_engine_policy_evaluate (self, entry, g_ptr_array_index (jobs, i), NULL);
    vmr_engine_space_watch (self);
    vmr_engine_admission_run (self, NULL, NULL);
    /* the decisions may have ended the domain */
    entry = g_hash_table_lookup (self->domains, domain_name);
    if (entry == NULL)
        return;
    record_series (self, entry);
    vmr_engine_notify_load_sampled (self, entry);
}

static void
iothreads_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (VmrEngine) self = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) usages = NULL;
    GHashTableIter iter;
    DomainEntry *entry;

    usages = vmr_backend_query_iothreads_finish (VMR_BACKEND (source), res, &error);
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        if (entry->backend != VMR_BACKEND (source))
            continue;
        entry->iothreads_in_flight = FALSE;
        if (usages == NULL) {
            g_debug ("I/O threads of %s: %s", entry->name, error->message);
            return;
        }
        g_clear_pointer (&entry->iothreads, g_ptr_array_unref);
        entry->iothreads = g_steal_pointer (&usages);
        return;
    }
}

static gboolean
sample_tick_cb (gpointer user_data)
{
    DomainEntry *entry = user_data;

    if (!entry->connected)
        return G_SOURCE_CONTINUE;
    if (!entry->iothreads_in_flight && vmr_backend_can_query_iothreads (entry->backend)) {
        entry->iothreads_in_flight = TRUE;
        vmr_backend_query_iothreads_async (entry->backend, NULL, iothreads_cb,
                                           g_object_ref (entry->engine));
    }
    if (entry->sample_in_flight)
        return G_SOURCE_CONTINUE;
    entry->sample_in_flight = TRUE;
    vmr_backend_query_load_async (entry->backend, NULL, load_cb, g_object_ref (entry->engine));
    return G_SOURCE_CONTINUE;
}

/* the smallest sample-interval among the domain's disks */
static gint64
sample_interval (VmrEngine *self, DomainEntry *entry)
{
    g_autoptr (VmrPolicyRule) domain_rule = vmr_policy_lookup (self->policy, entry->name, NULL);
    gint64 interval = domain_rule->sample_interval_us;

    for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (entry->disks, i);
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, entry->name, disk->id);

        interval = MIN (interval, rule->sample_interval_us);
    }
    return interval;
}

void
vmr_engine_sampling_schedule (VmrEngine *self, DomainEntry *entry)
{
    gint64 interval = sample_interval (self, entry);

    if (entry->sample_source != 0 && entry->sample_interval_us == interval)
        return;
    if (entry->sample_source != 0)
        g_clear_handle_id (&entry->sample_source, g_source_remove);
    entry->sample_interval_us = interval;
    entry->sample_source = g_timeout_add ((guint) (interval / 1000), sample_tick_cb, entry);
}

void
vmr_engine_sampling_watch (VmrEngine *self, DomainEntry *entry)
{
    if (entry->load == NULL)
        entry->load = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                             (GDestroyNotify) vmr_load_history_free);
    vmr_engine_sampling_schedule (self, entry);
    /* a first reading now, so that the first sample comes one interval later */
    sample_tick_cb (entry);
}
