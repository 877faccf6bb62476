#define G_LOG_DOMAIN "vmr-test"

/*
 * What other users can hold of the daemon (docs/protocol.md, "Limits"),
 * against the real daemon and the real CLI, those users run through
 * setpriv (peer-fixture.h):
 *  - the control connections: a user up to --max-clients-per-user, the
 *    users other than root together up to half of --max-clients, each
 *    refused past it with one line and the daemon's one log line; root's
 *    query-jobs as quick while another user connects in a loop and is
 *    refused as it was before (the median of many, within 1 ms); the places
 *    given back when the connections close;
 *  - a silent client of another user cut off after --client-idle-timeout
 *    with one line, root's silent client not;
 *  - bad values of the options, refused with one line before the daemon
 *    serves anything;
 *  - the metrics: 0.0.0.0 and [::] refused without --metrics-allow-remote
 *    and served with it; a 17th connection answered 503, a request with a
 *    body 413 before it is read, a connection that sends nothing closed, no
 *    descriptor left behind by scrapes that close their connections; on
 *    unix:PATH, a socket only root and the read-only group may open.
 */

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "nbd-fixture.h"
#include "peer-fixture.h"

#define GROUP "vmr-clients-test"
/* a uid with no name, another user than nobody */
#define OTHER_UID   "65533"
#define THIRD_UID   "65532"
#define MAX_CLIENTS "16"
#define PER_USER    "4"
#define ROUND_TRIPS 200
/*
 * what another user's refused connections may add to root's median round
 * trip; under ASan every step of the daemon costs several times more: the
 * bound of the normal build is the one that holds the daemon to it
 */
#ifdef __SANITIZE_ADDRESS__
#define MAX_SLOWDOWN_US 5000
#else
#define MAX_SLOWDOWN_US 1000
#endif
/* the metrics server's connections at once (metrics-server.h) */
#define METRICS_MAX_CLIENTS 16

typedef VmrPeerTest Fixture;

/* ---- root's round trips ---- */

/* one line from root's @socket, without its newline; fails the test at its end */
static gchar *
read_line (GSocket *socket, GString *buf)
{
    gchar *line = vmr_harness_socket_line (socket, buf);

    if (line == NULL)
        vmr_fail ("the connection ended");
    return line;
}

static gint
compare_int64 (gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *) a;
    gint64 y = *(const gint64 *) b;

    return x < y ? -1 : x > y ? 1 : 0;
}

/* the median round trip of ROUND_TRIPS query-jobs on root's @socket, in µs */
static gint64
median_round_trip (GSocket *socket, GString *buf)
{
    gint64 times[ROUND_TRIPS];
    static const gchar request[] = "{\"execute\": \"query-jobs\"}\n";

    for (guint i = 0; i < ROUND_TRIPS; i++) {
        gint64 start = g_get_monotonic_time ();
        g_autofree gchar *reply = NULL;

        g_assert_cmpint (g_socket_send (socket, request, strlen (request), NULL, NULL), ==,
                         strlen (request));
        reply = read_line (socket, buf);
        times[i] = g_get_monotonic_time () - start;
        if (!g_str_has_prefix (reply, "{\"return\""))
            vmr_fail ("root's query-jobs: %s", reply);
    }
    qsort (times, ROUND_TRIPS, sizeof times[0], compare_int64);
    return times[ROUND_TRIPS / 2];
}

/* ---- control connections ---- */

/* `peer-client hold` as @user: @taken lines "taken", then the rest refused for @reason */
static VmrPeer *
hold (Fixture *t, const gchar *user, guint n, guint taken, const gchar *reason)
{
    g_autofree gchar *count = g_strdup_printf ("%u", n);
    const gchar *args[] = { "hold", t->readonly_socket, count, NULL };
    VmrPeer *peer = vmr_peer_client (user, GROUP, args);

    for (guint i = 0; i < n; i++) {
        g_autofree gchar *line = vmr_peer_read_line (peer, 30);

        if (i < taken && !g_str_equal (line, "taken"))
            vmr_fail ("connection %u of %s was not taken: %s", i + 1, user, line);
        if (i >= taken
            && (!g_str_has_prefix (line, "refused {\"error\"") || strstr (line, "\"Busy\"") == NULL
                || strstr (line, reason) == NULL))
            vmr_fail ("connection %u of %s was not refused for \"%s\": %s", i + 1, user, reason,
                      line);
    }
    g_free (vmr_peer_read_line (peer, 30));
    return peer;
}

static void
test_caps (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autoptr (GSocket) root = NULL;
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autoptr (VmrPeer) nobody = NULL;
    g_autoptr (VmrPeer) other = NULL;
    g_autoptr (VmrPeer) third = NULL;
    g_autoptr (VmrPeer) looping = NULL;
    g_autoptr (VmrCliResult) jobs = NULL;
    g_autofree gchar *usual_reason = NULL;
    g_autofree gchar *loop_result = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *rest = NULL;
    gint64 usual, during;
    guint nobody_uid;

    if (vmr_harness_skipped (h))
        return;
    nobody_uid = (guint) getpwnam ("nobody")->pw_uid;
    {
        const gchar *limits[]
            = { "--max-clients", MAX_CLIENTS, "--max-clients-per-user", PER_USER, NULL };

        vmr_peer_test_start_daemon (t, limits);
    }
    root = vmr_harness_connect_unix (h->socket);
    g_free (read_line (root, buf));
    usual = median_round_trip (root, buf);

    /* a user up to its share, another up to the half of all, a third none */
    usual_reason = g_strdup_printf ("uid %u holds " PER_USER " connections already "
                                    "(--max-clients-per-user)",
                                    nobody_uid);
    nobody = hold (t, "nobody", 6, 4, usual_reason);
    other = hold (t, OTHER_UID, 6, 4, "uid " OTHER_UID " holds " PER_USER " connections");
    third = hold (t, THIRD_UID, 2, 0, "users other than root hold 8 connections already");

    /* root's commands while another user connects in a loop and is refused */
    {
        const gchar *args[] = { "connect-loop", t->readonly_socket, "4", NULL };

        g_autofree gchar *started = NULL;

        looping = vmr_peer_client ("nobody", GROUP, args);
        started = vmr_peer_read_line (looping, 30);
        g_assert_cmpstr (started, ==, "started");
    }
    during = median_round_trip (root, buf);
    loop_result = vmr_peer_read_line (looping, 30);
    g_test_message ("root's median query-jobs: %" G_GINT64_FORMAT " µs alone, %" G_GINT64_FORMAT
                    " µs while another user is refused in a loop (%s)",
                    usual, during, loop_result);
    g_assert_true (g_str_has_prefix (loop_result, "taken 0 refused "));
    g_assert_cmpuint (g_ascii_strtoull (loop_result + strlen ("taken 0 refused "), NULL, 10), >, 0);
    g_assert_cmpint (during - usual, <, MAX_SLOWDOWN_US);
    /* and the CLI, root's, still finds room: 8 of 16 are root's */
    jobs = vmr_harness_cli (h, "jobs", NULL);
    vmr_cli_result_assert_ok (jobs);

    /* the log says each refusal, one line at most every 10 s */
    log = vmr_peer_test_log (t);
    if (strstr (log, usual_reason) == NULL)
        vmr_fail ("the daemon did not log the refusal \"%s\":\n%s", usual_reason, log);
    g_assert_cmpuint (vmr_harness_count_lines (log, "refused a connection of uid"), <=, 3);

    /* the places come back when the connections close */
    g_free (vmr_peer_finish (nobody));
    g_free (vmr_peer_finish (other));
    g_free (vmr_peer_finish (third));
    g_free (vmr_peer_finish (looping));
    {
        const gchar *args[] = { "hold", t->readonly_socket, PER_USER, NULL };
        g_autoptr (VmrPeer) again = vmr_peer_client ("nobody", GROUP, args);

        for (guint i = 0; i < 4; i++) {
            g_autofree gchar *line = vmr_peer_read_line (again, 30);

            g_assert_cmpstr (line, ==, "taken");
        }
        rest = vmr_peer_finish (again);
    }
    vmr_harness_assert_daemon_serving (h);
}

/* another user's silent client is cut off with one line; root's is not */
static void
test_idle_timeout (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    const gchar *args[] = { "silent", t->readonly_socket, NULL };
    const gchar *idle[] = { "--client-idle-timeout", "2", NULL };
    g_autoptr (VmrPeer) silent = NULL;
    g_autoptr (GSocket) root = NULL;
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autofree gchar *said = NULL;
    g_autofree gchar *closed = NULL;
    g_autofree gchar *logged = NULL;
    g_autofree gchar *log = NULL;
    gdouble after;

    if (vmr_harness_skipped (h))
        return;
    vmr_peer_test_start_daemon (t, idle);
    root = vmr_harness_connect_unix (h->socket);
    g_free (read_line (root, buf));
    silent = vmr_peer_client ("nobody", GROUP, args);
    said = vmr_peer_read_line (silent, 30);
    closed = vmr_peer_read_line (silent, 30);
    g_test_message ("the silent client: %s; %s", said, closed);
    g_assert_true (g_str_has_prefix (said, "after "));
    after = g_ascii_strtod (said + strlen ("after "), NULL);
    g_assert_cmpfloat (after, >=, 2.0);
    g_assert_cmpfloat (after, <, 10.0);
    g_assert_nonnull (strstr (said, "{\"error\":{\"class\":\"GenericError\","
                                    "\"desc\":\"the peer sent nothing for 2 s\"}}"));
    g_assert_true (g_str_has_prefix (closed, "closed after "));
    g_free (vmr_peer_finish (silent));

    /* root's client, silent longer, is still served */
    g_assert_cmpint (median_round_trip (root, buf), >, 0);
    log = vmr_peer_test_log (t);
    logged = g_strdup_printf ("(pid %s): the peer sent nothing for 2 s", vmr_peer_pid (silent));
    if (strstr (log, logged) == NULL)
        vmr_fail ("the daemon did not log \"%s\":\n%s", logged, log);
    g_assert_cmpuint (vmr_harness_count_lines (log, "cut off client"), ==, 1);
    vmr_harness_assert_daemon_serving (h);
}

/* the daemon's stderr is one line that names @needle, exit status 2, nothing served */
static void
assert_refused_start (VmrHarness *h, VmrCliResult *run, const gchar *needle)
{
    g_test_message ("%s: status %d, stderr: %s", run->cmdline, run->status, run->err);
    g_assert_cmpint (run->status, ==, 2);
    g_assert_cmpuint (vmr_harness_count_lines (run->err, "virt-mirrord: "), ==, 1);
    g_assert_null (strchr (g_strchomp (run->err), '\n'));
    if (strstr (run->err, needle) == NULL)
        vmr_fail ("the refusal does not name \"%s\": %s", needle, run->err);
    g_assert_false (g_file_test (h->socket, G_FILE_TEST_EXISTS));
}

static void
test_bad_options (Fixture *t, gconstpointer user_data)
{
    static const struct {
        const gchar *option;
        const gchar *value;
        const gchar *needle;
    } bad[] = {
        { "--max-clients", "1", "--max-clients must be at least 2" },
        { "--max-clients", "many", "--max-clients: 'many' is not a whole number" },
        { "--max-clients", "0", "--max-clients: '0' is not a whole number" },
        { "--max-clients-per-user", "0", "--max-clients-per-user: '0'" },
        { "--client-idle-timeout", "1.5s", "--client-idle-timeout: '1.5s'" },
        { "--client-idle-timeout", "-1", "--client-idle-timeout: '-1'" },
        { "--metrics-listen", "0.0.0.0:9474", "'0.0.0.0:9474' is not a loopback address" },
        { "--metrics-listen", "[::]:9474", "--metrics-allow-remote" },
        { "--metrics-listen", "192.0.2.1:9474", "is not a loopback address" },
        { "--metrics-listen", "unix:relative.sock", "is not unix:PATH with an absolute path" },
    };
    VmrHarness *h = &t->h;
    struct rlimit limit;

    if (vmr_harness_skipped (h))
        return;
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
        g_autoptr (VmrCliResult) run
            = vmr_harness_run_daemon (h, bad[i].option, bad[i].value, NULL);

        assert_refused_start (h, run, bad[i].needle);
    }
    /* more clients than half the files the daemon may open (it raises its limit to the hard one) */
    g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &limit), ==, 0);
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < G_MAXINT / 2) {
        g_autofree gchar *too_many = g_strdup_printf ("%u", (guint) limit.rlim_max / 2 + 1);
        g_autoptr (VmrCliResult) run = vmr_harness_run_daemon (h, "--max-clients", too_many, NULL);

        assert_refused_start (h, run, "raise LimitNOFILE");
    }
    /* the environment, when there is no option */
    g_setenv ("VIRT_MIRROR_MAX_CLIENTS_PER_USER", "none", TRUE);
    {
        g_autoptr (VmrCliResult) run = vmr_harness_run_daemon (h, "--no-libvirt", NULL);

        g_unsetenv ("VIRT_MIRROR_MAX_CLIENTS_PER_USER");
        assert_refused_start (h, run, "'none'");
    }
}

/* ---- the metrics ---- */

/* GET @url with a client of its own, its connection closed after: the status, the body */
static guint
scrape (const gchar *url, gchar **out_connection_header)
{
    g_autoptr (SoupSession) session = soup_session_new_with_options ("timeout", 10, NULL);
    g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
    g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, NULL);

    if (out_connection_header != NULL)
        *out_connection_header = g_strdup (
            soup_message_headers_get_one (soup_message_get_response_headers (msg), "Connection"));
    soup_session_abort (session);
    return soup_message_get_status (msg);
}

static GSocket *
connect_tcp (guint port)
{
    g_autoptr (GSocket) socket
        = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
    g_autoptr (GSocketAddress) address = g_inet_socket_address_new (loopback, port);
    g_autoptr (GError) error = NULL;

    g_assert_nonnull (socket);
    g_assert_true (g_socket_connect (socket, address, NULL, &error));
    g_assert_no_error (error);
    g_socket_set_timeout (socket, 30);
    return g_steal_pointer (&socket);
}

/* what the daemon writes on @socket until it hangs up (at most 64 KiB) */
static gchar *
read_until_end (GSocket *socket)
{
    GString *got = g_string_new (NULL);
    gchar buf[4096];
    gssize n;

    while (got->len < 65536 && (n = g_socket_receive (socket, buf, sizeof buf, NULL, NULL)) > 0)
        g_string_append_len (got, buf, n);
    return g_string_free (got, FALSE);
}

/* the descriptors the daemon holds open */
static guint
daemon_fds (VmrHarness *h)
{
    g_autofree gchar *path = g_strdup_printf ("/proc/%d/fd", (gint) h->daemon_pid);
    g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
    guint n = 0;

    g_assert_nonnull (dir);
    while (g_dir_read_name (dir) != NULL)
        n++;
    return n;
}

/*
 * a request that says it has a gigabyte of body: 413 at once, and the
 * daemon does not take what is sent after it (libsoup would keep it all)
 */
static void
assert_body_refused (VmrHarness *h, guint port)
{
    static const gchar head[]
        = "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1073741824\r\n\r\n";
    g_autoptr (GSocket) socket = connect_tcp (port);
    g_autofree gchar *chunk = g_strnfill (65536, 'x');
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autofree gchar *status = NULL;
    guint64 before_kib = vmr_harness_peak_kib (h->daemon_pid);
    guint64 after_kib;
    guint64 sent = 0;

    g_assert_cmpint (g_socket_send (socket, head, strlen (head), NULL, NULL), ==, strlen (head));
    status = read_line (socket, buf);
    g_assert_cmpstr (status, ==, "HTTP/1.1 413 Content Too Large\r");
    /* what a client goes on sending goes nowhere: the connection is gone */
    g_socket_set_timeout (socket, 2);
    while (sent < 256 * 1024 * 1024) {
        gssize n = g_socket_send (socket, chunk, 65536, NULL, NULL);

        if (n <= 0)
            break;
        sent += (guint64) n;
    }
    after_kib = vmr_harness_peak_kib (h->daemon_pid);
    g_test_message ("after the 413 the client sent %" G_GUINT64_FORMAT
                    " bytes more; the daemon's peak went from %" G_GUINT64_FORMAT
                    " to %" G_GUINT64_FORMAT " KiB",
                    sent, before_kib, after_kib);
    g_assert_cmpuint (sent, <, 64 * 1024 * 1024);
#ifdef __SANITIZE_ADDRESS__
    /* ASan keeps freed memory in quarantine and counts it: the normal build holds the bound */
    g_test_message ("under ASan the daemon's peak is not bounded here");
#else
    g_assert_cmpuint (after_kib - before_kib, <, 16 * 1024);
#endif
}

/* 0.0.0.0 is served when it is asked for by name, from the option or the environment */
static void
test_metrics_remote (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *any = g_strdup_printf ("0.0.0.0:%u", port);
    g_autofree gchar *url = g_strdup_printf ("http://127.0.0.1:%u/metrics", port);
    const gchar *with_option[] = { "--metrics-listen", any, "--metrics-allow-remote", NULL };
    const gchar *with_env[] = { "--metrics-listen", any, NULL };

    if (vmr_harness_skipped (h))
        return;
    vmr_harness_restart_daemon (h, with_option);
    g_assert_cmpuint (scrape (url, NULL), ==, SOUP_STATUS_OK);
    vmr_harness_stop_daemon (h);
    g_setenv ("VIRT_MIRROR_METRICS_ALLOW_REMOTE", "1", TRUE);
    vmr_harness_restart_daemon (h, with_env);
    g_unsetenv ("VIRT_MIRROR_METRICS_ALLOW_REMOTE");
    g_assert_cmpuint (scrape (url, NULL), ==, SOUP_STATUS_OK);
}

/* past 16 connections a 503, a body refused unread, silent connections closed, nothing leaked */
static void
test_metrics_limits (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *listen = g_strdup_printf ("127.0.0.1:%u", port);
    g_autofree gchar *url = g_strdup_printf ("http://127.0.0.1:%u/metrics", port);
    const gchar *args[] = { "--metrics-listen", listen, NULL };
    g_autoptr (GPtrArray) silent = g_ptr_array_new_with_free_func (g_object_unref);
    g_autoptr (GSocket) excess = NULL;
    g_autofree gchar *busy = NULL;
    g_autofree gchar *connection = NULL;
    guint fds_before, fds_after;
    gint64 start;

    if (vmr_harness_skipped (h))
        return;
    vmr_harness_restart_daemon (h, args);

    /* every scrape's connection closes: libsoup 3.2 kept those its client closed */
    g_assert_cmpuint (scrape (url, &connection), ==, SOUP_STATUS_OK);
    g_assert_cmpstr (connection, ==, "close");
    fds_before = daemon_fds (h);
    for (guint i = 0; i < 50; i++)
        g_assert_cmpuint (scrape (url, NULL), ==, SOUP_STATUS_OK);
    fds_after = daemon_fds (h);
    g_test_message ("the daemon's descriptors: %u before 50 scrapes, %u after", fds_before,
                    fds_after);
    g_assert_cmpuint (fds_after, <=, fds_before + 2);

    /* 16 connections that send nothing hold every place: the 17th gets 503 */
    start = g_get_monotonic_time ();
    for (guint i = 0; i < METRICS_MAX_CLIENTS; i++)
        g_ptr_array_add (silent, connect_tcp (port));
    excess = connect_tcp (port);
    busy = read_until_end (excess);
    g_test_message ("the 17th connection: %s", busy);
    g_assert_true (g_str_has_prefix (busy, "HTTP/1.1 503 Service Unavailable\r\n"));

    /* the silent ones are closed once their time is up (10 s), and nothing was answered */
    for (guint i = 0; i < silent->len; i++) {
        g_autofree gchar *got = read_until_end (g_ptr_array_index (silent, i));

        g_assert_cmpstr (got, ==, "");
    }
    g_test_message ("the silent connections were closed after %.1f s",
                    (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    g_assert_cmpint (g_get_monotonic_time () - start, >=, 9 * G_USEC_PER_SEC);
    g_assert_cmpint (g_get_monotonic_time () - start, <, 20 * G_USEC_PER_SEC);
    g_assert_cmpuint (scrape (url, NULL), ==, SOUP_STATUS_OK);
    assert_body_refused (h, port);
}

/* `peer-client http` on @path as @user in @group: its first line */
static gchar *
http_as (const gchar *user, const gchar *group, const gchar *path)
{
    const gchar *args[] = { "http", path, NULL };
    g_autoptr (VmrPeer) peer = vmr_peer_client (user, group, args);
    gchar *line = vmr_peer_read_line (peer, 30);

    g_free (vmr_peer_finish (peer));
    return line;
}

/* on unix:PATH only root and the read-only socket's group read the metrics */
static void
test_metrics_unix (Fixture *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *path = vmr_harness_path (h, "metrics.sock");
    g_autofree gchar *listen = g_strdup_printf ("unix:%s", path);
    const gchar *alone[] = { "--metrics-listen", listen, NULL };
    g_autofree gchar *root = NULL;
    g_autofree gchar *member = NULL;
    g_autofree gchar *outsider = NULL;
    struct stat st;

    if (vmr_harness_skipped (h))
        return;
    vmr_peer_test_start_daemon (t, alone);
    g_assert_cmpint (g_stat (path, &st), ==, 0);
    g_assert_true (S_ISSOCK (st.st_mode));
    g_assert_cmpint (st.st_mode & 0777, ==, 0660);
    g_assert_cmpint (st.st_gid, ==, t->group.gid);
    root = http_as ("root", "root", path);
    member = http_as ("nobody", GROUP, path);
    outsider = http_as ("nobody", "nogroup", path);
    g_test_message ("root: %s; the group: %s; another user: %s", root, member, outsider);
    g_assert_cmpstr (root, ==, "HTTP/1.1 200 OK");
    g_assert_cmpstr (member, ==, "HTTP/1.1 200 OK");
    g_assert_true (g_str_has_prefix (outsider, "denied "));
    g_assert_nonnull (strstr (outsider, "ermission denied"));
    vmr_harness_stop_daemon (h);
    g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));

    /* without the group, root's alone */
    vmr_harness_restart_daemon (h, alone);
    g_assert_cmpint (g_stat (path, &st), ==, 0);
    g_assert_cmpint (st.st_mode & 0777, ==, 0600);
    g_clear_pointer (&member, g_free);
    member = http_as ("nobody", GROUP, path);
    g_assert_true (g_str_has_prefix (member, "denied "));
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_PEER_TEST_ADD ("/clients/caps", GROUP, test_caps);
    VMR_PEER_TEST_ADD ("/clients/idle-timeout", GROUP, test_idle_timeout);
    VMR_PEER_TEST_ADD ("/clients/bad-options", GROUP, test_bad_options);
    VMR_PEER_TEST_ADD ("/clients/metrics-remote", GROUP, test_metrics_remote);
    VMR_PEER_TEST_ADD ("/clients/metrics-limits", GROUP, test_metrics_limits);
    VMR_PEER_TEST_ADD ("/clients/metrics-unix", GROUP, test_metrics_unix);
    return g_test_run ();
}
