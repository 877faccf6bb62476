/*
 * Commands about migration jobs: migrate, jobs, job, pause, resume, cancel,
 * pivot, set-speed.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_migrate (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                              GError **error);
gboolean vmr_cli_cmd_jobs (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                           GError **error);
gboolean vmr_cli_cmd_job (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                          GError **error);
/* pause, resume, cancel and pivot: the control command "job-" + cmd->name on the job ID */
gboolean vmr_cli_cmd_job_step (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                               GError **error);
gboolean vmr_cli_cmd_set_copy_mode (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                    GError **error);
gboolean vmr_cli_cmd_set_speed (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                GError **error);

G_END_DECLS
