#define G_LOG_DOMAIN "vmr-daemon"

/*
 * A destination that is an export of an NBD server: made from its URI,
 * checked with libnbd before QEMU is asked for anything, and named as
 * QEMU's nbd driver and libvirt's network disk take it.
 */

#include "destination-private.h"
#include "qmp-vocab.h"

#include "vmr-error.h"
#include "vmr-json.h"

/* how long a preflight waits for the server to answer */
#define PREFLIGHT_TIMEOUT_MS 15000

/* the files of a tls-creds-x509 directory a client needs, as QEMU and libvirt name them */
static const gchar *const tls_files[] = { "ca-cert.pem", "client-cert.pem", "client-key.pem" };

gboolean
vmr_destination_nbd_same_target (const VmrDestination *self, const gchar *location)
{
    g_autoptr (VmrNbdUri) other = NULL;

    if (!vmr_nbd_uri_is_uri (location))
        return FALSE;
    other = vmr_nbd_uri_parse (location, NULL);
    /* nbd:// and nbds:// of one export are the same export */
    return other != NULL && g_strcmp0 (other->host, self->nbd->host) == 0
           && other->port == self->nbd->port && g_strcmp0 (other->socket, self->nbd->socket) == 0
           && g_strcmp0 (other->export_name, self->nbd->export_name) == 0;
}

gboolean
vmr_destination_nbd_check (const VmrDestination *self, const gchar *const *in_use, GError **error)
{
    for (guint i = 0; in_use != NULL && in_use[i] != NULL; i++) {
        if (vmr_destination_nbd_same_target (self, in_use[i])) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s is a disk of the domain already", self->location);
            return FALSE;
        }
    }
    if (!self->nbd->tls)
        return TRUE;
    if (self->tls_creds == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "%s asks for TLS but no credentials were given (--tls-creds DIR, or "
                     "tls-creds in the policy)",
                     self->location);
        return FALSE;
    }
    for (guint i = 0; i < G_N_ELEMENTS (tls_files); i++) {
        g_autofree gchar *path = g_build_filename (self->tls_creds, tls_files[i], NULL);

        if (!g_file_test (path, G_FILE_TEST_IS_REGULAR)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "TLS credentials directory %s has no %s", self->tls_creds, tls_files[i]);
            return FALSE;
        }
    }
    return TRUE;
}

/* ---- the preflight, on a thread of its own ---- */

/* what the thread needs, its own copy */
typedef struct {
    VmrNbdUri *uri;
    gchar *tls_creds;
    guint64 source_size;
} PreflightData;

static void
preflight_data_free (PreflightData *data)
{
    vmr_nbd_uri_free (data->uri);
    g_free (data->tls_creds);
    g_free (data);
}

static void
preflight_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    PreflightData *data = task_data;
    g_autofree VmrNbdExportFacts *facts = g_new0 (VmrNbdExportFacts, 1);
    GError *error = NULL;

    if (!vmr_nbd_preflight (data->uri, data->tls_creds, data->source_size, PREFLIGHT_TIMEOUT_MS,
                            facts, &error)) {
        g_task_return_error (task, error);
        return;
    }
    g_task_return_pointer (task, g_steal_pointer (&facts), g_free);
}

void
vmr_destination_preflight_async (VmrDestination *self, guint64 source_size,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
    PreflightData *data;

    g_task_set_source_tag (task, vmr_destination_preflight_async);
    if (self->kind != VMR_DESTINATION_NBD) {
        /* a file or device was checked in full by vmr_destination_check() */
        g_task_return_pointer (task, NULL, NULL);
        return;
    }
    data = g_new0 (PreflightData, 1);
    data->uri = vmr_nbd_uri_copy (self->nbd);
    data->tls_creds = g_strdup (self->tls_creds);
    data->source_size = source_size;
    g_task_set_task_data (task, data, (GDestroyNotify) preflight_data_free);
    g_task_run_in_thread (task, preflight_thread);
}

gboolean
vmr_destination_preflight_finish (GAsyncResult *res, VmrNbdExportFacts **out_facts, GError **error)
{
    g_autoptr (GError) local_error = NULL;
    VmrNbdExportFacts *facts = g_task_propagate_pointer (G_TASK (res), &local_error);

    if (local_error != NULL) {
        g_propagate_error (error, g_steal_pointer (&local_error));
        return FALSE;
    }
    if (out_facts != NULL)
        *out_facts = facts;
    else
        g_free (facts);
    return TRUE;
}

/* ---- the facts in the job ---- */

JsonObject *
vmr_destination_facts_to_json (const VmrNbdExportFacts *facts)
{
    JsonObject *obj = json_object_new ();
    const gchar *detect = vmr_destination_nbd_detect_zeroes (facts);
    const gchar *fallback = vmr_destination_nbd_zero_fallback (facts);

    json_object_set_int_member (obj, "size", (gint64) facts->size);
    json_object_set_boolean_member (obj, "tls", facts->tls);
    json_object_set_boolean_member (obj, "structured-replies", facts->structured_replies);
    json_object_set_boolean_member (obj, "can-zero", facts->can_zero);
    json_object_set_boolean_member (obj, "can-fast-zero", facts->can_fast_zero);
    json_object_set_boolean_member (obj, "can-trim", facts->can_trim);
    json_object_set_boolean_member (obj, "can-flush", facts->can_flush);
    json_object_set_int_member (obj, "preferred-block-size", (gint64) facts->preferred_block_size);
    /* how QEMU opens it, and what that costs: derived, never read back */
    json_object_set_string_member (obj, "detect-zeroes", detect != NULL ? detect : "off");
    if (fallback != NULL)
        json_object_set_string_member (obj, "zero-fallback", fallback);
    else
        json_object_set_null_member (obj, "zero-fallback");
    return obj;
}

VmrNbdExportFacts *
vmr_destination_facts_from_json (JsonObject *obj)
{
    VmrNbdExportFacts *facts;

    if (obj == NULL)
        return NULL;
    facts = g_new0 (VmrNbdExportFacts, 1);
    facts->size = vmr_json_uint_or (obj, "size", 0);
    facts->tls = vmr_json_bool_or (obj, "tls", FALSE);
    facts->structured_replies = vmr_json_bool_or (obj, "structured-replies", FALSE);
    facts->can_zero = vmr_json_bool_or (obj, "can-zero", FALSE);
    facts->can_fast_zero = vmr_json_bool_or (obj, "can-fast-zero", FALSE);
    facts->can_trim = vmr_json_bool_or (obj, "can-trim", FALSE);
    facts->can_flush = vmr_json_bool_or (obj, "can-flush", FALSE);
    facts->preferred_block_size = vmr_json_uint_or (obj, "preferred-block-size", 0);
    return facts;
}

/* ---- what the zero capabilities make of the copy (docs/performance.md) ---- */

const gchar *
vmr_destination_nbd_detect_zeroes (const VmrNbdExportFacts *facts)
{
    /*
     * with discard=unmap and write zeroes, QEMU 10.0's mirror zeroes the
     * export with trim first and sends each hole of the source as a zero
     * write that may trim; detect-zeroes=unmap does the same for the zero
     * buffers of a thick source. Without write zeroes, both fall back to
     * writing buffers of zeroes, so detecting would change nothing.
     */
    return facts != NULL && facts->can_zero ? "unmap" : NULL;
}

const gchar *
vmr_destination_nbd_zero_fallback (const VmrNbdExportFacts *facts)
{
    if (facts == NULL)
        return NULL;
    if (!facts->can_zero)
        return "the server cannot write zeroes: the holes and zeroes of the source are written "
               "as data, so the copy moves and the export takes the whole virtual size, and the "
               "speed limit counts them";
    if (!facts->can_trim)
        return "the server cannot trim: the export stays thin only if its zero writes do not "
               "allocate";
    return NULL;
}

/* ---- how QEMU and libvirt name it ---- */

gchar *
vmr_destination_tls_object_id (const VmrDestination *self, const gchar *node_name)
{
    if (self->kind != VMR_DESTINATION_NBD || !self->nbd->tls)
        return NULL;
    return g_strdup_printf ("%s-tls", node_name);
}

JsonObject *
vmr_destination_to_tls_object_add (const VmrDestination *self, const gchar *node_name)
{
    g_autofree gchar *id = vmr_destination_tls_object_id (self, node_name);

    if (id == NULL)
        return NULL;
    return vmr_qmp_tls_creds_args (id, self->tls_creds);
}

JsonObject *
vmr_destination_nbd_blockdev_file (const VmrDestination *self, const gchar *node_name)
{
    g_autofree gchar *tls_id = vmr_destination_tls_object_id (self, node_name);
    const VmrQmpNbdArgs args = {
        .socket = self->nbd->socket,
        .host = self->nbd->host,
        .port = self->nbd->port,
        .export_name = self->nbd->export_name,
        .reconnect_delay_s = self->reconnect_delay_s,
        .tls_creds = tls_id,
    };

    return vmr_qmp_blockdev_nbd (&args);
}

gchar *
vmr_destination_to_libvirt_source (const VmrDestination *self)
{
    g_autoptr (GString) xml = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *host = NULL;

    if (self->kind != VMR_DESTINATION_NBD)
        return NULL;
    source = g_markup_printf_escaped ("<source protocol='nbd' name='%s' tls='%s'>",
                                      self->nbd->export_name, self->nbd->tls ? "yes" : "no");
    if (self->nbd->socket != NULL)
        host = g_markup_printf_escaped ("<host transport='unix' socket='%s'/>", self->nbd->socket);
    else
        host = g_markup_printf_escaped ("<host name='%s' port='%u'/>", self->nbd->host,
                                        self->nbd->port);
    xml = g_string_new (source);
    g_string_append (xml, host);
    if (self->reconnect_delay_s > 0)
        g_string_append_printf (xml, "<reconnect delay='%u'/>", self->reconnect_delay_s);
    g_string_append (xml, "</source>");
    return g_string_free (g_steal_pointer (&xml), FALSE);
}

gchar *
vmr_destination_nbd_to_libvirt_xml (const VmrDestination *self)
{
    g_autofree gchar *source = vmr_destination_to_libvirt_source (self);

    return g_strdup_printf ("<disk type='network'><driver type='raw'/>%s</disk>", source);
}
