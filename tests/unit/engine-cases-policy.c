/*
 * What the engine makes of its backend's answers to the queries it sends on
 * its timers: the guest's load (query_load) drives the policy, the copy's
 * progress (query_progress) shows in the job. The policies sample every
 * 100 ms and act at the first sample (hold = 0); each phase of a case waits
 * a few samples at most.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include <string.h>

/* a wait longer than this is a hang, not a slow machine */
#define WAIT_LIMIT_MS 3000

/* how long a job that must stay as it is is watched */
#define STAYS_MS 300

/* the guest's reads per wake-up of the loop (about 10 ms) while it is busy */
#define BUSY_READS 1000

#define SAMPLE_FAST "[defaults]\nsample-interval = 100ms\nmax-parallel-per-iothread = 0\nhold = 0\n"

/* the guest is busy or quiet until vmr-1 is in @state */
typedef struct {
    gboolean busy;
    VmrJobState state;
    const gchar *calls;    /* the backend calls on the way, queries left out */
    const gchar *decision; /* the policy's decision then */
    gboolean stays;        /* it stays in @state for STAYS_MS, whatever the load */
} LoadPhase;

typedef struct {
    EngineCase engine; /* its steps: the submission, and the end if any */
    LoadPhase phases[4];
    const gchar *reason; /* a glob on vmr-1's reason at the end, NULL: not checked */
} LoadCase;

#define CANCEL_AT_THE_END                                                                          \
    COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .calls = "cancel vmr-1",                \
             .files = "web01-disk0.img")

static const LoadCase load_cases[] = {
    { { "/engine/query/load-throttles",
        .policy = SAMPLE_FAST "iops-throttle = 100\nthrottle-speed = 1M\n",
        .steps = { MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0"),
                   CANCEL_AT_THE_END } },
      /* a busy guest slows the copy down to throttle-speed, a quiet one lets it go */
      { { TRUE, VMR_JOB_STATE_THROTTLED, "set_speed vmr-1 1048576", "throttle" },
        { FALSE, VMR_JOB_STATE_COPYING, "set_speed vmr-1 0", "unthrottle" } } },
    { { "/engine/query/load-delays-and-pauses", .policy = SAMPLE_FAST "iops-delay = 100\n",
        /* nothing starts before the first load sample */
        .steps = { MIGRATE (.states = "vmr-1 delayed", .calls = ""), CANCEL_AT_THE_END } },
      { { FALSE, VMR_JOB_STATE_COPYING, "start_copy vmr-1 0", "start" },
        { TRUE, VMR_JOB_STATE_PAUSED, "pause vmr-1", "pause" },
        { FALSE, VMR_JOB_STATE_COPYING, "resume vmr-1", "resume" } } },
    { { "/engine/query/held-too-long-fails",
        .policy = SAMPLE_FAST "iops-delay = 100\nmax-delay = 200ms\non-max-delay = fail\n",
        .steps = { MIGRATE (.states = "vmr-1 delayed") } },
      /* QEMU cancels the paused copy; the job fails for the policy */
      { { FALSE, VMR_JOB_STATE_COPYING, "start_copy vmr-1 0", "start" },
        { TRUE, VMR_JOB_STATE_PAUSED, "pause vmr-1", "pause" },
        { TRUE, VMR_JOB_STATE_FAILED, "cancel vmr-1", "fail" } },
      .reason = "held back for *, longer than max-delay (*" },
    { { "/engine/query/held-too-long-proceeds",
        .policy = SAMPLE_FAST "iops-delay = 100\nmax-delay = 200ms\n",
        .steps = { MIGRATE (.states = "vmr-1 delayed"), CANCEL_AT_THE_END } },
      /* it starts regardless of the load, and the policy leaves it alone */
      { { TRUE, VMR_JOB_STATE_COPYING, "start_copy vmr-1 0", "proceed" },
        { TRUE, VMR_JOB_STATE_COPYING, "", "proceed", .stays = TRUE } } },
};

static const EngineCase progress_case = { "/engine/query/progress" };

/* the guest of web01's disk0 and what a wait waits for */
static VmrIoCounters guest_io;
static gboolean guest_busy;
static VmrJobState awaited_state;
static guint64 awaited_done;

/* the counters QEMU would show: they move while the guest is busy */
static gboolean
state_reached (EngineFixture *f)
{
    if (guest_busy)
        guest_io.read_ops += BUSY_READS;
    fake_backend_set_load (engine_fixture_backend (f, "web01"), "disk0", &guest_io);
    return engine_fixture_job (f, "vmr-1")->state == awaited_state;
}

static gboolean
state_left (EngineFixture *f)
{
    return !state_reached (f);
}

static const gchar *
policy_member (EngineFixture *f, const gchar *name)
{
    g_autoptr (JsonObject) obj
        = vmr_engine_job_to_json (f->engine, engine_fixture_job (f, "vmr-1"));
    JsonObject *policy = json_object_get_object_member (obj, "policy");
    const gchar *value = json_object_get_string_member_with_default (policy, name, NULL);

    /* interned: the object goes before the caller looks */
    return g_intern_string (value);
}

static void
run_phase (EngineFixture *f, const LoadPhase *phase)
{
    g_autofree gchar *calls = NULL;

    guest_busy = phase->busy;
    awaited_state = phase->state;
    if (phase->stays)
        g_assert_false (engine_fixture_wait_for (state_left, f, STAYS_MS));
    else
        g_assert_true (engine_fixture_wait_for (state_reached, f, WAIT_LIMIT_MS));
    calls = fake_backend_take_log (engine_fixture_backend (f, "web01"), FALSE);
    g_assert_cmpstr (calls, ==, phase->calls);
    g_assert_cmpstr (policy_member (f, "decision"), ==, phase->decision);
    /* what the policy pauses, it resumes: no pause of a user's */
    g_assert_false (engine_fixture_job (f, "vmr-1")->user_paused);
}

static void
test_load (gconstpointer data)
{
    const LoadCase *tc = data;
    EngineFixture f;

    memset (&guest_io, 0, sizeof guest_io);
    guest_busy = tc->phases[0].busy;
    engine_fixture_setup (&f, &tc->engine);
    g_assert_true (engine_fixture_run_step (&f, 0, &tc->engine.steps[0]));
    for (guint i = 0; i < G_N_ELEMENTS (tc->phases) && tc->phases[i].calls != NULL; i++)
        run_phase (&f, &tc->phases[i]);
    if (tc->reason != NULL)
        g_assert_true (
            g_pattern_match_simple (tc->reason, engine_fixture_job (&f, "vmr-1")->reason));
    if (tc->engine.steps[1].kind != STEP_END)
        g_assert_true (engine_fixture_run_step (&f, 1, &tc->engine.steps[1]));
    engine_fixture_teardown (&f);
}

static const EngineStep copying
    = MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0");
static const EngineStep cancelled = CANCEL_AT_THE_END;

static gboolean
progress_reached (EngineFixture *f)
{
    return engine_fixture_job (f, "vmr-1")->done_bytes == awaited_done;
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
    obj = vmr_engine_job_to_json (f.engine, engine_fixture_job (&f, "vmr-1"));
    progress = json_object_get_object_member (obj, "progress");
    g_assert_cmpint (json_object_get_int_member (progress, "total"), ==, ENGINE_DISK_SIZE);
    g_assert_cmpint (json_object_get_int_member (progress, "backlog"), ==, ENGINE_DISK_SIZE / 2);
    /* two samples make a rate, and the rate an estimate */
    g_assert_cmpint (json_object_get_int_member (progress, "rate"), >, 0);
    g_assert_cmpfloat (json_object_get_double_member (progress, "eta"), >, 0);
    g_assert_true (engine_fixture_run_step (&f, 1, &cancelled));
    engine_fixture_teardown (&f);
}

/* a [storage] section every path lies in, and one no disk does */
static const EngineCase storage_case = {
    "/engine/query/storages",
    .domains = "web01=disk0 db01=disk0",
    .policy = ENGINE_TEST_POLICY "[storage all]\npaths = /**\nbudget = 60M\n"
                                 "[storage none]\npaths = nbd://nowhere/**\n",
};

static void
domains_done (GObject *source, GAsyncResult *res, gpointer user_data)
{
    JsonArray **out = user_data;
    g_autoptr (GError) error = NULL;

    *out = vmr_engine_query_domains_finish (VMR_ENGINE (source), res, &error);
    g_assert_no_error (error);
}

/* the storage of each disk in domains, and each storage's budget and disks in policy show */
static void
test_storages (void)
{
    EngineFixture f;
    g_autoptr (JsonArray) domains = NULL;
    g_autoptr (JsonObject) policy = NULL;
    JsonArray *storages;
    JsonObject *all;
    JsonObject *none;

    engine_fixture_setup (&f, &storage_case);
    vmr_engine_query_domains_async (f.engine, NULL, domains_done, &domains);
    while (domains == NULL)
        engine_fixture_iterate ();
    g_assert_cmpuint (json_array_get_length (domains), ==, 2);
    for (guint i = 0; i < 2; i++) {
        JsonObject *domain = json_array_get_object_element (domains, i);
        JsonArray *disks = json_object_get_array_member (domain, "disks");
        JsonObject *disk = json_array_get_object_element (disks, 0);

        g_assert_cmpstr (json_object_get_string_member (disk, "storage"), ==, "all");
    }
    policy = vmr_engine_show_policy (f.engine, NULL, NULL, NULL);
    storages = json_object_get_array_member (policy, "storages");
    g_assert_cmpuint (json_array_get_length (storages), ==, 2);
    all = json_array_get_object_element (storages, 0);
    none = json_array_get_object_element (storages, 1);
    g_assert_cmpstr (json_object_get_string_member (all, "name"), ==, "all");
    g_assert_cmpint (json_object_get_int_member (all, "budget"), ==, 60 * 1024 * 1024);
    g_assert_cmpuint (json_array_get_length (json_object_get_array_member (all, "disks")), ==, 2);
    g_assert_cmpstr (json_object_get_string_member (none, "name"), ==, "none");
    g_assert_cmpint (json_object_get_int_member (none, "budget"), ==, 0);
    g_assert_cmpuint (json_array_get_length (json_object_get_array_member (none, "disks")), ==, 0);
    engine_fixture_teardown (&f);
}

void
engine_add_policy_cases (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (load_cases); i++)
        g_test_add_data_func (load_cases[i].engine.name, &load_cases[i], test_load);
    g_test_add_func (progress_case.name, test_progress);
    g_test_add_func (storage_case.name, test_storages);
}
