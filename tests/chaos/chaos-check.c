#define G_LOG_DOMAIN "vmr-test"

/*
 * The chaos test's checks (chaos-harness.h): after each round, where each
 * disk is and what it holds; at the end, what is left in QEMU, in the
 * directories and in the job records, the guest's own verification, and
 * the figures.
 */

#include "chaos-harness.h"

#include "policy-fixture.h"

#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

/* the file QEMU's device @qdev_id reads and writes (query-block), NULL when it has none */
static gchar *
qemu_disk_file (VmrHarness *peer, const gchar *qdev_id)
{
    g_autoptr (JsonNode) blocks = vmr_harness_qmp (peer, "query-block", NULL);
    g_autofree gchar *prefix = g_strdup_printf ("/machine/peripheral/%s/", qdev_id);
    JsonArray *array = vmr_harness_json_node_array (blocks);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *entry = vmr_harness_json_element (array, i);
        const gchar *qdev = vmr_json_get_string (entry, "qdev");
        JsonObject *inserted = vmr_json_get_object (entry, "inserted");

        if (qdev != NULL && (g_str_equal (qdev, qdev_id) || g_str_has_prefix (qdev, prefix)))
            return inserted != NULL
                       ? vmr_harness_node_file (peer, vmr_json_get_string (inserted, "file"))
                       : NULL;
    }
    return NULL;
}

/* whether the hypervisor has @disk on its location: QEMU's view, or libvirt's live and persistent
 */
static gboolean
disk_where_expected (ChaosDisk *disk)
{
    ChaosDomain *d = disk->domain;
    g_autofree gchar *live = NULL;
    g_autofree gchar *persistent = NULL;

    if (d->peer != NULL) {
        live = qemu_disk_file (d->peer, disk->name);
        if (g_strcmp0 (live, disk->location) == 0)
            return TRUE;
        g_test_message ("%s %s: QEMU has %s, expected %s", d->name, disk->name, live,
                        disk->location);
        return FALSE;
    }
    live = vmr_e2e_domblk_source (d->name, disk->name, FALSE);
    persistent = vmr_e2e_domblk_source (d->name, disk->name, TRUE);
    if (g_strcmp0 (live, disk->location) == 0 && g_strcmp0 (persistent, disk->location) == 0)
        return TRUE;
    g_test_message ("%s %s: libvirt has %s (live) and %s (persistent), expected %s", d->name,
                    disk->name, live, persistent, disk->location);
    return FALSE;
}

/* whether the domain's QEMU runs (a killed one is started again at the round's end) */
static gboolean
domain_running (ChaosDomain *d)
{
    return d->peer == NULL || d->peer->qemu != NULL;
}

void
chaos_check_round (Chaos *c, guint round)
{
    for (guint i = 0; i < c->jobs->len; i++) {
        ChaosJob *job = c->jobs->pdata[i];
        gboolean completed;

        if (job->round != round)
            continue;
        g_assert_nonnull (job->state);
        completed = g_str_equal (job->state, "completed");
        if (!completed && (job->reason == NULL || *job->reason == '\0')) {
            g_test_message ("%s: %s without a reason", job->id, job->state);
            c->lost++;
        }
        if (completed) {
            if (!job->is_file)
                vmr_fail ("%s: the copy to %s completed before its fault (seed %u)", job->id,
                          job->dest, c->seed);
            g_free (job->disk->location);
            job->disk->location = g_strdup (job->dest);
            /* the old source is the user's to remove once the VM left it, as an operator does */
            if (g_unlink (job->source) != 0)
                vmr_fail ("%s: cannot remove the old source %s: %s", job->id, job->source,
                          g_strerror (errno));
        } else if (job->is_file && g_file_test (job->dest, G_FILE_TEST_EXISTS)) {
            g_test_message ("%s: %s, and its destination %s is still there", job->id, job->state,
                            job->dest);
            c->leaked++;
        }
    }
    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];

        if (!domain_running (d))
            continue;
        for (guint j = 0; j < d->disks->len; j++) {
            ChaosDisk *disk = d->disks->pdata[j];
            g_autoptr (GError) error = NULL;

            if (!disk_where_expected (disk))
                c->lost++;
            if (disk->expected == NULL)
                continue;
            if (!vmr_harness_image_equals (disk->location, "raw", disk->expected, &error)) {
                g_test_message ("round %u: %s %s on %s: %s", round, d->name, disk->name,
                                disk->location, error->message);
                c->corrupt++;
            }
        }
    }
}

/*
 * the entries of @reply's array (a QMP command's return) that @d should no
 * longer have: all of them, or with @nodes the daemon's nodes (vmr-*) but
 * those of the disks it is on now (a pivot leaves the disk on the copy's
 * destination nodes)
 */
static guint
count_leaks (ChaosDomain *d, JsonNode *reply, const gchar *what, gboolean nodes)
{
    JsonArray *array = vmr_harness_json_node_array (reply);
    guint n = 0;

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *entry = vmr_harness_json_element (array, i);
        g_autoptr (JsonNode) node = NULL;
        g_autofree gchar *text = NULL;

        if (nodes) {
            /* a file the daemon passed by descriptor, by its path */
            g_autofree gchar *file
                = d->peer != NULL
                      ? vmr_harness_node_file (d->peer, vmr_json_get_string (entry, "file"))
                      : g_strdup (vmr_json_get_string (entry, "file"));
            gboolean in_use = FALSE;

            if (!g_str_has_prefix (vmr_json_get_string (entry, "node-name") ?: "", "vmr-"))
                continue;
            for (guint j = 0; j < d->disks->len; j++)
                in_use
                    = in_use || g_strcmp0 (((ChaosDisk *) d->disks->pdata[j])->location, file) == 0;
            if (in_use)
                continue;
        }
        node = json_node_init_object (json_node_alloc (), entry);
        text = json_to_string (node, FALSE);
        g_test_message ("%s: left in %s: %s", d->name, what, text);
        n++;
    }
    return n;
}

/* what the daemon's QMP commands for @command return in @d's QEMU */
static JsonNode *
domain_qmp (ChaosDomain *d, const gchar *command)
{
    g_autoptr (JsonObject) args = NULL;
    g_autofree gchar *line = NULL;
    g_autofree gchar *out = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    JsonObject *root;

    if (d->peer != NULL) {
        if (g_str_equal (command, "query-named-block-nodes")) {
            args = json_object_new ();
            json_object_set_boolean_member (args, "flat", TRUE);
        }
        return vmr_harness_qmp (d->peer, command, args);
    }
    line = g_str_equal (command, "query-named-block-nodes")
               ? g_strdup_printf ("{\"execute\":\"%s\",\"arguments\":{\"flat\":true}}", command)
               : g_strdup_printf ("{\"execute\":\"%s\"}", command);
    out = vmr_e2e_virsh_ok ("qemu-monitor-command", d->name, line, NULL);
    if (!json_parser_load_from_data (parser, out, -1, &error))
        vmr_fail ("%s through libvirt: %s", command, error->message);
    root = vmr_harness_json_node_object (json_parser_get_root (parser));
    return json_node_copy (json_object_get_member (root, "return"));
}

/* the fd sets in which the daemon passed a file to @d's QEMU (a QEMU of its own) that no node uses
 */
static guint
fdset_leaks (ChaosDomain *d, JsonNode *nodes)
{
    g_autoptr (GHashTable) sets = vmr_harness_daemon_fdsets (d->peer);
    g_autofree gchar *used = json_to_string (nodes, FALSE);
    GHashTableIter iter;
    gpointer id, path;
    guint n = 0;

    g_hash_table_iter_init (&iter, sets);
    while (g_hash_table_iter_next (&iter, &id, &path)) {
        g_autofree gchar *name
            = g_strdup_printf ("\"/dev/fdset/%" G_GINT64_FORMAT "\"", *(gint64 *) id);

        if (strstr (used, name) != NULL)
            continue;
        g_test_message ("%s: left in query-fdsets: %s", d->name, (const gchar *) path);
        n++;
    }
    return n;
}

/* block jobs, the daemon's nodes, fd sets and NBD exports left in the running QEMUs */
static guint
qemu_leaks (Chaos *c)
{
    guint n = 0;

    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];
        g_autoptr (JsonNode) jobs = NULL;
        g_autoptr (JsonNode) nodes = NULL;
        g_autoptr (JsonNode) exports = NULL;

        if (!domain_running (d))
            continue;
        jobs = domain_qmp (d, "query-block-jobs");
        nodes = domain_qmp (d, "query-named-block-nodes");
        exports = domain_qmp (d, "query-block-exports");
        n += count_leaks (d, jobs, "query-block-jobs", FALSE);
        n += count_leaks (d, nodes, "query-named-block-nodes", TRUE);
        n += count_leaks (d, exports, "query-block-exports", FALSE);
        if (d->peer != NULL)
            n += fdset_leaks (d, nodes);
    }
    return n;
}

/* whether @path is where a disk is now */
static gboolean
is_disk_location (Chaos *c, const gchar *path)
{
    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];

        for (guint j = 0; j < d->disks->len; j++) {
            if (g_str_equal (((ChaosDisk *) d->disks->pdata[j])->location, path))
                return TRUE;
        }
    }
    return FALSE;
}

/* files in the stores and the small file system that no disk is on */
static guint
file_leaks (Chaos *c)
{
    const gchar *dirs[] = { c->dirs[0], c->dirs[1], c->tmpfs };
    guint n = 0;

    for (guint i = 0; i < G_N_ELEMENTS (dirs); i++) {
        g_autoptr (GDir) dir = g_dir_open (dirs[i], 0, NULL);
        const gchar *name;

        g_assert_nonnull (dir);
        while ((name = g_dir_read_name (dir)) != NULL) {
            g_autofree gchar *path = g_build_filename (dirs[i], name, NULL);

            if (g_str_equal (name, "lost+found") || is_disk_location (c, path))
                continue;
            g_test_message ("left behind: %s", path);
            n++;
        }
    }
    return n;
}

/* the job @id in the daemon's list @listed, or NULL */
static JsonObject *
listed_job (JsonArray *listed, const gchar *id)
{
    for (guint i = 0; i < json_array_get_length (listed); i++) {
        JsonObject *job = vmr_harness_json_element (listed, i);

        if (g_strcmp0 (vmr_json_get_string (job, "id"), id) == 0)
            return job;
    }
    return NULL;
}

/*
 * the record of @job in the state dir, and the daemon's job (a restarted
 * daemon takes back only the jobs that had not ended), agree with how the
 * test saw it end
 */
static gboolean
record_agrees (Chaos *c, ChaosJob *job, JsonArray *listed)
{
    JsonObject *queried = listed_job (listed, job->id);
    g_autoptr (JsonObject) record = chaos_read_record (c, job->id);

    if (record == NULL)
        return FALSE;
    if (g_strcmp0 (vmr_json_get_string (record, "state"), job->state) != 0
        || (queried != NULL && g_strcmp0 (vmr_json_job_state (queried), job->state) != 0)
        || g_strcmp0 (vmr_json_get_string (record, "destination"), job->dest) != 0) {
        g_test_message (
            "%s: the record says %s to %s, the daemon %s, the job ended %s", job->id,
            vmr_json_get_string (record, "state"), vmr_json_get_string (record, "destination"),
            queried != NULL ? vmr_json_job_state (queried) : "(not listed)", job->state);
        return FALSE;
    }
    return TRUE;
}

/* the guest's own check: it read back right every block it wrote, across every move */
static void
check_guest (Chaos *c, ChaosDomain *d)
{
    g_autoptr (VmrConsoleLine) done = vmr_harness_guest_wait_line (d->peer, "VMR-DONE", 300);
    guint64 written;

    if (strstr (done->text, "VMR-DONE verify ok") == NULL) {
        g_test_message ("%s: the guest's verification: %s", d->name, done->text);
        c->corrupt++;
        return;
    }
    written = assert_guest_verified (d->peer);
    g_test_message ("%s: the guest wrote %" G_GUINT64_FORMAT " blocks and read each back right",
                    d->name, written);
}

void
chaos_check_end (Chaos *c)
{
    guint migrations = c->jobs->len;
    g_autoptr (GString) per_fault = g_string_new ("");
    GHashTableIter iter;
    gpointer key, value;

    c->leaked += qemu_leaks (c);
    c->leaked += file_leaks (c);
    {
        g_autoptr (JsonNode) listed = vmr_harness_cli_json (&c->e->h, "jobs", NULL);

        for (guint i = 0; i < c->jobs->len; i++) {
            if (!record_agrees (c, c->jobs->pdata[i], vmr_harness_json_node_array (listed)))
                c->lost++;
        }
    }
    for (guint i = 0; i < c->domains->len; i++) {
        ChaosDomain *d = c->domains->pdata[i];

        if (d->guest)
            check_guest (c, d);
    }
    g_hash_table_iter_init (&iter, c->fault_counts);
    while (g_hash_table_iter_next (&iter, &key, &value))
        g_string_append_printf (per_fault, " %s=%u", (const gchar *) key, GPOINTER_TO_UINT (value));
    {
        guint completed = 0, failed = 0, cancelled = 0;

        for (guint i = 0; i < c->jobs->len; i++) {
            const gchar *state = ((ChaosJob *) c->jobs->pdata[i])->state;

            completed += g_str_equal (state, "completed");
            failed += g_str_equal (state, "failed");
            cancelled += g_str_equal (state, "cancelled");
        }
        g_test_message ("FIGURES seed %u: %u rounds; jobs: %u completed, %u failed, %u cancelled; "
                        "faults:%s",
                        c->seed, c->rounds, completed, failed, cancelled, per_fault->str);
    }
    g_test_message ("FIGURES %u migrations, %u faults, %u lost, %u corrupt, %u leaked", migrations,
                    c->faults, c->lost, c->corrupt, c->leaked);
    g_print ("# %u migrations, %u faults, %u lost, %u corrupt, %u leaked (seed %u)\n", migrations,
             c->faults, c->lost, c->corrupt, c->leaked, c->seed);
    if (c->lost != 0 || c->corrupt != 0 || c->leaked != 0 || migrations < c->least)
        vmr_fail ("chaos: %u migrations, %u lost, %u corrupt, %u leaked (seed %u)", migrations,
                  c->lost, c->corrupt, c->leaked, c->seed);
}
