#define G_LOG_DOMAIN "vmr-test"

/*
 * The daemon as systemd runs it.
 *
 * /service/notify: with NOTIFY_SOCKET naming a datagram socket of the test,
 * as systemd's Type=notify does, the daemon sends READY=1 only after its
 * control socket exists (the kernel's receive time of READY=1 against the
 * socket file's birth) and with the jobs of its previous run counted in
 * STATUS=, which follows the running and queued jobs as they change, and
 * STOPPING=1 on SIGTERM.
 *
 * /service/journal: a real systemd-journald, started by the test in a mount
 * namespace of its own (tmpfs over /run/systemd, /run/log and
 * /var/log/journal, so the machine's own journal, if any, is not touched),
 * and the daemon's stdout and stderr connected to the journal by
 * systemd-cat, as systemd connects a service's. Every message about a job
 * carries VMR_JOB, VMR_DOMAIN, VMR_DISK and VMR_STATE, so that `journalctl
 * VMR_JOB=vmr-1` gives the job's whole life and nothing else.
 *
 * The guest writes during both copies, and the bytes are checked at the end.
 */

#include "harness.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gio/gunixsocketaddress.h>

#define IMAGE_SIZE (24 * 1024 * 1024)
#define WRITES     20
/* the daemon answers at once; this is for a loaded machine */
#define NOTIFY_TIMEOUT_US (30 * G_USEC_PER_SEC)

/* ---- /service/notify ---- */

typedef struct {
    gchar *text;        /* the datagram: "READY=1\nSTATUS=..." */
    gint64 realtime_ns; /* the kernel's time of its arrival */
} Notification;

static void
notification_clear (Notification *n)
{
    g_clear_pointer (&n->text, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Notification, notification_clear)

/* a datagram socket at @path that stamps what it receives */
static GSocket *
notify_socket_new (const gchar *path)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GSocket) sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
                                             G_SOCKET_PROTOCOL_DEFAULT, &error);
    int on = 1;

    g_assert_no_error (error);
    g_assert_true (g_socket_bind (sock, address, FALSE, &error));
    g_assert_no_error (error);
    g_assert_cmpint (
        setsockopt (g_socket_get_fd (sock), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on), ==, 0);
    return g_steal_pointer (&sock);
}

/* the next notification; fails the test when none comes in time */
static void
notify_receive (GSocket *sock, Notification *out)
{
    gchar buffer[4096];
    union {
        struct cmsghdr align;
        gchar space[CMSG_SPACE (sizeof (struct timespec))];
    } control;
    struct iovec iov = { buffer, sizeof buffer - 1 };
    struct msghdr msg = { 0 };
    g_autoptr (GError) error = NULL;
    ssize_t n;

    if (!g_socket_condition_timed_wait (sock, G_IO_IN, NOTIFY_TIMEOUT_US, NULL, &error))
        vmr_fail ("no notification from the daemon: %s", error->message);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    n = recvmsg (g_socket_get_fd (sock), &msg, 0);
    g_assert_cmpint (n, >, 0);
    buffer[n] = '\0';
    out->text = g_strdup (buffer);
    out->realtime_ns = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR (&msg); c != NULL; c = CMSG_NXTHDR (&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;

            memcpy (&ts, CMSG_DATA (c), sizeof ts);
            out->realtime_ns = (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
        }
    }
    g_assert_cmpint (out->realtime_ns, >, 0);
    g_test_message ("notification: %s", out->text);
}

/* waits for a notification whose STATUS= is @status; the ones before may say anything */
static void
notify_wait_status (GSocket *sock, const gchar *status)
{
    g_autofree gchar *line = g_strdup_printf ("STATUS=%s", status);
    gint64 deadline = g_get_monotonic_time () + NOTIFY_TIMEOUT_US;

    while (g_get_monotonic_time () < deadline) {
        g_auto (Notification) n = { 0 };
        g_auto (GStrv) lines = NULL;

        notify_receive (sock, &n);
        lines = g_strsplit (n.text, "\n", -1);
        if (g_strv_contains ((const gchar *const *) lines, line))
            return;
    }
    vmr_fail ("the daemon never said %s", line);
}

/* the control socket's birth: bind() creates its file, mode 0600 at once */
static gint64
socket_birth_ns (VmrHarness *h)
{
    struct stat st;

    g_assert_cmpint (stat (h->socket, &st), ==, 0);
    return (gint64) st.st_ctim.tv_sec * G_GINT64_CONSTANT (1000000000) + st.st_ctim.tv_nsec;
}

/* the first notification of a daemon just started: READY=1 after its socket, with @status */
static void
assert_ready (VmrHarness *h, GSocket *sock, const gchar *status)
{
    g_auto (Notification) n = { 0 };
    g_autofree gchar *expected = g_strdup_printf ("READY=1\nSTATUS=%s", status);

    notify_receive (sock, &n);
    g_assert_cmpstr (n.text, ==, expected);
    if (n.realtime_ns < socket_birth_ns (h))
        vmr_fail ("READY=1 came %" G_GINT64_FORMAT " ns before the control socket existed",
                  socket_birth_ns (h) - n.realtime_ns);
}

static void
test_notify (VmrHarness *h, gconstpointer data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *notify_path = NULL;
    g_autoptr (GSocket) sock = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonNode) jobs = NULL;

    if (g_strcmp0 (g_getenv ("VMR_SD_NOTIFY"), "1") != 0) {
        vmr_harness_skip (h, "virt-mirrord was built without libsystemd (no sd_notify)");
        return;
    }
    notify_path = vmr_harness_path (h, "notify.sock");
    sock = notify_socket_new (notify_path);
    g_setenv ("NOTIFY_SOCKET", notify_path, TRUE);
    vmr_harness_restart_daemon (h, NULL);
    assert_ready (h, sock, "0 jobs running, 0 queued");

    /* a copy: queued, then running */
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 31);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    notify_wait_status (sock, "1 job running, 0 queued");
    vmr_harness_writer_write (vm.writer, WRITES);

    /* a crash; the next run is ready with the job it loaded from its records */
    vmr_harness_kill_daemon (h);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_restart_daemon (h, NULL);
    assert_ready (h, sock, "1 job running, 0 queued");
    jobs = vmr_harness_cli_json (h, "jobs", NULL);
    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (jobs)), ==, 1);

    /* picked up once its domain is back, then cancelled: nothing runs */
    vmr_harness_attach (h, "vm");
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_wait_adopted (h, id);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "cancel", id, NULL);
    notify_wait_status (sock, "0 jobs running, 0 queued");

    vmr_harness_stop_daemon (h);
    {
        g_auto (Notification) n = { 0 };

        notify_receive (sock, &n);
        g_assert_cmpstr (n.text, ==, "STOPPING=1");
    }
    g_unsetenv ("NOTIFY_SOCKET");
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* ---- /service/journal ---- */

/* why the journal test cannot run here, or NULL; set in main() */
static gchar *journal_unavailable;

/* mounts a tmpfs of ours over @dir in our mount namespace */
static gboolean
cover (const gchar *dir, GString *problem)
{
    if (g_mkdir_with_parents (dir, 0755) < 0
        || mount ("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
        g_string_append_printf (problem, "cannot mount a tmpfs on %s: %s", dir, g_strerror (errno));
        return FALSE;
    }
    return TRUE;
}

/*
 * A mount namespace of our own where /run/systemd, /run/log and
 * /var/log/journal are fresh: the journald the test starts lives there.
 * Before any thread exists: unshare(CLONE_NEWNS) refuses a threaded process.
 */
static gchar *
enter_private_journal_namespace (void)
{
    g_autoptr (GString) problem = g_string_new (NULL);

    if (unshare (CLONE_NEWNS) < 0)
        return g_strdup_printf ("cannot make a mount namespace: %s", g_strerror (errno));
    if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return g_strdup_printf ("cannot make the mounts private: %s", g_strerror (errno));
    if (!cover ("/run/systemd", problem) || !cover ("/run/log", problem)
        || !cover ("/var/log/journal", problem))
        return g_string_free (g_steal_pointer (&problem), FALSE);
    return NULL;
}

static gchar *
find_journald (void)
{
    const gchar *const candidates[]
        = { "/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald" };

    for (guint i = 0; i < G_N_ELEMENTS (candidates); i++) {
        if (g_file_test (candidates[i], G_FILE_TEST_IS_EXECUTABLE))
            return g_strdup (candidates[i]);
    }
    return NULL;
}

static void
die_with_parent_cb (gpointer user_data)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* starts journald, which dies with the test, and waits for its sockets */
static GSubprocess *
start_journald (const gchar *journald)
{
    g_autoptr (GError) error = NULL;
    const gchar *argv[] = { journald, NULL };
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_autoptr (GSubprocess) proc = NULL;
    gint64 deadline = g_get_monotonic_time () + NOTIFY_TIMEOUT_US;

    g_subprocess_launcher_set_child_setup (launcher, die_with_parent_cb, NULL, NULL);
    proc = g_subprocess_launcher_spawnv (launcher, argv, &error);
    g_assert_no_error (error);
    while (!g_file_test ("/run/systemd/journal/socket", G_FILE_TEST_EXISTS)
           || !g_file_test ("/run/systemd/journal/stdout", G_FILE_TEST_EXISTS)) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%s did not make its sockets", journald);
        g_usleep (50 * 1000);
    }
    return g_steal_pointer (&proc);
}

/* the journal's entries of `journalctl FILTER`, as JSON objects */
static GPtrArray *
journal_entries (const gchar *filter)
{
    const gchar *argv[] = { "journalctl", "--no-pager", "-o", "json", filter, NULL };
    const gchar *sync_argv[] = { "journalctl", "--sync", NULL };
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    g_auto (GStrv) lines = NULL;
    GPtrArray *entries = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    gint status = 0;

    /* what journald received is on disk after this */
    g_spawn_sync (NULL, (gchar **) sync_argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                  &status, NULL);
    g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status,
                  &error);
    g_assert_no_error (error);
    lines = g_strsplit (out, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        g_autoptr (JsonParser) parser = json_parser_new ();

        if (*lines[i] == '\0')
            continue;
        if (!json_parser_load_from_data (parser, lines[i], -1, &error))
            vmr_fail ("journalctl printed no JSON: %s", lines[i]);
        g_ptr_array_add (entries, json_object_ref (vmr_harness_json_node_object (
                                      json_parser_get_root (parser))));
    }
    return entries;
}

/* whether an entry says @text in its MESSAGE */
static gboolean
entries_say (GPtrArray *entries, const gchar *text)
{
    for (guint i = 0; i < entries->len; i++) {
        const gchar *message = vmr_json_get_string (g_ptr_array_index (entries, i), "MESSAGE");

        if (message != NULL && strstr (message, text) != NULL)
            return TRUE;
    }
    return FALSE;
}

static void
test_journal (VmrHarness *h, gconstpointer data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *journald = find_journald ();
    g_autofree gchar *wrapper = NULL;
    g_autofree gchar *script = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *filter = NULL;
    g_autofree gchar *daemon_pid = NULL;
    g_autoptr (GSubprocess) journald_proc = NULL;
    g_autoptr (GPtrArray) entries = NULL;
    g_autoptr (GPtrArray) states = g_ptr_array_new ();
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) job = NULL;
    const gchar *real_daemon = g_getenv ("VMR_DAEMON");
    gint64 deadline;

    if (journal_unavailable != NULL) {
        vmr_harness_skip (h, journal_unavailable);
        return;
    }
    if (journald == NULL) {
        vmr_harness_skip (h, "systemd-journald not found (the systemd package)");
        return;
    }
    if (!vmr_harness_require (h, "systemd-cat", "journalctl", NULL))
        return;
    journald_proc = start_journald (journald);

    /* the daemon as a service runs: its stdout and stderr a stream to the journal */
    wrapper = vmr_harness_path (h, "virt-mirrord-journal");
    script = g_strdup_printf ("#!/bin/sh\nexec systemd-cat -t virt-mirrord -- '%s' \"$@\"\n",
                              real_daemon);
    g_assert_true (g_file_set_contents (wrapper, script, -1, &error));
    g_assert_cmpint (g_chmod (wrapper, 0755), ==, 0);
    g_setenv ("VMR_DAEMON", wrapper, TRUE);
    vmr_harness_restart_daemon (h, NULL);
    g_setenv ("VMR_DAEMON", real_daemon, TRUE);

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 47);
    id = vmr_harness_start_slow_migration (h, &vm, NULL);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "set-speed", id, "0");
    vmr_harness_writer_write (vm.writer, WRITES);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    daemon_pid = g_strdup_printf ("%d", (int) h->daemon_pid);
    vmr_harness_stop_daemon (h);

    /* the job's life, and only its own */
    filter = g_strdup_printf ("VMR_JOB=%s", id);
    deadline = g_get_monotonic_time () + NOTIFY_TIMEOUT_US;
    entries = journal_entries (filter);
    while (!entries_say (entries, "pivoting -> completed") && g_get_monotonic_time () < deadline) {
        g_usleep (100 * 1000);
        g_ptr_array_unref (entries);
        entries = journal_entries (filter);
    }
    for (guint i = 0; i < entries->len; i++) {
        JsonObject *entry = g_ptr_array_index (entries, i);
        const gchar *state = vmr_harness_json_string (entry, "VMR_STATE");

        g_test_message ("journal: [%s] %s", state, vmr_harness_json_string (entry, "MESSAGE"));
        g_assert_cmpstr (vmr_harness_json_string (entry, "VMR_JOB"), ==, id);
        g_assert_cmpstr (vmr_harness_json_string (entry, "VMR_DOMAIN"), ==, "vm");
        g_assert_cmpstr (vmr_harness_json_string (entry, "VMR_DISK"), ==, "disk0");
        g_assert_cmpstr (vmr_harness_json_string (entry, "_COMM"), ==, "virt-mirrord");
        g_assert_cmpstr (vmr_harness_json_string (entry, "_PID"), ==, daemon_pid);
        g_assert_cmpstr (vmr_harness_json_string (entry, "GLIB_DOMAIN"), ==, "vmr-daemon");
        if (states->len == 0 || !g_str_equal (g_ptr_array_index (states, states->len - 1), state))
            g_ptr_array_add (states, (gpointer) state);
    }
    /* from submission to the pivot, each state as it was when its message was logged */
    g_assert_true (entries_say (entries, ": queued"));
    g_assert_true (entries_say (entries, "queued -> copying"));
    g_assert_true (entries_say (entries, "speed set to 0 bytes/s"));
    g_assert_true (entries_say (entries, "copying -> synced"));
    g_assert_true (entries_say (entries, "synced -> pivoting"));
    g_assert_true (entries_say (entries, "pivoting -> completed"));
    g_assert_cmpstr (g_ptr_array_index (states, 0), ==, "queued");
    g_assert_cmpstr (g_ptr_array_index (states, states->len - 1), ==, "completed");

    g_subprocess_send_signal (journald_proc, SIGTERM);
    g_subprocess_wait (journald_proc, NULL, NULL);
    vmr_harness_assert_migrated (h, id, "disk0", vm.source, vm.dest, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    /* first: no thread may exist yet (see enter_private_journal_namespace()) */
    journal_unavailable = enter_private_journal_namespace ();
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/service/notify", NULL, test_notify);
    VMR_HARNESS_ADD_NO_DAEMON ("/service/journal", NULL, test_journal);
    return g_test_run ();
}
