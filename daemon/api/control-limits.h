/*
 * How many control connections the daemon holds at once, and how long a
 * client may stay silent (docs/protocol.md): at most max_clients on both
 * sockets together; of those, a user other than root holds at most
 * max_clients_per_user, and all such users together at most half of
 * max_clients, so that root's own clients (the CLI, the hook) always find
 * room. Pure counting: the control server asks before it serves a
 * connection and says when one closes.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the daemon's defaults; 1024 descriptors of the unit's LimitNOFILE=8192 */
#define VMR_CONTROL_DEFAULT_MAX_CLIENTS          1024
#define VMR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER 32
#define VMR_CONTROL_DEFAULT_IDLE_TIMEOUT_S       600

typedef struct {
    guint max_clients;          /* connections at once, both sockets, every user; >= 2 */
    guint max_clients_per_user; /* ... of one user other than root; >= 1 */
    guint idle_timeout_s;       /* a client of another user than root that sends nothing for
                                   this long is cut off; 0: never */
} VmrControlLimits;

/* the defaults above */
void vmr_control_limits_init (VmrControlLimits *limits);

/*
 * FALSE with VMR_ERROR_INVALID_ARGUMENT, one line naming the option, when
 * @limits cannot work: under 2 clients, none per user, or more clients
 * than half of @max_files (the open-file limit, 0: not known) leaves for
 * QEMU monitors, destinations and records.
 */
gboolean vmr_control_limits_check (const VmrControlLimits *limits, guint64 max_files,
                                   GError **error);

/* the connections held, by user */
typedef struct _VmrControlClients VmrControlClients;

/* no connection yet, under @limits (copied); @root_uid is the daemon's own user */
VmrControlClients *vmr_control_clients_new (const VmrControlLimits *limits, gint64 root_uid);
void vmr_control_clients_free (VmrControlClients *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrControlClients, vmr_control_clients_free)

/*
 * Counts a connection of @uid (-1: not known, a user other than root) and
 * returns TRUE, or returns FALSE with VMR_ERROR_BUSY, one line saying which
 * limit it would pass, and counts nothing.
 */
gboolean vmr_control_clients_admit (VmrControlClients *self, gint64 uid, GError **error);

/* a connection of @uid that vmr_control_clients_admit() counted has closed */
void vmr_control_clients_release (VmrControlClients *self, gint64 uid);

/* the connections counted of @uid */
guint vmr_control_clients_count (VmrControlClients *self, gint64 uid);

/* the connections counted of every user */
guint vmr_control_clients_total (VmrControlClients *self);

/* the silence a client of @uid may keep, in seconds, 0: forever (root's clients) */
guint vmr_control_clients_idle_timeout (VmrControlClients *self, gint64 uid);

G_END_DECLS
