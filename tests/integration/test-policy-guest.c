#define G_LOG_DOMAIN "vmr-test"

/*
 * The policy against real load: the test guest (tests/guest) runs fio on its
 * disk while the daemon, started with a small policy file of the test's own,
 * delays, throttles, pauses and resumes the copy of that disk. The
 * thresholds are set from the guest's own rate, measured in each run, so
 * that the tests hold on a loaded machine; the job's state is checked at
 * chosen points, and the daemon's history of the job proves it between them.
 *
 * Every migration is checked byte for byte: a load guest only reads
 * (vmr.rw=randread), so the destination must hold the source's pattern;
 * the verify guest checks its own writes after the pivot, and the test the
 * rest of the disk.
 *
 * When its load ends the guest stays up and idle (vmr.then=idle): the
 * policy sees a running VM whose disk has gone quiet. (A guest that powers
 * off instead leaves a stopped VM, QEMU runs with -no-shutdown: just as
 * quiet.)
 */

#include "policy-fixture.h"

#include <stdio.h>
#include <string.h>

/* ---- a busy guest delays, throttles, pauses ---- */

/*
 * A guest busy above iops-delay: the job waits in `delayed`, nothing in
 * QEMU, until the load has ended and hold has passed; then it copies and
 * completes.
 */
static void
test_delay_while_busy (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 1s\n"
                                  "iops-delay = THRESHOLD\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 7, "randread", NULL, "idle" };
    g_auto (GuestCopy) c = { 0 };
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autofree gchar *named = NULL;
    gint64 started;

    if (!vmr_harness_require_guest (h))
        return;
    busy_copy_start (h, &c, &load, policy);
    job = vmr_harness_get_job (h, c.id);
    g_assert_cmpstr (job_state (job), ==, "delayed");
    g_assert_cmpstr (policy_decision (job), ==, "delay");
    /* the reason names the load and the threshold */
    named = g_strdup_printf ("iops-delay %u", c.threshold);
    assert_contains (policy_reason (job), named, "the policy's reason");
    assert_contains (policy_reason (job), "IOPS", "the policy's reason");
    /* a delayed copy has not started: nothing in QEMU, nothing at the destination */
    vmr_harness_assert_no_block_jobs (h);
    g_assert_false (g_file_test (c.dest, G_FILE_TEST_EXISTS));

    assert_state_at_points (h, c.id, "delayed", -1, load_end (h, load.runtime_s));
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 60);
    note_guest_load (h);
    final = vmr_harness_wait_job (h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "delayed", "copying", "synced", "completed", NULL);
    assert_left_after (final, "delayed", done->real_us);
    /* the copy started once the load was over and the hold had passed */
    started = history_time (final, "copying");
    g_test_message ("copy started %.1f s after VMR-DONE",
                    (gdouble) (started - done->real_us) / G_USEC_PER_SEC);
    g_assert_cmpint (started, >=, done->real_us - G_USEC_PER_SEC);
    vmr_harness_assert_migrated (h, c.id, "disk0", c.source, c.dest, "raw", c.expected);
}

/*
 * A guest between iops-throttle and iops-delay: the copy runs at
 * throttle-speed (in QEMU too) while the load lasts, and at the policy's
 * speed once the load has ended and hold has passed.
 */
static void
test_throttle_while_busy (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 1s\n"
                                  "speed = 16M\n"
                                  "iops-throttle = THRESHOLD\n"
                                  "throttle-speed = 1M\n"
                                  "iops-delay = 100000\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 7, "randread", NULL, "idle" };
    g_auto (GuestCopy) c = { 0 };
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (JsonObject) throttled = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autofree gchar *named = NULL;
    gint64 unthrottled;

    if (!vmr_harness_require_guest (h))
        return;
    busy_copy_start (h, &c, &load, policy);
    throttled = vmr_harness_wait_job (h, c.id, "throttled", 15);
    named = g_strdup_printf ("iops-throttle %u", c.threshold);
    assert_contains (policy_reason (throttled), named, "the policy's reason");
    g_assert_cmpint (vmr_harness_json_int (throttled, "speed"), ==, 1 * MIB);
    g_assert_cmpint (vmr_harness_json_int (job_policy (throttled), "base-speed"), ==, 16 * MIB);
    g_assert_cmpint (block_job_speed (h), ==, 1 * MIB);

    assert_state_at_points (h, c.id, "throttled", 1 * MIB, load_end (h, load.runtime_s));
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 60);
    note_guest_load (h);
    copying = vmr_harness_wait_job (h, c.id, "copying", 30);
    g_assert_cmpstr (policy_decision (copying), ==, "unthrottle");
    g_assert_cmpint (vmr_harness_json_int (copying, "speed"), ==, 16 * MIB);
    g_assert_cmpint (block_job_speed (h), ==, 16 * MIB);
    unthrottled = history_time (copying, "copying");
    g_test_message ("back to full speed %.1f s after VMR-DONE",
                    (gdouble) (unthrottled - done->real_us) / G_USEC_PER_SEC);
    g_assert_cmpint (unthrottled, >=, done->real_us - G_USEC_PER_SEC);

    final = vmr_harness_wait_job (h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "throttled", "copying", "synced", "completed", NULL);
    assert_left_after (final, "throttled", done->real_us);
    vmr_harness_assert_migrated (h, c.id, "disk0", c.source, c.dest, "raw", c.expected);
}

/*
 * A copy that started while the guest was still booting is paused (in
 * QEMU) when the guest's load goes above iops-delay, and resumed once the
 * load has ended and hold has passed.
 */
static void
test_pause_while_busy (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 1s\n"
                                  "iops-delay = 200\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 7, "randread", NULL, "idle" };
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (JsonObject) resumed = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) speed = NULL;
    gint64 resumed_at;

    if (!vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, policy));
    source = boot_guest (h, &load, DISK_SIZE);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    /* slowed, so that the copy outlasts the boot and the load */
    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--speed", VMR_HARNESS_SLOW_SPEED, NULL);
    copying = vmr_harness_wait_job (h, id, "copying", 30);
    g_test_message ("copying while the guest boots: %s", vmr_harness_guest_has_line (h, "VMR-IOPS")
                                                             ? "no, the load had started"
                                                             : "yes");

    paused = vmr_harness_wait_job (h, id, "paused", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S + 30);
    g_assert_cmpstr (policy_decision (paused), ==, "pause");
    assert_contains (policy_reason (paused), "iops-delay 200", "the policy's reason");
    g_assert_false (vmr_harness_json_bool (job_policy (paused), "user-paused"));
    g_assert_true (block_job_paused (h));
    g_assert_cmpint (vmr_harness_json_int (vmr_harness_json_object (paused, "progress"), "done"), >,
                     0);

    assert_state_at_points (h, id, "paused", -1, load_end (h, load.runtime_s));
    g_assert_true (block_job_paused (h));
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 60);
    note_guest_load (h);
    resumed = vmr_harness_wait_job (h, id, "copying", 30);
    g_assert_cmpstr (policy_decision (resumed), ==, "resume");
    g_assert_false (block_job_paused (h));
    resumed_at = history_time (resumed, "copying");
    g_test_message ("resumed %.1f s after VMR-DONE",
                    (gdouble) (resumed_at - done->real_us) / G_USEC_PER_SEC);
    g_assert_cmpint (resumed_at, >=, done->real_us - G_USEC_PER_SEC);

    /* the rest at full speed, not to wait two minutes */
    speed = vmr_harness_cli (h, "set-speed", id, "0", NULL);
    vmr_cli_result_assert_ok (speed);
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "copying", "paused", "copying", "synced", "completed", NULL);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* ---- thresholds near the guest's rate ---- */

/* a rate the guest keeps on a loaded machine, so that its rate holds near its mean */
#define STEADY_IOPS 200

/*
 * The policies of the case below: @threshold_key at THRESHOLD, samples every
 * @interval, a copy at 2 MiB/s, slowed to 1 MiB/s, resumed after 1 s under
 * @resume_below percent
 */
static gchar *
near_rate_policy (const gchar *interval, const gchar *threshold_key, guint resume_below)
{
    return g_strdup_printf ("[defaults]\nsample-interval = %s\nspeed = 2M\n"
                            "%s = THRESHOLD\nthrottle-speed = 1M\n"
                            "resume-below = %u%%\nhold = 1s\n",
                            interval, threshold_key, resume_below);
}

/* @policy_text with the guest's @rate times @factor for THRESHOLD, reloaded */
static guint
reload_near_rate (VmrHarness *h, const gchar *policy_text, gdouble rate, gdouble factor)
{
    guint threshold = (guint) (rate * factor + 0.5);

    reload_policy_with (h, policy_text, threshold);
    return threshold;
}

/*
 * @n more samples of the job @id, each in @state and with the guest busy
 * (at least a quarter of @rate); printed with @what
 */
static void
assert_next_samples (VmrHarness *h, const gchar *id, guint n, const gchar *state, gdouble rate,
                     const gchar *what)
{
    g_autoptr (JsonArray) points = vmr_harness_wait_job_samples (h, id, n);
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint i = 0; i < json_array_get_length (points); i++)
        g_string_append_printf (
            text, " %.0f",
            json_object_get_double_member (vmr_harness_json_element (points, i), "iops"));
    g_test_message ("%s: %s at%s IOPS", what, state, text->str);
    for (guint i = 0; i < json_array_get_length (points); i++) {
        if (json_object_get_double_member (vmr_harness_json_element (points, i), "iops") < rate / 4)
            vmr_fail ("%s: the guest was not busy:%s", what, text->str);
    }
    vmr_harness_assert_samples_state (points, state);
}

/* the job's history enters @state @count times */
static void
assert_entered (JsonObject *job, const gchar *state, guint count)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    guint entered = 0;

    g_assert_nonnull (history);
    for (guint i = 0; i < json_array_get_length (history); i++) {
        if (g_strcmp0 (vmr_harness_json_string (vmr_harness_json_element (history, i), "state"),
                       state)
            == 0)
            entered++;
    }
    if (entered != count) {
        g_autofree gchar *text = job_text (job);

        vmr_fail ("the job entered %s %u times, not %u: %s", state, entered, count, text);
    }
}

/*
 * The thresholds at 0.8 and 1.25 times the guest's rate R, measured from
 * its own reports, the guest busy all along:
 * - at 0.8 R, iops-delay holds the copy back, then iops-throttle slows it;
 * - raised to 1.25 R, iops-throttle keeps the copy slow while the guest
 *   stays above resume-below of it (25%: 0.31 R; on a loaded machine the
 *   guest has half seconds at half its rate), and lets it go once
 *   resume-below puts that level above the guest (95%: 1.19 R);
 * - at 1.25 R, neither iops-throttle nor iops-delay acts on the running
 *   copy, sample after sample (1 s samples there: fio makes up for a slow
 *   half second with a faster one, up to 1.5 R).
 */
static void
test_iops_near_rate (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *delay = near_rate_policy ("500ms", "iops-delay", 50);
    g_autofree gchar *throttle = near_rate_policy ("500ms", "iops-throttle", 25);
    g_autofree gchar *release = near_rate_policy ("500ms", "iops-throttle", 95);
    g_autofree gchar *throttle_1s = near_rate_policy ("1s", "iops-throttle", 95);
    g_autofree gchar *delay_1s = near_rate_policy ("1s", "iops-delay", 50);
    const VmrHarnessGuestJob load = { "load", STEADY_IOPS, 60, "randread", NULL, "idle" };
    g_auto (GuestCopy) c = { 0 };
    g_autoptr (JsonObject) delayed = NULL;
    g_autoptr (JsonObject) throttled = NULL;
    g_autoptr (JsonObject) released = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) speed = NULL;
    g_autofree gchar *named = NULL;
    g_autofree gchar *what = NULL;
    gdouble rate;
    guint threshold;

    if (!vmr_harness_require_guest (h))
        return;
    idle_guest_start (h, &c, &load, 32 * MIB, QUIET_POLICY);
    rate = wait_guest_rate (h, 3);

    threshold = reload_near_rate (h, delay, rate, 0.8);
    c.id = vmr_harness_migrate (h, "vm", "disk0", c.dest, NULL);
    delayed = vmr_harness_wait_job (h, c.id, "delayed", 15);
    named = g_strdup_printf ("iops-delay %u", threshold);
    assert_contains (policy_reason (delayed), named, "the policy's reason");
    vmr_harness_assert_no_block_jobs (h);
    g_clear_pointer (&named, g_free);

    threshold = reload_near_rate (h, throttle, rate, 0.8);
    throttled = vmr_harness_wait_job (h, c.id, "throttled", 15);
    named = g_strdup_printf ("iops-throttle %u", threshold);
    assert_contains (policy_reason (throttled), named, "the policy's reason");
    g_assert_cmpint (block_job_speed (h), ==, 1 * MIB);

    /* under the threshold now, but above the level to resume at: still slow, beyond hold */
    threshold = reload_near_rate (h, throttle, rate, 1.25);
    what = g_strdup_printf ("iops-throttle %u (1.25 x %.0f), resume-below 25%%", threshold, rate);
    assert_next_samples (h, c.id, 3, "throttled", rate, what);
    g_assert_cmpint (block_job_speed (h), ==, 1 * MIB);
    g_clear_pointer (&what, g_free);

    /* the level above the guest's rate: the copy goes back to its speed while the guest works */
    reload_near_rate (h, release, rate, 1.25);
    released = vmr_harness_wait_job (h, c.id, "copying", 15);
    g_test_message ("released: %s", policy_reason (released));
    g_assert_cmpstr (policy_decision (released), ==, "unthrottle");
    g_assert_cmpint (block_job_speed (h), ==, 2 * MIB);

    /* at 1.25 R, neither threshold acts */
    threshold = reload_near_rate (h, throttle_1s, rate, 1.25);
    what = g_strdup_printf ("iops-throttle %u (1.25 x %.0f)", threshold, rate);
    assert_next_samples (h, c.id, 3, "copying", rate, what);
    g_clear_pointer (&what, g_free);
    threshold = reload_near_rate (h, delay_1s, rate, 1.25);
    what = g_strdup_printf ("iops-delay %u (1.25 x %.0f)", threshold, rate);
    assert_next_samples (h, c.id, 3, "copying", rate, what);
    g_assert_cmpint (block_job_speed (h), ==, 2 * MIB);
    g_assert_false (vmr_harness_guest_has_line (h, "VMR-DONE"));

    /* the rest at full speed, not to wait */
    speed = vmr_harness_cli (h, "set-speed", c.id, "0", NULL);
    vmr_cli_result_assert_ok (speed);
    final = vmr_harness_wait_job (h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "delayed", "throttled", "copying", "synced", "completed", NULL);
    assert_entered (final, "throttled", 1);
    assert_entered (final, "paused", 0);
    vmr_harness_assert_migrated (h, c.id, "disk0", c.source, c.dest, "raw", c.expected);
}

/* ---- what counts as guest I/O ---- */

/*
 * The copy reads the source through QEMU, but not through the guest's
 * device: the daemon must not see the mirror's reads as guest load (else
 * the policy would throttle every copy of an idle guest).
 */
static void
test_copy_not_counted (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 500ms\n";
    const VmrHarnessGuestJob idle = { "idle", 0, 1, NULL, NULL, NULL };
    g_auto (GuestCopy) c = { 0 };
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (GString) seen = g_string_new (NULL);
    gint64 highest = 0;
    guint polls = 0;

    if (!vmr_harness_require_guest (h))
        return;
    idle_guest_start (h, &c, &idle, 256 * MIB, policy);

    /*
     * about four seconds of copying, eight samples. The mirror reads 64 MiB/s
     * in requests of at most 1 MiB: counted as guest I/O, that would show as
     * 64 IOPS or more
     */
    c.id = vmr_harness_migrate (h, "vm", "disk0", c.dest, "--speed", "64M", NULL);
    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, c.id);
        JsonArray *iops = vmr_harness_json_array (job_policy (job), "guest-iops");
        const gchar *state = job_state (job);

        if (g_strcmp0 (state, "copying") != 0 && g_strcmp0 (state, "queued") != 0)
            break;
        g_assert_nonnull (iops);
        if (g_strcmp0 (state, "copying") == 0 && json_array_get_length (iops) > 0) {
            JsonNode *last = json_array_get_element (iops, json_array_get_length (iops) - 1);
            gint64 newest;

            g_assert_true (JSON_NODE_HOLDS_VALUE (last)
                           && json_node_get_value_type (last) == G_TYPE_INT64);
            newest = json_node_get_int (last);

            highest = MAX (highest, newest);
            g_string_append_printf (seen, " %" G_GINT64_FORMAT, newest);
            polls++;
        }
        g_usleep (300 * 1000);
    }
    g_test_message ("guest IOPS seen while copying:%s", seen->str);
    if (highest >= 20)
        vmr_fail ("guest IOPS of %" G_GINT64_FORMAT " while an idle guest's disk was copied:%s",
                  highest, seen->str);
    /* enough of the copy was watched for the check to mean something */
    g_assert_cmpuint (polls, >=, 6);
    final = vmr_harness_wait_job (h, c.id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, c.id, "disk0", c.source, c.dest, "raw", c.expected);
}

/* ---- the guest's own check ---- */

/*
 * The verify guest writes and reads back through a migration the policy
 * throttled and a user paused and resumed: the pivot comes while it still
 * writes, and every block it wrote reads back right, from the destination.
 *
 * The mirror tracks dirty data in 64 KiB chunks: each 8 KiB random write
 * makes it copy 64 KiB again. At 200 writes/s that is 12.5 MiB/s, so a copy
 * throttled to 32 MiB/s still converges while the guest writes.
 */
static void
test_verify_guest (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 1s\n"
                                  "iops-throttle = THRESHOLD\n"
                                  "throttle-speed = 32M\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob verify = { "verify", 200, 14, NULL, NULL, NULL };
    g_autofree gchar *source = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (JsonObject) throttled = NULL;
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (JsonObject) still = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) pause = NULL;
    g_autoptr (VmrCliResult) resume = NULL;
    g_autoptr (JsonArray) samples = NULL;
    gint64 completed;

    if (!vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, QUIET_POLICY));
    source = boot_guest (h, &verify, DISK_SIZE);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    reload_policy_with (h, policy, threshold_below (wait_load_baseline (h)));

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    throttled = vmr_harness_wait_job (h, id, "throttled", 15);
    g_assert_cmpint (block_job_speed (h), ==, 32 * MIB);

    pause = vmr_harness_cli (h, "pause", id, NULL);
    vmr_cli_result_assert_ok (pause);
    paused = vmr_harness_wait_job (h, id, "paused", 10);
    g_assert_true (vmr_harness_json_bool (job_policy (paused), "user-paused"));
    g_assert_true (block_job_paused (h));
    /* the guest keeps writing; the policy leaves a user's pause alone in two of its decisions */
    samples = vmr_harness_wait_job_samples (h, id, 2);
    vmr_harness_assert_samples_state (samples, "paused");
    still = vmr_harness_get_job (h, id);
    g_assert_cmpstr (job_state (still), ==, "paused");
    g_assert_true (block_job_paused (h));
    g_assert_false (vmr_harness_guest_has_line (h, "VMR-DONE"));
    resume = vmr_harness_cli (h, "resume", id, NULL);
    vmr_cli_result_assert_ok (resume);

    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "throttled", "paused", "synced", "completed", NULL);
    completed = history_time (final, "completed");
    vmr_harness_assert_disk_on (h, "disk0", dest);
    vmr_harness_assert_node_released (h, source);

    vmr_harness_assert_job_record (h, id, "completed");
    assert_verify_guest (h, completed, source, dest, DISK_SIZE);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/delay-while-busy", NULL, test_delay_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/throttle-while-busy", NULL, test_throttle_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/pause-while-busy", NULL, test_pause_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/iops-near-rate", NULL, test_iops_near_rate);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/copy-not-counted", NULL, test_copy_not_counted);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/verify-through-throttle-and-pause", NULL,
                               test_verify_guest);
    return g_test_run ();
}
