/*
 * bench-policy: what a migration costs a busy guest, with and without the
 * policy.
 *
 * The test guest (tests/guest) runs the workload of the storage studies
 * this project started from: fio 8 KiB random I/O, 70% reads, at a fixed
 * rate (vmr.iops, 1400 by default), on a disk of its own (2 GiB by default,
 * an iothread, cache.direct=on,aio=native). Each run boots a fresh guest,
 * lets the load settle, measures a baseline, migrates the disk through
 * virt-mirrord, and measures again after the pivot:
 *   unthrottled  the daemon with an empty policy: the copy runs flat out;
 *   policy       the daemon with the example policy (data/policy.conf, or
 *                --policy FILE).
 * The guest's IOPS come from its VMR-IOPS console lines, stamped when they
 * arrive. The job pivots by hand (manual-pivot): at `synced` the bench
 * pauses the guest (QMP stop, which drains its I/O; under TCG the guest's
 * clock stops too, so fio does not see the pause), sends `job-pivot`,
 * waits for `completed` and compares the destination with the source byte
 * for byte, both at rest, then resumes the guest. "During" is the copy,
 * `migrate` to `synced`; the migration time is that plus `job-pivot` to
 * `completed`. Each round runs both variants, unthrottled first in odd
 * rounds and policy first in even ones, so that drifting load on the host
 * hits both alike. The target is judged in each round and passes when at
 * least two thirds of the rounds met it, with at least 3 rounds; a MISS
 * exits with status 3.
 *
 * Run it with `ninja -C BUILDDIR bench-policy`, or run
 * BUILDDIR/tests/bench/bench-policy directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-guest.h"
#include "bench-image.h"
#include "bench-policy.h"
#include "bench-process.h"
#include "bench-series.h"
#include "guest-console.h"
#include "guest-disk.h"
#include "qmp-client.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_POLICY
#define VMR_BENCH_POLICY "data/policy.conf"
#endif

#define MIB             (1024 * 1024)
#define START_TIMEOUT_S 30
#define JOB_TIMEOUT_S   900
#define STOP_TIMEOUT_S  30
/* with the policy, the guest keeps at least this share of its IOPS while copying */
#define TARGET_RATIO 0.90

typedef struct {
    /* options */
    gchar *daemon_path;
    gchar *qemu_path;
    gchar *policy_path;
    guint iops;
    guint64 disk_size;
    guint settle_s;
    guint before_s;
    guint after_gap_s;
    guint after_s;
    /* places */
    gchar *empty_policy;
    /* processes */
    GSubprocess *daemon;
    VmrQmpClient *control;
    VmrBenchGuest guest; /* the guest, its places, and the run's one job */
    guint run_number;
    gboolean interrupted;
} Bench;

/* ---- the daemon ---- */

static gboolean
start_daemon (Bench *self, const gchar *policy, GError **error)
{
    self->daemon = vmr_bench_start_daemon (&self->guest.daemon_spec, policy, self->run_number,
                                           &self->control, NULL, error);
    if (self->daemon == NULL)
        return FALSE;
    vmr_bench_guest_watch_jobs (&self->guest, self->control);
    return TRUE;
}

static void
stop_daemon (Bench *self)
{
    vmr_bench_close (&self->control, &self->guest);
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
}

/* ---- one run ---- */

/* what the job's record says about the run: its states and the policy's view */
static void
describe_job (JsonObject *job, RunResult *result)
{
    JsonArray *history = vmr_json_get_array (job, "history");
    JsonObject *policy = vmr_json_get_object (job, "policy");
    JsonArray *iops = vmr_json_get_array (policy, "guest-iops");
    g_autoptr (GString) states = g_string_new (NULL);
    g_autoptr (GString) seen = g_string_new (NULL);

    for (guint i = 0; history != NULL && i < json_array_get_length (history); i++) {
        const gchar *state = vmr_json_get_string (vmr_json_array_object (history, i), "state");

        g_string_append_printf (states, "%s%s", states->len > 0 ? " " : "", state);
    }
    for (guint i = 0; iops != NULL && i < json_array_get_length (iops); i++) {
        JsonNode *element = json_array_get_element (iops, i);

        /* json_node_get_int() reads any value; only a container would be a critical */
        if (JSON_NODE_HOLDS_VALUE (element))
            g_string_append_printf (seen, "%s%" G_GINT64_FORMAT, seen->len > 0 ? " " : "",
                                    json_node_get_int (element));
    }
    result->states = g_string_free (g_steal_pointer (&states), FALSE);
    result->daemon_iops = g_string_free (g_steal_pointer (&seen), FALSE);
    result->decision = g_strdup (vmr_json_get_string (policy, "decision") != NULL
                                     ? vmr_json_get_string (policy, "decision")
                                     : "-");
}

static gboolean
run_once (Bench *self, Variant variant, const gchar *source, RunResult *result, GError **error)
{
    g_autofree gchar *dest
        = g_strdup_printf ("%s/dest-%u.raw", self->guest.image_dir, self->run_number);
    g_autofree gchar *load_args = g_strdup_printf ("vmr.iops=%u", self->iops);
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (GArray) iops = NULL;
    VmrBenchMigration migration = { 0 };
    gint64 before_start, after_start, after_end;
    gboolean migrated;

    if (!start_daemon (self, variant == VARIANT_POLICY ? self->policy_path : self->empty_policy,
                       error)
        || !vmr_bench_guest_start (&self->guest, source, load_args, self->run_number, error)
        || !vmr_bench_guest_attach_settle (&self->guest, self->control, TRUE, self->settle_s,
                                           error))
        return FALSE;
    before_start = g_get_monotonic_time ();
    if (!vmr_bench_guest_sleep (&self->guest, self->before_s, error))
        return FALSE;

    migrated = vmr_bench_guest_migrate (&self->guest, self->control, source, dest, NULL,
                                        self->disk_size, &migration, &job, error);
    if (job != NULL)
        describe_job (job, result);
    if (!migrated)
        return FALSE;
    result->migration_s = migration.migration_s;
    result->paused_s = migration.paused_s;

    /*
     * fio's rate limit keeps to its average: after a slow spell it runs
     * faster until it has made up the I/Os it missed. The after-phase
     * starts once that is over. (The pause does not count: the guest's
     * clock stood still.)
     */
    if (!vmr_bench_guest_sleep (&self->guest, self->after_gap_s, error))
        return FALSE;
    after_start = g_get_monotonic_time ();
    if (!vmr_bench_guest_sleep (&self->guest, self->after_s, error))
        return FALSE;
    after_end = g_get_monotonic_time ();

    iops = vmr_guest_console_get_iops (self->guest.console);
    result->before_iops = vmr_guest_iops_mean (iops, before_start, migration.start_mono,
                                               &result->before_lat_us, NULL);
    result->during_iops = vmr_guest_iops_mean (iops, migration.start_mono, migration.synced_mono,
                                               &result->during_lat_us, &result->during_lines);
    result->after_iops
        = vmr_guest_iops_mean (iops, after_start, after_end, &result->after_lat_us, NULL);

    vmr_bench_guest_stop (&self->guest);
    stop_daemon (self);
    if (g_unlink (dest) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", dest, g_strerror (errno));
    return TRUE;
}

static gboolean
bench_run (Bench *self, Variant variant, const gchar *source, RunResult *result, GError **error)
{
    gboolean ok;

    self->run_number++;
    memset (result, 0, sizeof (*result));
    ok = run_once (self, variant, source, result, error);
    vmr_bench_guest_stop (&self->guest);
    stop_daemon (self);
    if (!ok)
        g_prefix_error (error, "run %u (%s): ", self->run_number,
                        bench_policy_variant_name (variant));
    return ok;
}

/* ---- set-up ---- */

static void
bench_free (Bench *self)
{
    vmr_bench_guest_stop (&self->guest);
    stop_daemon (self);
    g_free (self->daemon_path);
    g_free (self->qemu_path);
    g_free (self->policy_path);
    g_free (self->empty_policy);
    vmr_bench_guest_clear (&self->guest);
    g_free (self);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Bench, bench_free)

static gboolean
make_dirs (Bench *self, const gchar *image_parent, GError **error)
{
    if (!vmr_bench_guest_make_dirs (&self->guest, self->daemon_path, image_parent, START_TIMEOUT_S,
                                    error))
        return FALSE;
    /* [defaults] alone: the built-in values, no limit of any kind */
    self->empty_policy = g_build_filename (self->guest.run_dir, "unthrottled.conf", NULL);
    return g_file_set_contents (self->empty_policy, "[defaults]\n", -1, error);
}

/* the guest's settings, once the options are read */
static void
guest_init (Bench *self)
{
    self->guest = (VmrBenchGuest){
        .qemu_path = self->qemu_path,
        .interrupted = &self->interrupted,
        .start_timeout_s = START_TIMEOUT_S,
        .stop_timeout_s = STOP_TIMEOUT_S,
        .job_timeout_s = JOB_TIMEOUT_S,
    };
}

/* the guest's disk, @source, of random data */
static gboolean
write_source (Bench *self, const gchar *source, GError **error)
{
    gint64 start = g_get_monotonic_time ();
    gboolean ok;

    g_printerr ("writing a %" G_GUINT64_FORMAT " MiB source image...", self->disk_size / MIB);
    ok = vmr_bench_image_create_source (source, self->disk_size, 7, error);
    g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    return ok;
}

/* what the bench runs, and the heads of the runs' columns */
static void
print_header (Bench *self, const gchar *source)
{
    g_print ("virt-mirror policy benchmark: a busy guest's I/O while its disk migrates\n");
    g_print ("  guest: fio randrw 70/30, 8 KiB, iodepth 1, vmr.iops=%u, %" G_GUINT64_FORMAT
             " MiB raw disk (iothread%s)\n",
             self->iops, self->disk_size / MIB,
             vmr_guest_disk_takes_o_direct (source) ? ", cache.direct=on, aio=native"
                                                    : ", host cache");
    g_print ("  policy variant: %s\n", self->policy_path);
    g_print ("  IOPS and latency (us) are the guest's; during is migrate -> synced; migration "
             "is that plus job-pivot -> completed (s)\n");
    g_print ("  %-5s %-12s %7s %7s %7s %7s %8s %8s %9s  %s\n", "round", "variant", "before",
             "during", "after", "dur/bef", "lat bef", "lat dur", "migration", "job states");
}

/*
 * @rounds rounds, each running the variants (only the policy's with
 * @only_policy) in turn first, their figures added to @figures
 */
static gboolean
run_rounds (Bench *self, guint rounds, gboolean only_policy, const gchar *source,
            Figures figures[N_VARIANTS], GError **error)
{
    for (guint round = 1; round <= rounds; round++) {
        guint order[N_VARIANTS];

        vmr_bench_round_order (round - 1, N_VARIANTS, order);
        for (guint i = 0; i < N_VARIANTS; i++) {
            Variant v = order[i];
            RunResult result;
            gboolean ok;

            if (only_policy && v != VARIANT_POLICY)
                continue;
            ok = bench_run (self, v, source, &result, error);
            if (ok) {
                bench_policy_print_run (round, v, &result);
                bench_policy_figures_add (&figures[v], &result);
            }
            bench_policy_run_result_clear (&result);
            if (!ok)
                return FALSE;
        }
    }
    return TRUE;
}

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *qemu_opt = NULL;
    g_autofree gchar *policy_opt = NULL;
    g_autofree gchar *guest_opt = NULL;
    g_autofree gchar *dir_opt = NULL;
    gint rounds = VMR_BENCH_MIN_ROUNDS;
    gint iops = 1400;
    gint disk_mib = 2048;
    gint settle_s = 4;
    gint before_s = 10;
    gint after_gap_s = 10;
    gint after_s = 10;
    gboolean only_policy = FALSE;
    const GOptionEntry entries[] = {
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds; each boots the guest twice, once per variant, in turn first (default 3, the "
          "fewest "
          "for a verdict)",
          "N" },
        { "iops", 0, 0, G_OPTION_ARG_INT, &iops, "The guest's fixed rate, vmr.iops (default 1400)",
          "N" },
        { "disk-size", 0, 0, G_OPTION_ARG_INT, &disk_mib, "The guest's disk, MiB (default 2048)",
          "MIB" },
        { "settle", 0, 0, G_OPTION_ARG_INT, &settle_s,
          "Seconds of load not measured before the baseline (default 4)", "S" },
        { "before", 0, 0, G_OPTION_ARG_INT, &before_s, "Seconds of baseline (default 10)", "S" },
        { "after-gap", 0, 0, G_OPTION_ARG_INT, &after_gap_s,
          "Seconds not measured after the pivot, while fio makes up for lost I/Os (default 10)",
          "S" },
        { "after", 0, 0, G_OPTION_ARG_INT, &after_s, "Seconds measured after that (default 10)",
          "S" },
        { "only-policy", 0, 0, G_OPTION_ARG_NONE, &only_policy,
          "Skip the unthrottled variant (to try policy files)", NULL },
        { "policy", 'p', 0, G_OPTION_ARG_FILENAME, &policy_opt,
          "The policy of the second variant (default: the example, data/policy.conf)", "FILE" },
        VMR_BENCH_OPTION_GUEST (&guest_opt),
        { NULL },
    };
    const VmrBenchCommonOptions common
        = { .dir = &dir_opt, .daemon = &daemon_opt, .qemu = &qemu_opt };
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autofree gchar *source = NULL;
    Figures figures[N_VARIANTS];
    gboolean ok;

    if (!vmr_bench_parse_options ("bench-policy", NULL,
                                  "Measures a busy guest's IOPS before, during and after the "
                                  "migration of its disk, unthrottled and with the policy.",
                                  entries, &common, &argc, &argv))
        return 2;
    if (argc > 1 || rounds < 1 || iops < 1 || disk_mib < 64 || settle_s < 0 || before_s < 2
        || after_gap_s < 0 || after_s < 2) {
        g_printerr ("bench-policy: bad arguments; see --help\n");
        return 2;
    }
    self->daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    self->qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    self->policy_path = vmr_bench_pick_program (policy_opt, NULL, VMR_BENCH_POLICY);
    self->iops = (guint) iops;
    self->disk_size = (guint64) disk_mib * MIB;
    self->settle_s = (guint) settle_s;
    self->before_s = (guint) before_s;
    self->after_gap_s = (guint) after_gap_s;
    self->after_s = (guint) after_s;
    guest_init (self);
    vmr_bench_catch_signals (&self->interrupted);
    for (guint v = 0; v < N_VARIANTS; v++)
        bench_policy_figures_init (&figures[v]);

    load_at_start = vmr_bench_load_average ();
    ok = vmr_bench_guest_find (&self->guest, guest_opt, &error)
         && make_dirs (self, dir_opt, &error);
    if (ok) {
        source = g_build_filename (self->guest.image_dir, "source.raw", NULL);
        ok = write_source (self, source, &error);
    }
    if (ok)
        print_header (self, source);
    if (ok)
        ok = run_rounds (self, (guint) rounds, only_policy, source, figures, &error);
    if (!ok) {
        g_printerr ("bench-policy: %s\n", error->message);
        for (guint v = 0; v < N_VARIANTS; v++)
            bench_policy_figures_clear (&figures[v]);
        return 1;
    }

    vmr_bench_guest_print_host (&self->guest, load_at_start);
    bench_policy_print_summary (figures, only_policy ? VARIANT_POLICY : 0, TARGET_RATIO);
    g_print ("  data check: every run's destination equalled its source at the pivot: yes\n");
    for (guint v = 0; v < N_VARIANTS; v++)
        bench_policy_figures_clear (&figures[v]);
    if (g_unlink (source) < 0)
        g_warning ("cannot remove %s: %s", source, g_strerror (errno));
    return vmr_bench_exit_status ();
}
