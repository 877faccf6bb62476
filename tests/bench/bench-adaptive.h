/*
 * bench-adaptive's figures: the workloads, what one job measured, every job
 * of a run, and the report with the targets (bench-adaptive-report.c).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* F2, F3: the adaptive copy's time (or harm x time) against the frontier's, at most */
#define ADAPTIVE_FRONTIER_SLACK 1.2
/* the static caps bracketing the adaptive copy's harm are at most this share of the faster apart */
#define ADAPTIVE_BRACKET_SPREAD 0.15
/* the guest's I/O size, for its bytes/s on the shared array */
#define ADAPTIVE_GUEST_IO_BYTES 8192

/* a workload of the test guest */
typedef struct {
    const gchar *name;      /* for --workload */
    const gchar *load_args; /* the guest's command line; NULL: vmr.iops= the measured maximum */
    const gchar *what;      /* for the report */
    gboolean fixed_rate;    /* at a fixed rate */
    gboolean bursty;        /* its IOPS are those of its busy seconds */
    gboolean idle;          /* (D): no I/O, no IOPS, no caps */
    gboolean heavy;         /* writes faster than the copy may go; no caps */
    gboolean full_load;     /* (S) on the shared array: the guest at its maximum */
} Workload;

/* how a job set the copy's speed */
typedef enum {
    JOB_UNLIMITED,         /* control = static, no speed */
    JOB_CAP,               /* control = static, speed = cap */
    JOB_ADAPTIVE,          /* control = adaptive, guest-impact = the target X */
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
    gdouble before_iops; /* the guest's fio, before `migrate`; -1 = no load */
    gdouble during_iops; /* `migrate` to `synced` */
    gdouble before_lat_us;
    gdouble during_lat_us;
    /* the same spans as QEMU's blockstats of the guest's device count them; -1 = no figure */
    gdouble qemu_before_iops;
    gdouble qemu_during_iops;
    gdouble qemu_before_lat_us;
    gdouble qemu_during_lat_us;
    gdouble migration_s; /* `migrate` to `synced`, plus `job-pivot` to `completed` */
    gboolean timed_out;  /* no `synced` within the job limit: cancelled, the time a floor */
    gdouble mib_s;       /* the disk / migration_s */
    gchar *speeds;       /* the speed series, for the report */
    gchar *converged_by; /* the job's convergence, "speed" or "write-blocking"; NULL = none */
} JobResult;

void job_result_free (JobResult *result);
/* what a job was, for a report: "adaptive", "unlimited", "cap 64M", ...; free with g_free() */
gchar *job_result_name (const JobResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (JobResult, job_result_free)

/* the guest's harm in the copy as its fio saw it, and as QEMU's blockstats did */
gdouble job_harm_fio (const JobResult *result);
gdouble job_harm_qemu (const JobResult *result);

/* the harm the verdicts judge: the larger of the two views */
gdouble job_harm (const JobResult *result);

/* a static copy (unlimited or a cap) that reached `synced` */
gboolean job_static_converged (const JobResult *result);

/* the jobs of one workload in one round */
typedef struct {
    const Workload *workload;
    guint round;
    guint fixed_iops;        /* the guest's rate when it was measured for this round, else 0 */
    GPtrArray *jobs;         /* of JobResult, in the order they ran */
    gdouble steady_iops;     /* the guest's before the first copy, 0 = not yet */
    guint floor_mib;         /* the slowest cap that lets the copy converge, MiB/s */
    guint caps_tried;        /* static caps run in this round */
    gboolean adaptive_first; /* the round's order: the adaptive copy before the static ones */
    gchar *load_args;        /* the guest's kernel command line for its load */
    guint revived;           /* the guest went silent, and a second stop and cont revived it */
    guint restarted;         /* ... did not, and the guest was booted again on its disk */
} WorkloadRound;

WorkloadRound *workload_round_new (const Workload *workload, guint round);
void workload_round_free (WorkloadRound *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WorkloadRound, workload_round_free)

/*
 * The noise of @round: the spread of its pre-copy windows (the baselines
 * of its jobs), each window's largest |ratio - 1| of IOPS or latency, in
 * either view, against the medians of all of them; the median of those
 */
gdouble workload_round_noise (const WorkloadRound *round);

/*
 * The static points of @round around @harm: among those that converged,
 * the fastest (by its time, or by its speed with @by_speed) with a harm of
 * at most @harm (*@out_gentle, NULL = none) and the gentlest with more (the
 * slowest with @by_speed: the bisection's upper end) (*@out_harsh, NULL = none)
 */
void workload_round_bracket (const WorkloadRound *round, gdouble harm, gboolean by_speed,
                             const JobResult **out_gentle, const JobResult **out_harsh);

/* the speed of a static point: its cap, or the unlimited copy's MiB/s */
gdouble job_static_speed (const JobResult *result);

/* what the verdicts judge against */
typedef struct {
    gdouble target;       /* X, the adaptive copy's guest-impact, a fraction */
    gdouble max_harm;     /* the policy's max-harm, a fraction */
    gboolean shared;      /* the storage is the shared array */
    gdouble budget_mib;   /* its budget, MiB/s */
    const gchar *storage; /* the profile's name */
} AdaptiveYardstick;

/*
 * The frontier's time at @harm, read off linearly between the static points
 * of @round around it (the fastest at most as harsh, the gentlest harsher);
 * the fastest gentler one's time with no harsher one that is faster; the
 * gentlest one's time when every static copy is harsher; 0 with no static
 * copy that converged. Appends the reading to @text.
 */
gdouble workload_round_frontier_time (const WorkloadRound *round, gdouble harm, GString *text);

/* where the adaptive copy of a round stands against the round's static frontier */
typedef struct {
    gdouble harm;            /* the adaptive copy's, the larger view */
    gdouble noise;           /* workload_round_noise () */
    gboolean f1_met;         /* it converged, its harm <= X + the noise */
    gboolean f2_applies;     /* a static copy that converged had a harm <= X; F3 otherwise */
    gboolean f2_met;         /* it converged, its time <= ADAPTIVE_FRONTIER_SLACK x frontier_s */
    gdouble frontier_s;      /* workload_round_frontier_time () at its harm */
    gboolean f3_met;         /* under max-harm, harm x time <= the slack x the least static's */
    gdouble product;         /* its harm x time */
    gdouble least_product;   /* the least static copy's under max-harm, -1 = none */
    const JobResult *gentle; /* the bracketing static points (workload_round_bracket ()) */
    const JobResult *harsh;
    const JobResult *dominating; /* a static copy no harsher and no slower, NULL = none */
} FrontierJudgement;

/*
 * Judges @adaptive, a job of @round, against the static copies of @round:
 * fills @out (whose pointers point into @round) and appends the frontier's
 * reading to @text.
 */
void adaptive_judge_frontier (const WorkloadRound *round, const JobResult *adaptive,
                              const AdaptiveYardstick *yardstick, FrontierJudgement *out,
                              GString *text);

/* what the run is, and the column titles; then one line per job */
void adaptive_print_header (gint disk_mib, gboolean direct, const gchar *buf_size,
                            const AdaptiveYardstick *yardstick);
void adaptive_print_job (const WorkloadRound *round, const JobResult *result);

/*
 * The verdicts F1, F2, F3, D and S of each round in @rounds (of
 * WorkloadRound, every workload of every round), a line a round, then per
 * workload of @workloads: PASS when at least 2 of 3 rounds passed (a
 * single round's verdict alone with fewer rounds); a MISS counts for the
 * exit status.
 */
void adaptive_print_verdicts (GPtrArray *rounds, const Workload *const *workloads,
                              guint n_workloads, const AdaptiveYardstick *yardstick);

/*
 * The picture of @round for --svg: @report_svg (the adaptive copy's
 * `virt-mirror report --svg`, NULL = none) above the (harm, time) points of
 * the round's copies. Free with g_free().
 */
gchar *adaptive_frontier_svg (const WorkloadRound *round, const gchar *report_svg,
                              const AdaptiveYardstick *yardstick);

G_END_DECLS
