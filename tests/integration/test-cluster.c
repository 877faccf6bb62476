#define G_LOG_DOMAIN "vmr-test"

/*
 * Cluster-wide admission against a real 3-member etcd cluster: three
 * daemons as three hosts, each with its own socket, state and guest-less
 * QEMU, copying into one shared storage directory under a cluster-wide
 * max-parallel of 2. The daemons' job histories never show more than 2
 * bulk copies at once in the whole cluster; jobs start
 * in the order they were submitted across hosts; a host killed with -9
 * frees its slots within the lease's TTL; one etcd member stopped changes
 * nothing; all of them stopped, the jobs that wait say "cluster
 * unavailable", the running copies complete, and work resumes once etcd is
 * back; a daemon restarted picks its slots up with its jobs, and one that
 * lost its lease takes a new one and registers again; `evacuate --cluster`
 * moves the disks of the three hosts, each daemon its own, under the limit,
 * followed to its end (test-cluster-evacuate.c, with a remote part that
 * fails and daemons that join an open request late); a reload raises the
 * limit at once. After every group of copies etcd holds no job key of them
 * any more. Every destination holds the bytes of its source. One etcd
 * cluster and the same daemons serve every case, in order.
 */

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "test-cluster.h"

const gchar *const disk_ids[N_DISKS] = { "disk0", "disk1", "disk2", "disk3" };

Cluster cluster;

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

guint
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

/* whether host 2's `cluster jobs` lists @copy */
static gboolean
is_published (const Copy *copy)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (cluster.hosts[2], "cluster", "jobs", NULL);
    JsonArray *jobs = vmr_harness_json_array (vmr_harness_json_node_object (node), "jobs");
    g_autofree gchar *host = g_strdup_printf ("host%u", copy->host);

    for (guint j = 0; j < json_array_get_length (jobs); j++) {
        JsonObject *published = vmr_harness_json_element (jobs, j);

        if (g_str_equal (vmr_harness_json_string (published, "host"), host)
            && g_str_equal (vmr_harness_json_string (published, "id"), copy->id))
            return TRUE;
    }
    return FALSE;
}

/*
 * Each of @copies, completed, is gone from etcd's job keys: its last
 * transitions came in a burst (synced, pivoting, completed), and the delete
 * of its key landed after every put of it.
 */
static void
assert_unpublished (const Copy *copies, guint n)
{
    for (guint i = 0; i < n; i++) {
        gint64 deadline = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;

        while (is_published (&copies[i])) {
            if (g_get_monotonic_time () > deadline)
                vmr_fail ("job %s of host %u completed, and etcd still has its job key",
                          copies[i].id, copies[i].host);
            g_usleep (50 * 1000);
        }
    }
}

/* a state in which a job's bulk copy runs in QEMU, and holds its cluster slot */
static gboolean
is_bulk_state (const gchar *state)
{
    return g_str_equal (state, "copying") || g_str_equal (state, "throttled")
           || g_str_equal (state, "paused");
}

/* a job's bulk copy, from its history: from its first bulk state to the first state after */
typedef struct {
    gint64 start;
    gint64 end; /* G_MAXINT64 while it runs */
    const gchar *id;
    guint host;
} BulkSpan;

/* the bulk copy of @job of host @host into @spans, if it ran */
static void
add_bulk_span (GArray *spans, JsonObject *job, guint host)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    BulkSpan span = { 0, G_MAXINT64, vmr_harness_json_string (job, "id"), host };

    for (guint k = 0; k < json_array_get_length (history); k++) {
        JsonObject *entry = vmr_harness_json_element (history, k);
        gboolean bulk = is_bulk_state (vmr_harness_json_string (entry, "state"));
        gint64 time = json_object_get_int_member (entry, "time");

        if (span.start == 0 && bulk) {
            span.start = time;
        } else if (span.start != 0 && !bulk) {
            span.end = time;
            break;
        }
    }
    if (span.start != 0)
        g_array_append_val (spans, span);
}

/* the bulk copies at @time, among @spans (one that ends at @time no longer counts) */
static guint
bulk_at (GArray *spans, gint64 time)
{
    guint n = 0;

    for (guint i = 0; i < spans->len; i++) {
        const BulkSpan *span = &g_array_index (spans, BulkSpan, i);

        n += span->start <= time && time < span->end;
    }
    return n;
}

guint
cluster_most_bulk_copies (gint64 from, gint64 to)
{
    g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (BulkSpan));
    g_autoptr (GPtrArray) replies
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
    guint most = 0;

    for (guint i = 0; i < N_HOSTS; i++) {
        JsonArray *jobs;

        if (cluster.hosts[i]->daemon == NULL)
            continue;
        g_ptr_array_add (replies, vmr_harness_cli_json (cluster.hosts[i], "jobs", NULL));
        jobs = vmr_harness_json_node_array (g_ptr_array_index (replies, replies->len - 1));
        for (guint j = 0; j < json_array_get_length (jobs); j++)
            add_bulk_span (spans, vmr_harness_json_element (jobs, j), i);
    }
    /* the count changes only where a copy starts: the most is at one of those starts */
    for (guint i = 0; i < spans->len; i++) {
        const BulkSpan *span = &g_array_index (spans, BulkSpan, i);
        guint n;

        if (span->start < from || span->start > to)
            continue;
        n = bulk_at (spans, span->start);
        if (n > cluster.limit)
            vmr_fail ("%u bulk copies at once in the cluster when job %s of host %u started, "
                      "its limit is %u (the daemons' job histories)",
                      n, span->id, span->host, cluster.limit);
        most = MAX (most, n);
    }
    return most;
}

/*
 * Waits until each of @copies has completed, then judges the cluster's
 * limit from every daemon's job histories, on the one clock they share
 * (reading the QEMUs one after another could count a slot handed over
 * between two reads twice): fails if the cluster ever ran more bulk copies
 * at once than the limit while @copies ran; returns the most.
 */
static guint
run_to_end (Copy *copies, guint n)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    gint64 from = G_MAXINT64, to = 0;
    gboolean done = FALSE;

    while (!done) {
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
        if (!done)
            g_usleep (50 * 1000);
    }
    for (guint i = 0; i < n; i++) {
        g_autoptr (JsonObject) job = get_job (&copies[i]);

        from = MIN (from, vmr_json_job_time_of (job, "copying"));
        to = MAX (to, vmr_json_job_time_of (job, "completed"));
    }
    assert_unpublished (copies, n);
    for (guint i = 0; i < n; i++) {
        Copy *copy = &copies[i];

        vmr_harness_assert_disk_on (cluster.hosts[copy->host], disk_ids[copy->disk], copy->dest);
        vmr_harness_assert_image_equals (copy->dest, "raw",
                                         cluster.expected[copy->host][copy->disk]);
        g_free (cluster.on[copy->host][copy->disk]);
        cluster.on[copy->host][copy->disk] = g_strdup (copy->dest);
    }
    return cluster_most_bulk_copies (from, to);
}

void
cluster_write_policy (guint i, const gchar *endpoints, guint limit)
{
    /* the shared storage and the directories evacuations empty it to */
    g_autofree gchar *text
        = g_strdup_printf ("[defaults]\nmax-parallel = 4\nmax-parallel-per-iothread = 0\n"
                           "allowed-destinations = %s/vmr-cluster-*/**, %s/vmr-evacuated-*/**\n"
                           "[cluster]\nname = test\netcd = %s\nhost = host%u\n"
                           "max-parallel = %u\nlease-ttl = %us\nstorage = %s\n",
                           g_get_tmp_dir (), g_get_tmp_dir (), endpoints, i, limit,
                           i == 1 ? RESTART_TTL_S : TTL_S, cluster.shared);
    g_autofree gchar *policy = vmr_harness_write_policy (cluster.hosts[i], text);
}

guint
cluster_count_jobs (guint i)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (cluster.hosts[i], "jobs", NULL);

    return json_array_get_length (vmr_harness_json_node_array (node));
}

static void
start_host (guint i, const gchar *endpoints)
{
    VmrHarness *h = cluster.hosts[i];
    VmrHarnessDisk disks[N_DISKS];
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");

    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("source-%s.raw", disk_ids[d]);

        cluster.on[i][d] = vmr_harness_create_image (h, name, "raw", IMAGE_SIZE, 0xc1 + 16 * i + d);
        cluster.expected[i][d] = vmr_harness_expected_path (cluster.on[i][d]);
        disks[d] = (VmrHarnessDisk){ disk_ids[d], cluster.on[i][d], "raw", NULL };
    }
    cluster_write_policy (i, endpoints, LIMIT);
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

/*
 * The cluster's max-parallel raised to 3 by a policy reload on every host
 * (host 0's etcd endpoints changed back to the three members on the way:
 * it connects again): the new limit applies at once, three copies run
 * together and never four.
 */
static void
test_limit_reload (void)
{
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    Copy copies[4] = { 0 };

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autoptr (VmrCliResult) reload = NULL;

        cluster_write_policy (i, endpoints, LIMIT + 1);
        reload = vmr_harness_cli (cluster.hosts[i], "reload", NULL);
        vmr_cli_result_assert_ok (reload);
    }
    cluster.limit = LIMIT + 1;
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        submit (&copies[i], i % N_HOSTS, i / N_HOSTS, "reload");
        wait_queued (&copies[i]);
    }
    g_assert_cmpuint (run_to_end (copies, G_N_ELEMENTS (copies)), ==, LIMIT + 1);
    g_assert_true (is_member (1, "host0"));
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++)
        copy_clear (&copies[i]);
}

static void
run_case (gconstpointer user_data)
{
    void (*body) (void) = user_data;

    if (vmr_harness_skipped (cluster.hosts[0])) {
        vmr_harness_skip (cluster.hosts[0], "the cluster could not be set up");
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
    cluster.limit = LIMIT;
    cluster.shared = g_dir_make_tmp ("vmr-cluster-XXXXXX", &error);
    g_assert_no_error (error);
    vmr_etcd_cluster_start (&cluster.etcd, cluster.hosts[0]->dir);
    endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    for (guint i = 0; i < N_HOSTS; i++)
        start_host (i, endpoints);
    return TRUE;
}

/* removes @path (may be NULL) and what is in it, and frees it */
static void
remove_dir (gchar *path)
{
    g_autoptr (GDir) dir = path != NULL ? g_dir_open (path, 0, NULL) : NULL;
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
        gchar *file = g_build_filename (path, name, NULL);

        if (g_file_test (file, G_FILE_TEST_IS_DIR)) {
            remove_dir (file);
            continue;
        }
        g_unlink (file);
        g_free (file);
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
    g_free (cluster.evacuated);
    g_free (cluster.third);
    remove_dir (cluster.base);
    remove_dir (cluster.fourth);
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
    g_test_add_data_func ("/cluster/evacuate-fails", test_cluster_evacuate_fails, run_case);
    g_test_add_data_func ("/cluster/evacuate-late", test_cluster_evacuate_late, run_case);
    g_test_add_data_func ("/cluster/limit-reload", test_limit_reload, run_case);
    set_up ();
    status = vmr_harness_run_shared (cluster.hosts[0]);
    tear_down ();
    return status;
}
