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
#include <json-glib/json-glib.h>

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

/* the domain's UUID from the XML on stdin, or NULL; never waits past @deadline_us */
static gchar *
read_uuid (gint64 deadline_us)
{
    g_autoptr (GString) xml = g_string_new (NULL);
    gchar buffer[8192];
    const gchar *start;
    const gchar *end;
    g_autofree gchar *uuid = NULL;
    int flags = fcntl (STDIN_FILENO, F_GETFL);

    if (flags < 0 || fcntl (STDIN_FILENO, F_SETFL, flags | O_NONBLOCK) < 0)
        return NULL;
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
    /* the first <uuid> of a domain XML is the domain's own */
    start = strstr (xml->str, "<uuid>");
    end = start != NULL ? strstr (start, "</uuid>") : NULL;
    if (end == NULL)
        return NULL;
    start += strlen ("<uuid>");
    uuid = g_strstrip (g_strndup (start, (gsize) (end - start)));
    if (!g_uuid_string_is_valid (uuid))
        return NULL;
    return g_steal_pointer (&uuid);
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

/* {"execute": "hook-event", "arguments": {...}} and a newline */
static gchar *
build_message (gchar **argv, const gchar *uuid)
{
    const gchar *names[] = { "domain", "op", "subop", "extra" };
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonGenerator) generator = json_generator_new ();
    g_autoptr (JsonNode) root = NULL;
    g_autofree gchar *text = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "execute");
    json_builder_add_string_value (builder, "hook-event");
    json_builder_set_member_name (builder, "arguments");
    json_builder_begin_object (builder);
    for (guint i = 0; i < G_N_ELEMENTS (names) && argv[i] != NULL; i++) {
        /* JSON strings must be UTF-8; libvirt's names are */
        if (!g_utf8_validate (argv[i], -1, NULL))
            continue;
        json_builder_set_member_name (builder, names[i]);
        json_builder_add_string_value (builder, argv[i]);
    }
    if (uuid != NULL) {
        json_builder_set_member_name (builder, "uuid");
        json_builder_add_string_value (builder, uuid);
    }
    json_builder_end_object (builder);
    json_builder_end_object (builder);
    root = json_builder_get_root (builder);
    json_generator_set_root (generator, root);
    text = json_generator_to_data (generator, NULL);
    return g_strconcat (text, "\n", NULL);
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
    uuid = read_uuid (start_us + STDIN_BUDGET_MS * G_TIME_SPAN_MILLISECOND);
    path = socket_path ();
    message = build_message (argv + 1, uuid);
    if (!send_message (path, message, start_us + BUDGET_MS * G_TIME_SPAN_MILLISECOND, &error))
        g_debug ("not told virt-mirrord at %s about %s %s: %s", path, argv[1], argv[2],
                 error->message);
    return 0;
}
