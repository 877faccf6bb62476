#define G_LOG_DOMAIN "vmr-daemon"

/*
 * libvirt's transport for the verification, called from its thread: see
 * libvirt-verify.h. The daemon makes the NBD server's listening socket
 * itself and hands QEMU its file descriptor (getfd), so that QEMU, running
 * as libvirt's user and confined by libvirt, creates no file of its own.
 */

#include "libvirt-verify.h"

#include <gio/gunixsocketaddress.h>

#include "libvirt-domain.h"
#include "vmr-error.h"
#include "vmr-json.h"

typedef struct {
    VmrLibvirtConnection *connection;
    gchar *uuid;
    virDomain *dom; /* from open() on */
    gchar *job_id;
    gchar *disk; /* the job's target */
    VmrDestination *destination;
    gchar *fd_name; /* QEMU's name of the NBD server's socket */
} LibvirtTransport;

/* whether QEMU's node @node holds the dirty bitmap @bitmap */
static gboolean
has_bitmap (JsonObject *node, const gchar *bitmap)
{
    JsonArray *bitmaps = vmr_json_get_array (node, "dirty-bitmaps");

    for (guint i = 0; bitmaps != NULL && i < json_array_get_length (bitmaps); i++) {
        if (g_strcmp0 (vmr_json_get_string (vmr_json_array_object (bitmaps, i), "name"), bitmap)
            == 0)
            return TRUE;
    }
    return FALSE;
}

/*
 * The name of QEMU's node of @destination that holds @bitmap; with a NULL
 * @bitmap, its top node (the format node, when libvirt made one, rather
 * than the protocol node under it). NULL with @error when there is none.
 */
static gchar *
find_node (virDomain *dom, const VmrDestination *destination, const gchar *bitmap, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_libvirt_domain_run (dom, vmr_qmp_cmd_query_named_block_nodes (TRUE), error);
    JsonArray *nodes;
    const gchar *found = NULL;
    gboolean found_format = FALSE;

    if (reply == NULL)
        return NULL;
    nodes = vmr_json_node_array (reply);
    for (guint i = 0; nodes != NULL && i < json_array_get_length (nodes); i++) {
        JsonObject *node = vmr_json_array_object (nodes, i);
        const gchar *name = vmr_json_get_string (node, "node-name");
        gboolean is_format;

        if (name == NULL
            || !vmr_destination_same_target (destination, vmr_json_get_string (node, "file")))
            continue;
        if (bitmap != NULL) {
            if (has_bitmap (node, bitmap))
                return g_strdup (name);
            continue;
        }
        is_format = g_strcmp0 (vmr_json_get_string (node, "drv"), destination->format) == 0;
        if (found == NULL || (is_format && !found_format)) {
            found = name;
            found_format = is_format;
        }
    }
    if (found != NULL)
        return g_strdup (found);
    if (bitmap != NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                     "QEMU has no record of the guest's writes since the pivot (no bitmap %s on "
                     "a node of %s: the copy was made without --verify, QEMU restarted, or the "
                     "disk moved again)",
                     bitmap, destination->location);
    else
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "QEMU has no node of %s",
                     destination->location);
    return NULL;
}

void
vmr_libvirt_verify_mark_pivot (virDomain *dom, const gchar *job_id,
                               const VmrDestination *destination)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *node = find_node (dom, destination, NULL, &error);
    g_autofree gchar *bitmap = vmr_verifier_pivot_bitmap (job_id);
    g_autoptr (JsonNode) reply = NULL;

    if (node != NULL)
        reply = vmr_libvirt_domain_run (dom, vmr_verifier_mark_pivot_cmd (job_id, node), &error);
    if (reply == NULL)
        g_message ("job %s: cannot record the writes after the pivot: %s", job_id, error->message);
    else
        g_debug ("job %s: bitmap %s on node %s records the writes after the pivot", job_id, bitmap,
                 node);
}

/* ---- the transport ---- */

/* whether the domain's QEMU can export the job's disk safely, see verification.h */
static gboolean
qemu_can_verify (LibvirtTransport *t, GError **error)
{
    g_autoptr (GPtrArray) disks = NULL;
    unsigned long version = 0;

    /* the QEMU driver's version is QEMU's, 1000000 * major + 1000 * minor + micro */
    if (virConnectGetVersion (virDomainGetConnect (t->dom), &version) < 0) {
        g_debug ("job %s: no QEMU version: %s", t->job_id, virGetLastErrorMessage ());
        return TRUE;
    }
    disks = vmr_libvirt_domain_read_disks (t->dom, NULL);
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = disks->pdata[i];

        if (g_strcmp0 (disk->id, t->disk) == 0)
            return vmr_verification_qemu_can_verify (disk, (guint) (version / 1000000), error);
    }
    return TRUE;
}

static gboolean
transport_open (gpointer transport, GError **error)
{
    LibvirtTransport *t = transport;

    t->dom = vmr_libvirt_connection_lookup (t->connection, t->uuid, error);
    return t->dom != NULL && qemu_can_verify (t, error);
}

static gchar *
transport_find_node (gpointer transport, const gchar *bitmap, GError **error)
{
    LibvirtTransport *t = transport;

    return find_node (t->dom, t->destination, bitmap, error);
}

static JsonNode *
transport_execute (gpointer transport, VmrQmpCmd *cmd, GError **error)
{
    LibvirtTransport *t = transport;

    return vmr_libvirt_domain_run (t->dom, cmd, error);
}

/* the daemon's listening socket, handed to QEMU */
static gboolean
transport_listen (gpointer transport, const gchar *socket, gchar **type, gchar **value,
                  GError **error)
{
    LibvirtTransport *t = transport;
    g_autoptr (GSocket) listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                                 G_SOCKET_PROTOCOL_DEFAULT, error);
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (socket);
    g_autoptr (JsonNode) passed = NULL;

    if (listener == NULL || !g_socket_bind (listener, address, FALSE, error)
        || !g_socket_listen (listener, error)) {
        g_prefix_error (error, "cannot listen on %s: ", socket);
        return FALSE;
    }
    passed = vmr_libvirt_domain_run_with_fd (t->dom, vmr_qmp_cmd_getfd (t->fd_name),
                                             g_socket_get_fd (listener), error);
    if (passed == NULL)
        return FALSE;
    *type = g_strdup ("fd");
    *value = g_strdup (t->fd_name);
    return TRUE;
}

static void
transport_unlisten (gpointer transport, const gchar *value)
{
    LibvirtTransport *t = transport;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_libvirt_domain_run (t->dom, vmr_qmp_cmd_closefd (value), &error);
    if (reply == NULL)
        g_message ("job %s: closing the NBD server's socket after the verification: %s", t->job_id,
                   error->message);
}

static void
transport_free (gpointer transport)
{
    LibvirtTransport *t = transport;

    g_object_unref (t->connection);
    g_free (t->uuid);
    g_clear_pointer (&t->dom, virDomainFree);
    g_free (t->job_id);
    g_free (t->disk);
    vmr_destination_unref (t->destination);
    g_free (t->fd_name);
    g_free (t);
}

/* no open_old: QEMU no longer has the old source, qemu-nbd serves it */
static const VmrVerifyTransportOps transport_ops = {
    .open = transport_open,
    .find_node = transport_find_node,
    .execute = transport_execute,
    .listen = transport_listen,
    .unlisten = transport_unlisten,
    .free = transport_free,
};

void
vmr_libvirt_verify_async (VmrVerifier *verifier, gpointer source_object,
                          VmrLibvirtConnection *connection, const gchar *uuid, VmrJob *job,
                          VmrVerification *verification, const gchar *work_dir,
                          GCancellable *cancellable, GAsyncReadyCallback callback,
                          gpointer user_data)
{
    LibvirtTransport *t = g_new0 (LibvirtTransport, 1);

    t->connection = g_object_ref (connection);
    t->uuid = g_strdup (uuid);
    t->job_id = g_strdup (job->id);
    t->disk = g_strdup (job->disk);
    t->destination = vmr_destination_ref (job->dest);
    t->fd_name = g_strdup_printf ("%s-nbd", job->id);
    vmr_verifier_verify_async (verifier, source_object, &transport_ops, t, job, verification,
                               work_dir, cancellable, callback, user_data);
}
