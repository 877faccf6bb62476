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
 * The median over the rounds of vmr/bare. A round pairs a bare run with the
 * vmr run right after it, so this cancels load that drifts across rounds.
 */
gdouble vmr_bench_series_paired_ratio (const VmrBenchSeries *series);

/* the column titles for vmr_bench_series_print_row() */
void vmr_bench_print_header (void);

/* medians with @decimals, their ratio vmr/bare, @target and PASS or MISS after @met */
void vmr_bench_series_print_row (const VmrBenchSeries *series, const gchar *what, gint decimals,
                                 const gchar *target, gboolean met);

/* every round's value, one line per variant */
void vmr_bench_series_print_rounds (const VmrBenchSeries *series, gint decimals);

G_END_DECLS
