/*
 * bench-adaptive's figures: the workloads, what one job measured, every job
 * of a run, and the report with the targets (bench-adaptive-report.c).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the guest keeps at least this share of its IOPS: the knee of the static caps */
#define ADAPTIVE_KEEP_RATIO 0.95

/* a workload of the test guest */
typedef struct {
    const gchar *name;      /* for --workload */
    const gchar *load_args; /* the guest's command line; NULL: vmr.iops= the measured maximum */
    const gchar *what;      /* for the report */
    gboolean fixed_rate;    /* target (a) */
    gboolean bursty;        /* target (c): its IOPS are those of its busy seconds */
    gboolean idle;          /* target (d): no I/O, no IOPS, no caps */
    gboolean heavy;         /* target (e): writes faster than the copy may go; no caps */
} Workload;

/* how a job set the copy's speed */
typedef enum {
    JOB_UNLIMITED,         /* control = static, no speed */
    JOB_CAP,               /* control = static, speed = cap */
    JOB_ADAPTIVE,          /* control = adaptive, guest-impact = 5% */
    JOB_ADAPTIVE_GRANULAR, /* the same with --granularity's mirror granularity */
    /* the same, converge-after and a deadline, converge-by = speed or write-blocking */
    JOB_CONVERGE_SPEED,
    JOB_CONVERGE_BLOCKING,
} JobKind;

/* the deadline of the heavy writer's copies, seconds */
#define ADAPTIVE_HEAVY_DEADLINE_S 120

/* what one migration measured */
typedef struct {
    JobKind kind;
    guint cap_mib;       /* MiB/s, for JOB_CAP */
    gchar *granularity;  /* for JOB_ADAPTIVE_GRANULAR, as the policy says it */
    gdouble before_iops; /* the guest's, before `migrate`; -1 = no load */
    gdouble during_iops; /* `migrate` to `synced` */
    gdouble before_lat_us;
    gdouble during_lat_us;
    gdouble migration_s; /* `migrate` to `synced`, plus `job-pivot` to `completed` */
    gboolean timed_out;  /* no `synced` within the job limit: cancelled, the time a floor */
    gdouble mib_s;       /* the disk / migration_s */
    gchar *speeds;       /* the speed series, for the report */
    gchar *converged_by; /* the job's convergence, "speed" or "write-blocking"; NULL = none */
} JobResult;

void job_result_free (JobResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (JobResult, job_result_free)

/* during / before IOPS and latency, 0 when the guest had no load */
gdouble job_iops_ratio (const JobResult *result);
gdouble job_latency_ratio (const JobResult *result);

/* the guest's harm, as the controller counts it: max (latency ratio - 1, 1 - IOPS ratio) */
gdouble job_harm (const JobResult *result);

/* TRUE when the guest kept ADAPTIVE_KEEP_RATIO of its IOPS */
gboolean job_kept (const JobResult *result);

/* TRUE when it kept them and its latency within target (a)'s limit too */
gboolean job_gentle (const JobResult *result);

/* the jobs of one workload in one round */
typedef struct {
    const Workload *workload;
    guint round;
    guint fixed_iops;    /* the guest's rate when it was measured for this round, else 0 */
    GPtrArray *jobs;     /* of JobResult, in the order they ran */
    guint good_mib;      /* fastest cap that kept, 0 = none */
    guint bad_mib;       /* slowest cap that did not, 0 = none */
    gdouble steady_iops; /* the guest's before the first copy, 0 = not yet */
    guint floor_mib;     /* the slowest cap that lets the copy converge, MiB/s */
    gboolean no_knee;    /* the unlimited copy kept the guest's IOPS */
    /* fixed-rate workloads: the same bracket for the caps within (a), IOPS and latency */
    guint gentle_good_mib; /* fastest cap within (a), 0 = none */
    guint gentle_bad_mib;  /* slowest cap tried that was not */
    gchar *load_args;      /* the guest's kernel command line for its load */
    guint revived;         /* the guest went silent, and a second stop and cont revived it */
    guint restarted;       /* ... did not, and the guest was booted again on its disk */
} WorkloadRound;

WorkloadRound *workload_round_new (const Workload *workload, guint round);
void workload_round_free (WorkloadRound *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WorkloadRound, workload_round_free)

/* what the run is, and the column titles; then one line per job */
void adaptive_print_header (gint disk_mib, gboolean direct, const gchar *buf_size);
void adaptive_print_job (const WorkloadRound *round, const JobResult *result);

/* the knee of @round's caps, one line */
void adaptive_print_knee (const WorkloadRound *round, guint tolerance_mib);

/* the knee of @round's caps within (a), one line */
void adaptive_print_gentle_knee (const WorkloadRound *round, guint tolerance_mib);

/*
 * The targets over @rounds (of WorkloadRound, every workload of every
 * round), for the workloads in @workloads: medians and PASS/MISS, or no
 * verdict with fewer than VMR_BENCH_MIN_ROUNDS rounds.
 */
void adaptive_print_targets (GPtrArray *rounds, const Workload *const *workloads,
                             guint n_workloads);

G_END_DECLS
