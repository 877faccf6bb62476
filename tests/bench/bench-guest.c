/*
 * The test guest for the benchmarks, and the migration of its disk with a
 * pivot by hand (see bench-guest.h).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-guest.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib-unix.h>
#include <sys/prctl.h>

#include "bench-image.h"
#include "bench-process.h"
#include "guest-disk.h"
#include "vmr-error.h"

#ifndef VMR_BENCH_GUEST_BUILD
#define VMR_BENCH_GUEST_BUILD "tests/guest/build-guest"
#endif
#ifndef VMR_BENCH_GUEST_DIR
#define VMR_BENCH_GUEST_DIR "build/guest"
#endif

/* the guest boots in 5 to 8 s under TCG; fio starts within a minute of that */
#define BOOT_TIMEOUT_S 120
#define LOAD_TIMEOUT_S 60

void
vmr_bench_guest_clear (VmrBenchGuest *self)
{
    vmr_bench_guest_stop (self);
    if (self->run_dir != NULL)
        vmr_bench_remove_dirs (self->run_dir, self->image_dir,
                               g_getenv ("VMR_BENCH_KEEP_DIR") != NULL);
    g_clear_pointer (&self->run_dir, g_free);
    g_clear_pointer (&self->image_dir, g_free);
    g_clear_pointer (&self->control_socket, g_free);
    g_clear_pointer (&self->qemu_monitor, g_free);
    g_clear_pointer (&self->bench_monitor, g_free);
    g_clear_pointer (&self->kernel, g_free);
    g_clear_pointer (&self->initrd, g_free);
    g_clear_pointer (&self->qemu_version, g_free);
    vmr_bench_guest_forget_job (self);
}

gboolean
vmr_bench_guest_make_dirs (VmrBenchGuest *self, const gchar *daemon_path, const gchar *image_parent,
                           guint timeout_s, GError **error)
{
    if (!vmr_bench_make_dirs (image_parent, &self->run_dir, &self->image_dir, error))
        return FALSE;
    self->control_socket = g_build_filename (self->run_dir, "virt-mirrord.sock", NULL);
    self->qemu_monitor = g_build_filename (self->run_dir, "qmp.sock", NULL);
    self->bench_monitor = g_build_filename (self->run_dir, "bench.sock", NULL);
    self->daemon_spec = (VmrBenchDaemonSpec){
        .daemon_path = daemon_path,
        .run_dir = self->run_dir,
        .control_socket = self->control_socket,
        .timeout_s = timeout_s,
    };
    return TRUE;
}

gboolean
vmr_bench_guest_find (VmrBenchGuest *self, const gchar *guest_opt, GError **error)
{
    g_autofree gchar *guest_dir
        = vmr_bench_pick_program (guest_opt, "VMR_GUEST_DIR", VMR_BENCH_GUEST_DIR);
    g_autofree gchar *guest_build
        = vmr_bench_pick_program (NULL, "VMR_GUEST_BUILD", VMR_BENCH_GUEST_BUILD);
    const gchar *argv[] = { guest_build, "--out", guest_dir, NULL };
    g_autofree gchar *err = NULL;
    gint status = 0;

    if (g_file_test (guest_build, G_FILE_TEST_IS_EXECUTABLE)) {
        g_printerr ("checking the test guest in %s...\n", guest_dir);
        if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                           NULL, &err, &status, error))
            return FALSE;
        if (!g_spawn_check_wait_status (status, NULL)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%s failed:\n%s", guest_build, err);
            return FALSE;
        }
    }
    self->kernel = g_build_filename (guest_dir, "vmlinuz", NULL);
    self->initrd = g_build_filename (guest_dir, "initramfs.cpio.gz", NULL);
    if (!g_file_test (self->kernel, G_FILE_TEST_IS_REGULAR)
        || !g_file_test (self->initrd, G_FILE_TEST_IS_REGULAR)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "no test guest in %s (build it with tests/guest/build-guest)", guest_dir);
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

/* the -blockdev of the guest's disk on @image: a file, or an NBD export over a UNIX socket */
static gchar *
disk_blockdev (VmrBenchGuest *self, const gchar *image, const gchar *escaped)
{
    g_autoptr (GUri) uri = NULL;
    g_autoptr (GHashTable) query = NULL;

    if (!g_str_has_prefix (image, "nbd+unix:")) {
        self->direct = vmr_guest_disk_takes_o_direct (image);
        return g_strdup_printf ("driver=file,filename=%s,node-name=f0%s", escaped,
                                self->direct ? ",cache.direct=on,aio=native" : "");
    }
    self->direct = FALSE;
    uri = g_uri_parse (image, G_URI_FLAGS_NONE, NULL);
    query = uri != NULL && g_uri_get_query (uri) != NULL
                ? g_uri_parse_params (g_uri_get_query (uri), -1, "&", G_URI_PARAMS_NONE, NULL)
                : NULL;
    g_return_val_if_fail (query != NULL && g_hash_table_contains (query, "socket"), NULL);
    return g_strdup_printf ("driver=nbd,server.type=unix,server.path=%s,export=%s,node-name=f0",
                            (const gchar *) g_hash_table_lookup (query, "socket"),
                            g_uri_get_path (uri) + 1);
}

gboolean
vmr_bench_guest_start (VmrBenchGuest *self, const gchar *image, const gchar *load_args,
                       guint run_number, GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/qemu-%u.log", self->run_dir, run_number);
    g_autofree gchar *console_log
        = g_strdup_printf ("%s/console-%u.log", self->run_dir, run_number);
    g_autofree gchar *append
        = g_strdup_printf ("console=ttyS0 quiet edd=off vmr.job=load vmr.runtime=%u %s",
                           VMR_BENCH_GUEST_RUNTIME_S, load_args);
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
    file_arg = disk_blockdev (self, image, escaped);
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
        = vmr_bench_connect (self->qemu, self->bench_monitor, "QEMU", self->start_timeout_s, error);
    if (self->qemu_watch == NULL)
        return FALSE;
    if (self->qemu_version == NULL)
        self->qemu_version = vmr_bench_qemu_version (self->qemu_watch);
    self->blockstats = vmr_bench_blockstats_new (self->qemu_watch, "disk0");
    return TRUE;
}

void
vmr_bench_guest_stop (VmrBenchGuest *self)
{
    if (self->qemu_watch != NULL && vmr_bench_is_running (self->qemu)) {
        g_autoptr (JsonNode) reply = NULL;

        /* QEMU may close the monitor before its reply arrives */
        reply = vmr_qmp_client_execute_sync (self->qemu_watch, "quit", NULL, 0, NULL);
        vmr_bench_wait_exit (self->qemu, self->stop_timeout_s);
    }
    g_clear_pointer (&self->blockstats, vmr_bench_blockstats_free);
    vmr_bench_close (&self->qemu_watch, self);
    vmr_bench_kill (&self->qemu);
    g_clear_pointer (&self->console, vmr_guest_console_free);
}

gint
vmr_bench_guest_wait_line (VmrBenchGuest *self, const gchar *needle, guint from,
                           gint64 deadline_mono, GError **error)
{
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (TRUE) {
        gint found = vmr_guest_console_wait (self->console, needle, from, 0, NULL);

        if (found >= 0)
            return found;
        if (*self->interrupted) {
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

gboolean
vmr_bench_guest_sleep (VmrBenchGuest *self, gdouble seconds, GError **error)
{
    gint64 until = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (g_get_monotonic_time () < until) {
        if (*self->interrupted || vmr_guest_console_ended (self->console)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                         *self->interrupted ? "interrupted" : "QEMU ended");
            return FALSE;
        }
        g_main_context_iteration (NULL, TRUE);
    }
    return TRUE;
}

static void
control_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                  gpointer user_data)
{
    VmrBenchGuest *self = user_data;
    const gchar *state = vmr_json_get_string (data, "state");

    /* one job at a time: the event is the running job's, even before `migrate` replied */
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

void
vmr_bench_guest_watch_jobs (VmrBenchGuest *self, VmrQmpClient *control)
{
    g_signal_connect (control, "event", G_CALLBACK (control_event_cb), self);
}

void
vmr_bench_guest_forget_job (VmrBenchGuest *self)
{
    g_clear_pointer (&self->job_id, g_free);
    g_clear_pointer (&self->job_final, g_free);
    self->job_synced_mono = 0;
    self->job_end_mono = 0;
}

/*
 * Iterates the main loop until *@stamp is set or the job ended, whichever
 * comes first; FALSE on a deadline, an interruption or the end of the guest.
 */
static gboolean
wait_job (VmrBenchGuest *self, const gint64 *stamp, gint64 deadline_mono, const gchar *what,
          GError **error)
{
    g_autoptr (VmrBenchTick) tick = vmr_bench_tick_new ();

    while (*stamp == 0 && self->job_end_mono == 0) {
        if (!*self->interrupted && g_get_monotonic_time () > deadline_mono) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "the job reached no %s in %u s", what,
                         self->job_timeout_s);
            return FALSE;
        }
        if (*self->interrupted || vmr_guest_console_ended (self->console)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the job reached no %s", what);
            return FALSE;
        }
        g_main_context_iteration (NULL, TRUE);
    }
    return TRUE;
}

/* @command without arguments on the bench's own QEMU monitor */
static gboolean
qemu_call (VmrBenchGuest *self, const gchar *command, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (self->qemu_watch, command, NULL, 0, error);

    if (reply == NULL)
        g_prefix_error (error, "QEMU %s: ", command);
    return reply != NULL;
}

/* the guest's reads and writes so far as QEMU counts them, every device; FALSE if it cannot say */
static gboolean
qemu_io_count (VmrBenchGuest *self, gint64 *out)
{
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (self->qemu_watch, "query-blockstats", NULL, 0, NULL);
    JsonArray *devices = reply != NULL ? vmr_json_node_array (reply) : NULL;

    if (devices == NULL)
        return FALSE;
    *out = 0;
    for (guint i = 0; i < json_array_get_length (devices); i++) {
        JsonObject *stats = vmr_json_get_object (vmr_json_array_object (devices, i), "stats");

        if (stats != NULL)
            *out += vmr_json_int_or (stats, "rd_operations", 0)
                    + vmr_json_int_or (stats, "wr_operations", 0);
    }
    return TRUE;
}

/* what an HMP command prints, NULL when QEMU does not answer; free with g_free() */
static gchar *
hmp (VmrBenchGuest *self, const gchar *command_line)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    json_object_set_string_member (args, "command-line", command_line);
    reply = vmr_qmp_client_execute_sync (self->qemu_watch, "human-monitor-command", args,
                                         VMR_BENCH_QUERY_TIMEOUT_MS, NULL);
    if (reply == NULL || !JSON_NODE_HOLDS_VALUE (reply))
        return NULL;
    return g_strdup (json_node_get_string (reply));
}

/*
 * @n 16-bit words of guest memory at @address (HMP's xp), into @words;
 * FALSE when QEMU cannot say
 */
static gboolean
read_guest_words (VmrBenchGuest *self, gint64 address, guint n, guint *words)
{
    g_autofree gchar *line = g_strdup_printf ("xp /%uhx 0x%" G_GINT64_MODIFIER "x", n, address);
    g_autofree gchar *text = hmp (self, line);
    const gchar *colon = text != NULL ? strchr (text, ':') : NULL;

    if (colon == NULL)
        return FALSE;
    for (guint i = 0; i < n; i++) {
        gchar *end = NULL;

        words[i] = (guint) g_ascii_strtoull (colon + 1, &end, 16);
        if (end == colon + 1)
            return FALSE;
        colon = end;
    }
    return TRUE;
}

/*
 * The vCPU as HMP's info registers shows it: "RIP=ffffffff81c0b0e4 HLT=1",
 * the instruction pointer and whether it waits for an interrupt; NULL when
 * QEMU cannot say. Free with g_free().
 */
static gchar *
describe_cpu (VmrBenchGuest *self)
{
    g_autofree gchar *text = hmp (self, "info registers");
    const gchar *rip = text != NULL ? strstr (text, "RIP=") : NULL;
    const gchar *hlt = text != NULL ? strstr (text, "HLT=") : NULL;

    if (rip == NULL || hlt == NULL)
        return NULL;
    return g_strdup_printf ("%.*s %.5s", (gint) strcspn (rip, " \r\n"), rip, hlt);
}

/*
 * The guest disk's virtqueue, as QEMU holds it and as the guest's memory
 * has it: what the guest made available (the avail ring's index) against
 * how far QEMU took it, what QEMU used and signalled, the requests it has
 * in flight, and the ring's notification fields (the used ring's flags and
 * avail_event: the index past which the guest kicks QEMU). A guest index
 * past QEMU's means a kick QEMU never saw; an equal one, a guest that
 * waits for a completion it never saw. NULL when QEMU cannot say.
 */
static gchar *
describe_queue (VmrBenchGuest *self)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *memory = NULL;
    JsonObject *queue;
    gint64 num;
    guint avail[2], used[2], avail_event[1], used_event[1];

    json_object_set_string_member (args, "path", "/machine/peripheral/disk0/virtio-backend");
    json_object_set_int_member (args, "queue", 0);
    reply = vmr_qmp_client_execute_sync (self->qemu_watch, "x-query-virtio-queue-status", args,
                                         VMR_BENCH_QUERY_TIMEOUT_MS, NULL);
    queue = reply != NULL ? vmr_json_node_object (reply) : NULL;
    if (queue == NULL)
        return NULL;
    num = vmr_json_int_or (queue, "vring-num", 0);
    /* the avail ring: flags, idx; the used ring: flags, idx, num elements, avail_event */
    if (num > 0 && read_guest_words (self, vmr_json_int_or (queue, "vring-avail", 0), 2, avail)
        && read_guest_words (self, vmr_json_int_or (queue, "vring-used", 0), 2, used)
        && read_guest_words (self, vmr_json_int_or (queue, "vring-used", 0) + 4 + 8 * num, 1,
                             avail_event)
        && read_guest_words (self, vmr_json_int_or (queue, "vring-avail", 0) + 4 + 2 * num, 1,
                             used_event))
        memory = g_strdup_printf (
            "; in the guest's memory: avail index %u (flags 0x%x), used index %u (flags 0x%x), "
            "avail_event %u, used_event %u",
            avail[1], avail[0], used[1], used[0], avail_event[0], used_event[0]);
    return g_strdup_printf (
        "its virtqueue: QEMU's shadow of the avail index %" G_GINT64_FORMAT
        ", QEMU took %" G_GINT64_FORMAT ", used %" G_GINT64_FORMAT " (signalled %" G_GINT64_FORMAT
        "), %" G_GINT64_FORMAT " in flight%s",
        vmr_json_int_or (queue, "shadow-avail-idx", -1),
        vmr_json_int_or (queue, "last-avail-idx", -1), vmr_json_int_or (queue, "used-idx", -1),
        vmr_json_int_or (queue, "signalled-used", -1), vmr_json_int_or (queue, "inuse", -1),
        memory != NULL ? memory : "; the guest's memory could not be read");
}

gboolean
vmr_bench_guest_stop_cont (VmrBenchGuest *self, GError **error)
{
    g_autoptr (JsonNode) stopped = NULL;
    g_autoptr (JsonNode) resumed = NULL;

    stopped = vmr_qmp_client_execute_sync (self->qemu_watch, "stop", NULL,
                                           VMR_BENCH_QUERY_TIMEOUT_MS, error);
    if (stopped == NULL) {
        g_prefix_error (error, "QEMU stop: ");
        return FALSE;
    }
    resumed = vmr_qmp_client_execute_sync (self->qemu_watch, "cont", NULL,
                                           VMR_BENCH_QUERY_TIMEOUT_MS, error);
    if (resumed == NULL)
        g_prefix_error (error, "QEMU cont: ");
    return resumed != NULL;
}

gboolean
vmr_bench_guest_revive (VmrBenchGuest *self, gboolean *out_resumed, gchar **out_what,
                        GError **error)
{
    g_autofree gchar *tail = vmr_guest_console_tail (self->console, 3);
    g_autofree gchar *qemu = vmr_bench_guest_describe (self);
    g_autoptr (GError) local = NULL;
    g_autoptr (GArray) iops = NULL;
    gint64 from = g_get_monotonic_time ();
    gboolean resumed = FALSE;
    gchar *outcome;

    *out_what = NULL;
    if (vmr_bench_guest_stop_cont (self, &local)) {
        if (!vmr_bench_guest_sleep (self, 3, error))
            return FALSE;
        iops = vmr_guest_console_get_iops (self->console);
        resumed = vmr_guest_iops_mean (iops, from, g_get_monotonic_time (), NULL, NULL) > 0;
        outcome = g_strdup (resumed ? "its I/O resumed after a second stop and cont"
                                    : "a second stop and cont did not resume its I/O");
    } else {
        outcome = g_strdup_printf ("a second stop and cont failed: %s", local->message);
    }
    *out_what = g_strdup_printf ("%s; its console's last lines: %s; %s", qemu, tail, outcome);
    *out_resumed = resumed;
    g_free (outcome);
    return TRUE;
}

gchar *
vmr_bench_guest_describe (VmrBenchGuest *self)
{
    g_autoptr (JsonNode) status = NULL;
    JsonObject *object;
    g_autofree gchar *ios = NULL;
    g_autofree gchar *queue = NULL;
    g_autofree gchar *cpu_before = NULL;
    g_autofree gchar *cpu_after = NULL;
    gint64 before = 0, after = 0;
    gboolean counted;

    if (self->qemu_watch == NULL)
        return g_strdup ("no QEMU monitor");
    status = vmr_qmp_client_execute_sync (self->qemu_watch, "query-status", NULL,
                                          VMR_BENCH_QUERY_TIMEOUT_MS, NULL);
    object = status != NULL ? vmr_json_node_object (status) : NULL;
    counted = qemu_io_count (self, &before);
    cpu_before = describe_cpu (self);
    g_usleep (2 * G_USEC_PER_SEC);
    counted = counted && qemu_io_count (self, &after);
    cpu_after = describe_cpu (self);
    if (counted)
        ios = g_strdup_printf ("the guest's I/Os in QEMU over 2 s: %" G_GINT64_FORMAT,
                               after - before);
    queue = describe_queue (self);
    return g_strdup_printf (
        "QEMU's status %s; %s; its vCPU %s, 2 s later %s; %s",
        object != NULL ? vmr_json_get_string (object, "status") : "unknown",
        counted ? ios : "no block statistics", cpu_before != NULL ? cpu_before : "unknown",
        cpu_after != NULL ? cpu_after : "unknown", queue != NULL ? queue : "no virtqueue status");
}

gboolean
vmr_bench_guest_migrate (VmrBenchGuest *self, VmrQmpClient *control, const gchar *source,
                         const gchar *dest, const gchar *dest_uri, guint64 disk_size,
                         VmrBenchMigration *out, JsonObject **out_job, GError **error)
{
    g_autoptr (JsonObject) migrate = json_object_new ();
    g_autoptr (JsonObject) pivot = json_object_new ();
    g_autoptr (JsonObject) query = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;
    gint64 migrate_start, deadline, pivot_start;

    vmr_bench_guest_forget_job (self);
    json_object_set_string_member (migrate, "domain", "bench");
    json_object_set_string_member (migrate, "disk", "disk0");
    json_object_set_string_member (migrate, "destination", dest_uri != NULL ? dest_uri : dest);
    json_object_set_boolean_member (migrate, "manual-pivot", TRUE);
    migrate_start = g_get_monotonic_time ();
    deadline = migrate_start + (gint64) self->job_timeout_s * G_USEC_PER_SEC;
    out->start_mono = migrate_start;
    reply = vmr_bench_control_call (control, "migrate", migrate, error);
    if (reply == NULL)
        return FALSE;
    self->job_id = g_strdup (vmr_json_get_string (reply, "id"));
    if (!wait_job (self, &self->job_synced_mono, deadline, "synced", error))
        return FALSE;
    out->synced_mono = self->job_synced_mono;
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
        reply = vmr_bench_control_call (control, "job-pivot", pivot, error);
        if (reply == NULL || !wait_job (self, &self->job_end_mono, deadline, "end", error))
            return FALSE;
        out->migration_s
            = (gdouble) (self->job_synced_mono - migrate_start + self->job_end_mono - pivot_start)
              / G_USEC_PER_SEC;
    }
    json_object_set_string_member (query, "id", self->job_id);
    *out_job = vmr_bench_control_call (control, "query-job", query, error);
    if (*out_job == NULL)
        return FALSE;
    if (self->job_synced_mono == 0 || g_strcmp0 (self->job_final, "completed") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the job ended %s: %s", self->job_final,
                     vmr_json_get_string (*out_job, "reason"));
        return FALSE;
    }
    /* the pivot was exact: the guest's disk now holds what its source held */
    if (!vmr_bench_image_compare (source, dest, disk_size, error)
        || !qemu_call (self, "cont", error))
        return FALSE;
    out->paused_s = (gdouble) (g_get_monotonic_time () - self->job_synced_mono) / G_USEC_PER_SEC;
    return TRUE;
}

gboolean
vmr_bench_guest_attach_settle (VmrBenchGuest *self, VmrQmpClient *control, gboolean wait_load,
                               guint settle_s, GError **error)
{
    g_autoptr (JsonObject) attach = json_object_new ();
    g_autoptr (JsonObject) reply = NULL;

    json_object_set_string_member (attach, "name", "bench");
    json_object_set_string_member (attach, "qmp", self->qemu_monitor);
    reply = vmr_bench_control_call (control, "attach", attach, error);
    if (reply == NULL)
        return FALSE;
    if (vmr_bench_guest_wait_line (self, "VMR-READY", 0,
                                   g_get_monotonic_time () + BOOT_TIMEOUT_S * G_USEC_PER_SEC, error)
        < 0)
        return FALSE;
    if (wait_load
        && vmr_bench_guest_wait_line (self, "VMR-IOPS", 0,
                                      g_get_monotonic_time () + LOAD_TIMEOUT_S * G_USEC_PER_SEC,
                                      error)
               < 0)
        return FALSE;
    return vmr_bench_guest_sleep (self, settle_s, error);
}

void
vmr_bench_guest_print_host (const VmrBenchGuest *self, const gchar *load_at_start)
{
    g_autofree gchar *load_at_end = vmr_bench_load_average ();

    g_print ("\n  QEMU %s (TCG, 1 vCPU, 256 MiB), %u CPUs, load average %s at the start, %s at "
             "the end\n",
             self->qemu_version != NULL ? self->qemu_version : "?", g_get_num_processors (),
             load_at_start, load_at_end);
}
