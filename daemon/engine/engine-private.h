/*
 * What the parts of the engine share. Not an API: engine.h is.
 *
 * The parts, each calling only those listed before it:
 *   engine-observers.c  the events the lower parts tell the upper ones (engine-observers.h)
 *   engine-destination.c  a job's destination: the refusals, opening it, removing a file made
 *   engine-domains.c    the domain table, the backends' events, progress
 *   engine-budget.c     the storages' bandwidth budgets, shared by the copies on them
 *   engine-copy.c       starting a copy, cutting a job over
 *   engine-verify.c     comparing the old source with the destination after the pivot
 *   engine-converge.c   a copy that does not converge, a copy's deadline
 *   engine-group.c      the disks of one domain that cut over together
 *   engine-action.c     the policy's actions on a running copy
 *   engine-neighbours.c the other guests' disks on a copy's storages, and their harm
 *   engine-adaptive.c   the closed-loop speed (control = adaptive)
 *   engine-policy.c     the policy's load decisions
 *   engine-cluster.c    the cluster's slots, on etcd
 *   engine-admission.c  the limits on copies running at once
 *   engine-space.c      the free space of the destinations' file systems
 *   engine-sampling.c   reading the guests' load, the jobs' timelines
 *   engine-policy-file.c, engine-commands.c, engine-adopt.c
 *                       the policy file, users' commands, an earlier run's jobs
 *   engine-migrate.c    migrate requests
 *   engine-evacuate.c   evacuate requests
 *   engine-cluster-evacuate.c  this host's parts of the cluster's evacuations
 *   engine.c            the facade: builds the parts and keeps them in step
 *   engine-stats.c      the statistics: a snapshot of what the others hold
 * The jobs themselves are core/'s job table.
 */
#pragma once

#include "destination.h"
#include "engine.h"
#include "engine-observers.h"
#include "job-table.h"
#include "load-history.h"
#include "decision.h"
#include "neighbours.h"
#include "policy.h"

G_BEGIN_DECLS

/* how often a running copy's progress is read from QEMU, unless a test says */
#define PROGRESS_INTERVAL_MS 500

typedef struct _VmrEngineBudget VmrEngineBudget;

struct _DomainEntry {
    VmrEngine *engine; /* not a reference: the engine owns the entry */
    gchar *name;
    VmrBackend *backend;
    GPtrArray *disks; /* of VmrDisk *, as last discovered */
    gboolean connected;
    guint progress_source;
    gboolean progress_in_flight;

    GHashTable *load; /* disk id -> VmrLoadHistory *, the guest's recent I/O */
    guint sample_source;
    gint64 sample_interval_us; /* of the running sample timer */
    gboolean sample_in_flight;
    GPtrArray *iothreads; /* of VmrIothreadUsage *, as last sampled; NULL before or without */
    gboolean iothreads_in_flight;
};

struct _VmrEngine {
    GObject parent_instance;

    gchar *state_dir;
    GHashTable *protected_dirs; /* directory -> what the daemon calls it: no destination there */
    GPtrArray *defined_disks;   /* of VmrEngineDefinedDisk *, of the domains that do not run */
    GHashTable *domains;        /* name -> DomainEntry *, owned */
    VmrJobTable *jobs;
    const VmrEngineObserver *observers; /* engine.c's table (engine-observers.h) */
    gsize n_observers;
    guint progress_interval_ms; /* PROGRESS_INTERVAL_MS; the unit tests read faster */

    VmrPolicy *policy;
    gchar *policy_path;          /* NULL: built-in values only */
    gint64 policy_loaded;        /* when the policy in force was read, µs since the epoch */
    gint64 policy_refused;       /* when a reload was last refused after that, or 0 */
    gchar *policy_refusal;       /* why, or NULL */
    guint admission_source;      /* an admission pass is due */
    VmrEngineBudget *budget;     /* the copies holding a share of a storage's budget */
    struct _VmrCluster *cluster; /* the [cluster] section's, NULL without one */
    gchar *cluster_error;        /* why the cluster could not be joined, or NULL */
    struct _VmrClusterEvacuations *evacuations; /* the cluster's evacuations, with it */
    gboolean follows_evacuations;    /* vmr_engine_follow_cluster_evacuations() was called */
    GHashTable *cluster_evacuations; /* id -> this host's part of an evacuation, until its request
                                      * goes from etcd */
    GHashTable *cluster_taken_part;  /* id -> when (a sequence number) this host took part, kept */
    gsize cluster_taken_seq;         /* the last sequence number given */

    /* what the statistics count (engine-stats.h) */
    GHashTable *decision_counts; /* action name -> guint64 *, the policy's decisions made */
    guint64 jobs_ended[3];       /* jobs that completed, failed, were cancelled */
};

/* the job table's calls under the names the parts use */
static inline gboolean
vmr_engine_set_job_state (VmrEngine *self, VmrJob *job, VmrJobState state, const gchar *reason)
{
    return vmr_job_table_set_state (self->jobs, job, state, reason);
}

static inline void
vmr_engine_save_job (VmrEngine *self, VmrJob *job)
{
    vmr_job_table_save (self->jobs, job);
}

/* one more decision @action ("throttle", "wait", ...) for the statistics */
static inline void
vmr_engine_count_decision (VmrEngine *self, const gchar *action)
{
    guint64 *count = g_hash_table_lookup (self->decision_counts, action);

    if (count == NULL) {
        count = g_new0 (guint64, 1);
        g_hash_table_insert (self->decision_counts, g_strdup (action), count);
    }
    (*count)++;
}

static inline gboolean
vmr_engine_job_is_active (VmrJob *job)
{
    return !vmr_job_state_is_final (job->state);
}

/* engine-destination.c */

/*
 * The refusals that hold whatever the request says (destination-guard.h):
 * the policy's allowed-destinations and destination-symlinks, the daemon's
 * own directories, a block device another process holds. Touches nothing.
 */
gboolean vmr_engine_guard_destination (VmrEngine *self, const VmrDestination *destination,
                                       GError **error);

/*
 * The refusals of vmr_engine_guard_destination() that a directory every
 * destination of an evacuation lies in can be judged by: the policy's
 * allowed-destinations allow something inside @dir (absolute), which lies
 * in none of the daemon's own directories and, with destination-symlinks =
 * refuse, behind no symbolic link. Touches nothing.
 */
gboolean vmr_engine_guard_directory (VmrEngine *self, const gchar *dir, GError **error);

/*
 * Checks that @destination is no disk of another domain than @domain: of
 * a known one, by any path or link, nor of one defined and not running.
 */
gboolean vmr_engine_check_not_elsewhere (VmrEngine *self, const gchar *domain,
                                         const VmrDestination *destination, GError **error);

/*
 * Every check of the request again, for @job, which has not started: no
 * disk of another domain, vmr_destination_check() (a file to be made must
 * not exist), then the guards. One line naming the destination on a
 * refusal; touches nothing.
 */
gboolean vmr_engine_recheck_destination (VmrEngine *self, VmrJob *job, GError **error);

/* after a reload: a queued or delayed job that a check now refuses fails with its line */
void vmr_engine_recheck_queued (VmrEngine *self);

/*
 * Before @job's copy starts: checks it again (vmr_engine_recheck_destination()),
 * then opens its file or device (a handle, job->dest_handle), making the
 * file for a copy of @disk when it is to be made, with @disk's owner and
 * mode: its identity is in the job's record (job->dest_made) before it is
 * handed to anyone. Nothing to open for an export.
 */
void vmr_engine_open_destination_async (VmrEngine *self, VmrJob *job, const VmrDisk *disk,
                                        GAsyncReadyCallback callback, gpointer user_data);
gboolean vmr_engine_open_destination_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/*
 * Whether @job's destination is still named by its location: the file the
 * copy writes (opened, or made by the daemon before a restart). One line
 * when it was moved or replaced; TRUE when there is nothing to compare.
 */
gboolean vmr_engine_check_destination_named (VmrEngine *self, VmrJob *job, GError **error);

/*
 * Removes the file the daemon made for @job (job->dest_made) once the
 * hypervisor let go of it, only while its name leads to that file; logs a
 * file it leaves. Does nothing when the daemon made none.
 */
void vmr_engine_remove_destination (VmrEngine *self, VmrJob *job);

/* after a transition: an ended job lets go of its destination's descriptors */
void vmr_engine_destination_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* engine-domains.c */

void vmr_engine_domain_entry_free (DomainEntry *entry);

/* the domain @name, or NULL with VMR_ERROR_NOT_FOUND */
DomainEntry *vmr_engine_lookup_domain (VmrEngine *self, const gchar *name, GError **error);

/* the guest's recent load on @disk of @entry (may be NULL), or NULL */
VmrLoadHistory *vmr_engine_domain_load (DomainEntry *entry, const gchar *disk);

/* starts or stops the domain's progress timer as its jobs need */
void vmr_engine_update_timers (VmrEngine *self, DomainEntry *entry);

/* engine-budget.c */

VmrEngineBudget *vmr_engine_budget_new (void);
void vmr_engine_budget_free (VmrEngineBudget *budget);

/*
 * The speed to send for @job when @speed (bytes/s, 0 = unlimited) is asked:
 * @speed, or, on a storage with a budget, no more than @job's share and
 * than what the other copies' speeds leave of it, never 0; the job's reason
 * then names the budget. Remembers @speed as what @job asks for.
 */
guint64 vmr_engine_budget_cap (VmrEngine *self, VmrJob *job, guint64 speed);

/* the controller's max-speed @max_speed (0 = unlimited) for @job, no more than its share */
guint64 vmr_engine_budget_max_speed (VmrEngine *self, VmrJob *job, guint64 max_speed);

/*
 * @job is about to move data (its copy starts or resumes) asking for
 * @wanted bytes/s: it takes its share of its storages' budgets; the copies
 * over their new share are lowered at once. Nothing when it holds one.
 */
void vmr_engine_budget_join (VmrEngine *self, VmrJob *job, guint64 wanted);

/* after a transition: a copy that paused or ended gives its share to the others */
void vmr_engine_budget_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* after a reload: the shares under the new budgets, lowers first */
void vmr_engine_budget_policy_changed (VmrEngine *self);

/* the sum of the speeds set on the copies holding @storage's budget, bytes/s */
guint64 vmr_engine_budget_used (VmrEngine *self, const VmrStorage *storage);

/* engine-copy.c */

/*
 * Starts the copy of a queued or delayed @job at @speed (bytes/s, 0 =
 * unlimited) into @state (copying or throttled). @task (consumed, may be
 * NULL) completes with the job once QEMU runs the mirror.
 */
void vmr_engine_start_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, guint64 speed,
                            VmrJobState state, GTask *task);

/*
 * Cuts @job over, once its destination is checked to be still where its
 * location says (else the copy fails: vmr_engine_fail_copy()); @task
 * (consumed, may be NULL) completes when QEMU accepted.
 */
void vmr_engine_pivot_job (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* cancels the running copy of @job, which then ends failed with @reason */
void vmr_engine_fail_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, const gchar *reason);
/*
 * An automatic pivot of @job (alone or with its group) was refused, e.g. by a
 * hypervisor connection that was down: tries again later, 1 s then twice as
 * long each time up to 30 s, while the job is still synced and its domain
 * connected. The copy stays in sync meanwhile: the source stays authoritative.
 */
void vmr_engine_pivot_retry_later (VmrEngine *self, VmrJob *job);

/*
 * Notes why @job's pivot was refused (@error): with no answer at all, the
 * hypervisor's connection broke first, and a QEMU that never answered
 * never switched the disk
 */
void vmr_engine_pivot_note_refusal (VmrJob *job, const GError *error);

/* engine-verify.c */

/* after a transition: a job that completed with verify set is verified */
void vmr_engine_verify_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* engine-converge.c */

/*
 * After a reading of @job's progress: keeps its backlog's recent samples;
 * a backlog that did not shrink over converge-after makes the copy converge
 * by converge-by, once, and a copy that ran past its deadline gets its
 * on-deadline, once.
 */
void vmr_engine_converge_progress (VmrEngine *self, DomainEntry *entry, VmrJob *job);

/* engine-group.c */

/* the jobs of @job's group, oldest first (transfer container); just @job if it has none */
GPtrArray *vmr_engine_group_members (VmrEngine *self, VmrJob *job);

/* the first member of @job's group that is not in sync, or NULL */
VmrJob *vmr_engine_group_laggard (VmrEngine *self, VmrJob *job);

/*
 * @job's copy is in sync: pivots it, or keeps it synced for a user's pivot,
 * or, in a group, waits for the others; the last member in sync cuts the
 * whole group over.
 */
void vmr_engine_job_in_sync (VmrEngine *self, DomainEntry *entry, VmrJob *job);

/* cuts every member of @job's group over, back to back; @task (consumed, may be NULL) */
void vmr_engine_pivot_group (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* cancels @job, whose group failed, as far as its state allows now */
void vmr_engine_group_cancel_member (VmrEngine *self, VmrJob *job);

/* after a transition: a member that ended without completing takes its group along */
void vmr_engine_group_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* engine-action.c */

/* a policy action on the way to the backend */
typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    VmrJobState next_state; /* after the command */
    gboolean resume_after_speed;
} VmrEngineAction;

/* a new action on @job, which is busy with the policy until it ends */
VmrEngineAction *vmr_engine_action_new (VmrEngine *self, VmrJob *job, VmrJobState next_state);

/*
 * Sends @command (@speed for a set-speed) for @action's job; when it is done
 * the job moves to the action's next state (after a resume when
 * resume_after_speed is set), and the action is freed.
 */
void vmr_engine_action_step (VmrEngineAction *action, VmrBackendCommand command, guint64 speed);

/* engine-neighbours.c */

/*
 * At @job's start: the baseline of each of its neighbours from its samples
 * before the copy; TRUE when one of them is busy (the copy is then no idle
 * guest's to run at full speed)
 */
gboolean vmr_engine_neighbours_start (VmrEngine *self, VmrJob *job,
                                      const VmrControllerConfig *config);

/*
 * While the controller measures (@job paused since its adaptive's
 * paused_us) and @own is the guest's sample: each neighbour's sample that
 * began within the pause becomes its baseline. FALSE when a busy neighbour
 * has no such sample yet and the pause is younger than two of @own's
 * intervals: the caller keeps the copy paused and waits for the next sample.
 */
gboolean vmr_engine_neighbours_measured (VmrEngine *self, VmrJob *job,
                                         const VmrControllerConfig *config,
                                         const VmrLoadSample *own);

/*
 * The neighbour harmed most now and more than @own_harm, copied to @worst
 * (its strings borrowed from the domain table and the policy until they
 * change), its index, or -1 for none; @needs_baseline is set when a
 * neighbour turned busy since its baseline. Each neighbour's harm is kept
 * for vmr_engine_neighbours_foreach().
 */
gint vmr_engine_neighbours_worst (VmrEngine *self, VmrJob *job, const VmrControllerConfig *config,
                                  gdouble own_harm, VmrNeighbour *worst, gboolean *needs_baseline);

typedef void (*VmrEngineNeighbourFunc) (const gchar *storage, const gchar *domain,
                                        const gchar *disk, gdouble harm, gpointer user_data);

/* calls @func with each neighbour @job knows and its harm at the last step */
void vmr_engine_neighbours_foreach (VmrJob *job, VmrEngineNeighbourFunc func, gpointer user_data);

/* engine-adaptive.c */

/*
 * The speed a new copy under control = adaptive starts at: the guest's
 * baseline is taken from the load before it, the controller starts afresh.
 */
guint64 vmr_engine_adaptive_start (VmrEngine *self, DomainEntry *entry, VmrJob *job,
                                   const VmrPolicyRule *rule);

/*
 * The controller's step for a running or measuring copy under control =
 * adaptive, after each load sample; TRUE when it took the job (the static
 * rules' speed decisions do not apply), FALSE when the static decision
 * @decision stands (a pause or a failure the rules want, or a user's speed).
 */
gboolean vmr_engine_adaptive_step (VmrEngine *self, DomainEntry *entry, VmrJob *job,
                                   const VmrPolicyRule *rule, const VmrPolicyDecision *decision);

/* the "controller" member of a job's policy object, or NULL for a static copy */
JsonObject *vmr_engine_adaptive_describe (VmrJob *job);

/* engine-policy.c */

/* the "policy" member of a job object: decision, reason, guest load */
JsonObject *vmr_engine_policy_describe_job (VmrEngine *self, VmrJob *job);

/*
 * The policy's load decision on @job, and its action; @task (consumed, may
 * be NULL) completes with the job when its copy runs or is held back.
 */
void vmr_engine_policy_evaluate (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* engine-cluster.c */

/*
 * Joins the cluster the policy names; after a reload, takes its new limits
 * at once, or connects again (a new lease, what runs registered first)
 * when the section names another cluster, etcd, credentials, host or lease
 * TTL, and leaves it when the section is gone.
 */
void vmr_engine_cluster_update (VmrEngine *self);

/* leaves the cluster (the lease expires by itself) */
void vmr_engine_cluster_clear (VmrEngine *self);

/*
 * Whether @job, which the host's limits let go, has a slot of the cluster;
 * TRUE without a cluster. FALSE sets @out_limit (static) and @out_reason.
 */
gboolean vmr_engine_cluster_admit (VmrEngine *self, VmrJob *job, const gchar **out_limit,
                                   gchar **out_reason);

/* @job runs a bulk copy: the cluster counts it, registered again if it must be */
void vmr_engine_cluster_hold (VmrEngine *self, VmrJob *job);

/*
 * Whether @job's bulk copy must stop, or stays stopped, for the cluster: its
 * slot went with a lease that could not be kept alive (cluster.h), or the
 * daemon paused it so and it has not taken a slot again
 */
gboolean vmr_engine_cluster_suspended (VmrEngine *self, VmrJob *job);

/* @job is no longer paused for the cluster: it copies, is in sync or ended */
void vmr_engine_cluster_forget_pause (VmrJob *job);

/* a job in sync or ended gives its slot back */
void vmr_engine_cluster_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* engine-admission.c */

/* whether @job copies in bulk in QEMU, or is starting to: what the limits count */
gboolean vmr_engine_job_holds_copy (VmrJob *job);

/*
 * Goes over the jobs that have not started, oldest first: a job the
 * admission limits hold stays as it is, with waiting_for set; the others
 * get the policy's load decision. @job and @task (consumed, may be NULL)
 * are a new job and the migrate call to complete when it starts or waits.
 */
void vmr_engine_admission_run (VmrEngine *self, VmrJob *job, GTask *task);

/* runs an admission pass from the main loop soon (a copy ended, the policy changed) */
void vmr_engine_admission_schedule (VmrEngine *self);

/*
 * The first decision on a new job: the limits, then the load; starts its
 * copy (completing @task, consumed, when it runs) or holds it back
 * (completing @task at once).
 */
void vmr_engine_admission_admit (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* after a transition: a copy that ended or is in sync frees a slot */
void vmr_engine_admission_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/* engine-space.c */

/* one new copy that the space check counts */
typedef struct {
    const VmrDestination *dest;
    const VmrDisk *disk;
} VmrEngineSpaceClaim;

/* the bytes a copy of @disk writes into @dest's file system: 0 unless @dest is a file */
guint64 vmr_engine_space_need (const VmrDestination *dest, const VmrDisk *disk);

/*
 * Whether the new copies @claims of @domain fit into their destinations'
 * file systems: what each writes (vmr_engine_space_need()) and the largest
 * space-margin, beside what the active copies to the same file system still
 * write. FALSE with one line when they do not and their space-check is
 * refuse; with warn the line is logged and the check passes.
 */
gboolean vmr_engine_space_check (VmrEngine *self, const gchar *domain,
                                 const VmrEngineSpaceClaim *claims, guint n_claims, GError **error);

/*
 * After a load sample: pauses the copies to a file system whose free space
 * falls below the space-margin (and what they may write until the next
 * look), and resumes the copies it paused once there is room again.
 */
void vmr_engine_space_watch (VmrEngine *self);

/* after a reading of @job's progress: a copy QEMU stopped on a full destination is paused */
void vmr_engine_space_progress (VmrEngine *self, DomainEntry *entry, VmrJob *job);

/* engine-sampling.c */

/* starts sampling the guest load of a newly known domain */
void vmr_engine_sampling_watch (VmrEngine *self, DomainEntry *entry);

/* (re)arms the domain's sample timer at its rules' smallest sample-interval */
void vmr_engine_sampling_schedule (VmrEngine *self, DomainEntry *entry);

/* @job ended: the last point of its timeline, saved with its record */
void vmr_engine_series_job_ended (VmrEngine *self, VmrJob *job);

/* engine-policy-file.c */

/* hands the policy's retention of finished jobs to the job table */
void vmr_engine_apply_retention (VmrEngine *self);

/* engine-adopt.c */

/* loads the records of the jobs an earlier run had not ended, orphaned */
void vmr_engine_load_unfinished (VmrEngine *self);

/* asks @entry's backend about the orphaned jobs of its domain, and carries on with them */
void vmr_engine_adopt_jobs (VmrEngine *self, DomainEntry *entry);

/* engine-cluster-evacuate.c: this host's parts of the cluster's evacuations */

/* a domain was added: a part that waits for the domains plans soon */
void vmr_engine_evacuations_domain_added (VmrEngine *self, DomainEntry *entry);

/* the cluster was joined: the evacuations are followed, when the daemon asked for them */
void vmr_engine_evacuations_cluster_joined (VmrEngine *self);

/* the cluster is being left: the parts under way are kept, and report again once joined */
void vmr_engine_evacuations_cluster_leaving (VmrEngine *self);

G_END_DECLS
