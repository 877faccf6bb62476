/*
 * The split of a storage's budget among the hosts that use it, as one host
 * decides on its own share: the equal target, what its copies may use, and
 * the next write of its share towards the target (lower first, a raise only
 * into the room the other hosts' shares leave). Pure: no I/O; the caller
 * (cluster-budget.c) does the writes in etcd and the engine splits a host's
 * share among its copies with vmr_share_per_copy().
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* one host's part of one storage's budget */
typedef struct {
    guint64 budget;     /* bytes/s, the whole cluster's */
    guint copies;       /* this host's copies on the storage */
    guint64 used;       /* the sum of their speeds, every lower answered */
    guint64 granted;    /* what this host may use: its share in etcd, or less */
    gboolean held;      /* its key is in etcd under the current lease */
    gboolean in_flight; /* a write of its key is on its way */
} VmrShareState;

/* the other hosts with a share of the storage, in the view the host decides on */
typedef struct {
    guint hosts;
    guint64 shares; /* the sum of their shares */
} VmrShareOthers;

typedef enum {
    VMR_SHARE_KEEP,  /* nothing to write now */
    VMR_SHARE_DROP,  /* delete the key: no copy left, the share goes to the others */
    VMR_SHARE_LOWER, /* put the lower share, its copies already use no more */
    VMR_SHARE_RAISE, /* put the share by a transaction that holds if no share moved */
} VmrShareAction;

/* the equal split: @budget over the hosts holding a share, this one counted */
guint64 vmr_share_target (guint64 budget, const VmrShareOthers *others);

/* what the host's copies may use now: 0 without a lease or a share held */
guint64 vmr_share_usable (const VmrShareState *state, gboolean leased,
                          const VmrShareOthers *others);

/* the next write towards the equal share, and the share it puts in *out_share */
VmrShareAction vmr_share_next (const VmrShareState *state, const VmrShareOthers *others,
                               guint64 *out_share);

/*
 * @action, which vmr_share_next() decided, is on its way to etcd: a lower or
 * a drop is taken at once, so that the copies are not raised again over the
 * share being written; a raise only once etcd took it
 */
void vmr_share_begin (VmrShareState *state, VmrShareAction action, guint64 share);

/* etcd answered the write begun: @taken FALSE for a raise refused, a failure, an old lease's */
void vmr_share_written (VmrShareState *state, VmrShareAction action, guint64 share, gboolean taken);

/* a view shows this host's key under its lease (@present) with @share, or not */
void vmr_share_seen (VmrShareState *state, gboolean present, guint64 share);

/*
 * one copy's speed of @share split among @n_copies, no more than @room (what
 * the other copies' speeds leave), and at least 1 byte/s: 0 is unlimited in QEMU
 */
guint64 vmr_share_per_copy (guint64 share, guint n_copies, guint64 room);

G_END_DECLS
