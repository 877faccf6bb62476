/*
 * bench-verify: how fast virt-mirror verifies a copy, against `qemu-img
 * compare` of the same two images, in the same run.
 *
 * For each disk a paused QEMU (TCG, no guest) runs on the source, and
 * virt-mirrord moves it to a new raw image; then, round after round, the
 * bench asks the daemon to verify the copy (`job-verify`: QEMU's NBD
 * server, libnbd, a bitmap of the guest's writes) and runs `qemu-img
 * compare -U` on the old source and the destination, the verification
 * first in odd rounds and qemu-img first in even ones, so that page cache
 * and noise hit both alike. The verification's time is the
 * daemon's own (its record's started and finished), qemu-img's the
 * process's wall clock. Two disks:
 *   data  SIZE bytes, all data;
 *   thin  THIN bytes, the same SIZE of data spread in 16 extents, the rest
 *         never written.
 * Verdicts, each judged in each round and passed when at least two thirds
 * of the rounds met it (at least 3 rounds): qemu-img's time / the
 * verification's >= 0.8 (the verification at least 0.8x qemu-img
 * compare's throughput), for each disk; and the thin disk's verification
 * at most 1.5x the time of the data disk's in the same round (a mostly
 * empty disk verifies in about the time of its data). A MISS exits with
 * status 3. Every verification must pass and every qemu-img compare say
 * the images are identical; else the bench exits with status 1.
 *
 * Run it with `ninja -C BUILDDIR bench-verify`, or run
 * BUILDDIR/tests/bench/bench-verify directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "qmp-client.h"
#include "vmr-error.h"
#include "vmr-json.h"

#define MIB               (1024 * 1024)
#define START_TIMEOUT_S   30
#define JOB_TIMEOUT_S     900
#define STOP_TIMEOUT_S    30
#define POLL_MS           50
#define THROUGHPUT_TARGET 0.8
#define THIN_RATIO_TARGET 1.5
#define THIN_EXTENTS      16

typedef struct {
    /* options */
    guint64 size;      /* bytes of data of each disk */
    guint64 thin_size; /* bytes of the thin disk */
    guint rounds;
    gchar *daemon_path;
    gchar *qemu_path;
    gchar *qemu_img_path;
    /* places */
    gchar *run_dir;
    gchar *image_dir;
    gchar *control_socket;
    gchar *qemu_monitor;
    /* processes */
    GSubprocess *daemon;
    VmrQmpClient *control;
    GSubprocess *qemu;
    gboolean interrupted;
} Bench;

/* the figures of one disk, one value per round */
typedef struct {
    const gchar *name;
    guint64 virtual_size;
    GArray *verify_s;   /* of gdouble */
    GArray *qemu_img_s; /* of gdouble */
    GArray *ratios;     /* qemu-img / verify, of gdouble */
} DiskFigures;

/* a sparse raw image of @size with @data bytes of pseudo-random data in THIN_EXTENTS extents */
static gboolean
create_thin_source (const gchar *path, guint64 size, guint64 data, guint32 seed, GError **error)
{
    g_autofree guint8 *block = g_malloc (MIB);
    g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
    guint64 extent = data / THIN_EXTENTS;
    guint64 stride = size / THIN_EXTENTS;
    gint fd = open (path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    gboolean ok = fd >= 0 && ftruncate (fd, (off_t) size) == 0;

    for (guint e = 0; ok && e < THIN_EXTENTS; e++) {
        for (guint64 done = 0; ok && done < extent; done += MIB) {
            for (gsize i = 0; i < MIB / sizeof (guint32); i++)
                ((guint32 *) block)[i] = g_rand_int (rand);
            ok = pwrite (fd, block, MIB, (off_t) (e * stride + done)) == MIB;
        }
    }
    ok = ok && fdatasync (fd) == 0;
    if (!ok)
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot write %s: %s", path,
                     g_strerror (errno));
    if (fd >= 0)
        close (fd);
    return ok;
}

static gboolean
start_qemu (Bench *self, const gchar *image, GError **error)
{
    g_autofree gchar *log = g_build_filename (self->run_dir, "qemu.log", NULL);
    const gchar *monitors[] = { self->qemu_monitor, NULL };
    g_autoptr (VmrQmpClient) probe = NULL;

    self->qemu
        = vmr_bench_start_paused_qemu (self->qemu_path, self->run_dir, log, image, monitors, error);
    if (self->qemu == NULL)
        return FALSE;
    /* the daemon connects by itself; this only waits until QEMU listens */
    probe = vmr_bench_connect (self->qemu, self->qemu_monitor, "QEMU", START_TIMEOUT_S, error);
    if (probe == NULL)
        return FALSE;
    vmr_qmp_client_close (probe);
    return TRUE;
}

/* polls query-job until @done says so; the last job object */
static JsonObject *
poll_job (Bench *self, const gchar *id, gboolean (*done) (JsonObject *job), GError **error)
{
    gint64 deadline = g_get_monotonic_time () + JOB_TIMEOUT_S * G_USEC_PER_SEC;
    g_autoptr (JsonObject) args = json_object_new ();

    json_object_set_string_member (args, "id", id);
    while (!self->interrupted && g_get_monotonic_time () < deadline) {
        g_autoptr (JsonObject) job
            = vmr_bench_control_call (self->control, "query-job", args, error);

        if (job == NULL)
            return NULL;
        if (done (job))
            return g_steal_pointer (&job);
        g_usleep (POLL_MS * 1000);
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "job %s: gave up waiting", id);
    return NULL;
}

static gboolean
job_ended (JsonObject *job)
{
    const gchar *state = vmr_json_get_string (job, "state");

    return g_strcmp0 (state, "completed") == 0 || g_strcmp0 (state, "failed") == 0
           || g_strcmp0 (state, "cancelled") == 0;
}

static gboolean
verification_ended (JsonObject *job)
{
    JsonObject *v = vmr_json_get_object (job, "verification");

    return v != NULL && g_strcmp0 (vmr_json_get_string (v, "state"), "running") != 0;
}

/* attach the QEMU, migrate its disk to @dest, wait for the pivot */
static gboolean
move_disk (Bench *self, const gchar *dest, GError **error)
{
    g_autoptr (JsonObject) attach = json_object_new ();
    g_autoptr (JsonObject) migrate = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    g_autoptr (JsonObject) job = NULL;

    json_object_set_string_member (attach, "name", "vm");
    json_object_set_string_member (attach, "qmp", self->qemu_monitor);
    reply = vmr_bench_control_call (self->control, "attach", attach, error);
    if (reply == NULL)
        return FALSE;
    json_object_set_string_member (migrate, "domain", "vm");
    json_object_set_string_member (migrate, "disk", "disk0");
    json_object_set_string_member (migrate, "destination", dest);
    g_clear_pointer (&reply, json_object_unref);
    reply = vmr_bench_control_call (self->control, "migrate", migrate, error);
    if (reply == NULL)
        return FALSE;
    job = poll_job (self, "vmr-1", job_ended, error);
    if (job == NULL)
        return FALSE;
    if (g_strcmp0 (vmr_json_get_string (job, "state"), "completed") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the copy did not complete: %s",
                     vmr_json_get_string (job, "reason"));
        return FALSE;
    }
    return TRUE;
}

/* one verification through the daemon: its own time, seconds; < 0 on error */
static gdouble
verify_once (Bench *self, GError **error)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonObject) started = NULL;
    g_autoptr (JsonObject) job = NULL;
    JsonObject *v;

    json_object_set_string_member (args, "id", "vmr-1");
    started = vmr_bench_control_call (self->control, "job-verify", args, error);
    if (started == NULL)
        return -1;
    job = poll_job (self, "vmr-1", verification_ended, error);
    if (job == NULL)
        return -1;
    v = vmr_json_get_object (job, "verification");
    if (g_strcmp0 (vmr_json_get_string (v, "state"), "passed") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the verification did not pass: %s %s",
                     vmr_json_get_string (v, "state"), vmr_json_get_string (v, "error"));
        return -1;
    }
    return (gdouble) (vmr_json_int_or (v, "finished", 0) - vmr_json_int_or (v, "started", 0))
           / G_USEC_PER_SEC;
}

/* qemu-img compare -U of the two images: its wall-clock time, seconds; < 0 on error */
static gdouble
qemu_img_once (Bench *self, const gchar *source, const gchar *dest, GError **error)
{
    const gchar *argv[]
        = { self->qemu_img_path, "compare", "-U", "-f", "raw", "-F", "raw", source, dest, NULL };
    g_autoptr (GSubprocess) proc = NULL;
    g_autofree gchar *out = NULL;
    gint64 start = g_get_monotonic_time ();

    proc = g_subprocess_newv (
        argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE, error);
    if (proc == NULL || !g_subprocess_communicate_utf8 (proc, NULL, NULL, &out, NULL, error))
        return -1;
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "qemu-img compare: %s", out);
        return -1;
    }
    return (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC;
}

/* the whole run of one disk: QEMU, the daemon, the copy, the rounds, the end */
static gboolean
run_disk (Bench *self, DiskFigures *fig, const gchar *source, GError **error)
{
    g_autofree gchar *dest = g_strdup_printf ("%s/%s-dest.raw", self->image_dir, fig->name);
    const VmrBenchDaemonSpec spec = {
        .daemon_path = self->daemon_path,
        .run_dir = self->run_dir,
        .control_socket = self->control_socket,
        .timeout_s = START_TIMEOUT_S,
    };
    gboolean ok;

    ok = start_qemu (self, source, error);
    if (ok)
        self->daemon = vmr_bench_start_daemon (&spec, NULL, fig->virtual_size == self->size ? 1 : 2,
                                               &self->control, NULL, error);
    ok = ok && self->daemon != NULL && move_disk (self, dest, error);
    for (guint r = 0; ok && r < self->rounds; r++) {
        gdouble verify_s = -1, qemu_img_s = -1;

        /* the two in turn first, round after round */
        if (r % 2 == 1)
            qemu_img_s = qemu_img_once (self, source, dest, error);
        if (r % 2 == 0 || qemu_img_s > 0)
            verify_s = verify_once (self, error);
        if (r % 2 == 0 && verify_s > 0)
            qemu_img_s = qemu_img_once (self, source, dest, error);

        ok = verify_s > 0 && qemu_img_s > 0;
        if (!ok)
            break;
        g_array_append_val (fig->verify_s, verify_s);
        g_array_append_val (fig->qemu_img_s, qemu_img_s);
        g_array_append_val (fig->ratios, ((gdouble){ qemu_img_s / verify_s }));
        g_print ("  %s round %u: verify %.2f s, qemu-img compare %.2f s\n", fig->name, r + 1,
                 verify_s, qemu_img_s);
    }
    if (self->control != NULL) {
        vmr_qmp_client_close (self->control);
        g_clear_object (&self->control);
    }
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
    vmr_bench_kill (&self->qemu);
    g_unlink (dest);
    return ok;
}

static void
print_disk (const Bench *self, const DiskFigures *fig)
{
    gdouble verify_s = vmr_bench_median (fig->verify_s);
    gdouble qemu_img_s = vmr_bench_median (fig->qemu_img_s);
    gdouble ratio = vmr_bench_median (fig->ratios);
    guint met = vmr_bench_rounds_met (fig->ratios, VMR_BENCH_AT_LEAST, THROUGHPUT_TARGET);
    gdouble mib = (gdouble) fig->virtual_size / MIB;

    g_print ("%-5s %8.0f MiB  verify %6.2f s (%6.0f MiB/s)  qemu-img compare %6.2f s (%6.0f "
             "MiB/s)  ratio %.2fx (median)  target >= %.1fx each round  %s\n",
             fig->name, mib, verify_s, mib / verify_s, qemu_img_s, mib / qemu_img_s, ratio,
             THROUGHPUT_TARGET, vmr_bench_verdict_rounds (met, fig->ratios->len));
}

int
main (int argc, char **argv)
{
    g_autofree gchar *size_text = NULL;
    g_autofree gchar *thin_text = NULL;
    g_autofree gchar *dir_opt = NULL;
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *qemu_opt = NULL;
    gint rounds = 3;
    gboolean keep = FALSE;
    const GOptionEntry entries[] = {
        { "size", 's', 0, G_OPTION_ARG_STRING, &size_text, "Data per disk in MiB (default 1024)",
          "MIB" },
        { "thin-size", 't', 0, G_OPTION_ARG_STRING, &thin_text,
          "Size of the thin disk in MiB (default 16384)", "MIB" },
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds, "Rounds per disk (default 3)", "N" },
        { "keep", 'k', 0, G_OPTION_ARG_NONE, &keep, "Keep the run directory", NULL },
        G_OPTION_ENTRY_NULL,
    };
    const VmrBenchCommonOptions common
        = { .dir = &dir_opt, .daemon = &daemon_opt, .qemu = &qemu_opt };
    g_autoptr (GError) error = NULL;
    Bench bench = { 0 };
    DiskFigures disks[2] = { { "data" }, { "thin" } };
    g_autofree gchar *data_source = NULL;
    g_autofree gchar *thin_source = NULL;
    g_autofree gchar *load = NULL;
    gboolean ok;
    GArray *thin_ratios;
    gdouble thin_ratio;

    if (!vmr_bench_parse_options ("bench-verify", "- verification against qemu-img compare", NULL,
                                  entries, &common, &argc, &argv))
        return 2;
    bench.size = (size_text != NULL ? g_ascii_strtoull (size_text, NULL, 10) : 1024) * MIB;
    bench.thin_size = (thin_text != NULL ? g_ascii_strtoull (thin_text, NULL, 10) : 16384) * MIB;
    bench.rounds = (guint) MAX (rounds, 1);
    if (bench.size == 0 || bench.thin_size < bench.size || bench.size % (THIN_EXTENTS * MIB) != 0) {
        g_printerr (
            "bench-verify: --size must be a multiple of %d MiB, --thin-size at least that\n",
            THIN_EXTENTS);
        return 2;
    }
    bench.daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    bench.qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    bench.qemu_img_path = vmr_bench_pick_program (NULL, "VMR_QEMU_IMG", "qemu-img");
    if (!vmr_bench_make_dirs (dir_opt, &bench.run_dir, &bench.image_dir, &error)) {
        g_printerr ("bench-verify: %s\n", error->message);
        return 1;
    }
    bench.control_socket = g_build_filename (bench.run_dir, "virt-mirrord.sock", NULL);
    bench.qemu_monitor = g_build_filename (bench.run_dir, "qemu.qmp", NULL);
    vmr_bench_catch_signals (&bench.interrupted);
    load = vmr_bench_load_average ();
    g_print ("bench-verify: %u rounds; data disk %" G_GUINT64_FORMAT
             " MiB, thin disk %" G_GUINT64_FORMAT " MiB with the same data; load average %s\n",
             bench.rounds, bench.size / MIB, bench.thin_size / MIB, load);

    data_source = g_build_filename (bench.image_dir, "data-source.raw", NULL);
    thin_source = g_build_filename (bench.image_dir, "thin-source.raw", NULL);
    disks[0].virtual_size = bench.size;
    disks[1].virtual_size = bench.thin_size;
    for (guint i = 0; i < G_N_ELEMENTS (disks); i++) {
        disks[i].verify_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
        disks[i].qemu_img_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
        disks[i].ratios = g_array_new (FALSE, FALSE, sizeof (gdouble));
    }
    ok = vmr_bench_image_create_source (data_source, bench.size, 1, &error)
         && run_disk (&bench, &disks[0], data_source, &error);
    g_unlink (data_source);
    ok = ok && create_thin_source (thin_source, bench.thin_size, bench.size, 2, &error)
         && run_disk (&bench, &disks[1], thin_source, &error);
    g_unlink (thin_source);
    if (!ok) {
        g_printerr ("bench-verify: %s\n", error != NULL ? error->message : "interrupted");
        vmr_bench_remove_dirs (bench.run_dir, bench.image_dir, keep);
        return 1;
    }
    print_disk (&bench, &disks[0]);
    print_disk (&bench, &disks[1]);
    thin_ratios = g_array_new (FALSE, FALSE, sizeof (gdouble));
    for (guint r = 0; r < bench.rounds; r++)
        g_array_append_val (thin_ratios,
                            ((gdouble){ g_array_index (disks[1].verify_s, gdouble, r)
                                        / g_array_index (disks[0].verify_s, gdouble, r) }));
    thin_ratio = vmr_bench_median (thin_ratios);
    g_print ("thin disk of %" G_GUINT64_FORMAT " MiB against its %" G_GUINT64_FORMAT
             " MiB of data: %.2fx the time (median)  target <= %.1fx each round  %s\n",
             bench.thin_size / MIB, bench.size / MIB, thin_ratio, THIN_RATIO_TARGET,
             vmr_bench_verdict_rounds (
                 vmr_bench_rounds_met (thin_ratios, VMR_BENCH_AT_MOST, THIN_RATIO_TARGET),
                 bench.rounds));
    g_array_unref (thin_ratios);
    vmr_bench_remove_dirs (bench.run_dir, bench.image_dir, keep);
    for (guint i = 0; i < G_N_ELEMENTS (disks); i++) {
        g_array_unref (disks[i].verify_s);
        g_array_unref (disks[i].qemu_img_s);
        g_array_unref (disks[i].ratios);
    }
    return vmr_bench_exit_status ();
}
