#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend's way to QEMU for the verification of a copy (see
 * verifier.h): the commands go over its QMP client, QEMU's NBD server
 * listens on a UNIX socket it makes itself, and QEMU opens the old source
 * again read-only and exports it. The client lives on the main loop: the
 * verification's thread hands each call over to it and waits for the answer.
 */

#include "backend-qmp-private.h"

#include "qmp-client.h"
#include "qmp-parse.h"
#include "qmp-vocab.h"
#include "verifier.h"

void
vmr_backend_qmp_mark_pivot (VmrBackendQmp *self, VmrJob *job)
{
    g_autofree gchar *node = g_strdup_printf ("%s-dst", job->id);

    /* sent before job-complete: from the switch on, every guest write is in it */
    vmr_qmp_client_run_async (
        self->client, vmr_verifier_mark_pivot_cmd (job->id, node), 0, NULL,
        vmr_backend_qmp_best_effort_cb,
        g_strdup_printf ("recording the writes after the pivot of %s", job->id));
}

typedef struct {
    VmrBackendQmp *self; /* owned */
    gchar *disk;         /* the job's disk */
    gchar *dest_node;    /* the node the copy made, which holds the pivot's bitmap */
    gchar *source;       /* the old source image */
    gchar *source_format;
    guint qemu_major; /* 0 when the greeting does not say */
} QmpTransport;

/* one call on the main loop, which the verification's thread waits for */
typedef struct {
    QmpTransport *transport;
    gboolean is_command; /* a command, else the disks */
    VmrQmpCmd *cmd;      /* owned until it is sent */
    GMutex lock;
    GCond cond;
    gboolean done;
    JsonNode *reply;  /* the command's */
    GPtrArray *disks; /* of VmrDisk * */
    GError *error;
} MainLoopCall;

static void
call_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    MainLoopCall *call = user_data;

    g_mutex_lock (&call->lock);
    if (call->is_command)
        call->reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &call->error);
    else
        call->disks = vmr_backend_qmp_query_disks_finish (VMR_BACKEND (source), res, &call->error);
    call->done = TRUE;
    g_cond_signal (&call->cond);
    g_mutex_unlock (&call->lock);
}

static gboolean
call_start_cb (gpointer user_data)
{
    MainLoopCall *call = user_data;
    VmrBackendQmp *self = call->transport->self;

    if (call->is_command)
        vmr_qmp_client_run_async (self->client, g_steal_pointer (&call->cmd), 0, NULL, call_done_cb,
                                  call);
    else
        vmr_backend_qmp_query_disks_async (VMR_BACKEND (self), NULL, call_done_cb, call);
    return G_SOURCE_REMOVE;
}

/* runs @call on the main loop and waits until it has answered */
static void
call_on_main_loop (MainLoopCall *call)
{
    g_mutex_init (&call->lock);
    g_cond_init (&call->cond);
    g_main_context_invoke (NULL, call_start_cb, call);
    g_mutex_lock (&call->lock);
    while (!call->done)
        g_cond_wait (&call->cond, &call->lock);
    g_mutex_unlock (&call->lock);
    g_mutex_clear (&call->lock);
    g_cond_clear (&call->cond);
}

static JsonNode *
transport_execute (gpointer transport, VmrQmpCmd *cmd, GError **error)
{
    MainLoopCall call = { .transport = transport, .cmd = cmd, .is_command = TRUE };

    call_on_main_loop (&call);
    if (call.reply == NULL)
        g_propagate_error (error, call.error);
    return call.reply;
}

/* the disk as it is now: whether this QEMU can export it safely */
static gboolean
transport_open (gpointer transport, GError **error)
{
    QmpTransport *t = transport;
    MainLoopCall call = { .transport = t };
    g_autoptr (GPtrArray) disks = NULL;

    call_on_main_loop (&call);
    disks = call.disks;
    /* a disk that cannot be read now is not refused here: the exports tell */
    g_clear_error (&call.error);
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = disks->pdata[i];

        if (g_strcmp0 (disk->id, t->disk) == 0)
            return vmr_verification_qemu_can_verify (disk, t->qemu_major, error);
    }
    return TRUE;
}

static gchar *
transport_find_node (gpointer transport, const gchar *bitmap, GError **error)
{
    QmpTransport *t = transport;

    /* the copy named it; whether it holds @bitmap, the copy of the bitmap says */
    return g_strdup (t->dest_node);
}

static gboolean
transport_listen (gpointer transport, const gchar *socket, gchar **type, gchar **value,
                  GError **error)
{
    *type = g_strdup ("unix");
    *value = g_strdup (socket);
    return TRUE;
}

static gboolean
transport_open_old (gpointer transport, const gchar *node, GError **error)
{
    QmpTransport *t = transport;
    gboolean device = !g_file_test (t->source, G_FILE_TEST_IS_REGULAR);
    g_autoptr (JsonObject) options = vmr_qmp_blockdev_read_only (
        t->source_format, device ? "host_device" : "file", t->source, node);
    g_autoptr (JsonNode) reply = transport_execute (t, vmr_qmp_cmd_blockdev_add (options), error);

    return reply != NULL;
}

static void
transport_close_old (gpointer transport, const gchar *node)
{
    QmpTransport *t = transport;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = transport_execute (t, vmr_qmp_cmd_blockdev_del (node), &error);

    if (reply == NULL)
        g_debug ("closing %s: %s", t->source, error->message);
}

static void
transport_free (gpointer transport)
{
    QmpTransport *t = transport;

    g_object_unref (t->self);
    g_free (t->disk);
    g_free (t->dest_node);
    g_free (t->source);
    g_free (t->source_format);
    g_free (t);
}

static const VmrVerifyTransportOps transport_ops = {
    .open = transport_open,
    .find_node = transport_find_node,
    .execute = transport_execute,
    .listen = transport_listen,
    .open_old = transport_open_old,
    .close_old = transport_close_old,
    .free = transport_free,
};

void
vmr_backend_qmp_verify_copy_async (VmrBackend *backend, VmrJob *job, VmrVerification *verification,
                                   const gchar *work_dir, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    QmpTransport *t = g_new0 (QmpTransport, 1);

    t->self = g_object_ref (self);
    t->disk = g_strdup (job->disk);
    t->dest_node = g_strdup_printf ("%s-dst", job->id);
    t->source = g_strdup (job->source);
    t->source_format = g_strdup (job->source_format != NULL ? job->source_format : "raw");
    t->qemu_major = vmr_qmp_parse_greeting_major (vmr_qmp_client_get_greeting (self->client));
    vmr_verifier_verify_async (self->verifier, self, &transport_ops, t, job, verification, work_dir,
                               cancellable, callback, user_data);
}

gboolean
vmr_backend_qmp_verify_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return vmr_verifier_verify_finish (res, error);
}
