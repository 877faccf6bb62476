/*
 * bench-adaptive's figures and its report: each job's line, the knee the
 * static caps found, and the four targets of the closed-loop speed.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-adaptive.h"

#include "bench-series.h"

#define MIB (1024.0 * 1024.0)

/* (a): the adaptive copy on a fixed-rate guest */
#define TARGET_A_IOPS    0.95
#define TARGET_A_LATENCY 1.10
/* (b): adaptive time / the fastest static cap that kept the guest's IOPS */
#define TARGET_B_TIME 1.2
/* (d): adaptive time / unlimited time on an idle guest */
#define TARGET_D_TIME 1.05

void
job_result_free (JobResult *result)
{
    g_free (result->speeds);
    g_free (result->converged_by);
    g_free (result->granularity);
    g_free (result);
}

gdouble
job_iops_ratio (const JobResult *result)
{
    return result->before_iops > 0 ? result->during_iops / result->before_iops : 0;
}

gdouble
job_latency_ratio (const JobResult *result)
{
    return result->before_lat_us > 0 ? result->during_lat_us / result->before_lat_us : 0;
}

gdouble
job_harm (const JobResult *result)
{
    if (result->before_iops <= 0)
        return 0;
    return MAX (job_latency_ratio (result) - 1, 1 - job_iops_ratio (result));
}

gboolean
job_kept (const JobResult *result)
{
    return result->before_iops <= 0 || job_iops_ratio (result) >= ADAPTIVE_KEEP_RATIO;
}

gboolean
job_gentle (const JobResult *result)
{
    return job_kept (result)
           && (result->before_iops <= 0 || job_latency_ratio (result) <= TARGET_A_LATENCY);
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

/*
 * the static job (unlimited or a cap) that kept the guest's IOPS in the
 * shortest time; with @gentle, one that also kept its latency within (a)'s
 * limit
 */
static const JobResult *
fastest_kept (const WorkloadRound *round, gboolean gentle)
{
    const JobResult *best = NULL;

    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if ((result->kind == JOB_UNLIMITED || result->kind == JOB_CAP)
            && (gentle ? job_gentle (result) : job_kept (result))
            && (best == NULL || result->migration_s < best->migration_s))
            best = result;
    }
    return best;
}

static gchar *
job_name (const JobResult *result)
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
adaptive_print_header (gint disk_mib, gboolean direct, const gchar *buf_size)
{
    g_print ("virt-mirror adaptive benchmark: static caps against control = adaptive\n");
    g_print ("  guest: fio 8 KiB, %d MiB raw disk (iothread%s); each workload boots one "
             "guest, whose disk every job migrates on\n",
             disk_mib, direct ? ", cache.direct=on, aio=native" : ", host cache");
    g_print ("  the mirror's buf-size: %s, for every job\n",
             buf_size != NULL ? buf_size : "QEMU's (16 MiB)");
    g_print ("  IOPS and latency (us) are the guest's, before `migrate` and during the copy "
             "(`migrate` -> `synced`); time is that plus `job-pivot` -> `completed`\n");
    g_print ("  %-5s %-11s %-10s %7s %7s %6s %7s %7s %6s %7s %7s  %s\n", "round", "workload", "job",
             "IOPS b", "IOPS d", "ratio", "lat b", "lat d", "ratio", "time s", "MiB/s",
             "speeds (MiB/s, from the start of the copy)");
}

void
adaptive_print_job (const WorkloadRound *round, const JobResult *result)
{
    g_autofree gchar *name = job_name (result);

    if (result->timed_out)
        g_print ("  %-5u %-11s %-10s no `synced` within %.0f s: cancelled, the disk stays; its "
                 "time counts as %.0f s below\n",
                 round->round, round->workload->name, name, result->migration_s,
                 result->migration_s);

    if (result->before_iops <= 0)
        g_print ("  %-5u %-11s %-10s %7s %7s %6s %7s %7s %6s %7.1f %7.1f  %s\n", round->round,
                 round->workload->name, name, "-", "-", "-", "-", "-", "-", result->migration_s,
                 result->mib_s, result->speeds);
    else
        g_print ("  %-5u %-11s %-10s %7.0f %7.0f %6.2f %7.0f %7.0f %6.2f %7.1f %7.1f  %s\n",
                 round->round, round->workload->name, name, result->before_iops,
                 result->during_iops, job_iops_ratio (result), result->before_lat_us,
                 result->during_lat_us, job_latency_ratio (result), result->migration_s,
                 result->mib_s, result->speeds);
}

void
adaptive_print_knee (const WorkloadRound *round, guint tolerance_mib)
{
    if (round->no_knee)
        g_print ("  %-5u %-11s knee: none, the unlimited copy kept %.0f%% of the IOPS\n",
                 round->round, round->workload->name, ADAPTIVE_KEEP_RATIO * 100);
    else if (round->good_mib == 0)
        g_print ("  %-5u %-11s knee: below %uM (no cap tried kept %.0f%% of the IOPS; no cap "
                 "under %uM, where the copy would not converge)\n",
                 round->round, round->workload->name, round->bad_mib, ADAPTIVE_KEEP_RATIO * 100,
                 round->floor_mib);
    else
        g_print ("  %-5u %-11s knee: between %uM (kept) and %uM (did not), %s %uM apart\n",
                 round->round, round->workload->name, round->good_mib, round->bad_mib,
                 round->bad_mib - round->good_mib <= tolerance_mib ? "within" : "NOT within",
                 tolerance_mib);
}

void
adaptive_print_gentle_knee (const WorkloadRound *round, guint tolerance_mib)
{
    if (round->gentle_good_mib == 0)
        g_print ("  %-5u %-11s knee within (a): none; no cap down to %uM, the slowest where the "
                 "copy converges, kept %.0f%% of the IOPS at <= %.2f of the latency\n",
                 round->round, round->workload->name, round->floor_mib, ADAPTIVE_KEEP_RATIO * 100,
                 TARGET_A_LATENCY);
    else if (round->gentle_bad_mib == 0)
        g_print ("  %-5u %-11s knee within (a): at or above %uM\n", round->round,
                 round->workload->name, round->gentle_good_mib);
    else
        g_print ("  %-5u %-11s knee within (a): between %uM (within) and %uM (not), %s %uM "
                 "apart\n",
                 round->round, round->workload->name, round->gentle_good_mib, round->gentle_bad_mib,
                 round->gentle_bad_mib - round->gentle_good_mib <= tolerance_mib ? "within"
                                                                                 : "NOT within",
                 tolerance_mib);
}

/* every round's value, then the median and the verdict on the @met rounds that met @target */
static void
print_target (const gchar *what, GArray *values, const gchar *target, guint met)
{
    g_autoptr (GString) line = g_string_new (NULL);

    for (guint i = 0; i < values->len; i++)
        g_string_append_printf (line, "%s%.3f", i > 0 ? ", " : "",
                                g_array_index (values, gdouble, i));
    if (values->len == 0) {
        g_print ("    %-52s no figure\n", what);
        return;
    }
    g_print ("    %-52s rounds %s; median %.3f; target %s: %s\n", what, line->str,
             vmr_bench_median (values), target, vmr_bench_verdict_rounds (met, values->len));
}

/*
 * Whether (b) can be met together with (a): the fastest static job within
 * (a) took @reach times the fastest that kept 95% of the IOPS. Over 1.2, no
 * copy as gentle as (a) asks could be within (b) of the latter.
 */
static void
print_reach (GArray *reach)
{
    g_autoptr (GString) line = g_string_new (NULL);
    guint over = 0;

    for (guint i = 0; i < reach->len; i++) {
        gdouble value = g_array_index (reach, gdouble, i);

        g_string_append_printf (line, "%s%.3f", i > 0 ? ", " : "", value);
        over += value > TARGET_B_TIME;
    }
    if (reach->len == 0)
        return;
    g_print ("    %-52s rounds %s; over 1.2 in %u of %u: there no copy within (a) meets (b)\n",
             "fastest static within (a) / that kept 95%", line->str, over, reach->len);
}

static void
add (GArray *values, gdouble value)
{
    g_array_append_val (values, value);
}

static void
print_workload_targets (GPtrArray *rounds, const Workload *workload)
{
    g_autoptr (GArray) iops = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) latency = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) time_b = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) beats = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) time_d = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) time_b_gentle = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) converged = g_array_new (FALSE, FALSE, sizeof (gdouble));
    /* the fastest static job within (a) against the fastest that kept 95%: what (b) asks of (a) */
    g_autoptr (GArray) reach = g_array_new (FALSE, FALSE, sizeof (gdouble));
    guint no_gentle = 0; /* rounds in which no static job was within (a) */

    for (guint i = 0; i < rounds->len; i++) {
        const WorkloadRound *round = g_ptr_array_index (rounds, i);
        const JobResult *adaptive = find_job (round, JOB_ADAPTIVE);
        const JobResult *unlimited = find_job (round, JOB_UNLIMITED);
        const JobResult *best = fastest_kept (round, FALSE);
        const JobResult *gentle = fastest_kept (round, TRUE);
        gboolean beaten = FALSE;

        if (round->workload == workload && workload->heavy) {
            gboolean met = FALSE;

            for (guint j = 0; j < round->jobs->len; j++) {
                const JobResult *result = g_ptr_array_index (round->jobs, j);

                if (!result->timed_out && result->migration_s > 0
                    && result->migration_s <= ADAPTIVE_HEAVY_DEADLINE_S)
                    met = TRUE;
            }
            add (converged, met ? 1 : 0);
            continue;
        }
        if (round->workload != workload || adaptive == NULL)
            continue;
        if (gentle != NULL)
            add (time_b_gentle, adaptive->migration_s / gentle->migration_s);
        if (gentle != NULL && best != NULL && workload->fixed_rate)
            add (reach, gentle->migration_s / best->migration_s);
        else if (workload->fixed_rate)
            no_gentle++;
        add (iops, job_iops_ratio (adaptive));
        add (latency, job_latency_ratio (adaptive));
        if (best != NULL)
            add (time_b, adaptive->migration_s / best->migration_s);
        if (unlimited != NULL)
            add (time_d, adaptive->migration_s / unlimited->migration_s);
        /* a static job beats the adaptive one when it is no worse on impact and on time */
        for (guint j = 0; j < round->jobs->len; j++) {
            const JobResult *result = g_ptr_array_index (round->jobs, j);

            if ((result->kind == JOB_UNLIMITED || result->kind == JOB_CAP)
                && job_harm (result) <= job_harm (adaptive)
                && result->migration_s <= adaptive->migration_s)
                beaten = TRUE;
        }
        add (beats, beaten ? 0 : 1);
    }
    g_print ("  %s (%s):\n", workload->name, workload->what);
    if (workload->fixed_rate) {
        /* (a) holds in a round when both its IOPS and its latency do */
        guint met_a = 0;

        for (guint i = 0; i < iops->len; i++)
            met_a += g_array_index (iops, gdouble, i) >= TARGET_A_IOPS
                     && g_array_index (latency, gdouble, i) <= TARGET_A_LATENCY;
        print_target ("(a) adaptive IOPS during/before", iops, ">= 0.95", met_a);
        print_target ("(a) adaptive latency during/before", latency, "<= 1.10", met_a);
    }
    if (workload->heavy) {
        print_target ("(e) a copy in sync within its deadline (1 = yes)", converged, "1",
                      vmr_bench_rounds_met (converged, VMR_BENCH_AT_LEAST, 1));
        return;
    }
    if (!workload->idle)
        print_target ("(b) adaptive time / fastest static that kept 95%", time_b, "<= 1.2",
                      vmr_bench_rounds_met (time_b, VMR_BENCH_AT_MOST, TARGET_B_TIME));
    if (workload->fixed_rate) {
        print_target ("(b') the same, static jobs within (a)'s latency too", time_b_gentle,
                      "<= 1.2",
                      vmr_bench_rounds_met (time_b_gentle, VMR_BENCH_AT_MOST, TARGET_B_TIME));
        if (no_gentle > 0)
            g_print ("    %-52s %u of the rounds: no static job was within (a)\n", "(b')",
                     no_gentle);
        print_reach (reach);
    }
    if (workload->bursty)
        print_target ("(c) no static job as good on impact and time (1 = yes)", beats, "1",
                      vmr_bench_rounds_met (beats, VMR_BENCH_AT_LEAST, 1));
    if (workload->idle)
        print_target ("(d) adaptive time / unlimited time", time_d, "<= 1.05",
                      vmr_bench_rounds_met (time_d, VMR_BENCH_AT_MOST, TARGET_D_TIME));
}

void
adaptive_print_targets (GPtrArray *rounds, const Workload *const *workloads, guint n_workloads)
{
    guint revived = 0, restarted = 0;

    g_print ("\n  targets (each judged in each round; PASS when at least two thirds of the rounds "
             "met it):\n");
    for (guint w = 0; w < n_workloads; w++)
        print_workload_targets (rounds, workloads[w]);
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
