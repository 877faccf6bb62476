#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The engine's statistics (engine-stats.h): what the job table, the
 * domains' load histories and I/O thread readings and the engine's counters
 * hold, copied into plain structs.
 */

#include "engine-stats.h"

#include "engine-private.h"

static void
job_stats_free (VmrJobStats *self)
{
    g_free (self->id);
    g_free (self->domain);
    g_free (self->disk);
    g_free (self->backend);
    g_free (self);
}

static void
disk_stats_free (VmrDiskStats *self)
{
    g_free (self->domain);
    g_free (self->disk);
    g_free (self);
}

static void
iothread_stats_free (VmrIothreadStats *self)
{
    g_free (self->domain);
    g_free (self->iothread);
    g_free (self);
}

static void
decision_stats_free (VmrDecisionStats *self)
{
    g_free (self->action);
    g_free (self);
}

static void
neighbour_stats_free (VmrNeighbourStats *self)
{
    g_free (self->storage);
    g_free (self->domain);
    g_free (self->disk);
    g_free (self);
}

static void
storage_stats_free (VmrStorageStats *self)
{
    g_free (self->name);
    g_free (self);
}

VmrEngineStats *
vmr_engine_stats_new (void)
{
    VmrEngineStats *self = g_new0 (VmrEngineStats, 1);

    self->time_us = g_get_real_time ();
    self->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) job_stats_free);
    self->disks = g_ptr_array_new_with_free_func ((GDestroyNotify) disk_stats_free);
    self->iothreads = g_ptr_array_new_with_free_func ((GDestroyNotify) iothread_stats_free);
    self->decisions = g_ptr_array_new_with_free_func ((GDestroyNotify) decision_stats_free);
    self->storages = g_ptr_array_new_with_free_func ((GDestroyNotify) storage_stats_free);
    self->neighbours = g_ptr_array_new_with_free_func ((GDestroyNotify) neighbour_stats_free);
    return self;
}

void
vmr_engine_stats_free (VmrEngineStats *self)
{
    if (self == NULL)
        return;
    g_ptr_array_unref (self->jobs);
    g_ptr_array_unref (self->disks);
    g_ptr_array_unref (self->iothreads);
    g_ptr_array_unref (self->decisions);
    g_ptr_array_unref (self->storages);
    g_ptr_array_unref (self->neighbours);
    g_free (self);
}

/* the wall-clock time of the first transition of @job that matches @pred, or 0 */
static gint64
first_transition (VmrJob *job, gboolean (*pred) (VmrJobState state))
{
    for (guint i = 0; job->history != NULL && i < job->history->len; i++) {
        const VmrJobTransition *t = &g_array_index (job->history, VmrJobTransition, i);

        if (pred (t->state))
            return t->time_us;
    }
    return 0;
}

/* the states a copy runs or has run in: it started when the job first reached one */
static gboolean
state_is_started (VmrJobState state)
{
    return state != VMR_JOB_STATE_QUEUED && state != VMR_JOB_STATE_DELAYED
           && !vmr_job_state_is_final (state);
}

static VmrJobStats *
job_stats_new (VmrEngine *self, VmrJob *job)
{
    VmrJobStats *stats = g_new0 (VmrJobStats, 1);
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    gboolean final = vmr_job_state_is_final (job->state);

    stats->id = g_strdup (job->id);
    stats->domain = g_strdup (job->domain);
    stats->disk = g_strdup (job->disk);
    stats->state = job->state;
    stats->backend = g_strdup (entry != NULL ? vmr_backend_get_kind (entry->backend) : "");
    stats->total_bytes = job->total_bytes;
    stats->processed_bytes = MIN (job->done_bytes, job->total_bytes);
    stats->remaining_bytes = job->total_bytes - stats->processed_bytes;
    stats->rate = final || job->state == VMR_JOB_STATE_PAUSED ? 0 : job->rate;
    stats->speed_limit = job->speed;
    stats->start_time_us = first_transition (job, state_is_started);
    stats->end_time_us = final ? first_transition (job, vmr_job_state_is_final) : 0;
    return stats;
}

static gint
compare_domain (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

/* the guest disks' latest samples and the I/O threads of the domain @entry */
static void
add_domain (VmrEngineStats *stats, DomainEntry *entry)
{
    g_autoptr (GList) disks = entry->load != NULL ? g_hash_table_get_keys (entry->load) : NULL;

    disks = g_list_sort (disks, (GCompareFunc) g_strcmp0);
    for (GList *l = disks; l != NULL; l = l->next) {
        VmrLoadHistory *history = g_hash_table_lookup (entry->load, l->data);
        const VmrLoadSample *sample = vmr_load_history_latest (history);
        VmrDiskStats *disk;

        if (sample == NULL)
            continue;
        disk = g_new0 (VmrDiskStats, 1);
        disk->domain = g_strdup (entry->name);
        disk->disk = g_strdup (l->data);
        disk->iops = sample->iops;
        disk->latency_s = sample->latency_us / G_USEC_PER_SEC;
        /* read once when the sample came, so that two scrapes between samples agree */
        disk->sample_time_us = vmr_load_history_latest_wall_time (history);
        disk->sample_interval_s = (gdouble) sample->interval_us / G_USEC_PER_SEC;
        g_ptr_array_add (stats->disks, disk);
    }
    for (guint i = 0; entry->iothreads != NULL && i < entry->iothreads->len; i++) {
        const VmrIothreadUsage *usage = g_ptr_array_index (entry->iothreads, i);
        VmrIothreadStats *thread;

        if (!usage->has_cpu)
            continue;
        thread = g_new0 (VmrIothreadStats, 1);
        thread->domain = g_strdup (entry->name);
        thread->iothread = g_strdup (usage->id);
        thread->cpu_seconds = usage->cpu_seconds;
        g_ptr_array_add (stats->iothreads, thread);
    }
}

static gint
compare_decisions (gconstpointer a, gconstpointer b)
{
    const VmrDecisionStats *da = *(VmrDecisionStats *const *) a;
    const VmrDecisionStats *db = *(VmrDecisionStats *const *) b;

    return g_strcmp0 (da->action, db->action);
}

/* every decision made so far, and the static rules' and admission's with 0 until made */
static void
add_decisions (VmrEngine *self, VmrEngineStats *stats)
{
    g_autoptr (GHashTable) counts = g_hash_table_new (g_str_hash, g_str_equal);
    GHashTableIter iter;
    const gchar *action;
    const guint64 *count;
    static const guint64 zero = 0;

    for (VmrPolicyAction a = VMR_POLICY_ACTION_KEEP; a <= VMR_POLICY_ACTION_FAIL; a++)
        g_hash_table_insert (counts, (gpointer) vmr_policy_action_to_string (a), (gpointer) &zero);
    g_hash_table_insert (counts, "wait", (gpointer) &zero);
    g_hash_table_iter_init (&iter, self->decision_counts);
    while (g_hash_table_iter_next (&iter, (gpointer *) &action, (gpointer *) &count))
        g_hash_table_insert (counts, (gpointer) action, (gpointer) count);
    g_hash_table_iter_init (&iter, counts);
    while (g_hash_table_iter_next (&iter, (gpointer *) &action, (gpointer *) &count)) {
        VmrDecisionStats *decision = g_new0 (VmrDecisionStats, 1);

        decision->action = g_strdup (action);
        decision->count = *count;
        g_ptr_array_add (stats->decisions, decision);
    }
    g_ptr_array_sort (stats->decisions, compare_decisions);
}

/* each storage's budget and the speeds set on the copies that hold it */
static void
add_storages (VmrEngine *self, VmrEngineStats *stats)
{
    GPtrArray *storages = vmr_policy_get_storages (self->policy);

    for (guint i = 0; i < storages->len; i++) {
        const VmrStorage *storage = g_ptr_array_index (storages, i);
        VmrStorageStats *s = g_new0 (VmrStorageStats, 1);

        s->name = g_strdup (storage->name);
        s->budget_bytes = storage->budget;
        s->used_bytes = vmr_engine_budget_used (self, storage);
        g_ptr_array_add (stats->storages, s);
    }
}

/* one neighbour a copy read: a new line, or a larger harm on the line of the same disk */
static void
add_neighbour (const gchar *storage, const gchar *domain, const gchar *disk, gdouble harm,
               gpointer user_data)
{
    VmrEngineStats *stats = user_data;
    VmrNeighbourStats *n;

    for (guint i = 0; i < stats->neighbours->len; i++) {
        n = g_ptr_array_index (stats->neighbours, i);
        if (g_str_equal (n->storage, storage) && g_str_equal (n->domain, domain)
            && g_str_equal (n->disk, disk)) {
            n->harm = MAX (n->harm, harm);
            return;
        }
    }
    n = g_new0 (VmrNeighbourStats, 1);
    n->storage = g_strdup (storage);
    n->domain = g_strdup (domain);
    n->disk = g_strdup (disk);
    n->harm = harm;
    g_ptr_array_add (stats->neighbours, n);
}

static gint
compare_neighbours (gconstpointer a, gconstpointer b)
{
    const VmrNeighbourStats *x = *(VmrNeighbourStats *const *) a;
    const VmrNeighbourStats *y = *(VmrNeighbourStats *const *) b;
    gint c = g_strcmp0 (x->storage, y->storage);

    if (c == 0)
        c = g_strcmp0 (x->domain, y->domain);
    return c != 0 ? c : g_strcmp0 (x->disk, y->disk);
}

/* the neighbours the running copies' controllers read */
static void
add_neighbours (VmrEngine *self, VmrEngineStats *stats)
{
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    for (guint i = 0; i < active->len; i++)
        vmr_engine_neighbours_foreach (g_ptr_array_index (active, i), add_neighbour, stats);
    g_ptr_array_sort (stats->neighbours, compare_neighbours);
}

VmrEngineStats *
vmr_engine_get_stats (VmrEngine *self)
{
    VmrEngineStats *stats = vmr_engine_stats_new ();
    g_autoptr (GPtrArray) jobs = vmr_job_table_list (self->jobs);
    g_autoptr (GPtrArray) names = g_ptr_array_new ();
    GHashTableIter iter;
    const gchar *name;

    for (guint i = 0; i < jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (jobs, i);

        g_ptr_array_add (stats->jobs, job_stats_new (self, job));
        stats->jobs_by_state[job->state]++;
    }
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, (gpointer *) &name, NULL))
        g_ptr_array_add (names, (gpointer) name);
    g_ptr_array_sort (names, compare_domain);
    for (guint i = 0; i < names->len; i++)
        add_domain (stats, g_hash_table_lookup (self->domains, g_ptr_array_index (names, i)));
    add_decisions (self, stats);
    add_storages (self, stats);
    add_neighbours (self, stats);
    for (guint i = 0; i < G_N_ELEMENTS (stats->jobs_ended); i++)
        stats->jobs_ended[i] = self->jobs_ended[i];
    return stats;
}
