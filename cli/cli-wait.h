/*
 * `migrate --wait` and `evacuate --wait`: following jobs to their end, with
 * the pace of the polls shared by every wait.
 */
#pragma once

#include "cli-job.h"
#include "cli-session.h"

G_BEGIN_DECLS

/* how often a wait asks virt-mirrord where its jobs stand */
#define VMR_CLI_WAIT_POLL_INTERVAL_MS 200
/* plain output goes to logs: a progress line at most this often, not every poll */
#define VMR_CLI_WAIT_PRINT_INTERVAL_US (2 * G_USEC_PER_SEC)

typedef struct _VmrCliWaitPacer VmrCliWaitPacer;

/*
 * Paces the polls of a wait on @client (a reference is taken): the next poll
 * is due VMR_CLI_WAIT_POLL_INTERVAL_MS after the last, or at once when a
 * JOB_STATE_CHANGED event says that the job @job_id changed state (@job_id
 * NULL: that any job ended) or the connection closed, even while the last
 * poll was under way. While it lives, SIGINT and SIGTERM end the wait, not
 * the jobs. Free with vmr_cli_wait_pacer_free().
 */
VmrCliWaitPacer *vmr_cli_wait_pacer_new (VmrQmpClient *client, const gchar *job_id);

/* iterates the main context until the next poll is due: TRUE, or FALSE once a signal came */
gboolean vmr_cli_wait_pacer_next (VmrCliWaitPacer *self);

void vmr_cli_wait_pacer_free (VmrCliWaitPacer *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliWaitPacer, vmr_cli_wait_pacer_free)

/*
 * Follows @job until it ends: polls query-job at the pace of a
 * VmrCliWaitPacer for it. Unless the session prints JSON, shows the
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
