/*
 * bench-scale: `virt-mirror evacuate` of many VMs at once.
 *
 * N paused, guest-less QEMUs (TCG, -S), each with one small raw disk full
 * of random data in a directory FROM, are attached to a fresh virt-mirrord
 * whose policy limits the copies running at once to P (max-parallel = P,
 * every other admission limit off). The bench then times
 * `virt-mirror evacuate --from FROM --to TO --wait` from its start to its
 * exit, reads the job objects (`virt-mirror --json jobs`) for the time of
 * each VM, and the daemon's CPU time (utime + stime in /proc/PID/stat).
 *
 * The baseline of the throughput is the device, measured in the same run:
 * `qemu-img convert` of the same N disks into one new file in the same
 * filesystem. Every figure is also printed as a ratio against a baseline
 * of the same run: the smallest count (linearity in N), the first P, the
 * device.
 *
 * After each run the QEMUs quit and every destination is compared with its
 * source byte for byte; a failed check exits with status 1. A run in which
 * more copies ran at once than max-parallel allows exits with status 3
 * (a MISS) once every run is done: the bench
 * counts them in QEMU itself, from the job events on its own monitor of
 * each QEMU (created -> ready, on QEMU's timestamps), and from the
 * daemon's job states (copying -> synced), and prints MISS with the run.
 *
 * Run it with `ninja -C BUILDDIR bench-scale`, or run
 * BUILDDIR/tests/bench/bench-scale directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-jobs.h"
#include "bench-process.h"
#include "bench-scale.h"
#include "bench-series.h"
#include "qmp-client.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_CLI
#define VMR_BENCH_CLI "virt-mirror"
#endif

#define MIB             (1024 * 1024)
#define MAX_COUNT       500
#define START_TIMEOUT_S 60
#define CLI_TIMEOUT_S   60
#define JOB_TIMEOUT_S   1800
#define STOP_TIMEOUT_S  30

typedef struct {
    /* options */
    gchar *daemon_path;
    gchar *cli_path;
    gchar *qemu_path;
    gchar *qemu_img_path;
    guint64 disk_size;
    gboolean keep;
    /* places */
    gchar *run_dir;   /* sockets, daemon states, policies, logs */
    gchar *image_dir; /* FROM, TO and the device file */
    gchar *from_dir;
    gchar *to_dir;
    gchar *device_dir;
    gchar *control_socket;
    /* processes */
    GSubprocess *daemon;
    GPtrArray *vms;  /* of Vm, the largest count; a run uses the first N */
    guint n_running; /* QEMUs started in this run */
    gchar *qemu_version;
    gchar *daemon_version;
    VmrBenchDaemonSpec daemon_spec; /* borrows the paths above */
    guint run_number;
    gboolean interrupted;
} Bench;

static void
vm_free (Vm *vm)
{
    vmr_bench_close (&vm->watch, vm);
    vmr_bench_kill (&vm->proc);
    g_free (vm->name);
    g_free (vm->source);
    g_free (vm->dest);
    g_free (vm->monitor);
    g_free (vm->watch_monitor);
    g_free (vm);
}

/*
 * Runs the CLI on the daemon's socket with @args; its output goes to
 * @log_name in the run directory, and into *@output when that is not NULL.
 * *@elapsed_s (may be NULL) is from just before the start to the exit.
 */
static gboolean
run_cli (Bench *self, const gchar *const *args, const gchar *log_name, guint timeout_s,
         gdouble *elapsed_s, gchar **output, GError **error)
{
    g_autofree gchar *log = g_build_filename (self->run_dir, log_name, NULL);
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autoptr (GSubprocess) proc = NULL;
    g_autofree gchar *joined = NULL;
    g_autofree gchar *what = NULL;
    gint64 start, end = 0;

    g_ptr_array_add (argv, self->cli_path);
    g_ptr_array_add (argv, "--connect");
    g_ptr_array_add (argv, self->control_socket);
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    joined = g_strjoinv (" ", (gchar **) args);
    what = g_strdup_printf ("virt-mirror %s", joined);

    start = g_get_monotonic_time ();
    proc = vmr_bench_spawn ((const gchar *const *) argv->pdata, self->run_dir, log, error);
    if (proc == NULL) {
        g_prefix_error (error, "cannot start %s: ", self->cli_path);
        return FALSE;
    }
    if (!vmr_bench_wait_process (proc, timeout_s, &self->interrupted, what, &end, error)) {
        g_autofree gchar *tail = vmr_bench_log_tail (log, 12);

        g_prefix_error (error, "%s: ", log);
        vmr_bench_append_output (error, tail);
        return FALSE;
    }
    if (elapsed_s != NULL)
        *elapsed_s = (gdouble) (end - start) / G_USEC_PER_SEC;
    if (output != NULL && !g_file_get_contents (log, output, NULL, error))
        return FALSE;
    return TRUE;
}

/* ---- the daemon ---- */

static gboolean
start_daemon (Bench *self, const gchar *policy, GError **error)
{
    g_autofree gchar *version = NULL;

    /* the bench talks to the daemon through the CLI only: the connection is closed */
    self->daemon = vmr_bench_start_daemon (&self->daemon_spec, policy, self->run_number, NULL,
                                           &version, error);
    if (self->daemon == NULL)
        return FALSE;
    if (self->daemon_version == NULL)
        self->daemon_version = g_steal_pointer (&version);
    return TRUE;
}

static void
stop_daemon (Bench *self)
{
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
}

/* ---- the QEMUs ---- */

static gboolean
spawn_qemu (Bench *self, Vm *vm, GError **error)
{
    g_autofree gchar *log
        = g_strdup_printf ("%s/qemu-%u-%s.log", self->run_dir, self->run_number, vm->name);
    g_autofree gchar *file_arg
        = g_strdup_printf ("driver=file,filename=%s,node-name=f0", vm->source);
    g_autofree gchar *qmp_arg = g_strdup_printf ("unix:%s,server=on,wait=off", vm->monitor);
    g_autofree gchar *watch_arg = g_strdup_printf ("unix:%s,server=on,wait=off", vm->watch_monitor);
    const gchar *argv[] = { self->qemu_path,
                            "-machine",
                            "q35,accel=tcg",
                            "-S",
                            "-nodefaults",
                            "-display",
                            "none",
                            "-m",
                            "32",
                            "-qmp",
                            qmp_arg,
                            "-qmp",
                            watch_arg,
                            "-blockdev",
                            file_arg,
                            "-blockdev",
                            "driver=raw,file=f0,node-name=d0",
                            "-device",
                            "virtio-blk-pci,drive=d0,id=vda",
                            NULL };

    vm->proc = vmr_bench_spawn (argv, self->run_dir, log, error);
    if (vm->proc == NULL) {
        g_prefix_error (error, "cannot start %s: ", self->qemu_path);
        return FALSE;
    }
    return TRUE;
}

/* starts the first @n QEMUs at once, then waits until each one listens */
static gboolean
start_qemus (Bench *self, guint n, GError **error)
{
    for (guint i = 0; i < n; i++) {
        if (!spawn_qemu (self, g_ptr_array_index (self->vms, i), error))
            return FALSE;
        self->n_running = i + 1;
    }
    for (guint i = 0; i < n; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);

        vm->watch = vmr_bench_connect (vm->proc, vm->watch_monitor, "QEMU", START_TIMEOUT_S, error);
        if (vm->watch == NULL) {
            g_prefix_error (error, "%s: ", vm->name);
            return FALSE;
        }
        if (self->qemu_version == NULL)
            self->qemu_version = vmr_bench_qemu_version (vm->watch);
    }
    return TRUE;
}

/*
 * "quit" on each QEMU's own monitor, so that it flushes and closes its
 * images; then waits for every one. FALSE when one did not exit cleanly.
 */
static gboolean
quit_qemus (Bench *self, GError **error)
{
    gboolean ok = TRUE;

    for (guint i = 0; i < self->n_running; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);

        if (vm->watch != NULL && vmr_bench_is_running (vm->proc)) {
            /* QEMU may close the monitor before its reply arrives */
            g_autoptr (JsonNode) reply
                = vmr_qmp_client_execute_sync (vm->watch, "quit", NULL, 0, NULL);
        }
        vmr_bench_close (&vm->watch, vm);
    }
    for (guint i = 0; i < self->n_running; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);

        if (vm->proc == NULL)
            continue;
        if (!vmr_bench_wait_exit (vm->proc, STOP_TIMEOUT_S)
            || !g_subprocess_get_if_exited (vm->proc)
            || g_subprocess_get_exit_status (vm->proc) != 0) {
            if (ok)
                g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                             "QEMU of %s did not exit cleanly on quit", vm->name);
            ok = FALSE;
        }
        vmr_bench_kill (&vm->proc);
    }
    self->n_running = 0;
    return ok;
}

static void
kill_qemus (Bench *self)
{
    for (guint i = 0; self->vms != NULL && i < self->vms->len; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);

        vmr_bench_close (&vm->watch, vm);
        vmr_bench_kill (&vm->proc);
    }
    self->n_running = 0;
}

/* removes everything in @dir, but not @dir */
static void
empty_dir (const gchar *dir)
{
    g_autoptr (GDir) handle = g_dir_open (dir, 0, NULL);
    const gchar *name;

    while (handle != NULL && (name = g_dir_read_name (handle)) != NULL) {
        g_autofree gchar *path = g_build_filename (dir, name, NULL);

        vmr_bench_remove_tree (path);
    }
}

/* writes back whatever is dirty in the images' filesystem, so that a measure starts clean */
static void
sync_images (Bench *self)
{
    int fd = open (self->image_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0 || syncfs (fd) < 0)
        g_warning ("cannot sync %s: %s", self->image_dir, g_strerror (errno));
    if (fd >= 0)
        close (fd);
}

/* fdatasync()s @path: the mirror flushes its destination before it pivots */
static gboolean
sync_file (const gchar *path, GError **error)
{
    int fd = open (path, O_WRONLY | O_CLOEXEC);
    int saved_errno = 0;

    if (fd < 0 || fdatasync (fd) < 0)
        saved_errno = errno;
    if (fd >= 0)
        close (fd);
    if (saved_errno != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot sync %s: %s", path,
                     g_strerror (saved_errno));
        return FALSE;
    }
    return TRUE;
}

/* ---- one run ---- */

/* the jobs of the first @n VMs, see bench_scale_parse_jobs() */
static gboolean
read_jobs (Bench *self, guint n, gint64 start, RunResult *result, GError **error)
{
    const gchar *args[] = { "--json", "jobs", NULL };
    g_autofree gchar *log_name = g_strdup_printf ("jobs-%u.json", self->run_number);
    g_autofree gchar *output = NULL;

    return run_cli (self, args, log_name, CLI_TIMEOUT_S, NULL, &output, error)
           && bench_scale_parse_jobs (output, self->vms, n, start, result, error);
}

/*
 * QEMU's own count of the copies of the first @n VMs, which @log recorded:
 * one mirror job in each QEMU, none left, and the most copying at once.
 */
static gboolean
count_qemu_copies (Bench *self, guint n, VmrBenchJobLog *log, RunResult *result, GError **error)
{
    guint n_jobs = 0;

    for (guint i = 0; i < n; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);
        /* the reply comes after every event QEMU sent before it: the log is complete */
        g_autoptr (JsonNode) reply
            = vmr_qmp_client_execute_sync (vm->watch, "query-block-jobs", NULL, 0, error);

        if (reply == NULL) {
            g_prefix_error (error, "%s: ", vm->name);
            return FALSE;
        }
        if (vmr_json_node_array (reply) == NULL
            || json_array_get_length (vmr_json_node_array (reply)) != 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s: QEMU still has a block job",
                         vm->name);
            return FALSE;
        }
    }
    if (!vmr_bench_job_log_max_copying (log, &result->qemu_max_copying, &n_jobs, error))
        return FALSE;
    if (n_jobs != n) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "QEMU reported %u jobs for %u VMs", n_jobs,
                     n);
        return FALSE;
    }
    return TRUE;
}

static gboolean
run_once (Bench *self, guint n, const gchar *policy, RunResult *result, GError **error)
{
    g_autoptr (VmrBenchJobLog) job_log = vmr_bench_job_log_new ();
    g_autofree gchar *evacuate_log = g_strdup_printf ("evacuate-%u.log", self->run_number);
    const gchar *evacuate[]
        = { "evacuate", "--from", self->from_dir, "--to", self->to_dir, "--wait", NULL };
    gdouble cpu_start, cpu_attached, cpu_end, rss = 0;
    gint64 attach_start, evacuate_start;

    if (!start_daemon (self, policy, error))
        return FALSE;
    cpu_start = vmr_bench_cpu_ms (self->daemon);
    if (!start_qemus (self, n, error))
        return FALSE;
    /* QEMU's account of the copies, to hold the daemon's admission limit against */
    for (guint i = 0; i < n; i++)
        vmr_bench_job_log_watch (job_log, ((Vm *) g_ptr_array_index (self->vms, i))->watch);

    attach_start = g_get_monotonic_time ();
    for (guint i = 0; i < n; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);
        const gchar *attach[] = { "attach", vm->name, "--qmp", vm->monitor, NULL };
        g_autofree gchar *log_name
            = g_strdup_printf ("attach-%u-%s.log", self->run_number, vm->name);

        if (!run_cli (self, attach, log_name, CLI_TIMEOUT_S, NULL, NULL, error))
            return FALSE;
    }
    result->attach_s = (gdouble) (g_get_monotonic_time () - attach_start) / G_USEC_PER_SEC;
    cpu_attached = vmr_bench_cpu_ms (self->daemon);
    for (guint i = 0; i < n; i++)
        rss += vmr_bench_rss_mib (((Vm *) g_ptr_array_index (self->vms, i))->proc);
    result->qemu_rss_mib = rss / n;

    sync_images (self);
    evacuate_start = g_get_real_time ();
    if (!run_cli (self, evacuate, evacuate_log, JOB_TIMEOUT_S, &result->total_s, NULL, error))
        return FALSE;
    cpu_end = vmr_bench_cpu_ms (self->daemon);
    if (cpu_start < 0 || cpu_attached < 0 || cpu_end < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot read the daemon's CPU time");
        return FALSE;
    }
    result->cpu_attach_ms = cpu_attached - cpu_start;
    result->cpu_evacuate_ms = cpu_end - cpu_attached;
    if (!read_jobs (self, n, evacuate_start, result, error)
        || !count_qemu_copies (self, n, job_log, result, error))
        return FALSE;

    stop_daemon (self);
    if (!quit_qemus (self, error))
        return FALSE;
    for (guint i = 0; i < n; i++) {
        Vm *vm = g_ptr_array_index (self->vms, i);

        if (!vmr_bench_image_compare (vm->source, vm->dest, self->disk_size, error))
            return FALSE;
    }
    return TRUE;
}

/*
 * One run: a fresh daemon with @policy, @n fresh QEMUs, evacuate, check the
 * bytes; the destinations are removed, whatever happened.
 */
static gboolean
bench_run (Bench *self, guint n, guint p, const gchar *policy, RunResult *result, GError **error)
{
    gboolean ok;

    self->run_number++;
    memset (result, 0, sizeof (*result));
    ok = run_once (self, n, policy, result, error);
    stop_daemon (self);
    kill_qemus (self);
    empty_dir (self->to_dir);
    if (!ok)
        g_prefix_error (error, "run %u (N=%u, P=%u): ", self->run_number, n, p);
    return ok;
}

/*
 * The device: `qemu-img convert` of the first @n sources into one new file
 * in the same filesystem and an fdatasync() of that file (qemu-img does not
 * flush; the mirror does), timed from its start to the end of the sync.
 */
static gboolean
device_run (Bench *self, guint n, gdouble *seconds, GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/qemu-img-%u.log", self->run_dir, n);
    g_autofree gchar *dest = g_build_filename (self->device_dir, "all.raw", NULL);
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autoptr (GSubprocess) proc = NULL;
    GStatBuf st;
    gint64 start, end;
    gboolean ok;

    /* the host's page cache both ways, as for the QEMUs' -blockdev driver=file */
    g_ptr_array_add (argv, self->qemu_img_path);
    g_ptr_array_add (argv, "convert");
    g_ptr_array_add (argv, "-f");
    g_ptr_array_add (argv, "raw");
    g_ptr_array_add (argv, "-O");
    g_ptr_array_add (argv, "raw");
    g_ptr_array_add (argv, "-T");
    g_ptr_array_add (argv, "writeback");
    g_ptr_array_add (argv, "-t");
    g_ptr_array_add (argv, "writeback");
    for (guint i = 0; i < n; i++)
        g_ptr_array_add (argv, ((Vm *) g_ptr_array_index (self->vms, i))->source);
    g_ptr_array_add (argv, dest);
    g_ptr_array_add (argv, NULL);

    sync_images (self);
    start = g_get_monotonic_time ();
    proc = vmr_bench_spawn ((const gchar *const *) argv->pdata, self->run_dir, log, error);
    if (proc == NULL) {
        g_prefix_error (error, "cannot start %s: ", self->qemu_img_path);
        return FALSE;
    }
    ok = vmr_bench_wait_process (proc, JOB_TIMEOUT_S, &self->interrupted, "qemu-img convert", NULL,
                                 error)
         && sync_file (dest, error);
    end = g_get_monotonic_time ();
    if (ok && (g_stat (dest, &st) != 0 || (guint64) st.st_size != n * self->disk_size)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "qemu-img convert made no %" G_GUINT64_FORMAT "-byte %s", n * self->disk_size,
                     dest);
        ok = FALSE;
    }
    if (!ok) {
        g_autofree gchar *tail = vmr_bench_log_tail (log, 12);

        g_prefix_error (error, "device (N=%u): ", n);
        vmr_bench_append_output (error, tail);
    }
    *seconds = (gdouble) (end - start) / G_USEC_PER_SEC;
    empty_dir (self->device_dir);
    return ok;
}

/* ---- set-up and tear-down ---- */

static void
bench_free (Bench *self)
{
    stop_daemon (self);
    kill_qemus (self);
    vmr_bench_remove_dirs (self->run_dir, self->image_dir, self->keep);
    g_clear_pointer (&self->vms, g_ptr_array_unref);
    g_free (self->daemon_path);
    g_free (self->cli_path);
    g_free (self->qemu_path);
    g_free (self->qemu_img_path);
    g_free (self->run_dir);
    g_free (self->image_dir);
    g_free (self->from_dir);
    g_free (self->to_dir);
    g_free (self->device_dir);
    g_free (self->control_socket);
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
    self->daemon_spec = (VmrBenchDaemonSpec){
        .daemon_path = self->daemon_path,
        .run_dir = self->run_dir,
        .control_socket = self->control_socket,
        .timeout_s = START_TIMEOUT_S,
    };
    self->from_dir = g_build_filename (self->image_dir, "from", NULL);
    self->to_dir = g_build_filename (self->image_dir, "to", NULL);
    self->device_dir = g_build_filename (self->image_dir, "device", NULL);
    if (g_mkdir (self->from_dir, 0700) < 0 || g_mkdir (self->to_dir, 0700) < 0
        || g_mkdir (self->device_dir, 0700) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot make a directory in %s: %s",
                     self->image_dir, g_strerror (errno));
        return FALSE;
    }
    return TRUE;
}

/* the sources of @count VMs, each of its own random block */
static gboolean
make_vms (Bench *self, guint count, GError **error)
{
    gint64 start = g_get_monotonic_time ();

    self->vms = g_ptr_array_new_with_free_func ((GDestroyNotify) vm_free);
    g_printerr ("writing %u source images of %" G_GUINT64_FORMAT " MiB...", count,
                self->disk_size / MIB);
    for (guint i = 0; i < count; i++) {
        Vm *vm = g_new0 (Vm, 1);
        g_autofree gchar *file = NULL;

        vm->name = g_strdup_printf ("vm%02u", i + 1);
        file = g_strdup_printf ("%s.raw", vm->name);
        vm->source = g_build_filename (self->from_dir, file, NULL);
        vm->dest = g_build_filename (self->to_dir, file, NULL);
        vm->monitor = g_strdup_printf ("%s/%s.qmp", self->run_dir, vm->name);
        vm->watch_monitor = g_strdup_printf ("%s/%s-bench.qmp", self->run_dir, vm->name);
        g_ptr_array_add (self->vms, vm);
        if (!vmr_bench_image_create_source (vm->source, self->disk_size, i + 1, error))
            return FALSE;
    }
    g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    return TRUE;
}

/* the policy of max-parallel = @p: every other admission limit off */
static gchar *
make_policy (Bench *self, guint p, GError **error)
{
    g_autofree gchar *name = g_strdup_printf ("max-parallel-%u.conf", p);
    g_autofree gchar *path = g_build_filename (self->run_dir, name, NULL);
    g_autofree gchar *text = g_strdup_printf ("[defaults]\n"
                                              "max-parallel = %u\n"
                                              "max-parallel-per-iothread = 0\n"
                                              "max-parallel-per-domain = 0\n"
                                              "max-parallel-per-destination = 0\n",
                                              p);

    if (!g_file_set_contents (path, text, -1, error))
        return NULL;
    return g_steal_pointer (&path);
}

/* "1,10,50" into an array of guint, each 1 to @max */
static GArray *
parse_list (const gchar *text, guint max)
{
    g_auto (GStrv) items = g_strsplit (text, ",", -1);
    g_autoptr (GArray) values = g_array_new (FALSE, FALSE, sizeof (guint));

    for (guint i = 0; items[i] != NULL; i++) {
        guint64 value;

        if (!g_ascii_string_to_unsigned (g_strstrip (items[i]), 10, 1, max, &value, NULL))
            return NULL;
        guint item = (guint) value;

        g_array_append_val (values, item);
    }
    return values->len > 0 ? g_steal_pointer (&values) : NULL;
}

/* DEVICE_REPEATS runs of the device's baseline for @n VMs in @round, into @device */
static gboolean
device_runs (Bench *self, guint round, guint n, GArray *device, GError **error)
{
    for (guint i = 0; i < DEVICE_REPEATS; i++) {
        gdouble device_s = 0;

        if (!device_run (self, n, &device_s, error))
            return FALSE;
        g_array_append_val (device, device_s);
        g_printerr ("  round %u N=%-3u device: %" G_GUINT64_FORMAT " MiB in %.3f s\n", round, n,
                    n * self->disk_size / MIB, device_s);
    }
    return TRUE;
}

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL;
    g_autofree gchar *cli_opt = NULL;
    g_autofree gchar *qemu_opt = NULL;
    g_autofree gchar *qemu_img_opt = NULL;
    g_autofree gchar *dir_opt = NULL;
    g_autofree gchar *counts_opt = NULL;
    g_autofree gchar *parallel_opt = NULL;
    gint rounds = 3;
    gint disk_mib = 32;
    gboolean keep = FALSE;
    const GOptionEntry entries[] = {
        { "counts", 'n', 0, G_OPTION_ARG_STRING, &counts_opt,
          "VMs per run, comma-separated; the first is the baseline (default 1,10,50)", "LIST" },
        { "parallel", 'p', 0, G_OPTION_ARG_STRING, &parallel_opt,
          "max-parallel values, comma-separated; the first is the baseline (default 2,4)", "LIST" },
        { "disk-size", 's', 0, G_OPTION_ARG_INT, &disk_mib, "Disk of each VM, MiB (default 32)",
          "MIB" },
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds; each runs every count with every P, the order of P reversed every other "
          "round (default 3)",
          "N" },
        { "workdir", 'd', 0, G_OPTION_ARG_FILENAME, &dir_opt,
          "Put the images in a new directory under DIR (default: the temporary directory)", "DIR" },
        { "keep", 'k', 0, G_OPTION_ARG_NONE, &keep,
          "Keep the images, the logs and the daemon's state at the end", NULL },
        { "cli", 0, 0, G_OPTION_ARG_FILENAME, &cli_opt,
          "virt-mirror to run (env VMR_CLI, default: the one built with the bench)", "PATH" },
        { "qemu-img", 0, 0, G_OPTION_ARG_FILENAME, &qemu_img_opt,
          "qemu-img binary for the device baseline (env VMR_QEMU_IMG, default qemu-img)", "PATH" },
        { NULL },
    };
    const VmrBenchCommonOptions common = { .daemon = &daemon_opt, .qemu = &qemu_opt };
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autoptr (GPtrArray) policies = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GPtrArray) breaches = g_ptr_array_new_with_free_func (g_free);
    Figures figures = { NULL, NULL, NULL, NULL };
    guint max_count = 0;
    gdouble rss = 0;
    gboolean ok;

    if (!vmr_bench_parse_options ("bench-scale", NULL,
                                  "Times `virt-mirror evacuate --wait` of N paused QEMUs with "
                                  "small disks under max-parallel P, against the device's "
                                  "throughput.",
                                  entries, &common, &argc, &argv))
        return 2;
    figures.counts = parse_list (counts_opt != NULL ? counts_opt : "1,10,50", MAX_COUNT);
    figures.parallel = parse_list (parallel_opt != NULL ? parallel_opt : "2,4", 1000);
    if (argc > 1 || figures.counts == NULL || figures.parallel == NULL || rounds < 1
        || disk_mib < 1) {
        g_printerr ("bench-scale: bad arguments; see --help\n");
        bench_scale_figures_free (&figures);
        return 2;
    }
    self->daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    self->cli_path = vmr_bench_pick_program (cli_opt, "VMR_CLI", VMR_BENCH_CLI);
    self->qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    self->qemu_img_path = vmr_bench_pick_program (qemu_img_opt, "VMR_QEMU_IMG", "qemu-img");
    self->disk_size = (guint64) disk_mib * MIB;
    self->keep = keep;
    for (guint c = 0; c < figures.counts->len; c++)
        max_count = MAX (max_count, g_array_index (figures.counts, guint, c));
    figures.device = g_new0 (GArray *, figures.counts->len);
    figures.runs = g_new0 (GArray **, figures.counts->len);
    for (guint c = 0; c < figures.counts->len; c++) {
        figures.device[c] = g_array_new (FALSE, FALSE, sizeof (gdouble));
        figures.runs[c] = g_new0 (GArray *, figures.parallel->len);
        for (guint q = 0; q < figures.parallel->len; q++)
            figures.runs[c][q] = g_array_new (FALSE, FALSE, sizeof (RunResult));
    }

    vmr_bench_catch_signals (&self->interrupted);

    load_at_start = vmr_bench_load_average ();
    ok = make_dirs (self, dir_opt, &error) && make_vms (self, max_count, &error);
    for (guint q = 0; ok && q < figures.parallel->len; q++) {
        gchar *policy = make_policy (self, g_array_index (figures.parallel, guint, q), &error);

        ok = policy != NULL;
        g_ptr_array_add (policies, policy);
    }
    for (guint round = 1; ok && round <= (guint) rounds; round++) {
        for (guint c = 0; ok && c < figures.counts->len; c++) {
            guint n = g_array_index (figures.counts, guint, c);

            /* the device's baseline before the daemon's runs in odd rounds, after in even ones */
            if (round % 2 == 1)
                ok = device_runs (self, round, n, figures.device[c], &error);
            for (guint k = 0; ok && k < figures.parallel->len; k++) {
                /* every other round runs the P values backwards */
                guint q = round % 2 == 1 ? k : figures.parallel->len - 1 - k;
                guint p = g_array_index (figures.parallel, guint, q);
                RunResult result;

                ok = bench_run (self, n, p, g_ptr_array_index (policies, q), &result, &error);
                if (!ok)
                    break;
                bench_scale_print_run (round, n, p, &result);
                /* a correctness check, not a figure: one run above the limit fails the bench */
                if (result.qemu_max_copying > p || result.max_running > p) {
                    gchar *why = g_strdup_printf ("round %u N=%u: %u copies at once in QEMU, %u "
                                                  "by the daemon's job states, above "
                                                  "max-parallel = %u",
                                                  round, n, result.qemu_max_copying,
                                                  result.max_running, p);

                    g_printerr ("  MISS: %s\n", why);
                    g_ptr_array_add (breaches, why);
                }
                g_array_append_val (figures.runs[c][q], result);
                if (n == max_count)
                    rss = MAX (rss, result.qemu_rss_mib);
            }
            if (ok && round % 2 == 0)
                ok = device_runs (self, round, n, figures.device[c], &error);
        }
    }
    if (ok) {
        g_autofree gchar *load_at_end = vmr_bench_load_average ();

        g_print ("virt-mirror scale benchmark: evacuate N paused QEMUs with small disks\n");
        g_print ("  virt-mirrord %s, QEMU %s (q35, TCG, -S, -m 32), %u CPUs, images under %s\n",
                 self->daemon_version != NULL ? self->daemon_version : "?",
                 self->qemu_version != NULL ? self->qemu_version : "?", g_get_num_processors (),
                 dir_opt != NULL ? dir_opt : g_get_tmp_dir ());
        g_print ("  one %d MiB raw disk of random data per VM; a fresh daemon and fresh QEMUs per "
                 "run; policy max-parallel = P, no other admission limit\n",
                 disk_mib);
        g_print ("  %d round(s), medians over the rounds; QEMU RSS %.0f MiB per VM at N=%u\n",
                 rounds, rss, max_count);
        g_print ("  load average %s at the start, %s at the end\n", load_at_start, load_at_end);
        bench_scale_report (&figures, self->disk_size);
        g_print ("\ndata check: every destination of every run equals its source: yes\n");
        if (breaches->len == 0)
            g_print ("admission: never more copies at once than max-parallel, in QEMU and by the "
                     "daemon's job states: PASS\n");
        else
            g_print ("admission: MISS: more copies at once than max-parallel in %u run(s)\n",
                     breaches->len);
        for (guint i = 0; i < breaches->len; i++)
            g_print ("  %s\n", (const gchar *) g_ptr_array_index (breaches, i));
    } else {
        g_printerr ("bench-scale: %s\n", error->message);
    }
    bench_scale_figures_free (&figures);
    if (!ok)
        return 1;
    return breaches->len == 0 ? 0 : VMR_BENCH_EXIT_MISS;
}
