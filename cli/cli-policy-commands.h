/*
 * Commands about the policy: policy check (local, no daemon), policy show
 * and reload.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_policy_check (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                   GError **error);
gboolean vmr_cli_cmd_policy_show (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                  GError **error);
gboolean vmr_cli_cmd_reload (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);

G_END_DECLS
