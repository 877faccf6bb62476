#define G_LOG_DOMAIN "vmr-qmp"

#include "qmp-vocab.h"

#include "qmp-client.h"
#include "qmp-export.h"

struct _VmrQmpCmd {
    const gchar *name;
    JsonObject *arguments;
};

/* @arguments is consumed */
static VmrQmpCmd *
cmd_new (const gchar *name, JsonObject *arguments)
{
    VmrQmpCmd *cmd = g_new0 (VmrQmpCmd, 1);

    cmd->name = name;
    cmd->arguments = arguments;
    return cmd;
}

/* a command whose one argument is the string @value named @key */
static VmrQmpCmd *
cmd_new_string (const gchar *name, const gchar *key, const gchar *value)
{
    JsonObject *arguments = json_object_new ();

    json_object_set_string_member (arguments, key, value);
    return cmd_new (name, arguments);
}

void
vmr_qmp_cmd_free (VmrQmpCmd *cmd)
{
    if (cmd == NULL)
        return;
    g_clear_pointer (&cmd->arguments, json_object_unref);
    g_free (cmd);
}

const gchar *
vmr_qmp_cmd_name (const VmrQmpCmd *cmd)
{
    return cmd->name;
}

JsonObject *
vmr_qmp_cmd_arguments (const VmrQmpCmd *cmd)
{
    return cmd->arguments;
}

gchar *
vmr_qmp_cmd_to_string (const VmrQmpCmd *cmd)
{
    g_autoptr (JsonObject) msg = json_object_new ();
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);

    json_object_set_string_member (msg, "execute", cmd->name);
    if (cmd->arguments != NULL)
        json_object_set_object_member (msg, "arguments", json_object_ref (cmd->arguments));
    json_node_set_object (node, msg);
    return json_to_string (node, FALSE);
}

void
vmr_qmp_client_run_async (VmrQmpClient *client, VmrQmpCmd *cmd, guint timeout_ms,
                          GCancellable *cancellable, GAsyncReadyCallback callback,
                          gpointer user_data)
{
    g_autoptr (VmrQmpCmd) owned = cmd;

    vmr_qmp_client_execute_async (client, owned->name, owned->arguments, timeout_ms, cancellable,
                                  callback, user_data);
}

void
vmr_qmp_client_run_with_fd_async (VmrQmpClient *client, VmrQmpCmd *cmd, gint fd, guint timeout_ms,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    g_autoptr (VmrQmpCmd) owned = cmd;

    vmr_qmp_client_execute_with_fd_async (client, owned->name, owned->arguments, fd, timeout_ms,
                                          cancellable, callback, user_data);
}

/* ---- the mirror and its job ---- */

static void
set_if_positive (JsonObject *obj, const gchar *key, guint64 value)
{
    if (value > 0)
        json_object_set_int_member (obj, key, (gint64) value);
}

static void
set_if_given (JsonObject *obj, const gchar *key, const gchar *value)
{
    if (value != NULL)
        json_object_set_string_member (obj, key, value);
}

VmrQmpCmd *
vmr_qmp_cmd_blockdev_mirror (const VmrQmpMirrorArgs *args)
{
    JsonObject *arguments = json_object_new ();

    json_object_set_string_member (arguments, "job-id", args->job_id);
    json_object_set_string_member (arguments, "device", args->device);
    json_object_set_string_member (arguments, "target", args->target);
    json_object_set_string_member (arguments, "sync", "full");
    json_object_set_boolean_member (arguments, "auto-dismiss", FALSE);
    json_object_set_string_member (arguments, "on-source-error", "report");
    set_if_given (arguments, "on-target-error", args->on_target_error);
    set_if_given (arguments, "filter-node-name", args->filter_node_name);
    set_if_positive (arguments, "speed", args->speed);
    set_if_positive (arguments, "granularity", args->granularity);
    set_if_positive (arguments, "buf-size", args->buf_size);
    return cmd_new ("blockdev-mirror", arguments);
}

VmrQmpCmd *
vmr_qmp_cmd_block_job_pause (const gchar *device)
{
    return cmd_new_string ("block-job-pause", "device", device);
}

VmrQmpCmd *
vmr_qmp_cmd_block_job_resume (const gchar *device)
{
    return cmd_new_string ("block-job-resume", "device", device);
}

VmrQmpCmd *
vmr_qmp_cmd_block_job_cancel (const gchar *device, gboolean force)
{
    VmrQmpCmd *cmd = cmd_new_string ("block-job-cancel", "device", device);

    if (force)
        json_object_set_boolean_member (cmd->arguments, "force", TRUE);
    return cmd;
}

VmrQmpCmd *
vmr_qmp_cmd_block_job_set_speed (const gchar *device, guint64 speed)
{
    VmrQmpCmd *cmd = cmd_new_string ("block-job-set-speed", "device", device);

    json_object_set_int_member (cmd->arguments, "speed", (gint64) speed);
    return cmd;
}

VmrQmpCmd *
vmr_qmp_cmd_job_complete (const gchar *id)
{
    return cmd_new_string ("job-complete", "id", id);
}

VmrQmpCmd *
vmr_qmp_cmd_job_dismiss (const gchar *id)
{
    return cmd_new_string ("job-dismiss", "id", id);
}

VmrQmpCmd *
vmr_qmp_cmd_block_job_change_copy_mode (JsonNode *schema, const gchar *job_id, GError **error)
{
    JsonObject *arguments = vmr_qmp_schema_copy_mode_args (schema, job_id, error);

    return arguments != NULL ? cmd_new ("block-job-change", arguments) : NULL;
}

/* ---- nodes and objects ---- */

static JsonObject *
cache_object (gboolean direct, gboolean no_flush)
{
    JsonObject *cache = json_object_new ();

    json_object_set_boolean_member (cache, "direct", direct);
    json_object_set_boolean_member (cache, "no-flush", no_flush);
    return cache;
}

JsonObject *
vmr_qmp_blockdev_local (const gchar *driver, const gchar *filename, const gchar *node_name,
                        gboolean cache_direct, gboolean cache_no_flush)
{
    JsonObject *file = json_object_new ();

    json_object_set_string_member (file, "driver", driver);
    json_object_set_string_member (file, "filename", filename);
    json_object_set_string_member (file, "node-name", node_name);
    json_object_set_object_member (file, "cache", cache_object (cache_direct, cache_no_flush));
    return file;
}

JsonObject *
vmr_qmp_blockdev_nbd (const VmrQmpNbdArgs *args)
{
    JsonObject *file = json_object_new ();
    JsonObject *server = json_object_new ();

    if (args->socket != NULL) {
        json_object_set_string_member (server, "type", "unix");
        json_object_set_string_member (server, "path", args->socket);
    } else {
        g_autofree gchar *port = g_strdup_printf ("%u", args->port);

        json_object_set_string_member (server, "type", "inet");
        json_object_set_string_member (server, "host", args->host);
        json_object_set_string_member (server, "port", port);
    }
    json_object_set_string_member (file, "driver", "nbd");
    json_object_set_object_member (file, "server", server);
    json_object_set_string_member (file, "export", args->export_name);
    json_object_set_int_member (file, "reconnect-delay", args->reconnect_delay_s);
    set_if_given (file, "tls-creds", args->tls_creds);
    return file;
}

JsonObject *
vmr_qmp_blockdev_format (const VmrQmpBlockdevArgs *args)
{
    JsonObject *options = json_object_new ();

    json_object_set_string_member (options, "driver", args->driver);
    json_object_set_string_member (options, "node-name", args->node_name);
    json_object_set_object_member (options, "file", json_object_ref (args->file));
    json_object_set_object_member (options, "cache",
                                   cache_object (args->cache_direct, args->cache_no_flush));
    json_object_set_string_member (options, "discard", "unmap");
    set_if_given (options, "detect-zeroes", args->detect_zeroes);
    set_if_positive (options, "size", args->size);
    return options;
}

JsonObject *
vmr_qmp_blockdev_read_only (const gchar *format, const gchar *file_driver, const gchar *filename,
                            const gchar *node_name)
{
    JsonObject *options = json_object_new ();
    JsonObject *file = json_object_new ();

    json_object_set_string_member (file, "driver", file_driver);
    json_object_set_string_member (file, "filename", filename);
    json_object_set_boolean_member (file, "read-only", TRUE);
    json_object_set_string_member (options, "driver", format);
    json_object_set_string_member (options, "node-name", node_name);
    json_object_set_boolean_member (options, "read-only", TRUE);
    json_object_set_object_member (options, "file", file);
    return options;
}

VmrQmpCmd *
vmr_qmp_cmd_blockdev_add (JsonObject *options)
{
    return cmd_new ("blockdev-add", json_object_ref (options));
}

VmrQmpCmd *
vmr_qmp_cmd_blockdev_del (const gchar *node_name)
{
    return cmd_new_string ("blockdev-del", "node-name", node_name);
}

JsonObject *
vmr_qmp_tls_creds_args (const gchar *id, const gchar *dir)
{
    JsonObject *args = json_object_new ();

    json_object_set_string_member (args, "qom-type", "tls-creds-x509");
    json_object_set_string_member (args, "id", id);
    json_object_set_string_member (args, "dir", dir);
    json_object_set_string_member (args, "endpoint", "client");
    json_object_set_boolean_member (args, "verify-peer", TRUE);
    return args;
}

VmrQmpCmd *
vmr_qmp_cmd_object_add (JsonObject *args)
{
    return cmd_new ("object-add", json_object_ref (args));
}

VmrQmpCmd *
vmr_qmp_cmd_object_del (const gchar *id)
{
    return cmd_new_string ("object-del", "id", id);
}

/* ---- descriptors ---- */

VmrQmpCmd *
vmr_qmp_cmd_add_fd (const gchar *opaque)
{
    return cmd_new_string ("add-fd", "opaque", opaque);
}

VmrQmpCmd *
vmr_qmp_cmd_remove_fd (gint64 fdset_id)
{
    JsonObject *arguments = json_object_new ();

    json_object_set_int_member (arguments, "fdset-id", fdset_id);
    return cmd_new ("remove-fd", arguments);
}

VmrQmpCmd *
vmr_qmp_cmd_getfd (const gchar *fdname)
{
    return cmd_new_string ("getfd", "fdname", fdname);
}

VmrQmpCmd *
vmr_qmp_cmd_closefd (const gchar *fdname)
{
    return cmd_new_string ("closefd", "fdname", fdname);
}

/* ---- queries ---- */

VmrQmpCmd *
vmr_qmp_cmd_query_block (void)
{
    return cmd_new ("query-block", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_block_jobs (void)
{
    return cmd_new ("query-block-jobs", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_blockstats (void)
{
    return cmd_new ("query-blockstats", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_block_exports (void)
{
    return cmd_new ("query-block-exports", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_fdsets (void)
{
    return cmd_new ("query-fdsets", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_iothreads (void)
{
    return cmd_new ("query-iothreads", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_qmp_schema (void)
{
    return cmd_new ("query-qmp-schema", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_query_named_block_nodes (gboolean flat)
{
    JsonObject *arguments = NULL;

    if (flat) {
        arguments = json_object_new ();
        json_object_set_boolean_member (arguments, "flat", TRUE);
    }
    return cmd_new ("query-named-block-nodes", arguments);
}

VmrQmpCmd *
vmr_qmp_cmd_qom_get (const gchar *path, const gchar *property)
{
    VmrQmpCmd *cmd = cmd_new_string ("qom-get", "path", path);

    json_object_set_string_member (cmd->arguments, "property", property);
    return cmd;
}

/* ---- reading a node through QEMU's NBD server ---- */

VmrQmpCmd *
vmr_qmp_cmd_nbd_server_start (const gchar *type, const gchar *value)
{
    return cmd_new ("nbd-server-start", vmr_qmp_nbd_server_args (type, value));
}

VmrQmpCmd *
vmr_qmp_cmd_nbd_server_stop (void)
{
    return cmd_new ("nbd-server-stop", NULL);
}

VmrQmpCmd *
vmr_qmp_cmd_block_export_add (const gchar *id, const gchar *node, const gchar *bitmap)
{
    return cmd_new ("block-export-add", vmr_qmp_nbd_export_args (id, node, bitmap));
}

VmrQmpCmd *
vmr_qmp_cmd_block_export_del (const gchar *id)
{
    VmrQmpCmd *cmd = cmd_new_string ("block-export-del", "id", id);

    json_object_set_string_member (cmd->arguments, "mode", "hard");
    return cmd;
}

VmrQmpCmd *
vmr_qmp_cmd_block_dirty_bitmap_add (const gchar *node, const gchar *name)
{
    VmrQmpCmd *cmd = cmd_new_string ("block-dirty-bitmap-add", "node", node);

    json_object_set_string_member (cmd->arguments, "name", name);
    return cmd;
}

VmrQmpCmd *
vmr_qmp_cmd_block_dirty_bitmap_remove (const gchar *node, const gchar *name)
{
    VmrQmpCmd *cmd = cmd_new_string ("block-dirty-bitmap-remove", "node", node);

    json_object_set_string_member (cmd->arguments, "name", name);
    return cmd;
}

VmrQmpCmd *
vmr_qmp_cmd_bitmap_copy (const gchar *node, const gchar *bitmap, const gchar *copy)
{
    return cmd_new ("transaction", vmr_qmp_bitmap_copy_args (node, bitmap, copy));
}
