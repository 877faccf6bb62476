/*
 * A client of the daemon's sockets that the tests run as another user
 * (through setpriv, as the CLI is run in test-readonly.c), for what the
 * CLI does not do: hold connections open, send a line as it comes, stay
 * silent, connect in a loop. One line of output per thing seen, read by
 * the test.
 *
 *   peer-client hold SOCKET N          opens N connections one after the other; for each
 *                                      prints "taken" (a greeting) or "refused LINE";
 *                                      then "held", and keeps them until stdin ends
 *   peer-client send SOCKET FILE       sends FILE as one request line, prints "reply LINE",
 *                                      then sends query-jobs and prints "then LINE"
 *   peer-client silent SOCKET          says nothing after the greeting; prints
 *                                      "after SECONDS LINE" for what the daemon sends, then
 *                                      "closed" when it hangs up
 *   peer-client connect-loop SOCKET SECONDS
 *                                      connects, reads the first line and hangs up, again
 *                                      and again; prints "started" after the first time,
 *                                      "taken N refused M" at the end
 *   peer-client http SOCKET            GET /metrics on the UNIX socket; prints the status line,
 *                                      or "denied ERROR" when it cannot connect
 *
 * Exit status 0, or 1 with a line on stderr when something unexpected
 * happened (a socket that cannot be reached where the test expects one).
 */
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* generous on a loaded machine; the tests wait for events well inside it */
#define READ_TIMEOUT_S 30

static G_GNUC_NORETURN void
die (const gchar *what, const GError *error)
{
    fprintf (stderr, "peer-client: %s: %s\n", what, error != NULL ? error->message : "failed");
    exit (1);
}

static GSocket *
connect_to (const gchar *path, GError **error)
{
    g_autoptr (GSocket) socket = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                               G_SOCKET_PROTOCOL_DEFAULT, error);
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);

    if (socket == NULL || !g_socket_connect (socket, address, NULL, error))
        return NULL;
    g_socket_set_timeout (socket, READ_TIMEOUT_S);
    return g_steal_pointer (&socket);
}

/* one line from @socket (without its newline), NULL at its end */
static gchar *
read_line (GSocket *socket, GString *buf)
{
    return vmr_harness_socket_line (socket, buf);
}

static void
send_all (GSocket *socket, const gchar *data, gsize size)
{
    g_autoptr (GError) error = NULL;

    while (size > 0) {
        gssize n = g_socket_send (socket, data, size, NULL, &error);

        if (n <= 0)
            die ("send", error);
        data += n;
        size -= (gsize) n;
    }
}

/* the first line of a new connection: TRUE for a greeting, else it is in *@out_line */
static gboolean
greeted (GSocket *socket, GString *buf, gchar **out_line)
{
    g_autofree gchar *line = read_line (socket, buf);

    if (line != NULL && g_str_has_prefix (line, "{\"QMP\""))
        return TRUE;
    *out_line = line != NULL ? g_steal_pointer (&line) : g_strdup ("(closed)");
    return FALSE;
}

static void
wait_for_stdin_end (void)
{
    gchar buf[256];

    while (fread (buf, 1, sizeof buf, stdin) > 0)
        ;
}

static int
hold (const gchar *path, guint n)
{
    g_autoptr (GPtrArray) held = g_ptr_array_new_with_free_func (g_object_unref);

    for (guint i = 0; i < n; i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocket) socket = connect_to (path, &error);
        g_autoptr (GString) buf = g_string_new (NULL);
        g_autofree gchar *line = NULL;

        if (socket == NULL)
            die (path, error);
        if (greeted (socket, buf, &line))
            printf ("taken\n");
        else
            printf ("refused %s\n", line);
        fflush (stdout);
        g_ptr_array_add (held, g_steal_pointer (&socket));
    }
    printf ("held\n");
    fflush (stdout);
    wait_for_stdin_end ();
    return 0;
}

static int
send_file (const gchar *path, const gchar *file)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocket) socket = connect_to (path, &error);
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autofree gchar *request = NULL;
    g_autofree gchar *first = NULL;
    g_autofree gchar *reply = NULL;
    g_autofree gchar *then = NULL;
    gsize size = 0;
    static const gchar jobs[] = "{\"execute\": \"query-jobs\"}\n";

    if (socket == NULL)
        die (path, error);
    if (!g_file_get_contents (file, &request, &size, &error))
        die (file, error);
    if (!greeted (socket, buf, &first))
        die ("no greeting", NULL);
    send_all (socket, request, size);
    reply = read_line (socket, buf);
    printf ("reply %s\n", reply != NULL ? reply : "(closed)");
    fflush (stdout);
    if (reply == NULL)
        return 0;
    send_all (socket, jobs, strlen (jobs));
    then = read_line (socket, buf);
    printf ("then %s\n", then != NULL ? then : "(closed)");
    return 0;
}

static int
silent (const gchar *path)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocket) socket = connect_to (path, &error);
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autofree gchar *first = NULL;
    gint64 start;
    gchar *line;

    if (socket == NULL)
        die (path, error);
    if (!greeted (socket, buf, &first))
        die ("no greeting", NULL);
    start = g_get_monotonic_time ();
    while ((line = read_line (socket, buf)) != NULL) {
        printf ("after %.2f %s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC,
                line);
        fflush (stdout);
        g_free (line);
    }
    printf ("closed after %.2f\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    return 0;
}

static int
connect_loop (const gchar *path, guint seconds)
{
    gint64 end = g_get_monotonic_time () + (gint64) seconds * G_USEC_PER_SEC;
    guint taken = 0;
    guint refused = 0;

    while (g_get_monotonic_time () < end) {
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocket) socket = connect_to (path, &error);
        g_autoptr (GString) buf = g_string_new (NULL);
        g_autofree gchar *line = NULL;

        if (socket == NULL)
            die (path, error);
        if (greeted (socket, buf, &line))
            taken++;
        else
            refused++;
        if (taken + refused == 1) {
            printf ("started\n");
            fflush (stdout);
        }
    }
    printf ("taken %u refused %u\n", taken, refused);
    return 0;
}

static int
http (const gchar *path)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GSocket) socket = connect_to (path, &error);
    g_autoptr (GString) buf = g_string_new (NULL);
    g_autofree gchar *status = NULL;
    static const gchar request[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

    if (socket == NULL) {
        printf ("denied %s\n", error->message);
        return 0;
    }
    send_all (socket, request, strlen (request));
    status = read_line (socket, buf);
    printf ("%s\n", status != NULL ? g_strchomp (status) : "(closed)");
    return 0;
}

int
main (int argc, char **argv)
{
    if (argc == 4 && g_str_equal (argv[1], "hold"))
        return hold (argv[2], (guint) atoi (argv[3]));
    if (argc == 4 && g_str_equal (argv[1], "send"))
        return send_file (argv[2], argv[3]);
    if (argc == 3 && g_str_equal (argv[1], "silent"))
        return silent (argv[2]);
    if (argc == 4 && g_str_equal (argv[1], "connect-loop"))
        return connect_loop (argv[2], (guint) atoi (argv[3]));
    if (argc == 3 && g_str_equal (argv[1], "http"))
        return http (argv[2]);
    fprintf (stderr, "usage: peer-client hold|send|silent|connect-loop|http SOCKET [ARG]\n");
    return 2;
}
