/*
 * The free space of a destination's file system (engine-space.c), on the
 * file system of the test's images: a space-margin larger than any file
 * system makes a copy not fit, a margin of 0 makes it fit. Before the copy
 * the policy's space-check refuses it, warns or does nothing; during the
 * copy the space watch pauses it and resumes it, and a copy QEMU stopped
 * on ENOSPC is shown paused.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include <errno.h>
#include <string.h>

/* a wait longer than this is a hang, not a slow machine */
#define WAIT_LIMIT_MS 3000

#define SAMPLE_FAST "[defaults]\nsample-interval = 100ms\nmax-parallel-per-iothread = 0\n"
#define NO_ROOM     "space-margin = 1024T\n"
#define SRC         "web01-disk0.img"

#define CANCEL_AT_THE_END                                                                          \
    COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .calls = "cancel vmr-1", .files = SRC)

static const EngineCase check_cases[] = {
    { "/engine/space/refused", .policy = ENGINE_TEST_POLICY NO_ROOM,
      .steps = { MIGRATE (.states = "", .calls = "",
                          .replies = "migrate error: not enough space for */web01-disk0-dst.img: "
                                     "its file system * has * free, the copy needs 1 PiB (0 B of "
                                     "data and a space-margin of 1 PiB)",
                          .files = SRC) } },
    { "/engine/space/warned", .policy = ENGINE_TEST_POLICY "space-check = warn\n" NO_ROOM,
      .steps = { MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0",
                          .replies = "migrate ok vmr-1",
                          .warning = "not enough space for * (space-check = warn: *"),
                 CANCEL_AT_THE_END } },
    { "/engine/space/off", .policy = ENGINE_TEST_POLICY "space-check = off\n" NO_ROOM,
      .steps = { MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0",
                          .replies = "migrate ok vmr-1"),
                 CANCEL_AT_THE_END } },
};

/* the watch: pauses with the reason, refuses a user's resume, resumes once there is room */
static const EngineCase watch_case = {
    "/engine/space/watch-pauses-and-resumes",
    .policy = SAMPLE_FAST "space-check = warn\n" NO_ROOM,
    .steps = {
        MIGRATE (.warning = "not enough space for *", .replies = "migrate ok vmr-1"),
        COMMAND (.arg = "resume", .replies = "resume vmr-1 error: job vmr-1 is paused for space "
                                             "(destination file system * has * free *)*"),
        STEP (STEP_RELOAD, .text = SAMPLE_FAST "space-margin = 0\n", .replies = "reload ok"),
        CANCEL_AT_THE_END,
    },
};

/* QEMU stopped the copy on ENOSPC: the job shows paused, then resumes when there is room */
static const EngineCase stopped_case = {
    "/engine/space/qemu-stopped",
    .policy = ENGINE_TEST_POLICY,
    .steps = {
        MIGRATE (.states = "vmr-1 copying", .replies = "migrate ok vmr-1"),
        STEP (STEP_RELOAD, .text = SAMPLE_FAST, .replies = "reload ok"),
        CANCEL_AT_THE_END,
    },
};

static VmrJobState awaited_state;

static gboolean
state_reached (EngineFixture *f)
{
    return engine_fixture_job (f, "vmr-1")->state == awaited_state;
}

/* waits for vmr-1 in @state; returns the backend calls on the way */
static gchar *
wait_state (EngineFixture *f, VmrJobState state)
{
    awaited_state = state;
    g_assert_true (engine_fixture_wait_for (state_reached, f, WAIT_LIMIT_MS));
    return fake_backend_take_log (engine_fixture_backend (f, "web01"), FALSE);
}

static void
test_watch (void)
{
    EngineFixture f;
    g_autofree gchar *paused_calls = NULL;
    g_autofree gchar *resumed_calls = NULL;
    VmrJob *job;

    engine_fixture_setup (&f, &watch_case);
    g_assert_true (engine_fixture_run_step (&f, 0, &watch_case.steps[0]));
    paused_calls = wait_state (&f, VMR_JOB_STATE_PAUSED);
    g_assert_true (g_str_has_suffix (paused_calls, "pause vmr-1"));
    job = engine_fixture_job (&f, "vmr-1");
    g_test_message ("paused: %s", job->space_paused);
    g_assert_true (g_pattern_match_simple ("destination file system * has * free (with what the "
                                           "copies write until the next look), below its "
                                           "space-margin of 1 PiB; *",
                                           job->space_paused));
    g_assert_cmpstr (job->decision, ==, "pause");
    g_assert_false (job->user_paused);
    g_assert_true (engine_fixture_run_step (&f, 1, &watch_case.steps[1]));
    /* room again */
    g_assert_true (engine_fixture_run_step (&f, 2, &watch_case.steps[2]));
    resumed_calls = wait_state (&f, VMR_JOB_STATE_COPYING);
    g_assert_cmpstr (resumed_calls, ==, "resume vmr-1");
    g_assert_null (job->space_paused);
    g_assert_cmpstr (job->decision, ==, "resume");
    g_assert_true (engine_fixture_run_step (&f, 3, &watch_case.steps[3]));
    engine_fixture_teardown (&f);
}

static void
test_stopped (void)
{
    EngineFixture f;
    VmrBackendProgress stopped
        = { "vmr-1", ENGINE_DISK_SIZE, ENGINE_DISK_SIZE / 2, 0, TRUE, FALSE, TRUE };
    VmrBackendProgress going
        = { "vmr-1", ENGINE_DISK_SIZE, ENGINE_DISK_SIZE / 2, 0, FALSE, FALSE, FALSE };
    g_autofree gchar *paused_calls = NULL;
    g_autofree gchar *resumed_calls = NULL;
    VmrJob *job;

    engine_fixture_setup (&f, &stopped_case);
    g_assert_true (engine_fixture_run_step (&f, 0, &stopped_case.steps[0]));
    fake_backend_set_progress (engine_fixture_backend (&f, "web01"), &stopped);
    /* QEMU paused it itself: no pause is sent */
    paused_calls = wait_state (&f, VMR_JOB_STATE_PAUSED);
    g_assert_cmpstr (paused_calls, ==, "");
    job = engine_fixture_job (&f, "vmr-1");
    g_test_message ("paused: %s", job->space_paused);
    g_assert_true (g_pattern_match_simple ("QEMU stopped the copy: * (destination file system *)",
                                           job->space_paused));
    g_assert_nonnull (strstr (job->space_paused, g_strerror (ENOSPC)));
    fake_backend_set_progress (engine_fixture_backend (&f, "web01"), &going);
    /* the space watch looks at the next sample, and there is room */
    g_assert_true (engine_fixture_run_step (&f, 1, &stopped_case.steps[1]));
    resumed_calls = wait_state (&f, VMR_JOB_STATE_COPYING);
    g_assert_cmpstr (resumed_calls, ==, "resume vmr-1");
    g_assert_null (job->space_paused);
    g_assert_true (engine_fixture_run_step (&f, 2, &stopped_case.steps[2]));
    engine_fixture_teardown (&f);
}

void
engine_add_space_cases (void)
{
    engine_cases_add (check_cases, G_N_ELEMENTS (check_cases));
    g_test_add_func (watch_case.name, test_watch);
    g_test_add_func (stopped_case.name, test_stopped);
}
