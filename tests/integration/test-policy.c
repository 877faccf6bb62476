#define G_LOG_DOMAIN "vmr-test"

/*
 * The policy without load: copy windows, max-delay, the mirror's
 * granularity, a copy that does not converge and a copy's deadline, and a
 * bad policy file at start, at
 * `reload` and at SIGHUP. A guest-less QEMU, or none.
 */

#include "policy-fixture.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

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
    g_assert_cmpfloat (vmr_json_double_or (job_policy (job), "held", -1), >=, 2.0);

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

/* the granularity QEMU's mirror of job @id tracks the guest's writes with, 0 = none found */
static gint64
mirror_granularity (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) flat = json_object_new ();
    g_autofree gchar *filter = g_strdup_printf ("%s-mirror", id);
    g_autoptr (JsonNode) nodes = NULL;
    JsonArray *list;

    json_object_set_boolean_member (flat, "flat", TRUE);
    nodes = vmr_harness_qmp (h, "query-named-block-nodes", flat);
    list = vmr_harness_json_node_array (nodes);
    for (guint i = 0; i < json_array_get_length (list); i++) {
        JsonObject *node = vmr_harness_json_element (list, i);
        JsonArray *bitmaps;

        if (g_strcmp0 (vmr_harness_json_string (node, "node-name"), filter) != 0)
            continue;
        bitmaps = vmr_harness_json_array (node, "dirty-bitmaps");
        g_assert_cmpuint (json_array_get_length (bitmaps), ==, 1);
        return vmr_harness_json_int (vmr_harness_json_element (bitmaps, 0), "granularity");
    }
    return 0;
}

/*
 * granularity and buf-size reach QEMU's mirror: its dirty bitmap has the
 * policy's granularity while the copy runs; the daemon's blockdev-mirror
 * (its QMP lines, logged at debug level) has the buf-size, which QEMU
 * took; the job's record and `virt-mirror job` say both.
 */
static void
test_granularity (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) speed = NULL;
    g_autoptr (VmrCliResult) shown = NULL;
    g_autofree gchar *log = NULL;
    g_auto (GStrv) lines = NULL;
    const gchar *mirror_line = NULL;

    /* slow enough to be seen running */
    h->daemon_log = vmr_harness_path (h, "daemon.log");
    g_setenv ("G_MESSAGES_DEBUG", "vmr-qmp", TRUE);
    g_free (start_policy_daemon (h, "[defaults]\nspeed = 1M\ngranularity = 8K\nbuf-size = 1M\n"));
    g_unsetenv ("G_MESSAGES_DEBUG");
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    job = vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpint (vmr_harness_json_int (job, "granularity"), ==, 8192);
    g_assert_cmpint (mirror_granularity (h, id), ==, 8192);
    g_assert_cmpint (vmr_harness_json_int (job, "buf-size"), ==, 1024 * 1024);
    g_assert_true (g_file_get_contents (h->daemon_log, &log, NULL, NULL));
    lines = g_strsplit (log, "\n", -1);
    for (guint i = 0; lines[i] != NULL && mirror_line == NULL; i++)
        if (strstr (lines[i], "\"blockdev-mirror\"") != NULL)
            mirror_line = lines[i];
    g_test_message ("the daemon's mirror: %s", mirror_line);
    g_assert_nonnull (mirror_line);
    assert_contains (mirror_line, "\"buf-size\":1048576", "the daemon's blockdev-mirror");
    shown = vmr_harness_cli (h, "job", id, NULL);
    vmr_cli_result_assert_ok (shown);
    assert_contains (shown->out, "Buffer:", "virt-mirror job");
    assert_contains (shown->out, "1 MiB", "virt-mirror job");

    speed = vmr_harness_cli (h, "set-speed", id, "0", NULL);
    vmr_cli_result_assert_ok (speed);
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* what max-delay does to a job whose window stays closed */
typedef struct {
    const gchar *on_max_delay; /* the policy's on-max-delay */
    const gchar *final_state;  /* where the job ends */
    guint timeout_s;           /* how long it may take to get there */
} MaxDelayCase;

/* fail: the job fails, the VM stays on its source */
static const MaxDelayCase max_delay_fail = { "fail", "failed", 20 };
/* proceed: the copy runs after all, outside the window */
static const MaxDelayCase max_delay_proceed = { "proceed", "completed", VMR_HARNESS_JOB_TIMEOUT_S };

static void
test_max_delay (VmrHarness *h, gconstpointer user_data)
{
    const MaxDelayCase *c = user_data;
    g_autofree gchar *closed = window_around_now (60, 120);
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    gboolean proceeds = g_str_equal (c->final_state, "completed");

    policy = g_strdup_printf ("[defaults]\n"
                              "sample-interval = 500ms\n"
                              "window = %s\n"
                              "max-delay = 2s\n"
                              "on-max-delay = %s\n",
                              closed, c->on_max_delay);
    g_free (start_policy_daemon (h, policy));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (job_state (job), ==, "delayed");
    final = vmr_harness_wait_job (h, id, c->final_state, c->timeout_s);
    g_assert_cmpstr (policy_decision (final), ==, c->on_max_delay);
    /* the delay lasted max-delay, whatever came of it */
    g_assert_cmpint (history_time (final, proceeds ? "copying" : "failed")
                         - history_time (final, "delayed"),
                     >=, 2 * G_USEC_PER_SEC);
    if (proceeds) {
        assert_history (final, "delayed", "copying", "completed", NULL);
        vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
        return;
    }
    assert_contains (vmr_harness_json_string (final, "reason"), "max-delay", "the job's reason");
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_job_record (h, id, "failed");
    vmr_harness_assert_stays_on_source (h, "disk0", source, "raw", expected);
}

/* ---- a copy that does not converge, a copy's deadline: no load needed ---- */

/* a copy at 1 byte/s whose backlog stays level, and what the policy does about it */
typedef struct {
    const gchar *keys;        /* the policy's keys besides sample-interval */
    const gchar *final_state; /* where the job ends */
    const gchar *reason;      /* a part of the convergence's or the job's reason */
} ConvergeCase;

/* converge-after: full speed, and the copy completes */
static const ConvergeCase converge_by_speed
    = { "speed = 1\nconverge-after = 2s\n", "completed", "not shrinking over 2s" };
/* on-deadline = fail: cancelled, the VM stays on its source */
static const ConvergeCase deadline_fail
    = { "speed = 1\ndeadline = 2s\non-deadline = fail\n", "failed", "deadline of 2s" };

static void
test_converge (VmrHarness *h, gconstpointer user_data)
{
    const ConvergeCase *c = user_data;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) final = NULL;
    JsonObject *convergence;

    policy = g_strdup_printf ("[defaults]\nsample-interval = 500ms\n%s", c->keys);
    g_free (start_policy_daemon (h, policy));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    final = vmr_harness_wait_job (h, id, c->final_state, 30);
    if (g_str_equal (c->final_state, "completed")) {
        convergence = vmr_harness_json_object (final, "convergence");
        g_assert_cmpstr (vmr_harness_json_string (convergence, "by"), ==, "speed");
        g_assert_cmpstr (vmr_harness_json_string (convergence, "state"), ==, "converged");
        assert_contains (vmr_harness_json_string (convergence, "reason"), c->reason,
                         "the convergence's reason");
        g_assert_cmpstr (policy_decision (final), ==, "converge");
        vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
        return;
    }
    assert_contains (vmr_harness_json_string (final, "reason"), c->reason, "the job's reason");
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_job_record (h, id, "failed");
    vmr_harness_assert_stays_on_source (h, "disk0", source, "raw", expected);
}

/*
 * converge-by = write-blocking: QEMU switches the mirror's copy mode, the
 * job and `virt-mirror job` say so; at 1 byte/s it still does not finish
 * and is cancelled, the VM on its source
 */
static void
test_converge_write_blocking (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (VmrCliResult) shown = NULL;
    g_autoptr (VmrCliResult) cancel = NULL;
    JsonObject *convergence = NULL;
    gint64 until = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;

    g_free (start_policy_daemon (h, "[defaults]\nsample-interval = 500ms\nspeed = 1\n"
                                    "converge-after = 2s\nconverge-by = write-blocking\n"));
    source = start_idle_vm (h);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    while (g_get_monotonic_time () < until) {
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_get_job (h, id);
        convergence = vmr_json_get_object (job, "convergence");
        if (convergence != NULL
            && g_strcmp0 (vmr_json_get_string (job, "copy-mode"), "write-blocking") == 0)
            break;
        g_usleep (200 * 1000);
    }
    if (convergence == NULL)
        vmr_fail ("the copy was not made to converge: %s", job_text (job));
    g_assert_cmpstr (vmr_harness_json_string (job, "copy-mode"), ==, "write-blocking");
    g_assert_cmpstr (vmr_harness_json_string (convergence, "by"), ==, "write-blocking");
    g_assert_cmpstr (vmr_harness_json_string (convergence, "state"), ==, "converging");
    assert_contains (vmr_harness_json_string (convergence, "reason"), "not shrinking over 2s",
                     "the convergence's reason");
    shown = vmr_harness_cli (h, "job", id, NULL);
    vmr_cli_result_assert_ok (shown);
    assert_contains (shown->out, "converging by write-blocking since ", "virt-mirror job");

    cancel = vmr_harness_cli (h, "cancel", id, NULL);
    vmr_cli_result_assert_ok (cancel);
    final = vmr_harness_wait_job (h, id, "cancelled", 30);
    g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    vmr_harness_assert_stays_on_source (h, "disk0", source, "raw", expected);
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
        JsonObject *obj = vmr_harness_json_node_object (policy);

        if (json_object_has_member (obj, "refused"))
            return json_object_ref (vmr_harness_json_object (obj, "refused"));
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

    g_free (start_policy_daemon (h, good_policy));
    assert_shown (h, "speed", "100M");

    g_free (vmr_harness_write_policy (h, bad_policy));
    g_subprocess_send_signal (h->daemon, SIGHUP);
    /* the daemon's refusal, as query-policy tells it */
    refused = wait_refused (h);
    where = g_strdup (":3: [defaults] hold:");
    assert_contains (vmr_harness_json_string (refused, "error"), where, "the refusal");
    assert_contains (vmr_harness_json_string (refused, "error"), "the policy is unchanged",
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

        g_assert_false (json_object_has_member (vmr_harness_json_node_object (policy), "refused"));
        g_assert_true (json_object_has_member (vmr_harness_json_node_object (policy), "loaded"));
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

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    VMR_HARNESS_ADD_NO_DAEMON ("/policy/window/reload-opens", NULL, test_window);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/max-delay/fail", &max_delay_fail, test_max_delay);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/max-delay/proceed", &max_delay_proceed, test_max_delay);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/converge/by-speed", &converge_by_speed, test_converge);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/converge/by-write-blocking", NULL,
                               test_converge_write_blocking);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/deadline/fail", &deadline_fail, test_converge);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/granularity", NULL, test_granularity);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/reload-invalid", NULL, test_reload_invalid);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/sighup-invalid", NULL, test_sighup_invalid);
    VMR_HARNESS_ADD_NO_DAEMON ("/policy/file/start-invalid", NULL, test_start_invalid);
    return g_test_run ();
}
