#define G_LOG_DOMAIN "vmr-nbd"

#include "nbd-preflight.h"

#include "nbd-handle.h"
#include "units.h"
#include "vmr-error.h"

/* the connection's options: the export, TLS and what we ask the server for */
static gboolean
set_options (VmrNbdHandle *nbd, const VmrNbdUri *uri, const gchar *tls_creds, GError **error)
{
    if (nbd_set_export_name (nbd, uri->export_name) == -1
        || nbd_set_request_structured_replies (nbd, TRUE) == -1
        || nbd_set_full_info (nbd, TRUE) == -1) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot set up the NBD handle");
        return FALSE;
    }
    if (!uri->tls)
        return TRUE;
    if (tls_creds == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "%s asks for TLS but no credentials directory was given", uri->canonical);
        return FALSE;
    }
    if (nbd_set_tls (nbd, LIBNBD_TLS_REQUIRE) == -1
        || nbd_set_tls_certificates (nbd, tls_creds) == -1) {
        vmr_nbd_set_error (error, VMR_ERROR_INVALID_ARGUMENT, "cannot use the TLS credentials");
        return FALSE;
    }
    return TRUE;
}

/* connects and negotiates, polling until @timeout_ms have passed */
static gboolean
connect_export (VmrNbdHandle *nbd, const VmrNbdUri *uri, guint timeout_ms, GError **error)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
    g_autofree gchar *what = g_strdup_printf ("cannot connect to %s", uri->canonical);
    int r;

    if (uri->socket != NULL) {
        r = nbd_aio_connect_unix (nbd, uri->socket);
    } else {
        g_autofree gchar *port = g_strdup_printf ("%u", uri->port);

        r = nbd_aio_connect_tcp (nbd, uri->host, port);
    }
    if (r == -1) {
        vmr_nbd_set_error (error, VMR_ERROR_INVALID_ARGUMENT, what);
        return FALSE;
    }
    while (nbd_aio_is_connecting (nbd)) {
        gint64 left_ms = (deadline - g_get_monotonic_time ()) / 1000;

        if (left_ms <= 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_TIMEOUT, "%s: no answer within %u s", what,
                         timeout_ms / 1000);
            return FALSE;
        }
        if (nbd_poll (nbd, (int) MIN (left_ms, 1000)) == -1) {
            vmr_nbd_set_error (error, VMR_ERROR_INVALID_ARGUMENT, what);
            return FALSE;
        }
    }
    if (!nbd_aio_is_ready (nbd)) {
        vmr_nbd_set_error (error, VMR_ERROR_INVALID_ARGUMENT, what);
        return FALSE;
    }
    return TRUE;
}

/* a capability flag; a failed query (-1) reads as not offered */
static gboolean
flag (int value)
{
    return value == 1;
}

gboolean
vmr_nbd_preflight (const VmrNbdUri *uri, const gchar *tls_creds, guint64 need_size,
                   guint timeout_ms, VmrNbdExportFacts *facts, GError **error)
{
    g_autoptr (VmrNbdHandle) nbd = vmr_nbd_handle_new ("preflight", error);
    int64_t size;
    int64_t block;

    if (nbd == NULL || !set_options (nbd, uri, tls_creds, error)
        || !connect_export (nbd, uri, timeout_ms, error))
        return FALSE;
    size = nbd_get_size (nbd);
    if (size < 0) {
        vmr_nbd_set_error (error, VMR_ERROR_INVALID_ARGUMENT, "cannot read the export's size");
        return FALSE;
    }
    *facts = (VmrNbdExportFacts){
        .size = (guint64) size,
        .tls = flag (nbd_get_tls_negotiated (nbd)),
        .structured_replies = flag (nbd_get_structured_replies_negotiated (nbd)),
        .can_zero = flag (nbd_can_zero (nbd)),
        .can_fast_zero = flag (nbd_can_fast_zero (nbd)),
        .can_trim = flag (nbd_can_trim (nbd)),
        .can_flush = flag (nbd_can_flush (nbd)),
    };
    block = nbd_get_block_size (nbd, LIBNBD_SIZE_PREFERRED);
    facts->preferred_block_size = block > 0 ? (guint64) block : 0;
    /* the handshake asked for TLS; a server that does not give it has failed already */
    if (uri->tls && !facts->tls) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "%s did not negotiate TLS",
                     uri->canonical);
        return FALSE;
    }
    if (nbd_is_read_only (nbd) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "export %s is read-only",
                     uri->canonical);
        return FALSE;
    }
    if (facts->size < need_size) {
        g_autofree gchar *have = vmr_units_format_bytes (facts->size);
        g_autofree gchar *need = vmr_units_format_bytes (need_size);

        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "export %s is smaller than the source (%s < %s)", uri->canonical, have, need);
        return FALSE;
    }
    nbd_shutdown (nbd, 0);
    return TRUE;
}
