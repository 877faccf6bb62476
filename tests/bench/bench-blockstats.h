/*
 * QEMU's view of the guest's disk for the benchmarks: query-blockstats of
 * one device, sampled once a second on a QMP monitor while the main loop
 * runs, and the guest's IOPS and mean latency over a span read from the
 * samples (the operations and their total time, reads and writes).
 */
#pragma once

#include <glib.h>

#include "qmp-client.h"

G_BEGIN_DECLS

typedef struct _VmrBenchBlockstats VmrBenchBlockstats;

/*
 * Starts sampling the device whose qdev id is @device (e.g. "disk0") on
 * @qemu (a reference is kept) once a second, from the next second on.
 */
VmrBenchBlockstats *vmr_bench_blockstats_new (VmrQmpClient *qemu, const gchar *device);

/* stops the sampling; a query in flight is cancelled */
void vmr_bench_blockstats_free (VmrBenchBlockstats *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrBenchBlockstats, vmr_bench_blockstats_free)

/*
 * The device's mean read + write IOPS over the samples within
 * [@from_mono_us, @to_mono_us], counting only the seconds (between two
 * samples) with at least @min_iops (0: all of them); its mean latency in
 * *@out_latency_us (nullable). -1 when fewer than two samples fall in the
 * span, or no second counts.
 */
gdouble vmr_bench_blockstats_mean (const VmrBenchBlockstats *self, gint64 from_mono_us,
                                   gint64 to_mono_us, gdouble min_iops, gdouble *out_latency_us);

/* the samples taken so far */
guint vmr_bench_blockstats_count (const VmrBenchBlockstats *self);

G_END_DECLS
