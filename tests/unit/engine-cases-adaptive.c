/*
 * The closed-loop speed (control = adaptive) in the engine, on a simulated
 * guest: the fake backend's I/O counters move as a guest's would whose I/O
 * waits in a queue with the copy's, slower the faster the copy goes. The policies sample
 * every 100 ms; each case runs a few seconds of samples.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include "engine-private.h"
#include "engine-stats.h"
#include "vmr-json.h"

#include <math.h>
#include <string.h>

#define ADAPTIVE                                                                                   \
    "[defaults]\nsample-interval = 100ms\nmax-parallel-per-iothread = 0\nhold = 0\n"               \
    "control = adaptive\nguest-impact = 5%\nmin-speed = 1M\n"

#define MIB (G_GUINT64_CONSTANT (1024) * 1024)

/* a guest of the case */
typedef struct {
    gboolean closed_loop; /* its IOPS fall with the latency; FALSE: a fixed rate, latency rises */
    gdouble iops;         /* alone; 0 = idle */
    guint64 knee;         /* the copy's speed past which the guest feels it, bytes/s */
} Guest;

typedef struct {
    EngineCase engine;
    Guest guest;
    guint run_ms;       /* how long the copy runs before the checks */
    const gchar *start; /* the first backend call: "start_copy vmr-1 SPEED" */
    guint64 speed_low;  /* the speed at the end lies in [low, high], bytes/s (0 = unlimited) */
    guint64 speed_high;
    const gchar *kinds; /* a glob on the controller's decision at the end */
} AdaptiveCase;

/* the guest's latency alone, µs */
#define BASE_LATENCY_US 1000.0

/*
 * the copy's speed as the guest feels it: a queue for a budget of 1.5 times
 * the knee, whose latency rises from the first byte, convexly, 5% at the
 * knee and 12.5% at 1.25 times it, without bound near the budget (20 times
 * at most); unlimited is past the budget
 */
static gdouble
latency_at (const Guest *guest, guint64 speed)
{
    gdouble budget = 1.5 * (gdouble) guest->knee;
    gdouble s = speed == 0 ? budget : (gdouble) speed;

    if (s >= budget)
        return 20 * BASE_LATENCY_US;
    return BASE_LATENCY_US * (1 + MIN (0.025 * s / (budget - s), 19));
}

static const AdaptiveCase adaptive_cases[] = {
    /* a fixed-rate guest: the copy starts at 64M, far past the knee (8M), backs off to it and
     * stays near it, not past 10M where the guest's latency would be 1.5 times its own */
    { { "/engine/adaptive/fixed-rate-finds-the-knee", .policy = ADAPTIVE },
      { FALSE, 2000, 8 * MIB },
      2500,
      "start_copy vmr-1 67108864",
      3 * MIB,
      10 * MIB,
      "*" },
    /* a closed-loop guest shows the harm as fewer IOPS, not more latency */
    { { "/engine/adaptive/closed-loop-finds-the-knee", .policy = ADAPTIVE },
      { TRUE, 2000, 8 * MIB },
      2500,
      "start_copy vmr-1 67108864",
      3 * MIB,
      10 * MIB,
      "*" },
    /* an idle guest feels nothing: full speed from the start, and it stays there */
    { { "/engine/adaptive/idle-full-speed", .policy = ADAPTIVE },
      { FALSE, 0, 8 * MIB },
      600,
      "start_copy vmr-1 0",
      0,
      0,
      "idle-full-speed" },
    /* max-speed caps even an idle guest's copy */
    { { "/engine/adaptive/max-speed", .policy = ADAPTIVE "max-speed = 4M\n" },
      { FALSE, 0, 8 * MIB },
      600,
      "start_copy vmr-1 4194304",
      4 * MIB,
      4 * MIB,
      "idle-full-speed" },
};

/* the end of each case: vmr-1 cancelled, the disk left where it was */
static const EngineStep cancel_1 = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled",
                                            .calls = "cancel vmr-1", .files = "web01-disk0.img");

/* the simulated guest of web01's disk0 */
static VmrIoCounters guest_io;
static const Guest *guest;
static gint64 guest_time_us;
static gdouble guest_ops_carry;
/* bytes/s the guest's writes add to vmr-1's backlog, 0 = no progress reported */
static gdouble guest_dirty_rate;
static gint64 guest_dirty_start_us;
/* the guest does no I/O for now, whatever its case says */
static gboolean guest_resting;
/* a neighbour of vmr-1: db02's vdb on the same storage, feeling the copy as @neighbour says */
static VmrIoCounters neighbour_io;
static const Guest *neighbour;
static gint64 neighbour_time_us;
static gdouble neighbour_ops_carry;
/* the neighbour does no I/O for now */
static gboolean neighbour_resting;
/* how many times the engine read the guest's load */
static guint guest_reads;
static guint guest_reads_wanted;

static VmrJob *
job_1 (EngineFixture *f)
{
    return vmr_engine_lookup_job (f->engine, "vmr-1", NULL);
}

/* @g's counters @io moved on to @now from @time_us, as the copy at @job's speed lets it go */
static void
guest_advance (const Guest *g, gboolean resting, VmrJob *job, VmrIoCounters *io, gint64 *time_us,
               gdouble *carry, gint64 now)
{
    gboolean copying = job != NULL && job->state == VMR_JOB_STATE_COPYING;
    gdouble latency = copying ? latency_at (g, job->speed) : BASE_LATENCY_US;
    gdouble iops = resting ? 0 : g->closed_loop ? g->iops * BASE_LATENCY_US / latency : g->iops;
    gdouble ops;

    if (*time_us != 0) {
        ops = iops * (now - *time_us) / G_USEC_PER_SEC + *carry;
        *carry = ops - floor (ops);
        io->read_ops += (guint64) ops;
        io->read_time_ns += (guint64) (floor (ops) * latency * 1000);
    }
    *time_us = now;
}

/* the counters QEMU would show by now, as the copy's current speed lets the guest go */
static void
guest_run (EngineFixture *f)
{
    gint64 now = g_get_monotonic_time ();
    VmrJob *job = job_1 (f);

    guest_advance (guest, guest_resting, job, &guest_io, &guest_time_us, &guest_ops_carry, now);
    fake_backend_set_load (engine_fixture_backend (f, "web01"), "disk0", &guest_io);
    if (neighbour != NULL) {
        guest_advance (neighbour, neighbour_resting, job, &neighbour_io, &neighbour_time_us,
                       &neighbour_ops_carry, now);
        fake_backend_set_load (engine_fixture_backend (f, "db02"), "vdb", &neighbour_io);
    }
    /* QEMU's len grows by what the guest dirties in what the copy already sent */
    if (guest_dirty_rate > 0 && job != NULL) {
        VmrBackendProgress progress = { .job_id = (gchar *) "vmr-1", .total_bytes = 1024 * MIB };

        if (guest_dirty_start_us == 0)
            guest_dirty_start_us = now;
        progress.total_bytes += (guint64) (guest_dirty_rate * (gdouble) (now - guest_dirty_start_us)
                                           / G_USEC_PER_SEC);
        progress.done_bytes = 512 * MIB;
        fake_backend_set_progress (engine_fixture_backend (f, "web01"), &progress);
    }
}

/* QEMU's counters are the guest's up to the moment they are asked for */
static void
guest_load_cb (FakeBackend *backend, gpointer user_data)
{
    guest_reads++;
    guest_run (user_data);
}

/* and the neighbour's, in its own QEMU */
static void
neighbour_load_cb (FakeBackend *backend, gpointer user_data)
{
    guest_run (user_data);
}

static gboolean
guest_tick_cb (gpointer user_data)
{
    guest_run (user_data);
    return G_SOURCE_CONTINUE;
}

static gboolean
enough_reads (EngineFixture *f)
{
    return guest_reads >= guest_reads_wanted;
}

/*
 * the loop runs for @ms of the policies' samples (100 ms each) with the
 * guest at work: until the engine has read the guest's load that many times,
 * however late a loaded machine fires its timers. Its counters move every
 * few ms, as QEMU's do.
 */
static void
run_for (EngineFixture *f, guint ms)
{
    guint tick = g_timeout_add (5, guest_tick_cb, f);

    guest_reads_wanted = guest_reads + MAX (ms / 100, 1);
    g_assert_true (engine_fixture_wait_for (enough_reads, f, 20 * ms));
    g_source_remove (tick);
}

/* the engine of @tc, its guest at work for the samples of its baseline; no copy yet */
static void
guest_setup (EngineFixture *f, const AdaptiveCase *tc, gdouble dirty_rate)
{
    memset (&guest_io, 0, sizeof guest_io);
    guest = &tc->guest;
    guest_time_us = 0;
    guest_ops_carry = 0;
    guest_dirty_rate = dirty_rate;
    guest_dirty_start_us = 0;
    guest_resting = FALSE;
    guest_reads = 0;
    memset (&neighbour_io, 0, sizeof neighbour_io);
    neighbour_time_us = 0;
    neighbour_ops_carry = 0;
    neighbour_resting = FALSE;
    engine_fixture_setup (f, &tc->engine);
    fake_backend_set_load_func (engine_fixture_backend (f, "web01"), guest_load_cb, f);
    if (neighbour != NULL)
        fake_backend_set_load_func (engine_fixture_backend (f, "db02"), neighbour_load_cb, f);
    /* progress set by hand must not say the copy runs at another speed than the one set */
    fake_backend_report_speed_as_set (engine_fixture_backend (f, "web01"));
    f->engine->progress_interval_ms = 50;
    run_for (f, 350);
}

static void
test_adaptive (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    /* the controller may act at its first sample, before a loaded machine checks the start */
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = "vmr-1 copying", .calls = start);
    g_autoptr (JsonObject) obj = NULL;
    g_autofree gchar *calls = NULL;
    JsonObject *controller;
    JsonArray *speeds;
    EngineFixture f;
    VmrJob *job;

    guest_setup (&f, tc, 0);
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    run_for (&f, tc->run_ms);

    job = job_1 (&f);
    g_test_message ("vmr-1 at %" G_GUINT64_FORMAT " bytes/s: %s", job->speed, job->decision_reason);
    g_assert_cmpint (job->state, ==, VMR_JOB_STATE_COPYING);
    g_assert_cmpuint (job->speed, >=, tc->speed_low);
    g_assert_cmpuint (job->speed, <=, tc->speed_high);
    g_assert_true (g_pattern_match_simple (tc->kinds, job->decision));
    /* the job shows the controller: its baseline, the last sample and the speeds it set */
    obj = vmr_engine_job_to_json (f.engine, job);
    controller = vmr_json_get_object (vmr_json_get_object (obj, "policy"), "controller");
    g_assert_nonnull (controller);
    g_assert_cmpstr (vmr_json_get_string (controller, "mode"), ==, "adaptive");
    g_assert_cmpint (vmr_json_int_or (controller, "speed", -1), ==, (gint64) job->speed);
    g_assert_nonnull (vmr_json_get_object (controller, "baseline"));
    speeds = vmr_json_get_array (controller, "speeds");
    g_assert_nonnull (speeds);
    if (tc->guest.iops > 0) {
        /* it climbed: more than the first speed, the guest's harm in hand at the end */
        g_assert_cmpuint (json_array_get_length (speeds), >, 3);
        g_assert_cmpfloat (job->adaptive->harm, <, 0.2);
        g_assert_cmpfloat (
            vmr_json_double_or (vmr_json_get_object (controller, "baseline"), "iops", 0), >, 0);
    } else {
        g_assert_cmpuint (json_array_get_length (speeds), ==, 1);
    }
    calls = fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE);
    g_test_message ("calls: %s", calls);
    /* the controller never pauses a copy for the rules, nor for nothing */
    g_assert_null (strstr (calls, "pause"));
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel_1));
    engine_fixture_teardown (&f);
}

/* a user's speed wins over the controller, which lets the copy be */
static const AdaptiveCase user_speed_case
    = { { "/engine/adaptive/user-speed-wins", .policy = ADAPTIVE },
        { FALSE, 2000, 8 * MIB },
        1000,
        "start_copy vmr-1 67108864" };

static void
test_user_speed (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    /* the controller may act at its first sample, before a loaded machine checks the start */
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = "vmr-1 copying", .calls = start);
    const EngineStep set_speed
        = COMMAND (.arg = "set_speed", .value = 3 * MIB, .states = "vmr-1 copying",
                   .calls = "set_speed vmr-1 3145728");
    g_autofree gchar *calls = NULL;
    EngineFixture f;

    guest_setup (&f, tc, 0);
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    run_for (&f, 500);
    g_free (fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE));
    g_assert_true (engine_fixture_run_step (&f, 1, &set_speed));
    run_for (&f, tc->run_ms);
    calls = fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE);
    g_assert_cmpstr (calls, ==, "");
    g_assert_cmpuint (job_1 (&f)->speed, ==, 3 * MIB);
    g_assert_null (job_1 (&f)->adaptive);
    g_assert_true (engine_fixture_run_step (&f, 2, &cancel_1));
    engine_fixture_teardown (&f);
}

/*
 * A guest whose writes dirty its disk four times faster than its knee lets
 * a copy go: the copy goes over what it dirties (the growth of QEMU's len,
 * smoothed), plus min-progress, whatever the harm; the job shows the rate.
 */
static const AdaptiveCase progress_case
    = { { "/engine/adaptive/progress-floor", .policy = ADAPTIVE "min-progress = 25%\n" },
        { FALSE, 2000, 2 * MIB },
        3000,
        "start_copy vmr-1 67108864" };
#define PROGRESS_DIRTY_RATE (8.0 * MIB)

static void
test_progress_floor (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    /* the controller may act at its first sample, before a loaded machine checks the start */
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = "vmr-1 copying", .calls = start);
    g_autoptr (JsonObject) obj = NULL;
    EngineFixture f;
    VmrJob *job;

    guest_setup (&f, tc, PROGRESS_DIRTY_RATE);
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    run_for (&f, tc->run_ms);

    job = job_1 (&f);
    g_test_message ("vmr-1 at %" G_GUINT64_FORMAT " bytes/s, the guest dirtying %.0f: %s",
                    job->speed, job->dirty_rate, job->decision_reason);
    /* len's growth between the readings at which it grew */
    g_assert_cmpfloat (job->dirty_rate, >=, 0.9 * PROGRESS_DIRTY_RATE);
    g_assert_cmpfloat (job->dirty_rate, <=, 1.1 * PROGRESS_DIRTY_RATE);
    /* over the knee, where the guest's harm would hold it, at the floor the last sample had */
    g_assert_cmpuint (job->speed, >, 2 * tc->guest.knee);
    g_assert_cmpfloat ((gdouble) job->speed, >=, 0.9 * 1.25 * job->dirty_rate);
    /* and no faster: the guest's harm holds it there */
    g_assert_cmpfloat ((gdouble) job->speed, <=, 1.2 * 1.25 * job->dirty_rate);
    obj = vmr_engine_job_to_json (f.engine, job);
    g_assert_cmpint (vmr_json_int_or (vmr_json_get_object (obj, "progress"), "dirty-rate", -1), ==,
                     (gint64) job->dirty_rate);
    g_free (fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE));
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel_1));
    guest_dirty_rate = 0;
    engine_fixture_teardown (&f);
}

/*
 * A guest idle over its baseline that turned busy in the newest sample: its
 * copy starts where a busy guest's does, not at full speed, measures the
 * guest on its first step, and goes on from min-speed, under the knee. (How
 * fast it climbs is the other cases': its baseline is one sample here, as
 * noisy as the 5% target.)
 */
static const AdaptiveCase turned_busy_case
    = { { "/engine/adaptive/turned-busy-at-the-start", .policy = ADAPTIVE },
        { FALSE, 2000, 8 * MIB },
        2500,
        "start_copy vmr-1 1048576",
        1 * MIB,
        10 * MIB };

/* the newest sample of web01's disk0 has I/O; the guest works meanwhile */
static gboolean
newest_busy (EngineFixture *f)
{
    DomainEntry *entry = vmr_engine_lookup_domain (f->engine, "web01", NULL);
    VmrLoadHistory *history = vmr_engine_domain_load (entry, "disk0");
    const VmrLoadSample *samples;
    guint n = 0;

    guest_run (f);
    if (history == NULL)
        return FALSE;
    samples = vmr_load_history_get_samples (history, &n);
    return n > 0 && samples[n - 1].iops > 0;
}

static void
test_turned_busy (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    /* the controller may act at its first sample, before a loaded machine checks the start:
     * its first act here is the pause that measures the guest, so the state after the start
     * is copying or, on a loaded machine, already paused */
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = NULL, .calls = start);
    g_autofree gchar *calls = NULL;
    const gchar *pause;
    gboolean paused_early;
    EngineFixture f;
    VmrJob *job;

    guest_setup (&f, tc, 0);
    /* idle for more samples than a baseline reads, then busy for one */
    guest_resting = TRUE;
    run_for (&f, 600);
    guest_resting = FALSE;
    g_assert_true (engine_fixture_wait_for (newest_busy, &f, 1000));
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    job = job_1 (&f);
    g_assert_true (job->state == VMR_JOB_STATE_COPYING || job->state == VMR_JOB_STATE_PAUSED);
    paused_early = job->state == VMR_JOB_STATE_PAUSED;
    g_test_message ("the start's check saw vmr-1 %s", paused_early ? "paused" : "copying");
    run_for (&f, tc->run_ms);

    job = job_1 (&f);
    g_test_message ("vmr-1 at %" G_GUINT64_FORMAT " bytes/s: %s", job->speed, job->decision_reason);
    g_assert_cmpuint (job->speed, >=, tc->speed_low);
    g_assert_cmpuint (job->speed, <=, tc->speed_high);
    g_assert_cmpfloat (job->adaptive->baseline.iops, >, 0.5 * tc->guest.iops);
    calls = fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE);
    g_test_message ("calls: %s", calls);
    /* one pause, the measure of the first step: among the start's calls when the job was
     * already paused at its check, else among the calls since */
    pause = strstr (calls, "pause vmr-1");
    if (paused_early)
        g_assert_null (pause);
    else
        g_assert_nonnull (pause);
    g_assert_true (pause == NULL || strstr (pause + 1, "pause vmr-1") == NULL);
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel_1));
    engine_fixture_teardown (&f);
}

/*
 * An idle guest's copy on a storage whose other guest is busy: without its
 * neighbour the copy would run at full speed; with it, it starts at
 * start-speed, backs off to the neighbour's knee, and the reason and the
 * metric's figures name the neighbour.
 */
static const AdaptiveCase neighbour_case
    = { { "/engine/adaptive/neighbour-sets-the-speed", .domains = "web01=disk0 db02=vdb",
          .policy = ADAPTIVE "[storage array-a]\npaths = /**\n" },
        { FALSE, 0, 8 * MIB },
        2500,
        "start_copy vmr-1 67108864",
        3 * MIB,
        10 * MIB };
static const Guest neighbour_guest = { FALSE, 2000, 8 * MIB };

static void
test_neighbour (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = "vmr-1 copying", .calls = start);
    const EngineStep cancel
        = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .calls = "cancel vmr-1",
                   .files = "db02-vdb.img web01-disk0.img");
    g_autoptr (VmrEngineStats) stats = NULL;
    const VmrNeighbourStats *seen;
    EngineFixture f;
    VmrJob *job;

    neighbour = &neighbour_guest;
    guest_setup (&f, tc, 0);
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    run_for (&f, tc->run_ms);

    job = job_1 (&f);
    g_test_message ("vmr-1 at %" G_GUINT64_FORMAT " bytes/s: %s", job->speed, job->decision_reason);
    g_assert_cmpuint (job->speed, >=, tc->speed_low);
    g_assert_cmpuint (job->speed, <=, tc->speed_high);
    g_assert_true (
        g_pattern_match_simple ("db02 vdb on storage array-a at *x its *", job->decision_reason));
    stats = vmr_engine_get_stats (f.engine);
    g_assert_cmpuint (stats->neighbours->len, ==, 1);
    seen = g_ptr_array_index (stats->neighbours, 0);
    g_assert_cmpstr (seen->storage, ==, "array-a");
    g_assert_cmpstr (seen->domain, ==, "db02");
    g_assert_cmpstr (seen->disk, ==, "vdb");
    /* near the knee: the neighbour's harm in hand, not the 19x of the copy's start */
    g_assert_cmpfloat (seen->harm, <, 0.2);
    g_free (fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE));
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel));
    engine_fixture_teardown (&f);
    neighbour = NULL;
}

/* the copy paused since the neighbour turned busy, and the measure is over */
static gboolean neighbour_paused;

static gboolean
neighbour_measured (EngineFixture *f)
{
    VmrJob *job = job_1 (f);
    gchar *calls = fake_backend_take_log (engine_fixture_backend (f, "web01"), FALSE);

    neighbour_paused = neighbour_paused || strstr (calls, "pause vmr-1") != NULL;
    g_free (calls);
    return neighbour_paused && job->adaptive != NULL
           && job->adaptive->kind != VMR_CONTROLLER_MEASURE_BASELINE;
}

/*
 * The neighbour idle when the idle guest's copy starts: full speed. It
 * turns busy: the copy pauses for a sample to measure it alone, then backs
 * off to its knee from its new baseline.
 */
static const AdaptiveCase neighbour_busy_case
    = { { "/engine/adaptive/neighbour-turns-busy", .domains = "web01=disk0 db02=vdb",
          .policy = ADAPTIVE "[storage array-a]\npaths = /**\n" },
        { FALSE, 0, 8 * MIB },
        3000,
        "start_copy vmr-1 0",
        1 * MIB,
        10 * MIB };

static void
test_neighbour_turns_busy (gconstpointer data)
{
    const AdaptiveCase *tc = data;
    g_autofree gchar *start = g_strconcat (tc->start, "*", NULL);
    const EngineStep migrate = MIGRATE (.states = "vmr-1 copying", .calls = start);
    const EngineStep cancel
        = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .calls = "cancel vmr-1",
                   .files = "db02-vdb.img web01-disk0.img");
    EngineFixture f;
    VmrJob *job;

    neighbour = &neighbour_guest;
    neighbour_resting = TRUE;
    guest_setup (&f, tc, 0);
    neighbour_resting = TRUE;
    run_for (&f, 600);
    g_assert_true (engine_fixture_run_step (&f, 0, &migrate));
    run_for (&f, 300);
    g_assert_cmpuint (job_1 (&f)->speed, ==, 0);
    neighbour_resting = FALSE;
    neighbour_paused = FALSE;
    g_free (fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE));
    g_assert_true (engine_fixture_wait_for (neighbour_measured, &f, 5000));
    run_for (&f, tc->run_ms);

    job = job_1 (&f);
    g_test_message ("vmr-1 at %" G_GUINT64_FORMAT " bytes/s: %s", job->speed, job->decision_reason);
    g_assert_cmpuint (job->speed, >=, tc->speed_low);
    g_assert_cmpuint (job->speed, <=, tc->speed_high);
    g_assert_true (
        g_pattern_match_simple ("db02 vdb on storage array-a at *x its *", job->decision_reason));
    g_free (fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE));
    g_assert_true (engine_fixture_run_step (&f, 1, &cancel));
    engine_fixture_teardown (&f);
    neighbour = NULL;
}

void
engine_add_adaptive_cases (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (adaptive_cases); i++)
        g_test_add_data_func (adaptive_cases[i].engine.name, &adaptive_cases[i], test_adaptive);
    g_test_add_data_func (user_speed_case.engine.name, &user_speed_case, test_user_speed);
    g_test_add_data_func (progress_case.engine.name, &progress_case, test_progress_floor);
    g_test_add_data_func (turned_busy_case.engine.name, &turned_busy_case, test_turned_busy);
    g_test_add_data_func (neighbour_case.engine.name, &neighbour_case, test_neighbour);
    g_test_add_data_func (neighbour_busy_case.engine.name, &neighbour_busy_case,
                          test_neighbour_turns_busy);
}
