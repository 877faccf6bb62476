#define G_LOG_DOMAIN "vmr-test"

/*
 * The libvirt hook given hostile input, with a real daemon listening: arguments of the longest
 * length the kernel passes, paths with "..", names of files it could be tricked into making, bytes
 * that are not UTF-8, overlong encodings of NUL and '/', control characters, options, a JSON line
 * smuggled into a name, a thousand arguments; stdin empty, endless zeros or endless random bytes.
 * Every run exits 0 within libvirt's second (the cost of starting a process, measured here, taken
 * off), and writes nothing anywhere: run under strace, it opens no file for writing, makes,
 * removes, renames or changes no file, and writes only to stderr and to the sockets, pipes and
 * eventfds it made itself. The daemon hears each run as one hook-event and nothing else (a command
 * smuggled into an argument would be logged with its own name), and keeps serving.
 */

#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "harness.h"

/* libvirt waits for the hook; it promises to be done within this */
#define HOOK_LIMIT_US G_USEC_PER_SEC
/* the longest single argument Linux passes (MAX_ARG_STRLEN), NUL included */
#define LONGEST_ARG (32 * 4096)

typedef enum {
    STDIN_EMPTY,  /* /dev/null */
    STDIN_ZEROS,  /* /dev/zero: never ends */
    STDIN_RANDOM, /* /dev/urandom: never ends, never XML */
} StdinKind;

static const gchar *const stdin_paths[] = { "/dev/null", "/dev/zero", "/dev/urandom" };

/*
 * runs @argv (NULL-terminated) with @input; asserts exit 0; returns how long
 * it took. @traced: @argv runs the hook under strace, where LeakSanitizer
 * cannot work (it stops a process that is ptraced): the untraced runs
 * check for leaks.
 */
static gint64
run_hook (VmrHarness *h, const gchar *const *argv, StdinKind input, gboolean traced)
{
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    gint64 start = g_get_monotonic_time ();

    g_subprocess_launcher_set_cwd (launcher, h->dir);
    g_subprocess_launcher_set_stdin_file_path (launcher, stdin_paths[input]);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_SOCKET", h->socket, TRUE);
    g_subprocess_launcher_setenv (launcher, "VIRT_MIRROR_HOOK_CONFIG", "/nonexistent", TRUE);
    if (traced && g_getenv ("ASAN_OPTIONS") != NULL) {
        g_autofree gchar *options
            = g_strdup_printf ("%s:detect_leaks=0", g_getenv ("ASAN_OPTIONS"));

        g_subprocess_launcher_setenv (launcher, "ASAN_OPTIONS", options, TRUE);
    }
    proc = g_subprocess_launcher_spawnv (launcher, argv, &error);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_wait (proc, NULL, &error));
    g_assert_no_error (error);
    g_assert_true (g_subprocess_get_if_exited (proc));
    g_assert_cmpint (g_subprocess_get_exit_status (proc), ==, 0);
    return g_get_monotonic_time () - start;
}

/* the median time of starting and reaping the hook with no arguments (it exits at once) */
static gint64
spawn_cost (VmrHarness *h)
{
    const gchar *argv[] = { g_getenv ("VMR_HOOK"), NULL };
    gint64 runs[3];

    for (guint i = 0; i < G_N_ELEMENTS (runs); i++)
        runs[i] = run_hook (h, argv, STDIN_EMPTY, FALSE);
    return MAX (MIN (runs[0], runs[1]), MIN (MAX (runs[0], runs[1]), runs[2]));
}

/* an fd number a syscall returned, or one of pipe2's pair, into @fds */
static void
add_fds (GHashTable *fds, const gchar *args, const gchar *ret)
{
    const gchar *open_bracket = strchr (args, '[');

    if (open_bracket != NULL) {
        g_auto (GStrv) pair = g_strsplit_set (open_bracket + 1, ",]", 3);

        for (guint i = 0; pair[i] != NULL && i < 2; i++)
            g_hash_table_add (fds, GINT_TO_POINTER (atoi (pair[i])));
        return;
    }
    g_hash_table_add (fds, GINT_TO_POINTER (atoi (ret)));
}

/*
 * Reads strace's log at @trace_path: fails on any attempt to open a file
 * for writing, or to make, remove, rename or change one, and on a write to
 * a descriptor the hook did not make itself (stderr aside).
 */
static void
assert_wrote_nothing (const gchar *trace_path, const gchar *what)
{
    static const gchar *const changing[] = {
        "mkdir",     "mkdirat",   "unlink", "unlinkat", "rename",    "renameat",
        "renameat2", "link",      "linkat", "symlink",  "symlinkat", "chmod",
        "fchmodat",  "chown",     "lchown", "fchownat", "truncate",  "mknod",
        "mknodat",   "utimensat", "creat",  NULL,
    };
    g_autofree gchar *text = NULL;
    g_auto (GStrv) lines = NULL;
    g_autoptr (GRegex) call = g_regex_new ("^(?:\\d+\\s+)?(\\w+)\\((.*)\\)\\s+=\\s+(-?\\d+)",
                                           G_REGEX_OPTIMIZE, 0, NULL);
    g_autoptr (GHashTable) own_fds = g_hash_table_new (NULL, NULL);
    guint n_calls = 0;

    g_assert_true (g_file_get_contents (trace_path, &text, NULL, NULL));
    lines = g_strsplit (text, "\n", -1);
    g_hash_table_add (own_fds, GINT_TO_POINTER (2));
    for (guint i = 0; lines[i] != NULL; i++) {
        g_autoptr (GMatchInfo) match = NULL;
        g_autofree gchar *name = NULL;
        g_autofree gchar *args = NULL;
        g_autofree gchar *ret = NULL;

        if (!g_regex_match (call, lines[i], 0, &match))
            continue;
        n_calls++;
        name = g_match_info_fetch (match, 1);
        args = g_match_info_fetch (match, 2);
        ret = g_match_info_fetch (match, 3);
        if (g_strv_contains (changing, name))
            vmr_fail ("the hook (%s) tried to change a file: %s", what, lines[i]);
        if ((g_str_equal (name, "open") || g_str_equal (name, "openat"))
            && (strstr (args, "O_WRONLY") != NULL || strstr (args, "O_RDWR") != NULL
                || strstr (args, "O_CREAT") != NULL || strstr (args, "O_TRUNC") != NULL))
            vmr_fail ("the hook (%s) opened a file for writing: %s", what, lines[i]);
        if (atoi (ret) >= 0
            && (g_str_equal (name, "socket") || g_str_equal (name, "eventfd2")
                || g_str_equal (name, "pipe") || g_str_equal (name, "pipe2")
                || g_str_equal (name, "socketpair"))) {
            add_fds (own_fds, args, ret);
            continue;
        }
        if (g_str_equal (name, "write") || g_str_equal (name, "writev")
            || g_str_equal (name, "pwrite64") || g_str_equal (name, "sendto")
            || g_str_equal (name, "sendmsg")) {
            gint fd = atoi (args);

            if (!g_hash_table_contains (own_fds, GINT_TO_POINTER (fd)))
                vmr_fail ("the hook (%s) wrote to a descriptor it did not make: %s", what,
                          lines[i]);
        }
    }
    /* the trace is real: the hook's own socket was seen */
    g_assert_cmpuint (n_calls, >, 0);
}

/* runs @argv under strace with @input and checks the trace */
static void
trace_hook (VmrHarness *h, const gchar *const *argv, StdinKind input, const gchar *what)
{
    g_autofree gchar *trace = vmr_harness_path (h, "hook.trace");
    g_autoptr (GPtrArray) traced = g_ptr_array_new ();

    g_ptr_array_add (traced, "strace");
    g_ptr_array_add (traced, "-f");
    g_ptr_array_add (traced, "-qq");
    g_ptr_array_add (traced, "-o");
    g_ptr_array_add (traced, trace);
    g_ptr_array_add (traced, "-e");
    g_ptr_array_add (traced, "trace=%file,write,writev,pwrite64,sendto,sendmsg,socket,"
                             "socketpair,eventfd2,pipe,pipe2");
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add (traced, (gpointer) argv[i]);
    g_ptr_array_add (traced, NULL);
    run_hook (h, (const gchar *const *) traced->pdata, input, TRUE);
    assert_wrote_nothing (trace, what);
    g_assert_cmpint (g_unlink (trace), ==, 0);
}

static guint
count_lines_with (const gchar *path, const gchar *needle)
{
    g_autofree gchar *text = NULL;
    guint n = 0;

    g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
    for (const gchar *p = strstr (text, needle); p != NULL; p = strstr (p + 1, needle))
        n++;
    return n;
}

static void
test_hook_hostile (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *longest = g_strnfill (LONGEST_ARG - 1, 'A');
    g_autofree gchar *made_here = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *policy = NULL;
    g_autoptr (GPtrArray) many = g_ptr_array_new ();
    const gchar *hook = g_getenv ("VMR_HOOK");
    gint64 cost;
    gint64 deadline;
    guint n_sent = 0;

    if (!vmr_harness_require (h, "strace", NULL))
        return;
    g_assert_nonnull (hook);
    policy = vmr_harness_write_policy (h, "[defaults]\n");
    h->daemon_log = vmr_harness_path (h, "daemon.log");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    made_here = vmr_harness_path (h, "made-by-the-hook");

    g_ptr_array_add (many, (gpointer) hook);
    for (guint i = 0; i < 1000; i++)
        g_ptr_array_add (many, i % 2 == 0 ? "vm" : "../x");
    g_ptr_array_add (many, NULL);
    {
        const gchar *const cases[][6] = {
            { hook, longest, "started", "begin", "-", NULL },
            { hook, "vm", longest, longest, longest, NULL },
            { hook, "../../../../etc/passwd", "/tmp/x/../../etc/shadow", made_here, "vm", NULL },
            { hook, "vm\"}}\n{\"execute\":\"detach\",\"arguments\":{\"name\":\"vm", "stopped",
              "end", "-", NULL },
            { hook, "\xff\xfe\xfd", "\xc0\xaf\xc0\xae", "\xc0\x80", "%00\\0", NULL },
            { hook, "--help", "-c", "/etc/passwd", "--socket=/tmp/x", NULL },
            { hook, "\x01\x02\x1b[2J", "\t\r\n", "vm\n", "\x7f", NULL },
            { hook, "vm", "stopped", "end", "-", NULL },
            { hook, "vm", NULL },
        };

        before = vmr_harness_snapshot (h->dir, "daemon.log");
        cost = spawn_cost (h);
        g_test_message ("starting and reaping the hook costs %.3f s here",
                        (gdouble) cost / G_USEC_PER_SEC);
        for (gsize c = 0; c < G_N_ELEMENTS (cases); c++) {
            for (guint input = STDIN_EMPTY; input <= STDIN_RANDOM; input++) {
                g_autofree gchar *what
                    = g_strdup_printf ("case %" G_GSIZE_FORMAT ", stdin %s", c, stdin_paths[input]);
                gint64 elapsed = run_hook (h, cases[c], input, FALSE);

                g_test_message ("%s: %.3f s", what, (gdouble) elapsed / G_USEC_PER_SEC);
                g_assert_cmpint (elapsed - cost, <, HOOK_LIMIT_US);
                trace_hook (h, cases[c], input, what);
                /* a run with a domain and an op tells the daemon, traced or not */
                if (cases[c][1] != NULL && cases[c][2] != NULL)
                    n_sent += 2;
            }
        }
        for (guint input = STDIN_EMPTY; input <= STDIN_RANDOM; input++) {
            gint64 elapsed = run_hook (h, (const gchar *const *) many->pdata, input, FALSE);

            g_assert_cmpint (elapsed - cost, <, HOOK_LIMIT_US);
            trace_hook (h, (const gchar *const *) many->pdata, input, "1000 arguments");
            n_sent += 2;
        }
    }
    after = vmr_harness_snapshot (h->dir, "daemon.log");
    g_assert_cmpstr (after, ==, before);
    g_assert_false (g_file_test (made_here, G_FILE_TEST_EXISTS));

    /* the daemon heard every run that named a domain and an op, and nothing more */
    deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    while (count_lines_with (h->daemon_log, "hook-event from uid 0 pid") < n_sent
           && g_get_monotonic_time () < deadline)
        g_usleep (50 * 1000);
    vmr_harness_assert_daemon_serving (h);
    g_assert_cmpuint (count_lines_with (h->daemon_log, "hook-event from uid 0 pid"), ==, n_sent);
    /* every command that changes something is logged by name: only the hook's were */
    g_assert_cmpuint (count_lines_with (h->daemon_log, " from uid "), ==, n_sent);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/hook-input/hostile", NULL, test_hook_hostile);
    return g_test_run ();
}
