/*
 * Cluster-wide admission on etcd, as etcd's semaphore recipe does it: each
 * daemon holds a lease, kept alive; each job that would start puts a queue
 * key under that lease, /virt-mirror/CLUSTER/queue/HOST/JOB; the keys,
 * ordered by their create revision, are the cluster's queue, first in first
 * out across hosts, and a job may start when it is within the cluster's
 * limits among them. A job takes its slot with a transaction that holds
 * only if no queue key changed since the view it decided on, and marks its
 * key started; a watch on the prefix keeps the view and says when to look
 * again. It knows no engine: the engine asks and is told of changes.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "cluster-config.h"

G_BEGIN_DECLS

#define VMR_TYPE_CLUSTER (vmr_cluster_get_type ())
G_DECLARE_FINAL_TYPE (VmrCluster, vmr_cluster, VMR, CLUSTER, GObject)

/* the reason of a job that waits because etcd cannot be reached */
#define VMR_CLUSTER_UNAVAILABLE "cluster unavailable"

/*
 * A member of the cluster @config names; it connects at once and again
 * whenever etcd comes back. @instance names this daemon among every
 * daemon (it stays the same across its restarts): its keys are made unique
 * by it, and a name held under it is this daemon's own. It joins only once
 * no other daemon's live lease holds its host's name. @lease_file (or
 * NULL) keeps the lease's ID across a restart: a lease an earlier run left
 * there that etcd still holds is kept alive and used again, with every key
 * under it (the slots of the copies that ran on meanwhile among them); one
 * that expired meanwhile leaves those copies without a slot
 * (vmr_cluster_hold()). Emits "changed" (no arguments) when a job may have
 * become free to start or to wait for another reason: ask again. NULL with
 * @error when the TLS files cannot be read.
 */
VmrCluster *vmr_cluster_new (const VmrClusterConfig *config, const gchar *instance,
                             const gchar *lease_file, GError **error);

/* the configuration it was made with */
const VmrClusterConfig *vmr_cluster_get_config (VmrCluster *self);

/* whether etcd answers and the daemon's lease and running copies are registered */
gboolean vmr_cluster_is_available (VmrCluster *self);

/*
 * Whether @job (reading @source, writing @destination: storage keys of
 * vmr_cluster_config_storage_key()) may start its copy now. The first
 * call registers it in the queue. FALSE sets @out_reason (free with
 * g_free()) and @out_limit (the key that holds it, "cluster" when etcd is
 * unavailable or the job is not yet in the queue); "changed" comes when
 * the answer may differ. Once TRUE, it stays TRUE until released.
 */
gboolean vmr_cluster_admit (VmrCluster *self, const gchar *job, const gchar *source,
                            const gchar *destination, const gchar **out_limit, gchar **out_reason);

/*
 * @job runs its bulk copy (it was adopted after a restart, or admitted):
 * it holds a slot, and is registered as such, before any new slot is taken.
 * An earlier run's copy whose lease expired while no daemon kept it alive
 * holds none: it is suspended (vmr_cluster_is_suspended()) as if its slot
 * had been given up with the lease.
 */
void vmr_cluster_hold (VmrCluster *self, const gchar *job, const gchar *source,
                       const gchar *destination);

/*
 * Whether @job's slot was given up with the lease: no keep-alive was
 * answered for two thirds of the lease's TTL, so the lease may expire and another
 * host take the slot. Its bulk copy must stop now and wait until
 * vmr_cluster_admit() grants it a slot again, under a new lease.
 */
gboolean vmr_cluster_is_suspended (VmrCluster *self, const gchar *job);

/* @job's bulk copy is over, or it will never run: its key goes */
void vmr_cluster_release (VmrCluster *self, const gchar *job);

/*
 * Publishes @summary (a job's members for `cluster jobs`; "host" is added)
 * under the lease at /virt-mirror/CLUSTER/jobs/HOST/JOB, now and after
 * every reconnection; unpublish removes it.
 */
void vmr_cluster_publish_job (VmrCluster *self, const gchar *job, JsonObject *summary);
void vmr_cluster_unpublish_job (VmrCluster *self, const gchar *job);

/*
 * Takes the limits and storages of @config at once (an admission pass
 * follows: "changed") when it names the same cluster, etcd endpoints,
 * credentials, host and lease TTL as the configuration in use. Else
 * nothing changes, @out_key (static) names the first key that differs, and
 * FALSE: only a new connection can take it.
 */
gboolean vmr_cluster_reconfigure (VmrCluster *self, const VmrClusterConfig *config,
                                  const gchar **out_key);

/*
 * Leaves the cluster for good: no more keep-alive, and the lease is
 * revoked, so that its keys go at once (the slots of the copies that run
 * here are free for the other hosts).
 */
void vmr_cluster_leave (VmrCluster *self);

/*
 * The storages' budgets across the cluster (cluster-budget.c): this host
 * has @copies copies on @storage, whose budget is @budget bytes/s, and they
 * use @used bytes/s (the sum of their speeds once every lower is answered).
 * With copies it holds a share in etcd, under its lease: the budget split
 * equally among the hosts that have copies on the storage; with none, it
 * holds no share. Emits "shares-changed" (no arguments) when what
 * vmr_cluster_budget_share() answers may have changed.
 */
void vmr_cluster_budget_demand (VmrCluster *self, const gchar *storage, guint64 budget,
                                guint copies, guint64 used);

/*
 * What this host's copies on @storage may use together now, bytes/s: no
 * more than the share etcd holds for it, nor than its equal share when
 * another host joined; 0 before a share is granted and once the lease went.
 */
guint64 vmr_cluster_budget_share (VmrCluster *self, const gchar *storage);

/* the client it talks to etcd with */
struct _VmrEtcdClient *vmr_cluster_get_client (VmrCluster *self);

/* how many requests went to etcd */
guint64 vmr_cluster_get_requests (VmrCluster *self);

G_END_DECLS
