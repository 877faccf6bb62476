#define G_LOG_DOMAIN "vmr-test"

#include "etcd-fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "nbd-fixture.h"

#define HEALTH_TIMEOUT_S 30

static void
die_with_parent (gpointer user_data)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* member @i's client URL */
static gchar *
client_url (VmrEtcdCluster *c, guint i)
{
    return g_strdup_printf ("%s://127.0.0.1:%u", c->pki != NULL ? "https" : "http",
                            c->client_ports[i]);
}

/* @c's file @name of the PKI's directory @who */
static gchar *
pki_file (VmrEtcdCluster *c, const gchar *who, const gchar *name)
{
    return g_build_filename (c->pki, who, name, NULL);
}

static gchar *
peer_url (VmrEtcdCluster *c, guint i)
{
    return g_strdup_printf ("http://127.0.0.1:%u", c->peer_ports[i]);
}

void
vmr_etcd_cluster_start_member (VmrEtcdCluster *c, guint i)
{
    g_autofree gchar *name = g_strdup_printf ("m%u", i);
    g_autofree gchar *data = g_strdup_printf ("%s/etcd-%s", c->dir, name);
    g_autofree gchar *client = client_url (c, i);
    g_autofree gchar *peer = peer_url (c, i);
    g_autofree gchar *log = g_strdup_printf ("%s/etcd-%s.log", c->dir, name);
    g_autoptr (GString) initial = g_string_new (NULL);
    g_autoptr (GError) error = NULL;
    gint log_fd;

    for (guint m = 0; m < VMR_ETCD_MEMBERS; m++) {
        g_autofree gchar *url = peer_url (c, m);

        g_string_append_printf (initial, "%sm%u=%s", m > 0 ? "," : "", m, url);
    }
    {
        const gchar *argv[]
            = { "etcd", "--name", name, "--data-dir", data, "--listen-client-urls", client,
                "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", initial->str,
                "--initial-cluster-state", "new", "--initial-cluster-token", "virt-mirror-test",
                /* loopback: elections in a fraction of a second */
                "--heartbeat-interval", "50", "--election-timeout", "500", NULL, NULL, NULL, NULL,
                NULL, NULL, NULL, NULL };
        g_autofree gchar *cert = NULL;
        g_autofree gchar *key = NULL;
        g_autofree gchar *ca = NULL;

        if (c->pki != NULL) {
            guint n = g_strv_length ((gchar **) argv);

            cert = pki_file (c, "server", "server-cert.pem");
            key = pki_file (c, "server", "server-key.pem");
            ca = pki_file (c, "server", "ca-cert.pem");
            argv[n++] = "--cert-file";
            argv[n++] = cert;
            argv[n++] = "--key-file";
            argv[n++] = key;
            argv[n++] = "--trusted-ca-file";
            argv[n++] = ca;
            argv[n++] = "--client-cert-auth";
        }

        log_fd = open (log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        g_assert_cmpint (log_fd, >=, 0);
        if (!g_spawn_async_with_fds (
                c->dir, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                die_with_parent, NULL, &c->pids[i], -1, log_fd, log_fd, &error))
            vmr_fail ("cannot start etcd: %s", error->message);
        close (log_fd);
    }
    g_test_message ("etcd member %s: pid %d, client %s", name, (int) c->pids[i], client);
}

void
vmr_etcd_cluster_wait_healthy (VmrEtcdCluster *c)
{
    gint64 deadline = g_get_monotonic_time () + HEALTH_TIMEOUT_S * G_USEC_PER_SEC;

    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++) {
        g_autofree gchar *client = client_url (c, i);
        g_autofree gchar *cacert = c->pki != NULL ? pki_file (c, "client", "ca-cert.pem") : NULL;
        g_autofree gchar *cert = c->pki != NULL ? pki_file (c, "client", "client-cert.pem") : NULL;
        g_autofree gchar *key = c->pki != NULL ? pki_file (c, "client", "client-key.pem") : NULL;
        g_autofree gchar *cacert_opt = g_strdup_printf ("--cacert=%s", cacert);
        g_autofree gchar *cert_opt = g_strdup_printf ("--cert=%s", cert);
        g_autofree gchar *key_opt = g_strdup_printf ("--key=%s", key);
        const gchar *argv[]
            = { "etcdctl", "--endpoints", client,   "--command-timeout",
                "1s",      "endpoint",    "health", c->pki != NULL ? cacert_opt : NULL,
                cert_opt,  key_opt,       NULL };
        const gchar *env[] = { "ETCDCTL_API=3", NULL };

        if (c->pids[i] == 0)
            continue;
        for (;;) {
            gint status = -1;

            if (g_spawn_sync (c->dir, (gchar **) argv, (gchar **) env,
                              G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL
                                  | G_SPAWN_STDERR_TO_DEV_NULL,
                              NULL, NULL, NULL, NULL, &status, NULL)
                && g_spawn_check_wait_status (status, NULL))
                break;
            if (g_get_monotonic_time () > deadline)
                vmr_fail ("etcd member m%u is not healthy after %d s (see %s/etcd-m%u.log)", i,
                          HEALTH_TIMEOUT_S, c->dir, i);
            g_usleep (100 * 1000);
        }
    }
}

void
vmr_etcd_cluster_start (VmrEtcdCluster *c, const gchar *dir)
{
    c->dir = g_strdup (dir);
    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++) {
        c->client_ports[i] = vmr_nbd_free_port ();
        c->peer_ports[i] = vmr_nbd_free_port ();
    }
    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++)
        vmr_etcd_cluster_start_member (c, i);
    vmr_etcd_cluster_wait_healthy (c);
}

gchar *
vmr_etcd_cluster_endpoints (VmrEtcdCluster *c)
{
    g_autoptr (GString) urls = g_string_new (NULL);

    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++) {
        g_autofree gchar *url = client_url (c, i);

        g_string_append_printf (urls, "%s%s", i > 0 ? "," : "", url);
    }
    return g_string_free (g_steal_pointer (&urls), FALSE);
}

static void
end_member (VmrEtcdCluster *c, guint i, gint signum)
{
    if (c->pids[i] == 0)
        return;
    kill (c->pids[i], signum);
    g_assert_cmpint (waitpid (c->pids[i], NULL, 0), ==, c->pids[i]);
    c->pids[i] = 0;
}

void
vmr_etcd_cluster_stop_member (VmrEtcdCluster *c, guint i)
{
    g_test_message ("stopping etcd member m%u", i);
    end_member (c, i, SIGTERM);
}

/* the running members' client URLs, separated by commas */
static gchar *
running_endpoints (VmrEtcdCluster *c)
{
    g_autoptr (GString) endpoints = g_string_new (NULL);

    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++) {
        g_autofree gchar *url = c->pids[i] != 0 ? client_url (c, i) : NULL;

        if (url != NULL)
            g_string_append_printf (endpoints, "%s%s", endpoints->len > 0 ? "," : "", url);
    }
    return g_string_free (g_steal_pointer (&endpoints), FALSE);
}

void
vmr_etcd_cluster_txn (VmrEtcdCluster *c, const gchar *ops)
{
    g_autoptr (GSubprocessLauncher) launcher
        = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                     | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autofree gchar *endpoints = running_endpoints (c);
    g_autofree gchar *input = g_strdup_printf ("\n%s\n\n", ops);
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;

    g_assert_null (c->pki);
    g_subprocess_launcher_setenv (launcher, "ETCDCTL_API", "3", TRUE);
    proc = g_subprocess_launcher_spawn (launcher, &error, "etcdctl", "--endpoints", endpoints,
                                        "txn", NULL);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_communicate_utf8 (proc, input, NULL, &out, &err, &error));
    g_assert_no_error (error);
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0
        || !g_str_has_prefix (out, "SUCCESS"))
        vmr_fail ("etcdctl txn: %s%s", out, err);
}

gchar *
vmr_etcd_cluster_ctl (VmrEtcdCluster *c, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    g_autofree gchar *endpoints = running_endpoints (c);
    g_autoptr (GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    const gchar *env[] = { "ETCDCTL_API=3", NULL };
    gint status = -1;
    va_list ap;

    g_assert_null (c->pki);
    g_ptr_array_add (argv, g_strdup ("etcdctl"));
    g_ptr_array_add (argv, g_strdup ("--endpoints"));
    g_ptr_array_add (argv, g_strdup (endpoints));
    va_start (ap, first_arg);
    for (const gchar *arg = first_arg; arg != NULL; arg = va_arg (ap, const gchar *))
        g_ptr_array_add (argv, g_strdup (arg));
    va_end (ap);
    g_ptr_array_add (argv, NULL);
    if (!g_spawn_sync (c->dir, (gchar **) argv->pdata, (gchar **) env, G_SPAWN_SEARCH_PATH, NULL,
                       NULL, &out, &err, &status, &error))
        vmr_fail ("cannot run etcdctl: %s", error->message);
    if (!g_spawn_check_wait_status (status, NULL))
        vmr_fail ("etcdctl %s: %s", first_arg, err);
    return g_steal_pointer (&out);
}

void
vmr_etcd_cluster_clear (VmrEtcdCluster *c)
{
    for (guint i = 0; i < VMR_ETCD_MEMBERS; i++)
        end_member (c, i, SIGKILL);
    g_clear_pointer (&c->dir, g_free);
}

guint
vmr_etcd_cluster_leader (VmrEtcdCluster *c)
{
    g_autofree gchar *out = vmr_etcd_cluster_ctl (c, "endpoint", "status", "-w", "simple", NULL);
    g_auto (GStrv) lines = g_strsplit (out, "\n", -1);

    /* ENDPOINT, ID, VERSION, DB SIZE, IS LEADER, ... */
    for (guint l = 0; lines[l] != NULL; l++) {
        g_auto (GStrv) fields = g_strsplit (lines[l], ", ", -1);

        if (g_strv_length (fields) < 5 || !g_str_equal (fields[4], "true"))
            continue;
        for (guint m = 0; m < VMR_ETCD_MEMBERS; m++) {
            g_autofree gchar *url = g_strdup_printf ("http://127.0.0.1:%u", c->client_ports[m]);

            if (g_str_equal (fields[0], url))
                return m;
        }
    }
    vmr_fail ("no leader in etcdctl's endpoint status:\n%s", out);
}
