#define G_LOG_DOMAIN "vmr-test"

/*
 * Cluster-wide admission against a real 3-member etcd cluster: three
 * daemons as three hosts, each with its own socket, state and guest-less
 * QEMU, copying into one shared storage directory under a cluster-wide
 * max-parallel of 2. Every QEMU's query-block-jobs is polled throughout
 * and never shows more than 2 bulk copies in the whole cluster; jobs start
 * in the order they were submitted across hosts; a host killed with -9
 * frees its slots within the lease's TTL; one etcd member stopped changes
 * nothing; all of them stopped, the jobs that wait say "cluster
 * unavailable", the running copies complete, and work resumes once etcd is
 * back; a daemon restarted picks its slots up with its jobs, and one that
 * lost its lease takes a new one and registers again; `evacuate --cluster`
 * moves the disks of the three hosts, each daemon its own, under the limit,
 * followed to its end. Every destination holds the bytes of its source. One etcd cluster and the
 * same daemons serve every case, in order.
 */

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "etcd-fixture.h"
#include "harness.h"

#define N_HOSTS 3
#define N_DISKS 4
/* a copy at 1 MiB/s runs for about 3 s */
#define IMAGE_SIZE (3 * 1024 * 1024)
#define LIMIT      2
#define TTL_S      3
/* host 1's, whose daemon is restarted: longer than a restart takes */
#define RESTART_TTL_S 10
#define TIMEOUT_S     60

static const gchar *const disk_ids[N_DISKS] = { "disk0", "disk1", "disk2", "disk3" };

typedef struct {
    VmrHarness *hosts[N_HOSTS];
    VmrEtcdCluster etcd;
    gchar *shared;                     /* the storage every host copies into */
    gchar *evacuated;                  /* ... and the one the cluster's evacuation empties it to */
    gchar *expected[N_HOSTS][N_DISKS]; /* what each disk must hold */
    gchar *on[N_HOSTS][N_DISKS];       /* where each disk is now */
} Cluster;

static Cluster cluster;

typedef struct {
    guint host;
    guint disk;
    gchar *id;
    gchar *dest;
} Copy;

static void
copy_clear (Copy *copy)
{
    g_clear_pointer (&copy->id, g_free);
    g_clear_pointer (&copy->dest, g_free);
}

/* bulk copies (mirror jobs before ready) in every running QEMU of the cluster */
static guint
cluster_bulk_copies (void)
{
    guint total = 0;

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autoptr (JsonNode) reply = NULL;
        JsonArray *array;

        if (cluster.hosts[i]->qemu == NULL)
            continue;
        reply = vmr_harness_qmp (cluster.hosts[i], "query-block-jobs", NULL);
        array = vmr_harness_json_node_array (reply);
        for (guint j = 0; j < json_array_get_length (array); j++) {
            if (vmr_harness_is_bulk_copy (vmr_harness_json_element (array, j)))
                total++;
        }
    }
    return total;
}

static JsonObject *
get_job (const Copy *copy)
{
    return vmr_harness_get_job (cluster.hosts[copy->host], copy->id);
}

/* submits the copy of @disk of @host to a new file of the shared storage, at @speed */
static void
submit_at (Copy *copy, guint host, guint disk, const gchar *round, const gchar *speed)
{
    g_autofree gchar *name = g_strdup_printf ("%s-h%u-%s.raw", round, host, disk_ids[disk]);

    copy->host = host;
    copy->disk = disk;
    copy->dest = g_build_filename (cluster.shared, name, NULL);
    copy->id = vmr_harness_migrate (cluster.hosts[host], "vm", disk_ids[disk], copy->dest,
                                    "--speed", speed, NULL);
}

/* ... at 1 MiB/s */
static void
submit (Copy *copy, guint host, guint disk, const gchar *round)
{
    submit_at (copy, host, disk, round, VMR_HARNESS_SLOW_SPEED);
}

/* waits until @copy has its place in the cluster's queue: it runs, or a limit holds it */
static void
wait_queued (const Copy *copy)
{
    gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonObject) job = get_job (copy);
        JsonObject *decision = vmr_harness_json_object (job, "policy");
        const gchar *reason = vmr_harness_json_is_null (decision, "reason")
                                  ? NULL
                                  : vmr_harness_json_string (decision, "reason");

        if (g_strcmp0 (vmr_harness_json_string (job, "state"), "queued") != 0
            || (reason != NULL && g_str_has_prefix (reason, "held by the cluster's")))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s of host %u has no place in the cluster's queue: %s", copy->id,
                      copy->host, reason != NULL ? reason : "no reason");
        g_usleep (50 * 1000);
    }
}

static const gchar *
state_of (JsonObject *job)
{
    return vmr_harness_json_string (job, "state");
}

/*
 * Polls every QEMU until each of @copies has completed, failing if the
 * cluster ever runs more bulk copies than the limit; returns the most seen.
 */
static guint
run_to_end (Copy *copies, guint n)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    guint most = 0;
    gboolean done = FALSE;

    while (!done) {
        guint running = cluster_bulk_copies ();

        if (running > LIMIT)
            vmr_fail ("%u bulk copies at once in the cluster, its limit is %u", running, LIMIT);
        most = MAX (most, running);
        done = TRUE;
        for (guint i = 0; i < n; i++) {
            g_autoptr (JsonObject) job = get_job (&copies[i]);
            const gchar *state = state_of (job);

            if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
                vmr_fail ("job %s of host %u ended %s", copies[i].id, copies[i].host, state);
            done = done && g_str_equal (state, "completed");
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the copies did not complete in %d s", TIMEOUT_S);
        g_usleep (50 * 1000);
    }
    for (guint i = 0; i < n; i++) {
        Copy *copy = &copies[i];

        vmr_harness_assert_disk_on (cluster.hosts[copy->host], disk_ids[copy->disk], copy->dest);
        vmr_harness_assert_image_equals (copy->dest, "raw",
                                         cluster.expected[copy->host][copy->disk]);
        g_free (cluster.on[copy->host][copy->disk]);
        cluster.on[copy->host][copy->disk] = g_strdup (copy->dest);
    }
    return most;
}

static void
start_host (guint i, const gchar *endpoints)
{
    VmrHarness *h = cluster.hosts[i];
    VmrHarnessDisk disks[N_DISKS];
    g_autofree gchar *policy = NULL;
    g_autofree gchar *text = NULL;
    g_autofree gchar *log = NULL;

    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("source-%s.raw", disk_ids[d]);

        cluster.on[i][d] = vmr_harness_create_image (h, name, "raw", IMAGE_SIZE, 0xc1 + 16 * i + d);
        cluster.expected[i][d] = vmr_harness_expected_path (cluster.on[i][d]);
        disks[d] = (VmrHarnessDisk){ disk_ids[d], cluster.on[i][d], "raw", NULL };
    }
    text = g_strdup_printf ("[defaults]\nmax-parallel = 4\nmax-parallel-per-iothread = 0\n"
                            "[cluster]\nname = test\netcd = %s\nhost = host%u\n"
                            "max-parallel = %u\nlease-ttl = %us\nstorage = %s\n",
                            endpoints, i, LIMIT, i == 1 ? RESTART_TTL_S : TTL_S, cluster.shared);
    policy = vmr_harness_write_policy (h, text);
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");
}

/* `cluster status` and `cluster jobs` on host 2, while the copies of @copies wait and run */
static void
check_cluster_view (Copy *copies, guint n)
{
    VmrHarness *h = cluster.hosts[2];
    g_autoptr (JsonNode) status_node = vmr_harness_cli_json (h, "cluster", "status", NULL);
    g_autoptr (JsonNode) jobs_node = vmr_harness_cli_json (h, "cluster", "jobs", NULL);
    g_autoptr (VmrCliResult) text = vmr_harness_cli (h, "cluster", "status", NULL);
    JsonObject *status = vmr_harness_json_node_object (status_node);
    JsonArray *members = vmr_harness_json_array (status, "members");
    JsonArray *queue = vmr_harness_json_array (status, "queue");
    JsonArray *jobs = vmr_harness_json_array (vmr_harness_json_node_object (jobs_node), "jobs");
    guint taken = 0;

    vmr_cli_result_assert_ok (text);
    g_assert_nonnull (strstr (text->out, "Cluster test, seen from host2"));
    g_assert_cmpstr (vmr_harness_json_string (status, "host"), ==, "host2");
    g_assert_true (vmr_harness_json_bool (status, "available"));
    g_assert_cmpuint (json_array_get_length (members), ==, N_HOSTS);
    for (guint i = 0; i < json_array_get_length (queue); i++)
        taken += vmr_json_bool_or (vmr_harness_json_element (queue, i), "started", FALSE);
    g_assert_cmpuint (taken, <=, LIMIT);
    /* every job of every host that waits is there, with its host */
    for (guint i = 0; i < n; i++) {
        g_autoptr (JsonObject) job = get_job (&copies[i]);
        g_autofree gchar *host = g_strdup_printf ("host%u", copies[i].host);
        gboolean listed = FALSE;

        if (!g_str_equal (state_of (job), "queued"))
            continue;
        for (guint j = 0; j < json_array_get_length (jobs); j++) {
            JsonObject *published = vmr_harness_json_element (jobs, j);

            listed = listed
                     || (g_str_equal (vmr_harness_json_string (published, "host"), host)
                         && g_str_equal (vmr_harness_json_string (published, "id"), copies[i].id));
        }
        if (!listed)
            vmr_fail ("cluster jobs on host 2 does not list %s of %s", copies[i].id, host);
    }
}

/* the limit, never exceeded; first in, first out across the hosts; the bytes */
static void
test_limit_and_order (void)
{
    Copy copies[6] = { 0 };
    g_autoptr (GPtrArray) order = g_ptr_array_new ();
    gint64 previous_start = 0;

    /* h0 d0, h1 d0, h2 d0, h0 d1, h1 d1, h2 d1, each in the queue before the next */
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        submit (&copies[i], i % N_HOSTS, i / N_HOSTS, "limit");
        wait_queued (&copies[i]);
        g_assert_cmpuint (cluster_bulk_copies (), <=, LIMIT);
    }
    check_cluster_view (copies, G_N_ELEMENTS (copies));
    for (guint i = LIMIT + 1; i < G_N_ELEMENTS (copies); i++) {
        g_autoptr (JsonObject) job = get_job (&copies[i]);

        /* the later ones wait, and name the cluster's limit */
        if (g_str_equal (state_of (job), "queued"))
            g_assert_cmpstr (vmr_harness_json_string (job, "waiting-for"), ==,
                             "cluster max-parallel");
    }
    g_assert_cmpuint (run_to_end (copies, G_N_ELEMENTS (copies)), ==, LIMIT);
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        g_autoptr (JsonObject) job = get_job (&copies[i]);
        gint64 started = vmr_json_job_first_time (job, "copying");

        g_assert_cmpint (started, >, 0);
        if (started < previous_start)
            vmr_fail ("job %s of host %u started before the one submitted ahead of it",
                      copies[i].id, copies[i].host);
        previous_start = started;
        copy_clear (&copies[i]);
    }
}

/* host 0 dies with two slots: the others get them once its lease expires */
static void
test_host_dies (void)
{
    Copy copies[3] = { 0 };
    gint64 killed;
    gint64 waited;

    submit (&copies[0], 0, 2, "dies");
    wait_queued (&copies[0]);
    submit (&copies[1], 0, 3, "dies");
    wait_queued (&copies[1]);
    submit (&copies[2], 1, 2, "dies");
    wait_queued (&copies[2]);
    {
        g_autoptr (JsonObject) job = get_job (&copies[2]);

        g_assert_cmpstr (state_of (job), ==, "queued");
        g_assert_cmpstr (vmr_harness_json_string (job, "waiting-for"), ==, "cluster max-parallel");
    }
    vmr_harness_kill_daemon (cluster.hosts[0]);
    vmr_harness_kill_qemu (cluster.hosts[0]);
    killed = g_get_monotonic_time ();
    for (;;) {
        g_autoptr (JsonObject) job = get_job (&copies[2]);

        if (!g_str_equal (state_of (job), "queued"))
            break;
        if (g_get_monotonic_time () - killed > (TTL_S + 5) * G_USEC_PER_SEC)
            vmr_fail ("host 0's slots were not freed %d s after it died (lease TTL %d s)",
                      TTL_S + 5, TTL_S);
        g_usleep (50 * 1000);
    }
    waited = g_get_monotonic_time () - killed;
    g_test_message ("host 0's slots freed %.1f s after kill -9 (lease TTL %d s)",
                    (gdouble) waited / G_USEC_PER_SEC, TTL_S);
    g_assert_cmpint (waited, <=, (TTL_S + 2) * G_USEC_PER_SEC);
    run_to_end (&copies[2], 1);
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

/* one etcd member stopped, the one every daemon talks to first: nothing changes */
static void
test_member_stopped (void)
{
    Copy copies[3] = { 0 };

    vmr_etcd_cluster_stop_member (&cluster.etcd, 0);
    submit (&copies[0], 1, 3, "member");
    wait_queued (&copies[0]);
    submit (&copies[1], 2, 2, "member");
    wait_queued (&copies[1]);
    submit (&copies[2], 2, 3, "member");
    wait_queued (&copies[2]);
    g_assert_cmpuint (run_to_end (copies, G_N_ELEMENTS (copies)), ==, LIMIT);
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

/*
 * Host 1's daemon killed with -9 and started again while its two copies
 * run on in QEMU: within its lease's TTL it picks its slots up with its
 * jobs, and host 2's job waits until one of them is in sync.
 */
static void
test_daemon_restarts (void)
{
    VmrHarness *h = cluster.hosts[1];
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    const gchar *const extra[] = { "--policy", policy, NULL };
    Copy copies[3] = { 0 };
    gint64 first_synced;
    gint64 started;

    submit_at (&copies[0], 1, 0, "restart", "512K");
    wait_queued (&copies[0]);
    submit_at (&copies[1], 1, 1, "restart", "512K");
    wait_queued (&copies[1]);
    submit (&copies[2], 2, 1, "restart");
    wait_queued (&copies[2]);
    vmr_harness_kill_daemon (h);
    g_assert_cmpuint (cluster_bulk_copies (), <=, LIMIT);
    vmr_harness_restart_daemon (h, extra);
    vmr_harness_attach (h, "vm");
    run_to_end (copies, G_N_ELEMENTS (copies));
    {
        g_autoptr (JsonObject) first = get_job (&copies[0]);
        g_autoptr (JsonObject) second = get_job (&copies[1]);
        g_autoptr (JsonObject) waiting = get_job (&copies[2]);

        first_synced = MIN (vmr_json_job_first_time (first, "synced"),
                            vmr_json_job_first_time (second, "synced"));
        started = vmr_json_job_first_time (waiting, "copying");
    }
    g_assert_cmpint (first_synced, >, 0);
    if (started < first_synced)
        vmr_fail ("host 2's job started %.1f s before a copy of the restarted host 1 was in sync",
                  (gdouble) (first_synced - started) / G_USEC_PER_SEC);
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

/* whether `cluster status` on @host lists @member among the cluster's members */
static gboolean
is_member (guint host, const gchar *member)
{
    g_autoptr (JsonNode) node
        = vmr_harness_cli_json (cluster.hosts[host], "cluster", "status", NULL);
    JsonArray *members = vmr_harness_json_array (vmr_harness_json_node_object (node), "members");

    for (guint i = 0; i < json_array_get_length (members); i++) {
        if (g_str_equal (vmr_harness_json_string (vmr_harness_json_element (members, i), "host"),
                         member))
            return TRUE;
    }
    return FALSE;
}

/*
 * Host 2's daemon stopped (SIGSTOP) longer than its lease's TTL while its
 * job waits: etcd drops its lease and its key; once it runs again it takes
 * a new lease, registers again and its job runs in its turn, under the limit.
 */
static void
test_lease_lost (void)
{
    VmrHarness *h = cluster.hosts[2];
    Copy copies[3] = { 0 };
    gint64 deadline;

    submit_at (&copies[0], 1, 2, "lease", "512K");
    wait_queued (&copies[0]);
    submit_at (&copies[1], 1, 3, "lease", "512K");
    wait_queued (&copies[1]);
    submit (&copies[2], 2, 0, "lease");
    wait_queued (&copies[2]);
    g_assert_cmpint (kill (h->daemon_pid, SIGSTOP), ==, 0);
    /* host 1 sees host 2 leave the cluster once etcd expired its lease */
    deadline = g_get_monotonic_time () + (TTL_S + 10) * G_USEC_PER_SEC;
    while (is_member (1, "host2")) {
        g_assert_cmpuint (cluster_bulk_copies (), <=, LIMIT);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host 2's lease did not expire %d s after its daemon stopped", TTL_S + 10);
        g_usleep (100 * 1000);
    }
    g_assert_cmpint (kill (h->daemon_pid, SIGCONT), ==, 0);
    run_to_end (copies, G_N_ELEMENTS (copies));
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

/* etcd gone: no new copy, the running ones complete; back: the queue moves on */
static void
test_etcd_lost (void)
{
    Copy copies[3] = { 0 };
    gint64 deadline;

    submit (&copies[0], 1, 0, "lost");
    wait_queued (&copies[0]);
    submit (&copies[1], 1, 1, "lost");
    wait_queued (&copies[1]);
    submit (&copies[2], 2, 0, "lost");
    wait_queued (&copies[2]);
    for (guint i = 1; i < VMR_ETCD_MEMBERS; i++)
        vmr_etcd_cluster_stop_member (&cluster.etcd, i);

    deadline = g_get_monotonic_time () + (TTL_S + 10) * G_USEC_PER_SEC;
    for (gboolean told = FALSE, ended = FALSE; !told || !ended;) {
        g_autoptr (JsonObject) waiting = get_job (&copies[2]);
        g_autoptr (JsonObject) first = get_job (&copies[0]);
        g_autoptr (JsonObject) second = get_job (&copies[1]);
        JsonObject *decision = vmr_harness_json_object (waiting, "policy");

        g_assert_cmpstr (state_of (waiting), ==, "queued");
        g_assert_cmpuint (cluster_bulk_copies (), <=, LIMIT);
        told = told
               || g_strcmp0 (vmr_harness_json_string (decision, "reason"), "cluster unavailable")
                      == 0;
        ended = g_str_equal (state_of (first), "completed")
                && g_str_equal (state_of (second), "completed");
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("without etcd: the waiting job %s the reason, the running copies %s",
                      told ? "has" : "does not have", ended ? "completed" : "did not complete");
        g_usleep (50 * 1000);
    }
    {
        g_autoptr (JsonObject) waiting = get_job (&copies[2]);

        g_assert_cmpstr (vmr_harness_json_string (waiting, "waiting-for"), ==, "cluster");
    }
    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++)
        vmr_etcd_cluster_start_member (&cluster.etcd, i);
    vmr_etcd_cluster_wait_healthy (&cluster.etcd);
    run_to_end (copies, G_N_ELEMENTS (copies));
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

/* the jobs each host lists, to show that a refused evacuation submitted nothing */
static guint
count_jobs (guint host)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (cluster.hosts[host], "jobs", NULL);

    return json_array_get_length (vmr_harness_json_node_array (node));
}

/* host 0, killed with its QEMU, back with its disks where they are now */
static void
revive_host_0 (void)
{
    VmrHarness *h = cluster.hosts[0];
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    const gchar *const extra[] = { "--policy", policy, NULL };
    VmrHarnessDisk disks[N_DISKS];

    for (guint d = 0; d < N_DISKS; d++)
        disks[d] = (VmrHarnessDisk){ disk_ids[d], cluster.on[0][d], "raw", NULL };
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_restart_daemon (h, extra);
    vmr_harness_attach (h, "vm");
}

/*
 * `evacuate --cluster --wait` on host 2 moves every disk of the three hosts
 * that lies in the shared storage to another one, each daemon its own,
 * under the cluster's limit, and follows them all to the end; bad input
 * is refused on one line with nothing submitted anywhere; hosts without
 * such disks say they have nothing to move.
 */
static void
test_cluster_evacuate (void)
{
    g_autoptr (GError) error = NULL;
    const gchar *to;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    VmrCliRun *run;
    guint jobs_before[N_HOSTS];
    guint n_moved[N_HOSTS] = { 0 };
    guint most = 0;

    revive_host_0 ();
    cluster.evacuated = g_dir_make_tmp ("vmr-evacuated-XXXXXX", &error);
    g_assert_no_error (error);
    to = cluster.evacuated;
    for (guint i = 0; i < N_HOSTS; i++)
        jobs_before[i] = count_jobs (i);
    refused = vmr_harness_cli (cluster.hosts[2], "evacuate", "--cluster", "--from", "/nonexistent",
                               "--to", to, "--wait", NULL);
    vmr_cli_result_assert_error (refused, 1);
    g_assert_null (strchr (g_strchomp (refused->err), '\n'));
    for (guint i = 0; i < N_HOSTS; i++)
        g_assert_cmpuint (count_jobs (i), ==, jobs_before[i]);

    run = vmr_harness_cli_spawn (cluster.hosts[2], "evacuate", "--cluster", "--from",
                                 cluster.shared, "--to", to, "--speed", "2M", "--wait", NULL);
    for (gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;;) {
        guint running = cluster_bulk_copies ();

        if (running > LIMIT)
            vmr_fail ("%u bulk copies at once in the cluster's evacuation, its limit is %u",
                      running, LIMIT);
        most = MAX (most, running);
        if (vmr_harness_cli_run_exited (run))
            break;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the cluster's evacuation did not end in %d s", TIMEOUT_S);
        g_usleep (50 * 1000);
    }
    result = vmr_harness_cli_wait (run);
    g_test_message ("evacuate --cluster:\n%s%s", result->out, result->err);
    vmr_cli_result_assert_ok (result);
    g_assert_cmpuint (most, ==, LIMIT);
    for (guint i = 0; i < N_HOSTS; i++) {
        for (guint d = 0; d < N_DISKS; d++) {
            g_autofree gchar *base = g_path_get_basename (cluster.on[i][d]);
            g_autofree gchar *moved = g_build_filename (to, base, NULL);

            if (!g_str_has_prefix (cluster.on[i][d], cluster.shared))
                continue;
            vmr_harness_assert_disk_on (cluster.hosts[i], disk_ids[d], moved);
            vmr_harness_assert_image_equals (moved, "raw", cluster.expected[i][d]);
            g_free (cluster.on[i][d]);
            cluster.on[i][d] = g_steal_pointer (&moved);
            n_moved[i]++;
        }
    }
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *line
            = g_strdup_printf ("host%u: %u of %u disk%s completed\n", i, n_moved[i], n_moved[i],
                               n_moved[i] == 1 ? "" : "s");

        g_assert_cmpuint (n_moved[i], >, 0);
        g_assert_nonnull (strstr (result->out, line));
    }
    g_assert_nonnull (strstr (result->out, "evacuate: completed: "));
    /* no domain matches: every host says it has nothing to move, and that is a success */
    {
        g_autoptr (VmrCliResult) nothing
            = vmr_harness_cli (cluster.hosts[1], "evacuate", "--cluster", "--from", to, "--to",
                               cluster.shared, "--domains", "none*", "--wait", NULL);

        vmr_cli_result_assert_ok (nothing);
        for (guint i = 0; i < N_HOSTS; i++) {
            g_autofree gchar *line = g_strdup_printf ("host%u: nothing to move", i);

            g_assert_nonnull (strstr (nothing->out, line));
        }
    }
}

static void
run_case (gconstpointer user_data)
{
    void (*body) (void) = user_data;

    if (cluster.hosts[0] == NULL || vmr_harness_skipped (cluster.hosts[0])) {
        g_test_skip ("the cluster could not be set up");
        return;
    }
    body ();
}

static gboolean
set_up (void)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *endpoints = NULL;

    for (guint i = 0; i < N_HOSTS; i++) {
        cluster.hosts[i] = g_new0 (VmrHarness, 1);
        vmr_harness_setup_no_daemon (cluster.hosts[i], NULL);
        if (vmr_harness_skipped (cluster.hosts[i]))
            return FALSE;
    }
    if (!vmr_harness_require (cluster.hosts[0], "etcd", "etcdctl", NULL))
        return FALSE;
    cluster.shared = g_dir_make_tmp ("vmr-cluster-XXXXXX", &error);
    g_assert_no_error (error);
    vmr_etcd_cluster_start (&cluster.etcd, cluster.hosts[0]->dir);
    endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    for (guint i = 0; i < N_HOSTS; i++)
        start_host (i, endpoints);
    return TRUE;
}

/* removes @path (may be NULL) and the files in it, and frees it */
static void
remove_dir (gchar *path)
{
    g_autoptr (GDir) dir = path != NULL ? g_dir_open (path, 0, NULL) : NULL;
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
        g_autofree gchar *file = g_build_filename (path, name, NULL);

        g_unlink (file);
    }
    if (path != NULL)
        g_rmdir (path);
    g_free (path);
}

static void
tear_down (void)
{
    vmr_etcd_cluster_clear (&cluster.etcd);
    for (guint i = 0; i < N_HOSTS; i++) {
        if (cluster.hosts[i] == NULL)
            continue;
        /* host 0 was killed: its daemon is gone, and the teardown knows it */
        vmr_harness_teardown (cluster.hosts[i], NULL);
        g_free (cluster.hosts[i]);
        for (guint d = 0; d < N_DISKS; d++) {
            g_free (cluster.expected[i][d]);
            g_free (cluster.on[i][d]);
        }
    }
    remove_dir (cluster.shared);
    remove_dir (cluster.evacuated);
}

int
main (int argc, char **argv)
{
    gint status;

    vmr_harness_init (&argc, &argv);
    g_test_add_data_func ("/cluster/limit-and-order", test_limit_and_order, run_case);
    g_test_add_data_func ("/cluster/host-dies", test_host_dies, run_case);
    g_test_add_data_func ("/cluster/member-stopped", test_member_stopped, run_case);
    g_test_add_data_func ("/cluster/daemon-restarts", test_daemon_restarts, run_case);
    g_test_add_data_func ("/cluster/lease-lost", test_lease_lost, run_case);
    g_test_add_data_func ("/cluster/etcd-lost", test_etcd_lost, run_case);
    g_test_add_data_func ("/cluster/evacuate", test_cluster_evacuate, run_case);
    set_up ();
    status = g_test_run ();
    tear_down ();
    return status;
}
