#define G_LOG_DOMAIN "vmr-test"

/*
 * NBD URIs: the forms libnbd and QEMU take parse into their parts, and every
 * malformed one is refused with one line that says what is wrong.
 */

#include <string.h>

#include "nbd-uri.h"
#include "vmr-error.h"

static const struct {
    const gchar *text;
    gboolean tls;
    const gchar *host;
    guint port;
    const gchar *socket;
    const gchar *export_name;
    const gchar *canonical;
    const gchar *server;
} good[] = {
    { "nbd://example.org/disk1", FALSE, "example.org", 10809, NULL, "disk1",
      "nbd://example.org:10809/disk1", "nbd://example.org:10809" },
    { "nbd://10.0.0.5:10810/vm/web01", FALSE, "10.0.0.5", 10810, NULL, "vm/web01",
      "nbd://10.0.0.5:10810/vm/web01", "nbd://10.0.0.5:10810" },
    { "nbds://store:1234/a%20b", TRUE, "store", 1234, NULL, "a b", "nbds://store:1234/a%20b",
      "nbd://store:1234" },
    { "nbd://[::1]:10809/x", FALSE, "::1", 10809, NULL, "x", "nbd://[::1]:10809/x",
      "nbd://::1:10809" },
    /* the server's default export */
    { "nbd://h", FALSE, "h", 10809, NULL, "", "nbd://h:10809/", "nbd://h:10809" },
    { "nbd://h/", FALSE, "h", 10809, NULL, "", "nbd://h:10809/", "nbd://h:10809" },
    { "NBD://h/e", FALSE, "h", 10809, NULL, "e", "nbd://h:10809/e", "nbd://h:10809" },
    { "nbd+unix:///exp?socket=/run/nbd.sock", FALSE, NULL, 0, "/run/nbd.sock", "exp",
      "nbd+unix:///exp?socket=/run/nbd.sock", "nbd+unix:/run/nbd.sock" },
    { "nbds+unix:///?socket=/run/a%20b.sock", TRUE, NULL, 0, "/run/a b.sock", "",
      "nbds+unix:///?socket=/run/a%20b.sock", "nbd+unix:/run/a b.sock" },
};

static const struct {
    const gchar *text;
    const gchar *reason; /* a part of the message */
} bad[] = {
    { "http://h/e", "the scheme must be nbd" },
    { "nbd:///e", "no host" },
    { "nbd://h:0/e", "port 0" },
    { "nbd://h:99999/e", "out of range" },
    { "nbd://h:port/e", "port" },
    { "nbd://user@h/e", "user names" },
    { "nbd://h/e#frag", "fragments" },
    { "nbd://h/e?socket=/x", "takes no query" },
    { "nbd+unix:///e", "needs ?socket=PATH" },
    { "nbd+unix://h/e?socket=/x", "names no host" },
    { "nbd+unix:///e?socket=x.sock", "absolute path" },
    { "nbd+unix:///e?socket=/x&tls=on", "only be socket=PATH" },
    { "nbd:e", "no host" },
    { "nbd://h/e%zz", "%-encoding" },
    { "nbd://[::1/e", "IPv6" },
};

static void
test_nbd_uri_good (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrNbdUri) uri = vmr_nbd_uri_parse (good[i].text, &error);
        g_autoptr (VmrNbdUri) copy = NULL;
        g_autofree gchar *server = NULL;

        g_test_message ("case: %s", good[i].text);
        g_assert_no_error (error);
        g_assert_true (vmr_nbd_uri_is_uri (good[i].text));
        g_assert_cmpint (uri->tls, ==, good[i].tls);
        g_assert_cmpstr (uri->host, ==, good[i].host);
        g_assert_cmpuint (uri->port, ==, good[i].port);
        g_assert_cmpstr (uri->socket, ==, good[i].socket);
        g_assert_cmpstr (uri->export_name, ==, good[i].export_name);
        g_assert_cmpstr (uri->canonical, ==, good[i].canonical);
        server = vmr_nbd_uri_server (uri);
        g_assert_cmpstr (server, ==, good[i].server);
        /* the canonical form reads back as the same export */
        copy = vmr_nbd_uri_parse (uri->canonical, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (copy->canonical, ==, uri->canonical);
        g_assert_cmpstr (copy->export_name, ==, uri->export_name);
    }
}

static void
test_nbd_uri_bad (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrNbdUri) uri = vmr_nbd_uri_parse (bad[i].text, &error);

        g_test_message ("case: %s: %s", bad[i].text, error != NULL ? error->message : "parsed");
        g_assert_null (uri);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
        g_assert_true (g_str_has_prefix (error->message, "malformed NBD URI"));
        g_assert_nonnull (strstr (error->message, bad[i].reason));
        g_assert_null (strchr (error->message, '\n'));
    }
}

/* paths are not URIs, whatever they contain */
static void
test_nbd_uri_is_uri (void)
{
    g_assert_false (vmr_nbd_uri_is_uri ("/srv/nbd://x.raw"));
    g_assert_false (vmr_nbd_uri_is_uri ("relative/dir"));
    g_assert_false (vmr_nbd_uri_is_uri (""));
    g_assert_false (vmr_nbd_uri_is_uri (NULL));
    g_assert_true (vmr_nbd_uri_is_uri ("nbd://h/e"));
}

/* another export of the same server: what evacuate --to a server plans */
static void
test_nbd_uri_with_export (void)
{
    g_autoptr (VmrNbdUri) tcp = vmr_nbd_uri_parse ("nbds://store:10810/pool", NULL);
    g_autoptr (VmrNbdUri) unix_socket = vmr_nbd_uri_parse ("nbd+unix:///?socket=/run/s", NULL);
    g_autoptr (VmrNbdUri) a = vmr_nbd_uri_with_export (tcp, "pool/db/a b.raw");
    g_autoptr (VmrNbdUri) b = vmr_nbd_uri_with_export (unix_socket, "web01.raw");

    g_assert_cmpstr (a->canonical, ==, "nbds://store:10810/pool/db/a%20b.raw");
    g_assert_cmpstr (a->export_name, ==, "pool/db/a b.raw");
    g_assert_true (a->tls);
    g_assert_cmpstr (b->canonical, ==, "nbd+unix:///web01.raw?socket=/run/s");
    /* the original is left as it was */
    g_assert_cmpstr (tcp->canonical, ==, "nbds://store:10810/pool");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/nbd-uri/good", test_nbd_uri_good);
    g_test_add_func ("/nbd-uri/bad", test_nbd_uri_bad);
    g_test_add_func ("/nbd-uri/is-uri", test_nbd_uri_is_uri);
    g_test_add_func ("/nbd-uri/with-export", test_nbd_uri_with_export);
    return g_test_run ();
}
