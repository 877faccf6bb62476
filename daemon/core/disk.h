/*
 * What the daemon knows of a guest disk, as a backend discovered it.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct {
    gchar *id;         /* qdev id of the guest device, e.g. "disk0" or "virtio-disk0" */
    gchar *node;       /* top block node the device uses */
    gchar *file_node;  /* protocol node below it, NULL if none */
    gchar *format;     /* driver of the top node: "raw", "qcow2", ... */
    gchar *path;       /* image file name */
    guint64 size;      /* virtual size, bytes */
    guint64 allocated; /* bytes a full copy writes: the image's allocated bytes as QEMU or
                        * libvirt report them (actual-size, allocation), the virtual size
                        * for a block device or when they do not say */
    gchar *iothread;   /* I/O thread id, NULL for the main loop; the first of @iothreads */
    GStrv iothreads;   /* every I/O thread serving the device (a per-queue mapping may name
                        * several), NULL for the main loop */

    /* cache mode of the top node and of its protocol node */
    gboolean cache_direct;
    gboolean cache_no_flush;
    gboolean file_cache_direct;
    gboolean file_cache_no_flush;
    gboolean read_only;
} VmrDisk;

VmrDisk *vmr_disk_new (void);
void vmr_disk_free (VmrDisk *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrDisk, vmr_disk_free)

/* the protocol's disk object; @job_id may be NULL */
JsonObject *vmr_disk_to_json (const VmrDisk *self, const gchar *job_id);

/* the disk named @name, by qdev id first and then by node name; NULL if none */
VmrDisk *vmr_disk_lookup (GPtrArray *disks, const gchar *name);

G_END_DECLS
