/*
 * `virt-mirror evacuate --cluster`: every daemon of the cluster evacuates
 * its own domains; with --wait, the command follows the whole evacuation,
 * on every host, to its end.
 */
#pragma once

#include "cli-session.h"

G_BEGIN_DECLS

/*
 * Sends @arguments (evacuate's, "cluster" added) and, with @wait, follows
 * each host's report until every host has ended, then prints one line per
 * host. FALSE with @error when the request was refused, or when a disk of
 * any host was not moved.
 */
gboolean vmr_cli_cluster_evacuate (VmrCliSession *session, JsonObject *arguments, gboolean wait,
                                   GError **error);

G_END_DECLS
