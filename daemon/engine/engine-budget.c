#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The storages' bandwidth budgets on this host. A copy whose source or
 * destination lies in a [storage] section with a budget takes a share of it
 * while it moves data (copying, throttled, in sync, pivoting, or starting):
 * the budget split equally between the copies holding it, the smaller share
 * for a copy on two budgeted storages. Whatever speed the policy, the
 * controller or a user asks for, the speed sent to the hypervisor is capped
 * to that share and never unlimited, and never more than what the other
 * copies' speeds leave of the budget, so that the sum of the speeds set stays
 * under it. When the holders change, the copies over their new share are
 * lowered first; the others are raised to what they asked for only once
 * every lower is answered. With a [cluster], the budget split here is this
 * host's share of it (cluster.h): the cluster is told how many copies hold
 * each storage and what they use once every lower is answered, so that it
 * writes a lower share only after the copies were lowered.
 */

#include "engine-private.h"
#include "job-log.h"

#include "cluster-share.h"
#include "cluster.h"

#include "units.h"

/* no budget touches the copy */
#define NO_CEILING G_MAXUINT64

typedef struct {
    VmrJob *job;    /* a reference */
    guint64 wanted; /* bytes/s the policy, the controller or a user asked for, 0 = unlimited */
} BudgetHold;

struct _VmrEngineBudget {
    GHashTable *holds; /* job id -> BudgetHold *: the copies that move data */
    guint lowering;    /* lowers sent and not answered yet: raises wait for them */
};

/* the smallest share of a copy, and where it comes from */
typedef struct {
    guint64 speed;             /* bytes/s, NO_CEILING without a budget */
    const VmrStorage *storage; /* the storage whose budget sets it, or NULL */
    guint64 budget;            /* ... what this host may use of it: all, or its cluster share */
    guint n_copies;            /* the copies sharing that */
} BudgetCeiling;

static void
hold_free (BudgetHold *hold)
{
    vmr_job_unref (hold->job);
    g_free (hold);
}

VmrEngineBudget *
vmr_engine_budget_new (void)
{
    VmrEngineBudget *budget = g_new0 (VmrEngineBudget, 1);

    budget->holds
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) hold_free);
    return budget;
}

void
vmr_engine_budget_free (VmrEngineBudget *budget)
{
    if (budget == NULL)
        return;
    g_hash_table_unref (budget->holds);
    g_free (budget);
}

/*
 * What this host's copies may use of @storage's budget: all of it without a
 * cluster, else this host's share of it (0 before one is granted)
 */
static guint64
host_budget (VmrEngine *self, const VmrStorage *storage)
{
    if (self->cluster == NULL)
        return storage->budget;
    return vmr_cluster_budget_share (self->cluster, storage->name);
}

/* the storages with a budget that @job reads from or writes to: 0, 1 or 2 */
static guint
budgeted_storages (VmrEngine *self, VmrJob *job, const VmrStorage *out[2])
{
    const VmrStorage *source = vmr_policy_find_storage (self->policy, job->source);
    const VmrStorage *dest
        = job->dest != NULL ? vmr_policy_find_storage (self->policy, job->dest->location) : NULL;
    guint n = 0;

    if (source != NULL && source->budget > 0)
        out[n++] = source;
    if (dest != NULL && dest->budget > 0 && dest != source)
        out[n++] = dest;
    return n;
}

static gboolean
touches (VmrEngine *self, VmrJob *job, const VmrStorage *storage)
{
    const VmrStorage *storages[2];
    guint n = budgeted_storages (self, job, storages);

    for (guint i = 0; i < n; i++) {
        if (storages[i] == storage)
            return TRUE;
    }
    return FALSE;
}

/*
 * the copies holding @storage's budget (@budget of it on this host), and the
 * sum of the speeds set on them but @job's
 */
static guint
holders_on (VmrEngine *self, const VmrStorage *storage, guint64 budget, VmrJob *job,
            guint64 *out_others)
{
    GHashTableIter iter;
    BudgetHold *hold;
    guint n = 0;

    *out_others = 0;
    g_hash_table_iter_init (&iter, self->budget->holds);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &hold)) {
        if (!touches (self, hold->job, storage))
            continue;
        n++;
        if (hold->job != job)
            *out_others += hold->job->speed > 0 ? hold->job->speed : budget;
    }
    return n;
}

/*
 * @job's share: the smallest budget / copies of its storages, @job counted
 * whether it holds them yet or not; with @room, also no more than what the
 * others' speeds leave, and at least 1 byte/s (0 would be unlimited)
 */
static BudgetCeiling
ceiling_of (VmrEngine *self, VmrJob *job, gboolean room)
{
    BudgetCeiling ceiling = { NO_CEILING, NULL, 0, 0 };
    gboolean held = g_hash_table_contains (self->budget->holds, job->id);
    const VmrStorage *storages[2];
    guint n_storages = budgeted_storages (self, job, storages);

    for (guint i = 0; i < n_storages; i++) {
        guint64 budget = host_budget (self, storages[i]);
        guint64 others = 0;
        guint n = holders_on (self, storages[i], budget, job, &others) + (held ? 0 : 1);
        guint64 left = others < budget ? budget - others : 0;
        guint64 speed = vmr_share_per_copy (budget, n, room ? left : G_MAXUINT64);
        if (speed < ceiling.speed) {
            ceiling.speed = speed;
            ceiling.storage = storages[i];
            ceiling.budget = budget;
            ceiling.n_copies = n;
        }
    }
    return ceiling;
}

/*
 * "budget: array-a 60 MiB/s shared by 3 copies, 20 MiB/s for this one" as
 * the job's reason; with a cluster, "budget: array-a 60 MiB/s, 30 MiB/s on
 * this host shared by ..."
 */
static void
note_budget (VmrEngine *self, VmrJob *job, const BudgetCeiling *ceiling)
{
    g_autofree gchar *budget = vmr_units_format_speed (ceiling->storage->budget);
    g_autofree gchar *host = vmr_units_format_speed (ceiling->budget);
    g_autofree gchar *on_host
        = self->cluster != NULL ? g_strdup_printf (", %s on this host", host) : g_strdup ("");
    g_autofree gchar *share = vmr_units_format_speed (ceiling->speed);
    g_autofree gchar *reason = g_strdup_printf (
        "budget: %s %s%s shared by %u cop%s, %s for this one", ceiling->storage->name, budget,
        on_host, ceiling->n_copies, ceiling->n_copies == 1 ? "y" : "ies", share);

    if (g_strcmp0 (job->decision_reason, reason) == 0)
        return;
    g_debug ("job %s: %s", job->id, reason);
    g_free (job->decision_reason);
    job->decision_reason = g_steal_pointer (&reason);
}

/* whether a copy in @state moves data, or still holds the speed it was set to */
static gboolean
moves_data (VmrJobState state)
{
    switch (state) {
        case VMR_JOB_STATE_COPYING:
        case VMR_JOB_STATE_THROTTLED:
        case VMR_JOB_STATE_SYNCED:
        case VMR_JOB_STATE_PIVOTING:
            return TRUE;
        default:
            return FALSE;
    }
}

guint64
vmr_engine_budget_cap (VmrEngine *self, VmrJob *job, guint64 speed)
{
    BudgetHold *hold = g_hash_table_lookup (self->budget->holds, job->id);
    BudgetCeiling ceiling;

    /* a running copy that joined no other way (one an earlier run left) holds its share now */
    if (hold == NULL && moves_data (job->state)) {
        vmr_engine_budget_join (self, job, speed);
        hold = g_hash_table_lookup (self->budget->holds, job->id);
    }
    ceiling = ceiling_of (self, job, TRUE);
    if (hold != NULL)
        hold->wanted = speed;
    job->under_budget = ceiling.speed != NO_CEILING;
    if (ceiling.speed == NO_CEILING || (speed != 0 && speed < ceiling.speed))
        return speed;
    note_budget (self, job, &ceiling);
    return ceiling.speed;
}

guint64
vmr_engine_budget_max_speed (VmrEngine *self, VmrJob *job, guint64 max_speed)
{
    BudgetCeiling ceiling = ceiling_of (self, job, FALSE);

    if (ceiling.speed == NO_CEILING)
        return max_speed;
    return max_speed == 0 ? ceiling.speed : MIN (max_speed, ceiling.speed);
}

typedef struct {
    VmrEngine *engine; /* a reference */
    VmrJob *job;       /* a reference */
    gboolean lower;    /* a lower, which raises wait for */
} SpeedData;

static void raise_all (VmrEngine *self);
static void report_demand (VmrEngine *self);

static void
speed_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    SpeedData *data = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)
        && vmr_engine_job_is_active (data->job))
        vmr_job_message (data->job, "job %s: the budget's speed refused: %s", data->job->id,
                         error->message);
    if (data->lower && --data->engine->budget->lowering == 0)
        raise_all (data->engine);
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

/*
 * Sets @job's speed to @speed; a copy that has not started yet gets it when
 * it starts. TRUE when a command went to the hypervisor.
 */
static gboolean
send_speed (VmrEngine *self, VmrJob *job, guint64 speed, gboolean lower)
{
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    SpeedData *data;

    job->speed = speed;
    if (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED || entry == NULL
        || !entry->connected)
        return FALSE;
    data = g_new0 (SpeedData, 1);
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->lower = lower;
    if (lower)
        self->budget->lowering++;
    vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_SET_SPEED, speed, NULL,
                                   speed_cb, data);
    return TRUE;
}

/* the copies under a budget raised to what they asked for, as far as the others leave room */
static void
raise_all (VmrEngine *self)
{
    g_autoptr (GList) holds = g_hash_table_get_values (self->budget->holds);

    for (GList *l = holds; l != NULL; l = l->next) {
        BudgetHold *hold = l->data;
        guint64 speed;

        if (hold->job->speed == 0)
            continue;
        speed = vmr_engine_budget_cap (self, hold->job, hold->wanted);
        if (speed == 0 || speed > hold->job->speed)
            send_speed (self, hold->job, speed, FALSE);
    }
    report_demand (self);
}

/* lowers the copies over their share first; raises the others once no lower is pending */
static void
rebalance (VmrEngine *self)
{
    g_autoptr (GList) holds = g_hash_table_get_values (self->budget->holds);

    for (GList *l = holds; l != NULL; l = l->next) {
        BudgetHold *hold = l->data;
        BudgetCeiling ceiling = ceiling_of (self, hold->job, FALSE);

        if (ceiling.speed == NO_CEILING
            || (hold->job->speed != 0 && hold->job->speed <= ceiling.speed))
            continue;
        note_budget (self, hold->job, &ceiling);
        send_speed (self, hold->job, ceiling.speed, TRUE);
    }
    if (self->budget->lowering == 0)
        raise_all (self);
}

/*
 * With a cluster, what the copies of each budgeted storage use, every lower
 * answered: the cluster writes a lower share only once it is under it
 */
static void
report_demand (VmrEngine *self)
{
    GPtrArray *storages = vmr_policy_get_storages (self->policy);

    if (self->cluster == NULL)
        return;
    for (guint i = 0; i < storages->len; i++) {
        const VmrStorage *storage = g_ptr_array_index (storages, i);
        guint64 others = 0;

        if (storage->budget == 0)
            continue;
        vmr_cluster_budget_demand (self->cluster, storage->name, storage->budget,
                                   holders_on (self, storage, 0, NULL, &others),
                                   vmr_engine_budget_used (self, storage));
    }
}

void
vmr_engine_budget_join (VmrEngine *self, VmrJob *job, guint64 wanted)
{
    BudgetHold *hold;

    if (g_hash_table_contains (self->budget->holds, job->id))
        return;
    hold = g_new0 (BudgetHold, 1);
    hold->job = vmr_job_ref (job);
    hold->wanted = wanted;
    g_hash_table_insert (self->budget->holds, hold->job->id, hold);
    rebalance (self);
}

void
vmr_engine_budget_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    BudgetHold *hold = g_hash_table_lookup (self->budget->holds, job->id);

    if (moves_data (job->state)) {
        /* an adopted copy, a user's resume: it takes its share, lowered to it if need be */
        if (hold == NULL) {
            vmr_engine_budget_join (self, job, job->speed);
            return;
        }
        /*
         * a copy that started: a lower that came while its start was on the
         * way may have missed the hypervisor, which gets its speed again
         */
        if ((previous == VMR_JOB_STATE_QUEUED || previous == VMR_JOB_STATE_DELAYED)
            && ceiling_of (self, job, FALSE).speed != NO_CEILING)
            send_speed (self, job, job->speed, TRUE);
        return;
    }
    /* a pause, an end, a failure: its share goes to the others */
    if (hold != NULL && job->state != VMR_JOB_STATE_QUEUED && job->state != VMR_JOB_STATE_DELAYED) {
        g_hash_table_remove (self->budget->holds, job->id);
        rebalance (self);
    }
}

void
vmr_engine_budget_policy_changed (VmrEngine *self)
{
    rebalance (self);
}

guint64
vmr_engine_budget_used (VmrEngine *self, const VmrStorage *storage)
{
    GHashTableIter iter;
    BudgetHold *hold;
    guint64 used = 0;

    g_hash_table_iter_init (&iter, self->budget->holds);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &hold)) {
        if (vmr_policy_find_storage (self->policy, hold->job->source) == storage
            || (hold->job->dest != NULL
                && vmr_policy_find_storage (self->policy, hold->job->dest->location) == storage))
            used += hold->job->speed;
    }
    return used;
}
