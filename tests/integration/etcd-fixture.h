/*
 * A real etcd cluster for the tests: three members on free ports of
 * 127.0.0.1, their data in a directory of the test, each stopped and
 * started again on demand, killed with the test whatever kills it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define VMR_ETCD_MEMBERS 3

typedef struct {
    gchar *dir;
    guint client_ports[VMR_ETCD_MEMBERS];
    guint peer_ports[VMR_ETCD_MEMBERS];
    GPid pids[VMR_ETCD_MEMBERS]; /* 0 when stopped */
    /*
     * NULL: plain http. Else, set before starting, a directory as
     * vmr_nbd_make_pki() makes it: the members serve https with its
     * server/ certificate and ask for a client certificate of its CA.
     */
    const gchar *pki;
} VmrEtcdCluster;

/* starts the three members in @dir and waits until the cluster is healthy */
void vmr_etcd_cluster_start (VmrEtcdCluster *c, const gchar *dir);

/* "http://127.0.0.1:P1,http://127.0.0.1:P2,...", the members' client URLs; free with g_free() */
gchar *vmr_etcd_cluster_endpoints (VmrEtcdCluster *c);

/* stops member @i with SIGTERM and waits for it */
void vmr_etcd_cluster_stop_member (VmrEtcdCluster *c, guint i);

/* starts member @i again on its data */
void vmr_etcd_cluster_start_member (VmrEtcdCluster *c, guint i);

/* waits until every running member answers and the cluster has a leader */
void vmr_etcd_cluster_wait_healthy (VmrEtcdCluster *c);

/*
 * Runs `etcdctl --endpoints ENDPOINTS ARGS...` against the running members
 * of a plain-http cluster and returns its standard output; fails the test
 * when it exits non-zero.
 */
gchar *vmr_etcd_cluster_ctl (VmrEtcdCluster *c, const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/* the index of the member that is etcd's leader, from `etcdctl endpoint status`; fails without */
guint vmr_etcd_cluster_leader (VmrEtcdCluster *c);

/*
 * Runs `etcdctl txn` with no comparison and @ops (etcdctl's lines, "put
 * KEY \"VALUE\"" or "del KEY", one a line) as its success; fails the test
 * when it does not succeed.
 */
void vmr_etcd_cluster_txn (VmrEtcdCluster *c, const gchar *ops);

/* kills the members left and forgets the cluster */
void vmr_etcd_cluster_clear (VmrEtcdCluster *c);

G_END_DECLS
