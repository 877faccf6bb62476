#define G_LOG_DOMAIN "vmr-test"

/*
 * Disks of libvirt domains moved to NBD exports (nbdkit's memory plugin on
 * TCP): the copy goes through libvirt's block copy with a network disk, and
 * afterwards libvirt's live and persistent definitions name the export; a
 * cancelled copy leaves no NBD node in QEMU. The bytes are read back
 * through the server.
 */

#include <string.h>

#include "harness-e2e.h"
#include "nbd-fixture.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
/* guest writes in each phase (each one a virsh run) */
#define E2E_WRITES 15

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

/* nbdkit's memory plugin on 127.0.0.1 with @filter (NULL, or "NAME PARAM"); returns the URI */
static gchar *
start_nbdkit (NbdE2e *t, const gchar *filter)
{
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    g_auto (GStrv) parts = filter != NULL ? g_strsplit (filter, " ", 2) : NULL;
    g_autofree gchar *filter_arg = parts != NULL ? g_strdup_printf ("--filter=%s", parts[0]) : NULL;
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    const gchar *const common[] = { "nbdkit", "-f", "-i", "127.0.0.1", "-p", port_text, NULL };

    for (guint i = 0; common[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) common[i]);
    if (filter_arg != NULL)
        g_ptr_array_add (argv, filter_arg);
    g_ptr_array_add (argv, "memory");
    g_ptr_array_add (argv, "32M");
    if (parts != NULL)
        g_ptr_array_add (argv, parts[1]);
    g_ptr_array_add (argv, NULL);
    vmr_nbd_start_server (&t->servers, (const gchar *const *) argv->pdata, NULL, port);
    return g_strdup_printf ("nbd://127.0.0.1:%u/", port);
}

/* a running domain on a fresh raw vda, known to the daemon; returns its name */
static gchar *
start_domain (NbdE2e *t, gchar **out_source)
{
    g_autofree gchar *source
        = vmr_harness_create_image (&t->e.h, "source.raw", "raw", IMAGE_SIZE, 11);
    VmrE2eDisk disk = { source, "raw", 0 };
    g_autofree gchar *name = vmr_e2e_define_domain (&t->e, &disk);

    vmr_e2e_start_domain (&t->e, name);
    vmr_e2e_start_daemon (&t->e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (&t->e, name, TRUE, 10000));
    *out_source = g_steal_pointer (&source);
    return g_steal_pointer (&name);
}

/* @xml names the export on @port for its one disk, and not @source */
static void
assert_xml_on_export (const gchar *what, const gchar *xml, const gchar *source, guint port)
{
    g_autofree gchar *old_source = g_strdup_printf ("<source file='%s'", source);
    g_autofree gchar *host = g_strdup_printf ("<host name='127.0.0.1' port='%u'/>", port);

    if (strstr (xml, "<disk type='network' device='disk'>") == NULL
        || strstr (xml, "<source protocol='nbd'") == NULL || strstr (xml, host) == NULL
        || strstr (xml, old_source) != NULL)
        vmr_fail ("%s does not name the export on port %u alone: %s", what, port,
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
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *live = NULL;
    g_autofree gchar *persistent = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    guint port;

    if (!vmr_nbd_require (&e->h))
        return;
    uri = start_nbdkit (t, NULL);
    port = (guint) g_ascii_strtoull (strrchr (uri, ':') + 1, NULL, 10);
    name = start_domain (t, &source);
    expected = vmr_harness_expected_path (source);
    writer = vmr_e2e_writer_new (name, expected, 0xb10c);
    id = vmr_harness_migrate (&e->h, name, "vda", uri, "--speed", "4M", NULL);
    json_object_unref (vmr_harness_wait_job (&e->h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "set-speed", id, "0"));
    json_object_unref (vmr_harness_wait_job (&e->h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    live = vmr_e2e_virsh_ok ("dumpxml", name, NULL);
    persistent = vmr_e2e_virsh_ok ("dumpxml", "--inactive", name, NULL);
    assert_xml_on_export ("the live definition", live, source, port);
    assert_xml_on_export ("the persistent definition", persistent, source, port);
    vmr_harness_writer_write (writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, name);
    vmr_nbd_assert_export_equals (&t->servers, uri, NULL, expected);
}

static void
test_cancel (NbdE2e *t, gconstpointer data)
{
    VmrE2e *e = &t->e;
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *during = NULL;
    g_autofree gchar *after = NULL;
    g_autofree gchar *live = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;

    if (!vmr_nbd_require (&e->h))
        return;
    /* writes the server takes slowly: the copy still runs when it is cancelled */
    uri = start_nbdkit (t, "delay delay-write=200ms");
    name = start_domain (t, &source);
    expected = vmr_harness_expected_path (source);
    writer = vmr_e2e_writer_new (name, expected, 0xca7);
    id = vmr_harness_migrate (&e->h, name, "vda", uri, "--speed", VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (&e->h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    during = node_drivers (name);
    g_assert_nonnull (strstr (during, "nbd"));
    vmr_harness_writer_write (writer, E2E_WRITES);
    json_object_unref (vmr_harness_job_command (&e->h, "cancel", id, NULL));
    json_object_unref (vmr_harness_wait_job (&e->h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S));
    after = node_drivers (name);
    if (strstr (after, "nbd") != NULL)
        vmr_fail ("an NBD node is left after the cancel: %s", after);
    live = vmr_e2e_domblk_source (name, "vda", FALSE);
    g_assert_cmpstr (live, ==, source);
    vmr_harness_writer_write (writer, E2E_WRITES);
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (source, "raw", expected);
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    g_test_add ("/e2e/libvirt-nbd/migrate", NbdE2e, NULL, nbd_e2e_setup, test_migrate,
                nbd_e2e_teardown);
    g_test_add ("/e2e/libvirt-nbd/cancel", NbdE2e, NULL, nbd_e2e_setup, test_cancel,
                nbd_e2e_teardown);
    return vmr_e2e_run (TRUE);
}
