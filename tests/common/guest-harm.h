/*
 * What a copy costs the guest, as the benchmarks and the integration tests
 * judge it: the harm of a span against a baseline, the spread of the
 * baseline's own windows (the noise), and QEMU's counters of the guest's
 * device in a reply of query-blockstats.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/*
 * The harm of a span against a baseline: max (latency during / before - 1,
 * 1 - IOPS during / before), at least 0; 0 without a baseline. A latency
 * of 0 (none measured) leaves the latency out.
 */
gdouble vmr_guest_harm (gdouble before_iops, gdouble before_lat_us, gdouble during_iops,
                        gdouble during_lat_us);

/* how far a window's @iops and @lat_us are from the medians, either way: max (|ratio - 1|) */
gdouble vmr_guest_window_deviation (gdouble median_iops, gdouble median_lat_us, gdouble iops,
                                    gdouble lat_us);

/* QEMU's counters of one device: what it completed, reads and writes together */
typedef struct {
    gint64 ops;     /* reads + writes completed so far */
    gint64 time_ns; /* their total time */
} VmrBlockCounters;

/*
 * The counters of the device whose qdev id is @device (e.g. "disk0") in
 * @reply, the return of query-blockstats; FALSE when it is not there.
 */
gboolean vmr_block_counters_read (JsonNode *reply, const gchar *device, VmrBlockCounters *out);

/*
 * The IOPS between two readings @span_us apart, and the mean latency of
 * those I/Os in *@out_latency_us (0 when none completed); -1 for no span.
 */
gdouble vmr_block_counters_iops (const VmrBlockCounters *from, const VmrBlockCounters *to,
                                 gint64 span_us, gdouble *out_latency_us);

G_END_DECLS
