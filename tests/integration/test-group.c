#define G_LOG_DOMAIN "vmr-test"

/*
 * Group migrations: the disks of one VM moved together, `migrate DOMAIN
 * DISK DEST DISK DEST ...`. A member that is synced waits, its VM still on
 * its source, until every member is synced; then all pivot. With
 * --manual-pivot, `pivot` on any member pivots the whole group, and is
 * refused while a member still copies. A member that fails takes the
 * others with it: the VM stays on all its sources. The copies that must
 * still be running are rate-limited (QEMU's mirror copies its first buffer
 * at once and then keeps to the limit).
 */

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MIB        (1024 * 1024)
#define SMALL_SIZE (32 * MIB)
#define LARGE_SIZE (128 * MIB)
/* two members slowed down so that the small one syncs well before the large one */
#define GROUP_SPEED "2M"

typedef struct {
    guint n;
    const gchar *ids[2];
    gchar *sources[2];
    gchar *expected[2];
    gchar *dests[2];
    gchar *jobs[2]; /* job ids, in the order of the command line */
    gchar *group;
    VmrHarnessWriter *writers[2]; /* the guest's writes to each disk */
} Group;

static void
group_clear (Group *g)
{
    for (guint i = 0; i < G_N_ELEMENTS (g->sources); i++) {
        g_clear_pointer (&g->sources[i], g_free);
        g_clear_pointer (&g->expected[i], g_free);
        g_clear_pointer (&g->dests[i], g_free);
        g_clear_pointer (&g->jobs[i], g_free);
        g_clear_pointer (&g->writers[i], vmr_harness_writer_free);
    }
    g_clear_pointer (&g->group, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Group, group_clear)

/*
 * A VM "vm" with disk0 (@size0 bytes) and disk1 (@size1 bytes), raw, on
 * the I/O threads io0 and io1 (or both on the main loop when !@iothreads),
 * scsi-hds the guest writes through (group_write()), attached to the
 * daemon. disk1's destination is in @dest1_dir when given.
 */
static void
group_start_vm (VmrHarness *h, Group *g, gsize size0, gsize size1, gboolean iothreads,
                const gchar *dest1_dir)
{
    VmrHarnessDisk disks[] = {
        { "disk0", NULL, "raw", iothreads ? "io0" : NULL, .scsi = TRUE },
        { "disk1", NULL, "raw", iothreads ? "io1" : NULL, .scsi = TRUE },
    };
    const gsize sizes[] = { size0, size1 };

    g->n = G_N_ELEMENTS (disks);
    for (guint i = 0; i < g->n; i++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", i);
        g_autofree gchar *dest_name = g_strdup_printf ("dest%u.raw", i);

        g->ids[i] = disks[i].id;
        g->sources[i] = vmr_harness_create_image (h, name, "raw", sizes[i], 0x6e0 + i);
        g->expected[i] = vmr_harness_expected_path (g->sources[i]);
        if (i == 1 && dest1_dir != NULL)
            g->dests[i] = g_build_filename (dest1_dir, dest_name, NULL);
        else
            g->dests[i] = vmr_harness_path (h, dest_name);
        disks[i].path = g->sources[i];
    }
    vmr_harness_start_qemu (h, disks, g->n);
    for (guint i = 0; i < g->n; i++)
        g->writers[i] = vmr_harness_writer_new (h, g->ids[i], g->expected[i], 0x9a0 + i);
    vmr_harness_attach (h, "vm");
}

/* guest writes in each phase, to each disk */
#define GROUP_WRITES 30

/* the guest writes to every member it can write to */
static void
group_write (Group *g)
{
    for (guint i = 0; i < g->n; i++)
        if (g->writers[i] != NULL)
            vmr_harness_writer_write (g->writers[i], GROUP_WRITES);
}

/* the command line `migrate vm disk0 DEST0 disk1 DEST1 @extra...`, NULL-terminated */
static GPtrArray *
group_args (Group *g, const gchar *const *extra)
{
    GPtrArray *args = g_ptr_array_new ();

    g_ptr_array_add (args, "migrate");
    g_ptr_array_add (args, "vm");
    for (guint i = 0; i < g->n; i++) {
        g_ptr_array_add (args, (gpointer) g->ids[i]);
        g_ptr_array_add (args, g->dests[i]);
    }
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add (args, (gpointer) extra[i]);
    g_ptr_array_add (args, NULL);
    return args;
}

/* a job object of a group member: its disk, destination and group */
static void
assert_member (JsonObject *job, Group *g, guint i)
{
    g_assert_cmpstr (vmr_harness_json_string (job, "domain"), ==, "vm");
    g_assert_cmpstr (vmr_harness_json_string (job, "disk"), ==, g->ids[i]);
    g_assert_cmpstr (vmr_harness_json_string (job, "destination"), ==, g->dests[i]);
    g_assert_cmpstr (vmr_harness_json_string (job, "group"), ==, g->group);
}

/*
 * `--json migrate vm disk0 DEST0 disk1 DEST1 @extra...`: asserts success
 * and the reply, {"group": ID, "jobs": [...]}, and fills in the job ids
 */
static void
group_migrate (VmrHarness *h, Group *g, const gchar *const *extra)
{
    g_autoptr (GPtrArray) args = group_args (g, extra);
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonObject *object;
    JsonArray *jobs;

    g_ptr_array_insert (args, 0, "--json");
    result = vmr_harness_cliv (h, (const gchar *const *) args->pdata);
    vmr_cli_result_assert_ok (result);
    reply = vmr_cli_result_parse_json (result);
    if (!JSON_NODE_HOLDS_OBJECT (reply))
        vmr_fail ("migrate of a group printed no object: %s", result->out);
    object = vmr_harness_json_node_object (reply);
    jobs = vmr_harness_json_array (object, "jobs");
    if (jobs == NULL)
        vmr_fail ("migrate of a group printed no \"jobs\": %s", result->out);
    g_assert_cmpuint (json_array_get_length (jobs), ==, g->n);
    g->group = g_strdup (vmr_harness_json_string (object, "group"));
    for (guint i = 0; i < g->n; i++) {
        JsonObject *job = vmr_harness_json_element (jobs, i);

        g_assert_nonnull (job);
        assert_member (job, g, i);
        g->jobs[i] = g_strdup (vmr_harness_json_string (job, "id"));
    }
    /* the group is named after its first member */
    g_assert_cmpstr (g->group, ==, g->jobs[0]);
    g_assert_cmpstr (g->jobs[0], !=, g->jobs[1]);
}

/* the current state of job @id */
static gchar *
get_state (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

    return g_strdup (vmr_json_job_state (job));
}

/* the number of block jobs in QEMU */
static guint
count_block_jobs (VmrHarness *h)
{
    g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-block-jobs", NULL);

    return json_array_get_length (vmr_harness_json_node_array (jobs));
}

/* every member in `jobs --json` says which group it belongs to */
static void
assert_jobs_list_group (VmrHarness *h, Group *g)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (jobs);

    g_assert_cmpuint (json_array_get_length (array), ==, g->n);
    for (guint i = 0; i < g->n; i++) {
        gboolean found = FALSE;

        for (guint j = 0; j < json_array_get_length (array); j++) {
            JsonObject *job = vmr_harness_json_element (array, j);

            if (g_strcmp0 (vmr_harness_json_string (job, "id"), g->jobs[i]) != 0)
                continue;
            assert_member (job, g, i);
            found = TRUE;
        }
        if (!found)
            vmr_fail ("`jobs` lacks %s", g->jobs[i]);
    }
}

/*
 * the synced member @synced waits for the member @copying: its QEMU job is
 * ready, yet the VM still runs every disk on its source
 */
static void
assert_waiting_for_group (VmrHarness *h, Group *g, guint synced, guint copying)
{
    g_autoptr (JsonObject) waiting = vmr_harness_get_job (h, g->jobs[synced]);
    g_autoptr (JsonObject) other = vmr_harness_get_job (h, g->jobs[copying]);
    g_autoptr (JsonObject) ready = vmr_harness_find_block_job (h, g->jobs[synced]);
    g_autoptr (JsonObject) running = vmr_harness_find_block_job (h, g->jobs[copying]);

    g_assert_cmpstr (vmr_json_job_state (waiting), ==, "synced");
    g_assert_cmpstr (vmr_json_job_state (other), ==, "copying");
    if (ready == NULL || running == NULL)
        vmr_fail ("QEMU does not run the mirror jobs %s and %s", g->jobs[synced], g->jobs[copying]);
    g_assert_cmpstr (vmr_harness_json_string (ready, "status"), ==, "ready");
    g_assert_cmpstr (vmr_harness_json_string (running, "status"), ==, "running");
    g_assert_cmpint (vmr_harness_json_int (running, "offset"), <,
                     vmr_harness_json_int (running, "len"));
    for (guint i = 0; i < g->n; i++)
        vmr_harness_assert_disk_on (h, g->ids[i], g->sources[i]);
}

/* after the group's cut-over: every disk on its destination, with its bytes */
static void
assert_group_migrated (VmrHarness *h, Group *g)
{
    for (guint i = 0; i < g->n; i++) {
        vmr_harness_assert_disk_on (h, g->ids[i], g->dests[i]);
        vmr_harness_assert_node_released (h, g->sources[i]);
        vmr_harness_assert_job_record (h, g->jobs[i], "completed");
    }
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    for (guint i = 0; i < g->n; i++) {
        vmr_harness_assert_image_equals (g->dests[i], "raw", g->expected[i]);
        /* the sources are left as they were (as they were at the pivot, when written) */
        if (g->writers[i] == NULL)
            vmr_harness_assert_image_equals (g->sources[i], "raw", g->expected[i]);
    }
}

/* no member pivoted before the last member was synced */
static void
assert_pivots_after_last_sync (VmrHarness *h, Group *g)
{
    g_autoptr (JsonObject) first = vmr_harness_get_job (h, g->jobs[0]);
    g_autoptr (JsonObject) second = vmr_harness_get_job (h, g->jobs[1]);
    gint64 last_synced
        = MAX (vmr_json_job_time_of (first, "synced"), vmr_json_job_time_of (second, "synced"));

    g_assert_cmpint (vmr_json_job_time_of (first, "pivoting"), >=, last_synced);
    g_assert_cmpint (vmr_json_job_time_of (second, "pivoting"), >=, last_synced);
}

/*
 * the small disk syncs long before the large one and waits for it, its VM
 * on its source; then both pivot, and both destinations hold their bytes,
 * the guest's writes to both in every phase included. Both disks are on the
 * main loop (scsi-hds the guest writes through); the policy lets them copy
 * side by side.
 */
static void
test_cutover (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Group) g = { 0 };
    const gchar *const extra[] = { "--speed", GROUP_SPEED, NULL };
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) unlimited = NULL;
    g_autoptr (JsonObject) done0 = NULL;
    g_autoptr (JsonObject) done1 = NULL;
    g_autofree gchar *policy = NULL;

    policy = vmr_harness_write_policy (h, "[defaults]\nmax-parallel-per-iothread = 0\n");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    group_start_vm (h, &g, SMALL_SIZE, LARGE_SIZE, FALSE, NULL);
    group_migrate (h, &g, extra);
    copying = vmr_harness_wait_job (h, g.jobs[1], "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    /* both copying */
    group_write (&g);
    synced = vmr_harness_wait_job (h, g.jobs[0], "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_waiting_for_group (h, &g, 0, 1);
    assert_jobs_list_group (h, &g);
    /* one in sync waiting for the other */
    group_write (&g);

    /* nothing happens by itself while the large disk copies, in two of the daemon's decisions */
    {
        g_autoptr (JsonArray) samples = vmr_harness_wait_job_samples (h, g.jobs[0], 2);

        vmr_harness_assert_samples_state (samples, "synced");
    }
    assert_waiting_for_group (h, &g, 0, 1);

    /* the large disk catches up: the group cuts over */
    {
        g_autoptr (JsonNode) reply = vmr_harness_cli_json (h, "set-speed", g.jobs[1], "0", NULL);

        g_assert_true (JSON_NODE_HOLDS_OBJECT (reply));
        g_assert_cmpint (vmr_harness_json_int (vmr_harness_json_node_object (reply), "speed"), ==,
                         0);
    }
    done1 = vmr_harness_wait_job (h, g.jobs[1], "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    done0 = vmr_harness_wait_job (h, g.jobs[0], "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    group_write (&g);
    /* the small disk was synced well before the large one, and pivoted after it */
    g_assert_cmpint (vmr_json_job_time_of (done0, "synced"), <,
                     vmr_json_job_time_of (done1, "synced"));
    assert_pivots_after_last_sync (h, &g);
    assert_jobs_list_group (h, &g);
    assert_group_migrated (h, &g);
}

/*
 * --manual-pivot: `pivot` on a member is refused while the other still
 * copies, and changes nothing; once both are synced, `pivot` on one member
 * switches both. Both disks share the main loop, so that the admission
 * limit per I/O thread (1 by default) admits the second member only once
 * the first is synced: a synced member does not hold its slot.
 */
static void
test_manual_pivot (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Group) g = { 0 };
    const gchar *const extra[] = { "--speed", GROUP_SPEED, "--manual-pivot", NULL };
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (VmrCliResult) refused = NULL;
    g_autoptr (VmrCliResult) pivot = NULL;
    g_autoptr (JsonObject) synced1 = NULL;
    g_autoptr (JsonObject) done0 = NULL;
    g_autoptr (JsonObject) done1 = NULL;
    g_autofree gchar *state0 = NULL;

    group_start_vm (h, &g, SMALL_SIZE, 2 * SMALL_SIZE, FALSE, NULL);
    group_migrate (h, &g, extra);
    group_write (&g);
    synced = vmr_harness_wait_job (h, g.jobs[0], "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_true (vmr_harness_json_bool (synced, "manual-pivot"));
    copying = vmr_harness_wait_job (h, g.jobs[1], "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_waiting_for_group (h, &g, 0, 1);
    /* one member in sync, the other copying */
    group_write (&g);

    /* the synced member cannot pivot its group yet: one error line, nothing changed */
    refused = vmr_harness_cli (h, "pivot", g.jobs[0], NULL);
    vmr_cli_result_assert_error (refused, 1);
    assert_waiting_for_group (h, &g, 0, 1);
    g_assert_cmpuint (count_block_jobs (h), ==, 2);

    /* both synced: they wait for the operator */
    {
        g_autoptr (JsonNode) reply = vmr_harness_cli_json (h, "set-speed", g.jobs[1], "0", NULL);

        g_assert_true (JSON_NODE_HOLDS_OBJECT (reply));
    }
    synced1 = vmr_harness_wait_job (h, g.jobs[1], "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    /* and stay so, in two of the daemon's decisions on each */
    for (guint i = 0; i < g.n; i++) {
        g_autoptr (JsonArray) samples = vmr_harness_wait_job_samples (h, g.jobs[i], 2);

        vmr_harness_assert_samples_state (samples, "synced");
    }
    state0 = get_state (h, g.jobs[0]);
    g_assert_cmpstr (state0, ==, "synced");
    g_clear_pointer (&state0, g_free);
    state0 = get_state (h, g.jobs[1]);
    g_assert_cmpstr (state0, ==, "synced");
    for (guint i = 0; i < g.n; i++) {
        g_autoptr (JsonObject) block_job = vmr_harness_find_block_job (h, g.jobs[i]);

        g_assert_nonnull (block_job);
        g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "ready");
        vmr_harness_assert_disk_on (h, g.ids[i], g.sources[i]);
    }
    /* both in sync */
    group_write (&g);

    /* `pivot` on the member that is not the group's first switches both */
    pivot = vmr_harness_cli (h, "pivot", g.jobs[1], NULL);
    vmr_cli_result_assert_ok (pivot);
    done0 = vmr_harness_wait_job (h, g.jobs[0], "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    done1 = vmr_harness_wait_job (h, g.jobs[1], "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    group_write (&g);
    assert_pivots_after_last_sync (h, &g);
    assert_group_migrated (h, &g);
}

/*
 * Finds the members in `jobs --json` by their disks, fills in their ids and
 * checks them; FALSE when they are not all there yet
 */
static gboolean
find_members (VmrHarness *h, Group *g)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (jobs);
    JsonObject *members[G_N_ELEMENTS (g->jobs)] = { NULL };

    if (json_array_get_length (array) < g->n)
        return FALSE;
    g_assert_cmpuint (json_array_get_length (array), ==, g->n);
    for (guint j = 0; j < g->n; j++) {
        JsonObject *job = vmr_harness_json_element (array, j);

        for (guint i = 0; i < g->n; i++) {
            if (g_strcmp0 (vmr_harness_json_string (job, "disk"), g->ids[i]) == 0)
                members[i] = job;
        }
    }
    for (guint i = 0; i < g->n; i++) {
        if (members[i] == NULL)
            vmr_fail ("`jobs` has no job for %s", g->ids[i]);
        g->jobs[i] = g_strdup (vmr_harness_json_string (members[i], "id"));
    }
    /* the group is named after its first member */
    g->group = g_strdup (g->jobs[0]);
    for (guint i = 0; i < g->n; i++)
        assert_member (members[i], g, i);
    return TRUE;
}

/* fills the file system of @dir with a file until it has no room left */
static void
fill_file_system (const gchar *dir)
{
    g_autofree gchar *path = g_build_filename (dir, "filler", NULL);
    g_autofree guint8 *buf = g_malloc (MIB);
    gsize written = 0;
    int fd = open (path, O_WRONLY | O_CREAT | O_EXCL, 0600);

    g_assert_cmpint (fd, >=, 0);
    memset (buf, 0xf1, MIB);
    while (TRUE) {
        ssize_t n = write (fd, buf, MIB);

        if (n < 0 && errno == ENOSPC)
            break;
        if (n < 0)
            vmr_fail ("writing %s: %s", path, g_strerror (errno));
        written += (gsize) n;
        if (n == 0)
            break;
    }
    /* the last pages too: a write of less than a page may still have room */
    while (write (fd, buf, 512) > 0)
        written += 512;
    g_assert_cmpint (close (fd), ==, 0);
    g_test_message ("filled %s with %" G_GSIZE_FORMAT " bytes", dir, written);
}

/*
 * disk1's destination fills up while it copies: that member fails, and the
 * synced disk0 is cancelled with its group; the VM stays on both sources
 * and `migrate --wait` exits 1. With space-check = off: otherwise the copy
 * would be refused on so small a file system, or paused when it fills
 * (test-space.c)
 */
static void
test_member_fails (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Group) g = { 0 };
    g_autofree gchar *small_fs = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) synced = NULL;
    g_autoptr (JsonObject) failed = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    g_autoptr (VmrCliResult) waited = NULL;
    g_autoptr (GPtrArray) args = NULL;
    const gchar *const extra[] = { "--speed", GROUP_SPEED, "--wait", NULL };
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_TIME_SPAN_SECOND;
    VmrCliRun *run;
    g_autofree gchar *policy = NULL;

    policy = vmr_harness_write_policy (h, "[defaults]\nspace-check = off\n");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    /* room for the whole copy: it fails only once the test fills the file system */
    small_fs = vmr_harness_mount_tmpfs (h, "small-fs", 4 * SMALL_SIZE);
    if (small_fs == NULL)
        return;
    group_start_vm (h, &g, SMALL_SIZE, 2 * SMALL_SIZE, TRUE, small_fs);
    args = group_args (&g, extra);
    run = vmr_harness_cli_spawnv (h, (const gchar *const *) args->pdata);
    /* the jobs show up while that CLI waits */
    while (!find_members (h, &g)) {
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        g_usleep (100 * 1000);
    }
    copying = vmr_harness_wait_job (h, g.jobs[1], "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    group_write (&g);
    synced = vmr_harness_wait_job (h, g.jobs[0], "synced", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_waiting_for_group (h, &g, 0, 1);
    group_write (&g);

    fill_file_system (small_fs);
    failed = vmr_harness_wait_job (h, g.jobs[1], "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    cancelled = vmr_harness_wait_job (h, g.jobs[0], "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    g_test_message ("failed: %s; cancelled: %s", vmr_json_job_reason (failed),
                    vmr_json_job_reason (cancelled));
    g_assert_nonnull (vmr_json_job_reason (failed));
    g_assert_nonnull (strstr (vmr_json_job_reason (failed), g_strerror (ENOSPC)));
    /* the other member says it went with its group, and why */
    g_assert_nonnull (vmr_json_job_reason (cancelled));
    g_assert_nonnull (strstr (vmr_json_job_reason (cancelled), "group"));
    g_assert_nonnull (strstr (vmr_json_job_reason (cancelled), g.jobs[1]));
    vmr_harness_assert_job_record (h, g.jobs[1], "failed");
    vmr_harness_assert_job_record (h, g.jobs[0], "cancelled");

    waited = vmr_harness_cli_wait (run);
    g_assert_cmpint (waited->status, ==, 1);
    g_assert_true (g_str_has_prefix (waited->err, "virt-mirror: error: "));

    /* the VM stays on both sources, which take the guest's writes; QEMU let go of both destinations
     */
    group_write (&g);
    vmr_harness_assert_daemon_serving (h);
    vmr_harness_assert_no_block_jobs (h);
    for (guint i = 0; i < g.n; i++) {
        vmr_harness_assert_disk_on (h, g.ids[i], g.sources[i]);
        vmr_harness_assert_node_released (h, g.dests[i]);
        /* the daemon created them, so it removes them */
        g_assert_false (g_file_test (g.dests[i], G_FILE_TEST_EXISTS));
    }
    vmr_harness_quit_qemu (h);
    for (guint i = 0; i < g.n; i++)
        vmr_harness_assert_image_equals (g.sources[i], "raw", g.expected[i]);
    vmr_harness_unmount_tmpfs (h);
}

/* nothing was submitted: no job, no destination, no node or block job in QEMU */
static void
assert_nothing_created (VmrHarness *h, Group *g)
{
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    vmr_harness_assert_no_block_jobs (h);
    for (guint i = 0; i < g->n; i++) {
        g_assert_false (g_file_test (g->dests[i], G_FILE_TEST_EXISTS));
        vmr_harness_assert_node_released (h, g->dests[i]);
        vmr_harness_assert_disk_on (h, g->ids[i], g->sources[i]);
    }
}

/* malformed groups are refused with one error line and change nothing */
static void
test_bad_input (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Group) g = { 0 };
    g_autoptr (VmrCliResult) odd = NULL;
    g_autoptr (VmrCliResult) same_disk = NULL;
    g_autoptr (VmrCliResult) same_node = NULL;
    g_autoptr (VmrCliResult) same_dest = NULL;
    g_autoptr (VmrCliResult) ok = NULL;

    group_start_vm (h, &g, SMALL_SIZE, SMALL_SIZE, FALSE, NULL);

    /* a disk without a destination: a usage error */
    odd = vmr_harness_cli (h, "migrate", "vm", "disk0", g.dests[0], "disk1", NULL);
    vmr_cli_result_assert_error (odd, 2);
    assert_nothing_created (h, &g);

    /* one disk twice */
    same_disk
        = vmr_harness_cli (h, "migrate", "vm", "disk0", g.dests[0], "disk0", g.dests[1], NULL);
    vmr_cli_result_assert_error (same_disk, 1);
    assert_nothing_created (h, &g);

    /* one disk twice, by its device and by its node (the harness names it test-fmt0) */
    same_node
        = vmr_harness_cli (h, "migrate", "vm", "disk0", g.dests[0], "test-fmt0", g.dests[1], NULL);
    vmr_cli_result_assert_error (same_node, 1);
    assert_nothing_created (h, &g);

    /* one destination twice */
    same_dest
        = vmr_harness_cli (h, "migrate", "vm", "disk0", g.dests[0], "disk1", g.dests[0], NULL);
    vmr_cli_result_assert_error (same_dest, 1);
    assert_nothing_created (h, &g);

    /* the daemon still takes a well-formed group afterwards */
    ok = vmr_harness_cli (h, "migrate", "vm", "disk0", g.dests[0], "disk1", g.dests[1], "--wait",
                          NULL);
    vmr_cli_result_assert_ok (ok);
    g_assert_true (find_members (h, &g));
    for (guint i = 0; i < g.n; i++) {
        g_autofree gchar *state = get_state (h, g.jobs[i]);

        g_assert_cmpstr (state, ==, "completed");
        /* a line per member */
        g_assert_nonnull (strstr (ok->out, g.jobs[i]));
    }
    assert_jobs_list_group (h, &g);
    assert_group_migrated (h, &g);
}

/*
 * QEMU killed while the daemon pivots: the pivot is sent (QEMU stopped with
 * SIGSTOP first, so that it cannot answer), the job is `pivoting`, then
 * SIGKILL. QEMU never took the pivot: the VM is on its sources alone, each
 * holding every write; each job failed with a reason that says so and names
 * the source; no destination file is left; the daemon serves on. With
 * @user_data 1, a single disk's job (disk1 is not copied); with 2, a group.
 */
static void
test_qemu_killed_during_pivot (VmrHarness *h, gconstpointer user_data)
{
    guint copied = GPOINTER_TO_UINT (user_data);
    g_auto (Group) g = { 0 };
    const gchar *const extra[] = { "--manual-pivot", NULL };
    VmrCliRun *run;
    g_autoptr (VmrCliResult) pivot = NULL;

    group_start_vm (h, &g, SMALL_SIZE, SMALL_SIZE, TRUE, NULL);
    if (copied == 1)
        g.jobs[0] = vmr_harness_migrate (h, "vm", "disk0", g.dests[0], "--manual-pivot", NULL);
    else
        group_migrate (h, &g, extra);
    group_write (&g);
    for (guint i = 0; i < copied; i++)
        json_object_unref (
            vmr_harness_wait_job (h, g.jobs[i], "synced", VMR_HARNESS_JOB_TIMEOUT_S));
    /* in sync, every write on both sides */
    group_write (&g);

    g_assert_cmpint (kill (h->qemu_pid, SIGSTOP), ==, 0);
    run = vmr_harness_cli_spawn (h, "pivot", g.jobs[0], NULL);
    for (guint i = 0; i < copied; i++)
        json_object_unref (
            vmr_harness_wait_job (h, g.jobs[i], "pivoting", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_kill_qemu (h);
    pivot = vmr_harness_cli_wait (run);
    g_test_message ("pivot: %s", pivot->err);
    vmr_cli_result_assert_error (pivot, 1);

    for (guint i = 0; i < copied; i++) {
        g_autoptr (JsonObject) final
            = vmr_harness_wait_job (h, g.jobs[i], "failed", VMR_HARNESS_JOB_TIMEOUT_S);
        const gchar *reason = vmr_harness_json_string (final, "reason");

        g_test_message ("%s failed: %s", g.jobs[i], reason);
        if (strstr (reason, "before QEMU took the pivot") == NULL
            || strstr (reason, g.sources[i]) == NULL)
            vmr_fail ("%s: the reason does not say that the VM stays on %s: %s", g.jobs[i],
                      g.sources[i], reason);
        vmr_harness_assert_job_record (h, g.jobs[i], "failed");
        if (g_file_test (g.dests[i], G_FILE_TEST_EXISTS))
            vmr_fail ("%s: the destination %s is left, and the VM does not use it", g.jobs[i],
                      g.dests[i]);
    }
    /* the VM's side: its sources, with every write it made */
    for (guint i = 0; i < g.n; i++)
        vmr_harness_assert_image_equals (g.sources[i], "raw", g.expected[i]);
    vmr_harness_assert_daemon_serving (h);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/group/cutover", NULL, test_cutover);
    VMR_HARNESS_ADD ("/group/manual-pivot", NULL, test_manual_pivot);
    VMR_HARNESS_ADD_NO_DAEMON ("/group/member-fails", NULL, test_member_fails);
    VMR_HARNESS_ADD ("/group/bad-input", NULL, test_bad_input);
    VMR_HARNESS_ADD ("/group/qemu-killed-during-pivot/single", GUINT_TO_POINTER (1),
                     test_qemu_killed_during_pivot);
    VMR_HARNESS_ADD ("/group/qemu-killed-during-pivot/group", GUINT_TO_POINTER (2),
                     test_qemu_killed_during_pivot);
    return g_test_run ();
}
