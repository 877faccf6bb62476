/*
 * Evacuations across the cluster, on etcd's keys and a watch: the host the
 * command runs on puts the request, /virt-mirror/CLUSTER/evacuations/ID/request,
 * under its lease; every daemon watches /virt-mirror/CLUSTER/evacuations/,
 * is told of each new request ("request"), runs its own evacuation of it
 * and publishes how it goes under its own lease,
 * /virt-mirror/CLUSTER/evacuations/ID/hosts/HOST. Whoever follows the
 * evacuation is answered at each change of those keys, never by polling.
 */
#pragma once

#include "cluster.h"

G_BEGIN_DECLS

#define VMR_TYPE_CLUSTER_EVACUATIONS (vmr_cluster_evacuations_get_type ())
G_DECLARE_FINAL_TYPE (VmrClusterEvacuations, vmr_cluster_evacuations, VMR, CLUSTER_EVACUATIONS,
                      GObject)

/*
 * Watches the evacuations of @cluster. Emits "request" (a JsonObject: "id",
 * "host", "from", "to", and "domains", "format", "speed" when given) for
 * each request put while it watches, and, each time it opens its watch
 * (at start, and again whenever it ended), for each request still open
 * that has no report of this host: the receiver makes sure it takes part
 * once only.
 */
VmrClusterEvacuations *vmr_cluster_evacuations_new (VmrCluster *cluster);

/*
 * Puts @request (its members as "request" has them but "id" and "host",
 * which it adds) for every daemon of the cluster; _finish returns the new
 * evacuation's id (free with g_free()), or NULL with VMR_ERROR_DISCONNECTED
 * when etcd is unavailable.
 */
void vmr_cluster_evacuations_submit_async (VmrClusterEvacuations *self, JsonObject *request,
                                           GAsyncReadyCallback callback, gpointer user_data);
gchar *vmr_cluster_evacuations_submit_finish (VmrClusterEvacuations *self, GAsyncResult *result,
                                              GError **error);

/*
 * A request this daemon put is deleted ENDED_KEEP_S after every member
 * reported it ended. Emits "gone" (the id, a string) when a request's key
 * is deleted while it watches, and "open" (a GHashTable whose keys are the
 * ids of the requests open) each time it opens its watch: a request not
 * open any more went meanwhile.
 */

/* publishes @report (this host's part of evacuation @id; "host" is added) under the lease */
void vmr_cluster_evacuations_report (VmrClusterEvacuations *self, const gchar *id,
                                     JsonObject *report);

/* deletes this host's report of evacuation @id, which is put again no more */
void vmr_cluster_evacuations_forget (VmrClusterEvacuations *self, const gchar *id);

/*
 * Evacuation @id as the cluster has it, once a key of it changed past
 * @after (etcd's revision; 0: at once). The object of _finish (free with
 * json_object_unref()) has "id", "revision", "request" (or null once its
 * key is gone), "hosts" (each host's report) and "members" (the hosts of
 * the cluster, by name).
 */
void vmr_cluster_evacuations_query_async (VmrClusterEvacuations *self, const gchar *id,
                                          gint64 after, GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data);
JsonObject *vmr_cluster_evacuations_query_finish (VmrClusterEvacuations *self, GAsyncResult *result,
                                                  GError **error);

G_END_DECLS
