/*
 * A guest disk's recent load: turns the cumulative I/O counters a backend
 * reports into per-interval samples (IOPS and mean latency) and keeps the
 * recent ones for the policy.
 */
#pragma once

#include <glib.h>

#include "decision.h"

G_BEGIN_DECLS

/* cumulative guest I/O counters of one disk, as QEMU keeps them */
typedef struct {
    guint64 read_ops;
    guint64 write_ops;
    guint64 read_time_ns;
    guint64 write_time_ns;
} VmrIoCounters;

typedef struct _VmrLoadHistory VmrLoadHistory;

VmrLoadHistory *vmr_load_history_new (void);
void vmr_load_history_free (VmrLoadHistory *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrLoadHistory, vmr_load_history_free)

/*
 * Adds a reading taken at monotonic time @now_us. The first reading only sets
 * the base; each later one adds a sample for the interval since the previous.
 * Counters that went backwards (a device re-created) restart the base.
 * Samples older than @keep_us are dropped.
 */
void vmr_load_history_add (VmrLoadHistory *self, const VmrIoCounters *counters, gint64 now_us,
                           gint64 keep_us);

/* the samples, oldest first; owned by @self, valid until the next add */
const VmrLoadSample *vmr_load_history_get_samples (VmrLoadHistory *self, guint *out_n);

/* the newest sample, or NULL */
const VmrLoadSample *vmr_load_history_latest (VmrLoadHistory *self);

/*
 * The wall clock (g_get_real_time()) when the newest sample was added, its
 * interval's end as metrics give it, the same at every read; 0 without one
 */
gint64 vmr_load_history_latest_wall_time (VmrLoadHistory *self);

G_END_DECLS
