/*
 * The copies QEMU itself ran, from the job events on the benchmarks' own
 * monitors, stamped with QEMU's clock: how many ran at once, whatever the
 * daemon says about its jobs.
 */
#pragma once

#include <glib.h>

#include "qmp-client.h"

G_BEGIN_DECLS

typedef struct _VmrBenchJobLog VmrBenchJobLog;

VmrBenchJobLog *vmr_bench_job_log_new (void);
void vmr_bench_job_log_free (VmrBenchJobLog *log);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrBenchJobLog, vmr_bench_job_log_free)

/*
 * Records the JOB_STATUS_CHANGE events of @client, a monitor of one QEMU,
 * until @log is freed or the client is. A job copies in bulk from its
 * "created" to its "ready" (also while "paused" before that), the span the
 * admission limits count; from "ready" on, or from its end if it never got
 * there, it does not.
 */
void vmr_bench_job_log_watch (VmrBenchJobLog *log, VmrQmpClient *client);

/*
 * The most copies that ran at one moment, on QEMU's timestamps. One that
 * ended when another started (QEMU's "ready" of one, then "created" of the
 * next) does not overlap it. Sets *@n_jobs (may be NULL) to the number of
 * jobs seen. Fails when a job was still copying or its events were out of
 * order.
 */
gboolean vmr_bench_job_log_max_copying (VmrBenchJobLog *log, guint *out_max, guint *n_jobs,
                                        GError **error);

/*
 * The most intervals [start, end) of @starts and @ends (of gdouble, the
 * same length) that overlap at one moment; an end and a start at the same
 * time do not overlap.
 */
guint vmr_bench_max_overlap (GArray *starts, GArray *ends);

G_END_DECLS
