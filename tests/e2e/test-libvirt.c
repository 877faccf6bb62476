#define G_LOG_DOMAIN "vmr-test"

/*
 * virt-mirror with a real libvirtd: domains found at start and through the
 * hook, migrations through libvirt's block copy that leave libvirt's live
 * and persistent definitions on the destination, a domain destroyed in the
 * middle of a copy, a daemon that is down while domains start, commands on
 * a libvirt job, a libvirtd restart in the middle of a copy, a daemon
 * killed in the middle of a copy whose successor picks it up, and the
 * evacuation of a directory that holds the disks of two libvirt domains.
 */

#include <string.h>
#include <unistd.h>

#include "harness-e2e.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
/*
 * guest writes in each phase, each one a virsh run (a few tenths of a second):
 * five random extents, all checked byte for byte at the end
 */
#define E2E_WRITES 5
/* the hook's promise: libvirtd hears of the daemon within this */
#define HOOK_BUDGET_US G_USEC_PER_SEC

typedef struct {
    const gchar *source_format;
    const gchar *dest_format;
    guint iothreads;          /* as VmrE2eDisk */
    const gchar *iothread_id; /* what the daemon reports for the disk */
    gboolean wait;            /* `migrate --wait` rather than polling the job */
    gboolean reuse;           /* the destination exists beforehand */
} MigrateCase;

static const MigrateCase raw_to_raw = { "raw", "raw", 0, NULL, TRUE, FALSE };
static const MigrateCase qcow2_to_raw = { "qcow2", "raw", 0, NULL, FALSE, FALSE };
static const MigrateCase raw_to_qcow2 = { "raw", "qcow2", 0, NULL, FALSE, FALSE };
static const MigrateCase on_iothread = { "raw", "raw", 1, "iothread1", FALSE, FALSE };
static const MigrateCase on_queue_iothreads = { "raw", "raw", 2, "iothread1", FALSE, FALSE };
static const MigrateCase reuse = { "raw", "raw", 0, NULL, TRUE, TRUE };

/* a running domain with vda on a fresh image of @format; returns the domain's name */
static gchar *
start_domain_on (VmrE2e *e, const gchar *format, guint iothreads, gchar **out_source)
{
    g_autofree gchar *image_name = g_strdup_printf ("source.%s", format);
    g_autofree gchar *source = vmr_harness_create_image (&e->h, image_name, format, IMAGE_SIZE, 7);
    VmrE2eDisk disk = { source, format, iothreads };
    g_autofree gchar *name = vmr_e2e_define_domain (e, &disk);

    vmr_e2e_start_domain (e, name);
    *out_source = g_steal_pointer (&source);
    return g_steal_pointer (&name);
}

/*
 * Starts a domain on a raw disk and the daemon, waits until the daemon has
 * the domain, then migrates its vda to dest.raw at VMR_HARNESS_SLOW_SPEED
 * (with --manual-pivot when @manual_pivot) and waits until the job copies.
 * Returns the job's id; sets the domain's name, its source image, the
 * image's pristine copy and the destination (all to free with g_free()).
 */
static gchar *
start_slow_copy (VmrE2e *e, gboolean manual_pivot, gchar **out_name, gchar **out_source,
                 gchar **out_expected, gchar **out_dest)
{
    g_autoptr (JsonObject) domain = NULL;
    g_autofree gchar *job_id = NULL;

    *out_name = start_domain_on (e, "raw", 0, out_source);
    *out_expected = vmr_harness_expected_path (*out_source);
    *out_dest = vmr_harness_path (&e->h, "dest.raw");
    vmr_e2e_start_daemon (e, TRUE);
    domain = vmr_e2e_wait_domain (e, *out_name, TRUE, 10000);
    job_id = vmr_harness_migrate (&e->h, *out_name, "vda", *out_dest, "--speed",
                                  VMR_HARNESS_SLOW_SPEED, manual_pivot ? "--manual-pivot" : NULL,
                                  NULL);
    json_object_unref (vmr_harness_wait_job (&e->h, job_id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    return g_steal_pointer (&job_id);
}

/* libvirt's live and persistent definitions both name @dest for vda */
static void
assert_libvirt_on (const gchar *domain, const gchar *source, const gchar *dest)
{
    g_autofree gchar *live = vmr_e2e_domblk_source (domain, "vda", FALSE);
    g_autofree gchar *persistent = vmr_e2e_domblk_source (domain, "vda", TRUE);
    g_autofree gchar *inactive_xml = vmr_e2e_virsh_ok ("dumpxml", "--inactive", domain, NULL);
    g_autofree gchar *dest_source = g_strdup_printf ("<source file='%s'", dest);
    g_autofree gchar *old_source = g_strdup_printf ("<source file='%s'", source);

    g_assert_cmpstr (live, ==, dest);
    g_assert_cmpstr (persistent, ==, dest);
    if (strstr (inactive_xml, dest_source) == NULL || strstr (inactive_xml, old_source) != NULL)
        vmr_fail ("virsh dumpxml --inactive %s does not name %s alone: %s", domain, dest,
                  g_strescape (inactive_xml, NULL));
}

static gboolean
daemon_connected (gpointer user_data)
{
    return vmr_e2e_daemon_log_has (user_data, "connected to libvirt at");
}

static void
wait_for (gboolean (*check) (gpointer), gpointer data, const gchar *what)
{
    gint64 deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;

    while (!check (data)) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("still waiting for %s after 30 s", what);
        g_usleep (20 * 1000);
    }
}

/* TRUE when libvirtd ran the hook for @domain with @op, and it exited 0 */
static gboolean
hook_ran (const gchar *domain, const gchar *op)
{
    g_autoptr (GPtrArray) runs = vmr_e2e_hook_runs (domain);

    for (guint i = 0; i < runs->len; i++) {
        VmrE2eHookRun *run = g_ptr_array_index (runs, i);

        if (g_strcmp0 (run->op, op) == 0 && run->status == 0)
            return TRUE;
    }
    return FALSE;
}

/* ---- finding domains ---- */

static void
test_found_at_start (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autoptr (JsonObject) domain = NULL;
    JsonArray *disks;
    JsonObject *disk;

    if (vmr_harness_skipped (&e->h))
        return;
    name = start_domain_on (e, "raw", 0, &source);
    vmr_e2e_start_daemon (e, TRUE);
    domain = vmr_e2e_wait_domain (e, name, TRUE, 10000);
    g_assert_cmpstr (vmr_harness_json_string (domain, "backend"), ==, "libvirt");
    g_assert_cmpstr (vmr_harness_json_string (domain, "uri"), ==, VMR_E2E_URI);
    g_assert_true (vmr_harness_json_bool (domain, "connected"));
    disks = vmr_harness_json_array (domain, "disks");
    g_assert_cmpuint (json_array_get_length (disks), ==, 1);
    disk = vmr_harness_json_element (disks, 0);
    g_assert_cmpstr (vmr_harness_json_string (disk, "id"), ==, "vda");
    g_assert_cmpstr (vmr_harness_json_string (disk, "path"), ==, source);
    g_assert_cmpstr (vmr_harness_json_string (disk, "format"), ==, "raw");
    g_assert_cmpint (vmr_harness_json_int (disk, "size"), ==, IMAGE_SIZE);
    g_assert_true (vmr_harness_json_is_null (disk, "iothread"));
}

/* how long a `domains` round trip takes now, in µs (the daemon asks libvirt) */
static gint64
domains_round_trip (VmrE2e *e)
{
    gint64 start = g_get_monotonic_time ();
    g_autoptr (JsonNode) domains = vmr_harness_cli_json (&e->h, "domains", NULL);
    gint64 took = g_get_monotonic_time () - start;

    g_test_message ("a `domains` round trip takes %.3f s here", (gdouble) took / G_USEC_PER_SEC);
    return took;
}

static void
test_hook_started (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autoptr (JsonObject) domain = NULL;
    g_autoptr (GPtrArray) runs = NULL;
    VmrE2eHookRun *started = NULL;
    gint64 known_at;
    VmrE2eDisk disk = { NULL, "raw", 0 };

    if (vmr_harness_skipped (&e->h))
        return;
    vmr_e2e_start_daemon (e, TRUE);
    wait_for (daemon_connected, e, "the daemon to connect to libvirt");
    source = vmr_harness_create_image (&e->h, "source.raw", "raw", IMAGE_SIZE, 3);
    disk.path = source;
    name = vmr_e2e_define_domain (e, &disk);
    vmr_e2e_start_domain (e, name);
    domain = vmr_e2e_wait_domain (e, name, TRUE, 5000);
    known_at = g_get_real_time ();

    runs = vmr_e2e_hook_runs (name);
    for (guint i = 0; i < runs->len; i++) {
        VmrE2eHookRun *run = g_ptr_array_index (runs, i);

        g_assert_cmpint (run->status, ==, 0);
        if (g_strcmp0 (run->op, "started") == 0)
            started = run;
    }
    if (started == NULL)
        vmr_fail ("libvirtd ran no 'started' hook for %s (%u runs)", name, runs->len);
    g_test_message ("known %.3f s after the 'started' hook ran",
                    (gdouble) (known_at - started->start_us) / G_USEC_PER_SEC);
    /*
     * beyond the hook's budget: its start, and the daemon's look at the new
     * domain through libvirt, measured now as a `domains` round trip
     */
    g_assert_cmpint (known_at - started->start_us, <=,
                     HOOK_BUDGET_US + vmr_e2e_hook_spawn_cost () + 5 * domains_round_trip (e));
    g_assert_true (vmr_e2e_daemon_log_has (e, "hook: "));
}

/* `domains` shows libvirt's domains and attached QEMUs side by side */
static void
test_domains_both_kinds (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *qemu_image = NULL;
    g_autofree gchar *libvirt_line = NULL;
    g_autoptr (JsonObject) domain = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    VmrHarnessDisk qemu_disk = { "disk0", NULL, "raw", NULL };

    if (vmr_harness_skipped (&e->h))
        return;
    name = start_domain_on (e, "raw", 0, &source);
    qemu_image = vmr_harness_create_image (&e->h, "qemu.raw", "raw", IMAGE_SIZE, 5);
    qemu_disk.path = qemu_image;
    vmr_harness_start_qemu (&e->h, &qemu_disk, 1);
    vmr_e2e_start_daemon (e, TRUE);
    domain = vmr_e2e_wait_domain (e, name, TRUE, 10000);
    vmr_harness_attach (&e->h, "standalone");
    result = vmr_harness_cli (&e->h, "domains", NULL);
    vmr_cli_result_assert_ok (result);
    libvirt_line = g_strdup_printf ("%s  (libvirt %s, connected)", name, VMR_E2E_URI);
    g_assert_nonnull (strstr (result->out, libvirt_line));
    g_assert_nonnull (strstr (result->out, "standalone  (qmp "));
    g_assert_nonnull (strstr (result->out, source));
    g_assert_nonnull (strstr (result->out, qemu_image));
}

/* ---- migrations ---- */

static void
test_migrate (VmrE2e *e, gconstpointer data)
{
    const MigrateCase *c = data;
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *dest_name = NULL;
    g_autoptr (JsonObject) domain = NULL;
    JsonObject *disk;

    if (vmr_harness_skipped (&e->h))
        return;
    name = start_domain_on (e, c->source_format, c->iothreads, &source);
    expected = vmr_harness_expected_path (source);
    dest_name = g_strdup_printf ("dest.%s", c->dest_format);
    if (c->reuse)
        dest = vmr_harness_create_file (&e->h, dest_name, IMAGE_SIZE, 0);
    else
        dest = vmr_harness_path (&e->h, dest_name);
    vmr_e2e_start_daemon (e, TRUE);
    domain = vmr_e2e_wait_domain (e, name, TRUE, 10000);
    disk = vmr_harness_json_element (vmr_harness_json_array (domain, "disks"), 0);
    g_assert_cmpstr (vmr_harness_json_string (disk, "format"), ==, c->source_format);
    if (c->iothread_id != NULL)
        g_assert_cmpstr (vmr_harness_json_string (disk, "iothread"), ==, c->iothread_id);
    else
        g_assert_true (vmr_harness_json_is_null (disk, "iothread"));
    /* every thread of the disk, iothread1 first, as for a QEMU attached by hand */
    {
        JsonArray *threads = vmr_harness_json_array (disk, "iothreads");

        g_assert_cmpuint (json_array_get_length (threads), ==, c->iothreads);
        for (guint t = 0; t < c->iothreads; t++) {
            g_autofree gchar *id = g_strdup_printf ("iothread%u", t + 1);

            g_assert_cmpstr (vmr_json_array_string (threads, t), ==, id);
        }
    }

    if (c->wait) {
        g_autoptr (VmrCliResult) result = vmr_harness_cli (
            &e->h, "migrate", name, "vda", dest, "--wait", c->reuse ? "--reuse" : NULL, NULL);

        vmr_cli_result_assert_ok (result);
        g_assert_nonnull (strstr (result->out, "completed"));
        vmr_harness_assert_job_record (&e->h, "vmr-1", "completed");
    } else {
        g_autofree gchar *job_id
            = vmr_harness_migrate (&e->h, name, "vda", dest, "--format", c->dest_format, NULL);
        g_autoptr (JsonObject) job
            = vmr_harness_wait_job (&e->h, job_id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    }
    assert_libvirt_on (name, source, dest);
    if (c->iothread_id != NULL) {
        /* the disk keeps its I/O threads on the destination */
        g_autoptr (JsonObject) after = vmr_e2e_wait_domain (e, name, TRUE, 1000);
        JsonObject *after_disk
            = vmr_harness_json_element (vmr_harness_json_array (after, "disks"), 0);

        g_assert_cmpstr (vmr_harness_json_string (after_disk, "path"), ==, dest);
        g_assert_cmpstr (vmr_harness_json_string (after_disk, "iothread"), ==, c->iothread_id);
    }
    /* the guest's writes after the pivot go to the destination */
    if (c->iothreads < 2) {
        g_autoptr (VmrHarnessWriter) writer = vmr_e2e_writer_new (name, expected, 0xa11);

        vmr_harness_writer_write (writer, E2E_WRITES);
    }
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (dest, c->dest_format, expected);
}

/*
 * Two libvirt domains with their disks under one directory (one raw, one
 * qcow2 in a sub-directory) evacuated by one command: libvirt's live and
 * persistent definitions name the new paths and the bytes are the sources'.
 */
static void
test_evacuate (VmrE2e *e, gconstpointer data)
{
    const gchar *formats[] = { "raw", "qcow2" };
    const gchar *images[] = { "from/a.raw", "from/db/b.qcow2" };
    const gchar *moved[] = { "to/a.raw", "to/db/b.qcow2" };
    g_autofree gchar *from = NULL;
    g_autofree gchar *to = NULL;
    g_autofree gchar *subdir = NULL;
    g_autofree gchar *glob = g_strdup_printf ("vmr-e2e-%d-*", (int) getpid ());
    gchar *sources[2] = { NULL };
    gchar *expected[2] = { NULL };
    gchar *dests[2] = { NULL };
    gchar *names[2] = { NULL };
    g_autoptr (VmrCliResult) result = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    from = vmr_harness_path (&e->h, "from");
    to = vmr_harness_path (&e->h, "to");
    subdir = vmr_harness_path (&e->h, "from/db");
    g_assert_cmpint (g_mkdir_with_parents (subdir, 0755), ==, 0);
    g_assert_cmpint (g_mkdir_with_parents (to, 0755), ==, 0);
    for (guint i = 0; i < 2; i++) {
        VmrE2eDisk disk = { NULL, formats[i], 0 };

        sources[i] = vmr_harness_create_image (&e->h, images[i], formats[i], IMAGE_SIZE, 21 + i);
        expected[i] = vmr_harness_expected_path (sources[i]);
        dests[i] = vmr_harness_path (&e->h, moved[i]);
        disk.path = sources[i];
        names[i] = vmr_e2e_define_domain (e, &disk);
        vmr_e2e_start_domain (e, names[i]);
    }
    vmr_e2e_start_daemon (e, TRUE);
    for (guint i = 0; i < 2; i++) {
        g_autoptr (JsonObject) domain = vmr_e2e_wait_domain (e, names[i], TRUE, 10000);
    }

    result = vmr_harness_cli (&e->h, "evacuate", "--from", from, "--to", to, "--domains", glob,
                              "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    g_assert_nonnull (strstr (result->out, "2/2"));
    for (guint i = 0; i < 2; i++) {
        g_assert_nonnull (strstr (result->out, dests[i]));
        assert_libvirt_on (names[i], sources[i], dests[i]);
    }
    for (guint i = 0; i < 2; i++) {
        vmr_e2e_destroy_domain (e, names[i]);
        vmr_harness_assert_image_equals (dests[i], formats[i], expected[i]);
        g_free (sources[i]);
        g_free (expected[i]);
        g_free (dests[i]);
        g_free (names[i]);
    }
}

static void
test_domain_destroyed (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *job_id = NULL;
    g_autoptr (JsonObject) failed = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    job_id = start_slow_copy (e, FALSE, &name, &source, &expected, &dest);
    vmr_e2e_destroy_domain (e, name);
    failed = vmr_harness_wait_job (&e->h, job_id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (failed, "reason"), ==, "domain stopped");
    vmr_harness_assert_job_record (&e->h, job_id, "failed");
    vmr_e2e_wait_domain (e, name, FALSE, 5000);
    vmr_harness_assert_image_equals (source, "raw", expected);
    /* libvirt made the destination for this copy: it goes with it */
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_daemon_serving (&e->h);
}

/* the daemon is down (no socket) or hung (a socket nobody answers) */
static void
test_daemon_down (VmrE2e *e, gconstpointer data)
{
    gboolean hung = GPOINTER_TO_INT (data);
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *listener = NULL;
    g_autofree gchar *state = NULL;
    g_autoptr (GPtrArray) runs = NULL;
    gint64 hooks_us = 0;
    gint64 start_us;
    VmrE2eDisk disk = { NULL, "raw", 0 };

    if (vmr_harness_skipped (&e->h))
        return;
    if (hung) {
        listener = vmr_harness_silent_listener (&e->h);
        vmr_e2e_point_hook (listener);
    }
    source = vmr_harness_create_image (&e->h, "source.raw", "raw", IMAGE_SIZE, 11);
    disk.path = source;
    name = vmr_e2e_define_domain (e, &disk);
    start_us = vmr_e2e_start_domain (e, name);
    state = vmr_e2e_virsh_ok ("domstate", name, NULL);
    g_assert_cmpstr (g_strstrip (state), ==, "running");

    runs = vmr_e2e_hook_runs (name);
    g_assert_cmpuint (runs->len, >=, 3); /* prepare, start, started */
    for (guint i = 0; i < runs->len; i++) {
        VmrE2eHookRun *run = g_ptr_array_index (runs, i);

        g_test_message ("hook %s %s: exit %d after %.3f s", run->op, run->subop, run->status,
                        (gdouble) run->elapsed_us / G_USEC_PER_SEC);
        g_assert_cmpint (run->status, ==, 0);
        hooks_us += run->elapsed_us;
    }
    g_test_message ("virsh start took %.3f s, the hooks %.3f s of it",
                    (gdouble) start_us / G_USEC_PER_SEC, (gdouble) hooks_us / G_USEC_PER_SEC);
    /* everything the hooks added to the start, beyond starting each of them */
    g_assert_cmpint (hooks_us, <=, HOOK_BUDGET_US + runs->len * vmr_e2e_hook_spawn_cost ());
}

/* pause, resume and set-speed on libvirt's job, then a pivot of a paused job */
static void
test_job_commands (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *job_id = NULL;
    g_autofree gchar *blockjobs = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    const gchar *steps[][2] = {
        { "pause", "paused" }, { "resume", "copying" },  { "set-speed", "synced" },
        { "pause", "paused" }, { "pivot", "completed" },
    };

    if (vmr_harness_skipped (&e->h))
        return;
    job_id = start_slow_copy (e, TRUE, &name, &source, &expected, &dest);
    writer = vmr_e2e_writer_new (name, expected, 0x1b71);
    /* the guest writes in every phase: copying, paused, copying again, synced, paused in sync,
     * pivoted */
    vmr_harness_writer_write (writer, E2E_WRITES);
    for (guint i = 0; i < G_N_ELEMENTS (steps); i++) {
        g_autoptr (VmrCliResult) result = NULL;
        g_autoptr (JsonObject) job = NULL;

        if (g_strcmp0 (steps[i][0], "set-speed") == 0)
            result = vmr_harness_cli (&e->h, "set-speed", job_id, "0", NULL);
        else
            result = vmr_harness_cli (&e->h, steps[i][0], job_id, NULL);
        vmr_cli_result_assert_ok (result);
        job = vmr_harness_wait_job (&e->h, job_id, steps[i][1], VMR_HARNESS_JOB_TIMEOUT_S);
        if (i == 0) {
            /* paused in QEMU, on libvirt's own job */
            blockjobs = vmr_e2e_virsh_ok ("qemu-monitor-command", name,
                                          "{\"execute\": \"query-block-jobs\"}", NULL);
            g_assert_nonnull (strstr (blockjobs, "\"paused\":true"));
            g_assert_nonnull (strstr (blockjobs, "\"device\":\"copy-vda-"));
        }
        if (i == 2)
            g_assert_cmpint (vmr_harness_json_int (job, "speed"), ==, 0);
        vmr_harness_writer_write (writer, E2E_WRITES);
    }
    assert_libvirt_on (name, source, dest);
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (dest, "raw", expected);
}

/*
 * set-copy-mode active on libvirt's job: block-job-change through QMP
 * passthrough. The policy's granularity reaches libvirt's mirror too.
 */
static void
test_copy_mode (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *job_id = NULL;
    g_autofree gchar *blockjobs = NULL;
    g_autofree gchar *nodes = NULL;
    g_autoptr (JsonObject) changed = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autoptr (VmrCliResult) confirmed = NULL;
    g_autoptr (VmrCliResult) unlimited = NULL;
    g_autoptr (VmrCliResult) pivoted = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    g_free (vmr_harness_write_policy (&e->h, "[defaults]\ngranularity = 16K\n"));
    job_id = start_slow_copy (e, TRUE, &name, &source, &expected, &dest);
    nodes = vmr_e2e_virsh_ok ("qemu-monitor-command", name,
                              "{\"execute\": \"query-named-block-nodes\", "
                              "\"arguments\": {\"flat\": true}}",
                              NULL);
    /* the mirror's bitmap, the only one on the domain's nodes */
    if (strstr (nodes, "\"granularity\":16384") == NULL)
        vmr_fail ("no node of %s has a dirty bitmap of granularity 16384: %s", name, nodes);

    confirmed = vmr_harness_cli (&e->h, "set-copy-mode", job_id, "active", NULL);
    vmr_cli_result_assert_ok (confirmed);
    g_assert_nonnull (strstr (confirmed->out, "copy mode set to write-blocking"));
    changed = vmr_harness_get_job (&e->h, job_id);
    g_assert_cmpstr (vmr_harness_json_string (changed, "copy-mode"), ==, "write-blocking");

    unlimited = vmr_harness_cli (&e->h, "set-speed", job_id, "0", NULL);
    vmr_cli_result_assert_ok (unlimited);
    json_object_unref (vmr_harness_wait_job (&e->h, job_id, "synced", VMR_HARNESS_JOB_TIMEOUT_S));
    /* only a write-blocking mirror is ever actively synced */
    blockjobs = vmr_e2e_virsh_ok ("qemu-monitor-command", name,
                                  "{\"execute\": \"query-block-jobs\"}", NULL);
    g_assert_nonnull (strstr (blockjobs, "\"actively-synced\":true"));

    pivoted = vmr_harness_cli (&e->h, "pivot", job_id, NULL);
    vmr_cli_result_assert_ok (pivoted);
    completed = vmr_harness_wait_job (&e->h, job_id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_libvirt_on (name, source, dest);
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (dest, "raw", expected);
}

static void
test_libvirtd_restart (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *job_id = NULL;
    gint64 deadline;

    if (vmr_harness_skipped (&e->h))
        return;
    job_id = start_slow_copy (e, FALSE, &name, &source, &expected, &dest);
    vmr_e2e_restart_libvirtd ();
    /* a libvirtd that starts runs the hook for each domain it finds running */
    deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    while (!hook_ran (name, "reconnect")) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("no 'reconnect' hook for %s after libvirtd restarted", name);
        g_usleep (50 * 1000);
    }
    /* the job survived; once the daemon is back on libvirt it takes commands again */
    deadline = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
    while (TRUE) {
        g_autoptr (VmrCliResult) result = vmr_harness_cli (&e->h, "set-speed", job_id, "0", NULL);

        if (result->status == 0)
            break;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("set-speed still fails 30 s after libvirtd restarted: %s", result->err);
        g_usleep (200 * 1000);
    }
    json_object_unref (
        vmr_harness_wait_job (&e->h, job_id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    assert_libvirt_on (name, source, dest);
    vmr_e2e_destroy_domain (e, name);
    vmr_harness_assert_image_equals (dest, "raw", expected);
}

/* what happens to a copy while the daemon is dead, and what the next one makes of it */
typedef struct {
    gboolean synced;         /* --manual-pivot, in sync before the kill */
    const gchar *meanwhile;  /* `virsh blockjob DOM vda` option while it is dead, or NULL */
    const gchar *picked_up;  /* the job's state once the next daemon has it */
    const gchar *command;    /* what drives the job to its end then, or NULL */
    gboolean on_destination; /* the domain ends on the destination */
} KilledCase;

static const KilledCase killed_copying = { FALSE, NULL, "copying", "set-speed", TRUE };
static const KilledCase killed_synced = { TRUE, NULL, "synced", "pivot", TRUE };
static const KilledCase pivoted_meanwhile = { TRUE, "--pivot", "completed", NULL, TRUE };
static const KilledCase aborted_meanwhile = { FALSE, "--abort", "failed", NULL, FALSE };

/*
 * The daemon dies (SIGKILL) in the middle of a copy, or with a
 * --manual-pivot copy in sync; libvirt's copy goes on alone, or a user
 * pivots or aborts it with virsh. The next daemon, on the same state dir,
 * finds the domain and picks the job up where libvirt has it: it drives a
 * copy that still runs to completed, and ends one that is over as libvirt
 * ended it.
 */
static void
test_daemon_killed (VmrE2e *e, gconstpointer data)
{
    const KilledCase *c = data;
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *job_id = NULL;
    g_autofree gchar *blockjob = NULL;
    g_autoptr (JsonObject) domain = NULL;
    g_autoptr (JsonObject) adopted = NULL;
    g_autoptr (JsonObject) ended = NULL;
    g_autoptr (VmrCliResult) command = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;

    if (vmr_harness_skipped (&e->h))
        return;
    job_id = start_slow_copy (e, c->synced, &name, &source, &expected, &dest);
    g_assert_cmpstr (job_id, ==, "vmr-1");
    writer = vmr_e2e_writer_new (name, expected, 0x4111);
    vmr_harness_writer_write (writer, E2E_WRITES);
    if (c->synced) {
        command = vmr_harness_cli (&e->h, "set-speed", job_id, "0", NULL);
        vmr_cli_result_assert_ok (command);
        g_clear_pointer (&command, vmr_cli_result_free);
        json_object_unref (
            vmr_harness_wait_job (&e->h, job_id, "synced", VMR_HARNESS_JOB_TIMEOUT_S));
    }

    vmr_harness_writer_write (writer, E2E_WRITES);
    vmr_e2e_kill_daemon (e);
    vmr_harness_assert_job_record (&e->h, job_id, c->synced ? "synced" : "copying");
    vmr_harness_writer_write (writer, E2E_WRITES);
    /* nobody watches libvirt's copy now; it goes on */
    blockjob = vmr_e2e_virsh_ok ("blockjob", name, "vda", "--raw", NULL);
    if (strstr (blockjob, "Block Copy") == NULL)
        vmr_fail ("libvirt runs no copy of vda after the daemon died: %s", blockjob);
    if (c->meanwhile != NULL)
        g_free (vmr_e2e_virsh_ok ("blockjob", name, "vda", c->meanwhile, NULL));
    vmr_harness_writer_write (writer, E2E_WRITES);

    vmr_e2e_start_daemon (e, TRUE);
    g_clear_pointer (&domain, json_object_unref);
    domain = vmr_e2e_wait_domain (e, name, TRUE, 10000);
    adopted = vmr_harness_wait_adopted (&e->h, job_id);
    g_assert_cmpstr (vmr_harness_json_string (adopted, "destination"), ==, dest);
    vmr_harness_writer_write (writer, E2E_WRITES);
    if (c->command != NULL) {
        g_assert_cmpstr (vmr_harness_json_string (adopted, "state"), ==, c->picked_up);
        g_assert_true (vmr_e2e_daemon_log_has (e, "picked up"));
        /* the progress is libvirt's, read at the adoption: the disk, and what the guest rewrote */
        g_assert_cmpint (
            vmr_harness_json_int (vmr_harness_json_object (adopted, "progress"), "total"), >=,
            IMAGE_SIZE);
        /* libvirt's job keeps the speed it had */
        g_assert_cmpint (vmr_harness_json_int (adopted, "speed"), ==, c->synced ? 0 : 1024 * 1024);
        if (g_str_equal (c->command, "set-speed"))
            command = vmr_harness_cli (&e->h, "set-speed", job_id, "0", NULL);
        else
            command = vmr_harness_cli (&e->h, c->command, job_id, NULL);
        vmr_cli_result_assert_ok (command);
    }
    ended = vmr_harness_wait_job (&e->h, job_id, c->on_destination ? "completed" : "failed",
                                  VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_false (vmr_json_job_orphaned (ended));
    vmr_harness_assert_job_record (&e->h, job_id, vmr_harness_json_string (ended, "state"));
    vmr_harness_writer_write (writer, E2E_WRITES);
    if (c->on_destination) {
        assert_libvirt_on (name, source, dest);
        vmr_e2e_destroy_domain (e, name);
        vmr_harness_assert_image_equals (dest, "raw", expected);
    } else {
        g_autofree gchar *live = vmr_e2e_domblk_source (name, "vda", FALSE);
        g_autofree gchar *persistent = vmr_e2e_domblk_source (name, "vda", TRUE);

        g_test_message ("%s: %s", job_id, vmr_harness_json_string (ended, "reason"));
        g_assert_cmpstr (live, ==, source);
        g_assert_cmpstr (persistent, ==, source);
        /* libvirt made the destination for this copy: it goes with it */
        g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
        vmr_e2e_destroy_domain (e, name);
        vmr_harness_assert_image_equals (source, "raw", expected);
    }
}

static gboolean
libvirt_unavailable_logged (gpointer user_data)
{
    return vmr_e2e_daemon_log_has (user_data, "libvirt is not available");
}

/* a daemon started while libvirtd is down serves, and finds libvirt when it comes */
static void
test_libvirtd_late (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *name = NULL;
    g_autoptr (JsonObject) domain = NULL;
    VmrE2eDisk disk = { NULL, "raw", 0 };

    if (vmr_harness_skipped (&e->h))
        return;
    vmr_e2e_stop_libvirtd ();
    vmr_e2e_start_daemon (e, TRUE);
    vmr_harness_assert_daemon_serving (&e->h);
    wait_for (libvirt_unavailable_logged, e, "the daemon to find libvirt missing");
    vmr_e2e_start_libvirtd ();
    source = vmr_harness_create_image (&e->h, "source.raw", "raw", IMAGE_SIZE, 13);
    disk.path = source;
    name = vmr_e2e_define_domain (e, &disk);
    vmr_e2e_start_domain (e, name);
    /* the hook's news makes it connect at once, whatever its retry timer says */
    domain = vmr_e2e_wait_domain (e, name, TRUE, 5000);
    g_assert_cmpstr (vmr_harness_json_string (domain, "backend"), ==, "libvirt");
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    VMR_E2E_ADD ("/e2e/libvirt/found-at-start", NULL, test_found_at_start);
    VMR_E2E_ADD ("/e2e/libvirt/hook-started", NULL, test_hook_started);
    VMR_E2E_ADD ("/e2e/libvirt/domains-both-kinds", NULL, test_domains_both_kinds);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/raw-raw", &raw_to_raw, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/qcow2-raw", &qcow2_to_raw, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/raw-qcow2", &raw_to_qcow2, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/iothread", &on_iothread, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/queue-iothreads", &on_queue_iothreads, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/migrate/reuse", &reuse, test_migrate);
    VMR_E2E_ADD ("/e2e/libvirt/evacuate", NULL, test_evacuate);
    VMR_E2E_ADD ("/e2e/libvirt/domain-destroyed", NULL, test_domain_destroyed);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-down/no-socket", GINT_TO_POINTER (FALSE), test_daemon_down);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-down/hung", GINT_TO_POINTER (TRUE), test_daemon_down);
    VMR_E2E_ADD ("/e2e/libvirt/job-commands", NULL, test_job_commands);
    VMR_E2E_ADD ("/e2e/libvirt/copy-mode", NULL, test_copy_mode);
    VMR_E2E_ADD ("/e2e/libvirt/libvirtd-restart", NULL, test_libvirtd_restart);
    VMR_E2E_ADD ("/e2e/libvirt/libvirtd-late", NULL, test_libvirtd_late);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-killed/copying", &killed_copying, test_daemon_killed);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-killed/synced", &killed_synced, test_daemon_killed);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-killed/pivoted-meanwhile", &pivoted_meanwhile,
                 test_daemon_killed);
    VMR_E2E_ADD ("/e2e/libvirt/daemon-killed/aborted-meanwhile", &aborted_meanwhile,
                 test_daemon_killed);
    return vmr_e2e_run (TRUE);
}
