/*
 * Commands about domains and the daemon: attach, detach, domains, version.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_attach (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);
gboolean vmr_cli_cmd_detach (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);
gboolean vmr_cli_cmd_domains (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                              GError **error);
gboolean vmr_cli_cmd_metrics (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                              GError **error);
gboolean vmr_cli_cmd_version (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                              GError **error);

G_END_DECLS
