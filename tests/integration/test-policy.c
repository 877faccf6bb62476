#define G_LOG_DOMAIN "vmr-test"

/*
 * The policy against real load: the test guest (tests/guest) runs fio on its
 * disk while the daemon, started with a small policy file of the test's own,
 * delays, throttles, pauses and resumes the copy of that disk. Tests that
 * need no load (windows, max-delay, reload) use a guest-less QEMU or none.
 *
 * Every migration is checked byte for byte: a load guest only reads
 * (vmr.rw=randread), so the destination must hold the source's pattern;
 * the verify guest checks its own writes after the pivot.
 *
 * When its load ends the guest stays up and idle (vmr.then=idle): the
 * policy sees a running VM whose disk has gone quiet. (A guest that powers
 * off instead leaves a stopped VM, QEMU runs with -no-shutdown: just as
 * quiet.)
 */

#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MIB       (1024 * 1024)
#define DISK_SIZE (128 * MIB)

/* a guest busy at this rate is far above the thresholds below, even in a slow second */
#define GUEST_IOPS 800
/* a VMR-IOPS line at or above this shows the load has really started */
#define BUSY_IOPS 400

/* the policy's hold in the tests that use a guest, in seconds */
#define HOLD_S 3

/* ---- helpers ---- */

static gchar *
start_policy_daemon (VmrHarness *h, const gchar *policy_text)
{
    g_autofree gchar *path = vmr_harness_write_policy (h, policy_text);

    vmr_harness_start_daemon (h, "--policy", path, NULL);
    return g_steal_pointer (&path);
}

/* a fresh source image under the guest, the guest booting with @job, attached as "vm" */
static gchar *
boot_guest (VmrHarness *h, const VmrHarnessGuestJob *job, gsize size)
{
    g_autofree gchar *source = vmr_harness_create_image (h, "source.raw", "raw", size, 0x90e57);
    VmrHarnessDisk disk = { "disk0", source, "raw", "io0" };

    vmr_harness_start_guest (h, &disk, job);
    /* attached at once: the daemon samples the disk from the guest's boot on */
    vmr_harness_attach (h, "vm");
    return g_steal_pointer (&source);
}

/* a guest-less, paused QEMU on a fresh 32 MiB source, attached as "vm" */
static gchar *
start_idle_vm (VmrHarness *h)
{
    g_autofree gchar *source = vmr_harness_create_image (h, "source.raw", "raw", 32 * MIB, 0xd1e);
    VmrHarnessDisk disk = { "disk0", source, "raw", NULL };

    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_attach (h, "vm");
    return g_steal_pointer (&source);
}

static const gchar *
job_state (JsonObject *job)
{
    return vmr_json_get_string (job, "state");
}

static JsonObject *
job_policy (JsonObject *job)
{
    return vmr_json_get_object (job, "policy");
}

/* the policy's reason, "" when it has none */
static const gchar *
policy_reason (JsonObject *job)
{
    JsonNode *node = json_object_get_member (job_policy (job), "reason");

    return node != NULL && JSON_NODE_HOLDS_VALUE (node) ? json_node_get_string (node) : "";
}

static const gchar *
policy_decision (JsonObject *job)
{
    JsonNode *node = json_object_get_member (job_policy (job), "decision");

    return node != NULL && JSON_NODE_HOLDS_VALUE (node) ? json_node_get_string (node) : "";
}

static gchar *
job_text (JsonObject *job)
{
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), job);

    return json_to_string (node, FALSE);
}

/* the time (microseconds since the epoch) of the last entry @state in the job's history; 0 = none
 */
static gint64
history_time (JsonObject *job, const gchar *state)
{
    JsonArray *history = json_object_get_array_member (job, "history");
    gint64 time_us = 0;

    g_assert_nonnull (history);
    for (guint i = 0; i < json_array_get_length (history); i++) {
        JsonObject *entry = json_array_get_object_element (history, i);

        if (g_strcmp0 (vmr_json_get_string (entry, "state"), state) == 0)
            time_us = vmr_json_get_int (entry, "time");
    }
    return time_us;
}

/* the job's history holds the NULL-terminated @states in that order (others may come between) */
static void
assert_history (JsonObject *job, const gchar *first, ...)
{
    JsonArray *history = json_object_get_array_member (job, "history");
    const gchar *wanted = first;
    guint i = 0;
    va_list ap;

    g_assert_nonnull (history);
    va_start (ap, first);
    while (wanted != NULL) {
        while (
            i < json_array_get_length (history)
            && g_strcmp0 (vmr_json_get_string (json_array_get_object_element (history, i), "state"),
                          wanted)
                   != 0)
            i++;
        if (i == json_array_get_length (history)) {
            g_autofree gchar *text = job_text (job);

            va_end (ap);
            vmr_fail ("the job's history lacks '%s' in order: %s", wanted, text);
        }
        wanted = va_arg (ap, const gchar *);
    }
    va_end (ap);
}

static void
assert_contains (const gchar *text, const gchar *part, const gchar *what)
{
    if (text == NULL || strstr (text, part) == NULL)
        vmr_fail ("%s '%s' does not mention '%s'", what, text, part);
}

static gint64
block_job_speed (VmrHarness *h)
{
    g_autoptr (JsonObject) block_job = vmr_harness_get_block_job (h);

    return vmr_json_get_int (block_job, "speed");
}

static gboolean
block_job_paused (VmrHarness *h)
{
    g_autoptr (JsonObject) block_job = vmr_harness_get_block_job (h);

    return vmr_json_get_bool (block_job, "paused");
}

/*
 * While the guest has not printed VMR-DONE, the job stays in @state; when
 * @speed is not negative, QEMU's copy runs at it all along. At most @timeout_s.
 */
static void
assert_state_until_done (VmrHarness *h, const gchar *id, const gchar *state, gint64 speed,
                         guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
    guint checks = 0;

    while (!vmr_harness_guest_has_line (h, "VMR-DONE")) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

        if (g_strcmp0 (job_state (job), state) != 0) {
            g_autofree gchar *text = job_text (job);
            g_autofree gchar *tail = vmr_harness_guest_tail (h, 4);
            g_autofree gchar *tail_line = g_strescape (tail, NULL);

            vmr_fail ("job %s left %s while the guest was still busy: %s; console: %s", id, state,
                      text, tail_line);
        }
        if (speed >= 0)
            g_assert_cmpint (block_job_speed (h), ==, speed);
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        checks++;
        g_usleep (500 * 1000);
    }
    g_test_message ("job %s stayed %s through %u checks while the guest was busy", id, state,
                    checks);
}

/* the guest's mean IOPS from the first line on, for the test's log */
static void
note_guest_load (VmrHarness *h)
{
    g_autoptr (GArray) iops = vmr_harness_guest_get_iops (h);
    guint lines = 0;
    gdouble mean = vmr_guest_iops_mean (iops, 0, G_MAXINT64, NULL, &lines);

    g_test_message ("guest load: %.0f IOPS on average over %u VMR-IOPS lines", mean, lines);
}

/* HH:MM of now + @minutes, local time, as the daemon reads windows */
static gchar *
clock_in (gint minutes)
{
    g_autoptr (GDateTime) now = g_date_time_new_now_local ();
    g_autoptr (GDateTime) then = g_date_time_add_minutes (now, minutes);

    return g_date_time_format (then, "%H:%M");
}

/* a window from now + @from_min to now + @to_min */
static gchar *
window_around_now (gint from_min, gint to_min)
{
    g_autofree gchar *from = clock_in (from_min);
    g_autofree gchar *to = clock_in (to_min);

    return g_strdup_printf ("%s-%s", from, to);
}

/* the value of @key in `policy show --json` */
static gchar *
shown_value (VmrHarness *h, const gchar *key)
{
    g_autoptr (JsonNode) shown = vmr_harness_cli_json (h, "policy", "show", NULL);
    JsonArray *values = json_object_get_array_member (json_node_get_object (shown), "values");

    g_assert_nonnull (values);
    for (guint i = 0; i < json_array_get_length (values); i++) {
        JsonObject *value = json_array_get_object_element (values, i);

        if (g_strcmp0 (vmr_json_get_string (value, "key"), key) == 0)
            return g_strdup (vmr_json_get_string (value, "value"));
    }
    vmr_fail ("policy show has no key %s", key);
}

static void
assert_shown (VmrHarness *h, const gchar *key, const gchar *expected)
{
    g_autofree gchar *value = shown_value (h, key);

    g_assert_cmpstr (value, ==, expected);
}

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
                                  "iops-delay = 200\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 15, "randread", NULL, "idle" };
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (GArray) iops = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    gint64 started;

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, policy));
    source = boot_guest (h, &load, DISK_SIZE);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    iops = vmr_harness_guest_wait_iops (h, 2, BUSY_IOPS, 30);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (job_state (job), ==, "delayed");
    g_assert_cmpstr (policy_decision (job), ==, "delay");
    /* the reason names the load and the threshold */
    assert_contains (policy_reason (job), "iops-delay 200", "the policy's reason");
    assert_contains (policy_reason (job), "IOPS", "the policy's reason");
    /* a delayed copy has not started: nothing in QEMU, nothing at the destination */
    vmr_harness_assert_no_block_jobs (h);
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));

    assert_state_until_done (h, id, "delayed", -1, 60);
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 60);
    note_guest_load (h);
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "delayed", "copying", "synced", "completed", NULL);
    /* the copy started once the load was over and the hold had passed */
    started = history_time (final, "copying");
    g_test_message ("copy started %.1f s after VMR-DONE",
                    (gdouble) (started - done->real_us) / G_USEC_PER_SEC);
    g_assert_cmpint (started, >=, done->real_us - G_USEC_PER_SEC);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
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
                                  "iops-throttle = 150\n"
                                  "throttle-speed = 1M\n"
                                  "iops-delay = 100000\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 15, "randread", NULL, "idle" };
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (GArray) iops = NULL;
    g_autoptr (JsonObject) throttled = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) final = NULL;
    gint64 unthrottled;

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, policy));
    source = boot_guest (h, &load, DISK_SIZE);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    iops = vmr_harness_guest_wait_iops (h, 2, BUSY_IOPS, 30);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    throttled = vmr_harness_wait_job (h, id, "throttled", 15);
    assert_contains (policy_reason (throttled), "iops-throttle 150", "the policy's reason");
    g_assert_cmpint (vmr_json_get_int (throttled, "speed"), ==, 1 * MIB);
    g_assert_cmpint (vmr_json_get_int (job_policy (throttled), "base-speed"), ==, 16 * MIB);
    g_assert_cmpint (block_job_speed (h), ==, 1 * MIB);

    assert_state_until_done (h, id, "throttled", 1 * MIB, 60);
    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 60);
    note_guest_load (h);
    copying = vmr_harness_wait_job (h, id, "copying", 30);
    g_assert_cmpstr (policy_decision (copying), ==, "unthrottle");
    g_assert_cmpint (vmr_json_get_int (copying, "speed"), ==, 16 * MIB);
    g_assert_cmpint (block_job_speed (h), ==, 16 * MIB);
    unthrottled = history_time (copying, "copying");
    g_test_message ("back to full speed %.1f s after VMR-DONE",
                    (gdouble) (unthrottled - done->real_us) / G_USEC_PER_SEC);
    g_assert_cmpint (unthrottled, >=, done->real_us - G_USEC_PER_SEC);

    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "throttled", "copying", "synced", "completed", NULL);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
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
    const VmrHarnessGuestJob load = { "load", GUEST_IOPS, 12, "randread", NULL, "idle" };
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

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
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
    g_assert_false (vmr_json_get_bool (job_policy (paused), "user-paused"));
    g_assert_true (block_job_paused (h));
    g_assert_cmpint (vmr_json_get_int (vmr_json_get_object (paused, "progress"), "done"), >, 0);

    assert_state_until_done (h, id, "paused", -1, 60);
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

/* ---- windows and max-delay: no load needed ---- */

/*
 * Outside the window a job waits in `delayed`; a reloaded policy whose
 * window includes now lets it start.
 */
static void
test_window (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *closed = NULL;
    g_autofree gchar *open = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) reload = NULL;
    gint64 until;

    if (vmr_harness_skipped (h))
        return;
    /* an hour away on either side: the clock cannot walk into it during the test */
    closed = window_around_now (60, 120);
    policy = g_strdup_printf ("[defaults]\nsample-interval = 500ms\nwindow = %s\n", closed);
    g_free (start_policy_daemon (h, policy));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    until = g_get_monotonic_time () + 3 * G_USEC_PER_SEC;
    while (g_get_monotonic_time () < until) {
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_get_job (h, id);
        g_assert_cmpstr (job_state (job), ==, "delayed");
        assert_contains (policy_reason (job), "outside the copy window", "the policy's reason");
        vmr_harness_assert_no_block_jobs (h);
        g_usleep (500 * 1000);
    }
    g_assert_cmpfloat (json_object_get_double_member (job_policy (job), "held"), >=, 2.0);

    open = window_around_now (-60, 60);
    g_clear_pointer (&policy, g_free);
    policy = g_strdup_printf ("[defaults]\nsample-interval = 500ms\nwindow = %s\n", open);
    g_free (vmr_harness_write_policy (h, policy));
    reload = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reload);
    assert_shown (h, "window", open);

    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "delayed", "copying", "completed", NULL);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* max-delay with on-max-delay = fail: the job fails, the VM stays on its source */
static void
test_max_delay_fail (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *closed = window_around_now (60, 120);
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) failed = NULL;

    if (vmr_harness_skipped (h))
        return;
    policy = g_strdup_printf ("[defaults]\n"
                              "sample-interval = 500ms\n"
                              "window = %s\n"
                              "max-delay = 2s\n"
                              "on-max-delay = fail\n",
                              closed);
    g_free (start_policy_daemon (h, policy));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (job_state (job), ==, "delayed");
    failed = vmr_harness_wait_job (h, id, "failed", 20);
    assert_contains (vmr_json_get_string (failed, "reason"), "max-delay", "the job's reason");
    g_assert_cmpstr (policy_decision (failed), ==, "fail");
    g_assert_cmpint (history_time (failed, "failed") - history_time (failed, "delayed"), >=,
                     2 * G_USEC_PER_SEC);
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_job_record (h, id, "failed");
    vmr_harness_assert_stays_on_source (h, "disk0", source, "raw", expected);
}

/* max-delay with on-max-delay = proceed: the copy runs after all, outside the window */
static void
test_max_delay_proceed (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *closed = window_around_now (60, 120);
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;

    if (vmr_harness_skipped (h))
        return;
    policy = g_strdup_printf ("[defaults]\n"
                              "sample-interval = 500ms\n"
                              "window = %s\n"
                              "max-delay = 2s\n"
                              "on-max-delay = proceed\n",
                              closed);
    g_free (start_policy_daemon (h, policy));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (job_state (job), ==, "delayed");
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (policy_decision (final), ==, "proceed");
    assert_history (final, "delayed", "copying", "completed", NULL);
    g_assert_cmpint (history_time (final, "copying") - history_time (final, "delayed"), >=,
                     2 * G_USEC_PER_SEC);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* ---- a bad policy file ---- */

static const gchar good_policy[] = "[defaults]\n"
                                   "speed = 100M\n"
                                   "hold = 10s\n";
/* line 3 is wrong: the problem must be reported there */
static const gchar bad_policy[] = "[defaults]\n"
                                  "speed = 200M\n"
                                  "hold = 5x\n";

/* `reload` refuses a bad file, naming file:line:key, and the old policy stays */
static void
test_reload_invalid (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *path = NULL;
    g_autofree gchar *where = NULL;
    g_autoptr (VmrCliResult) reload = NULL;

    if (vmr_harness_skipped (h))
        return;
    path = start_policy_daemon (h, good_policy);
    assert_shown (h, "speed", "100M");

    g_free (vmr_harness_write_policy (h, bad_policy));
    reload = vmr_harness_cli (h, "reload", NULL);
    g_assert_cmpint (reload->status, ==, 1);
    g_assert_true (g_str_has_prefix (reload->err, "virt-mirror: error: "));
    where = g_strdup_printf ("%s:3: [defaults] hold:", path);
    assert_contains (reload->err, where, "reload's error");
    g_assert_cmpstr (reload->out, ==, "");

    assert_shown (h, "speed", "100M");
    assert_shown (h, "hold", "10s");
    vmr_harness_assert_daemon_serving (h);
}

/* SIGHUP with a bad file keeps the old policy too; with a good one it takes it */
/* polls query-policy until it reports a refused reload; returns that object */
static JsonObject *
wait_refused (VmrHarness *h)
{
    gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonNode) policy = vmr_harness_cli_json (h, "policy", "show", NULL);
        JsonObject *obj = json_node_get_object (policy);

        if (json_object_has_member (obj, "refused"))
            return json_object_ref (vmr_json_get_object (obj, "refused"));
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        g_usleep (50 * 1000);
    }
}

static void
test_sighup_invalid (VmrHarness *h, gconstpointer user_data)
{
    gint64 deadline;
    g_autoptr (JsonObject) refused = NULL;
    g_autoptr (VmrCliResult) show = NULL;
    g_autofree gchar *where = NULL;

    if (vmr_harness_skipped (h))
        return;
    g_free (start_policy_daemon (h, good_policy));
    assert_shown (h, "speed", "100M");

    g_free (vmr_harness_write_policy (h, bad_policy));
    g_subprocess_send_signal (h->daemon, SIGHUP);
    /* the daemon's refusal, as query-policy tells it */
    refused = wait_refused (h);
    where = g_strdup (":3: [defaults] hold:");
    assert_contains (vmr_json_get_string (refused, "error"), where, "the refusal");
    assert_contains (vmr_json_get_string (refused, "error"), "the policy is unchanged",
                     "the refusal");
    vmr_harness_assert_daemon_serving (h);
    assert_shown (h, "speed", "100M");
    assert_shown (h, "hold", "10s");
    /* and as `policy show` tells it */
    show = vmr_harness_cli (h, "policy", "show", NULL);
    vmr_cli_result_assert_ok (show);
    assert_contains (show->out, "Last reload refused: ", "policy show");
    assert_contains (show->out, where, "policy show");

    /* the same signal with a good file does reload: so the first one was not ignored */
    g_free (vmr_harness_write_policy (h, "[defaults]\nspeed = 300M\n"));
    g_subprocess_send_signal (h->daemon, SIGHUP);
    deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
    while (TRUE) {
        g_autofree gchar *speed = shown_value (h, "speed");

        if (g_strcmp0 (speed, "300M") == 0)
            break;
        g_assert_cmpint (g_get_monotonic_time (), <, deadline);
        g_usleep (100 * 1000);
    }
    assert_shown (h, "hold", "30s");
    /* a good reload clears the refusal */
    {
        g_autoptr (JsonNode) policy = vmr_harness_cli_json (h, "policy", "show", NULL);

        g_assert_false (json_object_has_member (json_node_get_object (policy), "refused"));
        g_assert_true (json_object_has_member (json_node_get_object (policy), "loaded"));
    }
    vmr_harness_assert_daemon_serving (h);
}

/* the daemon does not start on a bad file: one message, naming it, and no socket */
static void
test_start_invalid (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *path = NULL;
    g_autofree gchar *where = NULL;
    g_autoptr (VmrCliResult) run = NULL;
    g_auto (GStrv) lines = NULL;
    guint naming = 0;
    guint said = 0;

    if (vmr_harness_skipped (h))
        return;
    path = vmr_harness_write_policy (h, bad_policy);
    run = vmr_harness_run_daemon (h, "--policy", path, NULL);
    g_test_message ("virt-mirrord: status %d, stderr: %s", run->status, run->err);
    g_assert_cmpint (run->status, !=, 0);
    g_assert_cmpint (run->status, >, 0);
    g_assert_cmpstr (run->out, ==, "");
    where = g_strdup_printf ("%s:3: [defaults] hold:", path);
    lines = g_strsplit (run->err, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        /* --verbose (VMR_TEST_VERBOSE) adds debug lines: they are not the message */
        if (*lines[i] == '\0' || strstr (lines[i], "-DEBUG") != NULL)
            continue;
        said++;
        if (strstr (lines[i], where) != NULL)
            naming++;
    }
    if (naming != 1 || said > 2)
        vmr_fail ("expected one message naming %s on stderr, got: %s", where, run->err);
    g_assert_false (g_file_test (h->socket, G_FILE_TEST_EXISTS));
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
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (GString) seen = g_string_new (NULL);
    gint64 highest = 0;
    guint polls = 0;

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, policy));
    source = boot_guest (h, &idle, 256 * MIB);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);

    /*
     * about four seconds of copying, eight samples. The mirror reads 64 MiB/s
     * in requests of at most 1 MiB: counted as guest I/O, that would show as
     * 64 IOPS or more
     */
    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--speed", "64M", NULL);
    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);
        JsonArray *iops = json_object_get_array_member (job_policy (job), "guest-iops");
        const gchar *state = job_state (job);

        if (g_strcmp0 (state, "copying") != 0 && g_strcmp0 (state, "queued") != 0)
            break;
        g_assert_nonnull (iops);
        if (g_strcmp0 (state, "copying") == 0 && json_array_get_length (iops) > 0) {
            gint64 newest = json_array_get_int_element (iops, json_array_get_length (iops) - 1);

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
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
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
                                  "iops-throttle = 60\n"
                                  "throttle-speed = 32M\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob verify = { "verify", 200, 24, NULL, NULL, NULL };
    g_autofree gchar *source = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (VmrConsoleLine) verified = NULL;
    g_autoptr (GArray) iops = NULL;
    g_autoptr (GArray) after = NULL;
    g_autoptr (JsonObject) throttled = NULL;
    g_autoptr (JsonObject) paused = NULL;
    g_autoptr (JsonObject) still = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) pause = NULL;
    g_autoptr (VmrCliResult) resume = NULL;
    guint64 written = 0, checked = 0;
    gint64 completed;
    gboolean wrote_after = FALSE;
    g_autoptr (VmrConsoleLine) job_line = NULL;
    g_autofree gchar *expected = NULL;
    const gchar *size_field;
    guint64 region;

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
        return;
    g_free (start_policy_daemon (h, policy));
    source = boot_guest (h, &verify, DISK_SIZE);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    iops = vmr_harness_guest_wait_iops (h, 2, 150, 30);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    throttled = vmr_harness_wait_job (h, id, "throttled", 15);
    g_assert_cmpint (block_job_speed (h), ==, 32 * MIB);

    pause = vmr_harness_cli (h, "pause", id, NULL);
    vmr_cli_result_assert_ok (pause);
    paused = vmr_harness_wait_job (h, id, "paused", 10);
    g_assert_true (vmr_json_get_bool (job_policy (paused), "user-paused"));
    g_assert_true (block_job_paused (h));
    /* the guest keeps writing; the policy leaves a user's pause alone */
    g_usleep (2 * G_USEC_PER_SEC);
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

    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 120);
    note_guest_load (h);
    g_test_message ("the pivot came %.1f s before VMR-DONE",
                    (gdouble) (done->real_us - completed) / G_USEC_PER_SEC);
    assert_contains (done->text, "VMR-DONE verify ok", "the guest's result");
    g_assert_cmpint (done->real_us, >, completed);
    /* some of the blocks checked were written to the destination only */
    after = vmr_harness_guest_get_iops (h);
    for (guint i = 0; i < after->len; i++) {
        const VmrGuestIops *sample = &g_array_index (after, VmrGuestIops, i);

        if (sample->real_us > completed + G_USEC_PER_SEC && sample->write_iops > 0)
            wrote_after = TRUE;
    }
    if (!wrote_after)
        vmr_fail ("the guest wrote nothing after the pivot: the copy outlasted its writes");
    verified = vmr_harness_guest_wait_line (h, "VMR-VERIFIED", 1);
    g_assert_cmpint (sscanf (strstr (verified->text, "VMR-VERIFIED"),
                             "VMR-VERIFIED %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &written,
                             &checked),
                     ==, 2);
    g_assert_cmpuint (written, >, 0);
    g_assert_cmpuint (checked, ==, written);
    vmr_harness_assert_job_record (h, id, "completed");
    vmr_harness_quit_qemu (h);
    /*
     * fio verified in the guest what it wrote, the first REGION bytes; beyond
     * them nothing wrote, so the destination must hold the source's pattern
     */
    job_line = vmr_harness_guest_wait_line (h, "VMR-JOB verify", 1);
    size_field = strstr (job_line->text, " size=");
    g_assert_nonnull (size_field);
    region = g_ascii_strtoull (size_field + strlen (" size="), NULL, 10);
    g_assert_cmpuint (region, >, 0);
    g_assert_cmpuint (region, <, DISK_SIZE);
    expected = vmr_harness_expected_path (source);
    vmr_harness_assert_range_equals (dest, expected, region, DISK_SIZE - region);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/delay-while-busy", NULL, test_delay_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/throttle-while-busy", NULL, test_throttle_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/pause-while-busy", NULL, test_pause_while_busy);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/copy-not-counted", NULL, test_copy_not_counted);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/guest/verify-through-throttle-and-pause", NULL,
                               test_verify_guest);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/window/reload-opens", NULL, test_window);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/max-delay/fail", NULL, test_max_delay_fail);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/max-delay/proceed", NULL, test_max_delay_proceed);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/reload-invalid", NULL, test_reload_invalid);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/sighup-invalid", NULL, test_sighup_invalid);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/start-invalid", NULL, test_start_invalid);
    return g_test_run ();
}
