#define G_LOG_DOMAIN "vmr-test"

/*
 * Admission limits against a real QEMU: four disks migrated at once, the
 * copies slowed so that they overlap, under max-parallel and under
 * max-parallel-per-iothread, with disks on one I/O thread and a disk whose
 * queues are spread over two. The test's own monitor polls query-block-jobs
 * all along and never sees more bulk copies (mirror jobs not yet ready)
 * than the limit allows, on the host or on any I/O thread; the jobs that
 * wait say which limit holds them; they start in the order they were
 * submitted, each once a copy ahead of it is in sync; every destination
 * holds the bytes of its source.
 */

#include "harness.h"

/* a copy at 1 MiB/s runs for about 4 s: long enough for the held jobs to be
 * asked about and for the monitor to see copies overlap, in a few polls */
#define IMAGE_SIZE         (4 * 1024 * 1024)
#define N_DISKS            4
#define ALL_DONE_TIMEOUT_S 80

typedef struct {
    const gchar *policy;
    const gchar *limit;            /* the key that must hold the waiting jobs */
    guint max_running;             /* bulk copies QEMU may run at once */
    gboolean per_iothread;         /* count per I/O thread instead of on the whole host */
    const gchar *threads[N_DISKS]; /* each disk's I/O threads: "io0", or "io0,io1" for a
                                    * per-queue mapping */
    guint waiting[N_DISKS];        /* which jobs (by submission) must wait at first */
    guint starts_after[N_DISKS];   /* job i starts once job starts_after[i] - 1 is in sync */
    guint used;                    /* bulk copies on the host at once, at least, at some time */
} ScheduleCase;

/* two slots for four copies: the third and fourth wait */
static const ScheduleCase two_on_host = {
    "[defaults]\nmax-parallel = 2\nmax-parallel-per-iothread = 0\n",
    "max-parallel",
    2,
    FALSE,
    { "io0", "io0", "io1", "io1" },
    { 0, 0, 1, 1 },
    { 0, 0, 0, 0 },
    2,
};

/* disk0 and disk1 on io0, disk2 and disk3 on io1: one copy per I/O thread */
static const ScheduleCase one_per_iothread = {
    "[defaults]\nmax-parallel-per-iothread = 1\n",
    "max-parallel-per-iothread",
    1,
    TRUE,
    { "io0", "io0", "io1", "io1" },
    { 0, 1, 0, 1 },
    { 0, 1, 0, 3 },
    2,
};

/* disk0's queues on io0 and io1: it holds both threads; disk3 on io2 goes ahead */
static const ScheduleCase queue_mapping = {
    "[defaults]\nmax-parallel-per-iothread = 1\n",
    "max-parallel-per-iothread",
    1,
    TRUE,
    { "io0,io1", "io0", "io1", "io2" },
    { 0, 1, 1, 0 },
    { 0, 1, 1, 0 },
    2,
};

static const gchar *const disk_ids[N_DISKS] = { "disk0", "disk1", "disk2", "disk3" };

/* the job @id in a `jobs --json` list */
static JsonObject *
find_job (JsonNode *jobs, const gchar *id)
{
    JsonArray *array = vmr_harness_json_node_array (jobs);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_harness_json_string (job, "id"), id) == 0)
            return job;
    }
    vmr_fail ("job %s is not in the list", id);
}

/*
 * The bulk copies QEMU runs now (mirror jobs not yet ready: a ready one only
 * follows the guest's writes): on the whole host, or the most on one I/O
 * thread, a disk on several threads counted on each. Block jobs are named
 * after our job ids.
 */
static guint
count_block_jobs (VmrHarness *h, const ScheduleCase *c, gchar **ids, guint *out_total)
{
    g_autoptr (JsonNode) reply = vmr_harness_qmp (h, "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (reply);
    g_autoptr (GHashTable) per_thread
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    GHashTableIter iter;
    gpointer count;
    guint most = 0;

    *out_total = 0;
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);
        const gchar *device = vmr_harness_json_string (job, "device");

        if (vmr_json_bool_or (job, "ready", FALSE))
            continue;
        (*out_total)++;
        for (guint d = 0; d < N_DISKS; d++) {
            g_auto (GStrv) threads = g_strsplit (c->threads[d], ",", -1);

            if (g_strcmp0 (device, ids[d]) != 0)
                continue;
            for (guint t = 0; threads[t] != NULL; t++) {
                const gchar *key = c->per_iothread ? threads[t] : "host";
                guint n = GPOINTER_TO_UINT (g_hash_table_lookup (per_thread, key));

                g_hash_table_replace (per_thread, g_strdup (key), GUINT_TO_POINTER (n + 1));
                if (!c->per_iothread)
                    break;
            }
        }
    }
    g_hash_table_iter_init (&iter, per_thread);
    while (g_hash_table_iter_next (&iter, NULL, &count))
        most = MAX (most, GPOINTER_TO_UINT (count));
    return most;
}

/* the jobs the limit holds are queued, and say why: in their record and in the table */
static void
assert_held_say_why (VmrHarness *h, const ScheduleCase *c, gchar **ids)
{
    g_autoptr (JsonNode) jobs = NULL;
    g_autoptr (VmrCliResult) table = NULL;

    jobs = vmr_harness_cli_json (h, "jobs", NULL);
    table = vmr_harness_cli (h, "jobs", NULL);
    vmr_cli_result_assert_ok (table);
    for (guint d = 0; d < N_DISKS; d++) {
        JsonObject *job = find_job (jobs, ids[d]);
        JsonObject *decision = vmr_harness_json_object (job, "policy");

        if (!c->waiting[d]) {
            g_assert_true (vmr_harness_json_is_null (job, "waiting-for"));
            g_assert_cmpstr (vmr_harness_json_string (job, "state"), !=, "queued");
            continue;
        }
        g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "queued");
        g_assert_cmpstr (vmr_harness_json_string (job, "waiting-for"), ==, c->limit);
        g_assert_cmpstr (vmr_harness_json_string (decision, "decision"), ==, "wait");
        g_assert_true (g_str_has_prefix (vmr_harness_json_string (decision, "reason"), "held by "));
        g_assert_nonnull (strstr (vmr_harness_json_string (decision, "reason"), c->limit));
    }
    {
        g_autofree gchar *column = g_strdup_printf ("queued (%s)", c->limit);

        g_assert_nonnull (strstr (table->out, column));
    }
}

/*
 * QEMU's side, polled until every job has ended: never more than the limit at
 * once; returns the most mirror jobs seen in QEMU at once
 */
static guint
wait_all_completed (VmrHarness *h, const ScheduleCase *c, gchar **ids)
{
    guint most_seen = 0;
    gint64 deadline;
    gboolean done = FALSE;

    deadline = g_get_monotonic_time () + ALL_DONE_TIMEOUT_S * G_USEC_PER_SEC;
    while (!done) {
        guint total = 0;
        guint running = count_block_jobs (h, c, ids, &total);
        g_autoptr (JsonNode) now = NULL;

        if (running > c->max_running)
            vmr_fail ("%u mirror jobs at once in QEMU, the limit is %u", running, c->max_running);
        most_seen = MAX (most_seen, total);
        now = vmr_harness_cli_json (h, "jobs", NULL);
        done = TRUE;
        for (guint d = 0; d < N_DISKS; d++) {
            const gchar *state = vmr_harness_json_string (find_job (now, ids[d]), "state");

            if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
                vmr_fail ("job %s ended %s", ids[d], state);
            done = done && g_str_equal (state, "completed");
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the jobs did not all complete in %d s", ALL_DONE_TIMEOUT_S);
        g_usleep (100 * 1000);
    }
    return most_seen;
}

/* first in, first out; a held job starts only once a copy ahead of it is in sync */
static void
assert_start_order (VmrHarness *h, const ScheduleCase *c, gchar **ids)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);

    for (guint d = 0; d < N_DISKS; d++) {
        JsonObject *job = find_job (jobs, ids[d]);
        gint64 started = vmr_json_job_first_time (job, "copying");

        g_assert_cmpint (started, >, 0);
        /* jobs held in one line start in order; other lines go on their own */
        if (d > 0 && !c->per_iothread)
            g_assert_cmpint (started, >=,
                             vmr_json_job_first_time (find_job (jobs, ids[d - 1]), "copying"));
        if (c->starts_after[d] > 0) {
            JsonObject *ahead = find_job (jobs, ids[c->starts_after[d] - 1]);

            g_assert_cmpint (started, >=, vmr_json_job_first_time (ahead, "synced"));
        }
        if (c->waiting[d] && !c->per_iothread) {
            /* one of the first two copies was in sync */
            gint64 first_end = MIN (vmr_json_job_first_time (find_job (jobs, ids[0]), "synced"),
                                    vmr_json_job_first_time (find_job (jobs, ids[1]), "synced"));

            g_assert_cmpint (started, >=, first_end);
        }
    }
}

static void
test_schedule (VmrHarness *h, gconstpointer user_data)
{
    const ScheduleCase *c = user_data;
    g_autofree gchar *policy = NULL;
    gchar *sources[N_DISKS] = { NULL };
    gchar *expected[N_DISKS] = { NULL };
    gchar *dests[N_DISKS] = { NULL };
    gchar *ids[N_DISKS + 1] = { NULL };
    VmrHarnessDisk disks[N_DISKS];
    GStrv mappings[N_DISKS] = { NULL };

    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", d);
        g_autofree gchar *dest_name = g_strdup_printf ("dest%u.raw", d);

        sources[d] = vmr_harness_create_image (h, name, "raw", IMAGE_SIZE, 0x5c0 + d);
        expected[d] = vmr_harness_expected_path (sources[d]);
        dests[d] = vmr_harness_path (h, dest_name);
        if (strchr (c->threads[d], ',') != NULL) {
            mappings[d] = g_strsplit (c->threads[d], ",", -1);
            disks[d] = (VmrHarnessDisk){ disk_ids[d], sources[d], "raw", NULL,
                                         (const gchar *const *) mappings[d] };
        } else {
            disks[d] = (VmrHarnessDisk){ disk_ids[d], sources[d], "raw", c->threads[d] };
        }
    }
    policy = vmr_harness_write_policy (h, c->policy);
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");

    /* all at once: the ones the limit holds are queued, and say why */
    for (guint d = 0; d < N_DISKS; d++)
        ids[d] = vmr_harness_migrate (h, "vm", disk_ids[d], dests[d], "--speed",
                                      VMR_HARNESS_SLOW_SPEED, NULL);
    assert_held_say_why (h, c, ids);
    /* the limit was used, not merely never exceeded */
    g_assert_cmpuint (wait_all_completed (h, c, ids), >=, c->used);
    assert_start_order (h, c, ids);

    /* every disk on its destination, with the bytes of its source */
    for (guint d = 0; d < N_DISKS; d++) {
        vmr_harness_assert_disk_on (h, disk_ids[d], dests[d]);
        vmr_harness_assert_node_released (h, sources[d]);
        vmr_harness_assert_job_record (h, ids[d], "completed");
    }
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    for (guint d = 0; d < N_DISKS; d++) {
        vmr_harness_assert_image_equals (dests[d], "raw", expected[d]);
        g_free (sources[d]);
        g_free (expected[d]);
        g_free (dests[d]);
        g_free (ids[d]);
        g_strfreev (mappings[d]);
    }
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/schedule/max-parallel", &two_on_host, test_schedule);
    VMR_HARNESS_ADD_NO_DAEMON ("/schedule/per-iothread", &one_per_iothread, test_schedule);
    VMR_HARNESS_ADD_NO_DAEMON ("/schedule/queue-mapping", &queue_mapping, test_schedule);
    return g_test_run ();
}
