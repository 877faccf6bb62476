#define G_LOG_DOMAIN "vmr-test"

/*
 * The libvirt hook run as libvirtd runs it, without libvirtd: it tells the
 * daemon, found through the environment or the config file, and it exits 0
 * within a second whatever happens: no daemon, a daemon that never answers,
 * a socket path that is no socket, a daemon whose backlog is full, stdin
 * that never ends or is garbage, arguments that make no sense. Its time is
 * measured against its budget: the time to start and reap a process that
 * does nothing, measured in the same run, is taken off.
 */

#include <signal.h>
#include <string.h>

#include <gio/gunixsocketaddress.h>

#include "harness-e2e.h"

/* libvirt waits for the hook; it promises to be done within this */
#define HOOK_LIMIT_US G_USEC_PER_SEC
/* the hook's own deadline for reaching the daemon (hook/main.c) */
#define HOOK_BUDGET_US (600 * 1000)

static const gchar domain_xml[] = "<domain type='qemu'>\n"
                                  "  <name>web01</name>\n"
                                  "  <uuid>2b3c8f2e-6f1d-4c55-9a0e-4bb4ae5c5c01</uuid>\n"
                                  "</domain>\n";

typedef enum {
    STDIN_XML,     /* the domain XML, then end of file */
    STDIN_GARBAGE, /* 2 MiB that are not XML */
    STDIN_OPEN,    /* nothing, and never closed */
} StdinKind;

typedef struct {
    const gchar *socket; /* VIRT_MIRROR_SOCKET, NULL to leave it unset */
    const gchar *config; /* VIRT_MIRROR_HOOK_CONFIG, NULL for none */
    StdinKind input;
} HookRun;

static gint64 run_hook_once (VmrE2e *e, const HookRun *run, const gchar *const *args);

/*
 * runs the hook with @args (NULL-terminated); asserts exit 0 within the
 * limit, beyond what starting it costs; returns how long it took
 */
static gint64
run_hook (VmrE2e *e, const HookRun *run, const gchar *const *args)
{
    gint64 baseline = vmr_e2e_hook_spawn_cost ();
    gint64 elapsed = run_hook_once (e, run, args);

    g_assert_cmpint (elapsed - baseline, <, HOOK_LIMIT_US);
    return elapsed;
}

/* runs the hook with @args (NULL-terminated); asserts exit 0; returns how long it took */
static gint64
run_hook_once (VmrE2e *e, const HookRun *run, const gchar *const *args)
{
    g_autoptr (GSubprocessLauncher) launcher
        = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE);
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (GBytes) input = NULL;
    g_autofree gchar *config = NULL;
    g_autofree gchar *shown = g_strescape (args[0] != NULL ? args[0] : "(no arguments)", NULL);
    gint64 start = g_get_monotonic_time ();
    gint64 elapsed;

    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_HOOK"));
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    g_subprocess_launcher_unsetenv (launcher, "VIRT_MIRROR_SOCKET");
    if (run->socket != NULL)
        g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_SOCKET", run->socket, TRUE);
    /* never the machine's own config file */
    config = run->config != NULL ? g_strdup (run->config)
                                 : vmr_harness_path (&e->h, "no-such-hook.conf");
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_HOOK_CONFIG", config, TRUE);
    proc = g_subprocess_launcher_spawnv (launcher, (const gchar *const *) argv->pdata, &error);
    g_assert_no_error (error);
    if (run->input == STDIN_XML) {
        input = g_bytes_new_static (domain_xml, strlen (domain_xml));
    } else if (run->input == STDIN_GARBAGE) {
        gsize size = 2 * 1024 * 1024;
        guint8 *garbage = g_malloc (size);

        for (gsize i = 0; i < size; i++)
            garbage[i] = (guint8) (i * 131 + 7);
        input = g_bytes_new_take (garbage, size);
    }
    /* the hook may stop reading early: a broken pipe is its right */
    if (input != NULL)
        g_subprocess_communicate (proc, input, NULL, NULL, NULL, NULL);
    g_subprocess_wait (proc, NULL, &error);
    g_assert_no_error (error);
    elapsed = g_get_monotonic_time () - start;
    g_test_message ("hook %s: exit %d after %.3f s", shown, g_subprocess_get_exit_status (proc),
                    (gdouble) elapsed / G_USEC_PER_SEC);
    g_assert_true (g_subprocess_get_if_exited (proc));
    g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 0);
    return elapsed;
}

/*
 * A listener whose backlog is full: backlog 0, one connection queued and
 * never accepted. A non-blocking connect is then refused at once (EAGAIN),
 * which is checked here, so that the hook really meets a full backlog.
 * Returns the listener; *@out_filler is the queued connection.
 */
static GSocket *
full_listener (VmrE2e *e, gchar **out_path, GSocket **out_filler)
{
    g_autofree gchar *path = vmr_harness_path (&e->h, "busy.sock");
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GSocket) listener = NULL;
    g_autoptr (GSocket) filler = NULL;
    g_autoptr (GSocket) probe = NULL;
    g_autoptr (GError) error = NULL;

    listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                             &error);
    g_assert_no_error (error);
    g_socket_bind (listener, address, FALSE, &error);
    g_assert_no_error (error);
    g_socket_set_listen_backlog (listener, 0);
    g_socket_listen (listener, &error);
    g_assert_no_error (error);
    filler = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                           &error);
    g_assert_no_error (error);
    g_socket_connect (filler, address, NULL, &error);
    g_assert_no_error (error);
    probe = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                          &error);
    g_assert_no_error (error);
    g_socket_set_blocking (probe, FALSE);
    g_assert_false (g_socket_connect (probe, address, NULL, &error));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
    *out_path = g_steal_pointer (&path);
    *out_filler = g_steal_pointer (&filler);
    return g_steal_pointer (&listener);
}

/*
 * a daemon whose backlog stays full: the hook keeps trying until its
 * deadline, then gives up, within its budget, and still exits 0
 */
static void
test_backlog_full (VmrE2e *e, gconstpointer data)
{
    const gchar *args[] = { "web01", "started", "begin", "-", NULL };
    g_autofree gchar *path = NULL;
    g_autoptr (GSocket) filler = NULL;
    g_autoptr (GSocket) listener = NULL;
    HookRun run = { NULL, NULL, STDIN_XML };
    gint64 elapsed;

    if (vmr_harness_skipped (&e->h))
        return;
    listener = full_listener (e, &path, &filler);
    run.socket = path;
    elapsed = run_hook (e, &run, args);
    /* it waited for the daemon until its own deadline: it did not give up at once */
    g_assert_cmpint (elapsed, >=, HOOK_BUDGET_US - 100 * 1000);
}

/*
 * a backlog that frees up within the hook's budget: the hook's retried
 * connect gets through and the daemon gets the event
 */
static void
test_backlog_frees (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *path = NULL;
    g_autoptr (GSocket) filler = NULL;
    g_autoptr (GSocket) listener = NULL;
    g_autoptr (GSocket) queued = NULL;
    g_autoptr (GSocket) hook = NULL;
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (GString) message = g_string_new (NULL);
    g_autofree gchar *config = vmr_harness_path (&e->h, "no-such-hook.conf");
    gchar buf[4096];

    if (vmr_harness_skipped (&e->h))
        return;
    listener = full_listener (e, &path, &filler);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_SOCKET", path, TRUE);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_HOOK_CONFIG", config, TRUE);
    g_subprocess_launcher_set_stdin_file_path (launcher, "/dev/null");
    proc = g_subprocess_launcher_spawn (launcher, &error, g_getenv ("VMR_HOOK"), "web07", "started",
                                        "begin", "-", NULL);
    g_assert_no_error (error);
    /* the hook meets the full backlog; then the daemon catches up */
    g_usleep (150 * 1000);
    queued = g_socket_accept (listener, NULL, &error);
    g_assert_no_error (error);
    g_socket_set_timeout (listener, 2);
    hook = g_socket_accept (listener, NULL, &error);
    g_assert_no_error (error);
    g_socket_set_timeout (hook, 2);
    while (strchr (message->str, '\n') == NULL) {
        gssize n = g_socket_receive (hook, buf, sizeof buf, NULL, &error);

        g_assert_no_error (error);
        if (n == 0)
            break;
        g_string_append_len (message, buf, n);
    }
    g_test_message ("the hook said: %s", message->str);
    if (strstr (message->str, "\"hook-event\"") == NULL || strstr (message->str, "web07") == NULL)
        vmr_fail ("the hook's message is not the event: %s", message->str);
    g_subprocess_wait (proc, NULL, &error);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_get_if_exited (proc));
    g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 0);
}

static void
wait_log (VmrE2e *e, const gchar *needle)
{
    gint64 deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

    while (!vmr_e2e_daemon_log_has (e, needle)) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the daemon never logged '%s'", needle);
        g_usleep (20 * 1000);
    }
}

static void
test_delivers (VmrE2e *e, gconstpointer data)
{
    const gchar *started[] = { "web01", "started", "begin", "-", NULL };
    const gchar *stopped[] = { "web02", "stopped", "end", "-", NULL };
    const gchar *slow[] = { "web03", "started", "begin", "-", NULL };
    g_autofree gchar *config = NULL;
    g_autofree gchar *config_text = NULL;
    g_autoptr (GError) error = NULL;
    HookRun by_env = { NULL, NULL, STDIN_XML };
    HookRun by_config = { NULL, NULL, STDIN_GARBAGE };
    HookRun stdin_open = { NULL, NULL, STDIN_OPEN };

    if (vmr_harness_skipped (&e->h))
        return;
    vmr_e2e_start_daemon (e, FALSE);

    by_env.socket = e->h.socket;
    run_hook (e, &by_env, started);
    wait_log (e, "hook: web01 started begin");

    /* libvirtd's environment is fixed: an installed hook finds the socket in its config */
    config = vmr_harness_path (&e->h, "hook.conf");
    config_text = g_strdup_printf ("[hook]\nsocket=%s\n", e->h.socket);
    g_file_set_contents (config, config_text, -1, &error);
    g_assert_no_error (error);
    by_config.config = config;
    run_hook (e, &by_config, stopped);
    wait_log (e, "hook: web02 stopped end");

    /* stdin that never ends costs a fraction of the budget, the message still goes */
    stdin_open.socket = e->h.socket;
    run_hook (e, &stdin_open, slow);
    wait_log (e, "hook: web03 started begin");
    vmr_harness_assert_daemon_serving (&e->h);
}

static void
test_no_daemon (VmrE2e *e, gconstpointer data)
{
    const gchar *args[] = { "web01", "started", "begin", "-", NULL };
    g_autofree gchar *missing = NULL;
    g_autofree gchar *not_socket = NULL;
    g_autofree gchar *silent = NULL;
    g_autofree gchar *config = NULL;
    g_autofree gchar *config_text = NULL;
    g_autoptr (GError) error = NULL;
    HookRun run = { NULL, NULL, STDIN_XML };

    if (vmr_harness_skipped (&e->h))
        return;
    /* nothing there */
    missing = vmr_harness_path (&e->h, "missing.sock");
    run.socket = missing;
    run_hook (e, &run, args);
    /* a file that is no socket */
    not_socket = vmr_harness_create_file (&e->h, "not-a-socket", 16, 'x');
    run.socket = not_socket;
    run_hook (e, &run, args);
    /* a daemon that hangs: connections wait in the kernel, nobody reads */
    silent = vmr_harness_silent_listener (&e->h);
    run.socket = silent;
    for (guint i = 0; i < 3; i++)
        run_hook (e, &run, args);
    /* the config file's socket, missing, and stdin that never ends */
    config = vmr_harness_path (&e->h, "hook.conf");
    config_text = g_strdup_printf ("[hook]\nsocket=%s\n", missing);
    g_file_set_contents (config, config_text, -1, &error);
    g_assert_no_error (error);
    run.socket = NULL;
    run.config = config;
    run.input = STDIN_OPEN;
    run_hook (e, &run, args);
}

static void
test_bad_input (VmrE2e *e, gconstpointer data)
{
    const gchar *none[] = { NULL };
    const gchar *one[] = { "web01", NULL };
    const gchar *not_utf8[] = { "web\xff\xfe", "started", "begin", "-", NULL };
    const gchar *empty[] = { "", "", "", "", NULL };
    const gchar *many[] = { "web01", "started", "begin", "-", "more", "and more", NULL };
    const gchar *const *cases[] = { none, one, not_utf8, empty, many };
    HookRun garbage = { NULL, NULL, STDIN_GARBAGE };

    if (vmr_harness_skipped (&e->h))
        return;
    vmr_e2e_start_daemon (e, FALSE);
    garbage.socket = e->h.socket;
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
        run_hook (e, &garbage, cases[i]);
    /* whatever reached it, the daemon still serves */
    vmr_harness_assert_daemon_serving (&e->h);
}

int
main (int argc, char **argv)
{
    /* a hook that stops reading its stdin early must not kill the test */
    signal (SIGPIPE, SIG_IGN);
    vmr_e2e_init (&argc, &argv);
    VMR_E2E_ADD ("/e2e/hook/delivers", NULL, test_delivers);
    VMR_E2E_ADD ("/e2e/hook/no-daemon", NULL, test_no_daemon);
    VMR_E2E_ADD ("/e2e/hook/bad-input", NULL, test_bad_input);
    VMR_E2E_ADD ("/e2e/hook/backlog-full", NULL, test_backlog_full);
    VMR_E2E_ADD ("/e2e/hook/backlog-frees", NULL, test_backlog_frees);
    return vmr_e2e_run (FALSE);
}
