/*
 * The chaos test's cluster mode (VMR_CHAOS_CLUSTER=1): the test's daemon,
 * host a, and a second daemon, host b, with a QEMU of its own, share a
 * cluster-wide max-parallel on a real 3-member etcd. Host a reaches the
 * members through proxies the faults cut; host b directly. Host b moves its
 * one disk back and forth each round. At the end, the job histories of both
 * daemons, on the one clock they share, never show more copies moving data
 * at once than the cluster's limit, as docs/cluster.md promises it: host a's
 * daemon, killed and started again, keeps its slots if it was back within
 * its lease's life; if not, the copies its QEMU ran on meanwhile count from
 * the kill on no more, but must have stopped within a third of the TTL of
 * its return.
 */
#pragma once

#include "chaos-harness.h"
#include "cut-proxy.h"
#include "etcd-fixture.h"

G_BEGIN_DECLS

/* the cluster's max-parallel and the daemons' lease TTL */
#define CHAOS_CLUSTER_MAX_PARALLEL 2
#define CHAOS_CLUSTER_TTL_S        4

typedef struct {
    VmrEtcdCluster etcd;
    VmrCutProxy *proxies[VMR_ETCD_MEMBERS]; /* host a's way to each member */
    VmrHarness *b;                          /* host b, its daemon and QEMU */
    gchar *expected;                        /* what host b's disk holds */
    gchar *paths[2];                        /* the two files host b's disk moves between */
    guint at;                               /* the one of @paths the disk is on now */
    gchar *job;                             /* host b's job of this round, or NULL */
    guint migrations;                       /* host b's jobs */
    guint lapses_seen; /* host a's log lines that say its lease expired while it was down */
    GArray *lapses;    /* ... [killed, back] real µs of each such restart */
    guint restarts;    /* host a's daemon's restarts */
} ChaosCluster;

/*
 * Starts etcd, host a's proxies and host b (its daemon available in the
 * cluster); FALSE, the test skipped, without etcd
 */
gboolean chaos_cluster_start (ChaosCluster *cl, VmrHarness *a);

/* the [cluster] section of host a's policy */
gchar *chaos_cluster_policy (ChaosCluster *cl);

/* host b's migration of the round, at @speed */
void chaos_cluster_migrate_b (ChaosCluster *cl, const gchar *speed);

/* lifts the speed limit of host b's job */
void chaos_cluster_unthrottle_b (ChaosCluster *cl);

/* waits until host b's job completed, checks its bytes (counted in @c) */
void chaos_cluster_wait_b (ChaosCluster *cl, Chaos *c);

/* etcd's leader stopped; returns its index */
guint chaos_cluster_stop_leader (ChaosCluster *cl);

/* host a's way to @member cut, or every way when @member is VMR_ETCD_MEMBERS */
void chaos_cluster_cut (ChaosCluster *cl, guint member);

/* every member running, nothing cut, etcd healthy */
void chaos_cluster_restore (ChaosCluster *cl);

/*
 * Host a's daemon, killed at @killed (real µs), is back now, its jobs picked
 * up: whether it kept its lease, or found it expired, is noted
 */
void chaos_cluster_note_restart (ChaosCluster *cl, Chaos *c, gint64 killed);

/*
 * The most copies that moved data at once across both daemons, from the job
 * records of their state directories; logged, and counted in @c as lost
 * when over the cluster's max-parallel
 */
void chaos_cluster_check_end (ChaosCluster *cl, Chaos *c);

void chaos_cluster_clear (ChaosCluster *cl);

G_END_DECLS
