/*
 * The cluster's queue as one daemon sees it: every host's queue keys, read
 * from etcd and kept up to date from its watch, and the decision of
 * etcd's semaphore recipe on them: which waiting key is within the limits.
 * Pure: no I/O.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "cluster-config.h"

G_BEGIN_DECLS

/* a copy of this daemon that holds a slot, whether or not the view has its key yet */
typedef struct {
    const gchar *key;
    const gchar *source;
    const gchar *destination;
} VmrQueueCopy;

typedef struct _VmrClusterQueue VmrClusterQueue;

VmrClusterQueue *vmr_cluster_queue_new (void);
void vmr_cluster_queue_free (VmrClusterQueue *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrClusterQueue, vmr_cluster_queue_free)

/* forgets every key */
void vmr_cluster_queue_clear (VmrClusterQueue *self);

/* adds or replaces the key of etcd's KeyValue @kv (base64, as etcd's JSON has it) */
void vmr_cluster_queue_put (VmrClusterQueue *self, JsonObject *kv);

/* applies a watch's event: a PUT or a DELETE */
void vmr_cluster_queue_apply_event (VmrClusterQueue *self, JsonObject *event);

gboolean vmr_cluster_queue_contains (VmrClusterQueue *self, const gchar *key);
guint vmr_cluster_queue_size (VmrClusterQueue *self);

/*
 * Whether the waiting key @key is within the limits of @config: the
 * started copies count first (the view's, and @own's, this daemon's, even
 * before the view has them), then the waiting keys in the order of their
 * create revision, each taking a slot if it fits. A key held by a
 * per-storage limit is first in line in its storage: the later ones of
 * that storage wait behind it. FALSE sets @out_limit (the limit's key, or
 * "cluster" when @key is not in the view) and @out_reason.
 */
gboolean vmr_cluster_queue_admits (VmrClusterQueue *self, const VmrClusterConfig *config,
                                   const VmrQueueCopy *own, guint n_own, const gchar *key,
                                   const gchar **out_limit, gchar **out_reason);

/* the revision of a reply's header, or 0 */
gint64 vmr_etcd_json_revision (JsonObject *reply);

G_END_DECLS
