/*
 * `virt-mirror evacuate`: moving every disk under one directory to another,
 * and following the moves.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_evacuate (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                               GError **error);

G_END_DECLS
