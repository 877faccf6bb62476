/*
 * bench-adaptive: the frontier of the closed-loop speed. For each workload
 * of the test guest (tests/guest) it boots one guest on a storage profile
 * (bench-storage.h: shared-array, local-file, memory) and migrates its disk
 * again and again through virt-mirrord, each copy from where the last one
 * left the disk, each checked byte for byte at its pivot (bench-guest.c):
 *   unlimited  control = static, no speed;
 *   caps       control = static, speed = a cap, bisected until the two
 *              static copies that converged around the adaptive copy's
 *              harm (or X's, before it ran) are within 15% in speed;
 *   adaptive   control = adaptive, guest-impact = X (--target).
 * Each static copy is a point (harm, time); the adaptive one is judged
 * against them (bench-adaptive-report.c). The harm is the guest's:
 * max (latency during / before - 1, 1 - IOPS during / before), from its
 * fio's VMR-IOPS console lines and from QEMU's blockstats of its device
 * sampled each second, the larger of the two. Before is the span up to
 * `migrate`, during is `migrate` to `synced`. The daemon's policy is
 * rewritten and reloaded before each copy.
 *
 * Run it with `ninja -C BUILDDIR bench-adaptive`, or run
 * BUILDDIR/tests/bench/bench-adaptive directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-adaptive.h"
#include "bench-guest.h"
#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "bench-storage.h"
#include "cli-report-data.h"
#include "cli-report-svg.h"
#include "guest-disk.h"
#include "vmr-error.h"

#define MIB             (1024 * 1024)
#define START_TIMEOUT_S 30
#define STOP_TIMEOUT_S  30
/* the bracket of the static caps, MiB/s */
#define BRACKET_START_MIB 64
#define BRACKET_TOL_MIB   25
/*
 * The mirror copies a 64 KiB chunk again for each 8 KiB write into it: a
 * cap under the guest's writes (30% of its IOPS) times that, with a
 * margin, never lets the copy converge. No cap is tried below it.
 */
#define DIRTY_CHUNK     (64 * 1024)
#define WRITE_SHARE     0.30
#define CONVERGE_MARGIN 1.25
/* the catch-up after a copy: see wait_caught_up () */
#define CATCH_UP_MAX_S  60
#define CATCH_UP_SPAN_S 3
#define CATCH_UP_RATIO  1.10
/* baselines measured at most, should fio still be catching up */
#define BEFORE_ATTEMPTS 4
/* a bursty guest is measured over a whole busy + idle cycle */
#define BURST_CYCLE_S 40
/* a VMR-IOPS line of a bursty guest under this many IOPS is one of its idle seconds */
#define BURST_IDLE_IOPS 50
/* times a round the bench boots the guest again after it went silent after a pivot */
#define MAX_RESTARTS 2

static const Workload workloads[] = {
    { "fixed-1400", "vmr.iops=1400", "fio 8 KiB randrw 70/30, iodepth 1, 1400 IOPS", TRUE, FALSE,
      FALSE, FALSE, FALSE },
    { "fixed-max", NULL, "the same at the guest's maximum fixed rate, measured", TRUE, FALSE, FALSE,
      FALSE, TRUE },
    { "closed-loop", "vmr.iops=0 vmr.iodepth=4", "no rate limit, iodepth 4", FALSE, FALSE, FALSE,
      FALSE, FALSE },
    { "bursty", "vmr.iops=1400 vmr.burst=20:20", "1400 IOPS for 20 s, then 20 s idle", FALSE, TRUE,
      FALSE, FALSE, FALSE },
    { "idle", "vmr.job=idle", "no I/O", FALSE, FALSE, TRUE, FALSE, FALSE },
    /* each 8 KiB write dirties a 64 KiB chunk: 1000 writes/s dirty 62.5 MiB/s */
    { "heavy", "vmr.iops=0 vmr.rwmixread=0 vmr.iodepth=4",
      "fio 8 KiB random writes, no rate limit, iodepth 4", FALSE, FALSE, FALSE, TRUE, FALSE },
};

typedef struct {
    /* options */
    gchar *daemon_path;
    gchar *qemu_path;
    guint64 disk_size;
    guint settle_s;
    guint before_s;
    guint gap_s;
    guint max_caps;              /* caps tried per workload and round */
    gchar *granularity;          /* --granularity: an adaptive copy at it too, NULL = none */
    gchar *buf_size;             /* --buf-size: the policy's buf-size of every job, NULL = QEMU's */
    AdaptiveYardstick yardstick; /* --target, the storage */
    VmrBenchStorage storage;     /* --storage */
    GRand *order;                /* which copies of a round go first, from --seed */
    gchar *svg_path;             /* --svg, NULL = none */
    gchar *report_svg;           /* the first adaptive copy's report picture, for --svg */
    const WorkloadRound *svg_round; /* its round */
    /* places */
    gchar *policy_file; /* rewritten and reloaded before each copy */
    gchar *image;       /* the guest's disk now */
    /* processes */
    GSubprocess *daemon;
    VmrQmpClient *control;
    VmrBenchGuest guest; /* the guest, its places, and its job */
    guint run_number;    /* guests booted */
    guint image_number;  /* images made */
    gboolean interrupted;
} Bench;

/* ---- the daemon and the guest of one workload ---- */

static gboolean
set_policy (Bench *self, const gchar *text, GError **error)
{
    g_autoptr (JsonObject) reply = NULL;
    /* --buf-size: every job of the run gets it, under [defaults] */
    g_autofree gchar *full = self->buf_size == NULL
                                 ? g_strdup (text)
                                 : g_strdup_printf ("%sbuf-size = %s\n", text, self->buf_size);

    g_assert (g_str_has_prefix (text, "[defaults]\n") && strchr (text, '[') == strrchr (text, '['));
    if (!g_file_set_contents (self->policy_file, full, -1, error))
        return FALSE;
    if (self->control == NULL)
        return TRUE;
    reply = vmr_bench_control_call (self->control, "reload", NULL, error);
    return reply != NULL;
}

static void
stop_workload (Bench *self)
{
    vmr_bench_guest_stop (&self->guest);
    vmr_bench_close (&self->control, &self->guest);
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
}

/* a fresh daemon, and the guest booted with @load_args on the current image, settled */
static gboolean
start_workload (Bench *self, const gchar *load_args, gboolean has_load, GError **error)
{
    g_autofree gchar *image_uri
        = vmr_bench_storage_uri (&self->storage, self->image, self->image_number);

    self->run_number++;
    if (!set_policy (self, "[defaults]\n", error))
        return FALSE;
    self->daemon = vmr_bench_start_daemon (&self->guest.daemon_spec, self->policy_file,
                                           self->run_number, &self->control, NULL, error);
    if (self->daemon == NULL)
        return FALSE;
    vmr_bench_guest_watch_jobs (&self->guest, self->control);
    return vmr_bench_guest_start (&self->guest, image_uri != NULL ? image_uri : self->image,
                                  load_args, self->run_number, error)
           && vmr_bench_guest_attach_settle (&self->guest, self->control, has_load, self->settle_s,
                                             error);
}

/* the guest's IOPS and latency over a span; a bursty guest's busy seconds only */
static gdouble
guest_iops (Bench *self, const Workload *workload, gint64 from, gint64 to, gdouble *latency_us)
{
    g_autoptr (GArray) iops = vmr_guest_console_get_iops (self->guest.console);

    if (workload->bursty && iops->len > 0) {
        g_autoptr (GArray) busy = g_array_new (FALSE, FALSE, sizeof (VmrGuestIops));

        /* the first line is fio's start, left out of every mean: keep it first */
        g_array_append_val (busy, g_array_index (iops, VmrGuestIops, 0));
        for (guint i = 1; i < iops->len; i++) {
            const VmrGuestIops *line = &g_array_index (iops, VmrGuestIops, i);

            if (line->read_iops + line->write_iops >= BURST_IDLE_IOPS)
                g_array_append_val (busy, *line);
        }
        return vmr_guest_iops_mean (busy, from, to, latency_us, NULL);
    }
    return vmr_guest_iops_mean (iops, from, to, latency_us, NULL);
}

/* the same as QEMU's blockstats of the guest's device count it; -1 when they cannot say */
static gdouble
qemu_iops (Bench *self, const Workload *workload, gint64 from, gint64 to, gdouble *latency_us)
{
    *latency_us = -1;
    if (self->guest.blockstats == NULL)
        return -1;
    return vmr_bench_blockstats_mean (self->guest.blockstats, from, to,
                                      workload->bursty ? BURST_IDLE_IOPS : 0, latency_us);
}

/*
 * After a copy that cost a fixed-rate guest I/Os, fio runs faster until it
 * has made them up. Waits, at most CATCH_UP_MAX_S, until the guest's last
 * CATCH_UP_SPAN_S seconds are back under CATCH_UP_RATIO times @steady_iops.
 */
static gboolean
wait_caught_up (Bench *self, gdouble steady_iops, GError **error)
{
    gint64 until = g_get_monotonic_time () + CATCH_UP_MAX_S * G_USEC_PER_SEC;

    while (g_get_monotonic_time () < until) {
        g_autoptr (GArray) iops = vmr_guest_console_get_iops (self->guest.console);
        gint64 now = g_get_monotonic_time ();
        gdouble recent
            = vmr_guest_iops_mean (iops, now - CATCH_UP_SPAN_S * G_USEC_PER_SEC, now, NULL, NULL);

        if (recent <= CATCH_UP_RATIO * steady_iops)
            return TRUE;
        if (!vmr_bench_guest_sleep (&self->guest, 1, error))
            return FALSE;
    }
    g_printerr ("the guest had not caught up after %d s; measuring anyway\n", CATCH_UP_MAX_S);
    return TRUE;
}

/*
 * The guest went silent after a pivot (docs/performance.md, "A guest that
 * stops after a pivot"): a second stop and cont, or else a fresh daemon
 * and guest on its disk, at most MAX_RESTARTS times a round. Printed, and
 * counted in @round.
 */
static gboolean
revive_guest (Bench *self, WorkloadRound *round, guint before_s, GError **error)
{
    g_autofree gchar *what = NULL;
    gboolean resumed = FALSE;

    if (!vmr_bench_guest_revive (&self->guest, &resumed, &what, error))
        return FALSE;
    g_print ("  %-5u %-11s the guest reported no I/O for %u s before a copy: %s\n", round->round,
             round->workload->name, before_s, what);
    if (resumed) {
        round->revived++;
        return TRUE;
    }
    if (round->restarted == MAX_RESTARTS) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "the guest went silent again after %u restarts in round %u", MAX_RESTARTS,
                     round->round);
        return FALSE;
    }
    round->restarted++;
    stop_workload (self);
    return start_workload (self, round->load_args, TRUE, error);
}

/* ---- one job ---- */

/*
 * Cancels the running job that did not converge within the job limit:
 * the disk stays on its source. The copy's span ends now.
 */
static gboolean
cancel_job (Bench *self, VmrBenchMigration *migration, JsonObject **out_job, GError **error)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;

    migration->synced_mono = g_get_monotonic_time ();
    migration->migration_s
        = (gdouble) (migration->synced_mono - migration->start_mono) / G_USEC_PER_SEC;
    json_object_set_string_member (args, "id", self->guest.job_id);
    reply = vmr_bench_control_call (self->control, "job-cancel", args, error);
    if (reply == NULL)
        return FALSE;
    while (self->guest.job_end_mono == 0)
        if (!vmr_bench_guest_sleep (&self->guest, 0.1, error))
            return FALSE;
    /* the record of the cancelled job: the speeds its controller set */
    if (*out_job == NULL)
        *out_job = vmr_bench_control_call (self->control, "query-job", args, error);
    return *out_job != NULL;
}

/* the controller's speeds, MiB/s at seconds since its first, equal neighbours merged */
static gchar *
describe_speeds (JsonObject *job, const gchar *converged_by)
{
    JsonObject *controller
        = vmr_json_get_object (vmr_json_get_object (job, "policy"), "controller");
    JsonArray *speeds = vmr_json_get_array (controller, "speeds");
    g_autoptr (GString) text = g_string_new (NULL);
    gdouble last = -1;
    guint shown = 0;

    for (guint i = 0; speeds != NULL && i < json_array_get_length (speeds); i++) {
        JsonObject *point = vmr_json_array_object (speeds, i);
        gdouble speed = vmr_json_double_or (point, "speed", -1) / MIB;

        if (speed == last)
            continue;
        last = speed;
        if (shown++ == 24) {
            g_string_append (text, " ...");
            continue;
        }
        if (shown > 24)
            continue;
        if (speed == 0)
            g_string_append_printf (text, "%s%.0fs:unl", text->len > 0 ? " " : "",
                                    vmr_json_double_or (point, "time", 0));
        else
            g_string_append_printf (text, "%s%.0fs:%.1f", text->len > 0 ? " " : "",
                                    vmr_json_double_or (point, "time", 0), speed);
    }
    if (shown > 24) {
        /* the last speed it set, after the ellipsis */
        JsonObject *point = vmr_json_array_object (speeds, json_array_get_length (speeds) - 1);

        g_string_append_printf (text, " %.0fs:%.1f (%u changes)",
                                vmr_json_double_or (point, "time", 0),
                                vmr_json_double_or (point, "speed", 0) / MIB, shown);
    }
    if (text->len == 0)
        g_string_append (text, "none");
    if (converged_by != NULL)
        g_string_append_printf (text, "; converged by %s", converged_by);
    return g_string_free (g_steal_pointer (&text), FALSE);
}

/* the daemon's policy for a job of @kind (@cap_mib for JOB_CAP); free with g_free() */
static gchar *
job_policy (const Bench *self, JobKind kind, guint cap_mib)
{
    if (kind == JOB_ADAPTIVE)
        return g_strdup_printf ("[defaults]\ncontrol = adaptive\nguest-impact = %.0f%%\n",
                                self->yardstick.target * 100);
    if (kind == JOB_ADAPTIVE_GRANULAR)
        return g_strdup_printf ("[defaults]\ncontrol = adaptive\nguest-impact = %.0f%%\n"
                                "granularity = %s\n",
                                self->yardstick.target * 100, self->granularity);
    if (kind == JOB_CONVERGE_SPEED || kind == JOB_CONVERGE_BLOCKING)
        return g_strdup_printf ("[defaults]\ncontrol = adaptive\nguest-impact = 5%%\n"
                                "converge-after = 10s\nconverge-by = %s\ndeadline = %us\n"
                                "on-deadline = continue\n",
                                kind == JOB_CONVERGE_SPEED ? "speed" : "write-blocking",
                                ADAPTIVE_HEAVY_DEADLINE_S);
    if (kind == JOB_CAP)
        return g_strdup_printf ("[defaults]\nspeed = %uM\n", cap_mib);
    return g_strdup ("[defaults]\n");
}

/*
 * The gap after the last copy, then the baseline of the next: its start in
 * *@out_start. A guest that went silent is revived, and @policy set again
 * on the daemon that may have been started anew.
 */
static gboolean
measure_baseline (Bench *self, WorkloadRound *round, const gchar *policy, guint before_s,
                  gint64 *out_start, GError **error)
{
    /*
     * fio's rate limit keeps to its average: after the last copy's slow
     * spell it runs faster until it has made up the I/Os it missed. The
     * baseline starts once that is over.
     */
    if (!vmr_bench_guest_sleep (&self->guest, self->gap_s, error))
        return FALSE;
    for (guint attempt = 1;; attempt++) {
        gdouble before;

        if (round->steady_iops > 0 && !round->workload->bursty
            && !wait_caught_up (self, round->steady_iops, error))
            return FALSE;
        *out_start = g_get_monotonic_time ();
        if (!vmr_bench_guest_sleep (&self->guest, before_s, error))
            return FALSE;
        /*
         * fio's catch-up comes in bursts: one that falls in the baseline
         * makes it too high, and the copy look harmful. Measure again.
         */
        before = guest_iops (self, round->workload, *out_start, g_get_monotonic_time (), NULL);
        /* a busy guest that stopped reporting would make the copy look like an idle one's */
        if (before < 0 && !round->workload->idle && !round->workload->bursty) {
            if (!revive_guest (self, round, before_s, error) || !set_policy (self, policy, error))
                return FALSE;
            continue;
        }
        if (round->steady_iops <= 0 || round->workload->bursty
            || before <= CATCH_UP_RATIO * round->steady_iops || attempt == BEFORE_ATTEMPTS)
            return TRUE;
        g_printerr ("the guest did %.0f IOPS before the copy, over %.2f times its steady %.0f: "
                    "still catching up, measuring again\n",
                    before, CATCH_UP_RATIO, round->steady_iops);
    }
}

/*
 * One migration of the guest's disk under the policy of @kind (@cap_mib for
 * JOB_CAP): the gap after the last copy, the baseline, the copy and the byte
 * check. The disk ends on a new image; the old one is removed.
 */
static JobResult *
run_job (Bench *self, WorkloadRound *round, JobKind kind, guint cap_mib, GError **error)
{
    g_autoptr (JobResult) result = g_new0 (JobResult, 1);
    g_autoptr (JsonObject) job = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *dest_uri = NULL;
    g_autoptr (GError) local = NULL;
    VmrBenchMigration migration = { 0 };
    guint before_s = round->workload->bursty ? MAX (self->before_s, BURST_CYCLE_S) : self->before_s;
    gint64 before_start;

    result->kind = kind;
    result->cap_mib = cap_mib;
    if (kind == JOB_ADAPTIVE_GRANULAR)
        result->granularity = g_strdup (self->granularity);
    policy = job_policy (self, kind, cap_mib);
    if (!set_policy (self, policy, error)
        || !measure_baseline (self, round, policy, before_s, &before_start, error))
        return NULL;

    dest = g_strdup_printf ("%s/disk-%u.raw", self->guest.image_dir, self->image_number + 1);
    dest_uri = vmr_bench_storage_uri (&self->storage, dest, self->image_number + 1);
    /* an export is served from a file that is there */
    if (dest_uri != NULL && !vmr_bench_image_create_destination (dest, self->disk_size, error))
        return NULL;
    if (!vmr_bench_guest_migrate (&self->guest, self->control, self->image, dest, dest_uri,
                                  self->disk_size, &migration, &job, &local)) {
        if (!g_error_matches (local, VMR_ERROR, VMR_ERROR_TIMEOUT)
            || !cancel_job (self, &migration, &job, error)) {
            if (local != NULL)
                g_propagate_error (error, g_steal_pointer (&local));
            return NULL;
        }
        result->timed_out = TRUE;
        if (dest_uri != NULL)
            g_unlink (dest);
    } else {
        self->image_number++;
        if (g_unlink (self->image) < 0 && errno != ENOENT)
            g_warning ("cannot remove %s: %s", self->image, g_strerror (errno));
        g_free (self->image);
        self->image = g_steal_pointer (&dest);
    }

    result->before_iops = guest_iops (self, round->workload, before_start, migration.start_mono,
                                      &result->before_lat_us);
    result->during_iops = guest_iops (self, round->workload, migration.start_mono,
                                      migration.synced_mono, &result->during_lat_us);
    result->qemu_before_iops = qemu_iops (self, round->workload, before_start, migration.start_mono,
                                          &result->qemu_before_lat_us);
    result->qemu_during_iops = qemu_iops (self, round->workload, migration.start_mono,
                                          migration.synced_mono, &result->qemu_during_lat_us);
    result->migration_s = migration.migration_s;
    result->mib_s = migration.migration_s > 0 && !result->timed_out
                        ? (gdouble) self->disk_size / MIB / migration.migration_s
                        : 0;
    if (job != NULL && vmr_json_get_object (job, "convergence") != NULL)
        result->converged_by
            = g_strdup (vmr_json_get_string (vmr_json_get_object (job, "convergence"), "by"));
    if (kind != JOB_UNLIMITED && kind != JOB_CAP && job != NULL)
        result->speeds = describe_speeds (job, result->converged_by);
    else if (kind == JOB_CAP)
        result->speeds = g_strdup_printf ("static %u", cap_mib);
    else
        result->speeds = g_strdup ("static unlimited");
    adaptive_print_job (round, result);
    g_ptr_array_add (round->jobs, result);
    return g_steal_pointer (&result);
}

/* ---- one workload in one round ---- */

/* the slowest cap tried that did not converge, 0 = none */
static guint
slowest_stuck (const WorkloadRound *round)
{
    guint stuck = 0;

    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (result->kind == JOB_CAP && result->timed_out && (stuck == 0 || result->cap_mib > stuck))
            stuck = result->cap_mib;
    }
    return stuck;
}

/*
 * The guest's IOPS the floor of the caps is made of: its fixed rate when it
 * has one, else the most it did before a copy. A baseline taken while a
 * loaded host starved the guest put the floor at 16 MiB/s for a guest of
 * 1400 IOPS, and that cap never converged.
 */
static gdouble
guest_rate (const WorkloadRound *round, const JobResult *unlimited)
{
    const gchar *fixed = strstr (round->load_args, "vmr.iops=");
    gdouble rate = MAX (unlimited->before_iops, round->steady_iops);

    if (fixed != NULL)
        rate = MAX (rate, g_ascii_strtod (fixed + strlen ("vmr.iops="), NULL));
    return rate;
}

/*
 * The static frontier around @harm: bisects the caps until the two static
 * copies that converged around it (the fastest with a harm of at most
 * @harm, the gentlest with more) are within ADAPTIVE_BRACKET_SPREAD of each
 * other in speed, or no cap that converges is gentle enough, or @max_caps
 * caps were run in the round. Reuses every static copy of the round.
 */
static gboolean
bisect_frontier (Bench *self, WorkloadRound *round, const JobResult *unlimited, gdouble harm,
                 guint max_caps, GError **error)
{
    if (round->floor_mib == 0)
        round->floor_mib = MAX ((guint) (guest_rate (round, unlimited) * WRITE_SHARE * DIRTY_CHUNK
                                         * CONVERGE_MARGIN / MIB)
                                    + 1,
                                1);
    while (round->caps_tried < max_caps) {
        const JobResult *gentle, *harsh;
        gdouble low, high;
        guint cap;

        workload_round_bracket (round, harm, TRUE, &gentle, &harsh);
        if (harsh == NULL)
            return TRUE; /* the unlimited copy is gentle enough */
        high = job_static_speed (harsh);
        low = gentle != NULL ? job_static_speed (gentle)
                             : MAX (round->floor_mib, slowest_stuck (round));
        if (gentle != NULL && high - low <= ADAPTIVE_BRACKET_SPREAD * high)
            return TRUE;
        cap = gentle != NULL || slowest_stuck (round) > 0
                  ? (guint) ((low + high) / 2)
                  : MAX ((guint) (high / 2), round->floor_mib);
        if (cap <= low && (gentle != NULL || slowest_stuck (round) > 0))
            return TRUE;
        if (cap >= high)
            return TRUE; /* no cap converges that could be gentler */
        round->caps_tried++;
        if (run_job (self, round, JOB_CAP, cap, error) == NULL)
            return FALSE;
    }
    return TRUE;
}

/* the guest's IOPS at iodepth 1 without a rate limit, on a guest of its own */
static gboolean
measure_max_rate (Bench *self, guint *out_iops, GError **error)
{
    gint64 from;
    gdouble iops;
    gboolean ok;

    ok = start_workload (self, "vmr.iops=0", TRUE, error);
    from = g_get_monotonic_time ();
    ok = ok && vmr_bench_guest_sleep (&self->guest, self->before_s, error);
    if (ok) {
        g_autoptr (GArray) lines = vmr_guest_console_get_iops (self->guest.console);

        iops = vmr_guest_iops_mean (lines, from, g_get_monotonic_time (), NULL, NULL);
        if (iops <= 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the guest did no I/O");
            ok = FALSE;
        } else {
            *out_iops = (guint) iops;
        }
    }
    stop_workload (self);
    return ok;
}

/*
 * For --svg, the first adaptive copy's report picture: its series from
 * the daemon, drawn by `virt-mirror report --svg`'s code
 */
static gboolean
keep_report_svg (Bench *self, const WorkloadRound *round, GError **error)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    g_autoptr (JsonNode) node = NULL;
    g_autoptr (VmrReport) report = NULL;

    if (self->svg_path == NULL || self->svg_round != NULL)
        return TRUE;
    json_object_set_string_member (args, "id", self->guest.job_id);
    reply = vmr_bench_control_call (self->control, "query-job-series", args, error);
    if (reply == NULL)
        return FALSE;
    node = json_node_init_object (json_node_alloc (), reply);
    report = vmr_report_new (node, error);
    if (report == NULL)
        return FALSE;
    self->report_svg = vmr_report_to_svg (report);
    self->svg_round = round;
    return TRUE;
}

/* the adaptive copy, and the one at --granularity if asked */
static gboolean
run_adaptive (Bench *self, WorkloadRound *round, GError **error)
{
    const JobResult *adaptive = run_job (self, round, JOB_ADAPTIVE, 0, error);

    if (adaptive == NULL || !keep_report_svg (self, round, error))
        return FALSE;
    /* the first copy of the round: its baseline, right after the boot, is the steady rate */
    if (round->steady_iops <= 0)
        round->steady_iops = adaptive->before_iops;
    return self->granularity == NULL || round->workload->idle
           || run_job (self, round, JOB_ADAPTIVE_GRANULAR, 0, error) != NULL;
}

/* the harm the caps bracket: the adaptive copy's when it converged, else X */
static gdouble
frontier_harm (const Bench *self, const WorkloadRound *round)
{
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        /* an adaptive copy that did not converge is judged by X alone */
        if (result->kind == JOB_ADAPTIVE && !result->timed_out)
            return job_harm (result);
    }
    return self->yardstick.target;
}

static gboolean
run_workload_round (Bench *self, WorkloadRound *round, GError **error)
{
    const Workload *workload = round->workload;
    const JobResult *unlimited;

    if (workload->load_args == NULL) {
        if (!measure_max_rate (self, &round->fixed_iops, error))
            return FALSE;
        round->load_args = g_strdup_printf ("vmr.iops=%u", round->fixed_iops);
        g_print ("  %-5u %-11s the guest's maximum at iodepth 1: %u IOPS, the fixed rate\n",
                 round->round, workload->name, round->fixed_iops);
    } else {
        round->load_args = g_strdup (workload->load_args);
    }
    if (!start_workload (self, round->load_args, !workload->idle, error))
        return FALSE;
    if (workload->heavy) {
        /* no cap converges while the guest writes faster: the two ways to converge */
        if (run_job (self, round, JOB_CONVERGE_SPEED, 0, error) == NULL
            || run_job (self, round, JOB_CONVERGE_BLOCKING, 0, error) == NULL)
            return FALSE;
        stop_workload (self);
        return TRUE;
    }
    /*
     * the copy that runs second in a round was seen slower by up to 15%
     * whichever it was, and the guest's load drifts over a round: the
     * adaptive copies go before or after the static ones as --seed draws
     * (the caps are bisected from the unlimited copy, which comes first of
     * those, towards the adaptive copy's harm, or X before it ran)
     */
    round->adaptive_first = g_rand_boolean (self->order);
    g_print ("  %-5u %-11s order: the adaptive copy %s the static ones\n", round->round,
             workload->name, round->adaptive_first ? "before" : "after");
    if (round->adaptive_first && !run_adaptive (self, round, error))
        return FALSE;
    unlimited = run_job (self, round, JOB_UNLIMITED, 0, error);
    if (unlimited == NULL)
        return FALSE;
    /* the first baseline, right after the boot, is the guest's steady rate */
    if (round->steady_iops <= 0)
        round->steady_iops = unlimited->before_iops;
    /* before the adaptive copy, around X: half the caps, the rest around its harm after it */
    if (!workload->idle
        && !bisect_frontier (self, round, unlimited, frontier_harm (self, round),
                             round->adaptive_first ? self->max_caps : self->max_caps / 2, error))
        return FALSE;
    if (!round->adaptive_first && !run_adaptive (self, round, error))
        return FALSE;
    /* now that the adaptive copy's harm is known, the frontier around it */
    if (!workload->idle && !round->adaptive_first
        && !bisect_frontier (self, round, unlimited, frontier_harm (self, round), self->max_caps,
                             error))
        return FALSE;
    stop_workload (self);
    return TRUE;
}

/* ---- set-up ---- */

static void
bench_free (Bench *self)
{
    stop_workload (self);
    vmr_bench_storage_stop (&self->storage);
    vmr_bench_guest_clear (&self->guest);
    g_clear_pointer (&self->order, g_rand_free);
    g_free (self->daemon_path);
    g_free (self->qemu_path);
    g_free (self->policy_file);
    g_free (self->image);
    g_free (self->granularity);
    g_free (self->buf_size);
    g_free (self->svg_path);
    g_free (self->report_svg);
    g_free (self);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Bench, bench_free)

static gboolean
make_dirs (Bench *self, const gchar *image_parent, GError **error)
{
    if (!vmr_bench_guest_make_dirs (&self->guest, self->daemon_path, image_parent, START_TIMEOUT_S,
                                    error))
        return FALSE;
    self->policy_file = g_build_filename (self->guest.run_dir, "policy.conf", NULL);
    return TRUE;
}

/* the workloads --workload names (NULL: every one) in *@out; FALSE for an unknown name */
static gboolean
pick_workloads (const gchar *name, const Workload **out, guint *out_n)
{
    *out_n = 0;
    for (guint w = 0; w < G_N_ELEMENTS (workloads); w++)
        if (name == NULL || g_strcmp0 (name, workloads[w].name) == 0)
            out[(*out_n)++] = &workloads[w];
    return *out_n > 0;
}

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *qemu_opt = NULL;
    g_autofree gchar *guest_opt = NULL;
    g_autofree gchar *dir_opt = NULL;
    g_autofree gchar *workload_opt = NULL;
    g_autofree gchar *granularity_opt = NULL;
    g_autofree gchar *buf_size_opt = NULL;
    g_autofree gchar *storage_opt = NULL;
    g_autofree gchar *storage_line = NULL;
    g_autofree gchar *svg_opt = NULL;
    gint target_pct = 25;
    gint max_harm_pct = 100;
    gint budget_mb = 200;
    gdouble delay_ms = 0.3;
    gint64 seed = -1;
    gint rounds = VMR_BENCH_MIN_ROUNDS;
    gint disk_mib = 0;
    gint settle_s = 4;
    gint before_s = 10;
    gint gap_s = 10;
    gint max_caps = 6;
    gint job_limit_s = 0;
    gboolean quick = FALSE;
    const GOptionEntry entries[] = {
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds; each runs every workload (default 3, the fewest for a verdict)", "N" },
        { "workload", 'w', 0, G_OPTION_ARG_STRING, &workload_opt,
          "Only this workload: fixed-1400, fixed-max, closed-loop, bursty, idle or heavy (default "
          "all)",
          "NAME" },
        { "disk-size", 0, 0, G_OPTION_ARG_INT, &disk_mib,
          "The guest's disk, MiB (default 1024; 512 with --quick)", "MIB" },
        { "settle", 0, 0, G_OPTION_ARG_INT, &settle_s,
          "Seconds of load not measured after the boot (default 4)", "S" },
        { "before", 0, 0, G_OPTION_ARG_INT, &before_s,
          "Seconds of baseline before each copy (default 10; a bursty guest's is 40)", "S" },
        { "gap", 0, 0, G_OPTION_ARG_INT, &gap_s,
          "Seconds not measured after each copy, while fio makes up for lost I/Os (default 10)",
          "S" },
        { "max-caps", 0, 0, G_OPTION_ARG_INT, &max_caps,
          "Static caps tried at most per workload and round (default 6, also with --quick)", "N" },
        { "job-limit", 0, 0, G_OPTION_ARG_INT, &job_limit_s,
          "Seconds a copy may take to reach synced before it is cancelled and reported so "
          "(default 300; 120 with --quick)",
          "S" },
        { "granularity", 0, 0, G_OPTION_ARG_STRING, &granularity_opt,
          "Also an adaptive copy with this mirror granularity (the policy's granularity key, "
          "e.g. 8K), after the one at QEMU's default",
          "SIZE" },
        { "buf-size", 0, 0, G_OPTION_ARG_STRING, &buf_size_opt,
          "Every job of the run with this buf-size (the policy's key: what the mirror has in "
          "flight, e.g. 1M; default QEMU's 16 MiB)",
          "SIZE" },
        { "storage", 's', 0, G_OPTION_ARG_STRING, &storage_opt,
          "Where the guest's disk is: shared-array, local-file or memory (default shared-array)",
          "NAME" },
        { "target", 't', 0, G_OPTION_ARG_INT, &target_pct,
          "X, the adaptive copy's guest-impact and the harm F1 allows, percent (default 25)",
          "PCT" },
        { "max-harm", 0, 0, G_OPTION_ARG_INT, &max_harm_pct,
          "The policy's max-harm F3 judges under, percent (default 100, the built-in)", "PCT" },
        { "budget", 0, 0, G_OPTION_ARG_INT, &budget_mb,
          "shared-array: each server's budget, MB/s, reads and writes together (default 200)",
          "MB" },
        { "delay", 0, 0, G_OPTION_ARG_DOUBLE, &delay_ms,
          "shared-array: the delay added to each request, ms (default 0.3)", "MS" },
        { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
          "The seed of the order of each round's copies (default: drawn, and printed)", "N" },
        { "svg", 0, 0, G_OPTION_ARG_FILENAME, &svg_opt,
          "Write the first adaptive copy's speed series (as `virt-mirror report --svg` draws it) "
          "above its round's frontier points to FILE",
          "FILE" },
        { "quick", 'q', 0, G_OPTION_ARG_NONE, &quick,
          "A smoke run: one round, fixed-1400 unless --workload, a 512 MiB disk, shorter spans",
          NULL },
        VMR_BENCH_OPTION_GUEST (&guest_opt),
        { NULL },
    };
    const VmrBenchCommonOptions common
        = { .dir = &dir_opt, .daemon = &daemon_opt, .qemu = &qemu_opt };
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autoptr (GPtrArray) results
        = g_ptr_array_new_with_free_func ((GDestroyNotify) workload_round_free);
    g_autofree gchar *load_at_start = NULL;
    const Workload *picked[G_N_ELEMENTS (workloads)];
    guint n_picked = 0;
    gboolean ok;

    if (!vmr_bench_parse_options (
            "bench-adaptive", NULL,
            "Migrates a busy guest's disk unlimited, at static caps bisected around the adaptive "
            "copy's harm, and with control = adaptive, on a storage profile, and judges the "
            "adaptive copy against the static frontier (harm, time).",
            entries, &common, &argc, &argv))
        return 2;
    if (quick) {
        rounds = 1;
        settle_s = MIN (settle_s, 3);
        before_s = MIN (before_s, 6);
        gap_s = MIN (gap_s, 8);
        /* an adaptive copy held at min-speed (8 MiB/s) moves 512 MiB in about 64 s */
        if (job_limit_s == 0)
            job_limit_s = 120;
        if (workload_opt == NULL)
            workload_opt = g_strdup ("fixed-1400");
        if (disk_mib == 0)
            disk_mib = 512;
    }
    if (disk_mib == 0)
        disk_mib = 1024;
    if (job_limit_s == 0)
        job_limit_s = 300;
    if (argc > 1 || rounds < 1 || disk_mib < 64 || settle_s < 0 || before_s < 2 || gap_s < 0
        || max_caps < 1 || job_limit_s < 10 || !pick_workloads (workload_opt, picked, &n_picked)) {
        g_printerr ("bench-adaptive: bad arguments; see --help\n");
        return 2;
    }
    if (!vmr_bench_storage_parse (storage_opt != NULL ? storage_opt : "shared-array",
                                  &self->storage.kind)) {
        g_printerr ("bench-adaptive: unknown storage %s: shared-array, local-file or memory\n",
                    storage_opt);
        return 2;
    }
    if (target_pct < 1 || target_pct > 300 || max_harm_pct < 1 || budget_mb < 1 || delay_ms < 0) {
        g_printerr ("bench-adaptive: bad --target, --max-harm, --budget or --delay; see --help\n");
        return 2;
    }
    if (seed < 0)
        seed = g_random_int ();
    self->order = g_rand_new_with_seed ((guint32) seed);
    self->storage.budget_mb = (guint) budget_mb;
    self->storage.delay_ms = delay_ms;
    self->yardstick = (AdaptiveYardstick){
        .target = target_pct / 100.0,
        .max_harm = max_harm_pct / 100.0,
        .shared = self->storage.kind == VMR_BENCH_STORAGE_SHARED_ARRAY,
        .budget_mib = budget_mb * 1e6 / MIB,
        .storage = vmr_bench_storage_name (self->storage.kind),
    };
    self->daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    self->qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    self->disk_size = (guint64) disk_mib * MIB;
    self->settle_s = (guint) settle_s;
    self->before_s = (guint) before_s;
    self->gap_s = (guint) gap_s;
    self->max_caps = (guint) max_caps;
    self->granularity = g_steal_pointer (&granularity_opt);
    self->buf_size = g_steal_pointer (&buf_size_opt);
    self->svg_path = g_steal_pointer (&svg_opt);
    self->guest = (VmrBenchGuest){
        .qemu_path = self->qemu_path,
        .interrupted = &self->interrupted,
        .start_timeout_s = START_TIMEOUT_S,
        .stop_timeout_s = STOP_TIMEOUT_S,
        .job_timeout_s = (guint) job_limit_s,
    };
    vmr_bench_catch_signals (&self->interrupted);

    load_at_start = vmr_bench_load_average ();
    ok = vmr_bench_guest_find (&self->guest, guest_opt, &error)
         && make_dirs (self, vmr_bench_storage_image_parent (self->storage.kind, dir_opt), &error)
         && vmr_bench_storage_start (&self->storage, self->guest.run_dir, self->guest.image_dir,
                                     START_TIMEOUT_S, &error);
    if (ok) {
        gint64 start = g_get_monotonic_time ();

        self->image = g_strdup_printf ("%s/disk-0.raw", self->guest.image_dir);
        g_printerr ("writing a %d MiB source image...", disk_mib);
        ok = vmr_bench_image_create_source (self->image, self->disk_size, 11, &error);
        g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    }
    if (ok) {
        storage_line = vmr_bench_storage_describe (&self->storage, self->guest.image_dir);
        g_print ("virt-mirror adaptive benchmark: the static frontier against control = "
                 "adaptive\n  storage %s\n  order: seed %" G_GINT64_FORMAT " (--seed)\n",
                 storage_line, seed);
        adaptive_print_header (
            disk_mib, !self->yardstick.shared && vmr_guest_disk_takes_o_direct (self->image),
            self->buf_size, &self->yardstick);
    }
    for (guint round = 1; ok && round <= (guint) rounds; round++) {
        for (guint w = 0; ok && w < n_picked; w++) {
            WorkloadRound *result = workload_round_new (picked[w], round);

            g_ptr_array_add (results, result);
            ok = run_workload_round (self, result, &error);
            if (!ok) {
                g_prefix_error (&error, "round %u, %s: ", round, picked[w]->name);
                stop_workload (self);
            }
        }
    }
    if (!ok) {
        g_printerr ("bench-adaptive: %s\n", error->message);
        return 1;
    }

    vmr_bench_guest_print_host (&self->guest, load_at_start);
    adaptive_print_verdicts (results, picked, n_picked, &self->yardstick);
    if (self->svg_round != NULL) {
        g_autofree gchar *svg
            = adaptive_frontier_svg (self->svg_round, self->report_svg, &self->yardstick);

        if (!g_file_set_contents (self->svg_path, svg, -1, &error)) {
            g_printerr ("bench-adaptive: %s\n", error->message);
            return 1;
        }
        g_print ("  the picture: %s\n", self->svg_path);
    }
    g_print ("  data check: the destination of every job that reached `synced` equalled its source "
             "at the pivot: yes\n");
    return vmr_bench_exit_status ();
}
