/*
 * What the files of VmrCluster share: the object itself, its jobs, and
 * its calls to etcd (cluster-request.c). cluster.c holds the object and
 * the admission of its jobs, cluster-connect.c the lease, the registration of what runs, the
 * view and its watch, cluster-publish.c what `cluster status` and
 * `cluster jobs` read of this daemon.
 */
#pragma once

#include "cluster-queue.h"
#include "cluster.h"
#include "etcd-client.h"

G_BEGIN_DECLS

/* a job of this daemon that has asked for a slot, or holds one */
typedef struct {
    gchar *job;
    gchar *key; /* its queue key */
    gchar *source;
    gchar *destination;
    gboolean started;    /* it holds a slot: its bulk copy runs */
    gboolean registered; /* its key is in etcd under the current lease, as it stands */
    gboolean in_flight;  /* a put or a transaction on its key is on its way */
    gboolean suspended;  /* its slot went with a lease that could not be kept alive */
} LocalJob;

/* cluster-budget.c: this host's shares of the storages' budgets, and every host's */
typedef struct _VmrClusterBudgets VmrClusterBudgets;

struct _VmrCluster {
    GObject parent_instance;

    VmrClusterConfig *config;
    VmrEtcdClient *client;
    GCancellable *cancellable;
    gchar *prefix;        /* /virt-mirror/NAME/queue/ */
    gchar *prefix_b64;    /* ... base64 */
    gchar *prefix_end;    /* the range's end, base64 */
    gchar *lease_id;      /* NULL: no lease */
    gboolean available;   /* the lease is alive, what runs is registered, the watch is open */
    gboolean left;        /* vmr_cluster_leave(): it connects no more */
    gboolean syncing;     /* a registration of what runs, a read and a watch are on their way */
    guint sync_pending;   /* puts of the sync not yet answered */
    gboolean sync_failed; /* ... one of them failed */
    gint64 last_sync;     /* when the last sync started, monotonic µs */
    guint keepalive_source;
    gboolean keepalive_in_flight;
    gint64 lease_confirmed; /* when the last keep-alive etcd answered was sent, monotonic µs */
    guint lease_deadline_source;  /* ... two thirds of the TTL after it: the slots are given up */
    guint keepalive_retry_source; /* a keep-alive failed: the next one sooner */
    gchar *lost_lease;            /* a lease given up so, revoked once etcd answers */
    gchar *lease_file;            /* the lease's ID kept across restarts, or NULL */
    gboolean resuming;            /* lease_id is an earlier run's, not yet known alive */
    gboolean lapsed;              /* ... it was not: that run's copies hold no slot */
    gboolean kept_from_earlier;   /* ... it was: that run's keys are under lease_id */
    GHashTable *local;            /* job id -> LocalJob * */
    GHashTable *released;         /* queue keys to delete once etcd answers */
    GHashTable *published;        /* job id -> its summary as published, JSON text */
    GHashTable *kept;             /* key -> value (text) put again at every sync */
    GHashTable *writes;    /* key -> its writes (cluster-publish.c), while one is on its way */
    VmrClusterQueue *view; /* every host's queue keys */
    gint64 view_revision;  /* etcd's revision the view stands at */
    VmrEtcdWatch *watch;
    gchar *instance;            /* this daemon's, stable across its restarts (its state) */
    gchar *machine_id;          /* /etc/machine-id, NULL when unknown */
    gchar *refused_by;          /* the lease that holds this host's name, while another's does */
    gchar *identity_error;      /* ... what it said of it */
    VmrEtcdWatch *holder_watch; /* ... the member key, followed until it goes */
    gboolean holder_watch_done; /* ... it went: the watch is freed at the next claim */
    VmrClusterBudgets *budgets; /* the storages' budgets shared across the cluster */
};

/* what a call's reply goes to: @reply NULL with @error when it failed; never after dispose */
typedef void (*ReplyFunc) (VmrCluster *self, JsonObject *reply, const GError *error,
                           gpointer user_data);

/* POSTs @body (consumed) to etcd's /v3/@method; @func gets the reply, then @destroy @data */
void vmr_cluster_call (VmrCluster *self, const gchar *method, JsonObject *body, ReplyFunc func,
                       gpointer data, GDestroyNotify destroy);
void vmr_cluster_emit_changed (VmrCluster *self);
/* etcd could not be reached (@error, or NULL: the watch ended): no new slot is taken */
void vmr_cluster_set_unavailable (VmrCluster *self, const GError *error);
/* a PutRequest of @local's queue key and value under the lease, in base64 */
JsonObject *vmr_cluster_put_job (VmrCluster *self, const LocalJob *local);
/* a PutRequest of @key and @value (text) under the lease, in base64 */
JsonObject *vmr_cluster_put_text (VmrCluster *self, const gchar *key, const gchar *value);
/* deletes @key (text); @func gets the reply */
void vmr_cluster_delete_key (VmrCluster *self, const gchar *key, ReplyFunc func);

/*
 * cluster-publish.c: puts @value (text) at @key under the lease, or deletes
 * @key when @value is NULL, after the write of @key on its way if there is
 * one: the writes of one key land in order, the newest last, and a value
 * that waits is replaced by a newer one.
 */
void vmr_cluster_write_key (VmrCluster *self, const gchar *key, const gchar *value);
/* as vmr_cluster_write_key(), and put again after every reconnection, under the new lease */
void vmr_cluster_keep_key (VmrCluster *self, const gchar *key, const gchar *value);
/* deletes @key, kept by vmr_cluster_keep_key(), which is put again no more */
void vmr_cluster_forget_key (VmrCluster *self, const gchar *key);
/* sends the writes that waited for a lease */
void vmr_cluster_flush_writes (VmrCluster *self);
/* the table of the writes of each key */
GHashTable *vmr_cluster_writes_new (void);

/* cluster-connect.c: takes a lease, keeps it alive, registers, reads and watches the queue */
void vmr_cluster_connect (VmrCluster *self);
/* ... and registers again, reads and watches, unless that is on its way */
void vmr_cluster_resync (VmrCluster *self);

/* what a claim of the host's name answers: @error NULL when it is this daemon's */
typedef void (*VmrClaimFunc) (VmrCluster *self, const GError *error);

/*
 * cluster-connect.c: puts the member key under the lease if no other
 * daemon's live lease holds the host's name; else says who does on one
 * line, and follows the key to try again (vmr_cluster_resync()) once it goes.
 */
void vmr_cluster_claim_host (VmrCluster *self, VmrClaimFunc done);

/* cluster-publish.c: puts again every job this daemon publishes, and the keys it keeps */
void vmr_cluster_publish_all (VmrCluster *self);

VmrClusterBudgets *vmr_cluster_budgets_new (void);
void vmr_cluster_budgets_free (VmrClusterBudgets *budgets);
/* closes the watch of the shares: the view is no longer followed */
void vmr_cluster_budgets_stop (VmrClusterBudgets *budgets);
/* reads every host's shares and follows them with a watch, under the current lease */
void vmr_cluster_budgets_sync (VmrCluster *self);
/*
 * what `cluster status` shows of the budgets: each storage with its budget,
 * the sum "held" and its "shares" (host, share, copies, lease), from
 * @shares (the values of the keys read, as vmr_etcd_kv_object() gives them)
 * and this host's budgets
 */
JsonArray *vmr_cluster_budgets_status (VmrCluster *self, GPtrArray *shares);
/* "shares-changed" if a share this host's copies may use changed (its lease went, ...) */
void vmr_cluster_budgets_notify (VmrCluster *self);

G_END_DECLS
