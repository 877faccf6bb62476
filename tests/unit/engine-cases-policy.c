/*
 * What the engine makes of its backend's answers to the queries it sends on
 * its timers: the guest's load (query_load) drives the policy, the copy's
 * progress (query_progress) shows in the job. The policies sample every
 * 100 ms and act at the first sample (hold = 0); each case waits a few
 * samples at most.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include <string.h>

/* a wait longer than this is a hang, not a slow machine */
#define WAIT_LIMIT_MS 3000

/* the guest's reads per wake-up of the loop (about 10 ms) while it is busy */
#define BUSY_READS 1000

#define SAMPLE_FAST "[defaults]\nsample-interval = 100ms\nmax-parallel-per-iothread = 0\nhold = 0\n"

static const EngineCase throttle_case = {
    "/engine/query/load-throttles",
    .policy = SAMPLE_FAST "iops-throttle = 100\nthrottle-speed = 1M\n",
};
static const EngineCase delay_case = {
    "/engine/query/load-delays-and-pauses",
    .policy = SAMPLE_FAST "iops-delay = 100\n",
};
static const EngineCase progress_case = { "/engine/query/progress" };

/* the guest of web01's disk0 and what a wait waits for */
static VmrIoCounters guest_io;
static gboolean guest_busy;
static VmrJobState awaited_state;
static guint64 awaited_done;

static VmrJob *
job_1 (EngineFixture *f)
{
    VmrJob *job = vmr_engine_lookup_job (f->engine, "vmr-1", NULL);

    g_assert_nonnull (job);
    return job;
}

/* the counters QEMU would show: they move while the guest is busy */
static gboolean
state_reached (EngineFixture *f)
{
    if (guest_busy)
        guest_io.read_ops += BUSY_READS;
    fake_backend_set_load (engine_fixture_backend (f, "web01"), "disk0", &guest_io);
    return job_1 (f)->state == awaited_state;
}

/* the guest is busy or quiet until vmr-1 is in @state; the calls made meanwhile */
static gchar *
wait_for_state (EngineFixture *f, gboolean busy, VmrJobState state)
{
    guest_busy = busy;
    awaited_state = state;
    g_assert_true (engine_fixture_wait_for (state_reached, f, WAIT_LIMIT_MS));
    return fake_backend_take_log (engine_fixture_backend (f, "web01"), FALSE);
}

static const gchar *
policy_member (EngineFixture *f, const gchar *name)
{
    g_autoptr (JsonObject) obj = vmr_engine_job_to_json (f->engine, job_1 (f));
    JsonObject *policy = json_object_get_object_member (obj, "policy");
    const gchar *value = json_object_get_string_member_with_default (policy, name, NULL);

    /* interned: the object goes before the caller looks */
    return g_intern_string (value);
}

static const EngineStep copying
    = MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0");
static const EngineStep cancelled = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled",
                                             .calls = "cancel vmr-1", .files = "web01-disk0.img");

static void
test_load_throttles (void)
{
    EngineFixture f;
    g_autofree gchar *throttled = NULL;
    g_autofree gchar *unthrottled = NULL;

    memset (&guest_io, 0, sizeof guest_io);
    engine_fixture_setup (&f, &throttle_case);
    g_assert_true (engine_fixture_run_step (&f, 0, &copying));
    /* a busy guest slows the copy down to throttle-speed */
    throttled = wait_for_state (&f, TRUE, VMR_JOB_STATE_THROTTLED);
    g_assert_cmpstr (throttled, ==, "set_speed vmr-1 1048576");
    g_assert_cmpstr (policy_member (&f, "decision"), ==, "throttle");
    g_assert_cmpuint (job_1 (&f)->speed, ==, 1048576);
    /* and a quiet one lets it go back to full speed, unlimited here */
    unthrottled = wait_for_state (&f, FALSE, VMR_JOB_STATE_COPYING);
    g_assert_cmpstr (unthrottled, ==, "set_speed vmr-1 0");
    g_assert_cmpstr (policy_member (&f, "decision"), ==, "unthrottle");
    g_assert_true (engine_fixture_run_step (&f, 1, &cancelled));
    engine_fixture_teardown (&f);
}

static void
test_load_delays_and_pauses (void)
{
    static const EngineStep delayed = MIGRATE (.states = "vmr-1 delayed", .calls = "");
    EngineFixture f;
    g_autofree gchar *started = NULL;
    g_autofree gchar *paused = NULL;
    g_autofree gchar *resumed = NULL;

    memset (&guest_io, 0, sizeof guest_io);
    engine_fixture_setup (&f, &delay_case);
    /* with iops-delay, nothing starts before the first load sample */
    g_assert_true (engine_fixture_run_step (&f, 0, &delayed));
    g_assert_cmpstr (policy_member (&f, "decision"), ==, "delay");
    started = wait_for_state (&f, FALSE, VMR_JOB_STATE_COPYING);
    g_assert_cmpstr (started, ==, "start_copy vmr-1 0");
    /* a busy guest pauses the copy; the pause is the policy's, not a user's */
    paused = wait_for_state (&f, TRUE, VMR_JOB_STATE_PAUSED);
    g_assert_cmpstr (paused, ==, "pause vmr-1");
    g_assert_false (job_1 (&f)->user_paused);
    resumed = wait_for_state (&f, FALSE, VMR_JOB_STATE_COPYING);
    g_assert_cmpstr (resumed, ==, "resume vmr-1");
    g_assert_true (engine_fixture_run_step (&f, 1, &cancelled));
    engine_fixture_teardown (&f);
}

static gboolean
progress_reached (EngineFixture *f)
{
    return job_1 (f)->done_bytes == awaited_done;
}

/* QEMU reports @done bytes copied of vmr-1, and a job the engine does not know */
static void
report_progress (EngineFixture *f, guint64 done)
{
    VmrBackendProgress progress = { "vmr-1", ENGINE_DISK_SIZE, done, 0, FALSE, FALSE };
    VmrBackendProgress stranger = { "vmr-9", 1, 1, 0, FALSE, FALSE };

    fake_backend_set_progress (engine_fixture_backend (f, "web01"), &progress);
    fake_backend_set_progress (engine_fixture_backend (f, "web01"), &stranger);
    awaited_done = done;
    g_assert_true (engine_fixture_wait_for (progress_reached, f, WAIT_LIMIT_MS));
}

static void
test_progress (void)
{
    EngineFixture f;
    g_autoptr (JsonObject) obj = NULL;
    JsonObject *progress;

    engine_fixture_setup (&f, &progress_case);
    g_assert_true (engine_fixture_run_step (&f, 0, &copying));
    report_progress (&f, ENGINE_DISK_SIZE / 4);
    report_progress (&f, ENGINE_DISK_SIZE / 2);
    obj = vmr_engine_job_to_json (f.engine, job_1 (&f));
    progress = json_object_get_object_member (obj, "progress");
    g_assert_cmpint (json_object_get_int_member (progress, "total"), ==, ENGINE_DISK_SIZE);
    g_assert_cmpint (json_object_get_int_member (progress, "backlog"), ==, ENGINE_DISK_SIZE / 2);
    /* two samples make a rate, and the rate an estimate */
    g_assert_cmpint (json_object_get_int_member (progress, "rate"), >, 0);
    g_assert_cmpfloat (json_object_get_double_member (progress, "eta"), >, 0);
    g_assert_true (engine_fixture_run_step (&f, 1, &cancelled));
    engine_fixture_teardown (&f);
}

void
engine_add_policy_cases (void)
{
    g_test_add_func (throttle_case.name, test_load_throttles);
    g_test_add_func (delay_case.name, test_load_delays_and_pauses);
    g_test_add_func (progress_case.name, test_progress);
}
