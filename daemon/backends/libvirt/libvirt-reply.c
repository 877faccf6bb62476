#define G_LOG_DOMAIN "vmr-daemon"

#include "libvirt-reply.h"

#include <string.h>

#include "qmp-stream.h"
#include "vmr-error.h"

gboolean
vmr_libvirt_reply_check (const gchar *reply, const gchar *call, const gchar *domain, GError **error)
{
    /* strnlen: counting stops at the limit */
    if (strnlen (reply, (gsize) VMR_QMP_STREAM_MAX_LINE + 1) <= VMR_QMP_STREAM_MAX_LINE)
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                 "libvirt's reply to %s for %s is longer than %d MiB: not parsing it", call,
                 domain != NULL ? domain : "?", VMR_QMP_STREAM_MAX_LINE / (1024 * 1024));
    g_warning ("libvirt's reply to %s for %s is longer than %d MiB: refused", call,
               domain != NULL ? domain : "?", VMR_QMP_STREAM_MAX_LINE / (1024 * 1024));
    return FALSE;
}
