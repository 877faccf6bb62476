/*
 * bench-thin: thin disks copied at the speed of their data.
 *
 * A 64 GiB raw source with 1 GiB of data, spread over the disk in 64
 * extents, and a full 1 GiB source are migrated through virt-mirrord, round
 * after round, to a raw and to a qcow2 file it creates, and to an NBD
 * export of a fresh nbdkit (its memory plugin, and its file plugin on a
 * sparse file). Reported per destination: the copy time of the thin source
 * against the full one (target <= 1.5x) and what the destination takes
 * (st_blocks; for a qcow2, qemu-img info's disk size; for an export what
 * `nbdinfo --map` reports as not a hole, and the file plugin's st_blocks),
 * against 1.1 times the data. Every copy is checked with qemu-img compare
 * once QEMU has quit (an export through its server); a failed check ends
 * the bench with exit status 1. Each round copies the full source first in
 * even rounds and the thin one first in odd ones; each target is judged in
 * each round and passes when at least two thirds of the rounds met it
 * (with at least 3 rounds); a MISS exits with status 3.
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
#include <stdarg.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "bench-thin.h"
#include "vmr-error.h"

#define MIB ((guint64) 1024 * 1024)
#define GIB (1024 * MIB)

/* one kind of destination the daemon copies to */
typedef struct {
    const gchar *title;
    const gchar *format;       /* a new file in this format, made by the daemon; NULL: an export */
    VmrBenchThinExport export; /* the export's server */
    const gchar *alloc_label[VMR_BENCH_THIN_N_ALLOC];
} Destination;

static const Destination destinations[] = {
    { "raw file destination, through virt-mirrord", "raw", { FALSE }, { "st_blocks" } },
    { "qcow2 file destination, through virt-mirrord",
      "qcow2",
      { FALSE },
      { "qemu-img disk size" } },
    { "NBD export of nbdkit memory, through virt-mirrord",
      NULL,
      { TRUE },
      { "export's map, not holes" } },
    { "NBD export of nbdkit file, through virt-mirrord",
      NULL,
      { FALSE },
      { "export's map, not holes", "file's st_blocks" } },
};

typedef struct {
    VmrBenchThin common;
    /* options */
    gchar *daemon_path;
    gchar *daemon_log; /* NULL: a quiet daemon, its log in the run directory */
    gboolean files;    /* the file destinations */
    gboolean exports;  /* the NBD destinations */
    /* places */
    gchar *control_socket;
    gchar *qemu_monitor; /* the daemon's */
    gchar *bench_monitor;
    gchar *nbd_socket;
    /* processes and connections */
    GSubprocess *daemon;
    VmrQmpClient *control;
    gchar *daemon_version;
    VmrBenchJobEnd job; /* the end of the running copy */
} Bench;

static gboolean
start_daemon (Bench *self, GError **error)
{
    /* a quiet daemon whose log is in the run directory, unless one was asked for */
    self->daemon = vmr_bench_start_copy_daemon (
        self->daemon_path, self->common.run_dir, self->control_socket, self->daemon_log,
        VMR_BENCH_THIN_START_TIMEOUT_S, &self->job, &self->control, &self->daemon_version, error);
    return self->daemon != NULL;
}

/* the request of @command with the members @name = @value, ..., NULL */
static gboolean
control_call (Bench *self, const gchar *command, GError **error, const gchar *name, ...)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    va_list ap;

    va_start (ap, name);
    for (; name != NULL; name = va_arg (ap, const gchar *))
        json_object_set_string_member (args, name, va_arg (ap, const gchar *));
    va_end (ap);
    reply = vmr_bench_control_call (self->control, command, args, error);
    return reply != NULL;
}

/* where a copy goes: a new file, or a fresh nbdkit's export; measured by measure() */
static gboolean
make_destination (Bench *self, const Destination *d, guint64 size, VmrBenchThinServer *server,
                  gchar **out_dest, GError **error)
{
    VmrBenchThin *common = &self->common;

    if (d->format != NULL) {
        *out_dest
            = g_strdup_printf ("%s/dest-%u.%s", common->image_dir, common->run_number, d->format);
        return TRUE;
    }
    if (!vmr_bench_thin_server_start (common, server, &d->export, self->nbd_socket, size, error))
        return FALSE;
    *out_dest = g_strdup (server->uri);
    return TRUE;
}

/* once QEMU has quit: the bytes, then what the destination takes */
static gboolean
measure (const Destination *d, const gchar *source, const gchar *dest, VmrBenchThinServer *server,
         VmrBenchThinRun *run, GError **error)
{
    const gchar *format = d->format != NULL ? d->format : "raw";

    if (!vmr_bench_image_qemu_compare (source, "raw", dest, format, error))
        return FALSE;
    if (d->format == NULL)
        return vmr_bench_thin_server_measure (server, run->alloc, error);
    return vmr_bench_image_allocated (dest, format, &run->alloc[0], error);
}

/*
 * One copy on a fresh QEMU: attach it, migrate @source of @size bytes to
 * @d, time it from `migrate` to the daemon's `completed`, detach, quit
 * QEMU, check the bytes and measure the destination.
 */
static gboolean
copy_once (Bench *self, const Destination *d, const gchar *source, guint64 size,
           VmrBenchThinRun *run, GError **error)
{
    VmrBenchThin *common = &self->common;
    const gchar *monitors[] = { self->qemu_monitor, self->bench_monitor, NULL };
    g_autoptr (GSubprocess) qemu = NULL;
    g_autoptr (VmrQmpClient) watch = NULL;
    VmrBenchThinServer server = { 0 };
    g_autofree gchar *dest = NULL;
    g_autofree gchar *domain = NULL;
    gint64 start_mono;
    gboolean ok;

    common->run_number++;
    domain = g_strdup_printf ("thin-%u", common->run_number);
    vmr_bench_job_end_follow (&self->job, domain);
    ok = make_destination (self, d, size, &server, &dest, error);
    if (ok)
        qemu = vmr_bench_thin_start_qemu (common, source, monitors, &watch, error);
    ok = ok && qemu != NULL
         && control_call (self, "attach", error, "name", domain, "qmp", self->qemu_monitor, NULL);
    /* the timer: from the request that starts the copy to the end a user waits for */
    start_mono = g_get_monotonic_time ();
    ok = ok
         && control_call (self, "migrate", error, "domain", domain, "disk", "disk0", "destination",
                          dest, "format", d->format != NULL ? d->format : "raw", NULL)
         && vmr_bench_job_end_wait (&self->job, qemu, &common->interrupted,
                                    VMR_BENCH_THIN_JOB_TIMEOUT_S, error);
    run->copy_s = (gdouble) (self->job.final_mono - start_mono) / G_USEC_PER_SEC;
    ok = ok && control_call (self, "detach", error, "name", domain, NULL)
         && vmr_bench_quit_qemu (&qemu, &watch, self, VMR_BENCH_THIN_STOP_TIMEOUT_S, error)
         && measure (d, source, dest, &server, run, error);

    vmr_bench_close (&watch, self);
    vmr_bench_kill (&qemu);
    if (d->format != NULL && dest != NULL && g_unlink (dest) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", dest, g_strerror (errno));
    vmr_bench_thin_server_stop (&server);
    if (!ok)
        g_prefix_error (error, "run %u (%s to %s): ", common->run_number, source, d->title);
    return ok;
}

/* the destinations asked for, each round the full source and the thin one, in turn first */
static gboolean
run_destinations (Bench *self, guint64 thin_size, guint64 data_size, gboolean *all_met,
                  GError **error)
{
    VmrBenchThinSources sources = { 0 };
    VmrBenchThinCase *cases[G_N_ELEMENTS (destinations)] = { NULL };
    gboolean ok;

    ok = vmr_bench_thin_sources_create (&self->common, &sources, "daemon", thin_size, data_size, 1,
                                        error);
    for (guint i = 0; ok && i < G_N_ELEMENTS (destinations); i++) {
        const Destination *d = &destinations[i];

        if (d->format != NULL ? self->files : self->exports)
            cases[i] = vmr_bench_thin_case_new (d->title, &sources, d->alloc_label[0],
                                                d->alloc_label[1]);
    }
    for (guint round = 0; ok && round < self->common.rounds; round++) {
        for (guint i = 0; ok && i < G_N_ELEMENTS (destinations); i++) {
            VmrBenchThinRun full = { 0 };
            VmrBenchThinRun thin = { 0 };

            if (cases[i] == NULL)
                continue;
            guint order[2];

            /* the full source first in even rounds, the thin one in odd ones */
            vmr_bench_round_order (round, 2, order);
            for (guint k = 0; ok && k < 2; k++)
                ok = order[k] == 0 ? copy_once (self, &destinations[i], sources.full_source,
                                                data_size, &full, error)
                                   : copy_once (self, &destinations[i], sources.thin_source,
                                                thin_size, &thin, error);
            if (ok) {
                vmr_bench_thin_case_add (cases[i], FALSE, round, &full);
                vmr_bench_thin_case_add (cases[i], TRUE, round, &thin);
            }
        }
    }
    vmr_bench_thin_sources_clear (&sources);
    if (ok) {
        g_print ("virt-mirror thin disk benchmark: destinations through virt-mirrord\n");
        g_print ("  virt-mirrord %s%s, QEMU %s (TCG, guest paused), %u CPUs, images under %s\n",
                 self->daemon_version, self->daemon_log != NULL ? " (--verbose)" : "",
                 self->common.qemu_version != NULL ? self->common.qemu_version : "?",
                 g_get_num_processors (), self->common.image_dir);
    }
    for (guint i = 0; i < G_N_ELEMENTS (destinations); i++) {
        if (ok && cases[i] != NULL)
            *all_met = vmr_bench_thin_case_report (cases[i]) && *all_met;
        g_clear_pointer (&cases[i], vmr_bench_thin_case_free);
    }
    return ok;
}

static void
bench_free (Bench *self)
{
    vmr_bench_close (&self->control, &self->job);
    vmr_bench_stop_daemon (&self->daemon, VMR_BENCH_THIN_STOP_TIMEOUT_S);
    if (self->common.run_dir != NULL)
        vmr_bench_remove_dirs (self->common.run_dir, self->common.image_dir, FALSE);
    vmr_bench_job_end_follow (&self->job, NULL);
    g_free (self->common.qemu_path);
    g_free (self->common.run_dir);
    g_free (self->common.image_dir);
    g_free (self->common.qemu_version);
    g_free (self->daemon_path);
    g_free (self->daemon_log);
    g_free (self->control_socket);
    g_free (self->qemu_monitor);
    g_free (self->bench_monitor);
    g_free (self->nbd_socket);
    g_free (self->daemon_version);
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
    g_autofree gchar *only = NULL;
    gboolean quick = FALSE;
    gboolean nbd = FALSE;
    gboolean no_fallbacks = FALSE;
    gint rounds = 3;
    const GOptionEntry entries[] = {
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds of each case (default 3; under 3, no verdict)", "N" },
        { "quick", 'q', 0, G_OPTION_ARG_NONE, &quick,
          "An 8 GiB disk with 128 MiB of data against 128 MiB, instead of 64 GiB and 1 GiB", NULL },
        { "only", 0, 0, G_OPTION_ARG_STRING, &only,
          "Through virt-mirrord, only the file destinations (file) or only the NBD exports (nbd)",
          "KIND" },
        { "nbd-raw-qmp", 0, 0, G_OPTION_ARG_NONE, &nbd,
          "NBD exports of nbdkit, through QEMU's own mirror driven over QMP, without "
          "virt-mirrord",
          NULL },
        { "no-fallbacks", 0, 0, G_OPTION_ARG_NONE, &no_fallbacks,
          "With --nbd-raw-qmp: skip the cases at an eighth of the sizes (QEMU's defaults on a "
          "file export, servers that cannot zero quickly)",
          NULL },
        { NULL },
    };
    const VmrBenchCommonOptions common
        = { .dir = &dir_opt, .daemon = &daemon_opt, .qemu = &qemu_opt, .daemon_log = &daemon_log };
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autofree gchar *load_at_end = NULL;
    guint64 thin_size, data_size;
    gboolean all_met = TRUE;
    gboolean ok;

    if (!vmr_bench_parse_options ("bench-thin", "",
                                  "Copies a thin disk and a full disk of its data, and compares "
                                  "their copy times and the destinations' allocation.",
                                  entries, &common, &argc, &argv))
        return 2;
    if (argc > 1 || rounds < 1 || (no_fallbacks && !nbd) || (only != NULL && nbd)
        || (only != NULL && g_strcmp0 (only, "file") != 0 && g_strcmp0 (only, "nbd") != 0)) {
        g_printerr ("bench-thin: bad arguments; see --help\n");
        return 2;
    }
    thin_size = quick ? 8 * GIB : 64 * GIB;
    data_size = quick ? 128 * MIB : 1 * GIB;
    self->common.rounds = (guint) rounds;
    self->files = g_strcmp0 (only, "nbd") != 0;
    self->exports = g_strcmp0 (only, "file") != 0;
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
        self->nbd_socket = g_build_filename (self->common.run_dir, "nbd.sock", NULL);
        ok = start_daemon (self, &error)
             && run_destinations (self, thin_size, data_size, &all_met, &error);
    }
    if (!ok) {
        g_printerr ("bench-thin: %s\n", error->message);
        return 1;
    }
    load_at_end = vmr_bench_load_average ();
    g_print ("\nload average %s at the start, %s at the end\n", load_at_start, load_at_end);
    g_print ("data check: every copy, qemu-img compare of source and destination (an export "
             "through its server): equal\n");
    if (!nbd && rounds < VMR_BENCH_MIN_ROUNDS)
        g_print ("targets: no verdict (needs >= %d rounds)\n", VMR_BENCH_MIN_ROUNDS);
    else if (!nbd)
        g_print ("targets: %s\n", all_met ? "all met" : "some missed (MISS above)");
    return vmr_bench_exit_status ();
}
