#define G_LOG_DOMAIN "vmr-test"

/* The chaos test's cluster mode (chaos-cluster.h). */

#include "chaos-cluster.h"

#include <string.h>

#include <glib/gstdio.h>

#include "bulk-spans.h"

#define B_DISK_SIZE (8 * CHAOS_MIB)

/* the [cluster] section of host @host, reaching etcd at @endpoints */
static gchar *
cluster_section (const gchar *endpoints, gchar host)
{
    return g_strdup_printf ("[cluster]\nname = chaos\netcd = %s\nhost = chaos-%c\n"
                            "max-parallel = %u\nlease-ttl = %us\n",
                            endpoints, host, CHAOS_CLUSTER_MAX_PARALLEL, CHAOS_CLUSTER_TTL_S);
}

/* waits until @h's `cluster status` says it is available */
static void
wait_available (VmrHarness *h)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "cluster", "status", NULL);

        if (vmr_harness_json_bool (vmr_harness_json_node_object (node), "available"))
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%s: not available in its cluster after %d s", h->dir,
                      VMR_HARNESS_JOB_TIMEOUT_S);
        g_usleep (50 * 1000);
    }
}

static void
start_host_b (ChaosCluster *cl)
{
    VmrHarness *h = cl->b;
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cl->etcd);
    g_autofree gchar *section = cluster_section (endpoints, 'b');
    g_autofree gchar *policy = vmr_harness_write_policy (h, section);
    VmrHarnessDisk disk;

    cl->paths[0] = vmr_harness_create_image (h, "disk0.raw", "raw", B_DISK_SIZE, 0x5b);
    cl->paths[1] = vmr_harness_path (h, "moved.raw");
    cl->expected = vmr_harness_expected_path (cl->paths[0]);
    disk = (VmrHarnessDisk){ "disk0", cl->paths[0], "raw", NULL };
    h->daemon_log = vmr_harness_path (h, "daemon.log");
    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm-b");
    wait_available (h);
}

gboolean
chaos_cluster_start (ChaosCluster *cl, VmrHarness *a)
{
    memset (cl, 0, sizeof (*cl));
    cl->lapses = g_array_new (FALSE, FALSE, sizeof (gint64));
    if (!vmr_harness_require (a, "etcd", "etcdctl", NULL))
        return FALSE;
    vmr_etcd_cluster_start (&cl->etcd, a->dir);
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        cl->proxies[m] = vmr_cut_proxy_new (cl->etcd.client_ports[m]);
    cl->b = g_new0 (VmrHarness, 1);
    vmr_harness_setup_no_daemon (cl->b, NULL);
    if (vmr_harness_skipped (cl->b))
        vmr_fail ("host b: %s", cl->b->skip_reason);
    start_host_b (cl);
    return TRUE;
}

gchar *
chaos_cluster_policy (ChaosCluster *cl)
{
    g_autoptr (GPtrArray) urls = g_ptr_array_new_with_free_func (g_free);
    g_autofree gchar *endpoints = NULL;

    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        g_ptr_array_add (
            urls, g_strdup_printf ("http://127.0.0.1:%u", vmr_cut_proxy_get_port (cl->proxies[m])));
    g_ptr_array_add (urls, NULL);
    endpoints = g_strjoinv (",", (gchar **) urls->pdata);
    return cluster_section (endpoints, 'a');
}

/* what host a's daemon logs when its lease expired while it was down */
#define LAPSE_LINE "of the daemon's earlier run expired before it was back"

void
chaos_cluster_note_restart (ChaosCluster *cl, Chaos *c, gint64 killed)
{
    g_autofree gchar *log = NULL;
    gint64 window[2] = { killed, g_get_real_time () };
    guint seen;

    cl->restarts++;
    g_assert_true (g_file_get_contents (c->e->daemon_log, &log, NULL, NULL));
    seen = vmr_harness_count_lines (log, LAPSE_LINE);
    if (seen == cl->lapses_seen)
        return;
    cl->lapses_seen = seen;
    g_array_append_vals (cl->lapses, window, 2);
    g_test_message ("round %u: host a's daemon was back %.2f s after it was killed, after its "
                    "lease expired",
                    c->rounds, (window[1] - window[0]) / 1e6);
}

void
chaos_cluster_migrate_b (ChaosCluster *cl, const gchar *speed)
{
    g_assert_null (cl->job);
    cl->job
        = vmr_harness_migrate (cl->b, "vm-b", "disk0", cl->paths[!cl->at], "--speed", speed, NULL);
    cl->migrations++;
}

void
chaos_cluster_unthrottle_b (ChaosCluster *cl)
{
    g_autoptr (VmrCliResult) result = NULL;

    if (cl->job == NULL)
        return;
    /* a job in sync or ended refuses: it is checked at its end */
    result = vmr_harness_cli (cl->b, "set-speed", cl->job, "0", NULL);
    if (result->status != 0)
        g_test_message ("host b: set-speed %s 0: %s", cl->job, g_strchomp (result->err));
}

void
chaos_cluster_wait_b (ChaosCluster *cl, Chaos *c)
{
    g_autoptr (JsonObject) ended = NULL;

    if (cl->job == NULL)
        return;
    ended = vmr_harness_wait_job (cl->b, cl->job, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_image_equals (cl->paths[!cl->at], "raw", cl->expected);
    /* the source it left is removed, as an operator would, so that the disk can move back */
    g_assert_cmpint (g_unlink (cl->paths[cl->at]), ==, 0);
    cl->at = !cl->at;
    g_test_message ("round %u: host b's %s completed with its bytes", c->rounds, cl->job);
    g_clear_pointer (&cl->job, g_free);
}

guint
chaos_cluster_stop_leader (ChaosCluster *cl)
{
    guint leader = vmr_etcd_cluster_leader (&cl->etcd);

    vmr_etcd_cluster_stop_member (&cl->etcd, leader);
    return leader;
}

void
chaos_cluster_cut (ChaosCluster *cl, guint member)
{
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        if (member == VMR_ETCD_MEMBERS || m == member)
            vmr_cut_proxy_set_cut (cl->proxies[m], TRUE);
}

void
chaos_cluster_restore (ChaosCluster *cl)
{
    gboolean changed = FALSE;

    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++) {
        vmr_cut_proxy_set_cut (cl->proxies[m], FALSE);
        if (cl->etcd.pids[m] == 0) {
            vmr_etcd_cluster_start_member (&cl->etcd, m);
            changed = TRUE;
        }
    }
    if (changed)
        vmr_etcd_cluster_wait_healthy (&cl->etcd);
}

/*
 * the bulk spans of every job record in @state_dir, appended to @spans, and
 * for each span "HOST JOB" to @labels; returns their jobs
 */
static guint
add_record_spans (const gchar *state_dir, gchar host, GArray *spans, GPtrArray *labels)
{
    g_autofree gchar *dir_path = g_build_filename (state_dir, "jobs", NULL);
    g_autoptr (GDir) dir = g_dir_open (dir_path, 0, NULL);
    const gchar *name;
    guint n = 0;

    g_assert_nonnull (dir);
    while ((name = g_dir_read_name (dir)) != NULL) {
        g_autofree gchar *path = g_build_filename (dir_path, name, NULL);
        g_autoptr (JsonParser) parser = json_parser_new ();
        g_autoptr (GError) error = NULL;

        if (!g_str_has_prefix (name, "vmr-") || !g_str_has_suffix (name, ".json"))
            continue;
        if (!json_parser_load_from_file (parser, path, &error))
            vmr_fail ("%s: %s", path, error->message);
        vmr_bulk_spans_add (vmr_harness_json_node_object (json_parser_get_root (parser)), spans);
        while (labels->len < spans->len / 2)
            g_ptr_array_add (
                labels, g_strdup_printf ("host %c %.*s", host, (int) (strlen (name) - 5), name));
        n++;
    }
    return n;
}

/*
 * Host a's spans as the docs promise to bound them: one that ran when its
 * daemon was killed and came back after its lease expired counts up to a
 * third of the TTL after the kill only (the lease outlives the daemon's last
 * moment by that much at least; the others could take its slot once it
 * expired), and must have ended within a third of the TTL of the daemon's
 * return
 */
static void
clip_lapses (ChaosCluster *cl, GArray *spans, guint a_spans)
{
    gint64 *s = (gint64 *) spans->data;
    const gint64 *w = (const gint64 *) cl->lapses->data;

    for (guint i = 0; i < a_spans; i += 2)
        for (guint j = 0; j < cl->lapses->len; j += 2) {
            if (s[i] >= w[j] || s[i + 1] <= w[j])
                continue;
            if (s[i + 1] > w[j + 1] + CHAOS_CLUSTER_TTL_S * G_USEC_PER_SEC / 3)
                vmr_fail ("chaos: a copy of host a moved data until %" G_GINT64_FORMAT
                          ", %.2f s after its daemon was back without its lease",
                          s[i + 1], (s[i + 1] - w[j + 1]) / 1e6);
            s[i + 1] = MIN (s[i + 1], w[j] + CHAOS_CLUSTER_TTL_S * G_USEC_PER_SEC / 3);
        }
}

/* the spans that overlap one that starts when more than the limit run, for the failure */
static void
show_overlaps (GArray *spans, GPtrArray *labels)
{
    const gint64 *s = (const gint64 *) spans->data;

    for (guint i = 0; i < spans->len; i += 2) {
        guint running = 0;

        for (guint j = 0; j < spans->len; j += 2)
            running += s[j] <= s[i] && s[j + 1] > s[i];
        if (running <= CHAOS_CLUSTER_MAX_PARALLEL)
            continue;
        g_test_message ("at %" G_GINT64_FORMAT ", %u copies moved data:", s[i], running);
        for (guint j = 0; j < spans->len; j += 2)
            if (s[j] <= s[i] && s[j + 1] > s[i])
                g_test_message ("  %s from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT,
                                (const gchar *) labels->pdata[j / 2], s[j], s[j + 1]);
    }
}

void
chaos_cluster_check_end (ChaosCluster *cl, Chaos *c)
{
    g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (gint64));
    g_autoptr (GPtrArray) labels = g_ptr_array_new_with_free_func (g_free);
    guint jobs = add_record_spans (c->e->h.state_dir, 'a', spans, labels);
    guint most;

    clip_lapses (cl, spans, spans->len);
    jobs += add_record_spans (cl->b->state_dir, 'b', spans, labels);
    most = vmr_bulk_spans_most_at_once (spans);
    g_test_message ("FIGURES cluster: host b %u migrations; at most %u of %u jobs' copies moved "
                    "data at once (max-parallel %u); host a's daemon restarted %u times, %u of "
                    "them after its lease expired",
                    cl->migrations, most, jobs, CHAOS_CLUSTER_MAX_PARALLEL, cl->restarts,
                    cl->lapses->len / 2);
    g_print ("# cluster: at most %u copies moving data at once, max-parallel %u\n", most,
             CHAOS_CLUSTER_MAX_PARALLEL);
    if (most > CHAOS_CLUSTER_MAX_PARALLEL) {
        show_overlaps (spans, labels);
        vmr_fail ("chaos: %u copies moved data at once in the cluster, over its max-parallel of "
                  "%u (seed %u)",
                  most, CHAOS_CLUSTER_MAX_PARALLEL, c->seed);
    }
}

void
chaos_cluster_clear (ChaosCluster *cl)
{
    if (cl->b != NULL) {
        vmr_harness_teardown (cl->b, NULL);
        g_free (cl->b);
    }
    vmr_etcd_cluster_clear (&cl->etcd);
    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++)
        g_clear_pointer (&cl->proxies[m], vmr_cut_proxy_free);
    g_free (cl->expected);
    g_free (cl->paths[0]);
    g_free (cl->paths[1]);
    g_free (cl->job);
    g_clear_pointer (&cl->lapses, g_array_unref);
}
