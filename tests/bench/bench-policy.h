/*
 * bench-policy's figures: what one run measured, every run of a variant,
 * and the report made of them (bench-policy-report.c).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    VARIANT_UNTHROTTLED,
    VARIANT_POLICY,
    N_VARIANTS,
} Variant;

/* "unthrottled" or "policy" */
const gchar *bench_policy_variant_name (Variant variant);

/* what one run measured */
typedef struct {
    gdouble before_iops; /* the baseline, before the migration */
    gdouble during_iops; /* from `migrate` to `synced`: the copy, the guest running */
    gdouble after_iops;  /* after the pivot */
    gdouble before_lat_us;
    gdouble during_lat_us;
    gdouble after_lat_us;
    guint during_lines;  /* VMR-IOPS lines that fell in the copy */
    gdouble migration_s; /* `migrate` to `synced`, plus `job-pivot` to `completed` */
    gdouble paused_s;    /* the guest paused: the pivot and the byte check */
    gchar *states;       /* the job's history, e.g. "copying synced pivoting completed" */
    gchar *decision;     /* the policy's last action, "-" for none */
    gchar *daemon_iops;  /* the guest IOPS the daemon saw last (policy.guest-iops) */
} RunResult;

void bench_policy_run_result_clear (RunResult *result);

/* the figures of every run of one variant, one value per run */
typedef struct {
    GArray *before;      /* IOPS */
    GArray *during;      /* IOPS */
    GArray *after;       /* IOPS */
    GArray *ratio;       /* during / before, per run */
    GArray *migration_s; /* seconds */
    GArray *during_lat;  /* microseconds */
    GArray *before_lat;  /* microseconds */
} Figures;

void bench_policy_figures_init (Figures *figures);
void bench_policy_figures_clear (Figures *figures);
void bench_policy_figures_add (Figures *figures, const RunResult *result);

/* the two lines of one run */
void bench_policy_print_run (guint round, Variant variant, const RunResult *result);

/*
 * The medians over the rounds of each variant from @first, and the verdict:
 * with the policy, the median of the per-run during/before against @target,
 * given when the policy variant ran at least VMR_BENCH_MIN_ROUNDS times.
 */
void bench_policy_print_summary (const Figures figures[N_VARIANTS], Variant first, gdouble target);

G_END_DECLS
