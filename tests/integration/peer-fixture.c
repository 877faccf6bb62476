#define G_LOG_DOMAIN "vmr-test"

#include "peer-fixture.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include <gio/gunixinputstream.h>
#include <glib/gstdio.h>

struct _VmrPeer {
    GSubprocess *proc;
    GString *out; /* printed, not read yet */
    gint out_fd;
    gchar *cmdline;
    gchar *pid; /* kept once the process is reaped */
};

static gboolean
run_quietly (const gchar *const *argv)
{
    gint status = 0;

    return g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                         &status, NULL)
           && g_spawn_check_wait_status (status, NULL);
}

gboolean
vmr_peer_group_add (VmrHarness *h, VmrPeerGroup *group, const gchar *name)
{
    const gchar *add[] = { "groupadd", "--system", name, NULL };

    if (!vmr_harness_require (h, "setpriv", "groupadd", "groupdel", NULL))
        return FALSE;
    if (getuid () != 0 || getpwnam ("nobody") == NULL) {
        vmr_harness_skip (h, "needs root and a user nobody");
        return FALSE;
    }
    group->name = g_strdup (name);
    if (getgrnam (name) == NULL) {
        g_assert_true (run_quietly (add));
        group->made = TRUE;
    }
    group->gid = getgrnam (name)->gr_gid;
    /* the users must reach the sockets in the test's directory */
    g_assert_cmpint (g_chmod (h->dir, 0711), ==, 0);
    return TRUE;
}

void
vmr_peer_group_remove (VmrPeerGroup *group)
{
    const gchar *del[] = { "groupdel", group->name, NULL };

    if (group->made)
        g_assert_true (run_quietly (del));
    group->made = FALSE;
    g_clear_pointer (&group->name, g_free);
}

void
vmr_peer_test_setup (VmrPeerTest *t, gconstpointer user_data)
{
    vmr_harness_setup_no_daemon (&t->h, NULL);
    if (vmr_harness_skipped (&t->h) || !vmr_peer_group_add (&t->h, &t->group, user_data))
        return;
    t->readonly_socket = g_build_filename (t->h.dir, "ro", "virt-mirrord-ro.sock", NULL);
    t->log = vmr_harness_path (&t->h, "daemon.log");
}

void
vmr_peer_test_teardown (VmrPeerTest *t, gconstpointer user_data)
{
    /* first: the harness's teardown fails the test when the daemon did not exit cleanly */
    vmr_peer_group_remove (&t->group);
    vmr_harness_teardown (&t->h, NULL);
    g_clear_pointer (&t->readonly_socket, g_free);
    g_clear_pointer (&t->log, g_free);
}

void
vmr_peer_test_start_daemon (VmrPeerTest *t, const gchar *const *extra)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();

    g_ptr_array_add (argv, "--readonly-socket");
    g_ptr_array_add (argv, t->readonly_socket);
    g_ptr_array_add (argv, "--readonly-group");
    g_ptr_array_add (argv, t->group.name);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) extra[i]);
    g_ptr_array_add (argv, NULL);
    g_free (t->h.daemon_log);
    t->h.daemon_log = g_strdup (t->log);
    vmr_harness_restart_daemon (&t->h, (const gchar *const *) argv->pdata);
}

gchar *
vmr_peer_test_log (VmrPeerTest *t)
{
    gchar *log = NULL;

    g_assert_true (g_file_get_contents (t->log, &log, NULL, NULL));
    return log;
}

void
vmr_peer_test_assert_logged (VmrPeerTest *t, const gchar *text)
{
    g_autofree gchar *log = vmr_peer_test_log (t);

    if (strstr (log, text) == NULL)
        vmr_fail ("the daemon did not log \"%s\":\n%s", text, log);
}

VmrPeer *
vmr_peer_start (const gchar *user, const gchar *group, const gchar *const *argv,
                const gchar *const *env)
{
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (
        G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE);
    g_autoptr (GPtrArray) full = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GError) error = NULL;
    VmrPeer *peer = g_new0 (VmrPeer, 1);

    g_ptr_array_add (full, g_strdup ("setpriv"));
    g_ptr_array_add (full, g_strdup_printf ("--reuid=%s", user));
    g_ptr_array_add (full, g_strdup_printf ("--regid=%s", group));
    g_ptr_array_add (full, g_strdup ("--clear-groups"));
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add (full, g_strdup (argv[i]));
    g_ptr_array_add (full, NULL);
    for (guint i = 0; env != NULL && env[i] != NULL; i++) {
        g_auto (GStrv) pair = g_strsplit (env[i], "=", 2);

        g_subprocess_launcher_setenv (launcher, pair[0], pair[1], TRUE);
    }
    peer->cmdline = g_strjoinv (" ", (gchar **) full->pdata);
    peer->proc
        = g_subprocess_launcher_spawnv (launcher, (const gchar *const *) full->pdata, &error);
    g_assert_no_error (error);
    peer->pid = g_strdup (g_subprocess_get_identifier (peer->proc));
    peer->out = g_string_new (NULL);
    peer->out_fd = g_unix_input_stream_get_fd (
        G_UNIX_INPUT_STREAM (g_subprocess_get_stdout_pipe (peer->proc)));
    return peer;
}

VmrPeer *
vmr_peer_client (const gchar *user, const gchar *group, const gchar *const *args)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    const gchar *client = g_getenv ("VMR_PEER_CLIENT");

    g_assert_nonnull (client);
    g_ptr_array_add (argv, (gpointer) client);
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    return vmr_peer_start (user, group, (const gchar *const *) argv->pdata, NULL);
}

const gchar *
vmr_peer_pid (VmrPeer *peer)
{
    return peer->pid;
}

/* more output, waiting until @deadline_us; FALSE at its end or the deadline */
static gboolean
read_more (VmrPeer *peer, gint64 deadline_us)
{
    struct pollfd pfd = { peer->out_fd, POLLIN, 0 };
    gint64 left_ms = (deadline_us - g_get_monotonic_time ()) / 1000;
    gchar buf[4096];
    gssize n;

    if (left_ms <= 0 || poll (&pfd, 1, (int) left_ms) <= 0)
        return FALSE;
    n = read (peer->out_fd, buf, sizeof buf);
    if (n <= 0)
        return FALSE;
    g_string_append_len (peer->out, buf, n);
    return TRUE;
}

gchar *
vmr_peer_read_line (VmrPeer *peer, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
    gchar *newline;
    gchar *line;

    while ((newline = memchr (peer->out->str, '\n', peer->out->len)) == NULL) {
        if (!read_more (peer, deadline))
            vmr_fail ("`%s` printed no line in %u s (so far: %s)", peer->cmdline, timeout_s,
                      peer->out->str);
    }
    line = g_strndup (peer->out->str, (gsize) (newline - peer->out->str));
    g_string_erase (peer->out, 0, newline - peer->out->str + 1);
    return line;
}

gchar *
vmr_peer_finish (VmrPeer *peer)
{
    g_autoptr (GError) error = NULL;
    gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;

    g_output_stream_close (g_subprocess_get_stdin_pipe (peer->proc), NULL, NULL);
    while (read_more (peer, deadline))
        ;
    if (!g_subprocess_wait_check (peer->proc, NULL, &error))
        vmr_fail ("`%s`: %s (printed: %s)", peer->cmdline, error->message, peer->out->str);
    return g_strdup (peer->out->str);
}

void
vmr_peer_free (VmrPeer *peer)
{
    if (peer == NULL)
        return;
    if (g_subprocess_get_identifier (peer->proc) != NULL) {
        g_subprocess_force_exit (peer->proc);
        g_subprocess_wait (peer->proc, NULL, NULL);
    }
    g_object_unref (peer->proc);
    g_string_free (peer->out, TRUE);
    g_free (peer->cmdline);
    g_free (peer->pid);
    g_free (peer);
}
