#define G_LOG_DOMAIN "vmr-test"

/*
 * The cases of `evacuate --cluster` on the cluster of test-cluster.c, in
 * order: every host's disks moved under the cluster's limit; a remote
 * host's part that fails, told host, domain, disk and error; a daemon
 * started after the request, and one cut off from etcd when it was put,
 * that take part once they can, and only once.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "test-cluster.h"

/* member 0's endpoint alone, which host 0 is revived with, to be cut off from etcd later */
static gchar *
first_endpoint (void)
{
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);

    *strchr (endpoints, ',') = '\0';
    return g_steal_pointer (&endpoints);
}

/* host 0, killed with its QEMU, back with its disks where they are now */
static void
revive_host_0 (void)
{
    VmrHarness *h = cluster.hosts[0];
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    g_autofree gchar *endpoint = first_endpoint ();
    const gchar *const extra[] = { "--policy", policy, NULL };
    VmrHarnessDisk disks[N_DISKS];

    cluster_write_policy (0, endpoint, LIMIT);
    for (guint d = 0; d < N_DISKS; d++)
        disks[d] = (VmrHarnessDisk){ disk_ids[d], cluster.on[0][d], "raw", NULL };
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_restart_daemon (h, extra);
    vmr_harness_attach (h, "vm");
}

/* whether @err has a line of host @i that names disk @d of domain vm */
static gboolean
names_disk (const gchar *err, guint i, guint d)
{
    g_auto (GStrv) lines = g_strsplit (err, "\n", -1);
    g_autofree gchar *host = g_strdup_printf ("host%u: ", i);
    g_autofree gchar *disk = g_strdup_printf (" (vm %s): ", disk_ids[d]);

    for (guint k = 0; lines[k] != NULL; k++) {
        if (g_str_has_prefix (lines[k], host) && strstr (lines[k], disk) != NULL)
            return TRUE;
    }
    return FALSE;
}

/*
 * Every disk of every host that lay under @from is now at its name under
 * @to, with its bytes, except those that @failures (the command's error
 * output, or NULL) names: they are still on their source, with theirs.
 * Counts the moved ones per host into @n_moved (may be NULL).
 */
static void
moved_disks (const gchar *from, const gchar *to, const gchar *failures, guint *n_moved)
{
    for (guint i = 0; i < N_HOSTS; i++) {
        for (guint d = 0; d < N_DISKS; d++) {
            g_autofree gchar *moved = NULL;

            if (!g_str_has_prefix (cluster.on[i][d], from))
                continue;
            /* the same path relative to @from, under @to */
            moved = g_build_filename (to, cluster.on[i][d] + strlen (from), NULL);
            if (failures != NULL && names_disk (failures, i, d)) {
                vmr_harness_assert_disk_on (cluster.hosts[i], disk_ids[d], cluster.on[i][d]);
                vmr_harness_assert_image_equals (cluster.on[i][d], "raw", cluster.expected[i][d]);
                continue;
            }
            vmr_harness_assert_disk_on (cluster.hosts[i], disk_ids[d], moved);
            vmr_harness_assert_image_equals (moved, "raw", cluster.expected[i][d]);
            g_free (cluster.on[i][d]);
            cluster.on[i][d] = g_steal_pointer (&moved);
            if (n_moved != NULL)
                n_moved[i]++;
        }
    }
}

/*
 * Waits until @run exits, @each (may be NULL) run with @data every 50 ms
 * meanwhile; then judges the cluster's limit from the daemons' job
 * histories over the run (cluster_most_bulk_copies(): one clock, where
 * reading the QEMUs in turn could count a slot handed over between two
 * reads twice). Returns the most copies at once.
 */
static guint
follow_run (VmrCliRun *run, void (*each) (gpointer data), gpointer data)
{
    gint64 from = g_get_real_time ();

    for (gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;;) {
        if (each != NULL)
            each (data);
        if (vmr_harness_cli_run_exited (run))
            return cluster_most_bulk_copies (from, g_get_real_time ());
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the cluster's evacuation did not end in %d s", TIMEOUT_S);
        g_usleep (50 * 1000);
    }
}

/* the first bulk copy host 1's QEMU runs is cancelled there, its id into @data (gchar **) */
static void
cancel_first_copy (gpointer data)
{
    gchar **cancelled = data;
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *jobs;

    if (*cancelled != NULL)
        return;
    reply = vmr_harness_qmp (cluster.hosts[1], "query-block-jobs", NULL);
    jobs = vmr_harness_json_node_array (reply);
    for (guint j = 0; *cancelled == NULL && j < json_array_get_length (jobs); j++) {
        JsonObject *job = vmr_harness_json_element (jobs, j);
        g_autoptr (JsonObject) args = json_object_new ();
        g_autoptr (JsonNode) cancel = NULL;

        if (!vmr_harness_is_bulk_copy (job))
            continue;
        *cancelled = g_strdup (vmr_harness_json_string (job, "device"));
        json_object_set_string_member (args, "device", *cancelled);
        json_object_set_boolean_member (args, "force", TRUE);
        cancel = vmr_harness_qmp (cluster.hosts[1], "block-job-cancel", args);
    }
}

/*
 * `evacuate --cluster --wait` on host 2 moves every disk of the three hosts
 * that lies in the shared storage to another one, each daemon its own,
 * under the cluster's limit, and follows them all to the end; bad input
 * is refused on one line with nothing submitted anywhere; hosts without
 * such disks say they have nothing to move.
 */
void
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
    cluster.base = g_dir_make_tmp ("vmr-evacuated-XXXXXX", &error);
    g_assert_no_error (error);
    cluster.evacuated = g_build_filename (cluster.base, "evacuated", NULL);
    g_assert_cmpint (g_mkdir (cluster.evacuated, 0700), ==, 0);
    to = cluster.evacuated;
    for (guint i = 0; i < N_HOSTS; i++)
        jobs_before[i] = cluster_count_jobs (i);
    refused = vmr_harness_cli (cluster.hosts[2], "evacuate", "--cluster", "--from", "/nonexistent",
                               "--to", to, "--wait", NULL);
    vmr_cli_result_assert_error (refused, 1);
    g_assert_null (strchr (g_strchomp (refused->err), '\n'));
    for (guint i = 0; i < N_HOSTS; i++)
        g_assert_cmpuint (cluster_count_jobs (i), ==, jobs_before[i]);

    run = vmr_harness_cli_spawn (cluster.hosts[2], "evacuate", "--cluster", "--from",
                                 cluster.shared, "--to", to, "--speed", "2M", "--wait", NULL);
    most = follow_run (run, NULL, NULL);
    result = vmr_harness_cli_wait (run);
    g_test_message ("evacuate --cluster:\n%s%s", result->out, result->err);
    vmr_cli_result_assert_ok (result);
    g_assert_cmpuint (most, ==, LIMIT);
    moved_disks (cluster.shared, to, NULL, n_moved);
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

/* the disks of every host that lie under @dir */
static guint
disks_under (guint i, const gchar *dir)
{
    guint n = 0;

    for (guint d = 0; d < N_DISKS; d++)
        n += g_str_has_prefix (cluster.on[i][d], dir);
    return n;
}

/*
 * A remote host's part fails: host 1's first bulk copy of an evacuation
 * that host 2 runs is cancelled in its QEMU, as someone else would. The
 * command exits non-zero with a line naming the host, the domain, the
 * disk and the error for each disk of host 1 (its domain's group is
 * cancelled with it); they are still on their source, every other disk
 * moved, with its bytes.
 */
void
test_cluster_evacuate_fails (void)
{
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonObject) failed = NULL;
    g_autofree gchar *cancelled = NULL;
    g_autofree gchar *line = NULL;
    VmrCliRun *run;

    cluster.third = g_build_filename (cluster.base, "third", NULL);
    g_assert_cmpint (g_mkdir (cluster.third, 0700), ==, 0);
    run = vmr_harness_cli_spawn (cluster.hosts[2], "evacuate", "--cluster", "--from",
                                 cluster.evacuated, "--to", cluster.third, "--speed", "2M",
                                 "--wait", NULL);
    follow_run (run, cancel_first_copy, &cancelled);
    result = vmr_harness_cli_wait (run);
    g_test_message ("evacuate --cluster, host 1's copy %s cancelled:\n%s%s", cancelled, result->out,
                    result->err);
    if (cancelled == NULL)
        vmr_fail ("host 1 ran no bulk copy of the evacuation");
    g_assert_cmpint (result->status, !=, 0);
    failed = vmr_harness_get_job (cluster.hosts[1], cancelled);
    line = g_strdup_printf ("host1: %s (vm %s): cancelled: cancelled outside virt-mirror",
                            cancelled, vmr_harness_json_string (failed, "disk"));
    g_assert_nonnull (strstr (result->err, line));
    g_assert_nonnull (strstr (result->err, "disks not moved across the cluster"));
    moved_disks (cluster.evacuated, cluster.third, result->err, NULL);
    /* host 1's disks failed, each named, and no other */
    g_assert_cmpuint (disks_under (1, cluster.evacuated), ==, N_DISKS);
    g_assert_cmpuint (disks_under (0, cluster.evacuated) + disks_under (2, cluster.evacuated), ==,
                      0);
}

/* waits until @h answers `cluster status` no more: its daemon cannot reach etcd */
static void
wait_cut_off (VmrHarness *h)
{
    for (gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;;) {
        g_autoptr (VmrCliResult) status = vmr_harness_cli (h, "cluster", "status", NULL);

        if (status->status != 0)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host 0 still reaches etcd with its member stopped");
        g_usleep (100 * 1000);
    }
}

/* waits until @h's daemon reaches etcd again through another member */
static void
wait_available (VmrHarness *h)
{
    for (gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;;) {
        g_autoptr (VmrCliResult) status = vmr_harness_cli (h, "cluster", "status", "--json", NULL);
        g_autoptr (JsonParser) parser = json_parser_new ();

        if (status->status == 0 && json_parser_load_from_data (parser, status->out, -1, NULL)
            && JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))
            && vmr_json_bool_or (json_node_get_object (json_parser_get_root (parser)), "available",
                                 FALSE))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host 2 did not reach another etcd member in 10 s");
        g_usleep (100 * 1000);
    }
}

/* the jobs of @h whose destination lies under @dir: how many, and how many completed */
static guint
jobs_into (VmrHarness *h, const gchar *dir, guint *out_completed)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "jobs", NULL);
    JsonArray *jobs = vmr_harness_json_node_array (node);
    guint n = 0;

    *out_completed = 0;
    for (guint j = 0; j < json_array_get_length (jobs); j++) {
        JsonObject *job = vmr_harness_json_element (jobs, j);
        const gchar *state = vmr_harness_json_string (job, "state");

        if (!g_str_has_prefix (vmr_harness_json_string (job, "destination"), dir))
            continue;
        if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
            vmr_fail ("job %s into %s ended %s", vmr_harness_json_string (job, "id"), dir, state);
        n++;
        *out_completed += g_str_equal (state, "completed");
    }
    return n;
}

/* the ids of the jobs @h lists */
static GHashTable *
job_ids (VmrHarness *h)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "jobs", NULL);
    JsonArray *jobs = vmr_harness_json_node_array (node);
    GHashTable *ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

    for (guint j = 0; j < json_array_get_length (jobs); j++)
        g_hash_table_add (
            ids, g_strdup (vmr_harness_json_string (vmr_harness_json_element (jobs, j), "id")));
    return ids;
}

/* every job of @h that is not in @before writes under @dir */
static void
assert_new_jobs_into (VmrHarness *h, GHashTable *before, const gchar *dir)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "jobs", NULL);
    JsonArray *jobs = vmr_harness_json_node_array (node);

    for (guint j = 0; j < json_array_get_length (jobs); j++) {
        JsonObject *job = vmr_harness_json_element (jobs, j);
        const gchar *destination = vmr_harness_json_string (job, "destination");

        if (!g_hash_table_contains (before, vmr_harness_json_string (job, "id"))
            && !g_str_has_prefix (destination, dir))
            vmr_fail ("job %s writes %s: an evacuation was taken part in twice",
                      vmr_harness_json_string (job, "id"), destination);
    }
}

/*
 * A request put while host 1's daemon is stopped and while host 0 is cut
 * off from etcd (the one member it knows is stopped), for every disk under
 * the directory of the earlier evacuations: host 1 started again and host
 * 0 once its member is back both take part, and their disks move. Neither
 * takes part again in the requests it took part in before: host 1's disks
 * would otherwise also go where the failed evacuation sent them.
 */
void
test_cluster_evacuate_late (void)
{
    VmrHarness *h1 = cluster.hosts[1];
    g_autofree gchar *policy = vmr_harness_path (h1, "policy.conf");
    const gchar *const extra[] = { "--policy", policy, NULL };
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrCliResult) put = NULL;
    GHashTable *before[N_HOSTS];
    guint expected[N_HOSTS];
    gboolean done = FALSE;
    gint64 from;

    cluster.fourth = g_dir_make_tmp ("vmr-evacuated-XXXXXX", &error);
    g_assert_no_error (error);
    for (guint i = 0; i < N_HOSTS; i++) {
        expected[i] = disks_under (i, cluster.base);
        g_assert_cmpuint (expected[i], >, 0);
        before[i] = job_ids (cluster.hosts[i]);
    }
    from = g_get_real_time ();
    vmr_harness_stop_daemon (h1);
    vmr_etcd_cluster_stop_member (&cluster.etcd, 0);
    wait_cut_off (cluster.hosts[0]);
    wait_available (cluster.hosts[2]);
    put = vmr_harness_cli (cluster.hosts[2], "evacuate", "--cluster", "--from", cluster.base,
                           "--to", cluster.fourth, NULL);
    vmr_cli_result_assert_ok (put);
    vmr_etcd_cluster_start_member (&cluster.etcd, 0);
    vmr_etcd_cluster_wait_healthy (&cluster.etcd);
    vmr_harness_restart_daemon (h1, extra);
    vmr_harness_attach (h1, "vm");
    for (gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC; !done;) {
        done = TRUE;
        for (guint i = 0; i < N_HOSTS; i++) {
            guint completed;
            guint n = jobs_into (cluster.hosts[i], cluster.fourth, &completed);

            if (n > expected[i])
                vmr_fail ("host %u has %u jobs into %s for %u disks", i, n, cluster.fourth,
                          expected[i]);
            done = done && completed == expected[i];
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("hosts 0 and 1 did not take part in the evacuation in %d s", TIMEOUT_S);
        g_usleep (100 * 1000);
    }
    /* the limit, from the daemons' job histories over the evacuation */
    cluster_most_bulk_copies (from, g_get_real_time ());
    moved_disks (cluster.base, cluster.fourth, NULL, NULL);
    for (guint i = 0; i < N_HOSTS; i++) {
        assert_new_jobs_into (cluster.hosts[i], before[i], cluster.fourth);
        g_hash_table_unref (before[i]);
    }
}
