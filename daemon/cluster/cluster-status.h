/*
 * What the cluster looks like, read from etcd at the moment it is asked:
 * the members (each daemon's key under its lease), the jobs every daemon
 * publishes under its lease, and the queue with its slots.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "cluster.h"

G_BEGIN_DECLS

/*
 * Reads every key of the cluster. The object of _finish (free with
 * json_object_unref()) has "name", "host" (this daemon's), "available",
 * "endpoint", "max-parallel", "members" (host, lease, ttl), "jobs" (as each
 * daemon published them, with its host) and "queue" (oldest first: host,
 * job, source, destination, started) and "budgets" (each budgeted storage:
 * storage, budget, held, and its shares: host, share, copies, lease);
 * VMR_ERROR_DISCONNECTED when no etcd member answers.
 */
void vmr_cluster_status_async (VmrCluster *self, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
JsonObject *vmr_cluster_status_finish (VmrCluster *self, GAsyncResult *result, GError **error);

G_END_DECLS
