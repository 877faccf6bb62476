/*
 * The parts of libvirt's domain XML that virt-mirror reads and writes: the
 * disks of a domain and a disk's source in the persistent definition (the
 * destination of a block copy is destination.c's). Pure text handling (GMarkup), no libvirt calls,
 * so that it builds and is tested without libvirt.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* one <disk> of <devices> */
typedef struct {
    gchar *target;   /* <target dev>, e.g. "vda": the name users give; libvirt
                      * requires it, NULL only in XML that libvirt did not write */
    gchar *device;   /* "disk", "cdrom", "floppy", "lun" */
    gchar *type;     /* "file", "block", "network", "volume", ... */
    gchar *path;     /* <source file> or <source dev>; NULL for other types or no medium */
    gchar *format;   /* <driver type>, e.g. "raw"; NULL when not given */
    gchar *discard;  /* <driver discard>, "unmap" or "ignore"; NULL when not given */
    gchar *alias;    /* <alias name> (live XML only), e.g. "virtio-disk0" */
    gchar *iothread; /* QEMU's I/O thread id, e.g. "iothread1": the first of @iothreads */
    GStrv iothreads; /* every I/O thread serving the disk (a per-queue mapping names
                      * several); NULL for the main loop */
    gboolean read_only;
    gchar *mirror_path;    /* destination of a running block copy, NULL if none */
    gboolean mirror_ready; /* <mirror ready='yes'>: the copy is in sync */
} VmrLibvirtDisk;

void vmr_libvirt_disk_free (VmrLibvirtDisk *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrLibvirtDisk, vmr_libvirt_disk_free)

/*
 * The disks of the domain XML @xml, in document order: a GPtrArray of
 * VmrLibvirtDisk. Sets G_MARKUP_ERROR when @xml is not well-formed.
 */
GPtrArray *vmr_libvirt_xml_parse_disks (const gchar *xml, GError **error);

/* the disk with target @target in @disks (transfer none), or NULL */
VmrLibvirtDisk *vmr_libvirt_xml_find_disk (GPtrArray *disks, const gchar *target);

/*
 * @xml (a domain definition) with the disk @target on @path in @format: the
 * disk's type, <source> and <driver type> are rewritten and a <backingStore>
 * is dropped (a full copy has none); everything else is kept. Sets
 * G_MARKUP_ERROR for XML that is not well-formed and G_IO_ERROR_NOT_FOUND
 * when there is no such disk.
 */
gchar *vmr_libvirt_xml_set_disk_source (const gchar *xml, const gchar *target, const gchar *path,
                                        gboolean block, const gchar *format, GError **error);

/*
 * As vmr_libvirt_xml_set_disk_source(), for a network disk: the disk's type
 * becomes "network" and its <source> (with all it held) is replaced by
 * @source, a whole <source protocol=...>...</source> element.
 */
gchar *vmr_libvirt_xml_set_disk_network_source (const gchar *xml, const gchar *target,
                                                const gchar *source, const gchar *format,
                                                GError **error);

G_END_DECLS
