/*
 * What the QMP backend reads out of QEMU's replies and events, and out of
 * /proc for its I/O threads: pure functions from JSON (or text) to the
 * daemon's types, with no monitor behind them. A reply is the "return"
 * member QEMU sent (what vmr_qmp_client_execute_finish() gives). Nothing
 * here raises a critical, whatever QEMU sent: a reply of the wrong type is a
 * VMR_ERROR_PROTOCOL error naming the command, a member that is missing or of
 * another type reads as absent (see vmr-json.h).
 */
#pragma once

#include <json-glib/json-glib.h>

#include "backend.h"
#include "destination.h"
#include "disk.h"
#include "load-history.h"

G_BEGIN_DECLS

/* @reply as an array, borrowed from it; VMR_ERROR_PROTOCOL naming @command otherwise */
JsonArray *vmr_qmp_parse_reply_array (JsonNode *reply, const gchar *command, GError **error);

/* TRUE if the "QMP" object of a greeting names a QEMU version */
gboolean vmr_qmp_parse_greeting_is_qemu (JsonObject *greeting);

/* the QEMU major version the "QMP" object of a greeting names, 0 if none */
guint vmr_qmp_parse_greeting_major (JsonObject *greeting);

/*
 * The plain file name of an image name: QEMU names an image "json:{...}"
 * when it was opened with options beyond a file name, which then sits in the
 * innermost "file" object. Anything else comes back as it is. Free with g_free().
 */
gchar *vmr_qmp_parse_plain_filename (const gchar *name);

/* the image file of a query-block "inserted" object, plain; NULL for none */
gchar *vmr_qmp_parse_inserted_path (JsonObject *inserted);

/*
 * The qdev id of a device from its QOM path ("/machine/peripheral/disk0/
 * virtio-backend" -> "disk0"), its plain id ("disk1"), or failing both, its
 * drive name @device and then its node name @node; NULL when all fail.
 * Free with g_free().
 */
gchar *vmr_qmp_parse_qdev_id (const gchar *qdev, const gchar *device, const gchar *node);

/*
 * The disks of a query-block reply, in its order: a GPtrArray of VmrDisk
 * with id, node, format, path, size, cache mode and read-only set. Drives
 * with no medium are left out. @qdev_paths (may be NULL) receives, per disk,
 * the device's "qdev" (a QOM path or a plain id, NULL if none): the I/O
 * thread look-up starts there.
 */
GPtrArray *vmr_qmp_parse_block (JsonNode *reply, GPtrArray **qdev_paths, GError **error);

/*
 * Sets file_node and the file cache mode of each of @disks from a (flat)
 * query-named-block-nodes reply: the protocol node ("file" or
 * "host_device") of the same image below the disk's top node.
 */
gboolean vmr_qmp_parse_file_nodes (JsonNode *reply, GPtrArray *disks, GError **error);

/*
 * In @nodes, a query-named-block-nodes reply, the virtual size of the node
 * @node_name (0 if QEMU gave none). FALSE if there is no such node.
 */
gboolean vmr_qmp_parse_node_size (JsonArray *nodes, const gchar *node_name, guint64 *size);

/* the I/O thread id in the reply to qom-get of "iothread" ("/objects/io0" -> "io0"), or NULL */
gchar *vmr_qmp_parse_iothread (JsonNode *reply);

/* the I/O threads of an "iothread-vq-mapping" reply, each once, in order; NULL for none */
GStrv vmr_qmp_parse_vq_mapping (JsonNode *reply);

/*
 * The QOM path of the controller above the bus in a reply to qom-get of
 * "parent_bus" ("/machine/peripheral/scsi0/virtio-backend/scsi0.0" ->
 * "/machine/peripheral/scsi0/virtio-backend"), or NULL when there is none.
 */
gchar *vmr_qmp_parse_bus_controller (JsonNode *reply);

/* makes each disk's single I/O thread and its list agree, whichever QEMU reported */
void vmr_qmp_parse_settle_iothreads (GPtrArray *disks);

/* one I/O thread of query-iothreads */
typedef struct {
    gchar *id;
    gint64 thread_id; /* the kernel's thread id, 0 if QEMU gave none */
} VmrQmpIothread;

void vmr_qmp_iothread_free (VmrQmpIothread *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrQmpIothread, vmr_qmp_iothread_free)

/* the I/O threads of a query-iothreads reply, a GPtrArray of VmrQmpIothread; those with no id left
 * out */
GPtrArray *vmr_qmp_parse_iothreads (JsonNode *reply, GError **error);

/* the thread group (process) id in the text of /proc/TID/status; FALSE without one */
gboolean vmr_qmp_parse_proc_tgid (const gchar *status, gint64 *tgid);

/* utime + stime, in clock ticks, of the text of /proc/PID/task/TID/stat; FALSE if it is short */
gboolean vmr_qmp_parse_proc_ticks (const gchar *stat, guint64 *ticks);

/*
 * The guest's I/O counters of a query-blockstats reply: a GHashTable of disk
 * id (as vmr_qmp_parse_qdev_id() names it) -> VmrIoCounters *, both owned.
 * Entries of no device are left out: the counters follow the device, whose
 * node changes at the pivot.
 */
GHashTable *vmr_qmp_parse_blockstats (JsonNode *reply, GError **error);

/* one job of query-block-jobs */
typedef struct {
    gchar *id;           /* "device": the job id for jobs given one */
    gchar *status;       /* "running", "ready", "concluded", ...; NULL if QEMU gave none */
    gchar *error;        /* why it ended, NULL if it did not fail */
    guint64 total_bytes; /* "len" */
    guint64 done_bytes;  /* "offset" */
    guint64 speed;       /* bytes/s, 0 = unlimited */
    gboolean paused;
    gboolean ready;    /* in sync: QEMU's "ready" */
    gboolean no_space; /* stopped on ENOSPC of the target: "io-status" is "nospace" */
} VmrQmpBlockJob;

void vmr_qmp_block_job_free (VmrQmpBlockJob *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrQmpBlockJob, vmr_qmp_block_job_free)

/* the jobs of a query-block-jobs reply, a GPtrArray of VmrQmpBlockJob; those with no id left out */
GPtrArray *vmr_qmp_parse_block_jobs (JsonNode *reply, GError **error);

/* the last job of @jobs (from vmr_qmp_parse_block_jobs()) with @id, borrowed; NULL for none */
VmrQmpBlockJob *vmr_qmp_block_jobs_find (GPtrArray *jobs, const gchar *id);

/* @job as the core's progress; free with vmr_backend_progress_free() */
VmrBackendProgress *vmr_qmp_block_job_to_progress (const VmrQmpBlockJob *job);

/* ---- files passed by descriptor: QEMU's fd sets ---- */

/* the opaque of the fd set that passes the file @path: "virt-mirror PATH"; a new string */
gchar *vmr_qmp_parse_fdset_opaque (const gchar *path);

/* N of the name "/dev/fdset/N" QEMU opens an fd set by, or -1 for any other name */
gint64 vmr_qmp_parse_fdset_id (const gchar *filename);

/*
 * The fd sets of a query-fdsets reply that virt-mirror made (each with the
 * opaque of vmr_qmp_parse_fdset_opaque()): a table of fd set id (a
 * gint64 *) -> the path of its file. Empty for a reply of another shape.
 */
GHashTable *vmr_qmp_parse_fdsets (JsonNode *reply);

/*
 * @filename as the daemon names the file: the path of the fd set it names
 * when @fdsets (of vmr_qmp_parse_fdsets(), may be NULL) has it, else as it
 * is. A new string; NULL for a NULL @filename.
 */
gchar *vmr_qmp_parse_real_path (GHashTable *fdsets, const gchar *filename);

/*
 * The ids of the fd sets that some node of a (flat) query-named-block-nodes
 * reply was opened from, a set of gint64 *; empty for a reply of another
 * shape
 */
GHashTable *vmr_qmp_parse_fdsets_in_use (JsonNode *reply);

/*
 * Whether a query-block reply has a disk on the node @node_name and one on
 * the image of @dest, by vmr_destination_same_target() of its path as
 * @fdsets (may be NULL) makes it (either may be NULL: not looked for).
 */
gboolean vmr_qmp_parse_block_uses (JsonNode *reply, GHashTable *fdsets, const gchar *node_name,
                                   const VmrDestination *dest, gboolean *node_used,
                                   gboolean *path_used, GError **error);

/* what an event says of a block job */
typedef enum {
    VMR_QMP_JOB_EVENT_NONE,      /* not about a job, or nothing the backend follows */
    VMR_QMP_JOB_EVENT_READY,     /* BLOCK_JOB_READY, or JOB_STATUS_CHANGE to "ready" */
    VMR_QMP_JOB_EVENT_COMPLETED, /* BLOCK_JOB_COMPLETED without an error */
    VMR_QMP_JOB_EVENT_FAILED,    /* BLOCK_JOB_COMPLETED with one */
    VMR_QMP_JOB_EVENT_CANCELLED, /* BLOCK_JOB_CANCELLED */
    VMR_QMP_JOB_EVENT_IO_ERROR,  /* BLOCK_JOB_ERROR: one failed request */
    VMR_QMP_JOB_EVENT_CONCLUDED, /* JOB_STATUS_CHANGE to "concluded" */
} VmrQmpJobEventKind;

typedef struct {
    VmrQmpJobEventKind kind;
    const gchar *job_id;    /* borrowed from the event's data */
    const gchar *error;     /* FAILED: QEMU's reason */
    const gchar *operation; /* IO_ERROR: "read" or "write" */
} VmrQmpJobEvent;

/*
 * Reads the event @name with @data. FALSE (and @event's kind NONE) when it
 * names no job; TRUE with kind NONE for a job event the backend ignores.
 * The strings in @event are borrowed from @data.
 */
gboolean vmr_qmp_parse_job_event (const gchar *name, JsonObject *data, VmrQmpJobEvent *event);

/*
 * The request of a mirror that BLOCK_JOB_ERROR's @operation names: a mirror
 * reads the source and writes the destination. A static string
 */
const gchar *vmr_qmp_parse_mirror_request (const gchar *operation);

G_END_DECLS
