#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: a destination handed to QEMU by descriptor, never by
 * name. The daemon opens (or makes) the file; add-fd puts a descriptor of
 * it into a new fd set whose opaque names the file, and blockdev-add opens
 * "/dev/fdset/N", which QEMU resolves to that descriptor, also when it
 * opens the file again (a reopen at the pivot). The fd set lives as long
 * as a node was opened from it: once none is, it is removed.
 */

#include "backend-qmp-private.h"

#include <unistd.h>

#include "qmp-client.h"
#include "qmp-parse.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* ---- passing a destination ---- */

static void
add_fd_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    gint64 id = -1;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (!vmr_json_get_int (vmr_json_node_object (reply), "fdset-id", &id) || id < 0) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_PROTOCOL,
                                 "unexpected reply to 'add-fd' (no fdset-id)");
        return;
    }
    g_task_return_pointer (task, g_strdup_printf ("/dev/fdset/%" G_GINT64_FORMAT, id), g_free);
}

void
vmr_backend_qmp_pass_destination_async (VmrBackendQmp *self, VmrDestinationHandle *handle,
                                        gboolean direct, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    VmrDestination *dest = vmr_destination_handle_get_destination (handle);
    g_autofree gchar *opaque = vmr_qmp_parse_fdset_opaque (dest->location);
    g_autoptr (GError) error = NULL;
    /* QEMU takes a descriptor of the set whose access mode and O_DIRECT match its own open */
    gint fd = vmr_destination_handle_reopen (handle, direct, &error);

    if (fd < 0) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    vmr_qmp_client_run_with_fd_async (self->client, vmr_qmp_cmd_add_fd (opaque), fd, 0, cancellable,
                                      add_fd_cb, task);
    close (fd);
}

gchar *
vmr_backend_qmp_pass_destination_finish (GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- the fd sets no node uses any more ---- */

static void
remove_fd_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL)
        g_debug ("remove-fd: %s", error->message);
}

typedef struct {
    GHashTable *ours; /* fd set id -> path, of query-fdsets */
} PruneData;

static void
prune_data_free (PruneData *data)
{
    g_clear_pointer (&data->ours, g_hash_table_unref);
    g_free (data);
}

typedef struct {
    VmrBackendQmp *self;
    GHashTable *removed; /* fd set id -> path, of the sets just removed */
} KeptData;

static KeptData *
kept_data_new (VmrBackendQmp *self, GHashTable *removed)
{
    KeptData *data = g_new0 (KeptData, 1);

    data->self = g_object_ref (self);
    data->removed = removed;
    return data;
}

/* the fd sets still listed after their removal: one line each, the first time */
static void
kept_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    KeptData *data = user_data;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GHashTable) listed = NULL;
    GHashTableIter iter;
    gint64 *id;
    const gchar *path;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, NULL);
    listed = reply != NULL ? vmr_qmp_parse_fdsets (reply) : NULL;
    g_hash_table_iter_init (&iter, data->removed);
    while (listed != NULL && g_hash_table_iter_next (&iter, (gpointer *) &id, (gpointer *) &path)) {
        if (!g_hash_table_contains (listed, id)) {
            g_hash_table_remove (data->self->kept_fdsets, id);
        } else if (g_hash_table_add (data->self->kept_fdsets, g_memdup2 (id, sizeof *id))) {
            g_message ("QEMU keeps its descriptor of %s (fd set %" G_GINT64_FORMAT
                       ") while the guest is stopped (this QEMU closes removed descriptors only "
                       "while the guest runs): removed again when it resumes",
                       path, *id);
        }
    }
    g_object_unref (data->self);
    g_hash_table_unref (data->removed);
    g_free (data);
}

static void
nodes_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    PruneData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GHashTable) in_use = NULL;
    GHashTableIter iter;
    gint64 *id;
    const gchar *path;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_debug ("not removing fd sets: %s", error->message);
        g_task_return_boolean (task, TRUE);
        return;
    }
    in_use = vmr_qmp_parse_fdsets_in_use (reply);
    g_hash_table_iter_init (&iter, data->ours);
    while (g_hash_table_iter_next (&iter, (gpointer *) &id, (gpointer *) &path)) {
        if (g_hash_table_contains (in_use, id)) {
            g_hash_table_iter_remove (&iter);
            continue;
        }
        g_debug ("removing fd set %" G_GINT64_FORMAT " of %s", *id, path);
        vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_remove_fd (*id), 0, NULL, remove_fd_cb,
                                  NULL);
    }
    /* what QEMU kept of them */
    if (g_hash_table_size (data->ours) > 0)
        vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_fdsets (), 0, NULL, kept_cb,
                                  kept_data_new (self, g_steal_pointer (&data->ours)));
    /* the commands keep their order: the removals are done before whatever comes next */
    g_task_return_boolean (task, TRUE);
}

static void
fdsets_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrBackendQmp *self = g_task_get_source_object (task);
    PruneData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    data->ours = reply != NULL ? vmr_qmp_parse_fdsets (reply) : NULL;
    if (data->ours == NULL || g_hash_table_size (data->ours) == 0) {
        g_task_return_boolean (task, TRUE);
        return;
    }
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_named_block_nodes (TRUE), 0, NULL,
                              nodes_cb, g_steal_pointer (&task));
}

void
vmr_backend_qmp_prune_fdsets_async (VmrBackendQmp *self, GAsyncReadyCallback callback,
                                    gpointer user_data)
{
    GTask *task = g_task_new (self, NULL, callback, user_data);

    g_task_set_task_data (task, g_new0 (PruneData, 1), (GDestroyNotify) prune_data_free);
    vmr_qmp_client_run_async (self->client, vmr_qmp_cmd_query_fdsets (), 0, NULL, fdsets_cb, task);
}

void
vmr_backend_qmp_fdsets_guest_resumed (VmrBackendQmp *self)
{
    if (g_hash_table_size (self->kept_fdsets) == 0)
        return;
    g_debug ("the guest resumed: removing the fd sets QEMU kept again");
    vmr_backend_qmp_prune_fdsets_async (self, NULL, NULL);
}
