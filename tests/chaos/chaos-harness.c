#define G_LOG_DOMAIN "vmr-test"

/*
 * The chaos test's world (chaos-harness.h): its domains and disks, the jobs
 * it started, and the migrations and writes the scenario asks for. The
 * checks are in chaos-check.c.
 */

#include "chaos-harness.h"

#include "policy-fixture.h"

#include <string.h>

#include <glib/gstdio.h>

#define TMPFS_SIZE (96 * CHAOS_MIB)

static void
chaos_disk_free (ChaosDisk *disk)
{
    g_clear_pointer (&disk->writer, vmr_harness_writer_free);
    g_free (disk->name);
    g_free (disk->file);
    g_free (disk->location);
    g_free (disk->expected);
    g_free (disk);
}

static void
chaos_domain_free (ChaosDomain *d)
{
    g_ptr_array_unref (d->disks);
    if (d->peer != NULL)
        vmr_harness_peer_free (d->peer);
    g_free (d->name);
    g_free (d);
}

static void
chaos_job_free (ChaosJob *job)
{
    g_free (job->id);
    g_free (job->source);
    g_free (job->dest);
    g_free (job->state);
    g_free (job->reason);
    g_free (job);
}

void
chaos_init (Chaos *c, VmrE2e *e, guint32 seed)
{
    VmrHarness *h = &e->h;

    memset (c, 0, sizeof (*c));
    c->e = e;
    c->seed = seed;
    c->rand = g_rand_new_with_seed (seed);
    c->domains = g_ptr_array_new_with_free_func ((GDestroyNotify) chaos_domain_free);
    c->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) chaos_job_free);
    c->fault_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < G_N_ELEMENTS (c->dirs); i++) {
        g_autofree gchar *name = g_strdup_printf ("store%u", i);

        c->dirs[i] = vmr_harness_path (h, name);
        g_assert_cmpint (g_mkdir (c->dirs[i], 0755), ==, 0);
    }
    c->tmpfs = vmr_harness_mount_tmpfs (h, "small", TMPFS_SIZE);
    vmr_nbd_servers_init (&c->nbd, h);
}

void
chaos_clear (Chaos *c)
{
    vmr_nbd_servers_clear (&c->nbd);
    g_clear_pointer (&c->domains, g_ptr_array_unref);
    g_clear_pointer (&c->jobs, g_ptr_array_unref);
    g_clear_pointer (&c->fault_counts, g_hash_table_unref);
    g_clear_pointer (&c->rand, g_rand_free);
    for (guint i = 0; i < G_N_ELEMENTS (c->dirs); i++)
        g_clear_pointer (&c->dirs[i], g_free);
    g_clear_pointer (&c->tmpfs, g_free);
}

static ChaosDomain *
domain_new (Chaos *c, const gchar *name, VmrHarness *peer)
{
    ChaosDomain *d = g_new0 (ChaosDomain, 1);

    d->name = g_strdup (name);
    d->peer = peer;
    d->disks = g_ptr_array_new_with_free_func ((GDestroyNotify) chaos_disk_free);
    g_ptr_array_add (c->domains, d);
    return d;
}

/*
 * a disk of @d: an image of @size bytes with the pattern of @seed, made in
 * the test's directory (its pristine copy stays there) and moved into the
 * first store
 */
static ChaosDisk *
disk_new (Chaos *c, ChaosDomain *d, const gchar *name, gsize size, guint64 seed)
{
    ChaosDisk *disk = g_new0 (ChaosDisk, 1);
    g_autofree gchar *made = NULL;

    disk->domain = d;
    disk->name = g_strdup (name);
    disk->file = g_strdup_printf ("%s-%s.raw", d->name, name);
    made = vmr_harness_create_image (&c->e->h, disk->file, "raw", size, seed);
    disk->expected = vmr_harness_expected_path (made);
    disk->location = g_build_filename (c->dirs[0], disk->file, NULL);
    g_assert_cmpint (g_rename (made, disk->location), ==, 0);
    g_ptr_array_add (d->disks, disk);
    return disk;
}

ChaosDomain *
chaos_add_qmp_domain (Chaos *c, const gchar *name, guint n_disks, gsize size)
{
    ChaosDomain *d = domain_new (c, name, vmr_harness_peer_new (&c->e->h, name));

    for (guint i = 0; i < n_disks; i++) {
        g_autofree gchar *disk_name = g_strdup_printf ("disk%u", i);

        disk_new (c, d, disk_name, size, g_str_hash (name) + i);
    }
    chaos_start_qmp (c, d);
    for (guint i = 0; i < d->disks->len; i++) {
        ChaosDisk *disk = d->disks->pdata[i];

        disk->writer = vmr_harness_writer_new (d->peer, disk->name, disk->expected,
                                               ((guint64) c->seed << 8) + g_str_hash (disk->file));
    }
    return d;
}

void
chaos_start_qmp (Chaos *c, ChaosDomain *d)
{
    g_autofree VmrHarnessDisk *disks = g_new0 (VmrHarnessDisk, d->disks->len);

    for (guint i = 0; i < d->disks->len; i++) {
        ChaosDisk *disk = d->disks->pdata[i];

        disks[i].id = disk->name;
        disks[i].path = disk->location;
        disks[i].format = "raw";
        disks[i].scsi = TRUE;
        /* the second disk on an I/O thread: copies on both kinds of thread */
        disks[i].iothread = i == 1 ? "io1" : NULL;
    }
    vmr_harness_start_qemu (d->peer, disks, d->disks->len);
    vmr_harness_attach (d->peer, d->name);
}

ChaosDomain *
chaos_add_guest_domain (Chaos *c, const gchar *name, gsize size, guint runtime_s)
{
    ChaosDomain *d = domain_new (c, name, vmr_harness_peer_new (&c->e->h, name));
    const VmrHarnessGuestJob verify = { "verify", 200, runtime_s, NULL, NULL, "idle" };
    ChaosDisk *disk = disk_new (c, d, "disk0", size, 0x6e57);
    VmrHarnessDisk qdisk = { .id = "disk0", .path = disk->location, .format = "raw" };
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (GArray) writing = NULL;

    /* the guest checks its own writes: no expected image of the whole disk */
    d->guest = TRUE;
    g_clear_pointer (&disk->expected, g_free);
    vmr_harness_start_guest (d->peer, &qdisk, &verify);
    vmr_harness_attach (d->peer, d->name);
    ready = vmr_harness_guest_wait_line (d->peer, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    writing = vmr_harness_guest_wait_iops (d->peer, 1, 1, 60);
    return d;
}

ChaosDomain *
chaos_add_libvirt_domain (Chaos *c, gsize size)
{
    ChaosDomain *d;
    ChaosDisk *disk;
    g_autofree gchar *image = vmr_harness_create_image (&c->e->h, "lv-vda.raw", "raw", size, 0x1b);
    g_autofree gchar *name = NULL;
    g_autofree gchar *location = g_build_filename (c->dirs[0], "lv-vda.raw", NULL);
    VmrE2eDisk vdisk = { location, "raw", 0, NULL };

    g_assert_cmpint (g_rename (image, location), ==, 0);
    name = vmr_e2e_define_domain (c->e, &vdisk);
    vmr_e2e_start_domain (c->e, name);
    d = domain_new (c, name, NULL);
    disk = g_new0 (ChaosDisk, 1);
    disk->domain = d;
    disk->name = g_strdup ("vda");
    disk->file = g_strdup ("lv-vda.raw");
    disk->location = g_steal_pointer (&location);
    disk->expected = vmr_harness_expected_path (image);
    /* the writer keeps the name: the domain's own */
    disk->writer = vmr_e2e_writer_new (d->name, disk->expected, (guint64) c->seed << 4);
    g_ptr_array_add (d->disks, disk);
    return d;
}

void
chaos_attach_all (Chaos *c)
{
    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];

        if (d->peer != NULL && d->peer->qemu != NULL)
            vmr_harness_attach (d->peer, d->name);
    }
}

const gchar *
chaos_other_dir (Chaos *c, ChaosDisk *disk)
{
    g_autofree gchar *dir = g_path_get_dirname (disk->location);

    return g_strcmp0 (dir, c->dirs[0]) == 0 ? c->dirs[1] : c->dirs[0];
}

static gboolean
is_final (const gchar *state)
{
    return g_str_equal (state, "completed") || g_str_equal (state, "failed")
           || g_str_equal (state, "cancelled");
}

/* the active job of @domain's @disk in `jobs --json`, or NULL */
static const gchar *
find_active_job (JsonArray *jobs, const gchar *domain, const gchar *disk)
{
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *job = vmr_harness_json_element (jobs, i);
        const gchar *state = vmr_json_job_state (job);

        if (g_strcmp0 (vmr_json_get_string (job, "domain"), domain) == 0
            && g_strcmp0 (vmr_json_get_string (job, "disk"), disk) == 0
            && !g_str_equal (state, "completed") && !g_str_equal (state, "failed")
            && !g_str_equal (state, "cancelled"))
            return vmr_harness_json_string (job, "id");
    }
    return NULL;
}

gboolean
chaos_migrate (Chaos *c, ChaosDisk **disks, const gchar *const *dests, guint n, const gchar *speed,
               gboolean manual_pivot)
{
    VmrHarness *h = &c->e->h;
    const gchar *domain = disks[0]->domain->name;
    g_autoptr (GPtrArray) args = g_ptr_array_new ();
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonNode) listed = NULL;

    g_ptr_array_add (args, "migrate");
    g_ptr_array_add (args, (gpointer) domain);
    for (guint i = 0; i < n; i++) {
        g_ptr_array_add (args, disks[i]->name);
        g_ptr_array_add (args, (gpointer) dests[i]);
    }
    g_ptr_array_add (args, "--speed");
    g_ptr_array_add (args, (gpointer) speed);
    if (manual_pivot)
        g_ptr_array_add (args, "--manual-pivot");
    g_ptr_array_add (args, NULL);
    result = vmr_harness_cliv (h, (const gchar *const *) args->pdata);
    if (result->status != 0) {
        vmr_cli_result_assert_error (result, 1);
        g_test_message ("round %u: refused: %s", c->rounds, g_strchomp (result->err));
        return FALSE;
    }
    listed = vmr_harness_cli_json (h, "jobs", NULL);
    for (guint i = 0; i < n; i++) {
        ChaosJob *job = g_new0 (ChaosJob, 1);
        const gchar *id
            = find_active_job (vmr_harness_json_node_array (listed), domain, disks[i]->name);

        if (id == NULL)
            vmr_fail ("round %u: migrate %s %s succeeded but the daemon lists no job of it",
                      c->rounds, domain, disks[i]->name);
        job->id = g_strdup (id);
        job->disk = disks[i];
        job->source = g_strdup (disks[i]->location);
        job->dest = g_strdup (dests[i]);
        job->is_file = g_path_is_absolute (dests[i]);
        job->round = c->rounds;
        g_ptr_array_add (c->jobs, job);
        g_test_message ("round %u: %s: %s %s %s -> %s", c->rounds, job->id, domain, disks[i]->name,
                        job->source, job->dest);
    }
    return TRUE;
}

void
chaos_write (Chaos *c, guint count)
{
    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];

        if (d->peer != NULL && d->peer->qemu == NULL)
            continue;
        for (guint j = 0; j < d->disks->len; j++) {
            ChaosDisk *disk = d->disks->pdata[j];

            if (disk->writer != NULL)
                vmr_harness_writer_write (disk->writer, count);
        }
    }
}

/* the record of @id in the state dir, or NULL when there is none */
JsonObject *
chaos_read_record (Chaos *c, const gchar *id)
{
    g_autofree gchar *name = g_strdup_printf ("%s.json", id);
    g_autofree gchar *path = g_build_filename (c->e->h.state_dir, "jobs", name, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    if (!json_parser_load_from_file (parser, path, &error)) {
        g_test_message ("%s: no record: %s", id, error->message);
        return NULL;
    }
    return json_object_ref (vmr_harness_json_node_object (json_parser_get_root (parser)));
}

/*
 * the job @id as the daemon has it; or, when it has none (a daemon started
 * again takes back only the jobs that had not ended), its record, which
 * must then be final; NULL, the job lost, otherwise
 */
static JsonObject *
read_job (Chaos *c, const gchar *id)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) record = NULL;

    json_object_set_string_member (args, "id", id);
    reply = vmr_qmp_client_execute_sync (c->e->h.control, "query-job", args, 10000, &error);
    if (error == NULL)
        return json_object_ref (vmr_harness_json_node_object (reply));
    if (strstr (error->message, "unknown job") == NULL)
        vmr_fail ("query-job %s: %s", id, error->message);
    record = chaos_read_record (c, id);
    if (record != NULL && is_final (vmr_json_get_string (record, "state") ?: "")) {
        g_test_message ("%s: ended %s before the daemon died; its record says so", id,
                        vmr_json_get_string (record, "state"));
        return g_steal_pointer (&record);
    }
    g_test_message ("%s: the daemon does not know it, and its record says %s", id,
                    record != NULL ? vmr_json_get_string (record, "state") : "nothing");
    return NULL;
}

guint
chaos_poll_round (Chaos *c, guint round)
{
    guint active = 0;

    for (guint i = 0; i < c->jobs->len; i++) {
        ChaosJob *job = c->jobs->pdata[i];
        g_autoptr (JsonObject) object = NULL;
        const gchar *state;

        if (job->round != round || job->state != NULL)
            continue;
        object = read_job (c, job->id);
        if (object == NULL) {
            job->state = g_strdup ("lost");
            c->lost++;
            continue;
        }
        state = vmr_json_job_state (object);
        if (!is_final (state)) {
            active++;
            continue;
        }
        job->state = g_strdup (state);
        job->reason = g_strdup (vmr_json_job_reason (object));
        g_test_message ("round %u: %s %s%s%s", round, job->id, state,
                        job->reason != NULL ? ": " : "", job->reason != NULL ? job->reason : "");
    }
    return active;
}

/* what the daemon said of the job @id (its log holds the QMP traffic too) */
static void
show_job_log (Chaos *c, const gchar *id)
{
    g_autofree gchar *text = NULL;
    g_autofree gchar *needle = g_strdup_printf ("job %s", id);
    g_auto (GStrv) lines = NULL;

    if (!g_file_get_contents (c->e->daemon_log, &text, NULL, NULL))
        return;
    lines = g_strsplit (text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strstr (lines[i], needle) != NULL && strstr (lines[i], "DEBUG") == NULL)
            g_test_message ("  daemon: %s", lines[i]);
    }
}

/* lifts the speed limits of @round's active jobs: every one, or those not let go yet */
static void
unthrottle (Chaos *c, guint round, gboolean all)
{
    for (guint i = 0; i < c->jobs->len; i++) {
        ChaosJob *job = c->jobs->pdata[i];
        g_autoptr (VmrCliResult) result = NULL;

        if (job->round != round || job->state != NULL || (job->let_go && !all))
            continue;
        /* a job that ended meanwhile, or whose libvirt is away, refuses: it is checked later */
        result = vmr_harness_cli (&c->e->h, "set-speed", job->id, "0", NULL);
        job->let_go = job->let_go || result->status == 0;
        if (result->status != 0)
            g_test_message ("round %u: set-speed %s 0: %s", round, job->id,
                            g_strchomp (result->err));
    }
}

void
chaos_unthrottle_round (Chaos *c, guint round)
{
    unthrottle (c, round, TRUE);
}

void
chaos_wait_round (Chaos *c, guint round, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

    while (chaos_poll_round (c, round) > 0) {
        if (g_get_monotonic_time () > deadline) {
            for (guint i = 0; i < c->jobs->len; i++) {
                ChaosJob *job = c->jobs->pdata[i];

                if (job->round == round && job->state == NULL) {
                    g_test_message ("round %u: %s never ended", round, job->id);
                    show_job_log (c, job->id);
                    c->lost++;
                }
            }
            vmr_fail ("round %u: jobs still active after %u s (seed %u)", round, timeout_s,
                      c->seed);
        }
        chaos_write (c, 2);
        g_usleep (100 * 1000);
        unthrottle (c, round, FALSE);
    }
}

void
chaos_count_fault (Chaos *c, const gchar *name)
{
    guint n = GPOINTER_TO_UINT (g_hash_table_lookup (c->fault_counts, name));

    g_hash_table_replace (c->fault_counts, g_strdup (name), GUINT_TO_POINTER (n + 1));
    c->faults++;
    g_test_message ("round %u: fault %u: %s", c->rounds, c->faults, name);
}
