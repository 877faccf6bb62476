/*
 * `virt-mirror watch [ID...]`: a live view of the jobs, redrawn on the
 * daemon's events (JOB_STATE_CHANGED, JOB_PROGRESS); plain lines, one per
 * change, when stdout is not a terminal.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_watch (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                            GError **error);

G_END_DECLS
