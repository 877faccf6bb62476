#define G_LOG_DOMAIN "vmr-test"

/* What the policy tests share: see policy-fixture.h */

#include "policy-fixture.h"

#include <stdio.h>
#include <string.h>

gchar *
start_policy_daemon (VmrHarness *h, const gchar *policy_text)
{
    g_autofree gchar *path = vmr_harness_write_policy (h, policy_text);

    vmr_harness_start_daemon (h, "--policy", path, NULL);
    return g_steal_pointer (&path);
}

/* a fresh source image under the guest, the guest booting with @job, attached as "vm" */
gchar *
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
gchar *
start_idle_vm (VmrHarness *h)
{
    g_autofree gchar *source = vmr_harness_create_image (h, "source.raw", "raw", 32 * MIB, 0xd1e);
    VmrHarnessDisk disk = { "disk0", source, "raw", NULL };

    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_attach (h, "vm");
    return g_steal_pointer (&source);
}

const gchar *
job_state (JsonObject *job)
{
    return vmr_harness_json_string (job, "state");
}

JsonObject *
job_policy (JsonObject *job)
{
    return vmr_harness_json_object (job, "policy");
}

/* the policy's reason, "" when it has none */
const gchar *
policy_reason (JsonObject *job)
{
    const gchar *reason = vmr_json_get_string (job_policy (job), "reason");

    return reason != NULL ? reason : "";
}

const gchar *
policy_decision (JsonObject *job)
{
    const gchar *decision = vmr_json_get_string (job_policy (job), "decision");

    return decision != NULL ? decision : "";
}

gchar *
job_text (JsonObject *job)
{
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), job);

    return json_to_string (node, FALSE);
}

/* the time (microseconds since the epoch) of the last entry @state in the job's history; 0 = none
 */
gint64
history_time (JsonObject *job, const gchar *state)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    gint64 time_us = 0;

    g_assert_nonnull (history);
    for (guint i = 0; i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_harness_json_element (history, i);

        if (g_strcmp0 (vmr_harness_json_string (entry, "state"), state) == 0)
            time_us = vmr_harness_json_int (entry, "time");
    }
    return time_us;
}

/* the job's history holds the NULL-terminated @states in that order (others may come between) */
void
assert_history (JsonObject *job, const gchar *first, ...)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    const gchar *wanted = first;
    guint i = 0;
    va_list ap;

    g_assert_nonnull (history);
    va_start (ap, first);
    while (wanted != NULL) {
        while (
            i < json_array_get_length (history)
            && g_strcmp0 (vmr_harness_json_string (vmr_harness_json_element (history, i), "state"),
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

void
assert_contains (const gchar *text, const gchar *part, const gchar *what)
{
    if (text == NULL || strstr (text, part) == NULL)
        vmr_fail ("%s '%s' does not mention '%s'", what, text, part);
}

gint64
block_job_speed (VmrHarness *h)
{
    g_autoptr (JsonObject) block_job = vmr_harness_get_block_job (h);

    return vmr_harness_json_int (block_job, "speed");
}

gboolean
block_job_paused (VmrHarness *h)
{
    g_autoptr (JsonObject) block_job = vmr_harness_get_block_job (h);

    return vmr_harness_json_bool (block_job, "paused");
}

/*
 * While the guest's load lasts (until @load_end_us, monotonic), the job is
 * in @state, with @speed in QEMU unless it is -1: checked at three chosen
 * points (now, half-way, two seconds before the end), not on every poll;
 * assert_left_after() then proves from the daemon's own history that the
 * job did not leave @state between them.
 */
void
assert_state_at_points (VmrHarness *h, const gchar *id, const gchar *state, gint64 speed,
                        gint64 load_end_us)
{
    gint64 now = g_get_monotonic_time ();
    const gint64 points[]
        = { now, now + (load_end_us - now) / 2, load_end_us - 2 * G_USEC_PER_SEC };

    for (guint i = 0; i < G_N_ELEMENTS (points); i++) {
        g_autoptr (JsonObject) job = NULL;

        if (i > 0 && points[i] <= points[i - 1])
            continue;
        while (g_get_monotonic_time () < points[i])
            g_usleep (100 * 1000);
        if (vmr_harness_guest_has_line (h, "VMR-DONE"))
            break;
        job = vmr_harness_get_job (h, id);
        if (g_strcmp0 (job_state (job), state) != 0) {
            g_autofree gchar *text = job_text (job);
            g_autofree gchar *tail = vmr_harness_guest_tail (h, 4);
            g_autofree gchar *tail_line = g_strescape (tail, NULL);

            vmr_fail ("job %s left %s while the guest was still busy: %s; console: %s", id, state,
                      text, tail_line);
        }
        if (speed >= 0)
            g_assert_cmpint (block_job_speed (h), ==, speed);
    }
}

/*
 * The job's history: it entered @state once and its next transition came
 * no earlier than a second before @done_us (wall clock), when the guest said
 * its load was over
 */
void
assert_left_after (JsonObject *job, const gchar *state, gint64 done_us)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    guint entered = 0;
    gint64 left = 0;

    g_assert_nonnull (history);
    for (guint i = 0; i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_harness_json_element (history, i);

        if (g_strcmp0 (vmr_harness_json_string (entry, "state"), state) == 0) {
            entered++;
            if (i + 1 < json_array_get_length (history))
                left = vmr_harness_json_int (vmr_harness_json_element (history, i + 1), "time");
        }
    }
    g_assert_cmpuint (entered, ==, 1);
    g_test_message ("the job left %s %.1f s after VMR-DONE", state,
                    (gdouble) (left - done_us) / G_USEC_PER_SEC);
    if (left < done_us - G_USEC_PER_SEC)
        vmr_fail ("the job left %s %.1f s before the guest's load ended", state,
                  (gdouble) (done_us - left) / G_USEC_PER_SEC);
}

/*
 * The guest's rate: the mean read + write IOPS of its first @reports
 * VMR-IOPS lines with I/O in them after the first, waiting for them. The
 * first line, which holds fio's start (25 IOPS where the rate is 200), is
 * left out: averaged in, it made the rate look a third lower than it is
 */
gdouble
wait_guest_rate (VmrHarness *h, guint reports)
{
    g_autoptr (GArray) iops = vmr_harness_guest_wait_iops (h, reports + 1, 1, 60);
    g_autoptr (GString) each = g_string_new (NULL);
    gdouble sum = 0;
    guint n = 0;

    for (guint i = 1; i < iops->len && n < reports; i++) {
        const VmrGuestIops *line = &g_array_index (iops, VmrGuestIops, i);
        gdouble rate = line->read_iops + line->write_iops;

        if (rate >= 1) {
            sum += rate;
            n++;
            g_string_append_printf (each, " %.0f", rate);
        }
    }
    g_assert_cmpuint (n, ==, reports);
    g_test_message ("the guest's load: %.0f IOPS (%s )", sum / n, each->str);
    return sum / n;
}

gdouble
wait_load_baseline (VmrHarness *h)
{
    return wait_guest_rate (h, 2);
}

/*
 * an IOPS threshold well below the guest's @baseline rate: a quarter of it,
 * so that the guest stays above it on a loaded machine, and well above an
 * idle guest's
 */
guint
threshold_below (gdouble baseline)
{
    return MAX ((guint) (baseline / 4), 10);
}

/* writes @policy with @threshold for the word THRESHOLD in it, and reloads it */
void
reload_policy_with (VmrHarness *h, const gchar *policy, guint threshold)
{
    g_auto (GStrv) parts = g_strsplit (policy, "THRESHOLD", -1);
    g_autofree gchar *value = g_strdup_printf ("%u", threshold);
    g_autofree gchar *text = g_strjoinv (value, parts);
    g_autoptr (VmrCliResult) reload = NULL;

    g_free (vmr_harness_write_policy (h, text));
    reload = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reload);
}

/* the monotonic time at which the guest's load of @runtime_s seconds ends */
gint64
load_end (VmrHarness *h, guint runtime_s)
{
    /* the first VMR-IOPS line, which comes a second after the load began */
    g_autoptr (GArray) iops = vmr_harness_guest_wait_iops (h, 1, 0, 30);

    g_assert_cmpuint (iops->len, >, 0);
    return g_array_index (iops, VmrGuestIops, 0).mono_us - G_USEC_PER_SEC
           + (gint64) runtime_s * G_USEC_PER_SEC;
}

/* the guest's mean IOPS from the first line on, for the test's log */
void
note_guest_load (VmrHarness *h)
{
    g_autoptr (GArray) iops = vmr_harness_guest_get_iops (h);
    guint lines = 0;
    gdouble mean = vmr_guest_iops_mean (iops, 0, G_MAXINT64, NULL, &lines);

    g_test_message ("guest load: %.0f IOPS on average over %u VMR-IOPS lines", mean, lines);
}

/* HH:MM of now + @minutes, local time, as the daemon reads windows */
gchar *
clock_in (gint minutes)
{
    g_autoptr (GDateTime) now = g_date_time_new_now_local ();
    g_autoptr (GDateTime) then = g_date_time_add_minutes (now, minutes);

    return g_date_time_format (then, "%H:%M");
}

/* a window from now + @from_min to now + @to_min */
gchar *
window_around_now (gint from_min, gint to_min)
{
    g_autofree gchar *from = clock_in (from_min);
    g_autofree gchar *to = clock_in (to_min);

    return g_strdup_printf ("%s-%s", from, to);
}

/* the value of @key in `policy show --json` */
gchar *
shown_value (VmrHarness *h, const gchar *key)
{
    g_autoptr (JsonNode) shown = vmr_harness_cli_json (h, "policy", "show", NULL);
    JsonArray *values = vmr_harness_json_array (vmr_harness_json_node_object (shown), "values");

    g_assert_nonnull (values);
    for (guint i = 0; i < json_array_get_length (values); i++) {
        JsonObject *value = vmr_harness_json_element (values, i);

        if (g_strcmp0 (vmr_harness_json_string (value, "key"), key) == 0)
            return g_strdup (vmr_harness_json_string (value, "value"));
    }
    vmr_fail ("policy show has no key %s", key);
}

void
assert_shown (VmrHarness *h, const gchar *key, const gchar *expected)
{
    g_autofree gchar *value = shown_value (h, key);

    g_assert_cmpstr (value, ==, expected);
}

void
guest_copy_clear (GuestCopy *c)
{
    g_clear_pointer (&c->source, g_free);
    g_clear_pointer (&c->expected, g_free);
    g_clear_pointer (&c->dest, g_free);
    g_clear_pointer (&c->id, g_free);
}

void
idle_guest_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *job, gsize size,
                  const gchar *policy)
{
    g_autoptr (VmrConsoleLine) ready = NULL;

    g_free (start_policy_daemon (h, policy));
    c->source = boot_guest (h, job, size);
    c->expected = vmr_harness_expected_path (c->source);
    c->dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
}

void
busy_guest_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *load, gsize size,
                  const gchar *policy)
{
    idle_guest_start (h, c, load, size, QUIET_POLICY);
    c->guest_iops = wait_load_baseline (h);
    c->threshold = threshold_below (c->guest_iops);
    reload_policy_with (h, policy, c->threshold);
}

void
busy_copy_start (VmrHarness *h, GuestCopy *c, const VmrHarnessGuestJob *load, const gchar *policy)
{
    busy_guest_start (h, c, load, BUSY_DISK_SIZE, policy);
    c->id = vmr_harness_migrate (h, "vm", "disk0", c->dest, NULL);
}

void
assert_verify_guest (VmrHarness *h, gint64 completed_us, const gchar *source, const gchar *dest,
                     gsize size)
{
    g_autoptr (VmrConsoleLine) done = NULL;
    g_autoptr (GArray) after = NULL;
    gboolean wrote_after = FALSE;

    done = vmr_harness_guest_wait_line (h, "VMR-DONE", 120);
    note_guest_load (h);
    g_test_message ("the pivot came %.1f s before VMR-DONE",
                    (gdouble) (done->real_us - completed_us) / G_USEC_PER_SEC);
    assert_contains (done->text, "VMR-DONE verify ok", "the guest's result");
    g_assert_cmpint (done->real_us, >, completed_us);
    /* some of the blocks checked were written to the destination only */
    after = vmr_harness_guest_get_iops (h);
    for (guint i = 0; i < after->len; i++) {
        const VmrGuestIops *sample = &g_array_index (after, VmrGuestIops, i);

        if (sample->real_us > completed_us + G_USEC_PER_SEC && sample->write_iops > 0)
            wrote_after = TRUE;
    }
    if (!wrote_after)
        vmr_fail ("the guest wrote nothing after the pivot: the copy outlasted its writes");
    assert_guest_verified (h);
    assert_beyond_verify_region (h, source, dest, size);
}

guint64
assert_guest_verified (VmrHarness *h)
{
    g_autoptr (VmrConsoleLine) verified = vmr_harness_guest_wait_line (h, "VMR-VERIFIED", 1);
    guint64 written = 0, checked = 0;

    g_assert_cmpint (sscanf (strstr (verified->text, "VMR-VERIFIED"),
                             "VMR-VERIFIED %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &written,
                             &checked),
                     ==, 2);
    g_assert_cmpuint (written, >, 0);
    g_assert_cmpuint (checked, ==, written);
    return written;
}

void
assert_beyond_verify_region (VmrHarness *h, const gchar *source, const gchar *image, gsize size)
{
    g_autoptr (VmrConsoleLine) job_line = NULL;
    g_autofree gchar *expected = NULL;
    const gchar *size_field;
    guint64 region;

    vmr_harness_quit_qemu (h);
    /*
     * fio verified in the guest what it wrote, the first REGION bytes; beyond
     * them nothing wrote, so the image must hold the source's pattern
     */
    job_line = vmr_harness_guest_wait_line (h, "VMR-JOB verify", 1);
    size_field = strstr (job_line->text, " size=");
    g_assert_nonnull (size_field);
    region = g_ascii_strtoull (size_field + strlen (" size="), NULL, 10);
    g_assert_cmpuint (region, >, 0);
    g_assert_cmpuint (region, <, size);
    expected = vmr_harness_expected_path (source);
    vmr_harness_assert_range_equals (image, expected, region, size - region);
}

void
assert_promtool_passes (const gchar *what, const gchar *text)
{
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;

    proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                 | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                             &error, "promtool", "check", "metrics", NULL);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_communicate_utf8 (proc, text, NULL, &out, &err, &error));
    g_assert_no_error (error);
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0)
        vmr_fail ("promtool check metrics fails on %s: %s%s\n%s", what, out, err, text);
}

gdouble
sample_value (const gchar *text, const gchar *series)
{
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix (lines[i], series) && lines[i][strlen (series)] == ' ')
            return g_ascii_strtod (lines[i] + strlen (series) + 1, NULL);
    }
    return -1;
}
