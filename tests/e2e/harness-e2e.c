#define G_LOG_DOMAIN "vmr-test"

#ifndef _GNU_SOURCE
/* prctl under -std=c17 */
#define _GNU_SOURCE
#endif

#include "harness-e2e-private.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "harness-private.h"

/* lines of the daemon's log shown when a test fails */
#define LOG_TAIL_LINES 80

/* ---- virsh ---- */

static VmrCliResult *
virshv (const gchar *first_arg, va_list ap)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    VmrCliResult *result = g_new0 (VmrCliResult, 1);
    g_autoptr (GError) error = NULL;
    gint status = 0;

    g_ptr_array_add (argv, "virsh");
    g_ptr_array_add (argv, "-q");
    g_ptr_array_add (argv, "-c");
    g_ptr_array_add (argv, VMR_E2E_URI);
    for (const gchar *arg = first_arg; arg != NULL; arg = va_arg (ap, const gchar *))
        g_ptr_array_add (argv, (gpointer) arg);
    g_ptr_array_add (argv, NULL);
    result->cmdline = g_strjoinv (" ", (gchar **) argv->pdata);
    if (!g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                       &result->out, &result->err, &status, &error))
        vmr_fail ("%s: %s", result->cmdline, error->message);
    result->status = WIFEXITED (status) ? WEXITSTATUS (status) : -WTERMSIG (status);
    return result;
}

VmrCliResult *
vmr_e2e_virsh (const gchar *first_arg, ...)
{
    VmrCliResult *result;
    va_list ap;

    va_start (ap, first_arg);
    result = virshv (first_arg, ap);
    va_end (ap);
    return result;
}

gchar *
vmr_e2e_virsh_ok (const gchar *first_arg, ...)
{
    g_autoptr (VmrCliResult) result = NULL;
    va_list ap;

    va_start (ap, first_arg);
    result = virshv (first_arg, ap);
    va_end (ap);
    if (result->status != 0) {
        g_autofree gchar *err = vmr_harness_one_line (result->err);

        vmr_fail ("%s: exit status %d: %s", result->cmdline, result->status, err);
    }
    return g_steal_pointer (&result->out);
}

gchar *
vmr_e2e_domblk_source (const gchar *domain, const gchar *target, gboolean inactive)
{
    g_autofree gchar *out = inactive ? vmr_e2e_virsh_ok ("domblklist", domain, "--inactive", NULL)
                                     : vmr_e2e_virsh_ok ("domblklist", domain, NULL);
    g_auto (GStrv) lines = g_strsplit (out, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto (GStrv) fields = g_strsplit_set (g_strstrip (lines[i]), " \t", -1);
        g_autoptr (GPtrArray) words = g_ptr_array_new ();

        for (guint j = 0; fields[j] != NULL; j++) {
            if (*fields[j] != '\0')
                g_ptr_array_add (words, fields[j]);
        }
        if (words->len == 2 && g_strcmp0 (g_ptr_array_index (words, 0), target) == 0)
            return g_strdup (g_ptr_array_index (words, 1));
    }
    vmr_fail ("virsh domblklist %s%s lists no %s: %s", domain, inactive ? " --inactive" : "",
              target, g_strescape (out, NULL));
}

/* ---- domains ---- */

/* a human monitor command line through libvirt, for the domain @user_data */
static gchar *
hmp_through_libvirt (const gchar *command_line, gpointer user_data)
{
    return vmr_e2e_virsh_ok ("qemu-monitor-command", (const gchar *) user_data, "--hmp",
                             command_line, NULL);
}

VmrHarnessWriter *
vmr_e2e_writer_new (const gchar *domain, const gchar *expected, guint64 seed)
{
    /* the domain's name lives as long as the test: its fixture owns it */
    return vmr_harness_writer_new_hmp (VMR_E2E_SCSI_DEVICE, expected, seed, hmp_through_libvirt,
                                       (gpointer) domain);
}

gchar *
vmr_e2e_define_domain (VmrE2e *e, const VmrE2eDisk *disk)
{
    g_autofree gchar *name
        = g_strdup_printf ("vmr-e2e-%d-%u", (int) getpid (), vmr_e2e_next_domain_number ());
    g_autofree gchar *xml_path = NULL;
    g_autofree gchar *xml = NULL;
    g_autofree gchar *out = NULL;
    g_autoptr (GError) error = NULL;

    g_autofree gchar *q_name = g_markup_escape_text (name, -1);
    g_autofree gchar *q_format = g_markup_escape_text (disk->format, -1);
    g_autofree gchar *q_path = g_markup_escape_text (disk->path, -1);

    const gchar *iothreads[]
        = { "", "  <iothreads>1</iothreads>\n", "  <iothreads>2</iothreads>\n" };
    const gchar *driver_end[] = {
        "/>",
        " iothread='1'/>",
        " queues='2'>\n"
        "        <iothreads>\n"
        "          <iothread id='1'><queue id='0'/></iothread>\n"
        "          <iothread id='2'><queue id='1'/></iothread>\n"
        "        </iothreads>\n"
        "      </driver>",
    };

    /* per-queue threads stay on virtio-blk; the others on a virtio-scsi controller there */
    gboolean scsi = disk->iothreads < 2;
    const gchar *controllers[] = {
        "    <controller type='scsi' index='0' model='virtio-scsi'/>\n",
        "    <controller type='scsi' index='0' model='virtio-scsi'>\n"
        "      <driver iothread='1'/>\n"
        "    </controller>\n",
    };

    g_assert_cmpuint (disk->iothreads, <, G_N_ELEMENTS (iothreads));
    /* no bootable disk: the guest sits in the firmware, which costs little under TCG */
    xml = g_strdup_printf (
        "<domain type='qemu'>\n"
        "  <name>%s</name>\n"
        "  <memory unit='MiB'>64</memory>\n"
        "  <vcpu>1</vcpu>\n"
        "%s"
        "  <os><type arch='x86_64' machine='q35'>hvm</type></os>\n"
        "  <devices>\n"
        "%s"
        "    <disk type='file' device='disk'>\n"
        "      <driver name='qemu' type='%s' %s%s\n"
        "      <source file='%s'/>\n"
        "      <target dev='vda' bus='%s'/>\n"
        "    </disk>\n"
        "    <memballoon model='none'/>\n"
        "  </devices>\n"
        "</domain>\n",
        q_name, iothreads[disk->iothreads], scsi ? controllers[disk->iothreads] : "", q_format,
        disk->driver != NULL ? disk->driver : "",
        scsi ? driver_end[0] : driver_end[disk->iothreads], q_path, scsi ? "scsi" : "virtio");
    xml_path = g_strdup_printf ("%s/%s.xml", e->h.dir, name);
    g_file_set_contents (xml_path, xml, -1, &error);
    g_assert_no_error (error);
    out = vmr_e2e_virsh_ok ("define", xml_path, NULL);
    g_ptr_array_add (e->domains, g_strdup (name));
    return g_steal_pointer (&name);
}

gint64
vmr_e2e_start_domain (VmrE2e *e, const gchar *name)
{
    gint64 start = g_get_monotonic_time ();
    g_autofree gchar *out = vmr_e2e_virsh_ok ("start", name, NULL);

    return g_get_monotonic_time () - start;
}

void
vmr_e2e_destroy_domain (VmrE2e *e, const gchar *name)
{
    g_autofree gchar *out = vmr_e2e_virsh_ok ("destroy", name, NULL);
}

JsonObject *
vmr_e2e_wait_domain (VmrE2e *e, const gchar *name, gboolean present, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * G_TIME_SPAN_MILLISECOND;

    g_assert_nonnull (e->h.control);
    while (TRUE) {
        g_autoptr (GError) error = NULL;
        g_autoptr (JsonNode) reply
            = vmr_qmp_client_execute_sync (e->h.control, "query-domains", NULL, 10000, &error);
        JsonArray *domains;
        JsonObject *found = NULL;

        if (reply == NULL)
            vmr_fail ("query-domains: %s", error->message);
        domains = vmr_harness_json_node_array (reply);
        for (guint i = 0; domains != NULL && i < json_array_get_length (domains); i++) {
            JsonObject *domain = vmr_harness_json_element (domains, i);

            if (g_strcmp0 (vmr_harness_json_string (domain, "name"), name) == 0)
                found = domain;
        }
        if (present && found != NULL)
            return json_object_ref (found);
        if (!present && found == NULL)
            return NULL;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("domain %s is %s the daemon's list after %u ms", name,
                      present ? "still not in" : "still in", timeout_ms);
        g_usleep (20 * 1000);
    }
}

/* ---- the daemon ---- */

static void
child_setup_cb (gpointer user_data)
{
    prctl (PR_SET_PDEATHSIG, SIGKILL);
}

void
vmr_e2e_start_daemon (VmrE2e *e, gboolean libvirt)
{
    VmrHarness *h = &e->h;
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
    g_autoptr (GError) error = NULL;
    gint64 deadline = g_get_monotonic_time () + VMR_E2E_START_TIMEOUT_US;
    g_autofree gchar *policy = vmr_harness_path (h, "policy.conf");
    const gchar *extra[] = { "--policy", policy, NULL };
    /* a policy the test wrote with vmr_harness_write_policy(), else the built-in one */
    g_autoptr (GPtrArray) argv
        = vmr_harness_daemon_argv (h, libvirt ? VMR_E2E_URI : NULL, TRUE,
                                   g_file_test (policy, G_FILE_TEST_EXISTS) ? extra : NULL);
    int fd;

    g_assert_null (h->daemon);
    if (!g_file_test (h->state_dir, G_FILE_TEST_IS_DIR))
        g_assert_cmpint (g_mkdir (h->state_dir, 0700), ==, 0);
    /* one file for both streams; the test reads it and shows it on failure */
    fd = g_open (e->daemon_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    g_assert_cmpint (fd, >=, 0);
    g_subprocess_launcher_take_stdout_fd (launcher, dup (fd));
    g_subprocess_launcher_take_stderr_fd (launcher, fd);
    g_subprocess_launcher_set_cwd (launcher, h->dir);
    g_subprocess_launcher_set_child_setup (launcher, child_setup_cb, NULL, NULL);
    g_test_message ("running: %s --libvirt-uri/--no-libvirt (log in %s)",
                    (const gchar *) argv->pdata[0], e->daemon_log);
    h->daemon = g_subprocess_launcher_spawnv (launcher, (const gchar *const *) argv->pdata, &error);
    g_assert_no_error (error);
    h->daemon_pid = (GPid) g_ascii_strtoll (g_subprocess_get_identifier (h->daemon), NULL, 10);
    vmr_e2e_track_daemon (h->daemon_pid);
    while (h->control == NULL) {
        g_autoptr (GError) connect_error = NULL;
        g_autofree gchar *id = g_strdup (g_subprocess_get_identifier (h->daemon));

        if (id == NULL) {
            g_subprocess_wait (h->daemon, NULL, NULL);
            vmr_e2e_track_daemon (0);
            g_clear_object (&h->daemon);
            vmr_fail ("virt-mirrord exited at start; see %s", e->daemon_log);
        }
        if (g_file_test (h->socket, G_FILE_TEST_EXISTS))
            h->control = vmr_qmp_client_connect_sync (h->socket, 5000, &connect_error);
        if (h->control == NULL) {
            g_assert_cmpint (g_get_monotonic_time (), <, deadline);
            g_usleep (20 * 1000);
        }
    }
}

void
vmr_e2e_kill_daemon (VmrE2e *e)
{
    vmr_harness_kill_daemon (&e->h);
    vmr_e2e_track_daemon (0);
}

gboolean
vmr_e2e_daemon_log_has (VmrE2e *e, const gchar *needle)
{
    g_autofree gchar *text = NULL;

    if (!g_file_get_contents (e->daemon_log, &text, NULL, NULL))
        return FALSE;
    return strstr (text, needle) != NULL;
}

static void
show_daemon_log (VmrE2e *e)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) lines = NULL;
    guint n;

    if (!g_file_get_contents (e->daemon_log, &text, NULL, NULL))
        return;
    lines = g_strsplit (text, "\n", -1);
    n = g_strv_length (lines);
    g_test_message ("the daemon's log, last %d lines:", LOG_TAIL_LINES);
    for (guint i = n > LOG_TAIL_LINES ? n - LOG_TAIL_LINES : 0; i < n; i++)
        g_test_message ("  %s", lines[i]);
}

/* ---- fixture ---- */

void
vmr_e2e_setup (VmrE2e *e, gconstpointer user_data)
{
    const gchar *problem = vmr_e2e_libvirt_problem ();

    e->domains = g_ptr_array_new_with_free_func (g_free);
    vmr_harness_setup_no_daemon (&e->h, user_data);
    e->daemon_log = vmr_harness_path (&e->h, "daemon.log");
    if (vmr_harness_skipped (&e->h))
        return;
    /* libvirt runs QEMU as its own user, which must reach the images */
    g_assert_cmpint (g_chmod (e->h.dir, 0755), ==, 0);
    if (problem != NULL) {
        vmr_harness_skip (&e->h, problem);
        return;
    }
    if (vmr_e2e_libvirt_wanted ())
        vmr_e2e_point_hook (e->h.socket);
}

void
vmr_e2e_teardown (VmrE2e *e, gconstpointer user_data)
{
    for (guint i = 0; i < e->domains->len; i++) {
        const gchar *name = g_ptr_array_index (e->domains, i);
        g_autoptr (VmrCliResult) destroy = vmr_e2e_virsh ("destroy", name, NULL);
        g_autoptr (VmrCliResult) undefine = vmr_e2e_virsh ("undefine", name, NULL);

        if (undefine->status != 0)
            g_test_message ("cannot undefine %s: %s", name, undefine->err);
    }
    if (g_test_failed ())
        show_daemon_log (e);
    vmr_e2e_track_daemon (0);
    vmr_harness_teardown (&e->h, user_data);
    g_clear_pointer (&e->domains, g_ptr_array_unref);
    g_clear_pointer (&e->daemon_log, g_free);
}

gint64
vmr_e2e_hook_spawn_cost (void)
{
    static gint64 cost = -1;
    gint64 runs[3];

    if (cost >= 0)
        return cost;
    for (guint i = 0; i < G_N_ELEMENTS (runs); i++) {
        const gchar *argv[] = { g_getenv ("VMR_HOOK"), NULL };
        g_autoptr (GError) error = NULL;
        gint64 start = g_get_monotonic_time ();
        gint status = 0;

        g_assert_nonnull (argv[0]);
        /* no arguments: the hook prints its usage and exits 0 at once */
        g_spawn_sync (NULL, (gchar **) argv, NULL,
                      G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL
                          | G_SPAWN_STDIN_FROM_DEV_NULL,
                      NULL, NULL, NULL, NULL, &status, &error);
        g_assert_no_error (error);
        g_assert_true (g_spawn_check_wait_status (status, NULL));
        runs[i] = g_get_monotonic_time () - start;
    }
    /* the median of three */
    cost = MAX (MIN (runs[0], runs[1]), MIN (MAX (runs[0], runs[1]), runs[2]));
    g_test_message ("starting and reaping the hook costs %.3f s here",
                    (gdouble) cost / G_USEC_PER_SEC);
    return cost;
}
