/*
 * The figures of one measure for the two variants of a benchmark, one value
 * per round, and the report lines made of them.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    VMR_BENCH_BARE, /* QEMU driven directly over QMP: the baseline */
    VMR_BENCH_VMR,  /* QEMU driven by virt-mirrord */
    VMR_BENCH_N_VARIANTS,
} VmrBenchVariant;

/* "bare QMP" or "virt-mirror" */
const gchar *vmr_bench_variant_name (VmrBenchVariant variant);

typedef struct {
    GArray *values[VMR_BENCH_N_VARIANTS]; /* of gdouble, one per round */
} VmrBenchSeries;

void vmr_bench_series_init (VmrBenchSeries *series);
void vmr_bench_series_clear (VmrBenchSeries *series);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VmrBenchSeries, vmr_bench_series_clear)

void vmr_bench_series_add (VmrBenchSeries *series, VmrBenchVariant variant, gdouble value);

/* orders two gdoubles, for g_array_sort() */
gint vmr_bench_compare_doubles (gconstpointer a, gconstpointer b);

/* the median of @values (of gdouble), 0 when there are none */
gdouble vmr_bench_median (GArray *values);

/* the median of @variant's values, 0 when there are none */
gdouble vmr_bench_series_median (const VmrBenchSeries *series, VmrBenchVariant variant);

/*
 * vmr/bare of each round, in round order (of gdouble; free with
 * g_array_unref()). A round pairs a bare run with the vmr run next to it
 * (the order alternates, vmr_bench_round_order()), so its ratio cancels
 * load that drifts across rounds.
 */
GArray *vmr_bench_series_ratios (const VmrBenchSeries *series);

/*
 * The median of the per-round ratios above, 0 when there are none: the
 * figure the verdicts compare with a target. Not the ratio of the two
 * medians, which can pair a bare run of one round with a vmr run of another.
 */
gdouble vmr_bench_series_paired_ratio (const VmrBenchSeries *series);

/* the fewest rounds for a verdict: with fewer, one odd round decides */
#define VMR_BENCH_MIN_ROUNDS 3

/* how a round's figure meets its target */
typedef enum {
    VMR_BENCH_AT_MOST,  /* figure <= target */
    VMR_BENCH_UNDER,    /* figure < target */
    VMR_BENCH_AT_LEAST, /* figure >= target */
} VmrBenchBound;

/* whether @value meets @target as @bound says */
gboolean vmr_bench_meets (gdouble value, VmrBenchBound bound, gdouble target);

/* the rounds among @values (of gdouble, one per round) that meet @target as @bound says */
guint vmr_bench_rounds_met (GArray *values, VmrBenchBound bound, gdouble target);

/* whether @met rounds of @rounds are at least two thirds of them: a target passes */
gboolean vmr_bench_rounds_pass (guint met, guint rounds);

/*
 * The verdict on a target judged in each of @rounds rounds, @met of which
 * met it: "PASS (2 of 3 rounds)" when at least two thirds of them did,
 * "MISS (1 of 3 rounds)" otherwise; "no verdict (needs >= 3 rounds)" with
 * fewer rounds. A MISS counts for vmr_bench_exit_status(). The string is
 * interned: never freed.
 */
const gchar *vmr_bench_verdict_rounds (guint met, guint rounds);

/*
 * "PASS" or "MISS" after @met, for a bench of one run with no rounds (its
 * targets judged on that run alone); a MISS counts for vmr_bench_exit_status()
 */
const gchar *vmr_bench_verdict_once (gboolean met);

/* a bench's exit status when it ran to its end: 3 when any verdict was a MISS, 0 otherwise */
#define VMR_BENCH_EXIT_MISS 3
gint vmr_bench_exit_status (void);

/*
 * The order in which round @round (from 0) runs @n variants, into @order:
 * rotated by one each round, so that each variant runs first as often as
 * the others (two variants: AB, BA, AB...), and a drift of the host's load
 * over the rounds does not always favour the same one.
 */
void vmr_bench_round_order (guint round, guint n, guint *order);

/* the column titles for vmr_bench_series_print_row() */
void vmr_bench_print_header (void);

/*
 * The medians of both variants with @decimals, the median of the per-round
 * ratios, @target and @verdict.
 */
void vmr_bench_series_print_row (const VmrBenchSeries *series, const gchar *what, gint decimals,
                                 const gchar *target, const gchar *verdict);

/* every round's value, one line per variant, then every round's ratio */
void vmr_bench_series_print_rounds (const VmrBenchSeries *series, gint decimals);

G_END_DECLS
