#define G_LOG_DOMAIN "vmr-test"

/*
 * The cluster over TLS, and its per-storage limits: a 3-member etcd
 * cluster that serves https and asks for a client certificate (certtool's
 * CA), and two daemons as two hosts that reach it with the policy's
 * tls-creds. Under max-parallel-per-source = 1 and
 * max-parallel-per-destination = 1, four copies (each host's two disks, to
 * two destination storages) never run two at once from one host's storage
 * or into one destination storage, as every QEMU's query-block-jobs shows
 * throughout, yet two run at once; the held ones name their limit. Every
 * destination holds the bytes of its source.
 */

#include <glib/gstdio.h>
#include <string.h>

#include "etcd-fixture.h"
#include "harness.h"
#include "nbd-fixture.h"

#define N_HOSTS 2
#define N_DISKS 2
/*
 * a copy at 1 MiB/s runs for about 6 s: the four are all queued before the
 * first ends, on a loaded machine and under ASan too (at 2 s, the first had
 * ended before the last was submitted)
 */
#define IMAGE_SIZE (6 * 1024 * 1024)
#define TIMEOUT_S  80

static const gchar *const disk_ids[N_DISKS] = { "disk0", "disk1" };

static struct {
    VmrHarness *hosts[N_HOSTS];
    VmrNbdServers pki_servers; /* for its PKI only */
    VmrEtcdCluster etcd;
    gchar *destinations[N_DISKS];      /* the two destination storages */
    gchar *sources[N_HOSTS][N_DISKS];  /* each host's images */
    gchar *expected[N_HOSTS][N_DISKS]; /* what each disk must hold */
} cluster;

/* the daemon's tls-creds directory: ca.pem, cert.pem, key.pem of the PKI's client */
static gchar *
make_creds (VmrHarness *h, const gchar *pki)
{
    g_autofree gchar *dir = vmr_harness_path (h, "etcd-creds");
    static const gchar *const names[][2] = { { "ca.pem", "ca-cert.pem" },
                                             { "cert.pem", "client-cert.pem" },
                                             { "key.pem", "client-key.pem" } };

    g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
        g_autofree gchar *target = g_build_filename (pki, "client", names[i][1], NULL);
        g_autofree gchar *link = g_build_filename (dir, names[i][0], NULL);

        g_assert_cmpint (symlink (target, link), ==, 0);
    }
    return g_steal_pointer (&dir);
}

static void
start_host (guint i, const gchar *endpoints, const gchar *pki)
{
    VmrHarness *h = cluster.hosts[i];
    VmrHarnessDisk disks[N_DISKS];
    g_autofree gchar *creds = make_creds (h, pki);
    g_autofree gchar *text = NULL;
    g_autofree gchar *policy = NULL;

    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("source-%s.raw", disk_ids[d]);

        cluster.sources[i][d]
            = vmr_harness_create_image (h, name, "raw", IMAGE_SIZE, 0x51 + 16 * i + d);
        cluster.expected[i][d] = vmr_harness_expected_path (cluster.sources[i][d]);
        disks[d] = (VmrHarnessDisk){ disk_ids[d], cluster.sources[i][d], "raw", NULL };
    }
    text = g_strdup_printf (
        "[defaults]\nmax-parallel = 4\nmax-parallel-per-iothread = 0\n"
        "[cluster]\nname = storage\netcd = %s\ntls-creds = %s\nhost = host%u\n"
        "max-parallel = 4\nmax-parallel-per-source = 1\nmax-parallel-per-destination = 1\n"
        "lease-ttl = 5s\nstorage = %s, %s\n",
        endpoints, creds, i, cluster.destinations[0], cluster.destinations[1]);
    policy = vmr_harness_write_policy (h, text);
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");
}

/* the bulk copies (mirror jobs not yet ready) of host @i's QEMU, as "HOST JOB" */
static void
add_bulk_copies (guint i, GPtrArray *running)
{
    g_autoptr (JsonNode) reply = vmr_harness_qmp (cluster.hosts[i], "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (reply);

    for (guint j = 0; j < json_array_get_length (array); j++) {
        JsonObject *job = vmr_harness_json_element (array, j);

        if (vmr_harness_is_bulk_copy (job))
            g_ptr_array_add (running,
                             g_strdup_printf ("%u %s", i, vmr_harness_json_string (job, "device")));
    }
}

/* TLS: etcd refuses a client without a certificate; the daemons joined it over https */
static void
test_tls (void)
{
    g_autofree gchar *endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    g_autofree gchar *ca = g_build_filename (cluster.etcd.pki, "client", "ca-cert.pem", NULL);
    g_autofree gchar *ca_opt = g_strdup_printf ("--cacert=%s", ca);
    const gchar *argv[]
        = { "etcdctl", "--endpoints", endpoints, ca_opt, "get", "--prefix", "/", NULL };
    const gchar *env[] = { "ETCDCTL_API=3", NULL };
    gint status = 0;

    g_assert_true (
        g_spawn_sync (NULL, (gchar **) argv, (gchar **) env,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, NULL, NULL, &status, NULL));
    g_assert_false (g_spawn_check_wait_status (status, NULL));
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autoptr (JsonNode) node
            = vmr_harness_cli_json (cluster.hosts[i], "cluster", "status", NULL);
        JsonObject *status_object = vmr_harness_json_node_object (node);

        g_assert_true (vmr_harness_json_bool (status_object, "available"));
        g_assert_true (g_str_has_prefix (vmr_harness_json_string (status_object, "endpoint"),
                                         "https://127.0.0.1:"));
        g_assert_cmpuint (json_array_get_length (vmr_harness_json_array (status_object, "members")),
                          ==, N_HOSTS);
    }
}

/* which host and destination storage each job copies from and to */
typedef struct {
    guint host;
    guint disk;
    guint destination;
    gchar *id;
    gchar *dest;
} Copy;

/* job ids are each daemon's own: host 0's vmr-1 is not host 1's */
static const Copy *
copy_of (const Copy *copies, guint n, guint host, const gchar *id)
{
    for (guint i = 0; i < n; i++) {
        if (copies[i].host == host && g_str_equal (copies[i].id, id))
            return &copies[i];
    }
    return NULL;
}

/* per-source and per-destination limits of 1, held against real QEMUs */
static void
test_storage_limits (void)
{
    Copy copies[4] = { { 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 1 }, { 1, 1, 1 } };
    /*
     * the second waits for its destination (and, once the last runs, for its
     * source too), the third for its source
     */
    static const gchar *const held_by[]
        = { NULL, "cluster max-parallel-per-", "cluster max-parallel-per-source", NULL };
    gint64 deadline = g_get_monotonic_time () + TIMEOUT_S * G_USEC_PER_SEC;
    guint most = 0;

    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        g_autofree gchar *name
            = g_strdup_printf ("h%u-%s.raw", copies[i].host, disk_ids[copies[i].disk]);

        copies[i].dest = g_build_filename (cluster.destinations[copies[i].destination], name, NULL);
        copies[i].id
            = vmr_harness_migrate (cluster.hosts[copies[i].host], "vm", disk_ids[copies[i].disk],
                                   copies[i].dest, "--speed", VMR_HARNESS_SLOW_SPEED, NULL);
        /* each in the queue before the next */
        for (;;) {
            g_autoptr (JsonObject) job
                = vmr_harness_get_job (cluster.hosts[copies[i].host], copies[i].id);
            const gchar *waiting = vmr_harness_json_is_null (job, "waiting-for")
                                       ? NULL
                                       : vmr_harness_json_string (job, "waiting-for");

            if (!g_str_equal (vmr_harness_json_string (job, "state"), "queued")
                || (waiting != NULL && g_str_has_prefix (waiting, "cluster max-parallel")))
                break;
            if (g_get_monotonic_time () > deadline)
                vmr_fail ("job %s has no place in the cluster's queue", copies[i].id);
            g_usleep (50 * 1000);
        }
    }
    /* the first and the last run */
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        g_autoptr (JsonObject) job
            = vmr_harness_get_job (cluster.hosts[copies[i].host], copies[i].id);

        if (held_by[i] == NULL)
            continue;
        g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "queued");
        if (!g_str_has_prefix (vmr_harness_json_string (job, "waiting-for"), held_by[i]))
            vmr_fail ("job %s waits for %s, not %s", copies[i].id,
                      vmr_harness_json_string (job, "waiting-for"), held_by[i]);
    }
    for (gboolean done = FALSE; !done;) {
        g_autoptr (GPtrArray) running = g_ptr_array_new_with_free_func (g_free);
        guint from_host[N_HOSTS] = { 0 };
        guint into[N_DISKS] = { 0 };

        for (guint i = 0; i < N_HOSTS; i++)
            add_bulk_copies (i, running);
        for (guint i = 0; i < running->len; i++) {
            const gchar *entry = g_ptr_array_index (running, i);
            const Copy *copy
                = copy_of (copies, G_N_ELEMENTS (copies),
                           (guint) g_ascii_strtoull (entry, NULL, 10), strchr (entry, ' ') + 1);

            g_assert_nonnull (copy);
            if (++from_host[copy->host] > 1)
                vmr_fail ("two copies at once from host %u's storage", copy->host);
            if (++into[copy->destination] > 1)
                vmr_fail ("two copies at once into %s", cluster.destinations[copy->destination]);
        }
        most = MAX (most, running->len);
        done = TRUE;
        for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
            g_autoptr (JsonObject) job
                = vmr_harness_get_job (cluster.hosts[copies[i].host], copies[i].id);
            const gchar *state = vmr_harness_json_string (job, "state");

            if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
                vmr_fail ("job %s ended %s", copies[i].id, state);
            done = done && g_str_equal (state, "completed");
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the copies did not complete in %d s", TIMEOUT_S);
        g_usleep (50 * 1000);
    }
    g_assert_cmpuint (most, ==, 2);
    for (guint i = 0; i < G_N_ELEMENTS (copies); i++) {
        vmr_harness_assert_disk_on (cluster.hosts[copies[i].host], disk_ids[copies[i].disk],
                                    copies[i].dest);
        vmr_harness_assert_image_equals (copies[i].dest, "raw",
                                         cluster.expected[copies[i].host][copies[i].disk]);
        g_free (copies[i].id);
        g_free (copies[i].dest);
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
    g_autofree gchar *endpoints = NULL;

    for (guint i = 0; i < N_HOSTS; i++) {
        cluster.hosts[i] = g_new0 (VmrHarness, 1);
        vmr_harness_setup_no_daemon (cluster.hosts[i], NULL);
        if (vmr_harness_skipped (cluster.hosts[i]))
            return;
    }
    if (!vmr_harness_require (cluster.hosts[0], "etcd", "etcdctl", "certtool", NULL))
        return;
    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("storage-%u", d);

        cluster.destinations[d] = vmr_harness_path (cluster.hosts[0], name);
        g_assert_cmpint (g_mkdir (cluster.destinations[d], 0755), ==, 0);
    }
    vmr_nbd_servers_init (&cluster.pki_servers, cluster.hosts[0]);
    cluster.etcd.pki = vmr_nbd_make_pki (&cluster.pki_servers);
    vmr_etcd_cluster_start (&cluster.etcd, cluster.hosts[0]->dir);
    endpoints = vmr_etcd_cluster_endpoints (&cluster.etcd);
    for (guint i = 0; i < N_HOSTS; i++)
        start_host (i, endpoints, cluster.etcd.pki);
}

static void
tear_down (void)
{
    vmr_etcd_cluster_clear (&cluster.etcd);
    for (guint i = N_HOSTS; i-- > 0;) {
        if (cluster.hosts[i] == NULL)
            continue;
        if (i == 0)
            vmr_nbd_servers_clear (&cluster.pki_servers);
        vmr_harness_teardown (cluster.hosts[i], NULL);
        g_free (cluster.hosts[i]);
        for (guint d = 0; d < N_DISKS; d++) {
            g_free (cluster.sources[i][d]);
            g_free (cluster.expected[i][d]);
        }
    }
    for (guint d = 0; d < N_DISKS; d++)
        g_free (cluster.destinations[d]);
}

int
main (int argc, char **argv)
{
    gint status;

    vmr_harness_init (&argc, &argv);
    g_test_add_data_func ("/cluster-storage/tls", test_tls, run_case);
    g_test_add_data_func ("/cluster-storage/limits", test_storage_limits, run_case);
    set_up ();
    status = vmr_harness_run_shared (cluster.hosts[0]);
    tear_down ();
    return status;
}
