/*
 * bench-thin: thin disks copied at the speed of their data.
 *
 * A 64 GiB raw source with 1 GiB of data, spread over the disk in 64
 * extents, and a full 1 GiB source are migrated through virt-mirrord, round
 * after round, to a raw and to a qcow2 file it creates. Reported per
 * destination format: the copy time of the thin source against the full
 * one (target <= 1.5x) and what the destination takes on its file system
 * (st_blocks; for a qcow2, qemu-img info's disk size), against 1.1 times
 * the data. Every copy is checked with qemu-img compare once QEMU has
 * quit; a failed check ends the bench with exit status 1.
 *
 * With --nbd-raw-qmp, the bench measures NBD exports served by nbdkit
 * instead, through QEMU's own mirror without virt-mirrord (bench-thin-nbd.c).
 *
 * Every QEMU runs paused (-S) under TCG, a fresh one per copy. Run it with
 * `ninja -C BUILDDIR bench-thin`, or run BUILDDIR/tests/bench/bench-thin
 * directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "bench-thin.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_DAEMON
#define VMR_BENCH_DAEMON "virt-mirrord"
#endif

#define MIB ((guint64) 1024 * 1024)
#define GIB (1024 * MIB)

typedef struct {
    VmrBenchThin common;
    /* options */
    gchar *daemon_path;
    gchar *daemon_log; /* NULL: a quiet daemon, its log in the run directory */
    /* places */
    gchar *control_socket;
    gchar *qemu_monitor; /* the daemon's */
    gchar *bench_monitor;
    /* processes and connections */
    GSubprocess *daemon;
    VmrQmpClient *control;
    gchar *daemon_version;
    /* the running copy */
    gchar *domain;
    gint64 final_mono; /* the daemon's final state of the job arrived, 0 = not yet */
    gchar *job_error;  /* why it did not complete */
} Bench;

static void
control_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                  gpointer user_data)
{
    Bench *self = user_data;
    const gchar *state = vmr_json_get_string (data, "state");

    if (g_strcmp0 (name, "JOB_STATE_CHANGED") != 0 || self->domain == NULL
        || g_strcmp0 (vmr_json_get_string (data, "domain"), self->domain) != 0)
        return;
    if (g_strcmp0 (state, "completed") != 0 && g_strcmp0 (state, "failed") != 0
        && g_strcmp0 (state, "cancelled") != 0)
        return;
    self->final_mono = g_get_monotonic_time ();
    if (g_strcmp0 (state, "completed") != 0 && self->job_error == NULL)
        self->job_error = g_strdup_printf ("the daemon reports %s: %s", state,
                                           vmr_json_get_string (data, "reason"));
}

static gboolean
start_daemon (Bench *self, GError **error)
{
    const VmrBenchDaemonSpec spec = {
        .daemon_path = self->daemon_path,
        .run_dir = self->common.run_dir,
        .control_socket = self->control_socket,
        .log_path = self->daemon_log,
        .verbose = self->daemon_log != NULL,
        .timeout_s = VMR_BENCH_THIN_START_TIMEOUT_S,
    };

    self->daemon
        = vmr_bench_start_daemon (&spec, NULL, 0, &self->control, &self->daemon_version, error);
    if (self->daemon == NULL)
        return FALSE;
    g_signal_connect (self->control, "event", G_CALLBACK (control_event_cb), self);
    return TRUE;
}

static gboolean
control_call (Bench *self, const gchar *command, JsonObject *args, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (self->control, command, args, 0, error);

    if (reply == NULL)
        g_prefix_error (error, "%s: ", command);
    return reply != NULL;
}

/*
 * One copy on a fresh QEMU: attach it, migrate @source to a new @format
 * file, time it from `migrate` to the daemon's `completed`, detach, quit
 * QEMU, check the bytes and measure the destination.
 */
static gboolean
copy_once (Bench *self, const gchar *source, const gchar *format, VmrBenchThinRun *run,
           GError **error)
{
    VmrBenchThin *common = &self->common;
    const gchar *monitors[] = { self->qemu_monitor, self->bench_monitor, NULL };
    g_autoptr (JsonObject) attach = json_object_new ();
    g_autoptr (JsonObject) migrate = json_object_new ();
    g_autoptr (JsonObject) detach = json_object_new ();
    g_autoptr (GSubprocess) qemu = NULL;
    g_autoptr (VmrQmpClient) watch = NULL;
    g_autofree gchar *dest = NULL;
    gint64 start_mono;
    gboolean ok;

    common->run_number++;
    dest = g_strdup_printf ("%s/dest-%u.%s", common->image_dir, common->run_number, format);
    g_clear_pointer (&self->domain, g_free);
    g_clear_pointer (&self->job_error, g_free);
    self->final_mono = 0;
    self->domain = g_strdup_printf ("thin-%u", common->run_number);
    json_object_set_string_member (attach, "name", self->domain);
    json_object_set_string_member (attach, "qmp", self->qemu_monitor);
    json_object_set_string_member (migrate, "domain", self->domain);
    json_object_set_string_member (migrate, "disk", "disk0");
    json_object_set_string_member (migrate, "destination", dest);
    json_object_set_string_member (migrate, "format", format);
    json_object_set_string_member (detach, "name", self->domain);

    qemu = vmr_bench_thin_start_qemu (common, source, monitors, &watch, error);
    ok = qemu != NULL && control_call (self, "attach", attach, error);
    /* the timer: from the request that starts the copy to the end a user waits for */
    start_mono = g_get_monotonic_time ();
    ok = ok && control_call (self, "migrate", migrate, error)
         && vmr_bench_wait_stamp (&self->final_mono, qemu, &common->interrupted,
                                  VMR_BENCH_THIN_JOB_TIMEOUT_S, "end of the migration", error);
    if (ok && self->job_error != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s", self->job_error);
        ok = FALSE;
    }
    run->copy_s = (gdouble) (self->final_mono - start_mono) / G_USEC_PER_SEC;
    ok = ok && control_call (self, "detach", detach, error)
         && vmr_bench_thin_quit_qemu (&qemu, &watch, self, error)
         && vmr_bench_image_qemu_compare (source, "raw", dest, format, error)
         && vmr_bench_image_allocated (dest, format, &run->alloc[0], error);

    vmr_bench_close (&watch, self);
    vmr_bench_kill (&qemu);
    if (g_unlink (dest) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", dest, g_strerror (errno));
    if (!ok)
        g_prefix_error (error, "run %u (%s to %s): ", common->run_number, source, format);
    return ok;
}

/* the file part: both formats, each round the full source then the thin one */
static gboolean
run_files (Bench *self, guint64 thin_size, guint64 data_size, gboolean *all_met, GError **error)
{
    static const gchar *const formats[] = { "raw", "qcow2" };
    VmrBenchThinSources sources = { 0 };
    VmrBenchThinCase *cases[G_N_ELEMENTS (formats)] = { NULL };
    gboolean ok;

    ok = vmr_bench_thin_sources_create (&self->common, &sources, "file", thin_size, data_size, 1,
                                        error);
    for (guint f = 0; ok && f < G_N_ELEMENTS (formats); f++) {
        g_autofree gchar *title
            = g_strdup_printf ("%s file destination, through virt-mirrord", formats[f]);

        cases[f] = vmr_bench_thin_case_new (
            title, &sources,
            g_strcmp0 (formats[f], "qcow2") == 0 ? "qemu-img disk size" : "st_blocks", NULL);
    }
    for (guint round = 0; ok && round < self->common.rounds; round++) {
        for (guint f = 0; ok && f < G_N_ELEMENTS (formats); f++) {
            VmrBenchThinRun full = { 0 };
            VmrBenchThinRun thin = { 0 };

            ok = copy_once (self, sources.full_source, formats[f], &full, error)
                 && copy_once (self, sources.thin_source, formats[f], &thin, error);
            if (ok) {
                vmr_bench_thin_case_add (cases[f], FALSE, round, &full);
                vmr_bench_thin_case_add (cases[f], TRUE, round, &thin);
            }
        }
    }
    vmr_bench_thin_sources_clear (&sources);
    if (ok) {
        g_print ("virt-mirror thin disk benchmark: file destinations\n");
        g_print ("  virt-mirrord %s%s, QEMU %s (TCG, guest paused), %u CPUs, images under %s\n",
                 self->daemon_version, self->daemon_log != NULL ? " (--verbose)" : "",
                 self->common.qemu_version != NULL ? self->common.qemu_version : "?",
                 g_get_num_processors (), self->common.image_dir);
    }
    for (guint f = 0; f < G_N_ELEMENTS (formats); f++) {
        if (ok && cases[f] != NULL)
            *all_met = vmr_bench_thin_case_report (cases[f]) && *all_met;
        g_clear_pointer (&cases[f], vmr_bench_thin_case_free);
    }
    return ok;
}

static void
bench_free (Bench *self)
{
    vmr_bench_close (&self->control, self);
    vmr_bench_stop_daemon (&self->daemon, VMR_BENCH_THIN_STOP_TIMEOUT_S);
    if (self->common.run_dir != NULL)
        vmr_bench_remove_dirs (self->common.run_dir, self->common.image_dir, FALSE);
    g_free (self->common.qemu_path);
    g_free (self->common.run_dir);
    g_free (self->common.image_dir);
    g_free (self->common.qemu_version);
    g_free (self->daemon_path);
    g_free (self->daemon_log);
    g_free (self->control_socket);
    g_free (self->qemu_monitor);
    g_free (self->bench_monitor);
    g_free (self->daemon_version);
    g_free (self->domain);
    g_free (self->job_error);
    g_free (self);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Bench, bench_free)

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *daemon_log = NULL;
    g_autofree gchar *qemu_opt = NULL;
    g_autofree gchar *dir_opt = NULL;
    gboolean quick = FALSE;
    gboolean nbd = FALSE;
    gboolean no_fallbacks = FALSE;
    gint rounds = 3;
    const GOptionEntry entries[] = {
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds of each case (default 3; under 3, no verdict)", "N" },
        { "quick", 'q', 0, G_OPTION_ARG_NONE, &quick,
          "An 8 GiB disk with 128 MiB of data against 128 MiB, instead of 64 GiB and 1 GiB", NULL },
        { "nbd-raw-qmp", 0, 0, G_OPTION_ARG_NONE, &nbd,
          "NBD exports of nbdkit, through QEMU's own mirror driven over QMP, without "
          "virt-mirrord",
          NULL },
        { "no-fallbacks", 0, 0, G_OPTION_ARG_NONE, &no_fallbacks,
          "With --nbd-raw-qmp: skip the cases at an eighth of the sizes (QEMU's defaults on a "
          "file export, servers that cannot zero quickly)",
          NULL },
        VMR_BENCH_OPTION_DIR (&dir_opt),
        VMR_BENCH_OPTION_DAEMON (&daemon_opt),
        VMR_BENCH_OPTION_QEMU (&qemu_opt),
        { "daemon-log", 0, 0, G_OPTION_ARG_FILENAME, &daemon_log,
          "Run the daemon with --verbose and keep its log in FILE", "FILE" },
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new ("");
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autofree gchar *load_at_end = NULL;
    guint64 thin_size, data_size;
    gboolean all_met = TRUE;
    gboolean ok;

    g_option_context_set_summary (context,
                                  "Copies a thin disk and a full disk of its data, and compares "
                                  "their copy times and the destinations' allocation.");
    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, &argc, &argv, &error)) {
        g_printerr ("bench-thin: %s\n", error->message);
        return 2;
    }
    if (argc > 1 || rounds < 1 || (no_fallbacks && !nbd)) {
        g_printerr ("bench-thin: bad arguments; see --help\n");
        return 2;
    }
    thin_size = quick ? 8 * GIB : 64 * GIB;
    data_size = quick ? 128 * MIB : 1 * GIB;
    self->common.rounds = (guint) rounds;
    self->common.qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    self->daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    if (daemon_log != NULL)
        self->daemon_log = g_canonicalize_filename (daemon_log, NULL);
    vmr_bench_catch_signals (&self->common.interrupted);

    load_at_start = vmr_bench_load_average ();
    ok = vmr_bench_make_dirs (dir_opt, &self->common.run_dir, &self->common.image_dir, &error);
    if (ok && nbd) {
        ok = vmr_bench_thin_run_nbd (&self->common, thin_size, data_size, !no_fallbacks, &error);
    } else if (ok) {
        self->control_socket = g_build_filename (self->common.run_dir, "virt-mirrord.sock", NULL);
        self->qemu_monitor = g_build_filename (self->common.run_dir, "qmp.sock", NULL);
        self->bench_monitor = g_build_filename (self->common.run_dir, "bench.sock", NULL);
        ok = start_daemon (self, &error)
             && run_files (self, thin_size, data_size, &all_met, &error);
    }
    if (!ok) {
        g_printerr ("bench-thin: %s\n", error->message);
        return 1;
    }
    load_at_end = vmr_bench_load_average ();
    g_print ("\nload average %s at the start, %s at the end\n", load_at_start, load_at_end);
    g_print ("data check: every copy, qemu-img compare of source and destination: equal\n");
    if (!nbd && rounds < VMR_BENCH_MIN_ROUNDS)
        g_print ("targets: no verdict (needs >= %d rounds)\n", VMR_BENCH_MIN_ROUNDS);
    else if (!nbd)
        g_print ("targets: %s\n", all_met ? "all met" : "some missed (MISS above)");
    return 0;
}
