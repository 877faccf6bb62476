#define G_LOG_DOMAIN "vmr-test"

/*
 * A storage's bandwidth budget against a real QEMU: three disks copied at
 * once into a [storage] with a 60 MiB/s budget, the policy asking for no
 * cap at all. The test's own monitor polls query-block-jobs all along: the
 * speeds QEMU holds for the copies that still move data never add up to more
 * than the budget, and none is ever unlimited; while the three run, each has
 * a third and its reason names the budget; when the small disk's copy ends,
 * the other two hold half each within two load samples. The daemon's own
 * speed series (query-job-series) says the same at every sample, and every
 * destination holds the bytes of its source.
 */

#include "harness.h"

#include <glib/gstdio.h>

#define BUDGET       (60 * 1024 * 1024)
#define SAMPLE_S     1
#define N_DISKS      3
#define DONE_TIMEOUT 60

/*
 * the first copy ends first, at a third of the budget (2 s); the others then
 * have 80 MiB or more left and take half each
 */
static const gsize image_sizes[N_DISKS]
    = { 40 * 1024 * 1024, 160 * 1024 * 1024, 160 * 1024 * 1024 };
static const gchar *const disk_ids[N_DISKS] = { "disk0", "disk1", "disk2" };

/* what the poll of QEMU saw */
typedef struct {
    guint64 most;          /* the largest sum of speeds at one time */
    gboolean saw_thirds;   /* the three at a third each, at one time */
    gint64 first_ended_us; /* when the first copy no longer moved data, 0 before */
    gint64 halves_us;      /* when the other two first held half each after it, 0 before */
} BudgetSeen;

/* whether a QEMU mirror job with @status still copies (a job told to complete copies no more) */
static gboolean
moves_data (const gchar *status)
{
    return g_str_equal (status, "created") || g_str_equal (status, "running")
           || g_str_equal (status, "paused") || g_str_equal (status, "ready")
           || g_str_equal (status, "standby");
}

/*
 * One look at QEMU: the speed of each copy of @ids (NULL: none known yet)
 * that moves data, 0 for none; returns the sum over every copy that moves
 * data, and fails on one that runs unlimited or a sum over the budget.
 */
static guint64
poll_speeds (VmrHarness *h, gchar **ids, guint64 speeds[N_DISKS])
{
    g_autoptr (JsonNode) reply = vmr_harness_qmp (h, "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (reply);
    guint64 sum = 0;

    for (guint d = 0; d < N_DISKS; d++)
        speeds[d] = 0;
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);
        const gchar *device = vmr_harness_json_string (job, "device");
        guint64 speed = (guint64) vmr_harness_json_int (job, "speed");

        if (!moves_data (vmr_harness_json_string (job, "status")))
            continue;
        if (speed == 0)
            vmr_fail ("copy %s runs unlimited under a budget", device);
        sum += speed;
        for (guint d = 0; ids != NULL && d < N_DISKS; d++) {
            if (g_strcmp0 (device, ids[d]) == 0)
                speeds[d] = speed;
        }
    }
    if (sum > BUDGET)
        vmr_fail ("the speeds set in QEMU add up to %" G_GUINT64_FORMAT " bytes/s, over the budget",
                  sum);
    return sum;
}

/*
 * The three copies asked for at once, QEMU watched while they start (each
 * one that joins lowers the others first); returns the jobs' ids
 */
static void
migrate_all (VmrHarness *h, gchar **dests, gchar **ids, BudgetSeen *seen)
{
    VmrCliRun *runs[N_DISKS];
    guint64 speeds[N_DISKS];
    gboolean running = TRUE;

    for (guint d = 0; d < N_DISKS; d++)
        runs[d] = vmr_harness_cli_spawn (h, "--json", "migrate", "vm", disk_ids[d], dests[d], NULL);
    while (running) {
        guint64 sum = poll_speeds (h, NULL, speeds);

        seen->most = MAX (seen->most, sum);
        running = FALSE;
        for (guint d = 0; d < N_DISKS; d++)
            running = running || !vmr_harness_cli_run_exited (runs[d]);
        g_usleep (20 * 1000);
    }
    for (guint d = 0; d < N_DISKS; d++) {
        g_autoptr (VmrCliResult) result = vmr_harness_cli_wait (runs[d]);
        g_autoptr (JsonNode) job = NULL;

        vmr_cli_result_assert_ok (result);
        job = vmr_cli_result_parse_json (result);
        ids[d] = g_strdup (vmr_harness_json_string (vmr_harness_json_node_object (job), "id"));
    }
}

/* the reason of the job @id names the budget shared by three copies */
static void
assert_reason_names_budget (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);
    const gchar *reason = json_object_get_string_member_with_default (
        vmr_harness_json_object (job, "policy"), "reason", NULL);

    if (reason == NULL || strstr (reason, "budget: array-a 60 MiB/s shared by 3 copies") == NULL)
        vmr_fail ("job %s: the reason does not name the budget: %s", id, reason);
}

static gboolean
all_completed (VmrHarness *h, gchar **ids)
{
    gboolean done = TRUE;

    for (guint d = 0; d < N_DISKS; d++) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, ids[d]);
        const gchar *state = vmr_json_job_state (job);

        if (g_str_equal (state, "failed") || g_str_equal (state, "cancelled"))
            vmr_fail ("job %s ended %s: %s", ids[d], state, vmr_json_job_reason (job));
        done = done && g_str_equal (state, "completed");
    }
    return done;
}

/* polls QEMU until every job completed; fails at a sum over the budget */
static void
watch_speeds (VmrHarness *h, gchar **ids, BudgetSeen *seen)
{
    gint64 deadline = g_get_monotonic_time () + DONE_TIMEOUT * G_USEC_PER_SEC;
    gboolean reasons_checked = FALSE;

    while (!all_completed (h, ids)) {
        guint64 speeds[N_DISKS];
        gint64 now = g_get_monotonic_time ();

        guint64 sum = poll_speeds (h, ids, speeds);

        seen->most = MAX (seen->most, sum);
        if (speeds[0] > 0 && speeds[0] == BUDGET / 3 && speeds[1] == BUDGET / 3
            && speeds[2] == BUDGET / 3) {
            seen->saw_thirds = TRUE;
            if (!reasons_checked) {
                for (guint d = 0; d < N_DISKS; d++)
                    assert_reason_names_budget (h, ids[d]);
                reasons_checked = TRUE;
            }
        }
        if (seen->saw_thirds && seen->first_ended_us == 0 && speeds[0] == 0)
            seen->first_ended_us = now;
        if (seen->first_ended_us != 0 && seen->halves_us == 0 && speeds[1] == BUDGET / 2
            && speeds[2] == BUDGET / 2)
            seen->halves_us = now;
        if (now > deadline)
            vmr_fail ("the copies did not all complete in %d s", DONE_TIMEOUT);
        g_usleep (20 * 1000);
    }
}

/*
 * The daemon's speed series: at each of its samples, the speeds of the
 * copies that moved data then add up to no more than the budget, none 0
 */
static void
assert_series_under_budget (VmrHarness *h, gchar **ids)
{
    JsonArray *series[N_DISKS];
    guint checked = 0;

    for (guint d = 0; d < N_DISKS; d++)
        series[d] = vmr_harness_job_series_points (h, ids[d]);
    for (guint d = 0; d < N_DISKS; d++) {
        for (guint p = 0; p < json_array_get_length (series[d]); p++) {
            gint64 time = vmr_harness_json_int (vmr_harness_json_element (series[d], p), "time");
            guint64 sum = 0;

            /* each copy's point of the same sample: the domain's jobs are sampled together */
            for (guint o = 0; o < N_DISKS; o++) {
                for (guint q = 0; q < json_array_get_length (series[o]); q++) {
                    JsonObject *point = vmr_harness_json_element (series[o], q);
                    const gchar *state = vmr_harness_json_string (point, "state");
                    gint64 t = vmr_harness_json_int (point, "time");

                    if (ABS (t - time) > G_USEC_PER_SEC / 4 || g_str_equal (state, "completed"))
                        continue;
                    if (vmr_harness_json_int (point, "speed") == 0)
                        vmr_fail ("job %s: its series shows an unlimited speed", ids[o]);
                    sum += (guint64) vmr_harness_json_int (point, "speed");
                }
            }
            if (sum > BUDGET)
                vmr_fail ("the daemon's speed series adds up to %" G_GUINT64_FORMAT " bytes/s",
                          sum);
            checked++;
        }
    }
    g_assert_cmpuint (checked, >, 0);
    for (guint d = 0; d < N_DISKS; d++)
        json_array_unref (series[d]);
}

static void
test_budget_shared (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *array_dir = vmr_harness_path (h, "array");
    g_autofree gchar *policy_text = NULL;
    g_autofree gchar *policy = NULL;
    gchar *sources[N_DISKS], *expected[N_DISKS], *dests[N_DISKS], *ids[N_DISKS];
    VmrHarnessDisk disks[N_DISKS];
    BudgetSeen seen = { 0 };

    (void) user_data;
    g_assert_cmpint (g_mkdir (array_dir, 0755), ==, 0);
    for (guint d = 0; d < N_DISKS; d++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", d);
        g_autofree gchar *dest_name = g_strdup_printf ("array/dest%u.raw", d);

        sources[d] = vmr_harness_create_image (h, name, "raw", image_sizes[d], 0xb0d + d);
        expected[d] = vmr_harness_expected_path (sources[d]);
        dests[d] = vmr_harness_path (h, dest_name);
        disks[d] = (VmrHarnessDisk){ disk_ids[d], sources[d], "raw", NULL };
    }
    policy_text = g_strdup_printf ("[defaults]\nmax-parallel = 3\nmax-parallel-per-iothread = 0\n"
                                   "sample-interval = %ds\n"
                                   "[storage array-a]\npaths = %s\nbudget = 60M\n",
                                   SAMPLE_S, array_dir);
    policy = vmr_harness_write_policy (h, policy_text);
    vmr_harness_start_qemu (h, disks, N_DISKS);
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    vmr_harness_attach (h, "vm");

    /* the policy asks for no cap: the budget alone sets the speeds */
    migrate_all (h, dests, ids, &seen);
    watch_speeds (h, ids, &seen);

    /* the budget was used, not merely never exceeded */
    g_assert_true (seen.saw_thirds);
    g_assert_cmpuint (seen.most, ==, BUDGET);
    if (seen.halves_us == 0)
        vmr_fail ("after the first copy ended, the other two never held half the budget each");
    g_assert_cmpint (seen.halves_us - seen.first_ended_us, <=, 2 * SAMPLE_S * G_USEC_PER_SEC);
    g_test_message ("the others took the ended copy's share %.3f s after it ended",
                    (gdouble) (seen.halves_us - seen.first_ended_us) / G_USEC_PER_SEC);
    assert_series_under_budget (h, ids);

    for (guint d = 0; d < N_DISKS; d++) {
        vmr_harness_assert_disk_on (h, disk_ids[d], dests[d]);
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
    }
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/budget/shared", NULL, test_budget_shared);
    return g_test_run ();
}
