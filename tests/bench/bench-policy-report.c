#define G_LOG_DOMAIN "vmr-bench"

#include "bench-policy.h"

#include <string.h>

#include "bench-series.h"

static const gchar *const variant_names[] = { "unthrottled", "policy" };

const gchar *
bench_policy_variant_name (Variant variant)
{
    return variant_names[variant];
}

void
bench_policy_run_result_clear (RunResult *result)
{
    g_free (result->states);
    g_free (result->decision);
    g_free (result->daemon_iops);
    memset (result, 0, sizeof (*result));
}

void
bench_policy_figures_init (Figures *figures)
{
    figures->before = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->during = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->after = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->ratio = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->migration_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->during_lat = g_array_new (FALSE, FALSE, sizeof (gdouble));
    figures->before_lat = g_array_new (FALSE, FALSE, sizeof (gdouble));
}

void
bench_policy_figures_clear (Figures *figures)
{
    g_clear_pointer (&figures->before, g_array_unref);
    g_clear_pointer (&figures->during, g_array_unref);
    g_clear_pointer (&figures->after, g_array_unref);
    g_clear_pointer (&figures->ratio, g_array_unref);
    g_clear_pointer (&figures->migration_s, g_array_unref);
    g_clear_pointer (&figures->during_lat, g_array_unref);
    g_clear_pointer (&figures->before_lat, g_array_unref);
}

void
bench_policy_figures_add (Figures *figures, const RunResult *result)
{
    gdouble ratio = result->before_iops > 0 ? result->during_iops / result->before_iops : 0;

    g_array_append_val (figures->before, result->before_iops);
    g_array_append_val (figures->during, result->during_iops);
    g_array_append_val (figures->after, result->after_iops);
    g_array_append_val (figures->ratio, ratio);
    g_array_append_val (figures->migration_s, result->migration_s);
    g_array_append_val (figures->during_lat, result->during_lat_us);
    g_array_append_val (figures->before_lat, result->before_lat_us);
}

void
bench_policy_print_run (guint round, Variant variant, const RunResult *result)
{
    g_print ("  %-5u %-12s %7.0f %7.0f %7.0f %7.2f %8.0f %8.0f %9.1f  %s\n", round,
             variant_names[variant], result->before_iops, result->during_iops, result->after_iops,
             result->before_iops > 0 ? result->during_iops / result->before_iops : 0,
             result->before_lat_us, result->during_lat_us, result->migration_s, result->states);
    g_print ("  %-5s %-12s policy: last action %s; guest IOPS seen by the daemon: %s\n", "", "",
             result->decision, result->daemon_iops);
    g_print ("  %-5s %-12s guest paused %.1f s for the pivot and the byte check; destination "
             "equals source: yes\n",
             "", "", result->paused_s);
    if (result->during_lines < 3)
        g_print ("  %-5s %-12s (only %u VMR-IOPS lines during the copy: a rough figure)\n", "", "",
                 result->during_lines);
}

void
bench_policy_print_summary (const Figures figures[N_VARIANTS], Variant first, gdouble target)
{
    const Figures *policy = &figures[VARIANT_POLICY];
    gdouble unthrottled_time = vmr_bench_median (figures[VARIANT_UNTHROTTLED].migration_s);
    gdouble policy_time = vmr_bench_median (policy->migration_s);
    gdouble policy_ratio = vmr_bench_median (policy->ratio);
    g_autoptr (GString) ratios = g_string_new (NULL);

    g_print ("  median over %u round(s):\n", policy->ratio->len);
    for (Variant v = first; v < N_VARIANTS; v++)
        g_print ("    %-12s before %5.0f IOPS, during %5.0f, after %5.0f; during/before %.2f; "
                 "latency %.0f -> %.0f us; migration %.1f s\n",
                 variant_names[v], vmr_bench_median (figures[v].before),
                 vmr_bench_median (figures[v].during), vmr_bench_median (figures[v].after),
                 vmr_bench_median (figures[v].ratio), vmr_bench_median (figures[v].before_lat),
                 vmr_bench_median (figures[v].during_lat),
                 vmr_bench_median (figures[v].migration_s));
    if (unthrottled_time > 0)
        g_print ("    migration time policy/unthrottled: %.2f\n", policy_time / unthrottled_time);
    for (guint i = 0; i < policy->ratio->len; i++)
        g_string_append_printf (ratios, " %.2f", g_array_index (policy->ratio, gdouble, i));
    g_print ("    policy during/before per round:%s\n", ratios->str);
    g_print (
        "    target: with the policy, IOPS during >= %.0f%% of before, in each round "
        "(median %.0f%%): %s\n",
        target * 100, policy_ratio * 100,
        vmr_bench_verdict_rounds (vmr_bench_rounds_met (policy->ratio, VMR_BENCH_AT_LEAST, target),
                                  policy->ratio->len));
}
