/*
 * The QMP vocabulary: every command the daemon sends to QEMU, built in one
 * place. A builder returns a VmrQmpCmd, the command's name with its
 * arguments; the QMP client runs it (vmr_qmp_client_run_async()) and the
 * libvirt backend sends the same JSON (vmr_qmp_cmd_to_string()) through
 * virDomainQemuMonitorCommand. Nothing outside this file spells a command.
 *
 * Typed functions, not a format string of "S:name" letters: the compiler
 * checks each argument's type at each call, an optional argument is a field
 * left 0 or NULL in a struct instead of a letter to get right, and the unit
 * test (tests/unit/test-qmp-vocab.c) walks every builder with each optional
 * argument set against the QMP schema of each QEMU the daemon supports
 * (tests/data/qmp/query-qmp-schema-*.json).
 *
 * Where a part of the arguments is composed from several places (a node of
 * blockdev-add, an object of object-add), the vocabulary builds that part
 * too: vmr_qmp_blockdev_*() and vmr_qmp_tls_creds_args().
 */
#pragma once

#include <json-glib/json-glib.h>

#include "qmp-client.h"

G_BEGIN_DECLS

typedef struct _VmrQmpCmd VmrQmpCmd;

void vmr_qmp_cmd_free (VmrQmpCmd *cmd);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrQmpCmd, vmr_qmp_cmd_free)

/* the command's name (static) */
const gchar *vmr_qmp_cmd_name (const VmrQmpCmd *cmd);

/* its arguments, owned by @cmd; NULL for a command without */
JsonObject *vmr_qmp_cmd_arguments (const VmrQmpCmd *cmd);

/* {"execute": NAME, "arguments": {...}} as one line of text; free with g_free() */
gchar *vmr_qmp_cmd_to_string (const VmrQmpCmd *cmd);

/*
 * Runs @cmd (consumed: a builder's result goes straight in) as
 * vmr_qmp_client_execute_async(); finish with vmr_qmp_client_execute_finish().
 */
void vmr_qmp_client_run_async (VmrQmpClient *client, VmrQmpCmd *cmd, guint timeout_ms,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data);

/* the same with the descriptor @fd (not consumed), as vmr_qmp_client_execute_with_fd_async() */
void vmr_qmp_client_run_with_fd_async (VmrQmpClient *client, VmrQmpCmd *cmd, gint fd,
                                       guint timeout_ms, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);

/* ---- the mirror and its job ---- */

typedef struct {
    const gchar *job_id;
    const gchar *device;           /* the source's top node */
    const gchar *target;           /* the destination's node */
    const gchar *filter_node_name; /* NULL: QEMU names it */
    /* "report", "enospc" (a full file pauses the copy), ...; NULL: QEMU's default */
    const gchar *on_target_error;
    guint64 speed;       /* bytes/s, 0: not limited */
    guint64 granularity; /* 0: QEMU's default */
    guint64 buf_size;    /* 0: QEMU's default */
} VmrQmpMirrorArgs;

/*
 * blockdev-mirror of the whole device ("sync": "full"), kept until
 * job-dismiss ("auto-dismiss": false), ended at once by a read error of the
 * source ("on-source-error": "report")
 */
VmrQmpCmd *vmr_qmp_cmd_blockdev_mirror (const VmrQmpMirrorArgs *args);

VmrQmpCmd *vmr_qmp_cmd_block_job_pause (const gchar *device);
VmrQmpCmd *vmr_qmp_cmd_block_job_resume (const gchar *device);
/* @force: a READY mirror aborts instead of completing */
VmrQmpCmd *vmr_qmp_cmd_block_job_cancel (const gchar *device, gboolean force);
VmrQmpCmd *vmr_qmp_cmd_block_job_set_speed (const gchar *device, guint64 speed);
VmrQmpCmd *vmr_qmp_cmd_job_complete (const gchar *id);
VmrQmpCmd *vmr_qmp_cmd_job_dismiss (const gchar *id);

/*
 * block-job-change that makes the running mirror @job_id write-blocking,
 * when @schema (the "return" of query-qmp-schema) lists it (QEMU 8.2 and
 * later); otherwise NULL with VMR_ERROR_FAILED, as
 * vmr_qmp_schema_copy_mode_args().
 */
VmrQmpCmd *vmr_qmp_cmd_block_job_change_copy_mode (JsonNode *schema, const gchar *job_id,
                                                   GError **error);

/* ---- nodes and objects ---- */

/*
 * The "file" child of a node on a local file or block device: @driver
 * "file" or "host_device", with its own cache mode. Free with
 * json_object_unref().
 */
JsonObject *vmr_qmp_blockdev_local (const gchar *driver, const gchar *filename,
                                    const gchar *node_name, gboolean cache_direct,
                                    gboolean cache_no_flush);

typedef struct {
    const gchar *socket; /* a UNIX socket, or else */
    const gchar *host;   /* a TCP host and */
    guint port;          /* its port */
    const gchar *export_name;
    gint64 reconnect_delay_s;
    const gchar *tls_creds; /* the id of a tls-creds-x509 object; NULL: plain */
} VmrQmpNbdArgs;

/* the "file" child of a node on an NBD export, without its node name; json_object_unref() */
JsonObject *vmr_qmp_blockdev_nbd (const VmrQmpNbdArgs *args);

typedef struct {
    const gchar *driver;    /* the format: "raw", "qcow2" */
    const gchar *node_name; /* the node's name */
    JsonObject *file;       /* its "file" child (a reference is taken) */
    gboolean cache_direct;
    gboolean cache_no_flush;
    const gchar *detect_zeroes; /* NULL: QEMU's default */
    guint64 size;               /* raw: the bytes used of a larger file; 0: all */
} VmrQmpBlockdevArgs;

/* the options of a format node over @args->file, discarding ("unmap"); json_object_unref() */
JsonObject *vmr_qmp_blockdev_format (const VmrQmpBlockdevArgs *args);

/*
 * The options of a read-only format node @node_name of the driver @format
 * over the file or block device @filename (@file_driver "file" or
 * "host_device"), with QEMU's cache defaults: an image read beside the
 * guest, not written. Free with json_object_unref().
 */
JsonObject *vmr_qmp_blockdev_read_only (const gchar *format, const gchar *file_driver,
                                        const gchar *filename, const gchar *node_name);

/* blockdev-add of @options (vmr_qmp_blockdev_format(); a reference is taken) */
VmrQmpCmd *vmr_qmp_cmd_blockdev_add (JsonObject *options);
VmrQmpCmd *vmr_qmp_cmd_blockdev_del (const gchar *node_name);

/* the object-add arguments of the TLS client credentials @id in @dir; json_object_unref() */
JsonObject *vmr_qmp_tls_creds_args (const gchar *id, const gchar *dir);

/* object-add of @args (vmr_qmp_tls_creds_args(); a reference is taken) */
VmrQmpCmd *vmr_qmp_cmd_object_add (JsonObject *args);
VmrQmpCmd *vmr_qmp_cmd_object_del (const gchar *id);

/* ---- descriptors ---- */

/* add-fd to a new fd set, @opaque naming it; the descriptor goes with the command */
VmrQmpCmd *vmr_qmp_cmd_add_fd (const gchar *opaque);
VmrQmpCmd *vmr_qmp_cmd_remove_fd (gint64 fdset_id);
/* getfd and closefd of the descriptor named @fdname */
VmrQmpCmd *vmr_qmp_cmd_getfd (const gchar *fdname);
VmrQmpCmd *vmr_qmp_cmd_closefd (const gchar *fdname);

/* ---- queries ---- */

VmrQmpCmd *vmr_qmp_cmd_query_block (void);
VmrQmpCmd *vmr_qmp_cmd_query_block_jobs (void);
VmrQmpCmd *vmr_qmp_cmd_query_blockstats (void);
VmrQmpCmd *vmr_qmp_cmd_query_block_exports (void);
VmrQmpCmd *vmr_qmp_cmd_query_fdsets (void);
VmrQmpCmd *vmr_qmp_cmd_query_iothreads (void);
VmrQmpCmd *vmr_qmp_cmd_query_qmp_schema (void);
/* @flat: every node once, without its backing chain nested */
VmrQmpCmd *vmr_qmp_cmd_query_named_block_nodes (gboolean flat);
/* qom-get of @property of the object at @path */
VmrQmpCmd *vmr_qmp_cmd_qom_get (const gchar *path, const gchar *property);

/* ---- reading a node through QEMU's NBD server (qmp-export.h) ---- */

/* nbd-server-start, vmr_qmp_nbd_server_args() */
VmrQmpCmd *vmr_qmp_cmd_nbd_server_start (const gchar *type, const gchar *value);
VmrQmpCmd *vmr_qmp_cmd_nbd_server_stop (void);
/* block-export-add, vmr_qmp_nbd_export_args() */
VmrQmpCmd *vmr_qmp_cmd_block_export_add (const gchar *id, const gchar *node, const gchar *bitmap);
/* block-export-del "hard": a client still connected does not keep the export */
VmrQmpCmd *vmr_qmp_cmd_block_export_del (const gchar *id);
/* block-dirty-bitmap-add of an enabled bitmap @name on @node, QEMU's defaults otherwise */
VmrQmpCmd *vmr_qmp_cmd_block_dirty_bitmap_add (const gchar *node, const gchar *name);
VmrQmpCmd *vmr_qmp_cmd_block_dirty_bitmap_remove (const gchar *node, const gchar *name);
/* the transaction of vmr_qmp_bitmap_copy_args() */
VmrQmpCmd *vmr_qmp_cmd_bitmap_copy (const gchar *node, const gchar *bitmap, const gchar *copy);

G_END_DECLS
