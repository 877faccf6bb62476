/*
 * What the parts of the engine share: engine.c (jobs and migrations),
 * engine-domains.c (domains and their backends' events), engine-commands.c
 * (commands on jobs), engine-policy.c (load sampling and the policy's
 * decisions) and engine-admission.c (the limits on copies running at once).
 */
#pragma once

#include "engine.h"
#include "load-history.h"
#include "policy.h"

G_BEGIN_DECLS

/* how often a running copy's progress is read from QEMU */
#define PROGRESS_INTERVAL_MS 500

typedef struct {
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
} DomainEntry;

struct _VmrEngine {
    GObject parent_instance;

    gchar *state_dir;
    GHashTable *domains;  /* name -> DomainEntry *, owned */
    GHashTable *jobs;     /* id -> VmrJob *, owned */
    GPtrArray *job_order; /* of VmrJob *, owned, oldest first */
    GHashTable *waiters;  /* job id -> GPtrArray of GTask * waiting for the end */
    guint last_job_number;

    VmrPolicy *policy;
    gchar *policy_path;     /* NULL: built-in values only */
    gint64 policy_loaded;   /* when the policy in force was read, µs since the epoch */
    gint64 policy_refused;  /* when a reload was last refused after that, or 0 */
    gchar *policy_refusal;  /* why, or NULL */
    guint admission_source; /* an admission pass is due */
};

/* writes @job's record; a failure is logged */
void vmr_engine_save_job (VmrEngine *self, VmrJob *job);

/* moves @job to @state: logs it, saves the record and tells the watchers */
gboolean vmr_engine_set_job_state (VmrEngine *self, VmrJob *job, VmrJobState state,
                                   const gchar *reason);

gboolean vmr_engine_job_is_active (VmrJob *job);

/* the unfinished job on @disk of @domain, or NULL */
VmrJob *vmr_engine_active_job_for_disk (VmrEngine *self, const gchar *domain, const gchar *disk);

/* the unfinished job that writes @destination, or NULL */
VmrJob *vmr_engine_active_job_for_destination (VmrEngine *self, const gchar *destination);

/* the domain @name, or NULL with VMR_ERROR_NOT_FOUND */
DomainEntry *vmr_engine_lookup_domain (VmrEngine *self, const gchar *name, GError **error);

/* starts or stops the domain's progress timer as its jobs need */
void vmr_engine_update_timers (VmrEngine *self, DomainEntry *entry);

/* cuts @job over; @task (consumed, may be NULL) completes when QEMU accepted */
void vmr_engine_pivot_job (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* completes @task (consumed) with the job once it has ended */
void vmr_engine_add_waiter (VmrEngine *self, VmrJob *job, GTask *task);

/*
 * Starts the copy of a queued or delayed @job at @speed (bytes/s, 0 =
 * unlimited) into @state (copying or throttled). @task (consumed, may be
 * NULL) completes with the job once QEMU runs the mirror.
 */
void vmr_engine_start_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, guint64 speed,
                            VmrJobState state, GTask *task);

/* engine-policy.c */

/* starts sampling the guest load of a newly attached domain */
void vmr_engine_policy_watch (VmrEngine *self, DomainEntry *entry);

/* frees what the policy keeps of a domain */
void vmr_engine_policy_forget (DomainEntry *entry);

/*
 * The first decision on a new job: starts its copy (completing @task, consumed,
 * when it runs) or holds it back (completing @task at once).
 */
void vmr_engine_policy_admit (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

/* the "policy" member of a job object: decision, reason, guest load */
JsonObject *vmr_engine_policy_describe_job (VmrEngine *self, VmrJob *job);

/* tells the policy that a job's state changed on its own (held time) */
void vmr_engine_policy_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous);

/*
 * The policy's load decision on @job, and its action; @task (consumed, may
 * be NULL) as in vmr_engine_policy_admit()
 */
void vmr_engine_policy_evaluate (VmrEngine *self, DomainEntry *entry, VmrJob *job, GTask *task);

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

/* engine-adopt.c */

/* loads the records of the jobs an earlier run had not ended, orphaned */
void vmr_engine_load_unfinished (VmrEngine *self);

/* asks @entry's backend about the orphaned jobs of its domain, and carries on with them */
void vmr_engine_adopt_jobs (VmrEngine *self, DomainEntry *entry);

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

/* a member of a group ended: if it did not complete, the others are cancelled */
void vmr_engine_group_member_ended (VmrEngine *self, VmrJob *job);

/* cancels @job, whose group failed, as far as its state allows now */
void vmr_engine_group_cancel_member (VmrEngine *self, VmrJob *job);

G_END_DECLS
