/*
 * Real NBD servers for the tests of NBD destinations: nbdkit and qemu-nbd
 * started by the test (killed by their pids in teardown, and with the test
 * when it dies), x509 certificates made with certtool, the bytes of an
 * export read back through its server with nbdcopy, and what QEMU holds
 * (block nodes, QOM objects) before and after a refusal.
 */
#pragma once

#include "harness.h"

G_BEGIN_DECLS

/* the servers and certificates of one test, in its harness's directory */
typedef struct {
    VmrHarness *h;
    GPtrArray *pids; /* of GPid, the servers, killed by vmr_nbd_servers_clear() */
    gchar *pki;      /* the certificates' directory, or NULL before vmr_nbd_make_pki() */
} VmrNbdServers;

void vmr_nbd_servers_init (VmrNbdServers *s, VmrHarness *h);
void vmr_nbd_servers_clear (VmrNbdServers *s);

/* the fixture of tests/integration/test-nbd.c */
typedef struct {
    VmrHarness h; /* first: the harness's own functions take the fixture */
    VmrNbdServers servers;
} VmrNbdTest;

#define VMR_NBD_ADD(path, data, func)                                                              \
    g_test_add ((path), VmrNbdTest, (data), vmr_nbd_setup, (func), vmr_nbd_teardown)

void vmr_nbd_setup (VmrNbdTest *t, gconstpointer user_data);
/* as vmr_nbd_setup(), and the test starts the daemon itself */
void vmr_nbd_setup_no_daemon (VmrNbdTest *t, gconstpointer user_data);
void vmr_nbd_teardown (VmrNbdTest *t, gconstpointer user_data);

/* TRUE when nbdkit, qemu-nbd, nbdcopy and certtool are there; skips the test otherwise */
gboolean vmr_nbd_require (VmrHarness *h);

/* a TCP port of 127.0.0.1 that nothing listens on now */
guint vmr_nbd_free_port (void);

/*
 * Starts the server @argv (NULL-terminated) and waits until it accepts on
 * the UNIX socket @socket_path, or on 127.0.0.1:@port when @socket_path is
 * NULL. Asserts it does within the start timeout.
 */
void vmr_nbd_start_server (VmrNbdServers *s, const gchar *const *argv, const gchar *socket_path,
                           guint port);

/*
 * Starts nbdkit's memory plugin of @size bytes on the UNIX socket @socket
 * behind its error filter: every write fails with EIO once the file
 * @trigger exists. Returns the export's URI; free with g_free().
 */
gchar *vmr_nbd_start_failing_export (VmrNbdServers *s, const gchar *socket, gsize size,
                                     const gchar *trigger);

/*
 * Makes, in the test's directory, two CAs with certtool and the directories
 * QEMU, libvirt and nbdkit read: "server" (ca-cert.pem, server-cert.pem,
 * server-key.pem for localhost and 127.0.0.1), "client" (ca-cert.pem,
 * client-cert.pem, client-key.pem) and "wrong-ca" (a client of the second
 * CA, which trusts that CA only). Returns the directory that holds the
 * three; the fixture owns it.
 */
const gchar *vmr_nbd_make_pki (VmrNbdServers *s);

/* the path of @name ("server", "client", "wrong-ca") under vmr_nbd_make_pki(); free with g_free()
 */
gchar *vmr_nbd_pki_dir (VmrNbdServers *s, const gchar *name);

/*
 * Reads the whole export @uri (with the x509 files of @tls_dir for nbds, or
 * NULL) through its server with nbdcopy into the raw file @name of the
 * test's directory, and asserts that it holds the bytes of @expected.
 */
void vmr_nbd_assert_export_equals (VmrNbdServers *s, const gchar *uri, const gchar *tls_dir,
                                   const gchar *expected);

/*
 * What the export @uri (without TLS) holds that is not a hole, in bytes:
 * the extents of libnbd's block status (base:allocation) without the hole
 * flag. Asserts the server offers it.
 */
guint64 vmr_nbd_export_allocated (const gchar *uri);

/* the node the guest device @qdev_id reads and writes through now */
gchar *vmr_nbd_device_node (VmrHarness *h, const gchar *qdev_id);

/* the names of QEMU's block nodes and of its /objects, sorted, joined by spaces */
gchar *vmr_nbd_qemu_state (VmrHarness *h);

G_END_DECLS
