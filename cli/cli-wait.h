/*
 * `migrate --wait`: following a job to its end.
 */
#pragma once

#include "cli-job.h"
#include "cli-session.h"

G_BEGIN_DECLS

/*
 * Follows @job until it ends: polls query-job every 200 ms, and at once on a
 * JOB_STATE_CHANGED event for it. Unless the session prints JSON, shows the
 * progress on stdout: a bar redrawn in place on a terminal, otherwise one line
 * per state change and a progress line at most every 2 s.
 *
 * Returns the final job when it completed (free with vmr_cli_job_free()).
 * Otherwise returns NULL with VMR_ERROR_FAILED when the job failed or was
 * cancelled (the message carries the reason) or the wait was interrupted by
 * SIGINT or SIGTERM (the job keeps running), or with the error that cut the
 * daemon off.
 */
VmrCliJob *vmr_cli_wait_job (VmrCliSession *session, const VmrCliJob *job, GError **error);

G_END_DECLS
