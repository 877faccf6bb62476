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
 * source byte for byte; a failed check exits with status 1.
 *
 * Run it with `ninja -C BUILDDIR bench-scale`, or run
 * BUILDDIR/tests/bench/bench-scale directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "qmp-client.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_DAEMON
#define VMR_BENCH_DAEMON "virt-mirrord"
#endif
#ifndef VMR_BENCH_CLI
#define VMR_BENCH_CLI "virt-mirror"
#endif

#define MIB             (1024 * 1024)
#define MAX_COUNT       500
#define START_TIMEOUT_S 60
#define CLI_TIMEOUT_S   60
#define JOB_TIMEOUT_S   1800
#define STOP_TIMEOUT_S  30
/* device measures per count and round: each is short, and noisy */
#define DEVICE_REPEATS 3

/* one guest-less QEMU */
typedef struct {
    gchar *name;    /* its domain name: vm01, vm02, ... */
    gchar *source;  /* FROM/NAME.raw */
    gchar *dest;    /* TO/NAME.raw */
    gchar *monitor; /* the daemon's QMP socket */
    gchar *watch_monitor;
    GSubprocess *proc;
    VmrQmpClient *watch; /* the bench's own monitor: readiness and "quit" */
} Vm;

/* the figures of one run */
typedef struct {
    gdouble total_s;         /* evacuate --wait, from its start to its exit */
    gdouble done_s;          /* from its start to the last job's completed (host clock) */
    gdouble span_s;          /* first job created -> last job completed, daemon's stamps */
    gdouble vm_median_s;     /* per job: created -> completed */
    gdouble vm_max_s;        /* the same, the slowest job */
    gdouble copy_median_s;   /* per job: first copying -> completed */
    gdouble copy_max_s;      /* the same, the slowest job */
    gdouble attach_s;        /* the N `virt-mirror attach` one after the other */
    gdouble cpu_evacuate_ms; /* the daemon's CPU time during evacuate */
    gdouble cpu_attach_ms;   /* the daemon's CPU time during the attaches */
    gdouble qemu_rss_mib;    /* the mean resident size of one QEMU */
    guint max_running;       /* the most jobs copying at once (copying -> synced) */
} RunResult;

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

/* the last @lines lines of @path, for an error message */
static gchar *
log_tail (const gchar *path, guint lines)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) all = NULL;
    guint n, first;

    if (!g_file_get_contents (path, &text, NULL, NULL))
        return g_strdup ("(no log)");
    g_strchomp (text);
    all = g_strsplit (text, "\n", -1);
    n = g_strv_length (all);
    first = n > lines ? n - lines : 0;
    return g_strjoinv ("\n", all + first);
}

/* adds what a process printed to the message of @error */
static void
append_output (GError **error, const gchar *output)
{
    gchar *message;

    if (error == NULL || *error == NULL)
        return;
    message = g_strdup_printf ("%s; it printed:\n%s", (*error)->message, output);
    g_free ((*error)->message);
    (*error)->message = message;
}

/* ---- waiting for a process ---- */

typedef struct {
    gboolean done;
    gint64 end_mono; /* when the bench learnt of the exit */
} ExitWait;

static void
exited_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ExitWait *wait = user_data;

    g_subprocess_wait_finish (G_SUBPROCESS (source), res, NULL);
    wait->end_mono = g_get_monotonic_time ();
    wait->done = TRUE;
}

/*
 * Iterates the default main context until @proc exits, at most @timeout_s
 * or until an interruption; then kills it. Sets *@end_mono (may be NULL) to
 * the moment of the exit. Returns TRUE when it exited with status 0.
 */
static gboolean
wait_process (Bench *self, GSubprocess *proc, guint timeout_s, const gchar *what, gint64 *end_mono,
              GError **error)
{
    gint64 deadline = g_get_monotonic_time () + timeout_s * G_USEC_PER_SEC;
    g_autoptr (GCancellable) cancellable = g_cancellable_new ();
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();
    ExitWait wait = { FALSE, 0 };

    /* the callback wakes the loop at once: the tick only bounds the checks below */
    g_subprocess_wait_async (proc, cancellable, exited_cb, &wait);
    while (!wait.done && !self->interrupted && g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
    if (!wait.done) {
        g_cancellable_cancel (cancellable);
        while (!wait.done)
            g_main_context_iteration (NULL, TRUE);
        g_subprocess_force_exit (proc);
        vmr_bench_wait_exit (proc, STOP_TIMEOUT_S);
        g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "%s %s", what,
                     self->interrupted ? "interrupted" : "did not end in time");
        return FALSE;
    }
    if (end_mono != NULL)
        *end_mono = wait.end_mono;
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s failed", what);
        return FALSE;
    }
    return TRUE;
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
    if (!wait_process (self, proc, timeout_s, what, &end, error)) {
        g_autofree gchar *tail = log_tail (log, 12);

        g_prefix_error (error, "%s: ", log);
        append_output (error, tail);
        return FALSE;
    }
    if (elapsed_s != NULL)
        *elapsed_s = (gdouble) (end - start) / G_USEC_PER_SEC;
    if (output != NULL && !g_file_get_contents (log, output, NULL, error))
        return FALSE;
    return TRUE;
}

/* ---- /proc ---- */

/*
 * The process's user + system CPU time in ms, -1 when it cannot be read:
 * its CPU-time clock (nanoseconds, every thread), or else utime + stime of
 * /proc/PID/stat, which come in clock ticks (10 ms).
 */
static gdouble
cpu_ms (GSubprocess *proc)
{
    const gchar *pid = g_subprocess_get_identifier (proc);
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_auto (GStrv) fields = NULL;
    const gchar *end;

    clockid_t clock;
    struct timespec ts;

    if (pid == NULL)
        return -1;
    if (clock_getcpuclockid ((pid_t) atoi (pid), &clock) == 0 && clock_gettime (clock, &ts) == 0)
        return (gdouble) ts.tv_sec * 1000.0 + (gdouble) ts.tv_nsec / 1e6;
    path = g_strdup_printf ("/proc/%s/stat", pid);
    if (!g_file_get_contents (path, &text, NULL, NULL) || (end = strrchr (text, ')')) == NULL
        || end[1] == '\0')
        return -1;
    /* after "(comm)": state is field 3, utime 14 and stime 15 (proc(5)) */
    fields = g_strsplit (end + 2, " ", 0);
    if (g_strv_length (fields) < 13)
        return -1;
    return (gdouble) (g_ascii_strtoull (fields[11], NULL, 10)
                      + g_ascii_strtoull (fields[12], NULL, 10))
           * 1000.0 / (gdouble) sysconf (_SC_CLK_TCK);
}

/* the process's resident size in MiB, 0 when it cannot be read */
static gdouble
rss_mib (GSubprocess *proc)
{
    const gchar *pid = g_subprocess_get_identifier (proc);
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    const gchar *line;

    if (pid == NULL)
        return 0;
    path = g_strdup_printf ("/proc/%s/status", pid);
    if (!g_file_get_contents (path, &text, NULL, NULL)
        || (line = strstr (text, "\nVmRSS:")) == NULL)
        return 0;
    return g_ascii_strtod (line + strlen ("\nVmRSS:"), NULL) / 1024.0;
}

/* ---- the daemon ---- */

static gboolean
start_daemon (Bench *self, const gchar *policy, GError **error)
{
    g_autofree gchar *state_dir = g_strdup_printf ("%s/state-%u", self->run_dir, self->run_number);
    g_autofree gchar *log
        = g_strdup_printf ("%s/virt-mirrord-%u.log", self->run_dir, self->run_number);
    const gchar *argv[]
        = { self->daemon_path, "--foreground", "--no-libvirt", "--socket", self->control_socket,
            "--state-dir",     state_dir,      "--policy",     policy,     NULL };
    g_autoptr (VmrQmpClient) control = NULL;
    g_autoptr (JsonNode) version = NULL;

    self->daemon = vmr_bench_spawn (argv, self->run_dir, log, error);
    if (self->daemon == NULL) {
        g_prefix_error (error, "cannot start %s: ", self->daemon_path);
        return FALSE;
    }
    /* the bench talks to the daemon through the CLI only: this is the readiness check */
    control = vmr_bench_connect (self->daemon, self->control_socket, "virt-mirrord",
                                 START_TIMEOUT_S, error);
    if (control == NULL) {
        g_prefix_error (error, "see %s: ", log);
        return FALSE;
    }
    version = vmr_qmp_client_execute_sync (control, "query-version", NULL, 0, error);
    vmr_qmp_client_close (control);
    if (version == NULL || !JSON_NODE_HOLDS_OBJECT (version))
        return FALSE;
    if (self->daemon_version == NULL)
        self->daemon_version
            = g_strdup (vmr_bench_member_string (json_node_get_object (version), "version"));
    return TRUE;
}

static void
stop_daemon (Bench *self)
{
    if (self->daemon == NULL)
        return;
    if (vmr_bench_is_running (self->daemon)) {
        /* SIGTERM first, so that it removes its socket */
        g_subprocess_send_signal (self->daemon, SIGTERM);
        if (!vmr_bench_wait_exit (self->daemon, STOP_TIMEOUT_S))
            vmr_bench_kill (&self->daemon);
    }
    g_clear_object (&self->daemon);
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
        JsonObject *version;

        vm->watch = vmr_bench_connect (vm->proc, vm->watch_monitor, "QEMU", START_TIMEOUT_S, error);
        if (vm->watch == NULL) {
            g_prefix_error (error, "%s: ", vm->name);
            return FALSE;
        }
        version
            = json_object_get_object_member (vmr_qmp_client_get_greeting (vm->watch), "version");
        if (self->qemu_version == NULL && version != NULL
            && json_object_has_member (version, "qemu")) {
            JsonObject *qemu = json_object_get_object_member (version, "qemu");

            self->qemu_version
                = g_strdup_printf ("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT,
                                   json_object_get_int_member (qemu, "major"),
                                   json_object_get_int_member (qemu, "minor"),
                                   json_object_get_int_member (qemu, "micro"));
        }
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

static gdouble
array_max (GArray *values)
{
    gdouble max = 0;

    for (guint i = 0; i < values->len; i++)
        max = MAX (max, g_array_index (values, gdouble, i));
    return max;
}

/* the time of @job's first history entry in @state, 0 when there is none */
static gint64
history_time (JsonObject *job, const gchar *state)
{
    JsonArray *history = json_object_has_member (job, "history")
                             ? json_object_get_array_member (job, "history")
                             : NULL;

    for (guint i = 0; history != NULL && i < json_array_get_length (history); i++) {
        JsonObject *entry = json_array_get_object_element (history, i);

        if (g_strcmp0 (vmr_bench_member_string (entry, "state"), state) == 0)
            return vmr_bench_member_int (entry, "time");
    }
    return 0;
}

/* the most intervals [start, end) of @starts/@ends that overlap at one moment */
static guint
max_overlap (GArray *starts, GArray *ends)
{
    g_autoptr (GArray) s = g_array_copy (starts);
    g_autoptr (GArray) e = g_array_copy (ends);
    guint i = 0, j = 0, now = 0, max = 0;

    g_array_sort (s, vmr_bench_compare_doubles);
    g_array_sort (e, vmr_bench_compare_doubles);
    while (i < s->len) {
        if (g_array_index (s, gdouble, i) < g_array_index (e, gdouble, j)) {
            now++;
            i++;
            max = MAX (max, now);
        } else {
            now--;
            j++;
        }
    }
    return max;
}

/*
 * Reads the jobs of the first @n VMs (@start: when evacuate started, host
 * wall clock in microseconds, the clock of the jobs' times) from `virt-mirror --json jobs`: each
 * must have completed into its VM's destination. Fills the per-VM figures.
 */
static gboolean
read_jobs (Bench *self, guint n, gint64 start, RunResult *result, GError **error)
{
    const gchar *args[] = { "--json", "jobs", NULL };
    g_autofree gchar *log_name = g_strdup_printf ("jobs-%u.json", self->run_number);
    g_autofree gchar *output = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GArray) vm_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) copy_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autofree gboolean *seen = g_new0 (gboolean, n);
    gint64 first_created = G_MAXINT64, last_completed = 0;
    JsonNode *root;
    JsonArray *jobs;

    if (!run_cli (self, args, log_name, CLI_TIMEOUT_S, NULL, &output, error)
        || !json_parser_load_from_data (parser, output, -1, error))
        return FALSE;
    root = json_parser_get_root (parser);
    if (root == NULL || !JSON_NODE_HOLDS_ARRAY (root)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "virt-mirror --json jobs: not a list");
        return FALSE;
    }
    jobs = json_node_get_array (root);
    if (json_array_get_length (jobs) != n) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%u jobs for %u VMs",
                     json_array_get_length (jobs), n);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        JsonObject *job = json_array_get_object_element (jobs, i);
        const gchar *domain = vmr_bench_member_string (job, "domain");
        gint64 created = vmr_bench_member_int (job, "created");
        gint64 copying = history_time (job, "copying");
        gint64 synced = history_time (job, "synced");
        gint64 completed = history_time (job, "completed");
        gdouble value;
        guint index = G_MAXUINT;

        for (guint k = 0; k < n; k++)
            if (g_strcmp0 (((Vm *) g_ptr_array_index (self->vms, k))->name, domain) == 0)
                index = k;
        if (index == G_MAXUINT || seen[index]) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s: unexpected domain %s",
                         vmr_bench_member_string (job, "id"), domain);
            return FALSE;
        }
        seen[index] = TRUE;
        if (g_strcmp0 (vmr_bench_member_string (job, "state"), "completed") != 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s of %s ended %s: %s",
                         vmr_bench_member_string (job, "id"), domain,
                         vmr_bench_member_string (job, "state"),
                         vmr_bench_member_string (job, "reason"));
            return FALSE;
        }
        if (g_strcmp0 (vmr_bench_member_string (job, "destination"),
                       ((Vm *) g_ptr_array_index (self->vms, index))->dest)
            != 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s of %s went to %s",
                         vmr_bench_member_string (job, "id"), domain,
                         vmr_bench_member_string (job, "destination"));
            return FALSE;
        }
        if (created == 0 || copying == 0 || completed == 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                         "job %s: no created, copying or completed time",
                         vmr_bench_member_string (job, "id"));
            return FALSE;
        }
        value = (gdouble) (completed - created) / G_USEC_PER_SEC;
        g_array_append_val (vm_s, value);
        value = (gdouble) (completed - copying) / G_USEC_PER_SEC;
        g_array_append_val (copy_s, value);
        value = (gdouble) copying;
        g_array_append_val (starts, value);
        /* max-parallel counts bulk copies: a synced job holds no slot */
        value = (gdouble) (synced != 0 ? synced : completed);
        g_array_append_val (ends, value);
        first_created = MIN (first_created, created);
        last_completed = MAX (last_completed, completed);
    }
    result->span_s = (gdouble) (last_completed - first_created) / G_USEC_PER_SEC;
    result->done_s = (gdouble) (last_completed - start) / G_USEC_PER_SEC;
    result->vm_median_s = vmr_bench_median (vm_s);
    result->vm_max_s = array_max (vm_s);
    result->copy_median_s = vmr_bench_median (copy_s);
    result->copy_max_s = array_max (copy_s);
    result->max_running = max_overlap (starts, ends);
    return TRUE;
}

static gboolean
run_once (Bench *self, guint n, const gchar *policy, RunResult *result, GError **error)
{
    g_autofree gchar *evacuate_log = g_strdup_printf ("evacuate-%u.log", self->run_number);
    const gchar *evacuate[]
        = { "evacuate", "--from", self->from_dir, "--to", self->to_dir, "--wait", NULL };
    gdouble cpu_start, cpu_attached, cpu_end, rss = 0;
    gint64 attach_start, evacuate_start;

    if (!start_daemon (self, policy, error))
        return FALSE;
    cpu_start = cpu_ms (self->daemon);
    if (!start_qemus (self, n, error))
        return FALSE;

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
    cpu_attached = cpu_ms (self->daemon);
    for (guint i = 0; i < n; i++)
        rss += rss_mib (((Vm *) g_ptr_array_index (self->vms, i))->proc);
    result->qemu_rss_mib = rss / n;

    sync_images (self);
    evacuate_start = g_get_real_time ();
    if (!run_cli (self, evacuate, evacuate_log, JOB_TIMEOUT_S, &result->total_s, NULL, error))
        return FALSE;
    cpu_end = cpu_ms (self->daemon);
    if (cpu_start < 0 || cpu_attached < 0 || cpu_end < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot read the daemon's CPU time");
        return FALSE;
    }
    result->cpu_attach_ms = cpu_attached - cpu_start;
    result->cpu_evacuate_ms = cpu_end - cpu_attached;
    if (!read_jobs (self, n, evacuate_start, result, error))
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
    ok = wait_process (self, proc, JOB_TIMEOUT_S, "qemu-img convert", NULL, error)
         && sync_file (dest, error);
    end = g_get_monotonic_time ();
    if (ok && (g_stat (dest, &st) != 0 || (guint64) st.st_size != n * self->disk_size)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "qemu-img convert made no %" G_GUINT64_FORMAT "-byte %s", n * self->disk_size,
                     dest);
        ok = FALSE;
    }
    if (!ok) {
        g_autofree gchar *tail = log_tail (log, 12);

        g_prefix_error (error, "device (N=%u): ", n);
        append_output (error, tail);
    }
    *seconds = (gdouble) (end - start) / G_USEC_PER_SEC;
    empty_dir (self->device_dir);
    return ok;
}

/* ---- figures ---- */

/* the median over the rounds of the RunResult member at @offset */
static gdouble
field_median (GArray *runs, gsize offset)
{
    g_autoptr (GArray) values = g_array_new (FALSE, FALSE, sizeof (gdouble));

    for (guint i = 0; i < runs->len; i++) {
        const RunResult *result = &g_array_index (runs, RunResult, i);
        gdouble value = G_STRUCT_MEMBER (gdouble, result, offset);

        g_array_append_val (values, value);
    }
    return vmr_bench_median (values);
}

#define MEDIAN(runs, member) field_median ((runs), G_STRUCT_OFFSET (RunResult, member))

/* "1.234" or "-" for a ratio of nothing */
static gchar *
ratio (gdouble value, gdouble baseline)
{
    return baseline > 0 ? g_strdup_printf ("%.3f", value / baseline) : g_strdup ("-");
}

typedef struct {
    GArray *counts;   /* of guint */
    GArray *parallel; /* of guint */
    GArray **device;  /* [count] of gdouble seconds */
    GArray ***runs;   /* [count][parallel] of RunResult */
} Figures;

static void
print_run (guint round, guint n, guint p, const RunResult *result)
{
    g_printerr ("  round %u N=%-3u P=%u: evacuate %.3f s (last job done at %.3f s, jobs span "
                "%.3f s), per VM %.3f/%.3f s, copy %.3f/%.3f s, %u copying at once, attach %.2f s, "
                "daemon CPU %.2f ms/VM, bytes checked\n",
                round, n, p, result->total_s, result->done_s, result->span_s, result->vm_median_s,
                result->vm_max_s, result->copy_median_s, result->copy_max_s, result->max_running,
                result->attach_s, result->cpu_evacuate_ms / n);
}

/*
 * One table of a time per run: its median, per VM, and the ratios against
 * the first count (scaled by N), the first P and the device.
 */
static void
report_times (Bench *self, const Figures *figures, gsize offset)
{
    guint n0 = g_array_index (figures->counts, guint, 0);
    gdouble disk_mib = (gdouble) self->disk_size / MIB;

    g_print ("  %5s %3s %10s %10s %7s %7s %8s %6s\n", "N", "P", "time (s)", "per VM (s)", "/N",
             "/P", "MiB/s", "/dev");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);
        gdouble device_s = vmr_bench_median (figures->device[c]);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            gdouble total = field_median (figures->runs[c][q], offset);
            g_autofree gchar *vs_n
                = ratio (total, field_median (figures->runs[0][q], offset) * n / n0);
            g_autofree gchar *vs_p = ratio (total, field_median (figures->runs[c][0], offset));
            g_autofree gchar *vs_dev = ratio (device_s, total);

            g_print ("  %5u %3u %10.3f %10.4f %7s %7s %8.0f %6s\n", n, p, total, total / n, vs_n,
                     vs_p, n * disk_mib / total, vs_dev);
        }
    }
}

static void
report (Bench *self, const Figures *figures)
{
    guint n0 = g_array_index (figures->counts, guint, 0);
    guint p0 = g_array_index (figures->parallel, guint, 0);
    gdouble disk_mib = (gdouble) self->disk_size / MIB;

    g_print ("\ndevice: qemu-img convert of the same N disks into one new file in the same "
             "filesystem,\nthen fdatasync() of that file; median of every round's %u copies\n",
             DEVICE_REPEATS);
    g_print ("  %5s %9s %10s %9s\n", "N", "MiB", "time (s)", "MiB/s");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);
        gdouble s = vmr_bench_median (figures->device[c]);

        g_print ("  %5u %9.0f %10.3f %9.0f\n", n, n * disk_mib, s, n * disk_mib / s);
    }

    g_print ("\nratios: /N = time / (time at N=%u x N/%u), same P (1.000: linear in N);\n"
             "        /P = time / time at P=%u, same N; /dev = throughput / the device's, same N\n",
             n0, n0, p0);
    g_print ("\nevacuate, from the command's start to the last job's completed (job times)\n");
    report_times (self, figures, G_STRUCT_OFFSET (RunResult, done_s));
    g_print ("\nevacuate --wait, from the command's start to its exit\n");
    report_times (self, figures, G_STRUCT_OFFSET (RunResult, total_s));

    g_print ("\nper VM, from the job objects (s): created -> completed (queue wait included),\n"
             "and copying -> completed (the copy and the pivot); /N = median / median at N=%u\n",
             n0);
    g_print ("  %5s %3s %9s %9s %7s %9s %9s %7s %8s\n", "N", "P", "median", "max", "/N", "copy med",
             "copy max", "/N", "copying");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            GArray *runs = figures->runs[c][q];
            g_autofree gchar *vm_ratio
                = ratio (MEDIAN (runs, vm_median_s), MEDIAN (figures->runs[0][q], vm_median_s));
            g_autofree gchar *copy_ratio
                = ratio (MEDIAN (runs, copy_median_s), MEDIAN (figures->runs[0][q], copy_median_s));
            guint max_running = 0;

            for (guint i = 0; i < runs->len; i++)
                max_running = MAX (max_running, g_array_index (runs, RunResult, i).max_running);
            g_print ("  %5u %3u %9.3f %9.3f %7s %9.3f %9.3f %7s %8u\n", n, p,
                     MEDIAN (runs, vm_median_s), MEDIAN (runs, vm_max_s), vm_ratio,
                     MEDIAN (runs, copy_median_s), MEDIAN (runs, copy_max_s), copy_ratio,
                     max_running);
        }
    }

    g_print ("\ndaemon CPU time (user + system), ms per VM: during evacuate --wait, and during\n"
             "the attaches; /N = per VM / per VM at N=%u, same P\n",
             n0);
    g_print ("  %5s %3s %10s %7s %10s %11s\n", "N", "P", "evacuate", "/N", "attach", "attach (s)");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            GArray *runs = figures->runs[c][q];
            gdouble per_vm = MEDIAN (runs, cpu_evacuate_ms) / n;
            g_autofree gchar *cpu_ratio
                = ratio (per_vm, MEDIAN (figures->runs[0][q], cpu_evacuate_ms) / n0);

            g_print ("  %5u %3u %10.2f %7s %10.2f %11.3f\n", n, p, per_vm, cpu_ratio,
                     MEDIAN (runs, cpu_attach_ms) / n, MEDIAN (runs, attach_s));
        }
    }
}

/* ---- set-up and tear-down ---- */

static void
bench_free (Bench *self)
{
    stop_daemon (self);
    kill_qemus (self);
    if (!self->keep) {
        vmr_bench_remove_dirs (self->run_dir, self->image_dir);
    } else if (self->run_dir != NULL) {
        g_printerr ("kept %s%s%s\n", self->run_dir,
                    g_strcmp0 (self->image_dir, self->run_dir) != 0 ? " and " : "",
                    g_strcmp0 (self->image_dir, self->run_dir) != 0 ? self->image_dir : "");
    }
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

static void
figures_free (Figures *figures)
{
    for (guint c = 0; figures->device != NULL && c < figures->counts->len; c++) {
        g_array_unref (figures->device[c]);
        for (guint q = 0; q < figures->parallel->len; q++)
            g_array_unref (figures->runs[c][q]);
        g_free (figures->runs[c]);
    }
    g_free (figures->device);
    g_free (figures->runs);
    g_clear_pointer (&figures->counts, g_array_unref);
    g_clear_pointer (&figures->parallel, g_array_unref);
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
        { "daemon", 0, 0, G_OPTION_ARG_FILENAME, &daemon_opt,
          "virt-mirrord to run (env VMR_DAEMON, default: the one built with the bench)", "PATH" },
        { "cli", 0, 0, G_OPTION_ARG_FILENAME, &cli_opt,
          "virt-mirror to run (env VMR_CLI, default: the one built with the bench)", "PATH" },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, &qemu_opt,
          "QEMU binary (env VMR_QEMU, default qemu-system-x86_64)", "PATH" },
        { "qemu-img", 0, 0, G_OPTION_ARG_FILENAME, &qemu_img_opt,
          "qemu-img binary for the device baseline (env VMR_QEMU_IMG, default qemu-img)", "PATH" },
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new (NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autoptr (GPtrArray) policies = g_ptr_array_new_with_free_func (g_free);
    Figures figures = { NULL, NULL, NULL, NULL };
    guint max_count = 0;
    gdouble rss = 0;
    gboolean ok;

    g_option_context_set_summary (
        context, "Times `virt-mirror evacuate --wait` of N paused QEMUs with small "
                 "disks under max-parallel P, against the device's throughput.");
    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, &argc, &argv, &error)) {
        g_printerr ("bench-scale: %s\n", error->message);
        return 2;
    }
    figures.counts = parse_list (counts_opt != NULL ? counts_opt : "1,10,50", MAX_COUNT);
    figures.parallel = parse_list (parallel_opt != NULL ? parallel_opt : "2,4", 1000);
    if (argc > 1 || figures.counts == NULL || figures.parallel == NULL || rounds < 1
        || disk_mib < 1) {
        g_printerr ("bench-scale: bad arguments; see --help\n");
        figures_free (&figures);
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

    g_unix_signal_add (SIGINT, vmr_bench_interrupt_cb, &self->interrupted);
    g_unix_signal_add (SIGTERM, vmr_bench_interrupt_cb, &self->interrupted);
    g_unix_signal_add (SIGHUP, vmr_bench_interrupt_cb, &self->interrupted);

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

            for (guint i = 0; ok && i < DEVICE_REPEATS; i++) {
                gdouble device_s = 0;

                ok = device_run (self, n, &device_s, &error);
                if (!ok)
                    break;
                g_array_append_val (figures.device[c], device_s);
                g_printerr ("  round %u N=%-3u device: %" G_GUINT64_FORMAT " MiB in %.3f s\n",
                            round, n, n * self->disk_size / MIB, device_s);
            }
            for (guint k = 0; ok && k < figures.parallel->len; k++) {
                /* every other round runs the P values backwards */
                guint q = round % 2 == 1 ? k : figures.parallel->len - 1 - k;
                guint p = g_array_index (figures.parallel, guint, q);
                RunResult result;

                ok = bench_run (self, n, p, g_ptr_array_index (policies, q), &result, &error);
                if (!ok)
                    break;
                print_run (round, n, p, &result);
                if (result.max_running > p)
                    g_printerr ("  WARNING: %u jobs were copying at once under max-parallel = %u\n",
                                result.max_running, p);
                g_array_append_val (figures.runs[c][q], result);
                if (n == max_count)
                    rss = MAX (rss, result.qemu_rss_mib);
            }
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
        report (self, &figures);
        g_print ("\ndata check: every destination of every run equals its source: yes\n");
    } else {
        g_printerr ("bench-scale: %s\n", error->message);
    }
    figures_free (&figures);
    return ok ? 0 : 1;
}
