#define G_LOG_DOMAIN "vmr-test"

/*
 * A lease that expires while its copy runs: two daemons as two hosts on a
 * real 3-member etcd cluster, under a cluster max-parallel of 1. Host a
 * reaches etcd through proxies the test cuts; host b directly. Host a's
 * copy runs, host b's waits; then host a is cut off etcd for longer than
 * the lease's TTL. Host a pauses its copy before its lease can expire,
 * host b takes the slot once it has, and host a's copy runs again only once
 * it holds a slot under a new lease, after host b's copy is in sync. The
 * job histories of both daemons, on the one clock they share, never show
 * two copies moving data at once; both destinations hold their source's
 * bytes.
 *
 * Then etcd's leader is stopped while a copy reaches sync: the copy pivots,
 * the slot it gives back at sync reaches etcd through the members left, and
 * the other host's copy runs after it, never with it.
 *
 * Then host a's daemon is killed while its copy is paused for the cluster:
 * started again, it keeps the copy paused (its record says why, and a hand
 * resume is refused) until the copy holds a slot under the new lease.
 *
 * Then host a's daemon is killed with SIGKILL while its copy runs, host b's
 * waiting: started again within its lease's life, it keeps that lease alive
 * with the copy's slot, and host b's copy runs only once host a's is in
 * sync. Killed again and kept down until host b's copy took the slot (host
 * a's lease expired, its QEMU copying on), it pauses its copy as soon as it
 * picks it up, and runs it again after host b's is in sync: the two copies
 * moved data at once only between host a's lease's expiry and that pause.
 *
 * Then a storage's budget across a restart: both policies reloaded with a
 * [storage array] of 1 MiB/s, each host copies into it and holds half;
 * host a's daemon killed with SIGKILL and started again at once keeps its
 * lease and its share, host b never takes it, and the two hosts' speeds,
 * in their QEMUs and in the daemons' series, stay under the budget; both
 * destinations hold their sources' bytes.
 *
 * Last, a storage's budget across the cluster: both policies reloaded with
 * a [storage array] of 1 MiB/s, each host copies into it; each holds half
 * in etcd, as `cluster status` shows. The sum of the two hosts' speeds never
 * goes over the budget (but for the 1 byte/s of a copy that waits for its
 * host's share: 0 would be unlimited), in their QEMUs and in the daemons' speed series (on
 * the one clock both share); host b's daemon killed with SIGKILL, host a
 * takes the whole budget once host b's lease expired. The destinations hold
 * their sources' bytes.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "bulk-spans.h"
#include "cut-proxy.h"
#include "etcd-fixture.h"
#include "harness.h"

#define N_HOSTS   2
#define TTL_S     3
#define TIMEOUT_S 60
/* the budget case's rebalances take well under a second */
#define SHARES_TIMEOUT_S 15
/* host a's copy runs 8 s at 1 MiB/s, host b's 2 s */
static const gsize sizes[N_HOSTS] = { 8 * 1024 * 1024, 2 * 1024 * 1024 };

static struct {
    VmrHarness *hosts[N_HOSTS];
    VmrEtcdCluster etcd;
    VmrCutProxy *proxies[VMR_ETCD_MEMBERS]; /* host a's way to each member */
    gchar *images[N_HOSTS];
    gchar *dests[N_HOSTS];
} lease;

/* host @i's policy: a cluster max-parallel of @limit, and @extra sections after it */
static gchar *
host_policy (guint i, guint limit, const gchar *extra)
{
    g_autofree gchar *endpoints = NULL;
    g_autofree gchar *text = NULL;

    if (i == 0) {
        g_autoptr (GPtrArray) urls = g_ptr_array_new_with_free_func (g_free);

        for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
            g_ptr_array_add (urls, g_strdup_printf ("http://127.0.0.1:%u",
                                                    vmr_cut_proxy_get_port (lease.proxies[m])));
        g_ptr_array_add (urls, NULL);
        endpoints = g_strjoinv (",", (gchar **) urls->pdata);
    } else {
        endpoints = vmr_etcd_cluster_endpoints (&lease.etcd);
    }
    text = g_strdup_printf ("[defaults]\nmax-parallel = 2\nmax-parallel-per-iothread = 0\n"
                            "sample-interval = 1s\n"
                            "[cluster]\nname = lease\netcd = %s\nhost = host-%c\n"
                            "max-parallel = %u\nlease-ttl = %us\n%s",
                            endpoints, 'a' + i, limit, TTL_S, extra);
    return vmr_harness_write_policy (lease.hosts[i], text);
}

/* host @i: its QEMU with one disk, its daemon under a cluster max-parallel of 1 */
static void
start_host (guint i)
{
    VmrHarness *h = lease.hosts[i];
    g_autofree gchar *policy = host_policy (i, 1, "");
    VmrHarnessDisk disk;

    lease.images[i] = vmr_harness_create_image (h, "disk0.raw", "raw", sizes[i], 0x51 + i);
    lease.dests[i] = vmr_harness_path (h, "dest.raw");
    disk = (VmrHarnessDisk){ "disk0", lease.images[i], "raw", NULL };
    h->daemon_log = vmr_harness_path (h, "daemon.log");
    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");
}

/* waits until host @i's `cluster status` says it is available */
static void
wait_available (guint i)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonNode) node
            = vmr_harness_cli_json (lease.hosts[i], "cluster", "status", NULL);

        if (vmr_harness_json_bool (vmr_harness_json_node_object (node), "available"))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host %u is not available in its cluster after %d s", i, TIMEOUT_S);
        g_usleep (50 * 1000);
    }
}

/* the time of the @nth (from 0) transition of @job to @state */
static gint64
nth_time (JsonObject *job, const gchar *state, guint nth)
{
    JsonArray *history = vmr_harness_json_array (job, "history");

    for (guint k = 0; k < json_array_get_length (history); k++) {
        JsonObject *entry = json_array_get_object_element (history, k);

        if (g_strcmp0 (vmr_harness_json_string (entry, "state"), state) == 0 && nth-- == 0)
            return vmr_harness_json_int (entry, "time");
    }
    vmr_fail ("job %s was %s fewer than %u times", vmr_harness_json_string (job, "id"), state,
              nth + 1);
}

/*
 * waits until both hosts' jobs @ids completed, each destination of @dests
 * with its source's bytes; host a's copy ran (its @a_run-th run, from 0) only
 * once host b's was in sync, and the job histories never show two copies
 * moving data at once
 */
static void
assert_a_after_b (gchar *const *ids, gchar *const *dests, guint a_run)
{
    g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (gint64));
    JsonObject *ended[N_HOSTS];

    for (guint i = N_HOSTS; i-- > 0;) {
        g_autofree gchar *expected = vmr_harness_expected_path (lease.images[i]);

        ended[i] = vmr_harness_wait_job (lease.hosts[i], ids[i], "completed", TIMEOUT_S);
        vmr_harness_assert_image_equals (dests[i], "raw", expected);
        vmr_bulk_spans_add (ended[i], spans);
    }
    g_assert_cmpint (nth_time (ended[0], "copying", a_run), >=,
                     vmr_json_job_time_of (ended[1], "synced"));
    g_assert_cmpuint (vmr_bulk_spans_most_at_once (spans), ==, 1);
    for (guint i = 0; i < N_HOSTS; i++)
        json_object_unref (ended[i]);
}

static void
cut (gboolean cut_off)
{
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        vmr_cut_proxy_set_cut (lease.proxies[m], cut_off);
}

static void
test_expires (void)
{
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (JsonObject) b_copying = NULL;
    g_autoptr (JsonObject) a_waiting = NULL;
    gchar *ids[N_HOSTS] = { NULL }; /* g_autofree would free only the first */
    g_autofree gchar *log = NULL;
    gint64 cut_at;

    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", lease.dests[0], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (lease.hosts[0], ids[0], "copying", TIMEOUT_S));
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", lease.dests[1], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);

    /* host a cut off: it pauses its copy before its lease can expire */
    cut (TRUE);
    cut_at = g_get_real_time ();
    paused = vmr_harness_wait_job (lease.hosts[0], ids[0], "paused", TIMEOUT_S);
    g_test_message ("host a paused its copy %.2f s after it was cut off (TTL %d s)",
                    (nth_time (paused, "paused", 0) - cut_at) / 1e6, TTL_S);
    g_assert_true (g_file_get_contents (lease.hosts[0]->daemon_log, &log, NULL, NULL));
    g_assert_cmpuint (
        vmr_harness_count_lines (log, "(two thirds of its TTL): giving up its 1 slots"), ==, 1);

    /* host b takes the slot once host a's lease expired; host a back after that */
    b_copying = vmr_harness_wait_job (lease.hosts[1], ids[1], "copying", TIMEOUT_S);
    g_test_message ("host b copies %.2f s after host a was cut off",
                    (vmr_json_job_time_of (b_copying, "copying") - cut_at) / 1e6);
    g_assert_cmpint (vmr_json_job_time_of (b_copying, "copying"), >,
                     nth_time (paused, "paused", 0));
    cut (FALSE);
    a_waiting = vmr_harness_get_job (lease.hosts[0], ids[0]);
    g_assert_cmpstr (vmr_json_job_state (a_waiting), ==, "paused");

    /* host a resumes only after host b's copy is in sync; both end with their bytes */
    assert_a_after_b (ids, lease.dests, 1);
    for (guint i = 0; i < N_HOSTS; i++)
        g_free (ids[i]);
}

/* waits until the job @id of host @i has copied at least half its bytes */
static void
wait_half_copied (guint i, const gchar *id)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (lease.hosts[i], id);
        JsonObject *progress = vmr_harness_json_object (job, "progress");
        gint64 total = vmr_harness_json_int (progress, "total");

        if (total > 0 && vmr_harness_json_int (progress, "done") * 2 >= total)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s has not copied half its bytes after %d s", id, TIMEOUT_S);
        g_usleep (20 * 1000);
    }
}

/* etcd's leader stopped while host b's copy reaches sync, host a's waiting behind it */
static void
test_leader_at_sync (void)
{
    /* g_autofree on an array would free only its first */
    gchar *dests[N_HOSTS] = { NULL };
    gchar *ids[N_HOSTS] = { NULL };
    guint leader;

    for (guint i = 0; i < N_HOSTS; i++)
        dests[i] = vmr_harness_path (lease.hosts[i], "dest-2.raw");
    /* back from the first case: each disk is on its destination now */
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", dests[1], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (lease.hosts[1], ids[1], "copying", TIMEOUT_S));
    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", dests[0], "--speed", "8M", NULL);
    wait_half_copied (1, ids[1]);
    leader = vmr_etcd_cluster_leader (&lease.etcd);
    g_test_message ("stopping etcd's leader, member %u, as host b's copy reaches sync", leader);
    vmr_etcd_cluster_stop_member (&lease.etcd, leader);
    assert_a_after_b (ids, dests, 0);
    for (guint i = 0; i < N_HOSTS; i++) {
        g_free (dests[i]);
        g_free (ids[i]);
    }
    vmr_etcd_cluster_start_member (&lease.etcd, leader);
    vmr_etcd_cluster_wait_healthy (&lease.etcd);
}

/* ---- a storage's budget across the cluster ---- */

#define BUDGET (1024 * 1024)

/*
 * The speed of host @i's copy in its QEMU while it moves data (0: none
 * does), failing on unlimited; @out_ready, if given, says it is in sync
 */
static guint64
qemu_speed (guint i, gboolean *out_ready)
{
    g_autoptr (JsonNode) reply = vmr_harness_qmp (lease.hosts[i], "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (reply);
    guint64 sum = 0;

    for (guint j = 0; j < json_array_get_length (array); j++) {
        JsonObject *job = vmr_harness_json_element (array, j);
        const gchar *status = vmr_harness_json_string (job, "status");

        if (out_ready != NULL && g_str_equal (status, "ready"))
            *out_ready = TRUE;
        if (!vmr_harness_is_bulk_copy (job) && !g_str_equal (status, "ready"))
            continue;
        if (vmr_harness_json_int (job, "speed") == 0)
            vmr_fail ("host %u's copy runs unlimited under a budget", i);
        sum += (guint64) vmr_harness_json_int (job, "speed");
    }
    return sum;
}

/*
 * The sum of both QEMUs' speeds, host a read before and after host b: only
 * when host a's did not change in between is it a sum at one time; then it
 * must be under the budget. Returns host a's speed.
 */
static guint64
check_qemu_sum (gboolean b_alive, guint *checked)
{
    guint64 a = qemu_speed (0, NULL);
    guint64 b = b_alive ? qemu_speed (1, NULL) : 0;

    if (qemu_speed (0, NULL) != a)
        return a;
    /* a copy waiting for its host's share runs at 1 byte/s, since 0 would be unlimited */
    if (a + b > (guint64) BUDGET + (a == 1 ? 1 : 0) + (b == 1 ? 1 : 0))
        vmr_fail ("the hosts' speeds in QEMU add up to %" G_GUINT64_FORMAT " bytes/s", a + b);
    (*checked)++;
    return a;
}

/* @points' speed at @time when its points either side agree on it, else -1 */
static gint64
speed_at (JsonArray *points, gint64 time)
{
    gint64 before = -1;
    gint64 after = -1;

    for (guint p = 0; p < json_array_get_length (points); p++) {
        JsonObject *point = vmr_harness_json_element (points, p);
        gint64 t = vmr_harness_json_int (point, "time");

        if (t <= time)
            before = vmr_harness_json_int (point, "speed");
        if (t >= time && after < 0)
            after = vmr_harness_json_int (point, "speed");
    }
    return before == after ? before : -1;
}

/*
 * The daemons' speed series on their one clock: at every point of one host
 * where the other's speed is known (its points either side agree), the
 * two add up to no more than the budget; host b's series ends when it was
 * killed. Returns how many points were judged.
 */
static guint
check_series (JsonArray *series[N_HOSTS])
{
    guint judged = 0;

    for (guint i = 0; i < N_HOSTS; i++) {
        for (guint p = 0; p < json_array_get_length (series[i]); p++) {
            JsonObject *point = vmr_harness_json_element (series[i], p);
            gint64 other = speed_at (series[1 - i], vmr_harness_json_int (point, "time"));
            gint64 own = vmr_harness_json_int (point, "speed");

            if (!vmr_bulk_spans_moves_data (vmr_harness_json_string (point, "state"))
                && !g_str_equal (vmr_harness_json_string (point, "state"), "synced"))
                continue;
            if (own == 0)
                vmr_fail ("host %u's series shows an unlimited speed", i);
            if (other < 0)
                continue;
            if (own + other > BUDGET + (own == 1 ? 1 : 0) + (other == 1 ? 1 : 0))
                vmr_fail ("the speed series add up to %" G_GINT64_FORMAT " bytes/s", own + other);
            judged++;
        }
    }
    return judged;
}

/* waits until `cluster status` on host @i shows @n shares of @share each in the array */
static void
wait_shares (guint i, guint n, gint64 share, guint *checked)
{
    gint64 deadline = g_get_monotonic_time () + SHARES_TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonNode) node
            = vmr_harness_cli_json (lease.hosts[i], "cluster", "status", NULL);
        JsonArray *budgets
            = vmr_harness_json_array (vmr_harness_json_node_object (node), "budgets");
        JsonObject *array = vmr_harness_json_element (budgets, 0);
        JsonArray *shares = vmr_harness_json_array (array, "shares");
        guint found = 0;

        g_assert_cmpstr (vmr_harness_json_string (array, "storage"), ==, "array");
        g_assert_cmpint (vmr_harness_json_int (array, "budget"), ==, BUDGET);
        g_assert_cmpint (vmr_harness_json_int (array, "held"), <=, BUDGET);
        for (guint s = 0; s < json_array_get_length (shares); s++)
            found += vmr_harness_json_int (vmr_harness_json_element (shares, s), "share") == share;
        if (found == n && json_array_get_length (shares) == n)
            return;
        check_qemu_sum (n == N_HOSTS, checked);
        if (g_get_monotonic_time () > deadline) {
            g_autoptr (JsonNode) shown = json_node_init_object (json_node_alloc (), array);
            g_autofree gchar *text = json_to_string (shown, FALSE);
            g_autofree gchar *log = NULL;

            g_assert_true (g_file_get_contents (lease.hosts[1]->daemon_log, &log, NULL, NULL));
            g_test_message ("host b's log: %s", log + MAX (0, (gssize) strlen (log) - 4000));

            vmr_fail ("host %u's cluster status never showed %u shares of %" G_GINT64_FORMAT ": %s",
                      i, n, share, text);
        }
        g_usleep (20 * 1000);
    }
}

/*
 * both policies reloaded with a [storage array] of BUDGET; each host's
 * destination in it, named @prefix-HOST.raw, into @dests
 */
static void
reload_budget (const gchar *prefix, gchar **dests)
{
    g_autofree gchar *array = vmr_harness_path (lease.hosts[0], "array");
    g_autofree gchar *section
        = g_strdup_printf ("[storage array]\npaths = %s\nbudget = 1M\n", array);

    g_assert_cmpint (g_mkdir_with_parents (array, 0755), ==, 0);
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *policy = host_policy (i, N_HOSTS, section);
        g_autoptr (VmrCliResult) reload = vmr_harness_cli (lease.hosts[i], "reload", NULL);
        g_autofree gchar *name = g_strdup_printf ("%s-%c.raw", prefix, 'a' + i);

        vmr_cli_result_assert_ok (reload);
        dests[i] = g_build_filename (array, name, NULL);
    }
}

static void
test_budget (void)
{
    g_autoptr (VmrCliResult) text = NULL;
    JsonArray *series[N_HOSTS];
    gchar *ids[N_HOSTS], *dests[N_HOSTS];
    guint checked = 0;
    guint judged;
    gint64 killed_at, deadline;

    reload_budget ("host", dests);
    /* host a's copy alone holds the whole budget, then host b's joins: half each */
    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", dests[0], NULL);
    wait_shares (0, 1, BUDGET, &checked);
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", dests[1], NULL);
    wait_shares (0, N_HOSTS, BUDGET / 2, &checked);
    text = vmr_harness_cli (lease.hosts[1], "cluster", "status", NULL);
    vmr_cli_result_assert_ok (text);
    g_assert_nonnull (strstr (text->out, "STORAGE"));
    g_assert_nonnull (strstr (text->out, "array"));
    g_assert_nonnull (strstr (text->out, "512 KiB/s"));

    /* host b's daemon killed once its series has points to judge: its share goes with its lease */
    deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    for (series[1] = NULL; series[1] == NULL || json_array_get_length (series[1]) < 3;) {
        g_clear_pointer (&series[1], json_array_unref);
        check_qemu_sum (TRUE, &checked);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host b's series never had 3 points");
        g_usleep (100 * 1000);
        series[1] = vmr_harness_job_series_points (lease.hosts[1], ids[1]);
    }
    vmr_harness_kill_daemon (lease.hosts[1]);
    killed_at = g_get_monotonic_time ();
    deadline = killed_at + TIMEOUT_S * G_USEC_PER_SEC;
    while (check_qemu_sum (FALSE, &checked) != BUDGET) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host a never took host b's share");
        g_usleep (20 * 1000);
    }
    g_test_message ("host a took the whole budget %.2f s after host b was killed (TTL %d s)",
                    (g_get_monotonic_time () - killed_at) / 1e6, TTL_S);
    g_assert_cmpint (g_get_monotonic_time () - killed_at, >=, TTL_S * G_USEC_PER_SEC / 2);
    wait_shares (0, 1, BUDGET, &checked);
    json_object_unref (vmr_harness_wait_job (lease.hosts[0], ids[0], "completed", TIMEOUT_S));
    series[0] = vmr_harness_job_series_points (lease.hosts[0], ids[0]);
    judged = check_series (series);
    g_assert_cmpuint (judged, >, 0);
    g_assert_cmpuint (checked, >, 0);
    g_test_message ("%u sums of the QEMUs' speeds and %u points of the series checked", checked,
                    judged);

    /* the bytes: host a's copy pivoted; host b's QEMU, without its daemon, mirrors in sync */
    vmr_harness_assert_disk_on (lease.hosts[0], "disk0", dests[0]);
    for (gboolean ready = FALSE; !ready;) {
        qemu_speed (1, &ready);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host b's copy never reached sync in its QEMU");
        g_usleep (50 * 1000);
    }
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *expected = vmr_harness_expected_path (lease.images[i]);

        vmr_harness_assert_image_equals (dests[i], "raw", expected);
        json_array_unref (series[i]);
        g_free (ids[i]);
        g_free (dests[i]);
    }
}

/* host a's daemon started again on its state dir and policy, its VM attached again */
static void
restart_host_a (void)
{
    VmrHarness *h = lease.hosts[0];
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    const gchar *const extra[] = { "--policy", policy, NULL };

    vmr_harness_restart_daemon (h, extra);
    vmr_harness_attach (h, "vm");
}

/*
 * host a's daemon killed while its copy is paused for the cluster: started
 * again, it keeps the copy paused (a hand resume is refused) until it holds
 * a slot under its new lease, after host b's copy is in sync
 */
static void
test_restart_paused (void)
{
    g_autoptr (JsonObject) adopted = NULL;
    g_autoptr (VmrCliResult) resume = NULL;
    gchar *dests[N_HOSTS] = { NULL }; /* g_autofree on an array would free only its first */
    gchar *ids[N_HOSTS] = { NULL };

    for (guint i = 0; i < N_HOSTS; i++)
        dests[i] = vmr_harness_path (lease.hosts[i], "dest-3.raw");
    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", dests[0], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (lease.hosts[0], ids[0], "copying", TIMEOUT_S));
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", dests[1], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);

    /* host a cut off pauses its copy; killed then, it is down when its lease expires */
    cut (TRUE);
    json_object_unref (vmr_harness_wait_job (lease.hosts[0], ids[0], "paused", TIMEOUT_S));
    vmr_harness_kill_daemon (lease.hosts[0]);
    json_object_unref (vmr_harness_wait_job (lease.hosts[1], ids[1], "copying", TIMEOUT_S));
    cut (FALSE);
    restart_host_a ();
    adopted = vmr_harness_wait_adopted (lease.hosts[0], ids[0]);
    g_assert_cmpstr (vmr_json_job_state (adopted), ==, "paused");
    resume = vmr_harness_cli (lease.hosts[0], "resume", ids[0], NULL);
    vmr_cli_result_assert_error (resume, 1);
    g_assert_nonnull (strstr (resume->err, "is paused for the cluster"));

    /* it resumes by itself under a slot of the new lease, after host b's copy */
    assert_a_after_b (ids, dests, 1);
    for (guint i = 0; i < N_HOSTS; i++) {
        g_free (dests[i]);
        g_free (ids[i]);
    }
}

/* the lines of host a's daemon log with @text */
static guint
count_a_log (const gchar *text)
{
    g_autofree gchar *log = NULL;

    g_assert_true (g_file_get_contents (lease.hosts[0]->daemon_log, &log, NULL, NULL));
    return vmr_harness_count_lines (log, text);
}

#define KEPT_LINE  "of the daemon's earlier run is still alive: kept, with its slots"
#define LAPSE_LINE "of the daemon's earlier run expired before it was back"

/* waits until host @i's job @id waits for the cluster's max-parallel */
static void
wait_held (guint i, const gchar *id)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (lease.hosts[i], id);

        if (!vmr_harness_json_is_null (job, "waiting-for")
            && g_str_equal (vmr_harness_json_string (job, "waiting-for"), "cluster max-parallel"))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s does not wait for the cluster's max-parallel after %d s", id,
                      TIMEOUT_S);
        g_usleep (20 * 1000);
    }
}

/* host a's copy runs, host b's waits for the slot; the jobs' ids into @ids */
static void
a_copies_b_waits (gchar **ids, gchar *const *dests)
{
    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", dests[0], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (lease.hosts[0], ids[0], "copying", TIMEOUT_S));
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", dests[1], "--speed",
                                  VMR_HARNESS_SLOW_SPEED, NULL);
    wait_held (1, ids[1]);
}

/*
 * host a's daemon killed while its copy runs and started again at once: it
 * keeps its lease, so host b's copy waits until host a's is in sync
 */
static void
test_restart_keeps_slot (void)
{
    g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (gint64));
    gchar *dests[N_HOSTS] = { NULL }; /* g_autofree on an array would free only its first */
    gchar *ids[N_HOSTS] = { NULL };
    JsonObject *ended[N_HOSTS];
    guint kept = count_a_log (KEPT_LINE);
    guint lapses = count_a_log (LAPSE_LINE);
    gint64 killed;

    for (guint i = 0; i < N_HOSTS; i++)
        dests[i] = vmr_harness_path (lease.hosts[i], "dest-4.raw");
    a_copies_b_waits (ids, dests);
    vmr_harness_kill_daemon (lease.hosts[0]);
    killed = g_get_monotonic_time ();
    restart_host_a ();
    g_test_message ("host a's daemon back %.2f s after it was killed (TTL %d s)",
                    (g_get_monotonic_time () - killed) / 1e6, TTL_S);
    json_object_unref (vmr_harness_wait_adopted (lease.hosts[0], ids[0]));
    g_assert_cmpuint (count_a_log (KEPT_LINE), ==, kept + 1);
    g_assert_cmpuint (count_a_log (LAPSE_LINE), ==, lapses);

    /* host b's copy ran after host a's, never with it; both with their bytes */
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *expected = vmr_harness_expected_path (lease.images[i]);

        ended[i] = vmr_harness_wait_job (lease.hosts[i], ids[i], "completed", TIMEOUT_S);
        vmr_harness_assert_image_equals (dests[i], "raw", expected);
        vmr_bulk_spans_add (ended[i], spans);
    }
    g_assert_cmpint (vmr_json_job_time_of (ended[1], "copying"), >=,
                     vmr_json_job_time_of (ended[0], "synced"));
    g_assert_cmpuint (vmr_bulk_spans_most_at_once (spans), ==, 1);
    for (guint i = 0; i < N_HOSTS; i++) {
        json_object_unref (ended[i]);
        g_free (dests[i]);
        g_free (ids[i]);
    }
}

/*
 * waits until both hosts' jobs @ids completed with their bytes; the job
 * histories show host a's first run moving data beside host b's copy until
 * @paused only, and its next after host b's copy is in sync
 */
static void
assert_overlap_ends (gchar *const *ids, gchar *const *dests, gint64 paused)
{
    g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (gint64));
    g_autoptr (GArray) a_spans = g_array_new (FALSE, FALSE, sizeof (gint64));
    JsonObject *ended[N_HOSTS];

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *expected = vmr_harness_expected_path (lease.images[i]);

        ended[i] = vmr_harness_wait_job (lease.hosts[i], ids[i], "completed", TIMEOUT_S);
        vmr_harness_assert_image_equals (dests[i], "raw", expected);
    }
    vmr_bulk_spans_add (ended[0], a_spans);
    g_assert_cmpuint (a_spans->len, ==, 4);
    g_assert_cmpint (g_array_index (a_spans, gint64, 1), ==, paused);
    /* but for that first run, never two at once */
    g_array_append_vals (spans, &g_array_index (a_spans, gint64, 2), 2);
    vmr_bulk_spans_add (ended[1], spans);
    g_assert_cmpuint (vmr_bulk_spans_most_at_once (spans), ==, 1);
    g_assert_cmpint (nth_time (ended[0], "copying", 1), >=,
                     vmr_json_job_time_of (ended[1], "synced"));
    for (guint i = 0; i < N_HOSTS; i++)
        json_object_unref (ended[i]);
}

/*
 * host a's daemon killed while its copy runs and kept down until host b's
 * copy took the slot (host a's lease expired): started again, it pauses its
 * copy as soon as it picks it up, and runs it after host b's is in sync
 */
static void
test_restart_after_ttl (void)
{
    g_autoptr (JsonObject) adopted = NULL;
    g_autoptr (JsonObject) b_copying = NULL;
    g_autoptr (JsonObject) a_paused = NULL;
    gchar *dests[N_HOSTS] = { NULL }; /* g_autofree on an array would free only its first */
    gchar *ids[N_HOSTS] = { NULL };
    guint lapses = count_a_log (LAPSE_LINE);
    gint64 killed;
    gint64 back;
    gint64 paused;

    for (guint i = 0; i < N_HOSTS; i++)
        dests[i] = vmr_harness_path (lease.hosts[i], "dest-5.raw");
    a_copies_b_waits (ids, dests);
    killed = g_get_real_time ();
    vmr_harness_kill_daemon (lease.hosts[0]);
    b_copying = vmr_harness_wait_job (lease.hosts[1], ids[1], "copying", TIMEOUT_S);
    g_test_message ("host b copies %.2f s after host a's daemon was killed (TTL %d s)",
                    (vmr_json_job_time_of (b_copying, "copying") - killed) / 1e6, TTL_S);
    restart_host_a ();
    back = g_get_real_time ();
    adopted = vmr_harness_wait_adopted (lease.hosts[0], ids[0]);
    a_paused = vmr_harness_wait_job (lease.hosts[0], ids[0], "paused", TIMEOUT_S);
    paused = nth_time (a_paused, "paused", 0);
    g_test_message ("host a paused its copy %.2f s after its daemon was back",
                    (paused - back) / 1e6);
    g_assert_cmpuint (count_a_log (LAPSE_LINE), ==, lapses + 1);
    /* the copy ran beside host b's from host a's lease's expiry to that pause, no longer */
    g_assert_cmpint (paused - back, <, TTL_S * G_USEC_PER_SEC);

    /* it runs again after host b's copy is in sync; both with their bytes */
    assert_overlap_ends (ids, dests, paused);
    for (guint i = 0; i < N_HOSTS; i++) {
        g_free (dests[i]);
        g_free (ids[i]);
    }
}

/* waits until host @i's job @id completed, checking the sum of the QEMUs' speeds meanwhile */
static void
wait_completed_under_budget (guint i, const gchar *id, guint *checked)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (lease.hosts[i], id);

        if (g_str_equal (vmr_harness_json_string (job, "state"), "completed"))
            return;
        check_qemu_sum (TRUE, checked);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s did not complete in %d s", id, TIMEOUT_S);
        g_usleep (20 * 1000);
    }
}

/*
 * host a's daemon killed while its copy holds half the budget, and started
 * again at once: it keeps its lease and so its share, which host b never
 * takes; the sum of both hosts' speeds, in their QEMUs and in the daemons'
 * series, stays under the budget throughout
 */
static void
test_restart_keeps_share (void)
{
    JsonArray *series[N_HOSTS];
    gchar *ids[N_HOSTS], *dests[N_HOSTS];
    guint kept = count_a_log (KEPT_LINE);
    guint checked = 0;
    guint judged;

    reload_budget ("share", dests);
    ids[0] = vmr_harness_migrate (lease.hosts[0], "vm", "disk0", dests[0], NULL);
    wait_shares (0, 1, BUDGET, &checked);
    ids[1] = vmr_harness_migrate (lease.hosts[1], "vm", "disk0", dests[1], NULL);
    wait_shares (0, N_HOSTS, BUDGET / 2, &checked);
    vmr_harness_kill_daemon (lease.hosts[0]);
    /* while host a is down, its share stays in etcd and its QEMU's copy at its speed */
    wait_shares (1, N_HOSTS, BUDGET / 2, &checked);
    check_qemu_sum (TRUE, &checked);
    restart_host_a ();
    json_object_unref (vmr_harness_wait_adopted (lease.hosts[0], ids[0]));
    g_assert_cmpuint (count_a_log (KEPT_LINE), ==, kept + 1);
    wait_shares (0, N_HOSTS, BUDGET / 2, &checked);
    wait_shares (1, N_HOSTS, BUDGET / 2, &checked);

    for (guint i = N_HOSTS; i-- > 0;) {
        g_autofree gchar *expected = vmr_harness_expected_path (lease.images[i]);

        wait_completed_under_budget (i, ids[i], &checked);
        vmr_harness_assert_image_equals (dests[i], "raw", expected);
        series[i] = vmr_harness_job_series_points (lease.hosts[i], ids[i]);
    }
    judged = check_series (series);
    g_assert_cmpuint (judged, >, 0);
    g_assert_cmpuint (checked, >, 10);
    g_test_message ("%u sums of the QEMUs' speeds and %u points of the series checked", checked,
                    judged);
    for (guint i = 0; i < N_HOSTS; i++) {
        json_array_unref (series[i]);
        g_free (ids[i]);
        g_free (dests[i]);
    }
}

static void
run_case (gconstpointer user_data)
{
    void (*body) (void) = user_data;

    if (vmr_harness_skipped (lease.hosts[0]) || lease.etcd.dir == NULL) {
        vmr_harness_skip (lease.hosts[0], "the cluster could not be set up");
        return;
    }
    body ();
}

static void
set_up (void)
{
    for (guint i = 0; i < N_HOSTS; i++) {
        lease.hosts[i] = g_new0 (VmrHarness, 1);
        vmr_harness_setup_no_daemon (lease.hosts[i], NULL);
        if (vmr_harness_skipped (lease.hosts[i]))
            return;
    }
    if (!vmr_harness_require (lease.hosts[0], "etcd", "etcdctl", NULL))
        return;
    vmr_etcd_cluster_start (&lease.etcd, lease.hosts[0]->dir);
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        lease.proxies[m] = vmr_cut_proxy_new (lease.etcd.client_ports[m]);
    for (guint i = 0; i < N_HOSTS; i++)
        start_host (i);
    for (guint i = 0; i < N_HOSTS; i++)
        wait_available (i);
}

static void
tear_down (void)
{
    vmr_etcd_cluster_clear (&lease.etcd);
    for (guint i = 0; i < N_HOSTS; i++) {
        if (lease.hosts[i] == NULL)
            continue;
        vmr_harness_teardown (lease.hosts[i], NULL);
        g_free (lease.hosts[i]);
        g_free (lease.images[i]);
        g_free (lease.dests[i]);
    }
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        g_clear_pointer (&lease.proxies[m], vmr_cut_proxy_free);
}

int
main (int argc, char **argv)
{
    gint status;

    vmr_harness_init (&argc, &argv);
    g_test_add_data_func ("/cluster-lease/expires", test_expires, run_case);
    g_test_add_data_func ("/cluster-lease/leader-at-sync", test_leader_at_sync, run_case);
    g_test_add_data_func ("/cluster-lease/restart-paused", test_restart_paused, run_case);
    g_test_add_data_func ("/cluster-lease/restart-keeps-slot", test_restart_keeps_slot, run_case);
    g_test_add_data_func ("/cluster-lease/restart-after-ttl", test_restart_after_ttl, run_case);
    g_test_add_data_func ("/cluster-lease/restart-keeps-share", test_restart_keeps_share, run_case);
    g_test_add_data_func ("/cluster-lease/budget", test_budget, run_case);
    set_up ();
    status = vmr_harness_run_shared (lease.hosts[0]);
    tear_down ();
    return status;
}
