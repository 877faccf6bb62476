#define G_LOG_DOMAIN "vmr-bench"

#include "bench-series.h"

static const gchar *const variant_names[VMR_BENCH_N_VARIANTS] = { "bare QMP", "virt-mirror" };

const gchar *
vmr_bench_variant_name (VmrBenchVariant variant)
{
    return variant_names[variant];
}

void
vmr_bench_series_init (VmrBenchSeries *series)
{
    for (guint v = 0; v < VMR_BENCH_N_VARIANTS; v++)
        series->values[v] = g_array_new (FALSE, FALSE, sizeof (gdouble));
}

void
vmr_bench_series_clear (VmrBenchSeries *series)
{
    for (guint v = 0; v < VMR_BENCH_N_VARIANTS; v++)
        g_clear_pointer (&series->values[v], g_array_unref);
}

void
vmr_bench_series_add (VmrBenchSeries *series, VmrBenchVariant variant, gdouble value)
{
    g_array_append_val (series->values[variant], value);
}

gint
vmr_bench_compare_doubles (gconstpointer a, gconstpointer b)
{
    gdouble x = *(const gdouble *) a;
    gdouble y = *(const gdouble *) b;

    return x < y ? -1 : x > y ? 1 : 0;
}

static gdouble
median (GArray *values)
{
    g_autoptr (GArray) sorted = g_array_copy (values);
    guint n = sorted->len;

    if (n == 0)
        return 0.0;
    g_array_sort (sorted, vmr_bench_compare_doubles);
    if (n % 2 == 1)
        return g_array_index (sorted, gdouble, n / 2);
    return (g_array_index (sorted, gdouble, n / 2 - 1) + g_array_index (sorted, gdouble, n / 2))
           / 2.0;
}

gdouble
vmr_bench_median (GArray *values)
{
    return median (values);
}

gdouble
vmr_bench_series_median (const VmrBenchSeries *series, VmrBenchVariant variant)
{
    return median (series->values[variant]);
}

GArray *
vmr_bench_series_ratios (const VmrBenchSeries *series)
{
    GArray *bare = series->values[VMR_BENCH_BARE];
    GArray *vmr = series->values[VMR_BENCH_VMR];
    GArray *ratios = g_array_new (FALSE, FALSE, sizeof (gdouble));

    for (guint i = 0; i < bare->len && i < vmr->len; i++) {
        gdouble b = g_array_index (bare, gdouble, i);
        gdouble ratio = b > 0.0 ? g_array_index (vmr, gdouble, i) / b : 0.0;

        g_array_append_val (ratios, ratio);
    }
    return ratios;
}

gdouble
vmr_bench_series_paired_ratio (const VmrBenchSeries *series)
{
    g_autoptr (GArray) ratios = vmr_bench_series_ratios (series);

    return median (ratios);
}

/* the verdicts that were a MISS, for the exit status */
static guint missed_verdicts;

gboolean
vmr_bench_meets (gdouble value, VmrBenchBound bound, gdouble target)
{
    switch (bound) {
        case VMR_BENCH_AT_MOST:
            return value <= target;
        case VMR_BENCH_UNDER:
            return value < target;
        case VMR_BENCH_AT_LEAST:
            return value >= target;
    }
    g_assert_not_reached ();
}

guint
vmr_bench_rounds_met (GArray *values, VmrBenchBound bound, gdouble target)
{
    guint met = 0;

    for (guint i = 0; i < values->len; i++)
        met += vmr_bench_meets (g_array_index (values, gdouble, i), bound, target);
    return met;
}

gboolean
vmr_bench_rounds_pass (guint met, guint rounds)
{
    return 3 * met >= 2 * rounds;
}

const gchar *
vmr_bench_verdict_rounds (guint met, guint rounds)
{
    g_autofree gchar *verdict = NULL;
    gboolean passed = vmr_bench_rounds_pass (met, rounds);

    if (rounds < VMR_BENCH_MIN_ROUNDS)
        return "no verdict (needs >= " G_STRINGIFY (VMR_BENCH_MIN_ROUNDS) " rounds)";
    if (!passed)
        missed_verdicts++;
    verdict = g_strdup_printf ("%s (%u of %u rounds)", passed ? "PASS" : "MISS", met, rounds);
    return g_intern_string (verdict);
}

const gchar *
vmr_bench_verdict_once (gboolean met)
{
    if (!met)
        missed_verdicts++;
    return met ? "PASS" : "MISS";
}

gint
vmr_bench_exit_status (void)
{
    return missed_verdicts > 0 ? VMR_BENCH_EXIT_MISS : 0;
}

void
vmr_bench_round_order (guint round, guint n, guint *order)
{
    for (guint i = 0; i < n; i++)
        order[i] = (i + round) % n;
}

void
vmr_bench_print_header (void)
{
    g_print ("  %-27s %10s %12s %9s   target\n", "median", variant_names[VMR_BENCH_BARE],
             variant_names[VMR_BENCH_VMR], "vmr/bare");
    g_print ("  %-27s %10s %12s %9s\n", "", "", "", "(paired)");
}

void
vmr_bench_series_print_row (const VmrBenchSeries *series, const gchar *what, gint decimals,
                            const gchar *target, const gchar *verdict)
{
    gdouble bare = vmr_bench_series_median (series, VMR_BENCH_BARE);
    gdouble vmr = vmr_bench_series_median (series, VMR_BENCH_VMR);
    gdouble paired = vmr_bench_series_paired_ratio (series);
    g_autofree gchar *ratio = paired > 0.0 ? g_strdup_printf ("%.3f", paired) : g_strdup ("-");

    g_print ("  %-27s %10.*f %12.*f %9s   %-9s %s\n", what, decimals, bare, decimals, vmr, ratio,
             target, verdict);
}

static void
print_values (const gchar *what, GArray *values, gint decimals)
{
    g_autoptr (GString) line = g_string_new (NULL);

    for (guint i = 0; i < values->len; i++)
        g_string_append_printf (line, " %.*f", decimals, g_array_index (values, gdouble, i));
    g_print ("    %-11s rounds:%s\n", what, line->str);
}

void
vmr_bench_series_print_rounds (const VmrBenchSeries *series, gint decimals)
{
    g_autoptr (GArray) ratios = vmr_bench_series_ratios (series);

    for (guint v = 0; v < VMR_BENCH_N_VARIANTS; v++)
        print_values (variant_names[v], series->values[v], decimals);
    print_values ("vmr/bare", ratios, 3);
}
