/*
 * What the two files of the cluster program share: the etcd cluster, the
 * three hosts and where their disks are, and the checks every case makes.
 */
#pragma once

#include "etcd-fixture.h"
#include "harness.h"

G_BEGIN_DECLS

#define N_HOSTS 3
#define N_DISKS 4
/* a copy at 1 MiB/s runs for about 3 s */
#define IMAGE_SIZE (3 * 1024 * 1024)
#define LIMIT      2
#define TTL_S      3
/* host 1's, whose daemon is restarted: longer than a restart takes */
#define RESTART_TTL_S 10
#define TIMEOUT_S     60

extern const gchar *const disk_ids[N_DISKS];

typedef struct {
    VmrHarness *hosts[N_HOSTS];
    VmrEtcdCluster etcd;
    guint limit;                       /* the cluster's max-parallel now */
    gchar *shared;                     /* the storage every host copies into */
    gchar *base;                       /* holds the next two: */
    gchar *evacuated;                  /* ... the one the cluster's evacuation empties it to */
    gchar *third;                      /* ... the next one */
    gchar *fourth;                     /* the last one, out of @base */
    gchar *expected[N_HOSTS][N_DISKS]; /* what each disk must hold */
    gchar *on[N_HOSTS][N_DISKS];       /* where each disk is now */
} Cluster;

extern Cluster cluster;

/* bulk copies (mirror jobs before ready) in every running QEMU of the cluster */
guint cluster_bulk_copies (void);

/*
 * The most bulk copies (copying, throttled or paused) the cluster ran at
 * once from @from to @to (microseconds since the epoch), by the job
 * histories of every running daemon; fails the test if that is over the
 * cluster's limit
 */
guint cluster_most_bulk_copies (gint64 from, gint64 to);

/* writes host @i's policy: its [cluster] of @endpoints, a cluster-wide max-parallel of @limit */
void cluster_write_policy (guint i, const gchar *endpoints, guint limit);

/* the jobs host @i lists */
guint cluster_count_jobs (guint i);

/* test-cluster-evacuate.c: the cases of `evacuate --cluster`, in order */
void test_cluster_evacuate (void);
void test_cluster_evacuate_fails (void);
void test_cluster_evacuate_late (void);

G_END_DECLS
