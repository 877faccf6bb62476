#define G_LOG_DOMAIN "vmr-test"

/*
 * Destinations that are NBD exports: made from their URIs, what they share
 * with other destinations, the checks that need no connection, and how
 * QEMU and libvirt are told about them. The preflight against real servers
 * is in tests/integration/test-nbd.c.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "destination-private.h"
#include "libvirt-xml.h"
#include "vmr-error.h"

static const VmrDestinationNbdOptions options = { "/etc/pki/qemu", 7 };

static gchar *
json_text (JsonObject *obj)
{
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);

    json_node_set_object (node, obj);
    return json_to_string (node, FALSE);
}

static void
test_destination_nbd_new (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestination) tcp
        = vmr_destination_new_full ("nbd://store/vm1", NULL, TRUE, &options, &error);
    g_autoptr (VmrDestination) tls
        = vmr_destination_new_full ("nbds://store:10810/vm1", "raw", FALSE, &options, &error);
    g_autoptr (VmrDestination) unix_socket
        = vmr_destination_new ("nbd+unix:///vm1?socket=/run/s.sock", "raw", TRUE, &error);
    VmrDestination *refused;

    g_assert_no_error (error);
    g_assert_cmpint (tcp->kind, ==, VMR_DESTINATION_NBD);
    g_assert_cmpstr (tcp->location, ==, "nbd://store:10809/vm1");
    g_assert_cmpstr (tcp->format, ==, "raw");
    /* an export is never made or removed by the copy */
    g_assert_false (tcp->created);
    g_assert_cmpstr (tcp->admission_key, ==, "nbd://store:10809");
    g_assert_cmpuint (tcp->reconnect_delay_s, ==, 7);
    /* credentials are kept for TLS only */
    g_assert_null (tcp->tls_creds);
    g_assert_cmpstr (tls->tls_creds, ==, "/etc/pki/qemu");
    g_assert_cmpstr (unix_socket->admission_key, ==, "nbd+unix:/run/s.sock");
    g_assert_cmpuint (unix_socket->reconnect_delay_s, ==, 0);
    g_assert_false (vmr_destination_has_virtual_size (tcp));

    refused = vmr_destination_new ("nbd://store/vm1", "qcow2", FALSE, &error);
    g_assert_null (refused);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull (strstr (error->message, "raw disk"));
    g_clear_error (&error);
    refused = vmr_destination_new ("nbd://store:0/vm1", NULL, FALSE, &error);
    g_assert_null (refused);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_true (g_str_has_prefix (error->message, "malformed NBD URI 'nbd://store:0/vm1'"));
    g_clear_error (&error);
    refused = vmr_destination_new ("ftp://store/vm1", NULL, FALSE, &error);
    g_assert_null (refused);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
}

static void
test_destination_nbd_same_target (void)
{
    g_autoptr (VmrDestination) dest = vmr_destination_new ("nbd://store/vm1", NULL, FALSE, NULL);
    g_autoptr (VmrDestination) file = vmr_destination_new ("/srv/vm1.raw", NULL, TRUE, NULL);

    g_assert_true (vmr_destination_same_target (dest, "nbd://store:10809/vm1"));
    /* the same export with or without TLS */
    g_assert_true (vmr_destination_same_target (dest, "nbds://store/vm1"));
    g_assert_false (vmr_destination_same_target (dest, "nbd://store/vm2"));
    g_assert_false (vmr_destination_same_target (dest, "nbd://store:10810/vm1"));
    g_assert_false (vmr_destination_same_target (dest, "nbd+unix:///vm1?socket=/s"));
    g_assert_false (vmr_destination_same_target (dest, "/srv/vm1.raw"));
    g_assert_false (vmr_destination_same_target (dest, "json:{\"driver\": \"nbd\"}"));
    g_assert_false (vmr_destination_same_target (dest, NULL));
    g_assert_false (vmr_destination_same_target (file, "nbd://store/vm1"));
}

/* what can be told without a connection: in use, and TLS credentials that are there */
static void
test_destination_nbd_check (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-nbd-XXXXXX", NULL);
    const gchar *files[] = { "ca-cert.pem", "client-cert.pem", "client-key.pem" };
    const gchar *in_use[] = { "/srv/a.raw", "nbd://store:10809/vm1", NULL };
    VmrDestinationNbdOptions with_dir = { dir, 0 };
    g_autoptr (VmrDestination) used = vmr_destination_new ("nbd://store/vm1", NULL, FALSE, NULL);
    g_autoptr (VmrDestination) free_export
        = vmr_destination_new ("nbd://store/vm2", NULL, FALSE, NULL);
    g_autoptr (VmrDestination) no_creds
        = vmr_destination_new ("nbds://store/vm2", NULL, FALSE, NULL);
    g_autoptr (VmrDestination) creds
        = vmr_destination_new_full ("nbds://store/vm2", NULL, FALSE, &with_dir, NULL);
    g_autoptr (GError) error = NULL;
    guint64 size = 1;

    g_assert_false (vmr_destination_check (used, 0, in_use, &size, &error));
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_cmpstr (error->message, ==,
                     "destination nbd://store:10809/vm1 is a disk of the domain already");
    g_clear_error (&error);
    g_assert_true (vmr_destination_check (free_export, 1 << 30, in_use, &size, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (size, ==, 0);

    g_assert_false (vmr_destination_check (no_creds, 0, NULL, NULL, &error));
    g_assert_nonnull (strstr (error->message, "asks for TLS but no credentials"));
    g_clear_error (&error);
    for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
        g_autofree gchar *path = g_build_filename (dir, files[i], NULL);
        g_autofree gchar *expected
            = g_strdup_printf ("TLS credentials directory %s has no %s", dir, files[i]);

        g_assert_false (vmr_destination_check (creds, 0, NULL, NULL, &error));
        g_assert_cmpstr (error->message, ==, expected);
        g_clear_error (&error);
        g_assert_true (g_file_set_contents (path, "x", -1, NULL));
    }
    g_assert_true (vmr_destination_check (creds, 0, NULL, NULL, &error));
    g_assert_no_error (error);
    for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
        g_autofree gchar *path = g_build_filename (dir, files[i], NULL);

        g_assert_cmpint (g_unlink (path), ==, 0);
    }
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

static const struct {
    const gchar *uri;
    const gchar *file; /* the protocol node blockdev-add gets */
    const gchar *tls;  /* the object-add arguments, NULL for none */
} blockdev_cases[] = {
    { "nbd://store:10810/vm%201",
      "{\"driver\":\"nbd\",\"server\":{\"type\":\"inet\",\"host\":\"store\",\"port\":\"10810\"},"
      "\"export\":\"vm 1\",\"reconnect-delay\":7,\"node-name\":\"vmr-3-dst-file\"}",
      NULL },
    { "nbd+unix:///vm1?socket=/run/s.sock",
      "{\"driver\":\"nbd\",\"server\":{\"type\":\"unix\",\"path\":\"/run/s.sock\"},"
      "\"export\":\"vm1\",\"reconnect-delay\":7,\"node-name\":\"vmr-3-dst-file\"}",
      NULL },
    { "nbds://store/vm1",
      "{\"driver\":\"nbd\",\"server\":{\"type\":\"inet\",\"host\":\"store\",\"port\":\"10809\"},"
      "\"export\":\"vm1\",\"reconnect-delay\":7,\"tls-creds\":\"vmr-3-dst-tls\","
      "\"node-name\":\"vmr-3-dst-file\"}",
      "{\"qom-type\":\"tls-creds-x509\",\"id\":\"vmr-3-dst-tls\",\"dir\":\"/etc/pki/qemu\","
      "\"endpoint\":\"client\",\"verify-peer\":true}" },
};

/* what the preflight found: a server that zeroes and trims */
static const VmrNbdExportFacts zeroing = { 16 << 20, FALSE, TRUE, TRUE, TRUE, TRUE, TRUE, 0 };

static void
test_destination_nbd_blockdev_add (void)
{
    g_autoptr (VmrDisk) source = vmr_disk_new ();

    source->size = 8 << 20;
    source->cache_direct = TRUE;
    for (guint i = 0; i < G_N_ELEMENTS (blockdev_cases); i++) {
        g_autoptr (VmrDestination) dest
            = vmr_destination_new_full (blockdev_cases[i].uri, NULL, FALSE, &options, NULL);
        g_autoptr (JsonObject) args
            = vmr_destination_to_blockdev_add (dest, "vmr-3-dst", source, &zeroing);
        g_autoptr (JsonObject) tls = vmr_destination_to_tls_object_add (dest, "vmr-3-dst");
        g_autofree gchar *text = json_text (args);
        g_autofree gchar *expected = g_strdup_printf (
            "{\"driver\":\"raw\",\"node-name\":\"vmr-3-dst\",\"file\":%s,\"cache\":{\"direct\":"
            "true,\"no-flush\":false},\"discard\":\"unmap\",\"detect-zeroes\":\"unmap\","
            "\"size\":8388608}",
            blockdev_cases[i].file);

        g_test_message ("case: %s", blockdev_cases[i].uri);
        g_assert_cmpstr (text, ==, expected);
        if (blockdev_cases[i].tls == NULL) {
            g_assert_null (tls);
        } else {
            g_autofree gchar *tls_text = json_text (g_steal_pointer (&tls));

            g_assert_cmpstr (tls_text, ==, blockdev_cases[i].tls);
        }
    }
}

/* the zero capabilities of a preflight -> the raw node's detect-zeroes, and what it costs */
static const struct {
    gboolean known; /* FALSE: no facts (NULL) */
    gboolean can_zero;
    gboolean can_fast_zero;
    gboolean can_trim;
    const gchar *detect_zeroes; /* NULL: none given, QEMU's default (off) */
    const gchar *fallback;      /* a word of the cost line, NULL for none */
} zero_cases[] = {
    { TRUE, TRUE, TRUE, TRUE, "unmap", NULL },
    /* a fast zero is a hint only: the mirror never asks for one */
    { TRUE, TRUE, FALSE, TRUE, "unmap", NULL },
    { TRUE, TRUE, TRUE, FALSE, "unmap", "cannot trim" },
    { TRUE, FALSE, FALSE, TRUE, NULL, "written as data" },
    { TRUE, FALSE, FALSE, FALSE, NULL, "written as data" },
    { FALSE, FALSE, FALSE, FALSE, NULL, NULL },
};

static void
test_destination_nbd_zeroes (void)
{
    g_autoptr (VmrDisk) source = vmr_disk_new ();
    g_autoptr (VmrDestination) dest
        = vmr_destination_new ("nbd+unix:///vm1?socket=/run/s.sock", NULL, FALSE, NULL);

    source->size = 8 << 20;
    for (guint i = 0; i < G_N_ELEMENTS (zero_cases); i++) {
        VmrNbdExportFacts facts = zeroing;
        const VmrNbdExportFacts *given = zero_cases[i].known ? &facts : NULL;
        g_autoptr (JsonObject) args = NULL;
        const gchar *fallback;

        facts.can_zero = zero_cases[i].can_zero;
        facts.can_fast_zero = zero_cases[i].can_fast_zero;
        facts.can_trim = zero_cases[i].can_trim;
        args = vmr_destination_to_blockdev_add (dest, "vmr-3-dst", source, given);
        fallback = vmr_destination_nbd_zero_fallback (given);
        g_test_message ("case %u", i);
        /* discard=unmap always: it is what makes the mirror zero with trim */
        g_assert_cmpstr (json_object_get_string_member (args, "discard"), ==, "unmap");
        g_assert_cmpstr (vmr_destination_nbd_detect_zeroes (given), ==,
                         zero_cases[i].detect_zeroes);
        if (zero_cases[i].detect_zeroes == NULL)
            g_assert_false (json_object_has_member (args, "detect-zeroes"));
        else
            g_assert_cmpstr (json_object_get_string_member (args, "detect-zeroes"), ==,
                             zero_cases[i].detect_zeroes);
        if (zero_cases[i].fallback == NULL)
            g_assert_null (fallback);
        else
            g_assert_nonnull (strstr (fallback, zero_cases[i].fallback));
    }
}

static void
test_destination_nbd_libvirt_xml (void)
{
    g_autoptr (VmrDestination) tcp
        = vmr_destination_new_full ("nbds://store:10810/a'b", NULL, FALSE, &options, NULL);
    g_autoptr (VmrDestination) unix_socket
        = vmr_destination_new ("nbd+unix:///vm1?socket=/run/s.sock", NULL, FALSE, NULL);
    g_autofree gchar *tcp_xml = vmr_destination_to_libvirt_xml (tcp);
    g_autofree gchar *unix_xml = vmr_destination_to_libvirt_xml (unix_socket);
    g_autofree gchar *wrapped = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    VmrLibvirtDisk *disk;

    g_assert_cmpstr (tcp_xml, ==,
                     "<disk type='network'><driver type='raw'/><source protocol='nbd' "
                     "name='a&apos;b' tls='yes'><host name='store' port='10810'/><reconnect "
                     "delay='7'/></source></disk>");
    g_assert_cmpstr (unix_xml, ==,
                     "<disk type='network'><driver type='raw'/><source protocol='nbd' "
                     "name='vm1' tls='no'><host transport='unix' socket='/run/s.sock'/>"
                     "</source></disk>");
    /* they read back as the exports they name */
    wrapped = g_strdup_printf ("<domain><devices>%s%s</devices></domain>", tcp_xml, unix_xml);
    disks = vmr_libvirt_xml_parse_disks (wrapped, NULL);
    g_assert_nonnull (disks);
    g_assert_cmpuint (disks->len, ==, 2);
    disk = g_ptr_array_index (disks, 0);
    g_assert_cmpstr (disk->type, ==, "network");
    g_assert_true (vmr_destination_same_target (tcp, disk->path));
    g_assert_cmpstr (disk->format, ==, "raw");
    disk = g_ptr_array_index (disks, 1);
    g_assert_true (vmr_destination_same_target (unix_socket, disk->path));
    g_assert_false (vmr_destination_same_target (tcp, disk->path));
}

/* a persistent definition moved to the export: a network disk with the export's source */
static void
test_destination_nbd_persist (void)
{
    const gchar *xml = "<domain><devices><disk type='file' device='disk'>"
                       "<driver name='qemu' type='qcow2'/><source file='/srv/a.qcow2' index='1'>"
                       "<seclabel model='dac' relabel='no'/></source>"
                       "<backingStore type='file'><source file='/srv/base.qcow2'/></backingStore>"
                       "<target dev='vda' bus='virtio'/></disk></devices></domain>";
    g_autoptr (VmrDestination) dest
        = vmr_destination_new_full ("nbd://store:10810/vm1", NULL, FALSE, &options, NULL);
    g_autofree gchar *source = vmr_destination_to_libvirt_source (dest);
    g_autoptr (VmrDestination) file = vmr_destination_new ("/srv/b.raw", NULL, TRUE, NULL);
    g_autofree gchar *file_source = vmr_destination_to_libvirt_source (file);
    g_autoptr (GError) error = NULL;
    g_autofree gchar *moved
        = vmr_libvirt_xml_set_disk_network_source (xml, "vda", source, "raw", &error);
    g_autoptr (GPtrArray) disks = NULL;
    VmrLibvirtDisk *disk;

    g_assert_no_error (error);
    g_assert_null (file_source);
    g_assert_cmpstr (moved, ==,
                     "<domain><devices><disk type='network' device='disk'>"
                     "<driver name='qemu' type='raw'/><source protocol='nbd' name='vm1' "
                     "tls='no'><host name='store' port='10810'/><reconnect delay='7'/></source>"
                     "<target dev='vda' bus='virtio'/></disk></devices></domain>\n");
    disks = vmr_libvirt_xml_parse_disks (moved, &error);
    g_assert_no_error (error);
    disk = vmr_libvirt_xml_find_disk (disks, "vda");
    g_assert_cmpstr (disk->type, ==, "network");
    g_assert_true (vmr_destination_same_target (dest, disk->path));
}

static void
test_destination_nbd_facts (void)
{
    VmrNbdExportFacts facts = { 1 << 30, TRUE, TRUE, TRUE, FALSE, TRUE, TRUE, 4096 };
    g_autoptr (JsonObject) obj = vmr_destination_facts_to_json (&facts);
    g_autofree VmrNbdExportFacts *back = vmr_destination_facts_from_json (obj);
    g_autofree gchar *text = json_text (json_object_ref (obj));

    g_assert_cmpstr (text, ==,
                     "{\"size\":1073741824,\"tls\":true,\"structured-replies\":true,"
                     "\"can-zero\":true,\"can-fast-zero\":false,\"can-trim\":true,"
                     "\"can-flush\":true,\"preferred-block-size\":4096,"
                     "\"detect-zeroes\":\"unmap\",\"zero-fallback\":null}");
    g_assert_nonnull (back);
    g_assert_cmpmem (back, sizeof *back, &facts, sizeof facts);
    g_assert_null (vmr_destination_facts_from_json (NULL));

    /* a server without write zeroes: off, and the line that says what it costs */
    facts.can_zero = FALSE;
    g_clear_pointer (&obj, json_object_unref);
    obj = vmr_destination_facts_to_json (&facts);
    g_assert_cmpstr (json_object_get_string_member (obj, "detect-zeroes"), ==, "off");
    g_assert_cmpstr (json_object_get_string_member (obj, "zero-fallback"), ==,
                     vmr_destination_nbd_zero_fallback (&facts));
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/destination-nbd/new", test_destination_nbd_new);
    g_test_add_func ("/destination-nbd/same-target", test_destination_nbd_same_target);
    g_test_add_func ("/destination-nbd/check", test_destination_nbd_check);
    g_test_add_func ("/destination-nbd/blockdev-add", test_destination_nbd_blockdev_add);
    g_test_add_func ("/destination-nbd/zeroes", test_destination_nbd_zeroes);
    g_test_add_func ("/destination-nbd/libvirt-xml", test_destination_nbd_libvirt_xml);
    g_test_add_func ("/destination-nbd/persist", test_destination_nbd_persist);
    g_test_add_func ("/destination-nbd/facts", test_destination_nbd_facts);
    return g_test_run ();
}
