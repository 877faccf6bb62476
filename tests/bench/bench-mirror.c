/*
 * bench-mirror: what virt-mirror costs on top of QEMU's own mirror.
 *
 * Side by side in one process, the two variants in each round, bare first
 * in one round and vmr first in the next, so that page cache, noise and a
 * drifting load hit both alike:
 *   bare  the bench itself creates the destination, sends blockdev-add and
 *         blockdev-mirror to QEMU and job-complete at READY;
 *   vmr   the bench asks virt-mirrord to attach the VM and to migrate the
 *         disk, and waits until the daemon reports the job completed.
 * Part one times the copy of an idle disk filled with data; part two times
 * the orchestration around a small disk with QEMU's own event timestamps,
 * read on a second monitor that belongs to the bench.
 *
 * Every QEMU runs paused (-S) under TCG, a fresh one per run. Every run,
 * warm-up included, checks that the destination holds the source's bytes
 * once QEMU has quit; a failed check exits with status 1. Each target is
 * judged in each round (the copy time by that round's ratio virt-mirror /
 * bare) and passes when at least two thirds of the rounds met it, with at
 * least 3 rounds; a MISS exits with status 3.
 *
 * Run it with `ninja -C BUILDDIR bench-mirror`, or run
 * BUILDDIR/tests/bench/bench-mirror directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "qmp-client.h"
#include "vmr-error.h"

#define MIB                (1024 * 1024)
#define START_TIMEOUT_S    30
#define JOB_TIMEOUT_S      900
#define STOP_TIMEOUT_S     30
#define COPY_RATIO_TARGET  1.05
#define OVERHEAD_TARGET_MS 50.0

/* what one run saw; QEMU's stamps are its wall clock, microseconds, 0 = not seen */
typedef struct {
    VmrBenchVariant variant;
    gint64 running_us;      /* JOB_STATUS_CHANGE "running" */
    gint64 ready_us;        /* BLOCK_JOB_READY */
    gint64 concluded_us;    /* JOB_STATUS_CHANGE "concluded" */
    gint64 concluded_mono;  /* when the bench read "concluded", monotonic */
    gboolean ready_handled; /* the bare variant sent job-complete */
    gchar *job_error;       /* QEMU's reason the job did not complete */
} RunEvents;

/* the figures of one run */
typedef struct {
    gdouble copy_s;    /* the request that starts the copy to the job's end (see run_bare) */
    gdouble start_ms;  /* first command sent to QEMU's "running" */
    gdouble mirror_s;  /* "running" to BLOCK_JOB_READY: QEMU's copy and flush */
    gdouble pivot_ms;  /* BLOCK_JOB_READY to "concluded" */
    gdouble finish_ms; /* "concluded" to the daemon's "completed" (vmr only) */
} RunResult;

typedef struct {
    /* options */
    gchar *daemon_path;
    gchar *daemon_log; /* NULL: a quiet daemon whose log is thrown away */
    gchar *qemu_path;
    /* places */
    gchar *run_dir;   /* sockets, daemon state, logs; removed at the end */
    gchar *image_dir; /* images; removed at the end */
    gchar *control_socket;
    gchar *qemu_monitor; /* the daemon's monitor, or the bare variant's */
    gchar *bench_monitor;
    /* processes and connections */
    GSubprocess *daemon;
    VmrQmpClient *control;
    GSubprocess *qemu;
    VmrQmpClient *qemu_cmd;   /* the bare variant's commands, on qemu_monitor */
    VmrQmpClient *qemu_watch; /* events and "quit", on bench_monitor */
    gchar *qemu_version;
    gchar *daemon_version;
    RunEvents ev;
    VmrBenchJobEnd vmr_end; /* the end of the daemon's job (vmr only) */
    guint run_number;
    gboolean interrupted;
} Bench;

static void
run_events_clear (RunEvents *ev)
{
    g_free (ev->job_error);
    memset (ev, 0, sizeof (*ev));
}

/*
 * Iterates the main loop until *@stamp is set, a deadline, an interruption
 * or the end of QEMU, whichever comes first.
 */
static gboolean
wait_for (Bench *self, const gint64 *stamp, guint timeout_s, const gchar *what, GError **error)
{
    return vmr_bench_wait_stamp (stamp, self->qemu, &self->interrupted, timeout_s, what, error);
}

/* ---- events ---- */

static void
complete_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Bench *self = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL && self->ev.job_error == NULL)
        self->ev.job_error = g_strdup_printf ("job-complete: %s", error->message);
}

/* the bare variant pivots at the first sign of READY, as the daemon does */
static void
job_ready (Bench *self, const gchar *job_id)
{
    g_autoptr (JsonObject) args = json_object_new ();

    if (self->ev.variant != VMR_BENCH_BARE || self->ev.ready_handled || self->qemu_cmd == NULL)
        return;
    self->ev.ready_handled = TRUE;
    json_object_set_string_member (args, "id", job_id);
    vmr_qmp_client_execute_async (self->qemu_cmd, "job-complete", args, 0, NULL, complete_cb, self);
}

static void
qemu_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
               gpointer user_data)
{
    Bench *self = user_data;
    RunEvents *ev = &self->ev;
    const gchar *status = vmr_json_get_string (data, "status");

    /* each run has a QEMU of its own: every job event is about the run's job */
    if (g_strcmp0 (name, "JOB_STATUS_CHANGE") == 0) {
        if (g_strcmp0 (status, "running") == 0 && ev->running_us == 0) {
            ev->running_us = timestamp_us;
        } else if (g_strcmp0 (status, "ready") == 0) {
            job_ready (self, vmr_json_get_string (data, "id"));
        } else if (g_strcmp0 (status, "concluded") == 0 && ev->concluded_mono == 0) {
            ev->concluded_us = timestamp_us;
            ev->concluded_mono = g_get_monotonic_time ();
        }
    } else if (g_strcmp0 (name, "BLOCK_JOB_READY") == 0) {
        if (ev->ready_us == 0)
            ev->ready_us = timestamp_us;
        job_ready (self, vmr_json_get_string (data, "device"));
    } else if (g_strcmp0 (name, "BLOCK_JOB_COMPLETED") == 0
               && vmr_json_get_string (data, "error") != NULL && ev->job_error == NULL) {
        ev->job_error = g_strdup (vmr_json_get_string (data, "error"));
    } else if (g_strcmp0 (name, "BLOCK_JOB_CANCELLED") == 0 && ev->job_error == NULL) {
        ev->job_error = g_strdup ("QEMU cancelled the job");
    }
}

/* ---- the daemon ---- */

static gboolean
start_daemon (Bench *self, GError **error)
{
    /* a quiet daemon whose log is in the run directory, unless one was asked for */
    self->daemon = vmr_bench_start_copy_daemon (
        self->daemon_path, self->run_dir, self->control_socket, self->daemon_log, START_TIMEOUT_S,
        &self->vmr_end, &self->control, &self->daemon_version, error);
    return self->daemon != NULL;
}

static void
stop_daemon (Bench *self)
{
    vmr_bench_close (&self->control, &self->vmr_end);
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
}

/* ---- QEMU ---- */

static gboolean
start_qemu (Bench *self, const gchar *image, GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/qemu-%u.log", self->run_dir, self->run_number);
    const gchar *monitors[] = { self->qemu_monitor, self->bench_monitor, NULL };

    self->qemu
        = vmr_bench_start_paused_qemu (self->qemu_path, self->run_dir, log, image, monitors, error);
    if (self->qemu == NULL)
        return FALSE;
    self->qemu_watch
        = vmr_bench_connect (self->qemu, self->bench_monitor, "QEMU", START_TIMEOUT_S, error);
    if (self->qemu_watch == NULL)
        return FALSE;
    g_signal_connect (self->qemu_watch, "event", G_CALLBACK (qemu_event_cb), self);
    if (self->qemu_version == NULL)
        self->qemu_version = vmr_bench_qemu_version (self->qemu_watch);
    return TRUE;
}

/* "quit" on the bench's monitor, so that QEMU flushes and closes the images */
static gboolean
quit_qemu (Bench *self, GError **error)
{
    vmr_bench_close (&self->qemu_cmd, self);
    return vmr_bench_quit_qemu (&self->qemu, &self->qemu_watch, self, STOP_TIMEOUT_S, error);
}

/* ---- the two variants ---- */

static JsonObject *
cache_object (void)
{
    JsonObject *cache = json_object_new ();

    /* what QEMU gives -blockdev driver=file by default, which the daemon copies */
    json_object_set_boolean_member (cache, "direct", FALSE);
    json_object_set_boolean_member (cache, "no-flush", FALSE);
    return cache;
}

/*
 * The commands the daemon sends for a raw destination, without the daemon.
 *
 * The two timers start at the same event: when the bench sends the first
 * request of the copy itself. For bare QMP that is creating the destination
 * (then blockdev-add and blockdev-mirror); for virt-mirror it is `migrate`,
 * in which the daemon does those same steps. What each variant needs once
 * per VM before a copy, connecting to QEMU's monitor here and `attach`
 * there, comes before its timer. Each timer stops when the bench learns
 * that the job is over: QEMU's "concluded" here, the daemon's "completed"
 * there (after job-dismiss and the release of the old nodes, which a user
 * of the daemon waits for).
 */
static gboolean
run_bare (Bench *self, const gchar *dest, guint64 size, RunResult *result, GError **error)
{
    g_autoptr (JsonObject) add = json_object_new ();
    g_autoptr (JsonObject) mirror = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *file = json_object_new ();
    gint64 start_mono, start_real;

    json_object_set_string_member (file, "driver", "file");
    json_object_set_string_member (file, "filename", dest);
    json_object_set_string_member (file, "node-name", "bare-dst-file");
    json_object_set_object_member (file, "cache", cache_object ());
    json_object_set_string_member (add, "driver", "raw");
    json_object_set_string_member (add, "node-name", "bare-dst");
    json_object_set_object_member (add, "file", file);
    json_object_set_object_member (add, "cache", cache_object ());
    json_object_set_string_member (add, "discard", "unmap");
    json_object_set_int_member (add, "size", (gint64) size);
    json_object_set_string_member (mirror, "job-id", "bare");
    json_object_set_string_member (mirror, "device", "d0");
    json_object_set_string_member (mirror, "target", "bare-dst");
    json_object_set_string_member (mirror, "sync", "full");
    json_object_set_boolean_member (mirror, "auto-dismiss", FALSE);
    json_object_set_string_member (mirror, "filter-node-name", "bare-mirror");

    self->qemu_cmd
        = vmr_bench_connect (self->qemu, self->qemu_monitor, "QEMU", START_TIMEOUT_S, error);
    if (self->qemu_cmd == NULL)
        return FALSE;
    /* the timer starts at the first step of the copy; see above */
    start_mono = g_get_monotonic_time ();
    start_real = g_get_real_time ();
    if (!vmr_bench_image_create_destination (dest, size, error))
        return FALSE;
    reply = vmr_qmp_client_execute_sync (self->qemu_cmd, "blockdev-add", add, 0, error);
    if (reply == NULL)
        return FALSE;
    g_clear_pointer (&reply, json_node_unref);
    reply = vmr_qmp_client_execute_sync (self->qemu_cmd, "blockdev-mirror", mirror, 0, error);
    if (reply == NULL)
        return FALSE;
    /* job-complete goes out from qemu_event_cb() at READY */
    if (!wait_for (self, &self->ev.concluded_mono, JOB_TIMEOUT_S, "end of the mirror", error))
        return FALSE;
    if (self->ev.job_error != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s", self->ev.job_error);
        return FALSE;
    }
    result->copy_s = (gdouble) (self->ev.concluded_mono - start_mono) / G_USEC_PER_SEC;
    result->start_ms = (gdouble) (self->ev.running_us - start_real) / 1000.0;
    return TRUE;
}

static gboolean
run_vmr (Bench *self, const gchar *dest, RunResult *result, GError **error)
{
    g_autoptr (JsonObject) attach = json_object_new ();
    g_autoptr (JsonObject) migrate = json_object_new ();
    g_autoptr (JsonObject) detach = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    g_autofree gchar *domain = g_strdup_printf ("bench-%u", self->run_number);
    gint64 migrate_mono, migrate_real;

    vmr_bench_job_end_follow (&self->vmr_end, domain);
    json_object_set_string_member (attach, "name", domain);
    json_object_set_string_member (attach, "qmp", self->qemu_monitor);
    json_object_set_string_member (migrate, "domain", domain);
    json_object_set_string_member (migrate, "disk", "disk0");
    json_object_set_string_member (migrate, "destination", dest);
    json_object_set_string_member (detach, "name", domain);

    /* the counterpart of connecting to QEMU's monitor in run_bare(): before the timer */
    reply = vmr_bench_control_call (self->control, "attach", attach, error);
    if (reply == NULL)
        return FALSE;
    g_clear_pointer (&reply, json_object_unref);
    /* the timer starts as run_bare()'s does: at the request that starts the copy */
    migrate_mono = g_get_monotonic_time ();
    migrate_real = g_get_real_time ();
    reply = vmr_bench_control_call (self->control, "migrate", migrate, error);
    if (reply == NULL
        || !vmr_bench_job_end_wait (&self->vmr_end, self->qemu, &self->interrupted, JOB_TIMEOUT_S,
                                    error))
        return FALSE;
    g_clear_pointer (&reply, json_object_unref);
    result->copy_s = (gdouble) (self->vmr_end.final_mono - migrate_mono) / G_USEC_PER_SEC;
    result->start_ms = (gdouble) (self->ev.running_us - migrate_real) / 1000.0;
    reply = vmr_bench_control_call (self->control, "detach", detach, error);
    return reply != NULL;
}

/*
 * One run on a fresh QEMU: start it, migrate @source to a new file, quit
 * QEMU, check the bytes, remove the destination.
 */
static gboolean
bench_run (Bench *self, VmrBenchVariant variant, const gchar *source, guint64 size,
           RunResult *result, GError **error)
{
    g_autofree gchar *dest = NULL;
    gboolean ok;

    self->run_number++;
    dest = g_strdup_printf ("%s/dest-%u.raw", self->image_dir, self->run_number);
    run_events_clear (&self->ev);
    self->ev.variant = variant;
    memset (result, 0, sizeof (*result));

    ok = start_qemu (self, source, error);
    if (ok && variant == VMR_BENCH_BARE)
        ok = run_bare (self, dest, size, result, error);
    else if (ok)
        ok = run_vmr (self, dest, result, error);
    if (ok && (self->ev.running_us == 0 || self->ev.ready_us == 0 || self->ev.concluded_us == 0)) {
        /* the daemon reports completed after "concluded": it must have arrived */
        ok = wait_for (self, &self->ev.concluded_mono, STOP_TIMEOUT_S, "QEMU's job events", error);
        if (ok && (self->ev.running_us == 0 || self->ev.ready_us == 0)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                         "QEMU sent no running or no READY event for the job");
            ok = FALSE;
        }
    }
    if (ok) {
        result->mirror_s = (gdouble) (self->ev.ready_us - self->ev.running_us) / G_USEC_PER_SEC;
        result->pivot_ms = (gdouble) (self->ev.concluded_us - self->ev.ready_us) / 1000.0;
        if (variant == VMR_BENCH_VMR)
            result->finish_ms
                = (gdouble) (self->vmr_end.final_mono - self->ev.concluded_mono) / 1000.0;
    }
    if (ok)
        ok = quit_qemu (self, error);
    /* every run: a figure counts only for a copy that is right */
    if (ok)
        ok = vmr_bench_image_compare (source, dest, size, error);

    vmr_bench_close (&self->qemu_cmd, self);
    vmr_bench_close (&self->qemu_watch, self);
    vmr_bench_kill (&self->qemu);
    if (g_unlink (dest) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", dest, g_strerror (errno));
    if (!ok)
        g_prefix_error (error, "run %u (%s): ", self->run_number, vmr_bench_variant_name (variant));
    return ok;
}

/* ---- figures ---- */

/* every measure of a part */
typedef struct {
    VmrBenchSeries copy_s;
    VmrBenchSeries mirror_s;
    VmrBenchSeries outside_ms; /* copy time minus QEMU's running -> READY */
    VmrBenchSeries start_ms;
    VmrBenchSeries pivot_ms;
    VmrBenchSeries finish_ms;
} Figures;

static void
figures_init (Figures *figures)
{
    vmr_bench_series_init (&figures->copy_s);
    vmr_bench_series_init (&figures->mirror_s);
    vmr_bench_series_init (&figures->outside_ms);
    vmr_bench_series_init (&figures->start_ms);
    vmr_bench_series_init (&figures->pivot_ms);
    vmr_bench_series_init (&figures->finish_ms);
}

static void
figures_clear (Figures *figures)
{
    vmr_bench_series_clear (&figures->copy_s);
    vmr_bench_series_clear (&figures->mirror_s);
    vmr_bench_series_clear (&figures->outside_ms);
    vmr_bench_series_clear (&figures->start_ms);
    vmr_bench_series_clear (&figures->pivot_ms);
    vmr_bench_series_clear (&figures->finish_ms);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Figures, figures_clear)

static void
figures_add (Figures *figures, VmrBenchVariant variant, const RunResult *result)
{
    vmr_bench_series_add (&figures->copy_s, variant, result->copy_s);
    vmr_bench_series_add (&figures->mirror_s, variant, result->mirror_s);
    vmr_bench_series_add (&figures->outside_ms, variant,
                          (result->copy_s - result->mirror_s) * 1000.0);
    vmr_bench_series_add (&figures->start_ms, variant, result->start_ms);
    vmr_bench_series_add (&figures->pivot_ms, variant, result->pivot_ms);
    vmr_bench_series_add (&figures->finish_ms, variant, result->finish_ms);
}

/* one line per run on stderr, so that a slow run can be told from a slow variant */
static void
print_run (const gchar *name, VmrBenchVariant variant, const RunResult *result)
{
    g_autofree gchar *finish = variant == VMR_BENCH_VMR
                                   ? g_strdup_printf (", finish %.1f ms", result->finish_ms)
                                   : g_strdup ("");

    g_printerr ("  %-16s %-11s copy %.3f s (QEMU %.3f s), start %.1f ms, pivot %.1f ms%s, bytes "
                "checked\n",
                name, vmr_bench_variant_name (variant), result->copy_s, result->mirror_s,
                result->start_ms, result->pivot_ms, finish);
}

/*
 * @warmup uncounted rounds, then @rounds rounds, each of both variants on
 * @source in the order vmr_bench_round_order() gives (bare first in the
 * first counted round); every run checks the bytes. A run that fails ends
 * the part.
 */
static gboolean
run_rounds (Bench *self, const gchar *label, const gchar *source, guint64 size, guint warmup,
            guint rounds, Figures *figures, GError **error)
{
    for (guint round = 0; round < warmup + rounds; round++) {
        g_autofree gchar *name
            = round < warmup ? g_strdup_printf ("%s warm-up", label)
                             : g_strdup_printf ("%s %u/%u", label, round - warmup + 1, rounds);

        guint order[VMR_BENCH_N_VARIANTS];

        vmr_bench_round_order (round < warmup ? 0 : round - warmup, VMR_BENCH_N_VARIANTS, order);
        for (guint i = 0; i < VMR_BENCH_N_VARIANTS; i++) {
            VmrBenchVariant v = order[i];
            RunResult result;

            if (!bench_run (self, v, source, size, &result, error))
                return FALSE;
            print_run (name, v, &result);
            if (round < warmup)
                continue;
            figures_add (figures, v, &result);
        }
    }
    return TRUE;
}

static void
report_copy (const Figures *figures, guint64 size, guint rounds)
{
    gdouble bare = vmr_bench_series_median (&figures->copy_s, VMR_BENCH_BARE);
    gdouble vmr = vmr_bench_series_median (&figures->copy_s, VMR_BENCH_VMR);
    g_autoptr (GArray) ratios = vmr_bench_series_ratios (&figures->copy_s);
    gdouble mib = (gdouble) size / MIB;

    g_print ("\ncopy of an idle %" G_GUINT64_FORMAT " MiB raw disk, %u rounds\n", size / MIB,
             rounds);
    vmr_bench_print_header ();
    /* the verdict: each round's ratio, a bare run and the vmr run next to it */
    vmr_bench_series_print_row (
        &figures->copy_s, "copy time (s)", 3, "<= 1.05",
        vmr_bench_verdict_rounds (
            vmr_bench_rounds_met (ratios, VMR_BENCH_AT_MOST, COPY_RATIO_TARGET), rounds));
    vmr_bench_series_print_rounds (&figures->copy_s, 3);
    g_print ("  %-27s %10.0f %12.0f\n", "copy rate (MiB/s)", mib / bare, mib / vmr);
    g_print ("  %-27s %33.3f\n", "ratio of the medians", bare > 0 ? vmr / bare : 0.0);
    /* QEMU's part alone, and the rest: noise in the first is not orchestration */
    g_print ("  %-27s %10.3f %12.3f %9.3f\n", "QEMU running -> READY (s)",
             vmr_bench_series_median (&figures->mirror_s, VMR_BENCH_BARE),
             vmr_bench_series_median (&figures->mirror_s, VMR_BENCH_VMR),
             vmr_bench_series_paired_ratio (&figures->mirror_s));
    g_print ("  %-27s %10.1f %12.1f\n", "copy time minus that (ms)",
             vmr_bench_series_median (&figures->outside_ms, VMR_BENCH_BARE),
             vmr_bench_series_median (&figures->outside_ms, VMR_BENCH_VMR));
}

static void
report_overhead (const Figures *figures, guint64 size, guint rounds)
{
    GArray *start = figures->start_ms.values[VMR_BENCH_VMR];
    GArray *pivot = figures->pivot_ms.values[VMR_BENCH_VMR];

    g_print ("\norchestration around a %" G_GUINT64_FORMAT
             " MiB disk, %u rounds, from QEMU's event timestamps\n",
             size / MIB, rounds);
    vmr_bench_print_header ();
    /* latency targets: virt-mirror's own, in ms, each round */
    vmr_bench_series_print_row (
        &figures->start_ms, "start -> running (ms)", 1, "< 50 ms",
        vmr_bench_verdict_rounds (vmr_bench_rounds_met (start, VMR_BENCH_UNDER, OVERHEAD_TARGET_MS),
                                  rounds));
    vmr_bench_series_print_rounds (&figures->start_ms, 1);
    vmr_bench_series_print_row (
        &figures->pivot_ms, "READY -> concluded (ms)", 1, "< 50 ms",
        vmr_bench_verdict_rounds (vmr_bench_rounds_met (pivot, VMR_BENCH_UNDER, OVERHEAD_TARGET_MS),
                                  rounds));
    vmr_bench_series_print_rounds (&figures->pivot_ms, 1);
    /* job-dismiss, releasing the old nodes, the record: until a user sees "completed" */
    g_print ("  %-27s %10s %12.1f\n", "concluded -> completed (ms)", "-",
             vmr_bench_series_median (&figures->finish_ms, VMR_BENCH_VMR));
}

/* ---- set-up and tear-down ---- */

static void
bench_free (Bench *self)
{
    vmr_bench_close (&self->qemu_cmd, self);
    vmr_bench_close (&self->qemu_watch, self);
    vmr_bench_kill (&self->qemu);
    stop_daemon (self);
    vmr_bench_remove_dirs (self->run_dir, self->image_dir, FALSE);
    run_events_clear (&self->ev);
    vmr_bench_job_end_follow (&self->vmr_end, NULL);
    g_free (self->daemon_path);
    g_free (self->daemon_log);
    g_free (self->qemu_path);
    g_free (self->run_dir);
    g_free (self->image_dir);
    g_free (self->control_socket);
    g_free (self->qemu_monitor);
    g_free (self->bench_monitor);
    g_free (self->qemu_version);
    g_free (self->daemon_version);
    g_free (self);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Bench, bench_free)

static gboolean
make_dirs (Bench *self, const gchar *image_parent, GError **error)
{
    if (!vmr_bench_make_dirs (image_parent, &self->run_dir, &self->image_dir, error))
        return FALSE;
    self->control_socket = g_build_filename (self->run_dir, "virt-mirrord.sock", NULL);
    self->qemu_monitor = g_build_filename (self->run_dir, "qmp.sock", NULL);
    self->bench_monitor = g_build_filename (self->run_dir, "bench.sock", NULL);
    return TRUE;
}

static gboolean
run_part (Bench *self, const gchar *label, guint64 size, guint32 seed, guint warmup, guint rounds,
          Figures *figures, GError **error)
{
    g_autofree gchar *name = g_strdup_printf ("source-%s.raw", label);
    g_autofree gchar *source = g_build_filename (self->image_dir, name, NULL);
    gint64 start = g_get_monotonic_time ();

    g_printerr ("writing a %" G_GUINT64_FORMAT " MiB source image...", size / MIB);
    if (!vmr_bench_image_create_source (source, size, seed, error))
        return FALSE;
    g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    if (!run_rounds (self, label, source, size, warmup, rounds, figures, error))
        return FALSE;
    if (g_unlink (source) < 0)
        g_warning ("cannot remove %s: %s", source, g_strerror (errno));
    return TRUE;
}

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *daemon_log = NULL;
    g_autofree gchar *qemu_opt = NULL;
    g_autofree gchar *dir_opt = NULL;
    gint warmup = 1;
    gint rounds = 3;
    gint overhead_rounds = 15;
    gint copy_mib = 2048;
    gint small_mib = 64;
    const GOptionEntry entries[] = {
        { "warmup", 'w', 0, G_OPTION_ARG_INT, &warmup,
          "Uncounted rounds before each part (default 1)", "N" },
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds of the copy-time part (default 3; 0 skips it)", "N" },
        { "overhead-rounds", 'o', 0, G_OPTION_ARG_INT, &overhead_rounds,
          "Rounds of the orchestration part (default 15; 0 skips it)", "N" },
        { "copy-size", 0, 0, G_OPTION_ARG_INT, &copy_mib,
          "Disk size for the copy time, MiB (default 2048)", "MIB" },
        { "small-size", 0, 0, G_OPTION_ARG_INT, &small_mib,
          "Disk size for the orchestration, MiB (default 64)", "MIB" },
        { NULL },
    };
    const VmrBenchCommonOptions common
        = { .dir = &dir_opt, .daemon = &daemon_opt, .qemu = &qemu_opt, .daemon_log = &daemon_log };
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_auto (Figures) copy_figures = { { { NULL } } };
    g_auto (Figures) overhead_figures = { { { NULL } } };
    gboolean ok;

    if (!vmr_bench_parse_options ("bench-mirror", "[VIRT-MIRRORD]",
                                  "Compares virt-mirror with a bare QEMU blockdev-mirror: copy "
                                  "time and orchestration overhead.",
                                  entries, &common, &argc, &argv))
        return 2;
    if (argc > 2 || warmup < 0 || rounds < 0 || overhead_rounds < 0 || copy_mib <= 0
        || small_mib <= 0) {
        g_printerr ("bench-mirror: bad arguments; see --help\n");
        return 2;
    }
    self->daemon_path
        = vmr_bench_pick_program (argc == 2 ? argv[1] : daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    self->qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    if (daemon_log != NULL)
        self->daemon_log = g_canonicalize_filename (daemon_log, NULL);

    vmr_bench_catch_signals (&self->interrupted);
    figures_init (&copy_figures);
    figures_init (&overhead_figures);

    load_at_start = vmr_bench_load_average ();
    ok = make_dirs (self, dir_opt, &error) && start_daemon (self, &error);
    if (ok && rounds > 0)
        ok = run_part (self, "copy", (guint64) copy_mib * MIB, 1, (guint) warmup, (guint) rounds,
                       &copy_figures, &error);
    if (ok && overhead_rounds > 0)
        ok = run_part (self, "overhead", (guint64) small_mib * MIB, 2, (guint) warmup,
                       (guint) overhead_rounds, &overhead_figures, &error);
    if (ok) {
        g_autofree gchar *load_at_end = vmr_bench_load_average ();

        g_print ("virt-mirror storage migration benchmark\n");
        g_print ("  virt-mirrord %s%s, QEMU %s (TCG, guest paused), %u CPUs, images under %s\n",
                 self->daemon_version, self->daemon_log != NULL ? " (--verbose)" : "",
                 self->qemu_version != NULL ? self->qemu_version : "?", g_get_num_processors (),
                 dir_opt != NULL ? dir_opt : g_get_tmp_dir ());
        g_print ("  load average %s at the start, %s at the end\n", load_at_start, load_at_end);
        g_print ("  %d warm-up round(s) per part not counted; each round runs both variants, "
                 "bare first in odd rounds, vmr first in even ones\n",
                 warmup);
        if (rounds > 0)
            report_copy (&copy_figures, (guint64) copy_mib * MIB, (guint) rounds);
        if (overhead_rounds > 0)
            report_overhead (&overhead_figures, (guint64) small_mib * MIB, (guint) overhead_rounds);
        g_print ("\ndata check: every run of each part, warm-up included; destination equals "
                 "source: yes\n");
    } else {
        g_printerr ("bench-mirror: %s\n", error->message);
    }
    return ok ? vmr_bench_exit_status () : 1;
}
