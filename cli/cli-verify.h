/*
 * `virt-mirror verify ID`, and the wait of `migrate --verify --wait`: a
 * job's verification followed to its end, and its result.
 */
#pragma once

#include "cli-commands.h"
#include "cli-job.h"
#include "cli-session.h"

G_BEGIN_DECLS

/*
 * Follows the verification of the completed job @id until it ends and,
 * unless the session prints JSON, prints a passed result. Sets @out_job
 * (may be NULL) to the final job object when the verification ended (free
 * with json_node_unref()). TRUE when it passed; FALSE with VMR_ERROR_FAILED
 * when the copy differs from its old source (the message names the first
 * ranges) or the verification could not be made, or with the error that cut
 * the wait off.
 */
gboolean vmr_cli_verify_wait (VmrCliSession *session, const gchar *id, JsonNode **out_job,
                              GError **error);

/* whether the job object @job will be verified (its "verify" member) */
gboolean vmr_cli_verify_requested (const VmrCliJob *job);

gboolean vmr_cli_cmd_verify (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);

G_END_DECLS
