#define G_LOG_DOMAIN "vmr-test"

#include "nbd-fixture.h"

#include <glib/gstdio.h>
#include <libnbd.h>
#include <signal.h>
#include <gio/gunixsocketaddress.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <unistd.h>

/* generous: a server on a loaded two-core machine */
#define SERVER_START_TIMEOUT_S 20

void
vmr_nbd_servers_init (VmrNbdServers *s, VmrHarness *h)
{
    s->h = h;
    s->pids = g_ptr_array_new ();
    s->pki = NULL;
}

void
vmr_nbd_servers_clear (VmrNbdServers *s)
{
    for (guint i = 0; s->pids != NULL && i < s->pids->len; i++) {
        GPid pid = GPOINTER_TO_INT (g_ptr_array_index (s->pids, i));

        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
    }
    g_clear_pointer (&s->pids, g_ptr_array_unref);
    g_clear_pointer (&s->pki, g_free);
}

void
vmr_nbd_setup (VmrNbdTest *t, gconstpointer user_data)
{
    vmr_nbd_servers_init (&t->servers, &t->h);
    vmr_harness_setup (&t->h, user_data);
}

void
vmr_nbd_setup_no_daemon (VmrNbdTest *t, gconstpointer user_data)
{
    vmr_nbd_servers_init (&t->servers, &t->h);
    vmr_harness_setup_no_daemon (&t->h, user_data);
}

void
vmr_nbd_teardown (VmrNbdTest *t, gconstpointer user_data)
{
    vmr_nbd_servers_clear (&t->servers);
    vmr_harness_teardown (&t->h, user_data);
}

gboolean
vmr_nbd_require (VmrHarness *h)
{
    if (vmr_harness_skipped (h))
        return FALSE;
    return vmr_harness_require (h, "nbdkit", "qemu-nbd", "nbdcopy", "certtool", NULL);
}

guint
vmr_nbd_free_port (void)
{
    g_autoptr (GSocket) socket
        = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
    g_autoptr (GSocketAddress) any = g_inet_socket_address_new (loopback, 0);
    g_autoptr (GSocketAddress) bound = NULL;
    g_autoptr (GError) error = NULL;
    guint port;

    g_assert_nonnull (socket);
    g_assert_true (g_socket_bind (socket, any, FALSE, &error));
    bound = g_socket_get_local_address (socket, &error);
    g_assert_no_error (error);
    port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
    g_socket_close (socket, NULL);
    return port;
}

/* the server dies with the test, whatever kills it */
static void
die_with_parent (gpointer user_data)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static gboolean
accepts (const gchar *socket_path, guint port)
{
    g_autoptr (GSocketClient) client = g_socket_client_new ();
    g_autoptr (GSocketConnection) connection = NULL;
    g_autoptr (GSocketAddress) address = NULL;

    if (socket_path != NULL) {
        address = g_unix_socket_address_new (socket_path);
    } else {
        g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);

        address = g_inet_socket_address_new (loopback, (guint16) port);
    }
    connection = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (address), NULL, NULL);
    return connection != NULL;
}

void
vmr_nbd_start_server (VmrNbdServers *s, const gchar *const *argv, const gchar *socket_path,
                      guint port)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *cmdline = g_strjoinv (" ", (gchar **) argv);
    gint64 deadline = g_get_monotonic_time () + SERVER_START_TIMEOUT_S * G_USEC_PER_SEC;
    GPid pid = 0;

    g_test_message ("starting %s", cmdline);
    if (!g_spawn_async (s->h->dir, (gchar **) argv, NULL,
                        G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL,
                        &pid, &error))
        vmr_fail ("cannot start %s: %s", cmdline, error->message);
    g_ptr_array_add (s->pids, GINT_TO_POINTER (pid));
    while (!accepts (socket_path, port)) {
        if (waitpid (pid, NULL, WNOHANG) == pid) {
            g_ptr_array_remove (s->pids, GINT_TO_POINTER (pid));
            vmr_fail ("%s exited before it served", cmdline);
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%s does not accept connections after %d s", cmdline, SERVER_START_TIMEOUT_S);
        g_usleep (50 * 1000);
    }
}

/* ---- certificates ---- */

static void
certtool (const gchar *dir, const gchar *const *args)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;

    g_ptr_array_add (argv, (gpointer) "certtool");
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    if (!g_spawn_sync (dir, (gchar **) argv->pdata, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                       &status, &error)
        || !g_spawn_check_wait_status (status, &error))
        vmr_fail ("certtool %s: %s: %s", args[0], error->message, err != NULL ? err : "");
}

static void
write_file (const gchar *dir, const gchar *name, const gchar *text)
{
    g_autofree gchar *path = g_build_filename (dir, name, NULL);
    g_autoptr (GError) error = NULL;

    if (!g_file_set_contents (path, text, -1, &error))
        vmr_fail ("%s", error->message);
}

static void
make_key (const gchar *dir, const gchar *name)
{
    const gchar *args[] = { "--generate-privkey", "--bits", "2048", "--outfile", name, NULL };

    certtool (dir, args);
}

/* a CA "@name-cert.pem" with its key */
static void
make_ca (const gchar *dir, const gchar *name)
{
    g_autofree gchar *key = g_strdup_printf ("%s-key.pem", name);
    g_autofree gchar *cert = g_strdup_printf ("%s-cert.pem", name);
    g_autofree gchar *info = g_strdup_printf ("%s.info", name);
    g_autofree gchar *text = g_strdup_printf ("cn = virt-mirror test %s\nca\ncert_signing_key\n"
                                              "expiration_days = 2\n",
                                              name);
    const gchar *args[] = {
        "--generate-self-signed", "--load-privkey", key, "--template", info, "--outfile", cert, NULL
    };

    write_file (dir, info, text);
    make_key (dir, key);
    certtool (dir, args);
}

/* @sub/@role-cert.pem and @sub/@role-key.pem signed by @ca, with the CA's cert as ca-cert.pem */
static void
make_peer (const gchar *dir, const gchar *sub, const gchar *role, const gchar *ca)
{
    g_autofree gchar *key = g_strdup_printf ("%s/%s-key.pem", sub, role);
    g_autofree gchar *cert = g_strdup_printf ("%s/%s-cert.pem", sub, role);
    g_autofree gchar *info = g_strdup_printf ("%s/%s.info", sub, role);
    g_autofree gchar *ca_key = g_strdup_printf ("%s-key.pem", ca);
    g_autofree gchar *ca_cert = g_strdup_printf ("%s-cert.pem", ca);
    g_autofree gchar *sub_dir = g_build_filename (dir, sub, NULL);
    g_autofree gchar *ca_text = NULL;
    g_autofree gchar *ca_path = g_build_filename (dir, ca_cert, NULL);
    g_autofree gchar *text = g_strdup_printf (
        "cn = %s\n%s\nencryption_key\nsigning_key\nexpiration_days = 2\n",
        g_strcmp0 (role, "server") == 0 ? "localhost" : "virt-mirror test client",
        /* a server's is a client's too: etcd's JSON gateway dials its own gRPC with it */
        g_strcmp0 (role, "server") == 0 ? "dns_name = localhost\nip_address = 127.0.0.1\n"
                                          "tls_www_server\ntls_www_client"
                                        : "tls_www_client");
    const gchar *args[] = { "--generate-certificate",
                            "--load-privkey",
                            key,
                            "--load-ca-certificate",
                            ca_cert,
                            "--load-ca-privkey",
                            ca_key,
                            "--template",
                            info,
                            "--outfile",
                            cert,
                            NULL };

    g_assert_cmpint (g_mkdir_with_parents (sub_dir, 0700), ==, 0);
    write_file (dir, info, text);
    make_key (dir, key);
    certtool (dir, args);
    g_assert_true (g_file_get_contents (ca_path, &ca_text, NULL, NULL));
    write_file (sub_dir, "ca-cert.pem", ca_text);
}

const gchar *
vmr_nbd_make_pki (VmrNbdServers *s)
{
    if (s->pki != NULL)
        return s->pki;
    s->pki = vmr_harness_path (s->h, "pki");
    g_assert_cmpint (g_mkdir_with_parents (s->pki, 0700), ==, 0);
    make_ca (s->pki, "ca");
    make_ca (s->pki, "other-ca");
    make_peer (s->pki, "server", "server", "ca");
    make_peer (s->pki, "client", "client", "ca");
    make_peer (s->pki, "wrong-ca", "client", "other-ca");
    return s->pki;
}

gchar *
vmr_nbd_pki_dir (VmrNbdServers *s, const gchar *name)
{
    return g_build_filename (vmr_nbd_make_pki (s), name, NULL);
}

/* ---- checks ---- */

void
vmr_nbd_assert_export_equals (VmrNbdServers *s, const gchar *uri, const gchar *tls_dir,
                              const gchar *expected)
{
    g_autofree gchar *copy = vmr_harness_path (s->h, "export-read.raw");
    g_autofree gchar *source = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;

    if (tls_dir != NULL)
        source = g_strdup_printf ("%s%stls-certificates=%s", uri,
                                  strchr (uri, '?') != NULL ? "&" : "?", tls_dir);
    else
        source = g_strdup (uri);
    {
        const gchar *argv[] = { "nbdcopy", source, copy, NULL };

        if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                           G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                           &status, &error)
            || !g_spawn_check_wait_status (status, &error))
            vmr_fail ("nbdcopy %s: %s: %s", source, error->message, err != NULL ? err : "");
    }
    vmr_harness_assert_image_equals (copy, "raw", expected);
    g_assert_cmpint (g_unlink (copy), ==, 0);
}

/* where a block status reply ended, and what it found allocated */
typedef struct {
    guint64 end;
    guint64 allocated;
} ExtentSum;

static int
extent_cb (void *user_data, const char *metacontext, uint64_t offset, uint32_t *entries,
           size_t nr_entries, int *error)
{
    ExtentSum *sum = user_data;

    if (strcmp (metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0)
        return 0;
    sum->end = offset;
    /* pairs of (length, flags) */
    for (size_t i = 0; i + 1 < nr_entries; i += 2) {
        if ((entries[i + 1] & LIBNBD_STATE_HOLE) == 0)
            sum->allocated += entries[i];
        sum->end += entries[i];
    }
    return 0;
}

guint64
vmr_nbd_export_allocated (const gchar *uri)
{
    struct nbd_handle *nbd = nbd_create ();
    ExtentSum sum = { 0, 0 };
    int64_t size;

    g_assert_nonnull (nbd);
    if (nbd_add_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
        || nbd_connect_uri (nbd, uri) == -1)
        vmr_fail ("cannot connect to %s: %s", uri, nbd_get_error ());
    if (nbd_can_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) != 1)
        vmr_fail ("%s offers no block status", uri);
    size = nbd_get_size (nbd);
    g_assert_cmpint (size, >=, 0);
    while (sum.end < (guint64) size) {
        guint64 before = sum.end;
        /* a request is at most 4 GiB - 1; the server may answer for less */
        guint64 count = MIN ((guint64) size - sum.end, (guint64) G_MAXUINT32 / 2);

        if (nbd_block_status (nbd, count, sum.end,
                              (nbd_extent_callback){ .callback = extent_cb, .user_data = &sum }, 0)
            == -1)
            vmr_fail ("block status of %s at %" G_GUINT64_FORMAT ": %s", uri, before,
                      nbd_get_error ());
        if (sum.end <= before)
            vmr_fail ("block status of %s at %" G_GUINT64_FORMAT " made no progress", uri, before);
    }
    nbd_shutdown (nbd, 0);
    nbd_close (nbd);
    return sum.allocated;
}

gchar *
vmr_nbd_device_node (VmrHarness *h, const gchar *qdev_id)
{
    g_autoptr (JsonNode) blocks = vmr_harness_qmp (h, "query-block", NULL);
    JsonArray *array = vmr_harness_json_node_array (blocks);
    g_autofree gchar *under = g_strdup_printf ("/machine/peripheral/%s/", qdev_id);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *dev = vmr_harness_json_element (array, i);
        const gchar *qdev = vmr_json_get_string (dev, "qdev");

        if (g_strcmp0 (qdev, qdev_id) == 0 || (qdev != NULL && g_str_has_prefix (qdev, under)))
            return g_strdup (
                vmr_harness_json_string (vmr_harness_json_object (dev, "inserted"), "node-name"));
    }
    vmr_fail ("query-block has no %s", qdev_id);
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

/* the @member of each object of the array @node, sorted */
static void
add_names (GPtrArray *names, JsonNode *node, const gchar *member)
{
    JsonArray *array = vmr_harness_json_node_array (node);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *obj = vmr_harness_json_element (array, i);
        const gchar *name = vmr_json_get_string (obj, member);

        if (name != NULL)
            g_ptr_array_add (names, g_strdup (name));
    }
}

gchar *
vmr_nbd_qemu_state (VmrHarness *h)
{
    g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) objects = NULL;

    add_names (names, nodes, "node-name");
    json_object_set_string_member (args, "path", "/objects");
    objects = vmr_harness_qmp (h, "qom-list", args);
    add_names (names, objects, "name");
    g_ptr_array_sort (names, compare_strings);
    g_ptr_array_add (names, NULL);
    return g_strjoinv (" ", (gchar **) names->pdata);
}

gchar *
vmr_nbd_start_failing_export (VmrNbdServers *s, const gchar *socket, gsize size,
                              const gchar *trigger)
{
    g_autofree gchar *size_arg = g_strdup_printf ("%" G_GSIZE_FORMAT, size);
    g_autofree gchar *file_arg = g_strdup_printf ("error-file=%s", trigger);
    const gchar *argv[] = { "nbdkit",
                            "-f",
                            "-U",
                            socket,
                            "--filter=error",
                            "memory",
                            size_arg,
                            "error=EIO",
                            "error-pwrite-rate=100%",
                            file_arg,
                            NULL };

    vmr_nbd_start_server (s, argv, socket, 0);
    return g_strdup_printf ("nbd+unix:///?socket=%s", socket);
}
