/*
 * bench-adaptive's figures and its report: each job's line, the harm in
 * the guest's and QEMU's views, the noise, the static frontier and the
 * verdicts F1, F2, F3, D and S on the closed-loop speed.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-adaptive.h"

#include "bench-series.h"
#include "guest-harm.h"

#include <math.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/* (D): the adaptive copy's rate against the unlimited one's, at least */
#define TARGET_D_RATE 0.9
/* (S): the adaptive copy's share of the budget the guest leaves, at least */
#define TARGET_S_SHARE 0.8

void
job_result_free (JobResult *result)
{
    g_free (result->speeds);
    g_free (result->converged_by);
    g_free (result->granularity);
    g_free (result);
}

gdouble
job_harm_fio (const JobResult *result)
{
    return vmr_guest_harm (result->before_iops, result->before_lat_us, result->during_iops,
                           result->during_lat_us);
}

gdouble
job_harm_qemu (const JobResult *result)
{
    return vmr_guest_harm (result->qemu_before_iops, result->qemu_before_lat_us,
                           result->qemu_during_iops, result->qemu_during_lat_us);
}

gdouble
job_harm (const JobResult *result)
{
    return MAX (job_harm_fio (result), job_harm_qemu (result));
}

gboolean
job_static_converged (const JobResult *result)
{
    return (result->kind == JOB_UNLIMITED || result->kind == JOB_CAP) && !result->timed_out;
}

gdouble
job_static_speed (const JobResult *result)
{
    return result->kind == JOB_CAP ? result->cap_mib : result->mib_s;
}

WorkloadRound *
workload_round_new (const Workload *workload, guint round)
{
    WorkloadRound *self = g_new0 (WorkloadRound, 1);

    self->workload = workload;
    self->round = round;
    self->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) job_result_free);
    return self;
}

void
workload_round_free (WorkloadRound *self)
{
    g_ptr_array_unref (self->jobs);
    g_free (self->load_args);
    g_free (self);
}

/* appends @value to @values (of gdouble) */
static void
add (GArray *values, gdouble value)
{
    g_array_append_val (values, value);
}

gdouble
workload_round_noise (const WorkloadRound *round)
{
    g_autoptr (GArray) iops = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) lat = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) qemu_iops = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) qemu_lat = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) deviations = g_array_new (FALSE, FALSE, sizeof (gdouble));

    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (result->before_iops > 0) {
            add (iops, result->before_iops);
            add (lat, result->before_lat_us);
        }
        if (result->qemu_before_iops > 0) {
            add (qemu_iops, result->qemu_before_iops);
            add (qemu_lat, result->qemu_before_lat_us);
        }
    }
    /* each window's larger view against the round's medians, then their median: the spread */
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);
        gdouble deviation = 0;

        if (result->before_iops <= 0)
            continue;
        deviation = vmr_guest_window_deviation (vmr_bench_median (iops), vmr_bench_median (lat),
                                                result->before_iops, result->before_lat_us);
        if (result->qemu_before_iops > 0)
            deviation = MAX (deviation, vmr_guest_window_deviation (vmr_bench_median (qemu_iops),
                                                                    vmr_bench_median (qemu_lat),
                                                                    result->qemu_before_iops,
                                                                    result->qemu_before_lat_us));
        add (deviations, deviation);
    }
    return vmr_bench_median (deviations);
}

void
workload_round_bracket (const WorkloadRound *round, gdouble harm, gboolean by_speed,
                        const JobResult **out_gentle, const JobResult **out_harsh)
{
    *out_gentle = NULL;
    *out_harsh = NULL;
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (!job_static_converged (result))
            continue;
        if (job_harm (result) <= harm) {
            if (*out_gentle == NULL
                || (by_speed ? job_static_speed (result) > job_static_speed (*out_gentle)
                             : result->migration_s < (*out_gentle)->migration_s))
                *out_gentle = result;
        } else if (*out_harsh == NULL
                   || (by_speed ? job_static_speed (result) < job_static_speed (*out_harsh)
                                : job_harm (result) < job_harm (*out_harsh))) {
            *out_harsh = result;
        }
    }
}

static const JobResult *
find_job (const WorkloadRound *round, JobKind kind)
{
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (result->kind == kind)
            return result;
    }
    return NULL;
}

gchar *
job_result_name (const JobResult *result)
{
    switch (result->kind) {
        case JOB_UNLIMITED:
            return g_strdup ("unlimited");
        case JOB_CAP:
            return g_strdup_printf ("cap %uM", result->cap_mib);
        case JOB_CONVERGE_SPEED:
            return g_strdup ("conv-speed");
        case JOB_CONVERGE_BLOCKING:
            return g_strdup ("conv-block");
        case JOB_ADAPTIVE_GRANULAR:
            return g_strdup_printf ("adapt %s", result->granularity);
        case JOB_ADAPTIVE:
        default:
            return g_strdup ("adaptive");
    }
}

void
adaptive_print_header (gint disk_mib, gboolean direct, const gchar *buf_size,
                       const AdaptiveYardstick *yardstick)
{
    g_print ("  guest: fio 8 KiB, %d MiB raw disk (iothread%s); each workload boots one "
             "guest, whose disk every job migrates on\n",
             disk_mib, direct ? ", cache.direct=on, aio=native" : ", host cache");
    g_print ("  the mirror's buf-size: %s, for every job\n",
             buf_size != NULL ? buf_size : "QEMU's (16 MiB)");
    g_print ("  target X (the adaptive copy's guest-impact): %.0f%%; max-harm %.0f%%\n",
             yardstick->target * 100, yardstick->max_harm * 100);
    g_print ("  IOPS and latency (us): before `migrate` and during the copy (`migrate` -> "
             "`synced`), as the guest's fio (f) and QEMU's blockstats of its device (q) count "
             "them; harm = max (latency d/b - 1, 1 - IOPS d/b), each view; time is the copy "
             "plus `job-pivot` -> `completed`\n");
    g_print ("  %-5s %-11s %-10s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %7s %7s  %s\n", "round",
             "workload", "job", "IOPSfb", "IOPSfd", "latfb", "latfd", "IOPSqb", "IOPSqd", "latqb",
             "latqd", "harmf", "harmq", "time s", "MiB/s", "speeds (MiB/s, from the copy's start)");
}

void
adaptive_print_job (const WorkloadRound *round, const JobResult *result)
{
    g_autofree gchar *name = job_result_name (result);

    if (result->timed_out)
        g_print ("  %-5u %-11s %-10s no `synced` within %.0f s: cancelled, the disk stays; it "
                 "did not converge\n",
                 round->round, round->workload->name, name, result->migration_s);
    if (result->before_iops <= 0)
        g_print ("  %-5u %-11s %-10s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %7.1f %7.1f  %s\n",
                 round->round, round->workload->name, name, "-", "-", "-", "-", "-", "-", "-", "-",
                 "-", "-", result->migration_s, result->mib_s, result->speeds);
    else
        g_print ("  %-5u %-11s %-10s %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %6.0f %6.3f %6.3f "
                 "%7.1f %7.1f  %s\n",
                 round->round, round->workload->name, name, result->before_iops,
                 result->during_iops, result->before_lat_us, result->during_lat_us,
                 result->qemu_before_iops, result->qemu_during_iops, result->qemu_before_lat_us,
                 result->qemu_during_lat_us, job_harm_fio (result), job_harm_qemu (result),
                 result->migration_s, result->mib_s, result->speeds);
}

/* the verdicts of one round: each applies or not, and was met or not */
typedef enum { V_F1, V_F2, V_F3, V_D, V_S, N_VERDICTS } VerdictId;
static const gchar *const verdict_names[N_VERDICTS] = { "F1", "F2", "F3", "D", "S" };

typedef struct {
    gboolean applies[N_VERDICTS];
    gboolean met[N_VERDICTS];
} RoundVerdicts;

static void
set_verdict (RoundVerdicts *verdicts, VerdictId id, gboolean met)
{
    verdicts->applies[id] = TRUE;
    verdicts->met[id] = met;
}

gdouble
workload_round_frontier_time (const WorkloadRound *round, gdouble harm, GString *text)
{
    const JobResult *gentle, *harsh;
    gdouble t;

    workload_round_bracket (round, harm, FALSE, &gentle, &harsh);
    if (gentle == NULL) {
        /* gentler than every static copy that converged: no point to read it off */
        g_string_append_printf (text, "no static copy as gentle; the gentlest took %.1f s",
                                harsh != NULL ? harsh->migration_s : 0);
        return harsh != NULL ? harsh->migration_s : 0;
    }
    if (harsh == NULL || harsh->migration_s >= gentle->migration_s) {
        g_string_append_printf (text, "frontier %.1f s (%.0fM at harm %.3f, no faster harsher)",
                                gentle->migration_s, job_static_speed (gentle), job_harm (gentle));
        return gentle->migration_s;
    }
    t = gentle->migration_s
        + (harm - job_harm (gentle)) / (job_harm (harsh) - job_harm (gentle))
              * (harsh->migration_s - gentle->migration_s);
    g_string_append_printf (
        text, "frontier %.1f s between %.0fM (harm %.3f, %.1f s) and %.0fM (%.3f, %.1f s), %s", t,
        job_static_speed (gentle), job_harm (gentle), gentle->migration_s, job_static_speed (harsh),
        job_harm (harsh), harsh->migration_s,
        job_static_speed (harsh) - job_static_speed (gentle)
                <= ADAPTIVE_BRACKET_SPREAD * job_static_speed (harsh)
            ? "within 15%"
            : "NOT within 15%");
    return t;
}

/* F3: the least harm x time of the static copies that converged under max-harm, -1 = none */
static gdouble
least_static_product (const WorkloadRound *round, gdouble max_harm)
{
    gdouble least = -1;

    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);
        gdouble product = job_harm (result) * result->migration_s;

        if (job_static_converged (result) && job_harm (result) < max_harm
            && (least < 0 || product < least))
            least = product;
    }
    return least;
}

/* whether a static copy that converged had a harm of at most @target */
static gboolean
static_meets (const WorkloadRound *round, gdouble target)
{
    const JobResult *gentle, *harsh;

    workload_round_bracket (round, target, FALSE, &gentle, &harsh);
    return gentle != NULL;
}

/* a static copy that converged with no more harm and no more time than @adaptive, NULL = none */
static const JobResult *
find_dominating (const WorkloadRound *round, const JobResult *adaptive)
{
    gdouble harm = job_harm (adaptive);

    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (job_static_converged (result) && job_harm (result) <= harm
            && result->migration_s <= adaptive->migration_s)
            return result;
    }
    return NULL;
}

void
adaptive_judge_frontier (const WorkloadRound *round, const JobResult *adaptive,
                         const AdaptiveYardstick *yardstick, FrontierJudgement *out, GString *text)
{
    gboolean converged = !adaptive->timed_out;

    memset (out, 0, sizeof (*out));
    out->harm = job_harm (adaptive);
    out->noise = workload_round_noise (round);
    out->f1_met = converged && out->harm <= yardstick->target + out->noise;
    workload_round_bracket (round, out->harm, FALSE, &out->gentle, &out->harsh);
    out->dominating = converged ? find_dominating (round, adaptive) : NULL;
    out->product = out->harm * adaptive->migration_s;
    out->least_product = least_static_product (round, yardstick->max_harm);
    out->f2_applies = static_meets (round, yardstick->target);
    out->frontier_s = workload_round_frontier_time (round, out->harm, text);
    out->f2_met = converged && out->frontier_s > 0
                  && adaptive->migration_s <= ADAPTIVE_FRONTIER_SLACK * out->frontier_s;
    out->f3_met = converged && out->harm < yardstick->max_harm
                  && (out->least_product < 0
                      || out->product <= ADAPTIVE_FRONTIER_SLACK * out->least_product);
    if (!out->f2_applies && out->least_product < 0)
        g_string_append_printf (text,
                                "; no static copy within X: harm x time %.2f, no static copy "
                                "converged under max-harm",
                                out->product);
    else if (!out->f2_applies)
        g_string_append_printf (text,
                                "; no static copy within X: harm x time %.2f, the least "
                                "static's under max-harm %.2f",
                                out->product, out->least_product);
}

/* F1, F2 or F3 of the adaptive copy of a loaded guest's round */
static void
judge_frontier (const WorkloadRound *round, const JobResult *adaptive,
                const AdaptiveYardstick *yardstick, RoundVerdicts *verdicts)
{
    g_autoptr (GString) text = g_string_new (NULL);
    FrontierJudgement judgement;

    adaptive_judge_frontier (round, adaptive, yardstick, &judgement, text);
    set_verdict (verdicts, V_F1, judgement.f1_met);
    if (judgement.f2_applies)
        set_verdict (verdicts, V_F2, judgement.f2_met);
    else
        set_verdict (verdicts, V_F3, judgement.f3_met);
    g_print ("  %-5u %-11s adaptive harm %.3f (fio %.3f, QEMU %.3f), noise %.3f, %.1f s; %s\n",
             round->round, round->workload->name, judgement.harm, job_harm_fio (adaptive),
             job_harm_qemu (adaptive), judgement.noise, adaptive->migration_s, text->str);
}

/* S: the adaptive copy's share of the budget the guest leaves on the shared array */
static void
judge_share (const WorkloadRound *round, const JobResult *adaptive,
             const AdaptiveYardstick *yardstick, RoundVerdicts *verdicts)
{
    gdouble guest_mib = MAX (adaptive->qemu_during_iops, 0) * ADAPTIVE_GUEST_IO_BYTES / MIB;
    gdouble left = yardstick->budget_mib - guest_mib;
    gdouble share = left > 0 ? adaptive->mib_s / left : 0;

    g_print ("  %-5u %-11s (S) the guest used %.1f of %.1f MiB/s; the copy %.1f of the %.1f left: "
             "%.2f\n",
             round->round, round->workload->name, guest_mib, yardstick->budget_mib, adaptive->mib_s,
             left, share);
    set_verdict (verdicts, V_S, share >= TARGET_S_SHARE);
}

static void
judge_round (const WorkloadRound *round, const AdaptiveYardstick *yardstick,
             RoundVerdicts *verdicts)
{
    const JobResult *adaptive = find_job (round, JOB_ADAPTIVE);
    const JobResult *unlimited = find_job (round, JOB_UNLIMITED);
    g_autoptr (GString) line = g_string_new (NULL);

    memset (verdicts, 0, sizeof (*verdicts));
    if (adaptive == NULL || unlimited == NULL)
        return;
    if (round->workload->idle) {
        g_print ("  %-5u %-11s (D) adaptive %.1f MiB/s, unlimited %.1f MiB/s\n", round->round,
                 round->workload->name, adaptive->mib_s, unlimited->mib_s);
        set_verdict (verdicts, V_D, adaptive->mib_s >= TARGET_D_RATE * unlimited->mib_s);
    } else {
        judge_frontier (round, adaptive, yardstick, verdicts);
        if (yardstick->shared && round->workload->full_load)
            judge_share (round, adaptive, yardstick, verdicts);
    }
    for (guint v = 0; v < N_VERDICTS; v++)
        if (verdicts->applies[v])
            g_string_append_printf (line, " %s %s", verdict_names[v],
                                    verdicts->met[v] ? "met" : "missed");
    g_print ("  %-5u %-11s round:%s\n", round->round, round->workload->name, line->str);
}

/* the heavy writer: a copy in sync within its deadline, in each round */
static void
print_heavy (GPtrArray *rounds, const Workload *workload)
{
    g_autoptr (GArray) converged = g_array_new (FALSE, FALSE, sizeof (gdouble));

    for (guint i = 0; i < rounds->len; i++) {
        const WorkloadRound *round = g_ptr_array_index (rounds, i);
        gboolean met = FALSE;

        if (round->workload != workload)
            continue;
        for (guint j = 0; j < round->jobs->len; j++) {
            const JobResult *result = g_ptr_array_index (round->jobs, j);

            if (!result->timed_out && result->migration_s > 0
                && result->migration_s <= ADAPTIVE_HEAVY_DEADLINE_S)
                met = TRUE;
        }
        add (converged, met ? 1 : 0);
    }
    g_print ("    %-40s %s\n", "a copy in sync within its deadline",
             converged->len >= VMR_BENCH_MIN_ROUNDS
                 ? vmr_bench_verdict_rounds (
                     vmr_bench_rounds_met (converged, VMR_BENCH_AT_LEAST, 1), converged->len)
                 : vmr_bench_verdict_once (vmr_bench_rounds_met (converged, VMR_BENCH_AT_LEAST, 1)
                                           == converged->len));
}

static void
print_workload_verdicts (GPtrArray *rounds, const Workload *workload,
                         const AdaptiveYardstick *yardstick)
{
    guint applies[N_VERDICTS] = { 0 }, met[N_VERDICTS] = { 0 };

    g_print ("  %s on %s at X = %.0f%% (%s):\n", workload->name, yardstick->storage,
             yardstick->target * 100, workload->what);
    if (workload->heavy) {
        print_heavy (rounds, workload);
        return;
    }
    for (guint i = 0; i < rounds->len; i++) {
        const WorkloadRound *round = g_ptr_array_index (rounds, i);
        RoundVerdicts verdicts;

        if (round->workload != workload)
            continue;
        judge_round (round, yardstick, &verdicts);
        for (guint v = 0; v < N_VERDICTS; v++) {
            applies[v] += verdicts.applies[v];
            met[v] += verdicts.applies[v] && verdicts.met[v];
        }
    }
    for (guint v = 0; v < N_VERDICTS; v++) {
        if (applies[v] == 0)
            continue;
        /* one round alone (the quick form) is judged on itself */
        g_print ("    %-4s %u of %u rounds met it: %s\n", verdict_names[v], met[v], applies[v],
                 applies[v] >= VMR_BENCH_MIN_ROUNDS
                     ? vmr_bench_verdict_rounds (met[v], applies[v])
                     : vmr_bench_verdict_once (met[v] * 3 >= applies[v] * 2));
    }
}

void
adaptive_print_verdicts (GPtrArray *rounds, const Workload *const *workloads, guint n_workloads,
                         const AdaptiveYardstick *yardstick)
{
    guint revived = 0, restarted = 0;

    g_print ("\n  verdicts (each round judged on its own; PASS when at least 2 of 3 rounds met "
             "it): F1 harm <= X + noise; F2 time <= 1.2 x the frontier's at its harm; F3 (no "
             "static copy within X) converged under max-harm, harm x time <= 1.2 x the least "
             "static's; D idle: rate >= 0.9 x unlimited; S full load on the shared array: >= "
             "0.8 of the budget left\n");
    for (guint w = 0; w < n_workloads; w++)
        print_workload_verdicts (rounds, workloads[w], yardstick);
    for (guint i = 0; i < rounds->len; i++) {
        const WorkloadRound *round = g_ptr_array_index (rounds, i);

        revived += round->revived;
        restarted += round->restarted;
    }
    if (revived + restarted > 0)
        g_print (
            "  the guest went silent after a pivot %u times: a second stop and cont revived it "
            "%u times, it was booted again %u times\n",
            revived + restarted, revived, restarted);
}
