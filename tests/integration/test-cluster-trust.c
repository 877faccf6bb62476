#define G_LOG_DOMAIN "vmr-test"

/*
 * What a daemon trusts from whoever can write to the cluster's prefix: two
 * daemons as two hosts on a real 3-member etcd cluster, each with a
 * guest-less QEMU whose disk lies in a shared array. Evacuation requests
 * put by hand with etcdctl, as a mistaken or malicious writer would, to a
 * directory outside the hosts' allowed-destinations, to an NBD server, and
 * to an allowed directory while the policy sets no allowed-destinations:
 * no job starts on any host, no file is made, and each host's report says
 * why on one line. The command refuses the same requests before it puts
 * anything. An allowed request moves both disks, with their bytes.
 *
 * A host that connects again under a new lease puts its report of an
 * ended part again. 1,000 requests put at once, then deleted: the file of
 * the ids each host took part in stays within its cap and empties, the
 * reports leave etcd, the daemon's memory is measured; a request put by
 * `evacuate --cluster` goes by itself once every host ended it.
 *
 * Two more daemons, in a cluster of their own, name the same host: the
 * second refuses to join, naming the first's lease on one line; of their
 * four copies under a cluster max-parallel of 1 no two overlap, as their
 * job histories show; once the first stops, its lease (of the TTL set) ends
 * and the second, which watches the name, takes it at once; its copies run.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "etcd-fixture.h"
#include "harness.h"

#define N_HOSTS    2
#define IMAGE_SIZE (1024 * 1024)
#define TIMEOUT_S  30
/* the two daemons that name one host: two disks each, a copy of 2 MiB at 1 MiB/s */
#define N_TWINS      2
#define N_TWIN_DISKS 2
#define TWIN_SIZE    (2 * 1024 * 1024)
#define TWIN_TTL_S   3

static struct {
    VmrHarness *hosts[N_HOSTS];
    VmrEtcdCluster etcd;
    gchar *shared;              /* holds the next three */
    gchar *array;               /* the array the requests empty */
    gchar *allowed;             /* where the policy lets copies write */
    gchar *elsewhere;           /* where it does not */
    gchar *source[N_HOSTS];     /* each host's disk, in @array */
    gchar *expected[N_HOSTS];   /* what it must hold */
    guint requests;             /* evacuation ids given */
    VmrHarness *twins[N_TWINS]; /* two daemons that name one host, in a cluster of their own */
} cluster;

/* host @i's policy; @allowed: with allowed-destinations; @reversed: the members the other way round
 */
static void
write_policy_full (guint i, gboolean allowed, gboolean reversed)
{
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    g_auto (GStrv) urls = g_strsplit (endpoints, ",", -1);
    guint n = g_strv_length (urls);
    g_autofree gchar *listed = NULL;
    g_autofree gchar *allow
        = allowed ? g_strdup_printf ("allowed-destinations = %s/**\n", cluster.allowed)
                  : g_strdup ("");
    g_autofree gchar *text = NULL;

    for (guint k = 0; reversed && k < n / 2; k++) {
        gchar *first = urls[k];

        urls[k] = urls[n - 1 - k];
        urls[n - 1 - k] = first;
    }
    listed = g_strjoinv (",", urls);
    text = g_strdup_printf (
        "[defaults]\n%s[cluster]\nname = trust\netcd = %s\nhost = host%u\nlease-ttl = 10s\n", allow,
        listed, i);
    g_free (vmr_harness_write_policy (cluster.hosts[i], text));
}

static void
write_policy (guint i, gboolean allowed)
{
    write_policy_full (i, allowed, FALSE);
}

/* every host's policy written again, @allowed as above, and reloaded */
static void
reload_all (gboolean allowed)
{
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autoptr (VmrCliResult) result = NULL;

        write_policy (i, allowed);
        result = vmr_harness_cli (cluster.hosts[i], "reload", NULL);
        vmr_cli_result_assert_ok (result);
    }
}

static void
start_host (guint i)
{
    VmrHarness *h = cluster.hosts[i];
    g_autofree gchar *made = vmr_harness_create_image (h, "disk0.raw", "raw", IMAGE_SIZE, 0x71 + i);
    g_autofree gchar *name = g_strdup_printf ("host%u-disk0.raw", i);
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    VmrHarnessDisk disk;

    cluster.expected[i] = vmr_harness_expected_path (made);
    cluster.source[i] = g_build_filename (cluster.array, name, NULL);
    g_assert_cmpint (g_rename (made, cluster.source[i]), ==, 0);
    disk = (VmrHarnessDisk){ "disk0", cluster.source[i], "raw", NULL };
    write_policy (i, TRUE);
    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");
}

/* the etcd key of evacuation @id's request, or of its hosts' reports with @what = "hosts/" */
static gchar *
evacuation_key (const gchar *id, const gchar *what)
{
    return g_strdup_printf ("/virt-mirror/trust/evacuations/%s/%s", id, what);
}

/* puts by hand a request to move every disk of the array to @to; returns its id */
static gchar *
put_request (const gchar *to)
{
    g_autofree gchar *id = g_strdup_printf ("by-hand-%u", ++cluster.requests);
    g_autofree gchar *key = evacuation_key (id, "request");
    g_autoptr (JsonBuilder) builder = json_builder_new ();
    g_autoptr (JsonNode) node = NULL;
    g_autofree gchar *value = NULL;

    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "id");
    json_builder_add_string_value (builder, id);
    json_builder_set_member_name (builder, "host");
    json_builder_add_string_value (builder, "someone");
    json_builder_set_member_name (builder, "from");
    json_builder_add_string_value (builder, cluster.array);
    json_builder_set_member_name (builder, "to");
    json_builder_add_string_value (builder, to);
    json_builder_end_object (builder);
    node = json_builder_get_root (builder);
    value = json_to_string (node, FALSE);
    g_free (vmr_etcd_cluster_ctl (&cluster.etcd, "put", key, value, NULL));
    return g_steal_pointer (&id);
}

/* the reports of @id's hosts in etcd that say "ended", by host name (new references) */
static GHashTable *
ended_reports (const gchar *id)
{
    g_autofree gchar *prefix = evacuation_key (id, "hosts/");
    g_autofree gchar *out = vmr_etcd_cluster_ctl (&cluster.etcd, "get", "--prefix",
                                                  "--print-value-only", prefix, NULL);
    g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
    GHashTable *reports = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                 (GDestroyNotify) json_object_unref);

    for (guint k = 0; lines[k] != NULL; k++) {
        g_autoptr (JsonParser) parser = json_parser_new ();
        JsonObject *report;

        if (*lines[k] == '\0')
            continue;
        g_assert_true (json_parser_load_from_data (parser, lines[k], -1, NULL));
        report = vmr_harness_json_node_object (json_parser_get_root (parser));
        if (g_str_equal (vmr_harness_json_string (report, "state"), "ended"))
            g_hash_table_insert (reports, g_strdup (vmr_harness_json_string (report, "host")),
                                 json_object_ref (report));
    }
    return reports;
}

/* waits until every host has reported @id ended; returns the reports by host name */
static GHashTable *
wait_reports (const gchar *id)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        GHashTable *reports = ended_reports (id);

        if (g_hash_table_size (reports) == N_HOSTS)
            return reports;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%u of %u hosts reported evacuation %s ended in %d s",
                      g_hash_table_size (reports), N_HOSTS, id, TIMEOUT_S);
        g_hash_table_unref (reports);
        g_usleep (100 * 1000);
    }
}

/*
 * A request to @to put by hand: every host reports it ended with no disk
 * and one line that has @why; no job starts anywhere, no destination is made, and
 * each disk stays on its source with its bytes.
 */
static void
assert_refused_everywhere (const gchar *to, const gchar *why)
{
    g_autofree gchar *id = put_request (to);
    g_autoptr (GHashTable) reports = wait_reports (id);

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *host = g_strdup_printf ("host%u", i);
        JsonObject *report = g_hash_table_lookup (reports, host);
        const gchar *error = vmr_harness_json_string (report, "error");

        g_test_message ("%s: %s", host, error);
        g_assert_nonnull (strstr (error, why));
        g_assert_null (strchr (error, '\n'));
        g_assert_cmpuint (json_array_get_length (vmr_harness_json_array (report, "disks")), ==, 0);
        g_assert_cmpuint (vmr_harness_count_jobs (cluster.hosts[i]), ==, 0);
        vmr_harness_assert_disk_on (cluster.hosts[i], "disk0", cluster.source[i]);
        vmr_harness_assert_image_equals (cluster.source[i], "raw", cluster.expected[i]);
        if (g_path_is_absolute (to)) {
            g_autofree gchar *name = g_path_get_basename (cluster.source[i]);
            g_autofree gchar *made = g_build_filename (to, name, NULL);

            g_assert_false (g_file_test (made, G_FILE_TEST_EXISTS));
        }
    }
}

/* `evacuate --cluster` to @to on host 0: refused on one line with @why, nothing put in etcd */
static void
assert_command_refuses (const gchar *to, const gchar *why)
{
    g_autoptr (VmrCliResult) result
        = vmr_harness_cli (cluster.hosts[0], "evacuate", "--cluster", "--from", cluster.array,
                           "--to", to, "--wait", NULL);
    g_autofree gchar *keys = vmr_etcd_cluster_ctl (&cluster.etcd, "get", "--prefix", "--keys-only",
                                                   "/virt-mirror/trust/evacuations/", NULL);

    vmr_cli_result_assert_error (result, 1);
    g_assert_null (strchr (g_strchomp (result->err), '\n'));
    g_assert_nonnull (strstr (result->err, why));
    /* only the requests put by hand so far */
    g_assert_cmpuint (vmr_harness_count_lines (keys, "/request"), ==, cluster.requests);
}

/* a directory outside the allow-list */
static void
test_outside (void)
{
    g_autofree gchar *why = g_strdup_printf (
        "destination directory %s is outside the policy's allowed-destinations (%s/**)",
        cluster.elsewhere, cluster.allowed);

    assert_command_refuses (cluster.elsewhere, why);
    assert_refused_everywhere (cluster.elsewhere, why);
    /* "/" holds the allowed directory: each disk's own destination is refused then */
    assert_refused_everywhere ("/", "is not in the policy's allowed-destinations");
}

/* an NBD server, which no key of the policy lets a cluster evacuation name */
static void
test_nbd (void)
{
    const gchar *why = "needs [cluster] evacuate-to-nbd = allow";

    assert_command_refuses ("nbd://127.0.0.1:10809/stolen", why);
    assert_refused_everywhere ("nbd://127.0.0.1:10809/stolen", why);
}

/* no allowed-destinations at all: even the directory it used to allow is refused, the key named */
static void
test_no_allowed (void)
{
    const gchar *why = "this host's policy sets no allowed-destinations";

    reload_all (FALSE);
    assert_command_refuses (cluster.allowed, why);
    assert_refused_everywhere (cluster.allowed, why);
    reload_all (TRUE);
}

/* within the allow-list, a request put by hand moves both disks with their bytes */
static void
test_allowed (void)
{
    g_autofree gchar *id = put_request (cluster.allowed);
    g_autoptr (GHashTable) reports = wait_reports (id);

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree gchar *host = g_strdup_printf ("host%u", i);
        g_autofree gchar *name = g_path_get_basename (cluster.source[i]);
        g_autofree gchar *moved = g_build_filename (cluster.allowed, name, NULL);
        JsonObject *report = g_hash_table_lookup (reports, host);
        JsonArray *disks = vmr_harness_json_array (report, "disks");

        g_assert_false (json_object_has_member (report, "error"));
        g_assert_cmpuint (json_array_get_length (disks), ==, 1);
        g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_element (disks, 0), "state"), ==,
                         "completed");
        vmr_harness_assert_disk_on (cluster.hosts[i], "disk0", moved);
        vmr_harness_assert_image_equals (moved, "raw", cluster.expected[i]);
    }
}

/* ---- a reconnection keeps the reports ---- */

/* the lease of @key in etcd, 0 when the key is not there */
static gint64
lease_of (const gchar *key)
{
    g_autofree gchar *out
        = vmr_etcd_cluster_ctl (&cluster.etcd, "get", key, "--write-out", "fields", NULL);
    const gchar *lease = strstr (out, "\"Lease\" : ");

    return lease != NULL ? g_ascii_strtoll (lease + strlen ("\"Lease\" : "), NULL, 10) : 0;
}

/*
 * An evacuation both hosts ended; host 1 connects again under a new lease
 * (a reload that names the members in another order): its report of the
 * ended part, which went with its old lease, is there again under the new
 * one, so a command following it would not call host 1 lost
 */
static void
test_reconnect_keeps_reports (void)
{
    g_autofree gchar *id = put_request (cluster.allowed);
    g_autoptr (GHashTable) reports = wait_reports (id);
    g_autofree gchar *prefix = evacuation_key (id, "hosts/");
    g_autofree gchar *key = g_strconcat (prefix, "host1", NULL);
    g_autoptr (VmrCliResult) result = NULL;
    gint64 old_lease = lease_of (key);
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    gint64 new_lease;

    g_assert_cmpint (old_lease, !=, 0);
    write_policy_full (1, TRUE, TRUE);
    result = vmr_harness_cli (cluster.hosts[1], "reload", NULL);
    vmr_cli_result_assert_ok (result);
    while ((new_lease = lease_of (key)) == 0 || new_lease == old_lease) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("host 1's report of %s is not there under a new lease after %d s", id,
                      TIMEOUT_S);
        g_usleep (100 * 1000);
    }
    g_hash_table_unref (reports);
    reports = wait_reports (id);
    g_assert_nonnull (g_hash_table_lookup (reports, "host1"));
}

/* ---- state that does not grow ---- */

#define N_BULK   1000
#define BULK_TXN 100 /* etcd takes up to 128 operations in one transaction */

/* the resident memory of process @pid, in KiB */
static guint64
rss_kib (GPid pid)
{
    g_autofree gchar *path = g_strdup_printf ("/proc/%d/status", (int) pid);
    g_autofree gchar *text = NULL;
    const gchar *line;

    g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
    line = strstr (text, "VmRSS:");
    g_assert_nonnull (line);
    return g_ascii_strtoull (line + strlen ("VmRSS:"), NULL, 10);
}

/* how many keys under @prefix etcd holds */
static guint
count_keys (const gchar *prefix)
{
    g_autofree gchar *out
        = vmr_etcd_cluster_ctl (&cluster.etcd, "get", "--prefix", "--keys-only", prefix, NULL);

    /* each key on a line, and an empty line after it */
    return vmr_harness_count_lines (out, prefix);
}

/* waits until etcd holds @n keys under @prefix */
static void
wait_keys (const gchar *prefix, guint n)
{
    gint64 deadline = g_get_monotonic_time () + 4 * TIMEOUT_S * G_USEC_PER_SEC;
    guint now;

    while ((now = count_keys (prefix)) != n) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%u keys under %s, not %u, after %d s", now, prefix, n, 4 * TIMEOUT_S);
        g_usleep (200 * 1000);
    }
}

/* the lines of host @i's file of the evacuations it took part in */
static guint
taken_part_lines (guint i)
{
    g_autofree gchar *path
        = g_build_filename (cluster.hosts[i]->state_dir, "cluster-evacuations", NULL);
    g_autofree gchar *text = NULL;

    guint n = 0;

    if (!g_file_get_contents (path, &text, NULL, NULL))
        return 0;
    /* one id a line, each ended by a newline */
    for (const gchar *c = text; *c != '\0'; c++)
        n += *c == '\n';
    return n;
}

/*
 * Puts (or with @delete, deletes) the requests bulk-0 to bulk-(N_BULK - 1),
 * BULK_TXN at a time, each batch once both hosts answered the one before
 */
static void
bulk_requests (gboolean delete)
{
    const gchar *prefix = "/virt-mirror/trust/evacuations/";

    for (guint first = 0; first < N_BULK; first += BULK_TXN) {
        g_autoptr (GString) ops = g_string_new (NULL);

        for (guint n = first; n < first + BULK_TXN; n++) {
            g_autofree gchar *id = g_strdup_printf ("bulk-%u", n);
            g_autofree gchar *key = evacuation_key (id, "request");

            if (delete)
                g_string_append_printf (ops, "del %s\n", key);
            else
                /* no domain matches: every host has nothing to move */
                g_string_append_printf (
                    ops,
                    "put %s \"{\\\"id\\\":\\\"%s\\\",\\\"host\\\":\\\"someone\\\",\\\"from\\\":"
                    "\\\"%s\\\",\\\"to\\\":\\\"%s\\\",\\\"domains\\\":\\\"none-*\\\"}\"\n",
                    key, id, cluster.array, cluster.allowed);
        }
        vmr_etcd_cluster_txn (&cluster.etcd, ops->str);
        /* a request, and a report of each host */
        wait_keys (prefix, (delete ? N_BULK - first - BULK_TXN : first + BULK_TXN) * (1 + N_HOSTS));
    }
}

/*
 * 1,000 requests put, 100 at a time, and answered by both hosts, then gone: each
 * host's file of the requests it took part in stays within its cap (512)
 * and is empty once they have gone, their reports leave etcd, and the
 * daemon's memory stays within a bound. A request put by `evacuate
 * --cluster` goes by itself once every host reported it ended.
 */
static void
test_state_bounded (void)
{
    GPid pid = cluster.hosts[0]->daemon_pid;
    const gchar *reports = "/virt-mirror/trust/evacuations/";
    g_autoptr (GString) earlier = g_string_new (NULL);
    guint64 before, during, after;
    guint most_lines;

    /* the requests of the cases before go: so do the hosts' reports of them, and their lines */
    for (guint n = 1; n <= cluster.requests; n++) {
        g_autofree gchar *id = g_strdup_printf ("by-hand-%u", n);
        g_autofree gchar *key = evacuation_key (id, "request");

        g_string_append_printf (earlier, "del %s\n", key);
    }
    vmr_etcd_cluster_txn (&cluster.etcd, earlier->str);
    wait_keys (reports, 0);
    for (guint i = 0; i < N_HOSTS; i++)
        g_assert_cmpuint (taken_part_lines (i), ==, 0);

    before = rss_kib (pid);
    bulk_requests (FALSE);
    most_lines = taken_part_lines (0);
    during = rss_kib (pid);
    bulk_requests (TRUE);
    wait_keys (reports, 0);
    after = rss_kib (pid);
    g_test_message ("%u requests: the file of host 0 had %u lines with them open, %u once gone; "
                    "its daemon's RSS %" G_GUINT64_FORMAT " KiB before, %" G_GUINT64_FORMAT
                    " KiB with them, %" G_GUINT64_FORMAT " KiB after",
                    N_BULK, most_lines, taken_part_lines (0), before, during, after);
    g_assert_cmpuint (most_lines, ==, 512);
    for (guint i = 0; i < N_HOSTS; i++)
        g_assert_cmpuint (taken_part_lines (i), ==, 0);
    /*
     * under ASan (the sanitize setup sets ASAN_OPTIONS), freed memory waits in
     * its quarantine, up to 256 MiB, so the RSS says nothing of what the daemon
     * keeps: there its leak check at exit does (detect_leaks=1); the bound holds
     * in the normal build
     */
    if (g_getenv ("ASAN_OPTIONS") == NULL)
        g_assert_cmpuint (after, <=, before + 16 * 1024);
    /* one through the command: its request goes once both hosts said they ended */
    {
        g_autoptr (VmrCliResult) result
            = vmr_harness_cli (cluster.hosts[0], "evacuate", "--cluster", "--from", cluster.array,
                               "--to", cluster.allowed, "--domains", "none-*", "--wait", NULL);

        vmr_cli_result_assert_ok (result);
        g_assert_cmpuint (count_keys (reports), >, 0);
        wait_keys (reports, 0);
        for (guint i = 0; i < N_HOSTS; i++)
            g_assert_cmpuint (taken_part_lines (i), ==, 0);
    }
}

/* ---- one live identity per host ---- */

/* twin @t: its QEMU with two disks, its daemon as host "twin" under a cluster max-parallel of 1 */
static void
start_twin (guint t)
{
    VmrHarness *h = cluster.twins[t];
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    g_autofree gchar *text = g_strdup_printf (
        "[defaults]\nmax-parallel = 2\nmax-parallel-per-iothread = 0\n"
        "allowed-destinations = %s/**\n"
        "[cluster]\nname = twins\netcd = %s\nhost = twin\nmax-parallel = 1\nlease-ttl = %us\n",
        cluster.allowed, endpoints, TWIN_TTL_S);
    g_autofree gchar *policy = vmr_harness_write_policy (h, text);
    VmrHarnessDisk disks[N_TWIN_DISKS];
    gchar *images[N_TWIN_DISKS];
    static const gchar *const ids[N_TWIN_DISKS] = { "disk0", "disk1" };

    for (guint d = 0; d < N_TWIN_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("twin%u-%s.raw", t, ids[d]);

        images[d] = vmr_harness_create_image (h, name, "raw", TWIN_SIZE, 0x91 + 16 * t + d);
        disks[d] = (VmrHarnessDisk){ ids[d], images[d], "raw", NULL };
    }
    h->daemon_log = vmr_harness_path (h, "daemon.log");
    vmr_harness_start_qemu (h, disks, N_TWIN_DISKS);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");
    for (guint d = 0; d < N_TWIN_DISKS; d++)
        g_free (images[d]);
}

/* twin @t's `cluster status` */
static JsonNode *
twin_status (guint t)
{
    return vmr_harness_cli_json (cluster.twins[t], "cluster", "status", NULL);
}

/* waits until twin @t's `cluster status` says @member is there (or "available" is true) */
static JsonNode *
wait_twin_status (guint t, const gchar *member)
{
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        JsonNode *node = twin_status (t);
        JsonObject *status = vmr_harness_json_node_object (node);

        if (g_str_equal (member, "available") ? vmr_harness_json_bool (status, "available")
                                              : json_object_has_member (status, member))
            return node;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("twin %u's cluster status has no %s after %d s", t, member, TIMEOUT_S);
        json_node_unref (node);
        g_usleep (50 * 1000);
    }
}

/* the job @id of twin @t, ended: its history and its destination's bytes checked */
static JsonObject *
twin_job_ended (guint t, const gchar *id, const gchar *disk, const gchar *dest)
{
    g_autofree gchar *name = g_strdup_printf ("twin%u-%s.raw", t, disk);
    g_autofree gchar *image = vmr_harness_path (cluster.twins[t], name);
    g_autofree gchar *expected = vmr_harness_expected_path (image);
    JsonObject *job = vmr_harness_wait_job (cluster.twins[t], id, "completed", TIMEOUT_S);

    vmr_harness_assert_image_equals (dest, "raw", expected);
    return job;
}

/* the most of @jobs whose bulk copies, [copying, synced) in their histories, overlap */
static guint
most_at_once (GPtrArray *jobs)
{
    guint most = 0;

    for (guint i = 0; i < jobs->len; i++) {
        gint64 start = vmr_json_job_time_of (g_ptr_array_index (jobs, i), "copying");
        guint running = 0;

        /* at the start of one, how many run: those started by then and not yet in sync */
        for (guint j = 0; j < jobs->len; j++) {
            JsonObject *other = g_ptr_array_index (jobs, j);

            if (vmr_json_job_time_of (other, "copying") <= start
                && vmr_json_job_time_of (other, "synced") > start)
                running++;
        }
        most = MAX (most, running);
    }
    return most;
}

/* the TTL etcd granted the lease @lease (decimal, as in etcd's JSON) */
static gint64
granted_ttl (const gchar *lease)
{
    g_autofree gchar *hex
        = g_strdup_printf ("%" G_GINT64_MODIFIER "x", g_ascii_strtoll (lease, NULL, 10));
    g_autofree gchar *out = vmr_etcd_cluster_ctl (&cluster.etcd, "lease", "timetolive", hex,
                                                  "--write-out", "json", NULL);
    const gchar *granted = strstr (out, "\"granted-ttl\":");

    g_assert_nonnull (granted);
    return g_ascii_strtoll (granted + strlen ("\"granted-ttl\":"), NULL, 10);
}

/*
 * Waits until the twins' host name, held under @first (a lease of a daemon
 * that stopped), is held by another lease. The second twin watches the name:
 * it takes it as soon as etcd frees it, well within one keep-alive interval
 * (TTL / 3), the shortest timer a daemon that polled instead would wait on.
 * When etcd frees it depends on etcd (the lease's granted TTL is checked
 * apart), so the bound starts from the first look that finds it free.
 */
static void
wait_name_taken (gint64 first)
{
    const gchar *key = "/virt-mirror/twins/members/twin";
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    gint64 freed = 0;
    gint64 now;

    for (;;) {
        gint64 held = lease_of (key);

        now = g_get_monotonic_time ();
        if (held != first && held != 0)
            break;
        if (held == 0 && freed == 0)
            freed = now;
        if (now > deadline)
            vmr_fail ("the twins' host name is not taken %d s after the first stopped", TIMEOUT_S);
        g_usleep (20 * 1000);
    }
    if (freed == 0)
        freed = now;
    g_test_message ("the name was taken %.2f s after it was seen free (TTL %d s)",
                    (now - freed) / 1e6, TWIN_TTL_S);
    g_assert_cmpint (now - freed, <=, TWIN_TTL_S * G_USEC_PER_SEC / 3);
}

/* two daemons name one host: the second joins only once the first is gone */
static void
test_same_host (void)
{
    g_autoptr (JsonNode) first_node = NULL;
    g_autoptr (JsonNode) refused_node = NULL;
    g_autoptr (JsonNode) joined_node = NULL;
    g_autoptr (GPtrArray) jobs
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_object_unref);
    g_autofree gchar *log = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *lease_line = NULL;
    g_autoptr (VmrCliResult) text = NULL;
    JsonObject *member;
    const gchar *lease;
    gchar *ids[N_TWINS][N_TWIN_DISKS];
    gchar *dests[N_TWINS][N_TWIN_DISKS];

    for (guint t = 0; t < N_TWINS; t++)
        cluster.twins[t] = g_new0 (VmrHarness, 1);
    for (guint t = 0; t < N_TWINS; t++)
        vmr_harness_setup_no_daemon (cluster.twins[t], NULL);
    start_twin (0);
    first_node = wait_twin_status (0, "available");
    member = vmr_harness_json_element (
        vmr_harness_json_array (vmr_harness_json_node_object (first_node), "members"), 0);
    lease = vmr_harness_json_string (member, "lease");
    if (g_file_get_contents ("/etc/machine-id", &machine_id, NULL, NULL))
        g_assert_cmpstr (vmr_harness_json_string (member, "machine-id"), ==,
                         g_strstrip (machine_id));
    text = vmr_harness_cli (cluster.twins[0], "cluster", "status", NULL);
    vmr_cli_result_assert_ok (text);
    g_assert_nonnull (strstr (text->out, "MACHINE-ID"));

    /* the second: refused, the first's lease named, on one line of its log */
    start_twin (1);
    refused_node = wait_twin_status (1, "refused");
    lease_line = g_strdup_printf ("host twin is held by another daemon's lease %" G_GINT64_MODIFIER
                                  "x (%s in etcd's JSON), machine-id ",
                                  g_ascii_strtoll (lease, NULL, 10), lease);
    g_assert_nonnull (
        strstr (vmr_harness_json_string (vmr_harness_json_node_object (refused_node), "refused"),
                lease_line));
    g_assert_false (
        vmr_harness_json_bool (vmr_harness_json_node_object (refused_node), "available"));
    g_assert_true (g_file_get_contents (cluster.twins[1]->daemon_log, &log, NULL, NULL));
    g_assert_cmpuint (vmr_harness_count_lines (log, lease_line), ==, 1);

    /* four copies, two on each; the second's wait while it has not joined */
    for (guint t = 0; t < N_TWINS; t++) {
        for (guint d = 0; d < N_TWIN_DISKS; d++) {
            g_autofree gchar *name = g_strdup_printf ("twin%u-d%u.raw", t, d);
            const gchar *disk = d == 0 ? "disk0" : "disk1";

            dests[t][d] = g_build_filename (cluster.allowed, name, NULL);
            ids[t][d] = vmr_harness_migrate (cluster.twins[t], "vm", disk, dests[t][d], "--speed",
                                             VMR_HARNESS_SLOW_SPEED, NULL);
        }
    }
    for (guint d = 0; d < N_TWIN_DISKS; d++)
        g_ptr_array_add (jobs,
                         twin_job_ended (0, ids[0][d], d == 0 ? "disk0" : "disk1", dests[0][d]));
    for (guint d = 0; d < N_TWIN_DISKS; d++) {
        g_autoptr (JsonObject) waiting = vmr_harness_get_job (cluster.twins[1], ids[1][d]);

        g_assert_cmpstr (vmr_json_job_state (waiting), ==, "queued");
        g_assert_cmpstr (
            vmr_harness_json_string (vmr_harness_json_object (waiting, "policy"), "reason"), ==,
            "cluster unavailable");
    }

    /* the first stops: its lease ends, the second takes the name at once, and its copies run */
    g_assert_cmpint (granted_ttl (lease), ==, TWIN_TTL_S);
    vmr_harness_stop_daemon (cluster.twins[0]);
    wait_name_taken (g_ascii_strtoll (lease, NULL, 10));
    joined_node = wait_twin_status (1, "available");
    g_assert_false (json_object_has_member (vmr_harness_json_node_object (joined_node), "refused"));
    for (guint d = 0; d < N_TWIN_DISKS; d++)
        g_ptr_array_add (jobs,
                         twin_job_ended (1, ids[1][d], d == 0 ? "disk0" : "disk1", dests[1][d]));
    g_assert_cmpuint (most_at_once (jobs), ==, 1);
    for (guint t = 0; t < N_TWINS; t++) {
        for (guint d = 0; d < N_TWIN_DISKS; d++) {
            g_free (ids[t][d]);
            g_free (dests[t][d]);
        }
    }
}

static void
run_case (gconstpointer user_data)
{
    void (*body) (void) = user_data;

    if (vmr_harness_skipped (cluster.hosts[0]) || cluster.etcd.dir == NULL) {
        vmr_harness_skip (cluster.hosts[0], "the cluster could not be set up");
        return;
    }
    body ();
}

static void
set_up (void)
{
    g_autoptr (GError) error = NULL;

    for (guint i = 0; i < N_HOSTS; i++) {
        cluster.hosts[i] = g_new0 (VmrHarness, 1);
        vmr_harness_setup_no_daemon (cluster.hosts[i], NULL);
        if (vmr_harness_skipped (cluster.hosts[i]))
            return;
    }
    if (!vmr_harness_require (cluster.hosts[0], "etcd", "etcdctl", NULL))
        return;
    cluster.shared = g_dir_make_tmp ("vmr-trust-XXXXXX", &error);
    g_assert_no_error (error);
    cluster.array = g_build_filename (cluster.shared, "array", NULL);
    cluster.allowed = g_build_filename (cluster.shared, "allowed", NULL);
    cluster.elsewhere = g_build_filename (cluster.shared, "elsewhere", NULL);
    g_assert_cmpint (g_mkdir (cluster.array, 0755), ==, 0);
    g_assert_cmpint (g_mkdir (cluster.allowed, 0755), ==, 0);
    g_assert_cmpint (g_mkdir (cluster.elsewhere, 0755), ==, 0);
    vmr_etcd_cluster_start (&cluster.etcd, cluster.hosts[0]->dir);
    for (guint i = 0; i < N_HOSTS; i++)
        start_host (i);
}

/* removes @dir's files (one level) and @dir */
static void
remove_dir (const gchar *dir)
{
    g_autoptr (GDir) handle = dir != NULL ? g_dir_open (dir, 0, NULL) : NULL;
    const gchar *name;

    while (handle != NULL && (name = g_dir_read_name (handle)) != NULL) {
        g_autofree gchar *file = g_build_filename (dir, name, NULL);

        g_unlink (file);
    }
    if (dir != NULL)
        g_rmdir (dir);
}

static void
tear_down (void)
{
    vmr_etcd_cluster_clear (&cluster.etcd);
    for (guint t = 0; t < N_TWINS; t++) {
        if (cluster.twins[t] == NULL)
            continue;
        vmr_harness_teardown (cluster.twins[t], NULL);
        g_free (cluster.twins[t]);
    }
    for (guint i = 0; i < N_HOSTS; i++) {
        if (cluster.hosts[i] == NULL)
            continue;
        vmr_harness_teardown (cluster.hosts[i], NULL);
        g_free (cluster.hosts[i]);
        g_free (cluster.source[i]);
        g_free (cluster.expected[i]);
    }
    remove_dir (cluster.array);
    remove_dir (cluster.allowed);
    remove_dir (cluster.elsewhere);
    remove_dir (cluster.shared);
    g_free (cluster.array);
    g_free (cluster.allowed);
    g_free (cluster.elsewhere);
    g_free (cluster.shared);
}

int
main (int argc, char **argv)
{
    gint status;

    vmr_harness_init (&argc, &argv);
    g_test_add_data_func ("/cluster-trust/outside", test_outside, run_case);
    g_test_add_data_func ("/cluster-trust/nbd", test_nbd, run_case);
    g_test_add_data_func ("/cluster-trust/no-allowed", test_no_allowed, run_case);
    g_test_add_data_func ("/cluster-trust/allowed", test_allowed, run_case);
    g_test_add_data_func ("/cluster-trust/reconnect-keeps-reports", test_reconnect_keeps_reports,
                          run_case);
    g_test_add_data_func ("/cluster-trust/state-bounded", test_state_bounded, run_case);
    g_test_add_data_func ("/cluster-trust/same-host", test_same_host, run_case);
    set_up ();
    status = vmr_harness_run_shared (cluster.hosts[0]);
    tear_down ();
    return status;
}
