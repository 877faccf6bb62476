#define G_LOG_DOMAIN "vmr-test"

/*
 * Disks of libvirt domains moved to NBD exports (nbdkit's memory plugin on
 * TCP and on a UNIX socket): the copy goes through libvirt's block copy with a network disk, and
 * afterwards libvirt's live and persistent definitions name the export; a
 * cancelled copy leaves no NBD node in QEMU. The bytes are read back
 * through the server. A thin disk (with discard='unmap' in its domain's
 * definition) moved to nbdkit's file plugin on a sparse file stays thin:
 * what the export's block status reports as data, and the file's
 * st_blocks, are at most 1.1 times the data.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "harness-e2e.h"
#include "nbd-fixture.h"

#define MIB        ((gsize) 1024 * 1024)
#define IMAGE_SIZE (32 * MIB)
/* the thin disk: 512 MiB with 32 MiB of data in 16 extents */
#define THIN_SIZE        (512 * MIB)
#define THIN_EXTENTS     16
#define THIN_EXTENT_SIZE (2 * MIB)
#define THIN_DATA        (THIN_EXTENTS * THIN_EXTENT_SIZE)

/*
 * guest writes in each phase, each one a virsh run (a few tenths of a second):
 * five random extents, all checked byte for byte at the end
 */
#define E2E_WRITES 5

typedef struct {
    VmrE2e e; /* first: the e2e fixture's functions take the test */
    VmrNbdServers servers;
} NbdE2e;

static void
nbd_e2e_setup (NbdE2e *t, gconstpointer data)
{
    vmr_nbd_servers_init (&t->servers, &t->e.h);
    vmr_e2e_setup (&t->e, data);
}

static void
nbd_e2e_teardown (NbdE2e *t, gconstpointer data)
{
    /* the domains go first: their QEMUs hold the exports */
    vmr_e2e_teardown (&t->e, data);
    vmr_nbd_servers_clear (&t->servers);
}

/*
 * nbdkit's memory plugin of IMAGE_SIZE (or, with @file, its file plugin on
 * @file) with @filter (NULL, or "NAME PARAM") on 127.0.0.1, or on a UNIX
 * socket that libvirt's QEMU user may use; returns the URI and the <host>
 * element libvirt names it by
 */
static gchar *
start_nbdkit (NbdE2e *t, const gchar *filter, gboolean unix_socket, const gchar *file,
              gchar **out_host)
{
    g_autofree gchar *file_arg = file != NULL ? g_strdup_printf ("file=%s", file) : NULL;
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    g_autofree gchar *socket = vmr_harness_path (&t->e.h, "export.sock");
    g_auto (GStrv) parts = filter != NULL ? g_strsplit (filter, " ", 2) : NULL;
    g_autofree gchar *filter_arg = parts != NULL ? g_strdup_printf ("--filter=%s", parts[0]) : NULL;
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    const gchar *const tcp[] = { "nbdkit", "-f", "-i", "127.0.0.1", "-p", port_text, NULL };
    const gchar *const local[] = { "nbdkit", "-f", "-U", socket, NULL };
    const gchar *const *common = unix_socket ? local : tcp;

    for (guint i = 0; common[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) common[i]);
    if (filter_arg != NULL)
        g_ptr_array_add (argv, filter_arg);
    g_ptr_array_add (argv, file != NULL ? "file" : "memory");
    g_ptr_array_add (argv, file != NULL ? file_arg : "32M");
    if (parts != NULL)
        g_ptr_array_add (argv, parts[1]);
    g_ptr_array_add (argv, NULL);
    vmr_nbd_start_server (&t->servers, (const gchar *const *) argv->pdata,
                          unix_socket ? socket : NULL, port);
    if (unix_socket) {
        /* libvirt runs QEMU as a user of its own */
        g_assert_cmpint (g_chmod (socket, 0666), ==, 0);
        *out_host = g_strdup_printf ("<host transport='unix' socket='%s'/>", socket);
        return g_strdup_printf ("nbd+unix:///?socket=%s", socket);
    }
    *out_host = g_strdup_printf ("<host name='127.0.0.1' port='%u'/>", port);
    return g_strdup_printf ("nbd://127.0.0.1:%u/", port);
}

/* what a test copies: the domain, its source, the source's pristine copy, the export */
typedef struct {
    gchar *name;
    gchar *source;
    gchar *expected;
    gchar *uri;
    gchar *host; /* libvirt's <host> of the export */
    gchar *id;   /* the job */
    VmrHarnessWriter *writer;
} Copy;

static void
copy_clear (Copy *c)
{
    /* the writer names the domain: it goes first */
    g_clear_pointer (&c->writer, vmr_harness_writer_free);
    g_free (c->name);
    g_free (c->source);
    g_free (c->expected);
    g_free (c->uri);
    g_free (c->host);
    g_free (c->id);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Copy, copy_clear)

/*
 * nbdkit with @filter, a running domain on a fresh raw vda known to the
 * daemon, and its copy to the export at @speed, copying when this returns
 */
static void
start_copy (NbdE2e *t, const gchar *filter, gboolean unix_socket, const gchar *speed, Copy *c,
            gboolean verify)
{
    VmrE2eDisk disk = { NULL, "raw", 0 };

    c->uri = start_nbdkit (t, filter, unix_socket, NULL, &c->host);
    c->source = vmr_harness_create_image (&t->e.h, "source.raw", "raw", IMAGE_SIZE, 11);
    c->expected = vmr_harness_expected_path (c->source);
    disk.path = c->source;
    c->name = vmr_e2e_define_domain (&t->e, &disk);
    vmr_e2e_start_domain (&t->e, c->name);
    vmr_e2e_start_daemon (&t->e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (&t->e, c->name, TRUE, 10000));
    c->writer = vmr_e2e_writer_new (c->name, c->expected, 0xb10c);
    c->id = vmr_harness_migrate (&t->e.h, c->name, "vda", c->uri, "--speed", speed,
                                 verify ? "--verify" : NULL, NULL);
    json_object_unref (vmr_harness_wait_job (&t->e.h, c->id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
}

/* @xml names the export at @host for its one disk, and not @source */
static void
assert_xml_on_export (const gchar *what, const gchar *xml, const gchar *source, const gchar *host)
{
    g_autofree gchar *old_source = g_strdup_printf ("<source file='%s'", source);

    if (strstr (xml, "<disk type='network' device='disk'>") == NULL
        || strstr (xml, "<source protocol='nbd'") == NULL || strstr (xml, host) == NULL
        || strstr (xml, old_source) != NULL)
        vmr_fail ("%s does not name the export at %s alone: %s", what, host,
                  g_strescape (xml, NULL));
}

/* the drivers of QEMU's block nodes, through libvirt, joined by spaces */
static gchar *
node_drivers (const gchar *domain)
{
    g_autofree gchar *out = vmr_e2e_virsh_ok (
        "qemu-monitor-command", domain,
        "{\"execute\": \"query-named-block-nodes\", \"arguments\": {\"flat\": true}}", NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GPtrArray) drivers = g_ptr_array_new ();
    JsonArray *nodes;

    g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
    nodes = vmr_harness_json_array (vmr_harness_json_node_object (json_parser_get_root (parser)),
                                    "return");
    for (guint i = 0; i < json_array_get_length (nodes); i++)
        g_ptr_array_add (drivers, (gpointer) vmr_harness_json_string (
                                      vmr_harness_json_element (nodes, i), "drv"));
    g_ptr_array_add (drivers, NULL);
    return g_strjoinv (" ", (gchar **) drivers->pdata);
}

static void
test_migrate (NbdE2e *t, gconstpointer data)
{
    VmrE2e *e = &t->e;
    g_auto (Copy) c = { 0 };
    g_autofree gchar *live = NULL;
    g_autofree gchar *persistent = NULL;

    if (!vmr_nbd_require (&e->h))
        return;
    start_copy (t, NULL, GPOINTER_TO_INT (data), "4M", &c, FALSE);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "set-speed", c.id, "0"));
    json_object_unref (vmr_harness_wait_job (&e->h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    live = vmr_e2e_virsh_ok ("dumpxml", c.name, NULL);
    persistent = vmr_e2e_virsh_ok ("dumpxml", "--inactive", c.name, NULL);
    assert_xml_on_export ("the live definition", live, c.source, c.host);
    assert_xml_on_export ("the persistent definition", persistent, c.source, c.host);
    /* the disk has no discard='unmap', which libvirt copies with: the daemon said so */
    g_assert_true (
        vmr_e2e_daemon_log_has (e, "libvirt copies with the disk's discard mode (ignore)"));
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_nbd_assert_export_equals (&t->servers, c.uri, NULL, c.expected);
}

static void
test_cancel (NbdE2e *t, gconstpointer data)
{
    VmrE2e *e = &t->e;
    g_auto (Copy) c = { 0 };
    g_autofree gchar *during = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *live = NULL;

    if (!vmr_nbd_require (&e->h))
        return;
    /* writes the server takes slowly: the copy still runs when it is cancelled */
    start_copy (t, "delay delay-write=200ms", FALSE, VMR_HARNESS_SLOW_SPEED, &c, FALSE);
    during = node_drivers (c.name);
    g_assert_nonnull (strstr (during, "nbd"));
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "cancel", c.id, NULL));
    json_object_unref (vmr_harness_wait_job (&e->h, c.id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S));
    after = node_drivers (c.name);
    if (strstr (after, "nbd") != NULL)
        vmr_fail ("an NBD node is left after the cancel: %s", after);
    live = vmr_e2e_domblk_source (c.name, "vda", FALSE);
    g_assert_cmpstr (live, ==, c.source);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_harness_assert_image_equals (c.source, "raw", c.expected);
}

static void
test_thin (NbdE2e *t, gconstpointer data)
{
    VmrE2e *e = &t->e;
    g_auto (Copy) c = { 0 };
    g_autofree gchar *export_file = NULL;
    /*
     * libvirt 11.3 opens the copy's node with the discard and detect-zeroes
     * of the disk it copies, not those of the destination's XML; without
     * discard=unmap the mirror's zero writes allocate the file's holes
     */
    VmrE2eDisk disk = { NULL, "raw", 0, "discard='unmap' detect_zeroes='unmap'" };
    guint writes;

    if (!vmr_nbd_require (&e->h))
        return;
    export_file = vmr_harness_create_sparse_file (&e->h, "export.raw", THIN_SIZE);
    c.uri = start_nbdkit (t, NULL, TRUE, export_file, &c.host);
    c.source = vmr_harness_create_thin_image (&e->h, "source.raw", THIN_SIZE, THIN_EXTENTS,
                                              THIN_EXTENT_SIZE, 0x7417);
    c.expected = vmr_harness_expected_path (c.source);
    disk.path = c.source;
    c.name = vmr_e2e_define_domain (e, &disk);
    vmr_e2e_start_domain (e, c.name);
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, c.name, TRUE, 10000));
    c.writer = vmr_e2e_writer_new (c.name, c.expected, 0x7417e);
    c.id = vmr_harness_migrate (&e->h, c.name, "vda", c.uri, "--speed", "4M", NULL);
    json_object_unref (vmr_harness_wait_job (&e->h, c.id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "set-speed", c.id, "0"));
    json_object_unref (vmr_harness_wait_job (&e->h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    writes = vmr_harness_writer_count (c.writer);
    g_assert_false (vmr_e2e_daemon_log_has (e, "libvirt copies with the disk's discard mode"));
    vmr_e2e_destroy_domain (e, c.name);
    vmr_nbd_assert_export_equals (&t->servers, c.uri, NULL, c.expected);
    vmr_harness_assert_thin (c.uri, vmr_nbd_export_allocated (c.uri), THIN_DATA, writes);
    vmr_harness_assert_thin (export_file, vmr_harness_allocated (export_file), THIN_DATA, writes);
}

/*
 * A copy to an export verified after its pivot: QEMU's node of the export is
 * found by its URI, and the verification passes while the guest writes
 */
static void
test_verify (NbdE2e *t, gconstpointer data)
{
    VmrE2e *e = &t->e;
    g_auto (Copy) c = { 0 };
    g_autoptr (JsonObject) job = NULL;
    JsonObject *v;

    if (!vmr_nbd_require (&e->h))
        return;
    start_copy (t, NULL, TRUE, "4M", &c, TRUE);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "set-speed", c.id, "0"));
    json_object_unref (vmr_harness_wait_job (&e->h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    for (guint i = 0; i < 1000 && !vmr_harness_verification_ended (&e->h, c.id); i++)
        vmr_harness_writer_write (c.writer, 1);
    job = vmr_harness_get_job (&e->h, c.id);
    v = vmr_harness_json_object (job, "verification");
    g_test_message ("verification: %s, compared %" G_GINT64_FORMAT ", written %" G_GINT64_FORMAT
                    "; %s",
                    vmr_harness_json_string (v, "state"), vmr_harness_json_int (v, "compared"),
                    vmr_harness_json_int (v, "written"),
                    json_object_has_member (v, "error") && !vmr_harness_json_is_null (v, "error")
                        ? vmr_harness_json_string (v, "error")
                        : "no error");
    g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "passed");
    g_assert_cmpint (vmr_harness_json_int (v, "covered"), ==, IMAGE_SIZE);
    vmr_harness_writer_write (c.writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, c.name);
    vmr_nbd_assert_export_equals (&t->servers, c.uri, NULL, c.expected);
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    g_test_add ("/e2e/libvirt-nbd/migrate/tcp", NbdE2e, GINT_TO_POINTER (FALSE), nbd_e2e_setup,
                test_migrate, nbd_e2e_teardown);
    g_test_add ("/e2e/libvirt-nbd/migrate/unix", NbdE2e, GINT_TO_POINTER (TRUE), nbd_e2e_setup,
                test_migrate, nbd_e2e_teardown);
    g_test_add ("/e2e/libvirt-nbd/cancel", NbdE2e, NULL, nbd_e2e_setup, test_cancel,
                nbd_e2e_teardown);
    g_test_add ("/e2e/libvirt-nbd/thin", NbdE2e, NULL, nbd_e2e_setup, test_thin, nbd_e2e_teardown);
    g_test_add ("/e2e/libvirt-nbd/verify", NbdE2e, NULL, nbd_e2e_setup, test_verify,
                nbd_e2e_teardown);
    return vmr_e2e_run (TRUE);
}
