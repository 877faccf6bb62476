/*
 * `virt-mirror report ID`: a job's timeline as a text summary, as the
 * daemon's raw series (--json), or drawn as an SVG picture (--svg FILE).
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_report (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                             GError **error);

G_END_DECLS
