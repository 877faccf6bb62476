/*
 * bench-load: many control clients at once against a busy daemon.
 *
 * Four guest-less QEMUs migrate their small disks (rate-limited, so that the
 * copies run through the whole measure). The bench times query-jobs on a
 * client of its own, first with no other client connected, then with
 * --clients more (half follow the job events, half poll query-jobs once a
 * second), all of them driven by a thread of their own. It prints the
 * daemon's peak resident size (VmHWM), the p50/p99 latency of both phases
 * and their ratio, checks every client was served (each poller answered,
 * each follower given every job's final event) and that every destination
 * holds its source's bytes. It does that --rounds times, each on a fresh
 * daemon with fresh copies, judges each target in each round and says PASS
 * when at least two thirds of the rounds met it, MISS otherwise (exit
 * status 3). In each round the measure alone comes first: the daemon's
 * VmHWM is a high-water mark, and the followers are judged on the copies'
 * final events, which come after the measure among them.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "qmp-stream.h"

#define N_VMS           4
#define DISK_SIZE       (64 * 1024 * 1024)
#define COPY_SPEED      (4 * 1024 * 1024) /* bytes/s: some 16 s per copy */
#define CALLS           200
#define CALL_GAP_US     (10 * 1000)
#define START_TIMEOUT_S 30
#define STOP_TIMEOUT_S  30
#define JOB_TIMEOUT_S   300

/* the targets, see docs/performance.md */
#define TARGET_HWM_MIB   128.0
#define TARGET_P99_MS    100.0
#define TARGET_P99_RATIO 20.0

typedef struct {
    GSocket *socket;
    gboolean poller;
    guint replies;   /* query-jobs answered */
    guint finals;    /* JOB_STATE_CHANGED into "completed" */
    gboolean closed; /* the daemon closed the connection */
    gint64 next_us;  /* a poller's next request */
    gboolean waiting;
} LoadClient;

typedef struct {
    GMainContext *context;
    GPtrArray *clients; /* of LoadClient * */
    gint stop;
} Load;

static gboolean
client_readable_cb (GSocket *socket, GIOCondition condition, gpointer user_data)
{
    LoadClient *c = user_data;
    gchar buf[16384];
    gssize n = g_socket_receive (socket, buf, sizeof buf - 1, NULL, NULL);
    const gchar *p = buf;

    if (n <= 0) {
        c->closed = TRUE;
        return G_SOURCE_REMOVE;
    }
    buf[n] = '\0';
    /* the messages are small and each one arrives whole in practice; count the markers */
    while ((p = strstr (p, "\"return\"")) != NULL) {
        c->replies++;
        c->waiting = FALSE;
        p++;
    }
    for (p = buf; (p = strstr (p, "\"state\":\"completed\"")) != NULL; p++)
        c->finals++;
    return G_SOURCE_CONTINUE;
}

static gboolean
poll_tick_cb (gpointer user_data)
{
    Load *load = user_data;
    gint64 now = g_get_monotonic_time ();
    static const gchar req[] = "{\"execute\": \"query-jobs\"}\n";

    for (guint i = 0; i < load->clients->len; i++) {
        LoadClient *c = g_ptr_array_index (load->clients, i);

        if (!c->poller || c->closed || c->waiting || now < c->next_us)
            continue;
        if (g_socket_send (c->socket, req, sizeof req - 1, NULL, NULL) == sizeof req - 1)
            c->waiting = TRUE;
        c->next_us = now + G_USEC_PER_SEC;
    }
    return G_SOURCE_CONTINUE;
}

static gpointer
load_thread (gpointer data)
{
    Load *load = data;
    g_autoptr (GSource) tick = g_timeout_source_new (20);

    g_main_context_push_thread_default (load->context);
    g_source_set_callback (tick, poll_tick_cb, load, NULL);
    g_source_attach (tick, load->context);
    for (guint i = 0; i < load->clients->len; i++) {
        LoadClient *c = g_ptr_array_index (load->clients, i);
        g_autoptr (GSource) source = g_socket_create_source (c->socket, G_IO_IN | G_IO_HUP, NULL);

        g_source_set_callback (source, G_SOURCE_FUNC (client_readable_cb), c, NULL);
        g_source_attach (source, load->context);
    }
    while (!g_atomic_int_get (&load->stop))
        g_main_context_iteration (load->context, TRUE);
    g_source_destroy (tick);
    g_main_context_pop_thread_default (load->context);
    return NULL;
}

static GSocket *
connect_socket (const gchar *path, GError **error)
{
    g_autoptr (GSocket) socket = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                               G_SOCKET_PROTOCOL_DEFAULT, error);
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);

    if (socket == NULL || !g_socket_connect (socket, address, NULL, error))
        return NULL;
    return g_steal_pointer (&socket);
}

/* one line from the blocking @socket, not the greeting nor an event */
static gboolean
read_reply (GSocket *socket, GString *buf, gchar **out_line, GError **error)
{
    while (TRUE) {
        gchar *nl = memchr (buf->str, '\n', buf->len);
        gchar chunk[16384];
        gssize n;

        if (nl != NULL) {
            gboolean reply = strncmp (buf->str, "{\"return\"", 9) == 0;

            if (reply && out_line != NULL)
                *out_line = g_strndup (buf->str, (gsize) (nl - buf->str));
            g_string_erase (buf, 0, nl - buf->str + 1);
            if (reply)
                return TRUE;
            continue;
        }
        n = g_socket_receive (socket, chunk, sizeof chunk, NULL, error);
        if (n <= 0) {
            if (n == 0)
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CLOSED, "connection closed");
            return FALSE;
        }
        g_string_append_len (buf, chunk, n);
    }
}

/* CALLS query-jobs round trips, their latencies in ms into @ms */
static gboolean
time_calls (const gchar *socket_path, GArray *ms, GError **error)
{
    g_autoptr (GSocket) socket = connect_socket (socket_path, error);
    g_autoptr (GString) buf = g_string_new (NULL);
    static const gchar req[] = "{\"execute\": \"query-jobs\"}\n";

    if (socket == NULL)
        return FALSE;
    g_socket_set_timeout (socket, 30);
    for (guint i = 0; i < CALLS; i++) {
        gint64 start = g_get_monotonic_time ();
        gdouble v;

        if (g_socket_send (socket, req, sizeof req - 1, NULL, error) != sizeof req - 1
            || !read_reply (socket, buf, NULL, error))
            return FALSE;
        v = (gdouble) (g_get_monotonic_time () - start) / 1000.0;
        g_array_append_val (ms, v);
        g_usleep (CALL_GAP_US);
    }
    return TRUE;
}

static gdouble
hwm_mib (GSubprocess *proc)
{
    g_autofree gchar *path
        = g_strdup_printf ("/proc/%s/status", g_subprocess_get_identifier (proc));
    g_autofree gchar *text = NULL;
    const gchar *hwm;

    if (!g_file_get_contents (path, &text, NULL, NULL) || (hwm = strstr (text, "VmHWM:")) == NULL)
        return 0;
    return (gdouble) g_ascii_strtoll (hwm + 6, NULL, 10) / 1024.0;
}

static void
raise_fd_limit (guint needed)
{
    struct rlimit limit;

    if (getrlimit (RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < needed) {
        limit.rlim_cur = MIN (limit.rlim_max, (rlim_t) needed);
        setrlimit (RLIMIT_NOFILE, &limit);
    }
}

typedef struct {
    GSubprocess *qemu;
    VmrQmpClient *watch;
    gchar *source, *dest;
} Vm;

/*
 * starts the QEMUs (their sockets in @run_dir, their images in @image_dir:
 * the daemon refuses destinations in its socket's directory), attaches them
 * and starts their copies
 */
static gboolean
start_migrations (const gchar *qemu_path, const gchar *run_dir, const gchar *image_dir,
                  VmrQmpClient *control, Vm *vms, GError **error)
{
    for (guint i = 0; i < N_VMS; i++) {
        g_autofree gchar *name = g_strdup_printf ("vm%02u", i + 1);
        g_autofree gchar *monitor = g_strdup_printf ("%s/%s.qmp", run_dir, name);
        g_autofree gchar *watch = g_strdup_printf ("%s/%s-watch.qmp", run_dir, name);
        g_autofree gchar *log = g_strdup_printf ("%s/%s.log", run_dir, name);
        const gchar *monitors[] = { monitor, watch, NULL };
        g_autoptr (JsonObject) attach = json_object_new ();
        g_autoptr (JsonObject) migrate = json_object_new ();
        g_autoptr (JsonObject) reply = NULL;

        vms[i].source = g_strdup_printf ("%s/%s.raw", image_dir, name);
        vms[i].dest = g_strdup_printf ("%s/%s-new.raw", image_dir, name);
        if (!vmr_bench_image_create_source (vms[i].source, DISK_SIZE, 0x10ad + i, error))
            return FALSE;
        vms[i].qemu
            = vmr_bench_start_paused_qemu (qemu_path, run_dir, log, vms[i].source, monitors, error);
        if (vms[i].qemu == NULL)
            return FALSE;
        vms[i].watch = vmr_bench_connect (vms[i].qemu, watch, "QEMU", START_TIMEOUT_S, error);
        if (vms[i].watch == NULL)
            return FALSE;
        json_object_set_string_member (attach, "name", name);
        json_object_set_string_member (attach, "qmp", monitor);
        reply = vmr_bench_control_call (control, "attach", attach, error);
        if (reply == NULL)
            return FALSE;
        g_clear_pointer (&reply, json_object_unref);
        json_object_set_string_member (migrate, "domain", name);
        json_object_set_string_member (migrate, "disk", "disk0");
        json_object_set_string_member (migrate, "destination", vms[i].dest);
        json_object_set_int_member (migrate, "speed", COPY_SPEED);
        reply = vmr_bench_control_call (control, "migrate", migrate, error);
        if (reply == NULL)
            return FALSE;
    }
    return TRUE;
}

/* the number of completed jobs, -1 with @error when one failed */
static gint
count_completed (GSocket *socket, GString *buf, GError **error)
{
    static const gchar req[] = "{\"execute\": \"query-jobs\"}\n";
    g_autofree gchar *line = NULL;
    g_autoptr (JsonObject) reply = NULL;
    JsonArray *jobs;
    gint completed = 0;

    if (g_socket_send (socket, req, sizeof req - 1, NULL, error) != sizeof req - 1
        || !read_reply (socket, buf, &line, error)
        || (reply = vmr_qmp_parse_line (line, strlen (line), error)) == NULL)
        return -1;
    jobs = json_object_get_array_member (reply, "return");
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *job = json_array_get_object_element (jobs, i);
        const gchar *state = json_object_get_string_member_with_default (job, "state", "");

        if (g_strcmp0 (state, "completed") == 0) {
            completed++;
        } else if (g_strcmp0 (state, "failed") == 0 || g_strcmp0 (state, "cancelled") == 0) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "a copy ended %s", state);
            return -1;
        }
    }
    return completed;
}

/* waits for the copies to complete, quits the QEMUs and compares the bytes */
static gboolean
finish_migrations (const gchar *socket_path, Vm *vms, GError **error)
{
    gint64 deadline = g_get_monotonic_time () + JOB_TIMEOUT_S * G_USEC_PER_SEC;
    g_autoptr (GSocket) socket = connect_socket (socket_path, error);
    g_autoptr (GString) buf = g_string_new (NULL);
    gint completed = 0;
    gboolean first = TRUE;

    if (socket == NULL)
        return FALSE;
    g_socket_set_timeout (socket, 30);
    while (completed < N_VMS) {
        completed = count_completed (socket, buf, error);
        if (completed < 0)
            return FALSE;
        /* both phases measured while every copy ran */
        if (first && completed > 0) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                         "%d copies completed before the measure ended", completed);
            return FALSE;
        }
        first = FALSE;
        if (g_get_monotonic_time () > deadline) {
            g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "copies did not complete");
            return FALSE;
        }
        g_main_context_iteration (NULL, FALSE);
        g_usleep (200 * 1000);
    }
    for (guint i = 0; i < N_VMS; i++) {
        if (!vmr_bench_quit_qemu (&vms[i].qemu, &vms[i].watch, NULL, STOP_TIMEOUT_S, error)
            || !vmr_bench_image_compare (vms[i].source, vms[i].dest, DISK_SIZE, error))
            return FALSE;
    }
    return TRUE;
}

/* the nearest-rank percentile @p of @ms (sorted here) */
static gdouble
percentile (GArray *ms, guint p)
{
    guint rank = (ms->len * p + 99) / 100;

    g_array_sort (ms, vmr_bench_compare_doubles);
    return g_array_index (ms, gdouble, MAX (rank, 1) - 1);
}

/* what one round measured */
typedef struct {
    guint unserved, closed;
    gdouble hwm_idle, hwm;
    gdouble p50_idle, p99_idle, p50, p99;
} Round;

/* one round on a fresh daemon with fresh copies: the measure alone, then among the clients */
static gboolean
run (const gchar *daemon_path, const gchar *qemu_path, guint n_clients, Round *round,
     GError **error)
{
    g_autofree gchar *run_dir = NULL, *image_dir = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autoptr (GSubprocess) daemon = NULL;
    g_autoptr (VmrQmpClient) control = NULL;
    g_autoptr (GArray) idle_ms = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) load_ms = g_array_new (FALSE, FALSE, sizeof (gdouble));
    Vm vms[N_VMS] = { 0 };
    Load load = { 0 };
    GThread *thread;
    gboolean ok = FALSE;

    if (!vmr_bench_make_dirs (NULL, &run_dir, &image_dir, error))
        return FALSE;
    socket_path = g_build_filename (run_dir, "control.sock", NULL);
    {
        VmrBenchDaemonSpec spec = { daemon_path, run_dir, socket_path, NULL, FALSE, 30 };

        daemon = vmr_bench_start_daemon (&spec, NULL, 0, &control, NULL, error);
    }
    if (daemon == NULL || !start_migrations (qemu_path, run_dir, image_dir, control, vms, error))
        goto out;

    /* side by side, while the same copies run: alone, then among the clients */
    if (!time_calls (socket_path, idle_ms, error))
        goto out;
    *round = (Round){ .hwm_idle = hwm_mib (daemon) };
    load.context = g_main_context_new ();
    load.clients = g_ptr_array_new_with_free_func (g_free);
    for (guint i = 0; i < n_clients; i++) {
        LoadClient *c = g_new0 (LoadClient, 1);

        c->socket = connect_socket (socket_path, error);
        if (c->socket == NULL) {
            g_free (c);
            g_prefix_error (error, "client %u: ", i);
            goto out;
        }
        g_socket_set_blocking (c->socket, FALSE);
        c->poller = i % 2 == 0;
        c->next_us = g_get_monotonic_time () + g_random_int_range (0, G_USEC_PER_SEC);
        g_ptr_array_add (load.clients, c);
    }
    thread = g_thread_new ("load", load_thread, &load);
    g_usleep (2 * G_USEC_PER_SEC);
    if (!time_calls (socket_path, load_ms, error))
        goto out_thread;
    if (!finish_migrations (socket_path, vms, error))
        goto out_thread;
    g_usleep (G_USEC_PER_SEC);
    ok = TRUE;
out_thread:
    g_atomic_int_set (&load.stop, 1);
    g_main_context_wakeup (load.context);
    g_thread_join (thread);
    if (!ok)
        goto out;
    round->hwm = hwm_mib (daemon);
    for (guint i = 0; i < load.clients->len; i++) {
        LoadClient *c = g_ptr_array_index (load.clients, i);

        round->closed += c->closed;
        round->unserved += c->closed || (c->poller ? c->replies < 2 : c->finals < N_VMS);
    }
    round->p50_idle = percentile (idle_ms, 50);
    round->p99_idle = percentile (idle_ms, 99);
    round->p50 = percentile (load_ms, 50);
    round->p99 = percentile (load_ms, 99);
out:
    for (guint i = 0; i < N_VMS; i++) {
        vmr_bench_close (&vms[i].watch, NULL);
        vmr_bench_kill (&vms[i].qemu);
        g_free (vms[i].source);
        g_free (vms[i].dest);
    }
    if (load.clients != NULL) {
        for (guint i = 0; i < load.clients->len; i++)
            g_object_unref (((LoadClient *) g_ptr_array_index (load.clients, i))->socket);
        g_ptr_array_unref (load.clients);
        g_main_context_unref (load.context);
    }
    g_clear_object (&control);
    vmr_bench_stop_daemon (&daemon, STOP_TIMEOUT_S);
    vmr_bench_remove_dirs (run_dir, image_dir, FALSE);
    return ok;
}

/* the p99 among the clients over the p99 alone */
static gdouble
p99_ratio (const Round *round)
{
    return round->p99 / MAX (round->p99_idle, 0.001);
}

static void
print_round (guint number, const Round *round, guint n_clients)
{
    g_print ("  round %u: served %u of %u (%u disconnected); VmHWM %.1f -> %.1f MiB; query-jobs "
             "alone p50 %.2f p99 %.2f ms, among them p50 %.2f p99 %.2f ms, p99 ratio %.1f\n",
             number, n_clients - round->unserved, n_clients, round->closed, round->hwm_idle,
             round->hwm, round->p50_idle, round->p99_idle, round->p50, round->p99,
             p99_ratio (round));
}

/* the rounds of @rounds (of Round) whose @field (gdouble) is at most @target */
static guint
rounds_at_most (GArray *rounds, gsize field, gdouble target)
{
    guint met = 0;

    for (guint i = 0; i < rounds->len; i++)
        met += G_STRUCT_MEMBER (gdouble, &g_array_index (rounds, Round, i), field) <= target;
    return met;
}

/* each target judged in each round, the rounds that met it counted */
static void
print_targets (GArray *rounds, guint n_clients)
{
    guint served = 0, ratio_met = 0;

    for (guint i = 0; i < rounds->len; i++) {
        const Round *round = &g_array_index (rounds, Round, i);

        served += round->unserved == 0;
        ratio_met += p99_ratio (round) <= TARGET_P99_RATIO;
    }
    g_print ("  every client served (%u of them)  %s\n", n_clients,
             vmr_bench_verdict_rounds (served, rounds->len));
    g_print (
        "  daemon VmHWM with them <= %.0f MiB  %s\n", TARGET_HWM_MIB,
        vmr_bench_verdict_rounds (
            rounds_at_most (rounds, G_STRUCT_OFFSET (Round, hwm), TARGET_HWM_MIB), rounds->len));
    g_print (
        "  query-jobs p99 among them <= %.0f ms  %s\n", TARGET_P99_MS,
        vmr_bench_verdict_rounds (
            rounds_at_most (rounds, G_STRUCT_OFFSET (Round, p99), TARGET_P99_MS), rounds->len));
    g_print ("  p99 among them / alone <= %.0f  %s\n", TARGET_P99_RATIO,
             vmr_bench_verdict_rounds (ratio_met, rounds->len));
}

int
main (int argc, char **argv)
{
    g_autofree gchar *daemon_opt = NULL, *qemu_opt = NULL;
    g_autofree gchar *daemon_path = NULL, *qemu_path = NULL;
    gint clients = 1000;
    gint rounds = VMR_BENCH_MIN_ROUNDS;
    g_autoptr (GArray) results = g_array_new (FALSE, FALSE, sizeof (Round));
    g_autofree gchar *load_average = NULL;
    const GOptionEntry entries[] = {
        { "clients", 'n', 0, G_OPTION_ARG_INT, &clients, "Control clients at once (1000)", "N" },
        { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds,
          "Rounds, each on a fresh daemon (default 3, the fewest for a verdict)", "N" },
        { NULL },
    };
    const VmrBenchCommonOptions common = { .daemon = &daemon_opt, .qemu = &qemu_opt };
    g_autoptr (GError) error = NULL;

    if (!vmr_bench_parse_options ("bench-load", "- many control clients at once", NULL, entries,
                                  &common, &argc, &argv))
        return 2;
    if (clients < 2 || rounds < 1) {
        g_printerr ("bench-load: --clients must be >= 2, --rounds >= 1\n");
        return 2;
    }
    raise_fd_limit ((guint) clients + 256);
    daemon_path = vmr_bench_pick_program (daemon_opt, "VMR_DAEMON", VMR_BENCH_DAEMON);
    qemu_path = vmr_bench_pick_program (qemu_opt, "VMR_QEMU", "qemu-system-x86_64");
    for (guint r = 1; r <= (guint) rounds; r++) {
        Round round;

        if (!run (daemon_path, qemu_path, (guint) clients, &round, &error)) {
            g_printerr ("bench-load: round %u: %s\n", r, error->message);
            return 1;
        }
        g_array_append_val (results, round);
    }
    load_average = vmr_bench_load_average ();
    g_print ("bench-load: %d rounds, each a fresh daemon: %d clients (%d following events, %d "
             "polling query-jobs each second), %d copies of %d MiB at %d MiB/s; every "
             "destination matches its source; load average %s\n",
             rounds, clients, clients / 2, clients - clients / 2, N_VMS, DISK_SIZE >> 20,
             COPY_SPEED >> 20, load_average);
    for (guint r = 0; r < results->len; r++)
        print_round (r + 1, &g_array_index (results, Round, r), (guint) clients);
    print_targets (results, (guint) clients);
    return vmr_bench_exit_status ();
}
