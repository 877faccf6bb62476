#define G_LOG_DOMAIN "vmr-daemon"

#include "control-limits.h"

#include "vmr-error.h"

struct _VmrControlClients {
    VmrControlLimits limits;
    gint64 root_uid;
    GHashTable *by_uid; /* gint64 * uid -> connections (GUINT_TO_POINTER), none: 0 */
    guint total;        /* every user's */
    guint others;       /* of the users other than root */
};

void
vmr_control_limits_init (VmrControlLimits *limits)
{
    limits->max_clients = VMR_CONTROL_DEFAULT_MAX_CLIENTS;
    limits->max_clients_per_user = VMR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER;
    limits->idle_timeout_s = VMR_CONTROL_DEFAULT_IDLE_TIMEOUT_S;
}

gboolean
vmr_control_limits_check (const VmrControlLimits *limits, guint64 max_files, GError **error)
{
    if (limits->max_clients < 2) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "--max-clients must be at least 2: one for root, one for the others");
        return FALSE;
    }
    if (limits->max_clients_per_user < 1) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "--max-clients-per-user must be at least 1");
        return FALSE;
    }
    /* each client is a descriptor: the other half is for QEMU monitors, destinations, records */
    if (max_files > 0 && limits->max_clients > max_files / 2) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "--max-clients %u is more than half of the %" G_GUINT64_FORMAT
                     " files the daemon may open: lower it, or raise LimitNOFILE",
                     limits->max_clients, max_files);
        return FALSE;
    }
    return TRUE;
}

VmrControlClients *
vmr_control_clients_new (const VmrControlLimits *limits, gint64 root_uid)
{
    VmrControlClients *self = g_new0 (VmrControlClients, 1);

    self->limits = *limits;
    self->root_uid = root_uid;
    self->by_uid = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
    return self;
}

void
vmr_control_clients_free (VmrControlClients *self)
{
    if (self == NULL)
        return;
    g_hash_table_unref (self->by_uid);
    g_free (self);
}

guint
vmr_control_clients_count (VmrControlClients *self, gint64 uid)
{
    return GPOINTER_TO_UINT (g_hash_table_lookup (self->by_uid, &uid));
}

guint
vmr_control_clients_total (VmrControlClients *self)
{
    return self->total;
}

static void
set_count (VmrControlClients *self, gint64 uid, guint count)
{
    if (count == 0)
        g_hash_table_remove (self->by_uid, &uid);
    else
        g_hash_table_insert (self->by_uid, g_memdup2 (&uid, sizeof uid), GUINT_TO_POINTER (count));
}

gboolean
vmr_control_clients_admit (VmrControlClients *self, gint64 uid, GError **error)
{
    guint held = vmr_control_clients_count (self, uid);
    gboolean root = uid == self->root_uid;

    if (self->total >= self->limits.max_clients) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                     "the daemon holds %u connections already (--max-clients): try again later",
                     self->total);
        return FALSE;
    }
    if (!root && held >= self->limits.max_clients_per_user) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                     "uid %" G_GINT64_FORMAT " holds %u connections already "
                     "(--max-clients-per-user): close one first",
                     uid, held);
        return FALSE;
    }
    if (!root && self->others >= self->limits.max_clients / 2) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                     "users other than root hold %u connections already, half of "
                     "--max-clients: try again later",
                     self->others);
        return FALSE;
    }
    set_count (self, uid, held + 1);
    self->total++;
    if (!root)
        self->others++;
    return TRUE;
}

void
vmr_control_clients_release (VmrControlClients *self, gint64 uid)
{
    guint held = vmr_control_clients_count (self, uid);

    g_return_if_fail (held > 0 && self->total > 0);
    set_count (self, uid, held - 1);
    self->total--;
    if (uid != self->root_uid)
        self->others--;
}

guint
vmr_control_clients_idle_timeout (VmrControlClients *self, gint64 uid)
{
    return uid == self->root_uid ? 0 : self->limits.idle_timeout_s;
}
