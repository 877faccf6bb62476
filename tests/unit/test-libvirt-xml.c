#define G_LOG_DOMAIN "vmr-test"

#include <gio/gio.h>

#include "libvirt-xml.h"

/* a live definition as libvirt 11 writes it, trimmed: a raw disk on an I/O
 * thread in the middle of a copy, a qcow2 disk with a per-queue mapping and
 * a backing chain, a block device, a cdrom and a network disk */
static const gchar live_xml[]
    = "<domain type='qemu' id='3'>\n"
      "  <name>web01</name>\n"
      "  <uuid>2b3c8f2e-6f1d-4c55-9a0e-4bb4ae5c5c01</uuid>\n"
      "  <description>disks &amp; more: &lt;disk&gt; here is text</description>\n"
      "  <iothreads>2</iothreads>\n"
      "  <devices>\n"
      "    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw' cache='none' io='native' iothread='1' "
      "discard='unmap'/>\n"
      "      <source file='/srv/old/web01.raw' index='1'/>\n"
      "      <backingStore/>\n"
      "      <mirror type='file' file='/srv/new/web01.raw' format='raw' job='copy' "
      "ready='yes'>\n"
      "        <format type='raw'/>\n"
      "        <source file='/srv/new/web01.raw' index='2'/>\n"
      "        <backingStore/>\n"
      "      </mirror>\n"
      "      <target dev='vda' bus='virtio'/>\n"
      "      <alias name='virtio-disk0'/>\n"
      "    </disk>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='qcow2' queues='2'>\n"
      "        <iothreads>\n"
      "          <iothread id='1'><queue id='0'/></iothread>\n"
      "          <iothread id='2'><queue id='1'/></iothread>\n"
      "        </iothreads>\n"
      "      </driver>\n"
      "      <source file='/srv/old/data.qcow2' index='3'/>\n"
      "      <backingStore type='file' index='4'>\n"
      "        <format type='raw'/>\n"
      "        <source file='/srv/old/base.raw'/>\n"
      "        <backingStore/>\n"
      "      </backingStore>\n"
      "      <target dev='vdb' bus='virtio'/>\n"
      "      <alias name='virtio-disk1'/>\n"
      "    </disk>\n"
      "    <disk type='block' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source dev='/dev/vg0/logs'/>\n"
      "      <target dev='sda' bus='scsi'/>\n"
      "      <readonly/>\n"
      "    </disk>\n"
      "    <disk type='file' device='cdrom'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <target dev='sdb' bus='sata'/>\n"
      "      <readonly/>\n"
      "    </disk>\n"
      "    <disk type='network' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source protocol='nbd' name='export'><host name='nbd.example' port='10809'/>"
      "</source>\n"
      "      <target dev='vdc' bus='virtio'/>\n"
      "    </disk>\n"
      "  </devices>\n"
      "  <metadata><app:disk xmlns:app='urn:example'><app:target dev='vda'/></app:disk>"
      "</metadata>\n"
      "</domain>\n";

typedef struct {
    const gchar *target;
    const gchar *device;
    const gchar *type;
    const gchar *path;
    const gchar *format;
    const gchar *alias;
    const gchar *iothreads; /* the list, comma-separated here */
    gboolean read_only;
    const gchar *mirror_path;
    gboolean mirror_ready;
    const gchar *discard; /* <driver discard>, NULL when not given */
} DiskCase;

static const DiskCase live_disks[] = {
    { "vda", "disk", "file", "/srv/old/web01.raw", "raw", "virtio-disk0", "iothread1", FALSE,
      "/srv/new/web01.raw", TRUE, "unmap" },
    { "vdb", "disk", "file", "/srv/old/data.qcow2", "qcow2", "virtio-disk1", "iothread1,iothread2",
      FALSE, NULL, FALSE },
    { "sda", "disk", "block", "/dev/vg0/logs", "raw", NULL, NULL, TRUE, NULL, FALSE },
    { "sdb", "cdrom", "file", NULL, "raw", NULL, NULL, TRUE, NULL, FALSE },
    { "vdc", "disk", "network", "nbd://nbd.example:10809/export", "raw", NULL, NULL, FALSE, NULL,
      FALSE },
};

static void
assert_disks (GPtrArray *disks, const DiskCase *cases, guint n_cases)
{
    g_assert_nonnull (disks);
    g_assert_cmpuint (disks->len, ==, n_cases);
    for (guint i = 0; i < n_cases; i++) {
        const DiskCase *c = &cases[i];
        VmrLibvirtDisk *disk = g_ptr_array_index (disks, i);

        g_test_message ("disk %s", c->target);
        g_assert_cmpstr (disk->target, ==, c->target);
        g_assert_cmpstr (disk->device, ==, c->device);
        g_assert_cmpstr (disk->type, ==, c->type);
        g_assert_cmpstr (disk->path, ==, c->path);
        g_assert_cmpstr (disk->format, ==, c->format);
        g_assert_cmpstr (disk->alias, ==, c->alias);
        {
            g_autofree gchar *joined
                = disk->iothreads != NULL ? g_strjoinv (",", disk->iothreads) : NULL;
            g_auto (GStrv) expected
                = c->iothreads != NULL ? g_strsplit (c->iothreads, ",", -1) : NULL;

            /* the list, and its first as the disk's I/O thread */
            g_assert_cmpstr (joined, ==, c->iothreads);
            g_assert_cmpstr (disk->iothread, ==, expected != NULL ? expected[0] : NULL);
        }
        g_assert_cmpint (disk->read_only, ==, c->read_only);
        g_assert_cmpstr (disk->mirror_path, ==, c->mirror_path);
        g_assert_cmpstr (disk->discard, ==, c->discard);
        g_assert_cmpint (disk->mirror_ready, ==, c->mirror_ready);
    }
}

static void
test_parse_live (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = vmr_libvirt_xml_parse_disks (live_xml, &error);

    g_assert_no_error (error);
    assert_disks (disks, live_disks, G_N_ELEMENTS (live_disks));
    g_assert_true (vmr_libvirt_xml_find_disk (disks, "vdb") == g_ptr_array_index (disks, 1));
    g_assert_null (vmr_libvirt_xml_find_disk (disks, "vdz"));
}

static const struct {
    const gchar *name;
    const gchar *xml;
    gboolean ok;
    guint n_disks;
} parse_cases[] = {
    { "no devices", "<domain><name>x</name></domain>", TRUE, 0 },
    { "disk outside devices", "<domain><disk><target dev='vda'/></disk></domain>", TRUE, 0 },
    { "nested domain", "<x><domain><devices><disk/></devices></domain></x>", TRUE, 0 },
    { "one disk", "<domain><devices><disk><target dev='vda'/></disk></devices></domain>", TRUE, 1 },
    { "empty", "", FALSE, 0 },
    { "garbage", "this is not XML", FALSE, 0 },
    { "unclosed", "<domain><devices><disk>", FALSE, 0 },
    { "mismatched", "<domain><devices></domain>", FALSE, 0 },
};

static void
test_parse_cases (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (parse_cases); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) disks = NULL;

        g_test_message ("case: %s", parse_cases[i].name);
        disks = vmr_libvirt_xml_parse_disks (parse_cases[i].xml, &error);
        if (parse_cases[i].ok) {
            g_assert_no_error (error);
            g_assert_cmpuint (disks->len, ==, parse_cases[i].n_disks);
        } else {
            g_assert_null (disks);
            g_assert_error (error, G_MARKUP_ERROR, error->code);
            g_assert_true (g_str_has_prefix (error->message, "invalid domain XML: "));
        }
    }
}

/*
 * XML that libvirt does not write, with an element given twice in one disk:
 * the last one counts, and the first one's value is freed (a second
 * <mirror> leaked the first one's path; the fuzzer found it)
 */
static const gchar repeated_xml[]
    = "<domain type='qemu'>\n"
      "  <devices>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <driver name='qemu' type='qcow2'/>\n"
      "      <source file='/srv/old/a.raw'/>\n"
      "      <source file='/srv/old/b.qcow2'/>\n"
      "      <mirror type='file' file='/srv/new/a.raw' ready='yes'/>\n"
      "      <mirror type='file' file='/srv/new/b.qcow2'/>\n"
      "      <target dev='vdz' bus='virtio'/>\n"
      "      <target dev='vda' bus='virtio'/>\n"
      "      <alias name='virtio-disk9'/>\n"
      "      <alias name='virtio-disk0'/>\n"
      "    </disk>\n"
      "  </devices>\n"
      "</domain>\n";

static const DiskCase repeated_disks[] = {
    { "vda", "disk", "file", "/srv/old/b.qcow2", "qcow2", "virtio-disk0", NULL, FALSE,
      "/srv/new/b.qcow2", FALSE },
};

static void
test_parse_repeated (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = vmr_libvirt_xml_parse_disks (repeated_xml, &error);

    g_assert_no_error (error);
    assert_disks (disks, repeated_disks, G_N_ELEMENTS (repeated_disks));
}

/*
 * SCSI disks run on their controller's I/O thread: by <address controller>,
 * controller 0 without one; the controllers come after the disks, as libvirt
 * writes them; another device's <driver> is not a controller's
 */
static const gchar scsi_xml[]
    = "<domain type='qemu'>\n"
      "  <iothreads>2</iothreads>\n"
      "  <devices>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source file='/srv/a.raw'/>\n"
      "      <target dev='sda' bus='scsi'/>\n"
      "    </disk>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source file='/srv/b.raw'/>\n"
      "      <target dev='sdb' bus='scsi'/>\n"
      "      <address type='drive' controller='1' bus='0' target='0' unit='0'/>\n"
      "    </disk>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source file='/srv/c.raw'/>\n"
      "      <target dev='sdc' bus='scsi'/>\n"
      "      <address type='drive' controller='2' bus='0' target='0' unit='0'/>\n"
      "    </disk>\n"
      "    <disk type='file' device='disk'>\n"
      "      <driver name='qemu' type='raw'/>\n"
      "      <source file='/srv/d.raw'/>\n"
      "      <target dev='vda' bus='virtio'/>\n"
      "    </disk>\n"
      "    <controller type='scsi' index='0' model='virtio-scsi'>\n"
      "      <driver iothread='2'/>\n"
      "    </controller>\n"
      "    <controller type='scsi' index='1' model='virtio-scsi'/>\n"
      "    <interface type='network'><driver iothread='1'/></interface>\n"
      "    <controller type='usb' index='2'><driver iothread='1'/></controller>\n"
      "  </devices>\n"
      "</domain>\n";

static const DiskCase scsi_disks[] = {
    { "sda", "disk", "file", "/srv/a.raw", "raw", NULL, "iothread2", FALSE, NULL, FALSE },
    { "sdb", "disk", "file", "/srv/b.raw", "raw", NULL, NULL, FALSE, NULL, FALSE },
    { "sdc", "disk", "file", "/srv/c.raw", "raw", NULL, NULL, FALSE, NULL, FALSE },
    { "vda", "disk", "file", "/srv/d.raw", "raw", NULL, NULL, FALSE, NULL, FALSE },
};

static void
test_parse_scsi (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = vmr_libvirt_xml_parse_disks (scsi_xml, &error);

    g_assert_no_error (error);
    assert_disks (disks, scsi_disks, G_N_ELEMENTS (scsi_disks));
}

static const gchar inactive_xml[] = "<domain type='qemu'>\n"
                                    "  <name>web01</name>\n"
                                    "  <!-- kept as it is -->\n"
                                    "  <devices>\n"
                                    "    <disk type='file' device='disk'>\n"
                                    "      <driver name='qemu' type='qcow2' iothread='1'/>\n"
                                    "      <source file='/srv/old/web01.qcow2'>\n"
                                    "        <seclabel model='dac' relabel='no'/>\n"
                                    "      </source>\n"
                                    "      <backingStore type='file'>\n"
                                    "        <format type='raw'/>\n"
                                    "        <source file='/srv/old/base.raw'/>\n"
                                    "      </backingStore>\n"
                                    "      <target dev='vda' bus='virtio'/>\n"
                                    "      <address type='pci' bus='0x02' slot='0x00'/>\n"
                                    "    </disk>\n"
                                    "    <disk type='file' device='disk'>\n"
                                    "      <driver name='qemu' type='raw'/>\n"
                                    "      <source file='/srv/old/other.raw'/>\n"
                                    "      <target dev='vdb' bus='virtio'/>\n"
                                    "    </disk>\n"
                                    "  </devices>\n"
                                    "</domain>\n";

static void
test_set_disk_source (void)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *file = NULL;
    g_autofree gchar *block = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    VmrLibvirtDisk *disk;

    file = vmr_libvirt_xml_set_disk_source (inactive_xml, "vda", "/srv/new/web01 & co.raw", FALSE,
                                            "raw", &error);
    g_assert_no_error (error);
    g_assert_cmpstr (file, ==,
                     "<domain type='qemu'>\n"
                     "  <name>web01</name>\n"
                     "  <!-- kept as it is -->\n"
                     "  <devices>\n"
                     "    <disk type='file' device='disk'>\n"
                     "      <driver name='qemu' type='raw' iothread='1'/>\n"
                     "      <source file='/srv/new/web01 &amp; co.raw'>\n"
                     "        <seclabel model='dac' relabel='no'/>\n"
                     "      </source>\n"
                     "      \n"
                     "      <target dev='vda' bus='virtio'/>\n"
                     "      <address type='pci' bus='0x02' slot='0x00'/>\n"
                     "    </disk>\n"
                     "    <disk type='file' device='disk'>\n"
                     "      <driver name='qemu' type='raw'/>\n"
                     "      <source file='/srv/old/other.raw'/>\n"
                     "      <target dev='vdb' bus='virtio'/>\n"
                     "    </disk>\n"
                     "  </devices>\n"
                     "</domain>\n");

    /* the second disk onto a block device: type and attribute change */
    block = vmr_libvirt_xml_set_disk_source (file, "vdb", "/dev/vg0/other", TRUE, "qcow2", &error);
    g_assert_no_error (error);
    disks = vmr_libvirt_xml_parse_disks (block, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (disks->len, ==, 2);
    disk = vmr_libvirt_xml_find_disk (disks, "vdb");
    g_assert_cmpstr (disk->type, ==, "block");
    g_assert_cmpstr (disk->path, ==, "/dev/vg0/other");
    g_assert_cmpstr (disk->format, ==, "qcow2");
    disk = vmr_libvirt_xml_find_disk (disks, "vda");
    g_assert_cmpstr (disk->path, ==, "/srv/new/web01 & co.raw");
    g_assert_cmpstr (disk->iothread, ==, "iothread1");
}

static void
test_set_disk_source_errors (void)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *xml = NULL;

    xml = vmr_libvirt_xml_set_disk_source (inactive_xml, "vdz", "/x", FALSE, "raw", &error);
    g_assert_null (xml);
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_clear_error (&error);
    xml = vmr_libvirt_xml_set_disk_source ("<domain><devices><disk><target dev='vda'/></disk>"
                                           "</devices></domain>",
                                           "vda", "/x", FALSE, "raw", &error);
    g_assert_null (xml);
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_clear_error (&error);
    xml = vmr_libvirt_xml_set_disk_source ("<domain>", "vda", "/x", FALSE, "raw", &error);
    g_assert_null (xml);
    g_assert_error (error, G_MARKUP_ERROR, error->code);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/libvirt-xml/parse-live", test_parse_live);
    g_test_add_func ("/libvirt-xml/parse-cases", test_parse_cases);
    g_test_add_func ("/libvirt-xml/parse-scsi", test_parse_scsi);
    g_test_add_func ("/libvirt-xml/parse-repeated", test_parse_repeated);
    g_test_add_func ("/libvirt-xml/set-disk-source", test_set_disk_source);
    g_test_add_func ("/libvirt-xml/set-disk-source-errors", test_set_disk_source_errors);
    return g_test_run ();
}
