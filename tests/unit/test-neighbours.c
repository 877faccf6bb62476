/*
 * A copy's neighbours (policy/neighbours.h): which disks are neighbours of
 * a copy (another disk on its source or destination storage, of any guest),
 * which of them sets the speed (the largest harm, over the copy's own
 * guest's; an idle one or one with no baseline never), and the reason that
 * names it. The storages are read from a policy file, as the daemon reads
 * them.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "neighbours.h"
#include "policy.h"

static const gchar storages[] = "[storage array-a]\n"
                                "paths = /srv/array-a\n"
                                "[storage array-b]\n"
                                "paths = /srv/array-b\n"
                                "[storage other]\n"
                                "paths = /srv/other\n";

typedef struct {
    VmrPolicy *policy;
    VmrControllerConfig config;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
    g_autoptr (GError) error = NULL;

    f->policy = vmr_policy_load_from_data ("s.conf", storages, &error);
    g_assert_no_error (error);
    vmr_controller_config_init (&f->config, 0.1, 1 << 20, 0);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
    vmr_policy_unref (f->policy);
}

/* a busy disk at @path: a baseline of 1000 IOPS at 500 us, now @latency_us */
static VmrNeighbour
disk_at (Fixture *f, const gchar *domain, const gchar *disk, const gchar *path, gdouble iops,
         gdouble latency_us)
{
    VmrNeighbour n = {
        .domain = domain,
        .disk = disk,
        .storage = vmr_policy_find_storage (f->policy, path),
        .load = { .time_us = 10 * G_USEC_PER_SEC,
                  .iops = iops,
                  .latency_us = latency_us,
                  .interval_us = G_USEC_PER_SEC },
        .baseline = { .iops = 1000, .latency_us = 500 },
        .has_baseline = TRUE,
    };

    return n;
}

/* a copy of web01 vda from array-a to array-b: the disks on either are its neighbours */
static void
test_which_disks (Fixture *f, gconstpointer data)
{
    const VmrStorage *a = vmr_policy_find_storage (f->policy, "/srv/array-a/web01.qcow2");
    const VmrStorage *b = vmr_policy_find_storage (f->policy, "/srv/array-b/new/web01.qcow2");
    VmrNeighbour own = disk_at (f, "web01", "vda", "/srv/array-a/web01.qcow2", 1000, 500);
    VmrNeighbour same_guest = disk_at (f, "web01", "vdb", "/srv/array-a/web01-b.qcow2", 1000, 500);
    VmrNeighbour on_source = disk_at (f, "db02", "vdb", "/srv/array-a/db02.qcow2", 1000, 500);
    VmrNeighbour on_dest = disk_at (f, "db03", "vda", "/srv/array-b/db03.qcow2", 1000, 500);
    VmrNeighbour elsewhere = disk_at (f, "db04", "vda", "/srv/other/db04.qcow2", 1000, 500);
    VmrNeighbour no_storage = disk_at (f, "db05", "vda", "/var/lib/db05.qcow2", 1000, 500);

    g_assert_nonnull (a);
    g_assert_nonnull (b);
    g_assert_false (vmr_neighbour_of (&own, "web01", "vda", a, b));
    g_assert_true (vmr_neighbour_of (&same_guest, "web01", "vda", a, b));
    g_assert_true (vmr_neighbour_of (&on_source, "web01", "vda", a, b));
    g_assert_true (vmr_neighbour_of (&on_dest, "web01", "vda", a, b));
    g_assert_false (vmr_neighbour_of (&elsewhere, "web01", "vda", a, b));
    g_assert_null (no_storage.storage);
    g_assert_false (vmr_neighbour_of (&no_storage, "web01", "vda", a, b));
    /* a copy whose destination is on no storage: only the source's disks */
    g_assert_false (vmr_neighbour_of (&on_dest, "web01", "vda", a, NULL));
    g_assert_true (vmr_neighbour_of (&on_source, "web01", "vda", a, NULL));
}

/* the largest harm wins, the own guest's on a tie; a disk elsewhere never */
static void
test_largest_wins (Fixture *f, gconstpointer data)
{
    const VmrStorage *a = vmr_policy_find_storage (f->policy, "/srv/array-a/x");
    VmrNeighbour candidates[] = {
        /* 1.20x its latency: harm 0.2 */
        disk_at (f, "db01", "vda", "/srv/array-a/db01.qcow2", 1000, 600),
        /* 1.31x: harm 0.31, the largest on the storage */
        disk_at (f, "db02", "vdb", "/srv/array-a/db02.qcow2", 1000, 655),
        /* 3x, but on a storage the copy does not touch */
        disk_at (f, "db04", "vda", "/srv/other/db04.qcow2", 1000, 1500),
    };
    gdouble harm = 0;

    g_assert_cmpint (vmr_neighbour_pick (&f->config, candidates, G_N_ELEMENTS (candidates), "web01",
                                         "vda", a, NULL, 0.05, &harm),
                     ==, 1);
    g_assert_cmpfloat_with_epsilon (harm, 0.31, 1e-9);
    /* the own guest harmed more: it sets the speed */
    g_assert_cmpint (vmr_neighbour_pick (&f->config, candidates, G_N_ELEMENTS (candidates), "web01",
                                         "vda", a, NULL, 0.5, &harm),
                     ==, -1);
    g_assert_cmpfloat_with_epsilon (harm, 0.5, 1e-9);
    /* a tie goes to the own guest */
    g_assert_cmpint (vmr_neighbour_pick (&f->config, candidates, G_N_ELEMENTS (candidates), "web01",
                                         "vda", a, NULL,
                                         vmr_neighbour_harm (&f->config, &candidates[1]), NULL),
                     ==, -1);
    /* fewer IOPS count as harm too: 0.6x its IOPS is 0.4 */
    candidates[0] = disk_at (f, "db01", "vda", "/srv/array-a/db01.qcow2", 600, 500);
    g_assert_cmpint (vmr_neighbour_pick (&f->config, candidates, G_N_ELEMENTS (candidates), "web01",
                                         "vda", a, NULL, 0.05, &harm),
                     ==, 0);
    g_assert_cmpfloat_with_epsilon (harm, 0.4, 1e-9);
}

/* an idle neighbour, or one with no baseline, never sets the speed; one that turned busy asks */
static void
test_idle_and_unmeasured (Fixture *f, gconstpointer data)
{
    const VmrStorage *a = vmr_policy_find_storage (f->policy, "/srv/array-a/x");
    VmrNeighbour idle_now = disk_at (f, "db01", "vda", "/srv/array-a/db01.qcow2", 1, 5000);
    VmrNeighbour unmeasured = disk_at (f, "db02", "vda", "/srv/array-a/db02.qcow2", 1000, 5000);
    VmrNeighbour turned_busy = disk_at (f, "db03", "vda", "/srv/array-a/db03.qcow2", 1000, 5000);
    VmrNeighbour candidates[3];

    unmeasured.has_baseline = FALSE;
    turned_busy.baseline.iops = 0;
    turned_busy.baseline.latency_us = 0;
    candidates[0] = idle_now;
    candidates[1] = unmeasured;
    candidates[2] = turned_busy;
    g_assert_cmpfloat (vmr_neighbour_harm (&f->config, &idle_now), ==, 0);
    g_assert_cmpint (
        vmr_neighbour_pick (&f->config, candidates, 3, "web01", "vda", a, NULL, -1, NULL), ==, -1);
    g_assert_false (vmr_neighbour_needs_baseline (&f->config, &idle_now));
    g_assert_true (vmr_neighbour_needs_baseline (&f->config, &unmeasured));
    g_assert_true (vmr_neighbour_needs_baseline (&f->config, &turned_busy));
    /* measured again, the busy one counts from its new baseline */
    turned_busy.baseline = (VmrLoadSample){ .iops = 1000, .latency_us = 2500 };
    g_assert_false (vmr_neighbour_needs_baseline (&f->config, &turned_busy));
    g_assert_cmpfloat_with_epsilon (vmr_neighbour_harm (&f->config, &turned_busy), 1.0, 1e-9);
}

/* the reason names the neighbour, its storage and its figure, then the controller's reason */
static void
test_reason (Fixture *f, gconstpointer data)
{
    VmrNeighbour db02 = disk_at (f, "db02", "vdb", "/srv/array-a/db02.qcow2", 1000, 655);
    VmrNeighbour fewer = disk_at (f, "db03", "vda", "/srv/array-b/db03.qcow2", 700, 500);
    g_autofree gchar *by_latency = vmr_neighbour_reason (&db02, "harm 31% over the target");
    g_autofree gchar *by_iops = vmr_neighbour_reason (&fewer, "in the band");

    g_assert_cmpstr (by_latency, ==,
                     "db02 vdb on storage array-a at 1.31x its latency; "
                     "harm 31% over the target");
    g_assert_cmpstr (by_iops, ==, "db03 vda on storage array-b at 0.70x its IOPS; in the band");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add ("/neighbours/which-disks", Fixture, NULL, fixture_set_up, test_which_disks,
                fixture_tear_down);
    g_test_add ("/neighbours/largest-wins", Fixture, NULL, fixture_set_up, test_largest_wins,
                fixture_tear_down);
    g_test_add ("/neighbours/idle-and-unmeasured", Fixture, NULL, fixture_set_up,
                test_idle_and_unmeasured, fixture_tear_down);
    g_test_add ("/neighbours/reason", Fixture, NULL, fixture_set_up, test_reason,
                fixture_tear_down);
    return g_test_run ();
}
