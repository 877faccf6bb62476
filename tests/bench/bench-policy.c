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
 * `completed`. Rounds alternate the two variants so that drifting load on
 * the host hits both alike; the verdict needs at least 3 rounds.
 *
 * Run it with `ninja -C BUILDDIR bench-policy`, or run
 * BUILDDIR/tests/bench/bench-policy directly for the options (--help).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <sys/prctl.h>

#include "bench-image.h"
#include "bench-policy.h"
#include "bench-process.h"
#include "bench-series.h"
#include "guest-console.h"
#include "guest-disk.h"
#include "qmp-client.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_DAEMON
#define VMR_BENCH_DAEMON "virt-mirrord"
#endif
#ifndef VMR_BENCH_POLICY
#define VMR_BENCH_POLICY "data/policy.conf"
#endif
#ifndef VMR_BENCH_GUEST_BUILD
#define VMR_BENCH_GUEST_BUILD "tests/guest/build-guest"
#endif
#ifndef VMR_BENCH_GUEST_DIR
#define VMR_BENCH_GUEST_DIR "build/guest"
#endif

#define MIB             (1024 * 1024)
#define START_TIMEOUT_S 30
#define BOOT_TIMEOUT_S  120
#define JOB_TIMEOUT_S   900
#define STOP_TIMEOUT_S  30
/* the guest's load goes on until the bench quits QEMU */
#define GUEST_RUNTIME_S 3600
/* with the policy, the guest keeps at least this share of its IOPS while copying */
#define TARGET_RATIO 0.90

typedef struct {
    /* options */
    gchar *daemon_path;
    gchar *qemu_path;
    gchar *policy_path;
    gchar *guest_build;
    gchar *guest_dir;
    guint iops;
    guint64 disk_size;
    guint settle_s;
    guint before_s;
    guint after_gap_s;
    guint after_s;
    /* places */
    gchar *run_dir;
    gchar *image_dir;
    gchar *control_socket;
    gchar *qemu_monitor;
    gchar *bench_monitor;
    gchar *empty_policy;
    gchar *kernel;
    gchar *initrd;
    /* processes */
    GSubprocess *daemon;
    VmrQmpClient *control;
    GSubprocess *qemu;
    VmrQmpClient *qemu_watch;
    VmrGuestConsole *console;
    gchar *qemu_version;
    gboolean direct;
    /* the running job: the only one of the run's daemon */
    gchar *job_id;
    gint64 job_synced_mono;         /* when it reached `synced`, 0 = not yet */
    gint64 job_end_mono;            /* when its final state arrived, 0 = not yet */
    gchar *job_final;               /* that state */
    VmrBenchDaemonSpec daemon_spec; /* borrows the paths above */
    guint run_number;
    gboolean interrupted;
} Bench;

/* ---- the daemon ---- */

static void
control_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                  gpointer user_data)
{
    Bench *self = user_data;
    const gchar *state = vmr_json_get_string (data, "state");

    /* a fresh daemon per run: its one job is the run's, even before `migrate` replied */
    if (g_strcmp0 (name, "JOB_STATE_CHANGED") != 0 || state == NULL)
        return;
    if (g_strcmp0 (state, "synced") == 0 && self->job_synced_mono == 0)
        self->job_synced_mono = g_get_monotonic_time ();
    if (self->job_end_mono == 0
        && (g_strcmp0 (state, "completed") == 0 || g_strcmp0 (state, "failed") == 0
            || g_strcmp0 (state, "cancelled") == 0)) {
        self->job_end_mono = g_get_monotonic_time ();
        self->job_final = g_strdup (state);
    }
}

static gboolean
start_daemon (Bench *self, const gchar *policy, GError **error)
{
    self->daemon = vmr_bench_start_daemon (&self->daemon_spec, policy, self->run_number,
                                           &self->control, NULL, error);
    if (self->daemon == NULL)
        return FALSE;
    g_signal_connect (self->control, "event", G_CALLBACK (control_event_cb), self);
    return TRUE;
}

static void
stop_daemon (Bench *self)
{
    vmr_bench_close (&self->control, self);
    vmr_bench_stop_daemon (&self->daemon, STOP_TIMEOUT_S);
}

/* ---- the guest ---- */

static gboolean
find_guest (Bench *self, GError **error)
{
    const gchar *argv[] = { self->guest_build, "--out", self->guest_dir, NULL };
    g_autofree gchar *err = NULL;
    gint status = 0;

    if (g_file_test (self->guest_build, G_FILE_TEST_IS_EXECUTABLE)) {
        g_printerr ("checking the test guest in %s...\n", self->guest_dir);
        if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                           NULL, &err, &status, error))
            return FALSE;
        if (!g_spawn_check_wait_status (status, NULL)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s failed:\n%s", self->guest_build,
                         err);
            return FALSE;
        }
    }
    self->kernel = g_build_filename (self->guest_dir, "vmlinuz", NULL);
    self->initrd = g_build_filename (self->guest_dir, "initramfs.cpio.gz", NULL);
    if (!g_file_test (self->kernel, G_FILE_TEST_IS_REGULAR)
        || !g_file_test (self->initrd, G_FILE_TEST_IS_REGULAR)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "no test guest in %s (build it with tests/guest/build-guest)",
                     self->guest_dir);
        return FALSE;
    }
    return TRUE;
}

static void
child_setup_cb (gpointer user_data)
{
    /* a bench killed outright takes its QEMU with it */
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* boots the guest on @image with the load running until the bench quits it */
static gboolean
start_guest (Bench *self, const gchar *image, GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/qemu-%u.log", self->run_dir, self->run_number);
    g_autofree gchar *console_log
        = g_strdup_printf ("%s/console-%u.log", self->run_dir, self->run_number);
    g_autofree gchar *append
        = g_strdup_printf ("console=ttyS0 quiet edd=off vmr.job=load vmr.iops=%u vmr.runtime=%u",
                           self->iops, GUEST_RUNTIME_S);
    g_autofree gchar *file_arg = NULL;
    g_autofree gchar *qmp_arg = g_strdup_printf ("unix:%s,server=on,wait=off", self->qemu_monitor);
    g_autofree gchar *bench_arg
        = g_strdup_printf ("unix:%s,server=on,wait=off", self->bench_monitor);
    /* stdin stays /dev/null: QEMU's stdio console must not take the terminal */
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
    g_autofree gchar *escaped = NULL;
    int console_pipe[2];

    /* QEMU option values escape a comma by doubling it */
    {
        g_auto (GStrv) parts = g_strsplit (image, ",", -1);

        escaped = g_strjoinv (",,", parts);
    }
    self->direct = vmr_guest_disk_takes_o_direct (image);
    file_arg = g_strdup_printf ("driver=file,filename=%s,node-name=f0%s", escaped,
                                self->direct ? ",cache.direct=on,aio=native" : "");
    {
        const gchar *argv[] = { self->qemu_path,
                                "-machine",
                                "q35",
                                "-accel",
                                "tcg",
                                "-m",
                                "256",
                                "-nodefaults",
                                "-display",
                                "none",
                                "-no-shutdown",
                                "-serial",
                                "stdio",
                                "-kernel",
                                self->kernel,
                                "-initrd",
                                self->initrd,
                                "-append",
                                append,
                                "-object",
                                "iothread,id=io0",
                                "-blockdev",
                                file_arg,
                                "-blockdev",
                                "driver=raw,file=f0,node-name=d0",
                                "-device",
                                "virtio-blk-pci,drive=d0,id=disk0,iothread=io0",
                                "-qmp",
                                qmp_arg,
                                "-qmp",
                                bench_arg,
                                NULL };

        if (!g_unix_open_pipe (console_pipe, FD_CLOEXEC, error))
            return FALSE;
        g_subprocess_launcher_set_cwd (launcher, self->run_dir);
        g_subprocess_launcher_set_child_setup (launcher, child_setup_cb, NULL, NULL);
        g_subprocess_launcher_take_stdout_fd (launcher, console_pipe[1]);
        g_subprocess_launcher_set_stderr_file_path (launcher, log);
        self->qemu = g_subprocess_launcher_spawnv (launcher, argv, error);
    }
    /* the launcher closes its end of the pipe: EOF reaches the reader when QEMU exits */
    g_clear_object (&launcher);
    if (self->qemu == NULL) {
        close (console_pipe[0]);
        g_prefix_error (error, "cannot start %s: ", self->qemu_path);
        return FALSE;
    }
    self->console = vmr_guest_console_new (console_pipe[0], console_log);
    self->qemu_watch
        = vmr_bench_connect (self->qemu, self->bench_monitor, "QEMU", START_TIMEOUT_S, error);
    if (self->qemu_watch == NULL)
        return FALSE;
    if (self->qemu_version == NULL)
        self->qemu_version = vmr_bench_qemu_version (self->qemu_watch);
    return TRUE;
}

static void
stop_guest (Bench *self)
{
    if (self->qemu_watch != NULL && vmr_bench_is_running (self->qemu)) {
        g_autoptr (JsonNode) reply = NULL;

        /* QEMU may close the monitor before its reply arrives */
        reply = vmr_qmp_client_execute_sync (self->qemu_watch, "quit", NULL, 0, NULL);
        vmr_bench_wait_exit (self->qemu, STOP_TIMEOUT_S);
    }
    vmr_bench_close (&self->qemu_watch, self);
    vmr_bench_kill (&self->qemu);
    g_clear_pointer (&self->console, vmr_guest_console_free);
}

/*
 * Iterates the main loop (QMP events) until a console line at @from or
 * later holds @needle, or @deadline_mono. Returns the line's index, -1 with
 * @error set otherwise.
 */
static gint
wait_line (Bench *self, const gchar *needle, guint from, gint64 deadline_mono, GError **error)
{
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (TRUE) {
        gint found = vmr_guest_console_wait (self->console, needle, from, 0, NULL);

        if (found >= 0)
            return found;
        if (self->interrupted) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "interrupted");
            return -1;
        }
        if (vmr_guest_console_ended (self->console) || g_get_monotonic_time () > deadline_mono) {
            g_autofree gchar *tail = vmr_guest_console_tail (self->console, 8);

            g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "no console line '%s'; it ends:\n%s",
                         needle, tail);
            return -1;
        }
        g_main_context_iteration (NULL, TRUE);
    }
}

/* iterates the main loop for @seconds, or until the guest stops; FALSE then */
static gboolean
sleep_loop (Bench *self, gdouble seconds, GError **error)
{
    gint64 until = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (g_get_monotonic_time () < until) {
        if (self->interrupted || vmr_guest_console_ended (self->console)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                         self->interrupted ? "interrupted" : "QEMU ended");
            return FALSE;
        }
        g_main_context_iteration (NULL, TRUE);
    }
    return TRUE;
}

/* ---- one run ---- */

static JsonObject *
control_call (Bench *self, const gchar *command, JsonObject *args, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (self->control, command, args, 0, error);
    JsonObject *obj;

    if (reply == NULL)
        return NULL;
    obj = vmr_json_node_object (reply);
    if (obj == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "%s: reply is not an object", command);
        return NULL;
    }
    return json_object_ref (obj);
}

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

/*
 * Iterates the main loop until *@stamp is set or the job ended, whichever
 * comes first; FALSE on a deadline, an interruption or the end of the guest.
 */
static gboolean
wait_job (Bench *self, const gint64 *stamp, gint64 deadline_mono, const gchar *what, GError **error)
{
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (*stamp == 0 && self->job_end_mono == 0) {
        if (self->interrupted || g_get_monotonic_time () > deadline_mono
            || vmr_guest_console_ended (self->console)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the job reached no %s", what);
            return FALSE;
        }
        g_main_context_iteration (NULL, TRUE);
    }
    return TRUE;
}

/* @command without arguments on the bench's own QEMU monitor */
static gboolean
qemu_call (Bench *self, const gchar *command, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (self->qemu_watch, command, NULL, 0, error);

    if (reply == NULL)
        g_prefix_error (error, "QEMU %s: ", command);
    return reply != NULL;
}

/*
 * Migrates the guest's disk to @dest with a pivot by hand: the copy while
 * the guest runs, then, at `synced`, the guest paused, the pivot, the byte
 * check of @dest against @source while both are at rest, and the guest
 * resumed. Leaves the job's record in *@out_job.
 */
static gboolean
migrate_and_check (Bench *self, const gchar *source, const gchar *dest, gint64 migrate_start,
                   RunResult *result, JsonObject **out_job, GError **error)
{
    g_autoptr (JsonObject) migrate = json_object_new ();
    g_autoptr (JsonObject) pivot = json_object_new ();
    g_autoptr (JsonObject) query = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    gint64 deadline = migrate_start + JOB_TIMEOUT_S * G_USEC_PER_SEC;
    gint64 pivot_start, resumed;

    json_object_set_string_member (migrate, "domain", "bench");
    json_object_set_string_member (migrate, "disk", "disk0");
    json_object_set_string_member (migrate, "destination", dest);
    json_object_set_boolean_member (migrate, "manual-pivot", TRUE);
    reply = control_call (self, "migrate", migrate, error);
    if (reply == NULL)
        return FALSE;
    self->job_id = g_strdup (vmr_json_get_string (reply, "id"));
    if (!wait_job (self, &self->job_synced_mono, deadline, "synced", error))
        return FALSE;
    /* a job that ended before `synced` failed: its record says why, below */
    if (self->job_synced_mono != 0) {
        /*
         * From here until the guest resumes, nothing writes to either image:
         * stop drains the guest's I/O, and the pivot mirrors what is left.
         */
        if (!qemu_call (self, "stop", error))
            return FALSE;
        pivot_start = g_get_monotonic_time ();
        json_object_set_string_member (pivot, "id", self->job_id);
        g_clear_pointer (&reply, json_object_unref);
        reply = control_call (self, "job-pivot", pivot, error);
        if (reply == NULL || !wait_job (self, &self->job_end_mono, deadline, "end", error))
            return FALSE;
        result->migration_s
            = (gdouble) (self->job_synced_mono - migrate_start + self->job_end_mono - pivot_start)
              / G_USEC_PER_SEC;
    }
    json_object_set_string_member (query, "id", self->job_id);
    *out_job = control_call (self, "query-job", query, error);
    if (*out_job == NULL)
        return FALSE;
    describe_job (*out_job, result);
    if (self->job_synced_mono == 0 || g_strcmp0 (self->job_final, "completed") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the job ended %s: %s", self->job_final,
                     vmr_json_get_string (*out_job, "reason"));
        return FALSE;
    }
    /* the pivot was exact: the guest's disk now holds what its source held */
    if (!vmr_bench_image_compare (source, dest, self->disk_size, error)
        || !qemu_call (self, "cont", error))
        return FALSE;
    resumed = g_get_monotonic_time ();
    result->paused_s = (gdouble) (resumed - self->job_synced_mono) / G_USEC_PER_SEC;
    return TRUE;
}

static gboolean
run_once (Bench *self, Variant variant, const gchar *source, RunResult *result, GError **error)
{
    g_autofree gchar *dest = g_strdup_printf ("%s/dest-%u.raw", self->image_dir, self->run_number);
    g_autoptr (JsonObject) attach = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (GArray) iops = NULL;
    gint64 before_start, migrate_start, after_start, after_end;

    if (!start_daemon (self, variant == VARIANT_POLICY ? self->policy_path : self->empty_policy,
                       error)
        || !start_guest (self, source, error))
        return FALSE;
    json_object_set_string_member (attach, "name", "bench");
    json_object_set_string_member (attach, "qmp", self->qemu_monitor);
    reply = control_call (self, "attach", attach, error);
    if (reply == NULL)
        return FALSE;

    if (wait_line (self, "VMR-READY", 0, g_get_monotonic_time () + BOOT_TIMEOUT_S * G_USEC_PER_SEC,
                   error)
        < 0)
        return FALSE;
    if (wait_line (self, "VMR-IOPS", 0, g_get_monotonic_time () + 60 * G_USEC_PER_SEC, error) < 0)
        return FALSE;
    /* fio's first seconds are not steady: settle, then the baseline */
    if (!sleep_loop (self, self->settle_s, error))
        return FALSE;
    before_start = g_get_monotonic_time ();
    if (!sleep_loop (self, self->before_s, error))
        return FALSE;

    migrate_start = g_get_monotonic_time ();
    if (!migrate_and_check (self, source, dest, migrate_start, result, &job, error))
        return FALSE;

    /*
     * fio's rate limit keeps to its average: after a slow spell it runs
     * faster until it has made up the I/Os it missed. The after-phase
     * starts once that is over. (The pause does not count: the guest's
     * clock stood still.)
     */
    if (!sleep_loop (self, self->after_gap_s, error))
        return FALSE;
    after_start = g_get_monotonic_time ();
    if (!sleep_loop (self, self->after_s, error))
        return FALSE;
    after_end = g_get_monotonic_time ();

    iops = vmr_guest_console_get_iops (self->console);
    result->before_iops
        = vmr_guest_iops_mean (iops, before_start, migrate_start, &result->before_lat_us, NULL);
    result->during_iops = vmr_guest_iops_mean (iops, migrate_start, self->job_synced_mono,
                                               &result->during_lat_us, &result->during_lines);
    result->after_iops
        = vmr_guest_iops_mean (iops, after_start, after_end, &result->after_lat_us, NULL);

    stop_guest (self);
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
    g_clear_pointer (&self->job_id, g_free);
    g_clear_pointer (&self->job_final, g_free);
    self->job_synced_mono = 0;
    self->job_end_mono = 0;
    ok = run_once (self, variant, source, result, error);
    stop_guest (self);
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
    stop_guest (self);
    stop_daemon (self);
    if (self->image_dir != NULL && g_strcmp0 (self->image_dir, self->run_dir) != 0)
        vmr_bench_remove_tree (self->image_dir);
    if (g_getenv ("VMR_BENCH_KEEP_DIR") == NULL)
        vmr_bench_remove_tree (self->run_dir);
    else
        g_printerr ("kept %s\n", self->run_dir);
    g_free (self->daemon_path);
    g_free (self->qemu_path);
    g_free (self->policy_path);
    g_free (self->guest_build);
    g_free (self->guest_dir);
    g_free (self->run_dir);
    g_free (self->image_dir);
    g_free (self->control_socket);
    g_free (self->qemu_monitor);
    g_free (self->bench_monitor);
    g_free (self->empty_policy);
    g_free (self->kernel);
    g_free (self->initrd);
    g_free (self->qemu_version);
    g_free (self->job_id);
    g_free (self->job_final);
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
    self->qemu_monitor = g_build_filename (self->run_dir, "qmp.sock", NULL);
    self->bench_monitor = g_build_filename (self->run_dir, "bench.sock", NULL);
    /* [defaults] alone: the built-in values, no limit of any kind */
    self->empty_policy = g_build_filename (self->run_dir, "unthrottled.conf", NULL);
    return g_file_set_contents (self->empty_policy, "[defaults]\n", -1, error);
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
          "Rounds; each boots the guest twice, unthrottled then policy (default 3, the fewest "
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
        VMR_BENCH_OPTION_DIR (&dir_opt),
        { "guest", 'g', 0, G_OPTION_ARG_FILENAME, &guest_opt,
          "The test guest's directory (env VMR_GUEST_DIR; built there if needed)", "DIR" },
        VMR_BENCH_OPTION_DAEMON (&daemon_opt),
        VMR_BENCH_OPTION_QEMU (&qemu_opt),
        { NULL },
    };
    g_autoptr (GOptionContext) context = g_option_context_new (NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (Bench) self = g_new0 (Bench, 1);
    g_autofree gchar *load_at_start = NULL;
    g_autofree gchar *load_at_end = NULL;
    g_autofree gchar *source = NULL;
    Figures figures[N_VARIANTS];
    gboolean ok;

    g_option_context_set_summary (context,
                                  "Measures a busy guest's IOPS before, during and after the "
                                  "migration of its disk, unthrottled and with the policy.");
    g_option_context_add_main_entries (context, entries, NULL);
    if (!g_option_context_parse (context, &argc, &argv, &error)) {
        g_printerr ("bench-policy: %s\n", error->message);
        return 2;
    }
    if (argc > 1 || rounds < 1 || iops < 1 || disk_mib < 64 || settle_s < 0 || before_s < 2
        || after_gap_s < 0 || after_s < 2) {
        g_printerr ("bench-policy: bad arguments; see --help\n");
        return 2;
    }
    self->daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    self->qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    self->policy_path = vmr_bench_pick_program (policy_opt, NULL, VMR_BENCH_POLICY);
    self->guest_dir = vmr_bench_pick_program (guest_opt, "VMR_GUEST_DIR", VMR_BENCH_GUEST_DIR);
    self->guest_build = vmr_bench_pick_program (NULL, "VMR_GUEST_BUILD", VMR_BENCH_GUEST_BUILD);
    self->iops = (guint) iops;
    self->disk_size = (guint64) disk_mib * MIB;
    self->settle_s = (guint) settle_s;
    self->before_s = (guint) before_s;
    self->after_gap_s = (guint) after_gap_s;
    self->after_s = (guint) after_s;

    vmr_bench_catch_signals (&self->interrupted);
    for (guint v = 0; v < N_VARIANTS; v++)
        bench_policy_figures_init (&figures[v]);

    load_at_start = vmr_bench_load_average ();
    ok = find_guest (self, &error) && make_dirs (self, dir_opt, &error);
    if (ok) {
        gint64 start = g_get_monotonic_time ();

        source = g_build_filename (self->image_dir, "source.raw", NULL);
        g_printerr ("writing a %d MiB source image...", disk_mib);
        ok = vmr_bench_image_create_source (source, self->disk_size, 7, &error);
        g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    }
    if (ok) {
        g_print ("virt-mirror policy benchmark: a busy guest's I/O while its disk migrates\n");
        g_print ("  guest: fio randrw 70/30, 8 KiB, iodepth 1, vmr.iops=%u, %d MiB raw disk "
                 "(iothread%s)\n",
                 self->iops, disk_mib,
                 vmr_guest_disk_takes_o_direct (source) ? ", cache.direct=on, aio=native"
                                                        : ", host cache");
        g_print ("  policy variant: %s\n", self->policy_path);
        g_print ("  IOPS and latency (us) are the guest's; during is migrate -> synced; migration "
                 "is that plus job-pivot -> completed (s)\n");
        g_print ("  %-5s %-12s %7s %7s %7s %7s %8s %8s %9s  %s\n", "round", "variant", "before",
                 "during", "after", "dur/bef", "lat bef", "lat dur", "migration", "job states");
    }
    for (guint round = 1; ok && round <= (guint) rounds; round++) {
        for (Variant v = only_policy ? VARIANT_POLICY : 0; ok && v < N_VARIANTS; v++) {
            RunResult result;

            ok = bench_run (self, v, source, &result, &error);
            if (ok) {
                bench_policy_print_run (round, v, &result);
                bench_policy_figures_add (&figures[v], &result);
            }
            bench_policy_run_result_clear (&result);
        }
    }
    if (!ok) {
        g_printerr ("bench-policy: %s\n", error->message);
        for (guint v = 0; v < N_VARIANTS; v++)
            bench_policy_figures_clear (&figures[v]);
        return 1;
    }

    load_at_end = vmr_bench_load_average ();
    g_print ("\n  QEMU %s (TCG, 1 vCPU, 256 MiB), %u CPUs, load average %s at the start, %s at "
             "the end\n",
             self->qemu_version != NULL ? self->qemu_version : "?", g_get_num_processors (),
             load_at_start, load_at_end);
    bench_policy_print_summary (figures, only_policy ? VARIANT_POLICY : 0, TARGET_RATIO);
    g_print ("  data check: every run's destination equalled its source at the pivot: yes\n");
    for (guint v = 0; v < N_VARIANTS; v++)
        bench_policy_figures_clear (&figures[v]);
    if (g_unlink (source) < 0)
        g_warning ("cannot remove %s: %s", source, g_strerror (errno));
    return 0;
}
