#define G_LOG_DOMAIN "vmr-hook"

/*
 * The libvirt hook. libvirtd runs every executable in hooks/qemu.d/ for each
 * event of each domain, as `NAME DOMAIN OP SUBOP EXTRA` with the domain XML
 * on stdin, and waits for it: a hook that fails can stop a domain from
 * starting, and a slow one delays it. So this one tells virt-mirrord in one
 * message and exits 0, always, within a second: when the daemon is down,
 * its socket is missing or stdin is garbage alike. It never calls libvirt,
 * which is blocked while it runs.
 *
 * The socket is VIRT_MIRROR_SOCKET, else `socket` in the [hook] group of the
 * config file (VIRT_MIRROR_HOOK_CONFIG, default SYSCONFDIR/virt-mirror/
 * hook.conf), else the daemon's default. libvirtd gives hooks a fixed
 * environment, so the config file is the way to point an installed hook
 * elsewhere.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>

#include "hook-message.h"
#include "vmr-config.h"

/* the whole run, reading stdin included, stays well inside libvirt's patience */
#define BUDGET_MS 600
/* of which reading the XML may take this much */
#define STDIN_BUDGET_MS 300
/* how often a connect refused by a full backlog is tried again */
#define CONNECT_RETRY_US (10 * 1000)
/* libvirt's domain XML is a few KiB; the UUID is near its start */
#define MAX_XML_BYTES (1024 * 1024)

/* the last resort: whatever hangs, the hook still ends in time and succeeds */
static void
alarm_cb (int signum)
{
    _exit (0);
}

static gint64
remaining_us (gint64 deadline_us)
{
    return MAX (deadline_us - g_get_monotonic_time (), 0);
}

/* the XML on stdin, at most MAX_XML_BYTES of it; never waits past @deadline_us */
static gchar *
read_stdin (gint64 deadline_us)
{
    g_autoptr (GString) xml = g_string_new (NULL);
    gchar buffer[8192];
    int flags = fcntl (STDIN_FILENO, F_GETFL);

    if (flags < 0 || fcntl (STDIN_FILENO, F_SETFL, flags | O_NONBLOCK) < 0)
        return g_string_free (g_steal_pointer (&xml), FALSE);
    while (xml->len < MAX_XML_BYTES) {
        struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
        gint64 left = remaining_us (deadline_us);
        ssize_t n;

        if (left == 0 || poll (&pfd, 1, (int) ((left + 999) / 1000)) <= 0)
            break;
        n = read (STDIN_FILENO, buffer, sizeof buffer);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
        if (n > 0)
            g_string_append_len (xml, buffer, n);
    }
    return g_string_free (g_steal_pointer (&xml), FALSE);
}

static gchar *
socket_path (void)
{
    const gchar *env = g_getenv ("VIRT_MIRROR_SOCKET");
    const gchar *config = g_getenv ("VIRT_MIRROR_HOOK_CONFIG");
    g_autoptr (GKeyFile) keyfile = g_key_file_new ();
    g_autoptr (GError) error = NULL;
    g_autofree gchar *path = NULL;

    if (env != NULL && *env != '\0')
        return g_strdup (env);
    if (config == NULL || *config == '\0')
        config = VMR_DEFAULT_HOOK_CONFIG;
    if (g_key_file_load_from_file (keyfile, config, G_KEY_FILE_NONE, &error))
        path = g_key_file_get_string (keyfile, "hook", "socket", &error);
    if (path != NULL && *path != '\0')
        return g_steal_pointer (&path);
    g_debug ("%s: %s", config, error != NULL ? error->message : "no socket");
    return g_strdup (VMR_DEFAULT_SOCKET);
}

static gboolean
wait_writable (GSocket *sock, gint64 deadline_us, GError **error)
{
    return g_socket_condition_timed_wait (sock, G_IO_OUT, remaining_us (deadline_us), NULL, error);
}

/* sends @message to the daemon at @path; gives up at @deadline_us */
static gboolean
send_message (const gchar *path, const gchar *message, gint64 deadline_us, GError **error)
{
    g_autoptr (GSocket) sock = NULL;
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    gsize len = strlen (message);
    gsize sent = 0;

    sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                         error);
    if (sock == NULL)
        return FALSE;
    /* a daemon that does not accept must not hold libvirtd up */
    g_socket_set_blocking (sock, FALSE);
    while (!g_socket_connect (sock, address, NULL, error)) {
        /*
         * a full backlog (a daemon busy with many domains starting at once)
         * refuses a non-blocking connect at once: try again until the
         * deadline rather than lose the event
         */
        if (g_error_matches (*error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)
            && remaining_us (deadline_us) > 0) {
            g_clear_error (error);
            g_usleep (MIN (CONNECT_RETRY_US, remaining_us (deadline_us)));
            continue;
        }
        if (!g_error_matches (*error, G_IO_ERROR, G_IO_ERROR_PENDING))
            return FALSE;
        g_clear_error (error);
        if (!wait_writable (sock, deadline_us, error)
            || !g_socket_check_connect_result (sock, error))
            return FALSE;
        break;
    }
    /* the daemon reads the line even when we are gone: no need to wait for its answer */
    while (sent < len) {
        g_autoptr (GError) local_error = NULL;
        gssize n = g_socket_send (sock, message + sent, len - sent, NULL, &local_error);

        if (n >= 0) {
            sent += (gsize) n;
            continue;
        }
        if (!g_error_matches (local_error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            g_propagate_error (error, g_steal_pointer (&local_error));
            return FALSE;
        }
        if (!wait_writable (sock, deadline_us, error))
            return FALSE;
    }
    return g_socket_close (sock, error);
}

int
main (int argc, char **argv)
{
    gint64 start_us = g_get_monotonic_time ();
    g_autofree gchar *xml = NULL;
    g_autofree gchar *uuid = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *message = NULL;
    g_autoptr (GError) error = NULL;

    signal (SIGALRM, alarm_cb);
    alarm (1);
    signal (SIGPIPE, SIG_IGN);
    if (argc < 3) {
        g_printerr ("usage: %s DOMAIN OP [SUBOP [EXTRA]] < DOMAIN_XML (run by libvirtd)\n",
                    argv[0]);
        return 0;
    }
    xml = read_stdin (start_us + STDIN_BUDGET_MS * G_TIME_SPAN_MILLISECOND);
    uuid = vmr_hook_uuid_from_xml (xml);
    path = socket_path ();
    message = vmr_hook_build_message (argv + 1, uuid);
    if (!send_message (path, message, start_us + BUDGET_MS * G_TIME_SPAN_MILLISECOND, &error))
        g_debug ("not told virt-mirrord at %s about %s %s: %s", path, argv[1], argv[2],
                 error->message);
    return 0;
}
