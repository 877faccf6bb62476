/*
 * frontier-verdict: the static frontier's verdict on one adaptive copy,
 * from the figures of a run that made it and two or more static copies of
 * the same disk under the same guest load (scripts/demo). The arithmetic is
 * bench-adaptive's (bench-adaptive-report.c).
 *
 *   frontier-verdict --guest-impact PCT [--max-harm PCT] --disk-mib N
 *                    --fio FILE --qemu FILE COPY...
 *
 * FILE: the guest's samples, "END IOPS LAT_US [SPAN]" a line, as its fio
 * (1 s each) and QEMU's blockstats of its device saw them. COPY:
 * "KIND,BEFORE,START,END[,timed-out]": KIND adaptive, unlimited or capN
 * (MiB/s); the pre-copy window from BEFORE to START, the copy from START
 * to END (in sync), in seconds on the samples' clock.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-adaptive.h"
#include "bench-samples.h"

#include "vmr-error.h"

#include <string.h>

/* a percentage "N%" as a fraction */
static gboolean
parse_percent (const gchar *text, gdouble *out)
{
    gchar *end = NULL;

    *out = g_ascii_strtod (text, &end) / 100;
    return end != text && g_strcmp0 (end, "%") == 0 && *out >= 0;
}

/* KIND of a COPY into @result */
static gboolean
parse_kind (const gchar *kind, JobResult *result)
{
    guint64 cap = 0;

    if (g_strcmp0 (kind, "adaptive") == 0)
        result->kind = JOB_ADAPTIVE;
    else if (g_strcmp0 (kind, "unlimited") == 0)
        result->kind = JOB_UNLIMITED;
    else if (g_str_has_prefix (kind, "cap")
             && g_ascii_string_to_unsigned (kind + 3, 10, 1, G_MAXUINT, &cap, NULL)) {
        result->kind = JOB_CAP;
        result->cap_mib = cap;
    } else
        return FALSE;
    return TRUE;
}

/* the means of the guest's samples before and during the copy from @before to @start to @end */
static void
measure (JobResult *result, GArray *fio, GArray *qemu, gdouble before, gdouble start, gdouble end)
{
    result->before_iops = bench_samples_mean (fio, before, start, &result->before_lat_us);
    result->during_iops = bench_samples_mean (fio, start, end, &result->during_lat_us);
    result->qemu_before_iops
        = bench_samples_mean (qemu, before, start, &result->qemu_before_lat_us);
    result->qemu_during_iops = bench_samples_mean (qemu, start, end, &result->qemu_during_lat_us);
}

/* the fields of a COPY argument into @result and @times (BEFORE, START, END) */
static gboolean
parse_fields (GStrv fields, JobResult *result, gdouble *times)
{
    guint n = g_strv_length (fields);

    if ((n != 4 && n != 5) || !parse_kind (fields[0], result)
        || (n == 5 && g_strcmp0 (fields[4], "timed-out") != 0))
        return FALSE;
    for (guint i = 0; i < 3; i++) {
        gchar *end = NULL;

        times[i] = g_ascii_strtod (fields[i + 1], &end);
        if (end == fields[i + 1] || *end != '\0')
            return FALSE;
    }
    result->timed_out = n == 5;
    return times[0] < times[1] && times[1] < times[2];
}

/* one COPY argument, measured on the samples; NULL with @error set when it does not parse */
static JobResult *
parse_copy (const gchar *spec, GArray *fio, GArray *qemu, gdouble disk_mib, GError **error)
{
    g_auto (GStrv) fields = g_strsplit (spec, ",", -1);
    g_autoptr (JobResult) result = g_new0 (JobResult, 1);
    gdouble times[3];

    if (!parse_fields (fields, result, times)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "not a copy (KIND,BEFORE,START,END[,timed-out] with KIND adaptive, "
                     "unlimited or capN, BEFORE < START < END): '%s'",
                     spec);
        return NULL;
    }
    result->migration_s = times[2] - times[1];
    result->mib_s = result->timed_out ? 0 : disk_mib / result->migration_s;
    measure (result, fio, qemu, times[0], times[1], times[2]);
    return g_steal_pointer (&result);
}

/* one copy's line: its time, mean MiB/s, harm in both views and the means they come from */
static void
print_copy (const JobResult *result)
{
    g_autofree gchar *name = job_result_name (result);

    g_print ("  %-10s %6.1f%s %7.1f %9.3f %10.3f   %5.0f %5.0f -> %5.0f %5.0f   %5.0f %5.0f -> "
             "%5.0f %5.0f\n",
             name, result->migration_s, result->timed_out ? "+" : " ", result->mib_s,
             job_harm_fio (result), job_harm_qemu (result), result->before_iops,
             result->before_lat_us, result->during_iops, result->during_lat_us,
             result->qemu_before_iops, result->qemu_before_lat_us, result->qemu_during_iops,
             result->qemu_during_lat_us);
    if (result->timed_out)
        g_print ("  %-10s not in sync within %.0f s: cancelled, no point of the frontier\n", name,
                 result->migration_s);
}

/* F2's reading: "met", "missed" or "cannot judge", and why in @why */
static const gchar *
judge_f2 (const FrontierJudgement *judgement, const JobResult *adaptive, GString *why)
{
    g_autofree gchar *name = NULL;

    if (adaptive->timed_out) {
        g_string_append (why, "the adaptive copy was not in sync within its time limit");
        return "missed";
    }
    if (judgement->gentle == NULL && judgement->harsh == NULL) {
        g_string_append (why, "no static copy was in sync within its time limit");
        return "cannot judge";
    }
    if (judgement->dominating != NULL) {
        name = job_result_name (judgement->dominating);
        g_string_append_printf (why,
                                "dominated: %s harmed the guest no more (%.3f) in no more "
                                "time (%.1f s)",
                                name, job_harm (judgement->dominating),
                                judgement->dominating->migration_s);
        return "missed";
    }
    if (judgement->harsh == NULL) {
        g_string_append (why, "every static copy harmed the guest less than the adaptive copy "
                              "and took longer: nothing brackets its harm (undominated)");
        return "cannot judge";
    }
    g_string_append_printf (why, "%.1f s against %.1f x %.1f s, the frontier at harm %.3f",
                            adaptive->migration_s, ADAPTIVE_FRONTIER_SLACK, judgement->frontier_s,
                            judgement->harm);
    if (judgement->gentle == NULL)
        g_string_append (why, " (gentler than every static copy: the gentlest one's time)");
    return judgement->f2_met ? "met" : "missed";
}

/* the verdict lines on @adaptive, against the static copies of @round */
static void
print_verdict (const WorkloadRound *round, const JobResult *adaptive,
               const AdaptiveYardstick *yardstick)
{
    g_autoptr (GString) reading = g_string_new (NULL);
    g_autoptr (GString) why = g_string_new (NULL);
    FrontierJudgement judgement;
    const gchar *f2;

    adaptive_judge_frontier (round, adaptive, yardstick, &judgement, reading);
    f2 = judge_f2 (&judgement, adaptive, why);
    g_print ("noise of the pre-copy windows: %.3f\n", judgement.noise);
    g_print ("F1 %s: harm %.3f (the larger view) against guest-impact %.3f + noise %.3f\n",
             judgement.f1_met ? "met" : "missed", judgement.harm, yardstick->target,
             judgement.noise);
    g_print ("F2 %s: %s\n", f2, why->str);
    g_print ("frontier: %s\n", reading->str);
    if (g_strcmp0 (f2, "cannot judge") == 0)
        g_print ("verdict: this run cannot judge the adaptive copy against the frontier (F1 %s)\n",
                 judgement.f1_met ? "met" : "missed");
    else
        g_print ("verdict: the adaptive copy is %s F2 (F1 %s)\n",
                 judgement.f2_met && g_strcmp0 (f2, "met") == 0 ? "within" : "not within",
                 judgement.f1_met ? "met" : "missed");
}

/* the copies of @specs into a round, the adaptive one in *@out_adaptive */
static WorkloadRound *
read_copies (GStrv specs, const gchar *fio_path, const gchar *qemu_path, gdouble disk_mib,
             const JobResult **out_adaptive, GError **error)
{
    static const Workload demo = { .name = "demo", .what = "the demo's guest" };
    g_autoptr (WorkloadRound) round = workload_round_new (&demo, 1);
    g_autoptr (GArray) fio = bench_samples_load (fio_path, 1, error);
    g_autoptr (GArray) qemu = fio != NULL ? bench_samples_load (qemu_path, 1, error) : NULL;

    *out_adaptive = NULL;
    if (qemu == NULL)
        return NULL;
    for (guint i = 0; specs != NULL && specs[i] != NULL; i++) {
        JobResult *result = parse_copy (specs[i], fio, qemu, disk_mib, error);

        if (result == NULL)
            return NULL;
        if (result->kind == JOB_ADAPTIVE)
            *out_adaptive = result;
        g_ptr_array_add (round->jobs, result);
    }
    if (*out_adaptive == NULL || round->jobs->len < 2) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "give one adaptive copy and at least one static copy");
        return NULL;
    }
    return g_steal_pointer (&round);
}

int
main (int argc, char **argv)
{
    g_autofree gchar *impact = NULL, *max_harm = NULL, *fio = NULL, *qemu = NULL;
    g_auto (GStrv) copies = NULL;
    gint disk_mib = 0;
    AdaptiveYardstick yardstick = { .storage = "the demo's" };
    const GOptionEntry entries[] = {
        { "guest-impact", 0, 0, G_OPTION_ARG_STRING, &impact, "the policy's guest-impact", "PCT" },
        { "max-harm", 0, 0, G_OPTION_ARG_STRING, &max_harm, "the policy's max-harm [100%]", "PCT" },
        { "disk-mib", 0, 0, G_OPTION_ARG_INT, &disk_mib, "the disk's size", "MIB" },
        { "fio", 0, 0, G_OPTION_ARG_FILENAME, &fio, "the guest's fio samples", "FILE" },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, &qemu, "QEMU's samples of its device", "FILE" },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &copies, NULL, "COPY..." },
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new ("COPY...");
    g_autoptr (WorkloadRound) round = NULL;
    g_autoptr (GError) error = NULL;
    const JobResult *adaptive;

    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, &argc, &argv, &error)) {
        g_printerr ("frontier-verdict: %s\n", error->message);
        return 2;
    }
    if (impact == NULL || !parse_percent (impact, &yardstick.target)
        || !parse_percent (max_harm != NULL ? max_harm : "100%", &yardstick.max_harm)
        || disk_mib <= 0 || fio == NULL || qemu == NULL) {
        g_printerr ("frontier-verdict: give --guest-impact N%%, --disk-mib N over 0, --fio and "
                    "--qemu (and --max-harm as N%%)\n");
        return 2;
    }
    round = read_copies (copies, fio, qemu, disk_mib, &adaptive, &error);
    if (round == NULL) {
        g_printerr ("frontier-verdict: %s\n", error->message);
        return 2;
    }
    g_print ("  %-10s %7s %7s %9s %10s   %-25s   %s\n", "copy", "time s", "MiB/s", "harm fio",
             "harm QEMU", "fio IOPS us before -> during", "QEMU IOPS us before -> during");
    for (guint i = 0; i < round->jobs->len; i++)
        print_copy (g_ptr_array_index (round->jobs, i));
    print_verdict (round, adaptive, &yardstick);
    return 0;
}
