#define G_LOG_DOMAIN "vmr-daemon"

/*
 * A copy's neighbours (policy/neighbours.h): the other guest disks on this
 * host whose storage is the copy's source or destination storage. Each
 * copy keeps each neighbour's baseline: the median of its samples before the
 * copy, replaced by its first sample within the controller's measuring
 * pause. The controller then reads, at each step, the sample of whichever
 * of the guest and its neighbours is harmed most, against that one's
 * baseline.
 */

#include "engine-private.h"

/* a neighbour's sample older than this many of its intervals is no news of it */
#define STALE_INTERVALS 3
/* a pause waits this many of the guest's intervals at most for the neighbours' samples */
#define PAUSE_INTERVALS_MAX 2

/* what a copy keeps of a neighbour */
typedef struct {
    VmrLoadSample baseline;
    gdouble noise;
    gboolean has_baseline;
    gdouble harm;   /* at the last step, for the metric */
    gchar *storage; /* its storage's name */
    gchar *domain;
    gchar *disk;
} NeighbourState;

static void
neighbour_state_free (NeighbourState *self)
{
    g_free (self->storage);
    g_free (self->domain);
    g_free (self->disk);
    g_free (self);
}

/* a domain's name has no '/' (libvirt refuses it), nor has a qdev id */
static gchar *
key_of (const gchar *domain, const gchar *disk)
{
    return g_strdup_printf ("%s/%s", domain, disk);
}

static NeighbourState *
state_of (VmrJobAdaptive *a, const VmrNeighbour *n)
{
    g_autofree gchar *key = key_of (n->domain, n->disk);
    NeighbourState *state;

    if (a->neighbours == NULL)
        a->neighbours = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                               (GDestroyNotify) neighbour_state_free);
    state = g_hash_table_lookup (a->neighbours, key);
    if (state == NULL) {
        state = g_new0 (NeighbourState, 1);
        state->storage = g_strdup (n->storage->name);
        state->domain = g_strdup (n->domain);
        state->disk = g_strdup (n->disk);
        g_hash_table_insert (a->neighbours, g_steal_pointer (&key), state);
    }
    return state;
}

/* @disk of @entry as a candidate, with its newest sample if it is fresh */
static VmrNeighbour
candidate_of (VmrEngine *self, DomainEntry *entry, VmrDisk *disk, gint64 now_us)
{
    VmrLoadHistory *history = vmr_engine_domain_load (entry, disk->id);
    const VmrLoadSample *latest = history != NULL ? vmr_load_history_latest (history) : NULL;
    VmrNeighbour n = {
        .domain = entry->name,
        .disk = disk->id,
        .storage = disk->path != NULL ? vmr_policy_find_storage (self->policy, disk->path) : NULL,
    };

    if (latest != NULL
        && now_us - latest->time_us <= STALE_INTERVALS * MAX (latest->interval_us, 1))
        n.load = *latest;
    return n;
}

/* the neighbours of @job on this host now, with what @job keeps of each */
static GArray *
neighbours_of (VmrEngine *self, VmrJob *job, gint64 now_us)
{
    const VmrStorage *source = vmr_policy_find_storage (self->policy, job->source);
    const VmrStorage *dest
        = job->dest != NULL ? vmr_policy_find_storage (self->policy, job->dest->location) : NULL;
    GArray *out = g_array_new (FALSE, TRUE, sizeof (VmrNeighbour));
    GHashTableIter iter;
    DomainEntry *entry;

    if (source == NULL && dest == NULL)
        return out;
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
            VmrNeighbour n
                = candidate_of (self, entry, g_ptr_array_index (entry->disks, i), now_us);
            NeighbourState *state;

            if (!vmr_neighbour_of (&n, job->domain, job->disk, source, dest))
                continue;
            state = state_of (job->adaptive, &n);
            n.baseline = state->baseline;
            n.has_baseline = state->has_baseline;
            n.noise = state->noise;
            g_array_append_val (out, n);
        }
    }
    return out;
}

gboolean
vmr_engine_neighbours_start (VmrEngine *self, VmrJob *job, const VmrControllerConfig *config)
{
    g_autoptr (GArray) neighbours = neighbours_of (self, job, g_get_monotonic_time ());
    gboolean busy = FALSE;

    for (guint i = 0; i < neighbours->len; i++) {
        const VmrNeighbour *n = &g_array_index (neighbours, VmrNeighbour, i);
        DomainEntry *entry = g_hash_table_lookup (self->domains, n->domain);
        VmrLoadHistory *history = vmr_engine_domain_load (entry, n->disk);
        NeighbourState *state = state_of (job->adaptive, n);
        guint n_samples = 0;
        const VmrLoadSample *samples
            = history != NULL ? vmr_load_history_get_samples (history, &n_samples) : NULL;

        state->has_baseline
            = vmr_controller_baseline (config, samples, n_samples, &state->baseline, &state->noise);
        state->harm = 0;
        busy = busy || (state->has_baseline && state->baseline.iops >= config->idle_iops);
    }
    return busy;
}

gboolean
vmr_engine_neighbours_measured (VmrEngine *self, VmrJob *job, const VmrControllerConfig *config,
                                const VmrLoadSample *own)
{
    VmrJobAdaptive *a = job->adaptive;
    g_autoptr (GArray) neighbours = neighbours_of (self, job, g_get_monotonic_time ());
    gboolean waited_enough = own->time_us - a->paused_us >= PAUSE_INTERVALS_MAX * own->interval_us;
    gboolean missing = FALSE;

    for (guint i = 0; i < neighbours->len; i++) {
        const VmrNeighbour *n = &g_array_index (neighbours, VmrNeighbour, i);

        /* a sample that began after the pause is the neighbour without the copy */
        if (n->load.time_us != 0 && n->load.time_us - n->load.interval_us >= a->paused_us)
            continue;
        missing = missing || n->load.iops >= config->idle_iops;
    }
    if (missing && !waited_enough)
        return FALSE;
    for (guint i = 0; i < neighbours->len; i++) {
        const VmrNeighbour *n = &g_array_index (neighbours, VmrNeighbour, i);
        NeighbourState *state = state_of (a, n);

        if (n->load.time_us == 0 || n->load.time_us - n->load.interval_us < a->paused_us)
            continue;
        state->baseline = n->load;
        state->has_baseline = TRUE;
    }
    return TRUE;
}

static gboolean
is_gone (gpointer key, gpointer value, gpointer user_data)
{
    return !g_hash_table_contains (user_data, key);
}

/*
 * the neighbours no longer on the copy's storages (a domain that stopped, a
 * disk that moved) are forgotten, their harm with them: back, they are
 * measured again
 */
static void
forget_gone (VmrJobAdaptive *a, GArray *neighbours)
{
    g_autoptr (GHashTable) current = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

    if (a->neighbours == NULL)
        return;
    for (guint i = 0; i < neighbours->len; i++) {
        const VmrNeighbour *n = &g_array_index (neighbours, VmrNeighbour, i);

        g_hash_table_add (current, key_of (n->domain, n->disk));
    }
    g_hash_table_foreach_remove (a->neighbours, is_gone, current);
}

gint
vmr_engine_neighbours_worst (VmrEngine *self, VmrJob *job, const VmrControllerConfig *config,
                             gdouble own_harm, VmrNeighbour *worst, gboolean *needs_baseline)
{
    g_autoptr (GArray) neighbours = neighbours_of (self, job, g_get_monotonic_time ());
    const VmrStorage *source = vmr_policy_find_storage (self->policy, job->source);
    const VmrStorage *dest
        = job->dest != NULL ? vmr_policy_find_storage (self->policy, job->dest->location) : NULL;
    gint pick;

    *needs_baseline = FALSE;
    forget_gone (job->adaptive, neighbours);
    for (guint i = 0; i < neighbours->len; i++) {
        const VmrNeighbour *n = &g_array_index (neighbours, VmrNeighbour, i);

        state_of (job->adaptive, n)->harm = vmr_neighbour_harm (config, n);
        *needs_baseline = *needs_baseline || vmr_neighbour_needs_baseline (config, n);
    }
    pick = vmr_neighbour_pick (config, (const VmrNeighbour *) neighbours->data, neighbours->len,
                               job->domain, job->disk, source, dest, own_harm, NULL);
    if (pick >= 0)
        *worst = g_array_index (neighbours, VmrNeighbour, pick);
    return pick;
}

void
vmr_engine_neighbours_foreach (VmrJob *job, VmrEngineNeighbourFunc func, gpointer user_data)
{
    GHashTableIter iter;
    NeighbourState *state;

    if (job->adaptive == NULL || job->adaptive->neighbours == NULL)
        return;
    g_hash_table_iter_init (&iter, job->adaptive->neighbours);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &state))
        func (state->storage, state->domain, state->disk, state->harm, user_data);
}
