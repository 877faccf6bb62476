/*
 * libFuzzer harness: libvirt's domain XML, as libvirt-xml.c reads it (the
 * disks of a domain) and rewrites it (a disk's new source, after a pivot).
 */
#include "fuzz-common.h"
#include "libvirt-xml.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    g_autofree gchar *xml = g_strndup ((const gchar *) data, size);
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *target;

    disks = vmr_libvirt_xml_parse_disks (xml, &error);
    if (disks == NULL)
        return 0;
    /* the first disk's target, or one that is not there */
    target = disks->len > 0 ? ((VmrLibvirtDisk *) g_ptr_array_index (disks, 0))->target : "vda";
    if (target == NULL)
        target = "vda";
    (void) vmr_libvirt_xml_find_disk (disks, target);
    g_free (
        vmr_libvirt_xml_set_disk_source (xml, target, "/srv/new/disk.qcow2", FALSE, "qcow2", NULL));
    g_free (vmr_libvirt_xml_set_disk_source (xml, target, "/dev/vg0/disk", TRUE, NULL, NULL));
    g_free (vmr_libvirt_xml_set_disk_network_source (
        xml, target, "<source protocol='nbd' name='disk'><host name='store'/></source>", "raw",
        NULL));
    return 0;
}
