#include "nbd-handle.h"

#include "vmr-error.h"

VmrNbdHandle *
vmr_nbd_handle_new (const gchar *name, GError **error)
{
    VmrNbdHandle *nbd = nbd_create ();

    if (nbd == NULL) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot make an NBD handle");
        return NULL;
    }
    if (name != NULL && nbd_set_handle_name (nbd, name) == -1) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot name the NBD handle");
        nbd_close (nbd);
        return NULL;
    }
    return nbd;
}

void
vmr_nbd_set_error (GError **error, gint code, const gchar *what)
{
    const gchar *message = nbd_get_error ();

    g_set_error (error, VMR_ERROR, code, "%s: %s", what,
                 message != NULL ? message : "unknown libnbd error");
}
