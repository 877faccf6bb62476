/*
 * The engine against a fake backend, one job at a time: its state machine,
 * the user's commands in every state, failures in every state, and the
 * orders of events a real QEMU cannot be made to show on demand. The groups
 * and the admission limits are in engine-cases-group.c, the life of domains
 * and the restart of the daemon in engine-cases-domain.c, a copy that does
 * not converge and a copy's deadline in engine-cases-converge.c.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"
#include "engine-stats.h"

#include <string.h>

#include "engine-private.h"

/* the images of web01's disk0 */
#define SRC  "web01-disk0.img"
#define BOTH "web01-disk0-dst.img web01-disk0.img"

/* the first step of most cases: the copy runs */
#define STARTED                                                                                    \
    MIGRATE (.states = "vmr-1 copying", .changes = "vmr-1 queued, vmr-1 copying",                  \
             .calls = "start_copy vmr-1 0", .replies = "migrate ok vmr-1", .files = BOTH)
#define STARTED_MANUAL                                                                             \
    MIGRATE (.flags = MIGRATE_MANUAL_PIVOT, .states = "vmr-1 copying",                             \
             .calls = "start_copy vmr-1 0", .replies = "migrate ok vmr-1")
#define CANCELLED                                                                                  \
    COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .changes = "vmr-1 cancelled",           \
             .calls = "cancel vmr-1", .replies = "cancel vmr-1 ok cancelled", .files = SRC)

/* QEMU refuses @command: the job stays as it was and the user is told why */
#define REFUSED(command, message)                                                                  \
    { STEP_REPLY, .arg = command, .value = FAKE_REPLY_FAIL, .text = message },                     \
        COMMAND (.arg = command, .states = "vmr-1 copying", .calls = command " vmr-1",             \
                 .replies = command " vmr-1 error: " message)

static const EngineCase job_cases[] = {
    /* ---- the state machine ---- */
    { "/engine/job/lifecycle",
      .steps = { HOLD ("pivot"),
                 STARTED,
                 READY (.calls = "pivot vmr-1", .states = "vmr-1 pivoting",
                        .changes = "vmr-1 synced, vmr-1 pivoting"),
                 /* QEMU accepted the pivot; its job-finished follows */
                 { STEP_RELEASE, "vmr-1", .arg = "pivot", .calls = "", .states = "vmr-1 completed",
                   .changes = "vmr-1 completed" } },
      .files = BOTH },
    { "/engine/job/manual-pivot",
      .steps
      = { STARTED_MANUAL, READY (.states = "vmr-1 synced", .changes = "vmr-1 synced", .calls = ""),
          COMMAND (.arg = "pivot", .states = "vmr-1 completed",
                   .changes = "vmr-1 pivoting, vmr-1 completed", .calls = "pivot vmr-1",
                   .replies = "pivot vmr-1 ok pivoting"),
          COMMAND (.arg = "pivot", .calls = "",
                   .replies = "pivot vmr-1 error: job vmr-1 is completed already") },
      .files = BOTH },
    { "/engine/job/pivot-before-sync",
      .steps = { STARTED_MANUAL,
                 COMMAND (.arg = "pivot", .states = "vmr-1 copying", .calls = "",
                          .replies = "pivot vmr-1 error: job vmr-1 is copying; it can pivot "
                                     "once it is synced"),
                 CANCELLED } },
    { "/engine/job/pivot-refused",
      .steps = { HOLD ("pivot"),
                 STARTED,
                 READY (.states = "vmr-1 pivoting"),
                 { STEP_FAIL, "vmr-1", .arg = "pivot", .text = "not ready",
                   .states = "vmr-1 synced", .changes = "vmr-1 synced", .calls = "" },
                 { STEP_REPLY, .arg = "pivot", .value = FAKE_REPLY_AT_ONCE },
                 COMMAND (.arg = "pivot", .states = "vmr-1 completed", .calls = "pivot vmr-1",
                          .replies = "pivot vmr-1 ok pivoting") },
      .files = BOTH },
    { "/engine/job/unknown",
      .steps = { COMMAND (.job = "vmr-7", .arg = "pause", .states = "", .calls = "",
                          .replies = "pause vmr-7 error: unknown job 'vmr-7'") } },
    { "/engine/job/migrate-unknown-disk",
      .steps = { MIGRATE (.arg = "disk9", .states = "", .calls = "",
                          .replies = "migrate error: domain web01 has no disk 'disk9' (its "
                                     "disks: disk0)") } },
    { "/engine/job/migrate-twice",
      .steps = { STARTED,
                 MIGRATE (.states = "vmr-1 copying", .calls = "",
                          .replies = "migrate error: disk0 of web01 is already "
                                     "migrating (job vmr-1)"),
                 CANCELLED } },
    { "/engine/job/reuse",
      .steps = { MIGRATE (.flags = MIGRATE_REUSE, .states = "vmr-1 copying",
                          .calls = "start_copy vmr-1 0", .files = BOTH),
                 /* a destination the daemon did not make stays */
                 FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                           .files = BOTH) },
      .files = BOTH },

    /* ---- cancel in every state ---- */
    { "/engine/cancel/copying", .steps = { STARTED, CANCELLED } },
    { "/engine/cancel/starting",
      .steps = { HOLD ("start_copy"),
                 MIGRATE (.states = "vmr-1 queued", .calls = "start_copy vmr-1 0", .replies = "",
                          .files = BOTH),
                 COMMAND (.arg = "cancel", .states = "vmr-1 queued", .calls = "",
                          .replies = "cancel vmr-1 error: job vmr-1 is starting; try again"),
                 { STEP_RELEASE, "vmr-1", .arg = "start_copy", .states = "vmr-1 copying",
                   .replies = "migrate ok vmr-1" },
                 CANCELLED } },
    { "/engine/cancel/paused",
      .steps = { STARTED,
                 COMMAND (.arg = "pause", .states = "vmr-1 paused", .calls = "pause vmr-1",
                          .replies = "pause vmr-1 ok paused"),
                 CANCELLED } },
    { "/engine/cancel/synced",
      .steps = { STARTED_MANUAL, READY (.states = "vmr-1 synced"), CANCELLED } },
    { "/engine/cancel/pivoting",
      .steps = { HOLD ("pivot"),
                 STARTED,
                 READY (.states = "vmr-1 pivoting"),
                 COMMAND (.arg = "cancel", .states = "vmr-1 pivoting", .calls = "",
                          .replies = "cancel vmr-1 error: job vmr-1 is pivoting; it can no "
                                     "longer be cancelled"),
                 { STEP_RELEASE, "vmr-1", .arg = "pivot", .states = "vmr-1 completed" } },
      .files = BOTH },
    { "/engine/cancel/refused",
      .steps = { STARTED, REFUSED ("cancel", "no job"),
                 FINISHED (.arg = "cancelled", .states = "vmr-1 cancelled", .files = SRC) } },

    /* ---- failure in every state ---- */
    { "/engine/fail/start",
      .steps = { { STEP_REPLY, .arg = "start_copy", .value = FAKE_REPLY_FAIL, .text = "busy" },
                 MIGRATE (.states = "vmr-1 failed", .changes = "vmr-1 queued, vmr-1 failed",
                          .calls = "start_copy vmr-1 0", .replies = "migrate error: busy",
                          .reasons = "vmr-1=busy", .files = SRC) } },
    { "/engine/fail/copying",
      .steps = { STARTED, FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                                    .changes = "vmr-1 failed", .calls = "",
                                    .reasons = "vmr-1=I/O error", .files = SRC) } },
    { "/engine/fail/paused",
      .steps = { STARTED, COMMAND (.arg = "pause", .states = "vmr-1 paused"),
                 FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                           .reasons = "vmr-1=I/O error", .files = SRC),
                 COMMAND (.arg = "resume", .calls = "",
                          .replies = "resume vmr-1 error: job vmr-1 is failed already") } },
    { "/engine/fail/synced",
      .steps = { STARTED_MANUAL, READY (.states = "vmr-1 synced"),
                 FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                           .changes = "vmr-1 failed", .files = SRC) } },
    { "/engine/fail/pivoting",
      .steps = { HOLD ("pivot"),
                 STARTED,
                 READY (.states = "vmr-1 pivoting"),
                 FINISHED (.arg = "failed", .text = "pivot failed", .states = "vmr-1 failed",
                           .changes = "vmr-1 failed", .reasons = "vmr-1=pivot failed"),
                 /* the answer to the pivot comes after the end: nothing moves */
                 { STEP_RELEASE, "vmr-1", .arg = "pivot", .states = "vmr-1 failed", .changes = "",
                   .calls = "" } } },

    /* ---- pause, resume, speed ---- */
    { "/engine/pause/resume",
      .steps = { STARTED,
                 COMMAND (.arg = "pause", .states = "vmr-1 paused", .changes = "vmr-1 paused",
                          .calls = "pause vmr-1", .replies = "pause vmr-1 ok paused"),
                 COMMAND (.arg = "pause", .calls = "",
                          .replies = "pause vmr-1 error: job vmr-1 is paused already"),
                 COMMAND (.arg = "resume", .states = "vmr-1 copying", .changes = "vmr-1 copying",
                          .calls = "resume vmr-1", .replies = "resume vmr-1 ok copying"),
                 COMMAND (.arg = "resume", .calls = "",
                          .replies = "resume vmr-1 error: job vmr-1 is copying, not paused"),
                 READY (.states = "vmr-1 completed", .calls = "pivot vmr-1") },
      .files = BOTH },
    { "/engine/pause/ready-while-paused",
      .steps = { STARTED, COMMAND (.arg = "pause", .states = "vmr-1 paused"),
                 /* READY while paused: the job waits for the resume */
                 READY (.states = "vmr-1 paused", .changes = "", .calls = ""),
                 COMMAND (.arg = "resume", .states = "vmr-1 completed",
                          .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed",
                          .calls = "resume vmr-1; pivot vmr-1", .replies = "resume vmr-1 ok *") },
      .files = BOTH },
    { "/engine/pause/pivot-resumes-first",
      .steps
      = { STARTED_MANUAL, READY (.states = "vmr-1 synced"),
          COMMAND (.arg = "pause", .states = "vmr-1 paused", .calls = "pause vmr-1"),
          COMMAND (.arg = "pivot", .states = "vmr-1 completed",
                   .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed",
                   .calls = "resume vmr-1; pivot vmr-1", .replies = "pivot vmr-1 ok pivoting") },
      .files = BOTH },
    { "/engine/pause/refused", .steps = { STARTED, REFUSED ("pause", "no such job"), CANCELLED } },
    { "/engine/speed/set",
      .steps
      = { MIGRATE (.value = 1000, .states = "vmr-1 copying", .calls = "start_copy vmr-1 1000"),
          COMMAND (.arg = "set_speed", .value = 5000, .states = "vmr-1 copying", .changes = "",
                   .calls = "set_speed vmr-1 5000", .replies = "set_speed vmr-1 ok copying"),
          COMMAND (.arg = "pause", .states = "vmr-1 paused"),
          /* the user's speed is the full speed: the resume is not throttled */
          COMMAND (.arg = "resume", .states = "vmr-1 copying", .calls = "resume vmr-1"),
          CANCELLED } },
    { "/engine/speed/while-pivoting",
      .steps = { HOLD ("pivot"),
                 STARTED,
                 READY (.states = "vmr-1 pivoting"),
                 COMMAND (.arg = "set_speed", .value = 5000, .calls = "",
                          .replies = "set_speed vmr-1 error: job vmr-1 is pivoting"),
                 { STEP_RELEASE, "vmr-1", .arg = "pivot", .states = "vmr-1 completed" } },
      .files = BOTH },
    { "/engine/copy-mode/active",
      .steps = { STARTED,
                 COMMAND (.arg = "set_copy_mode_active", .states = "vmr-1 copying",
                          .calls = "set_copy_mode_active vmr-1",
                          .replies = "set_copy_mode_active vmr-1 ok copying"),
                 COMMAND (.arg = "set_copy_mode_active", .calls = "",
                          .replies = "* error: job vmr-1 is write-blocking already"),
                 CANCELLED } },

    /* ---- orders of events ---- */
    { "/engine/race/ready-before-start-reply",
      .steps = { HOLD ("start_copy"),
                 MIGRATE (.states = "vmr-1 queued", .replies = ""),
                 /* QEMU may send READY before the reply to blockdev-mirror is read */
                 READY (.states = "vmr-1 completed",
                        .changes = "vmr-1 copying, vmr-1 synced, vmr-1 pivoting, vmr-1 completed",
                        .calls = "pivot vmr-1"),
                 { STEP_RELEASE, "vmr-1", .arg = "start_copy", .states = "vmr-1 completed",
                   .changes = "", .replies = "migrate ok vmr-1" } },
      .files = BOTH },
    { "/engine/race/ready-before-start-reply-manual",
      .steps
      = { HOLD ("start_copy"),
          MIGRATE (.flags = MIGRATE_MANUAL_PIVOT, .states = "vmr-1 queued"),
          READY (.states = "vmr-1 synced", .changes = "vmr-1 copying, vmr-1 synced", .calls = ""),
          { STEP_RELEASE, "vmr-1", .arg = "start_copy", .states = "vmr-1 synced", .changes = "",
            .replies = "migrate ok vmr-1" },
          CANCELLED } },
    { "/engine/race/failed-during-pause",
      .steps
      = { HOLD ("pause"),
          STARTED,
          COMMAND (.arg = "pause", .states = "vmr-1 copying", .calls = "pause vmr-1",
                   .replies = ""),
          FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed", .files = SRC),
          /* the pause QEMU accepted before the end moves nothing */
          { STEP_RELEASE, "vmr-1", .arg = "pause", .states = "vmr-1 failed", .changes = "",
            .replies = "pause vmr-1 ok failed" } } },
    { "/engine/race/failed-during-user-pivot",
      .steps
      = { HOLD ("pivot"),
          STARTED_MANUAL,
          READY (.states = "vmr-1 synced"),
          COMMAND (.arg = "pivot", .states = "vmr-1 pivoting", .replies = ""),
          FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed"),
          { STEP_FAIL, "vmr-1", .arg = "pivot", .text = "no such job", .states = "vmr-1 failed",
            .changes = "", .replies = "pivot vmr-1 error: no such job" } } },
    { "/engine/race/cancel-reply-after-the-end", .manual_finish = TRUE,
      .steps = { HOLD ("cancel"),
                 STARTED,
                 COMMAND (.arg = "cancel", .states = "vmr-1 copying", .replies = ""),
                 FINISHED (.arg = "cancelled", .states = "vmr-1 cancelled", .replies = ""),
                 { STEP_RELEASE, "vmr-1", .arg = "cancel", .states = "vmr-1 cancelled",
                   .replies = "cancel vmr-1 ok cancelled" } } },
    { "/engine/race/completed-without-pivot",
      /* a pivot made by someone else is a pivot all the same */
      .steps = { STARTED, FINISHED (.arg = "completed", .states = "vmr-1 completed",
                                    .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed") },
      .files = BOTH },
    { "/engine/event/unknown-job",
      .steps = { STARTED,
                 { STEP_FINISHED, "vmr-99", .arg = "failed", .text = "?", .states = "vmr-1 copying",
                   .changes = "", .calls = "" },
                 { STEP_READY, "vmr-99", .states = "vmr-1 copying", .changes = "" },
                 CANCELLED } },
    { "/engine/event/ready-twice",
      .steps = { STARTED_MANUAL, READY (.states = "vmr-1 synced"),
                 READY (.states = "vmr-1 synced", .changes = "", .calls = ""), CANCELLED } },
};

/* ---- "job-progress": after each reading of a copy's progress ---- */

/* the jobs "job-progress" named, each a copy of its state then: "vmr-1 copying, ..." */
static GString *progress_seen;

static void
job_progress_cb (VmrEngine *engine, gpointer job_ptr, gpointer user_data)
{
    VmrJob *job = job_ptr;

    g_string_append_printf (progress_seen, "%s%s %s %" G_GUINT64_FORMAT,
                            progress_seen->len > 0 ? ", " : "", job->id,
                            vmr_job_state_to_string (job->state), job->done_bytes);
}

static gboolean
progress_seen_thrice (EngineFixture *f)
{
    return g_strstr_len (progress_seen->str, -1, ", ") != NULL
           && strstr (strstr (progress_seen->str, ", ") + 2, ", ") != NULL;
}

static void
test_job_progress (void)
{
    static const EngineCase tc = { "/engine/progress/signal" };
    const EngineStep start = MIGRATE (.states = "vmr-1 copying", .replies = "migrate ok vmr-1");
    const EngineStep cancel = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled",
                                       .calls = "cancel vmr-1", .files = SRC);
    VmrBackendProgress progress = { .job_id = (gchar *) "vmr-1",
                                    .total_bytes = ENGINE_DISK_SIZE,
                                    .done_bytes = ENGINE_DISK_SIZE / 4 };
    EngineFixture f;
    gulong id;
    gsize seen_at_end;

    progress_seen = g_string_new (NULL);
    engine_fixture_setup (&f, &tc);
    f.engine->progress_interval_ms = 10;
    fake_backend_set_progress (engine_fixture_backend (&f, "web01"), &progress);
    id = g_signal_connect (f.engine, "job-progress", G_CALLBACK (job_progress_cb), NULL);
    g_assert_true (engine_fixture_run_step (&f, 0, &start));
    g_assert_true (engine_fixture_wait_for (progress_seen_thrice, &f, 5000));
    g_assert_true (g_str_has_prefix (progress_seen->str, "vmr-1 copying 262144, vmr-1 copying"));
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel));
    /* a job that ended gets no more */
    seen_at_end = progress_seen->len;
    for (guint i = 0; i < 10; i++) {
        g_usleep (10 * 1000);
        engine_fixture_iterate ();
    }
    g_assert_cmpuint (progress_seen->len, ==, seen_at_end);
    g_assert_null (strstr (progress_seen->str, "cancelled"));
    g_signal_handler_disconnect (f.engine, id);
    engine_fixture_teardown (&f);
    g_string_free (progress_seen, TRUE);
}

/* ---- an automatic pivot refused is tried again ---- */

static gboolean
first_job_completed (EngineFixture *f)
{
    VmrJob *job = vmr_job_table_lookup (f->engine->jobs, "vmr-1");

    return job != NULL && job->state == VMR_JOB_STATE_COMPLETED;
}

/* the hypervisor's connection was down when the copy came in sync */
static void
test_pivot_retried (void)
{
    static const EngineCase tc = {
        "/engine/job/pivot-retried",
        .steps = { HOLD ("pivot"),
                   STARTED,
                   READY (.states = "vmr-1 pivoting"),
                   { STEP_FAIL, "vmr-1", .arg = "pivot", .text = "libvirt is not connected",
                     .states = "vmr-1 synced", .changes = "vmr-1 synced", .calls = "" },
                   { STEP_REPLY, .arg = "pivot", .value = FAKE_REPLY_AT_ONCE } },
        .files = BOTH,
    };
    EngineFixture f;
    g_autofree gchar *log = NULL;

    engine_fixture_setup (&f, &tc);
    for (guint i = 0; tc.steps[i].kind != STEP_END; i++)
        g_assert_true (engine_fixture_run_step (&f, i, &tc.steps[i]));
    /* nobody pivots: the daemon tries again by itself, a second later */
    g_assert_true (engine_fixture_wait_for (first_job_completed, &f, 5000));
    log = fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE);
    g_assert_nonnull (strstr (log, "pivot vmr-1"));
    engine_fixture_teardown (&f);
}

/* ---- the statistics (engine-stats.h) ---- */

/* one disk moves and completes, another is cancelled while it copies */
static const EngineCase stats_case = {
    "/engine/stats",
    .domains = "web01=disk0,disk1",
    .steps
    = { MIGRATE (.states = "vmr-1 copying"), READY (.states = "vmr-1 completed"),
        MIGRATE (.arg = "disk1", .states = "vmr-1 completed, vmr-2 copying"),
        COMMAND (.job = "vmr-2", .arg = "cancel", .states = "vmr-1 completed, vmr-2 cancelled") },
    /* the first copy completed: its destination stays */
    .files = "web01-disk0-dst.img web01-disk0.img web01-disk1.img",
};

static guint64
decisions_of (const VmrEngineStats *stats, const gchar *action)
{
    for (guint i = 0; i < stats->decisions->len; i++) {
        const VmrDecisionStats *decision = g_ptr_array_index (stats->decisions, i);

        if (g_str_equal (decision->action, action))
            return decision->count;
    }
    g_assert_not_reached ();
}

static void
test_stats (void)
{
    EngineFixture f;
    g_autoptr (VmrEngineStats) stats = NULL;
    const VmrJobStats *done;
    const VmrJobStats *cancelled;

    engine_fixture_setup (&f, &stats_case);
    for (guint i = 0; stats_case.steps[i].kind != STEP_END; i++)
        g_assert_true (engine_fixture_run_step (&f, i, &stats_case.steps[i]));
    stats = vmr_engine_get_stats (f.engine);
    g_assert_cmpuint (stats->jobs->len, ==, 2);
    done = g_ptr_array_index (stats->jobs, 0);
    cancelled = g_ptr_array_index (stats->jobs, 1);
    g_assert_cmpstr (done->id, ==, "vmr-1");
    g_assert_cmpstr (done->domain, ==, "web01");
    g_assert_cmpstr (done->disk, ==, "disk0");
    g_assert_cmpstr (done->backend, ==, "fake");
    g_assert_cmpint (done->state, ==, VMR_JOB_STATE_COMPLETED);
    g_assert_cmpint (done->start_time_us, >, 0);
    g_assert_cmpint (done->end_time_us, >=, done->start_time_us);
    g_assert_cmpfloat (done->rate, ==, 0);
    g_assert_cmpuint (done->remaining_bytes, ==, done->total_bytes - done->processed_bytes);
    g_assert_cmpstr (cancelled->disk, ==, "disk1");
    g_assert_cmpint (cancelled->state, ==, VMR_JOB_STATE_CANCELLED);
    g_assert_cmpint (cancelled->end_time_us, >=, cancelled->start_time_us);
    g_assert_cmpuint (stats->jobs_by_state[VMR_JOB_STATE_COMPLETED], ==, 1);
    g_assert_cmpuint (stats->jobs_by_state[VMR_JOB_STATE_CANCELLED], ==, 1);
    g_assert_cmpuint (stats->jobs_by_state[VMR_JOB_STATE_COPYING], ==, 0);
    g_assert_cmpuint (stats->jobs_ended[VMR_JOB_STATE_COMPLETED - VMR_JOB_STATE_COMPLETED], ==, 1);
    g_assert_cmpuint (stats->jobs_ended[VMR_JOB_STATE_FAILED - VMR_JOB_STATE_COMPLETED], ==, 0);
    g_assert_cmpuint (stats->jobs_ended[VMR_JOB_STATE_CANCELLED - VMR_JOB_STATE_COMPLETED], ==, 1);
    /* each job got the policy's start; the other actions are there from 0 */
    g_assert_cmpuint (decisions_of (stats, "start"), ==, 2);
    g_assert_cmpuint (decisions_of (stats, "throttle"), ==, 0);
    g_assert_cmpuint (decisions_of (stats, "wait"), ==, 0);
    /* no load sample yet (sample-interval 60s), and a backend that reads no I/O threads */
    g_assert_cmpuint (stats->iothreads->len, ==, 0);
    engine_fixture_teardown (&f);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    engine_fixture_init_logging ();
    engine_cases_add (job_cases, G_N_ELEMENTS (job_cases));
    engine_add_group_cases ();
    engine_add_domain_cases ();
    engine_add_policy_cases ();
    engine_add_space_cases ();
    engine_add_destination_cases ();
    engine_add_adaptive_cases ();
    engine_add_converge_cases ();
    engine_add_budget_cases ();
    g_test_add_func ("/engine/progress/signal", test_job_progress);
    g_test_add_func ("/engine/stats", test_stats);
    g_test_add_func ("/engine/job/pivot-retried", test_pivot_retried);
    return g_test_run ();
}
