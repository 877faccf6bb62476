/*
 * A libnbd handle whose failures become GErrors: what every use of libnbd
 * in virt-mirror starts from.
 */
#pragma once

#include <glib.h>
#include <libnbd.h>

G_BEGIN_DECLS

typedef struct nbd_handle VmrNbdHandle;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrNbdHandle, nbd_close)

/*
 * A new handle, named @name in libnbd's debug messages (may be NULL). Sets
 * VMR_ERROR_FAILED when libnbd cannot make one.
 */
VmrNbdHandle *vmr_nbd_handle_new (const gchar *name, GError **error);

/*
 * Sets @error to @code with "@what: " and libnbd's message of the call
 * that failed last in this thread, e.g. "cannot connect to the export:
 * connect: Connection refused".
 */
void vmr_nbd_set_error (GError **error, gint code, const gchar *what);

G_END_DECLS
