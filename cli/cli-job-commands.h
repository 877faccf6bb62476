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
gboolean vmr_cli_cmd_pause (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                            GError **error);
gboolean vmr_cli_cmd_resume (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);
gboolean vmr_cli_cmd_cancel (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);
gboolean vmr_cli_cmd_pivot (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                            GError **error);
gboolean vmr_cli_cmd_set_copy_mode (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                    GError **error);
gboolean vmr_cli_cmd_set_speed (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                GError **error);

G_END_DECLS
