/*
 * The check of an NBD export before a copy is sent to it: connect (with TLS
 * when the URI asks for it), then what the export offers. Blocking libnbd
 * calls bounded by a timeout: call it on a thread of its own, never on the
 * daemon's main loop.
 */
#pragma once

#include <glib.h>

#include "nbd-uri.h"

G_BEGIN_DECLS

/* what the preflight found on the export, recorded in the job */
typedef struct {
    guint64 size;                 /* bytes */
    gboolean tls;                 /* the connection was TLS */
    gboolean structured_replies;  /* the server speaks them (sparse reads, block status) */
    gboolean can_zero;            /* NBD_CMD_WRITE_ZEROES */
    gboolean can_fast_zero;       /* ... that fails rather than write slowly */
    gboolean can_trim;            /* NBD_CMD_TRIM */
    gboolean can_flush;           /* NBD_CMD_FLUSH */
    guint64 preferred_block_size; /* bytes, 0 when the server names none */
} VmrNbdExportFacts;

/*
 * Connects to @uri within @timeout_ms, with TLS and the x509 files of
 * @tls_creds (ca-cert.pem, client-cert.pem, client-key.pem; may be NULL for a
 * URI without TLS) when the URI is nbds, reads what the export offers into
 * *@facts and disconnects. Fails, with VMR_ERROR_INVALID_ARGUMENT and one
 * line that names the URI and libnbd's reason, when the server cannot be
 * reached or refuses, has no such export, or the TLS handshake fails; when
 * the export is smaller than @need_size bytes or read-only. VMR_ERROR_TIMEOUT
 * when it did not answer in time.
 */
gboolean vmr_nbd_preflight (const VmrNbdUri *uri, const gchar *tls_creds, guint64 need_size,
                            guint timeout_ms, VmrNbdExportFacts *facts, GError **error);

G_END_DECLS
