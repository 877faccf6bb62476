/*
 * The engine's statistics: a typed snapshot of every job, of the guests'
 * latest load, of the I/O threads' CPU time and of the engine's counters,
 * for whoever publishes them (the metrics of daemon/api/). Taking one reads
 * what the engine holds and asks no backend anything.
 */
#pragma once

#include "engine.h"

G_BEGIN_DECLS

/* one job as the statistics see it */
typedef struct {
    gchar *id;
    gchar *domain;
    gchar *disk;
    VmrJobState state;
    gchar *backend;          /* "qmp", "libvirt"; "" when the domain is no longer known */
    guint64 total_bytes;     /* what the copy moves (the hypervisor's len), 0 before it says */
    guint64 processed_bytes; /* what it has copied (offset) */
    guint64 remaining_bytes; /* total - processed: the backlog */
    gdouble rate;            /* bytes/s, smoothed; 0 when the copy does not run */
    guint64 speed_limit;     /* bytes/s, 0 = unlimited */
    gint64 start_time_us;    /* wall clock: when the copy started, 0 = it has not */
    gint64 end_time_us;      /* wall clock: when the job ended, 0 = it has not */
} VmrJobStats;

/* one guest disk's latest load sample */
typedef struct {
    gchar *domain;
    gchar *disk;
    gdouble iops;              /* guest reads + writes per second */
    gdouble latency_s;         /* mean latency of one guest request, 0 without I/O */
    gint64 sample_time_us;     /* wall clock: when the sample's interval ended */
    gdouble sample_interval_s; /* the interval's length */
} VmrDiskStats;

/* one I/O thread of a domain */
typedef struct {
    gchar *domain;
    gchar *iothread;
    gdouble cpu_seconds; /* user + system time of its host thread since it started */
} VmrIothreadStats;

/* how often the policy made one decision */
typedef struct {
    gchar *action; /* "throttle", "wait", "back-off", ... */
    guint64 count;
} VmrDecisionStats;

/* one [storage NAME] section of the policy, with a budget or without */
typedef struct {
    gchar *name;
    guint64 budget_bytes; /* bytes/s for all the copies on it together, 0 = none */
    guint64 used_bytes;   /* bytes/s: the sum of the speeds set on the copies holding it */
} VmrStorageStats;

/* a guest disk on the storage of a running copy, as the copies' controllers last read it */
typedef struct {
    gchar *storage;
    gchar *domain;
    gchar *disk;
    gdouble harm; /* the largest harm a copy on its storage read of it, against its baseline */
} VmrNeighbourStats;

typedef struct {
    gint64 time_us;        /* wall clock of the snapshot */
    GPtrArray *jobs;       /* of VmrJobStats *, every job the daemon keeps, oldest first */
    GPtrArray *disks;      /* of VmrDiskStats *, the disks with a load sample, by domain */
    GPtrArray *iothreads;  /* of VmrIothreadStats *, by domain; none for a backend without */
    GPtrArray *decisions;  /* of VmrDecisionStats *, by action name */
    GPtrArray *storages;   /* of VmrStorageStats *, in the policy's order */
    GPtrArray *neighbours; /* of VmrNeighbourStats *, by storage, domain and disk */
    guint jobs_by_state[VMR_JOB_STATE_LAST]; /* the jobs of @jobs in each state */
    /* the jobs that ended since the daemon started: completed, failed, cancelled */
    guint64 jobs_ended[VMR_JOB_STATE_LAST - VMR_JOB_STATE_COMPLETED];
} VmrEngineStats;

/* an empty snapshot, for those who build one themselves (the tests) */
VmrEngineStats *vmr_engine_stats_new (void);
void vmr_engine_stats_free (VmrEngineStats *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrEngineStats, vmr_engine_stats_free)

/* the engine's statistics now; free with vmr_engine_stats_free() */
VmrEngineStats *vmr_engine_get_stats (VmrEngine *self);

G_END_DECLS
