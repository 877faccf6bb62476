/*
 * virt-mirror cluster status and cluster jobs: the cluster as etcd holds
 * it, read through the local daemon.
 */
#pragma once

#include "cli-commands.h"

G_BEGIN_DECLS

gboolean vmr_cli_cmd_cluster_status (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                     GError **error);
gboolean vmr_cli_cmd_cluster_jobs (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                                   GError **error);

G_END_DECLS
