/*
 * A copy that does not converge, and a copy's deadline: the backend's
 * progress readings say how the backlog goes (shrinking, steady, growing),
 * and the engine makes the copy converge, fails it, or only says so. The
 * engine reads progress every FAST_PROGRESS_MS here instead of every 500 ms,
 * so that a converge-after of 100 ms spans ten readings.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include <string.h>

#include "engine-private.h"

#define FAST_PROGRESS_MS 10

/* a wait longer than this is a hang, not a slow machine */
#define WAIT_LIMIT_MS 3000

/* how long a job that must stay as it is is watched, and one that converged */
#define STAYS_MS 200

/* the guest's reads per wake-up of the loop (about 10 ms) while it is busy */
#define BUSY_READS_PER_S 10000.0

/* the backlog at the start: half the disk */
#define START_BACKLOG (ENGINE_DISK_SIZE / 2)

#define FAST "[defaults]\nsample-interval = 60s\nmax-parallel-per-iothread = 0\nspeed = 1M\n"

typedef enum {
    BACKLOG_SHRINKS, /* by 2 KiB per ms: the copy converges by itself */
    BACKLOG_STEADY,  /* the guest dirties what the copy moves */
    BACKLOG_GROWS,   /* the guest dirties more */
} BacklogTrend;

typedef struct {
    EngineCase engine; /* its name and policy */
    BacklogTrend trend;
    gboolean busy;           /* the guest's IOPS are high: a policy would throttle */
    const gchar *refused;    /* a command the backend refuses, with the message REFUSAL */
    gboolean stays;          /* nothing changes: the job is watched for STAYS_MS */
    VmrJobState state;       /* the job's state once it converged, or ended */
    const gchar *calls;      /* the backend calls after the start, queries left out */
    const gchar *converging; /* "BY STATE" of the convergence member, "" = null */
    const gchar *reason;     /* a glob on its reason, or on the job's reason if it failed */
    const gchar *message;    /* a glob on the engine's messages, NULL: not checked */
} ConvergeCase;

#define REFUSAL "QEMU 8.1 has no block-job-change"

static const ConvergeCase converge_cases[] = {
    { { "/engine/converge/shrinking", .policy = FAST "converge-after = 100ms\n" },
      BACKLOG_SHRINKS,
      .stays = TRUE,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "",
      .converging = "" },
    { { "/engine/converge/steady-by-speed", .policy = FAST "converge-after = 100ms\n" },
      BACKLOG_STEADY,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "set_speed vmr-1 0",
      .converging = "speed converging",
      .reason = "backlog 512 KiB not shrinking over 0.1s",
      .message = "*converging by speed: backlog 512 KiB not shrinking*" },
    { { "/engine/converge/growing-by-write-blocking",
        .policy = FAST "converge-after = 100ms\nconverge-by = write-blocking\n" },
      BACKLOG_GROWS,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "set_copy_mode_active vmr-1",
      .converging = "write-blocking converging",
      .reason = "backlog * not shrinking over 0.1s" },
    { { "/engine/converge/write-blocking-refused",
        .policy = FAST "converge-after = 100ms\nconverge-by = write-blocking\n" },
      BACKLOG_STEADY,
      .refused = "set_copy_mode_active",
      .state = VMR_JOB_STATE_COPYING,
      .calls = "set_copy_mode_active vmr-1; set_speed vmr-1 0",
      .converging = "speed converging",
      .reason = "backlog 512 KiB not shrinking over 0.1s; write-blocking refused (" REFUSAL
                "), converging by speed instead" },
    /* once at full speed, a busy guest no longer slows the copy down */
    { { "/engine/converge/stays-at-full-speed",
        .policy = "[defaults]\nsample-interval = 100ms\nmax-parallel-per-iothread = 0\n"
                  "hold = 0\nspeed = 4M\niops-throttle = 100\nthrottle-speed = 1M\n"
                  "converge-after = 400ms\n" },
      BACKLOG_STEADY,
      .busy = TRUE,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "set_speed vmr-1 1048576; set_speed vmr-1 0",
      .converging = "speed converging",
      .reason = "backlog * not shrinking over 0.4s" },

    { { "/engine/deadline/fail", .policy = FAST "deadline = 100ms\non-deadline = fail\n" },
      BACKLOG_STEADY,
      .state = VMR_JOB_STATE_FAILED,
      .calls = "cancel vmr-1",
      .converging = "",
      .reason = "not finished by its deadline of 0.1s (on-deadline = fail, 512 KiB still to "
                "copy); the VM stays on its source" },
    { { "/engine/deadline/converge",
        .policy = FAST "deadline = 100ms\non-deadline = converge\nconverge-by = write-blocking\n" },
      /* whatever the backlog does */
      BACKLOG_SHRINKS,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "set_copy_mode_active vmr-1",
      .converging = "write-blocking converging",
      .reason = "past its deadline of 0.1s with * still to copy (on-deadline = converge)" },
    { { "/engine/deadline/continue", .policy = FAST "deadline = 100ms\non-deadline = continue\n" },
      BACKLOG_STEADY,
      .stays = TRUE,
      .state = VMR_JOB_STATE_COPYING,
      .calls = "",
      .converging = "",
      .message = "*past its deadline of 0.1s with 512 KiB still to copy; on-deadline = "
                 "continue: it goes on*" },
};

/* what the backend reports while a case runs */
static const ConvergeCase *running_case;
static gint64 phase_start_us;
static VmrIoCounters guest_io;
static GString *messages;

/* QEMU's len and offset of vmr-1 now, and the guest's counters */
static void
report (EngineFixture *f)
{
    guint64 ms = (guint64) (g_get_monotonic_time () - phase_start_us) / 1000;
    VmrJob *job = vmr_engine_lookup_job (f->engine, "vmr-1", NULL);
    VmrBackendProgress progress = { "vmr-1", ENGINE_DISK_SIZE, START_BACKLOG, 0, FALSE, FALSE };

    switch (running_case->trend) {
        case BACKLOG_SHRINKS:
            /*
             * 256 B/ms: the 512 KiB backlog lasts 2 s, well past the case's
             * watch even on a loaded machine (at 2 KiB/ms it was gone in
             * 256 ms, and a slow run saw it stop shrinking at 1 B)
             */
            progress.done_bytes = MIN (START_BACKLOG + ms * 256, ENGINE_DISK_SIZE - 1);
            break;
        case BACKLOG_GROWS:
            /* the guest's writes make the job longer faster than the copy moves */
            progress.total_bytes = ENGINE_DISK_SIZE + ms * 4096;
            progress.done_bytes = START_BACKLOG + ms * 1024;
            break;
        case BACKLOG_STEADY:
        default:
            break;
    }
    progress.speed = job != NULL ? job->speed : 0;
    fake_backend_set_progress (engine_fixture_backend (f, "web01"), &progress);
    fake_backend_set_load (engine_fixture_backend (f, "web01"), "disk0", &guest_io);
}

/* "speed converging", "" for none */
static gchar *
describe_convergence (EngineFixture *f, gchar **out_reason)
{
    g_autoptr (JsonObject) obj
        = vmr_engine_job_to_json (f->engine, engine_fixture_job (f, "vmr-1"));
    JsonNode *node = json_object_get_member (obj, "convergence");
    JsonObject *convergence;

    g_assert_nonnull (node);
    if (JSON_NODE_HOLDS_NULL (node))
        return g_strdup ("");
    convergence = json_node_get_object (node);
    g_assert_cmpint (json_object_get_int_member (convergence, "since"), >, 0);
    if (out_reason != NULL)
        *out_reason = g_strdup (json_object_get_string_member (convergence, "reason"));
    return g_strdup_printf ("%s %s", json_object_get_string_member (convergence, "by"),
                            json_object_get_string_member (convergence, "state"));
}

static gboolean
converged_or_ended (EngineFixture *f)
{
    g_autofree gchar *convergence = NULL;

    report (f);
    convergence = describe_convergence (f, NULL);
    return engine_fixture_job (f, "vmr-1")->state == running_case->state
           && g_str_equal (convergence, running_case->converging)
           && !engine_fixture_job (f, "vmr-1")->policy_busy;
}

static gboolean
never (EngineFixture *f)
{
    report (f);
    return FALSE;
}

static void
test_converge (gconstpointer data)
{
    const ConvergeCase *tc = data;
    const EngineStep start = MIGRATE (.states = "vmr-1 copying", .replies = "migrate ok vmr-1");
    const EngineStep cancel = COMMAND (.arg = "cancel", .states = "vmr-1 cancelled",
                                       .calls = "cancel vmr-1", .files = "web01-disk0.img");
    EngineFixture f;
    g_autofree gchar *calls = NULL;
    g_autofree gchar *convergence = NULL;
    g_autofree gchar *reason = NULL;

    running_case = tc;
    memset (&guest_io, 0, sizeof guest_io);
    messages = g_string_new (NULL);
    engine_fixture_keep_messages (messages);
    engine_fixture_setup (&f, &tc->engine);
    f.engine->progress_interval_ms = FAST_PROGRESS_MS;
    if (tc->refused != NULL)
        fake_backend_set_reply (engine_fixture_backend (&f, "web01"), tc->refused, FAKE_REPLY_FAIL,
                                REFUSAL);
    /* a progress set before the start must not say the copy runs at another speed */
    fake_backend_report_speed_as_set (engine_fixture_backend (&f, "web01"));
    phase_start_us = g_get_monotonic_time ();
    /* busy by the clock: samples that come closer than the test looks still see the load */
    if (tc->busy)
        fake_backend_set_read_rate (engine_fixture_backend (&f, "web01"), "disk0",
                                    BUSY_READS_PER_S);
    report (&f);
    g_assert_true (engine_fixture_run_step (&f, 0, &start));
    if (!tc->stays)
        g_assert_true (engine_fixture_wait_for (converged_or_ended, &f, WAIT_LIMIT_MS));
    /* and nothing more: it converges once */
    g_assert_false (engine_fixture_wait_for (never, &f, STAYS_MS));

    calls = fake_backend_take_log (engine_fixture_backend (&f, "web01"), FALSE);
    g_assert_cmpstr (calls, ==, tc->calls);
    g_assert_cmpstr (vmr_job_state_to_string (engine_fixture_job (&f, "vmr-1")->state), ==,
                     vmr_job_state_to_string (tc->state));
    convergence = describe_convergence (&f, &reason);
    g_assert_cmpstr (convergence, ==, tc->converging);
    if (tc->state == VMR_JOB_STATE_FAILED)
        reason = g_strdup (engine_fixture_job (&f, "vmr-1")->reason);
    if (tc->reason != NULL)
        g_assert_true (g_pattern_match_simple (tc->reason, reason != NULL ? reason : ""));
    if (tc->message != NULL)
        g_assert_true (g_pattern_match_simple (tc->message, messages->str));
    if (g_str_has_prefix (tc->converging, "write-blocking"))
        g_assert_true (engine_fixture_job (&f, "vmr-1")->write_blocking);
    /* at full speed the policy leaves the copy alone, and says so */
    if (g_str_has_prefix (tc->converging, "speed"))
        g_assert_cmpstr (engine_fixture_job (&f, "vmr-1")->decision, ==, "converge");
    /* a failed job's destination is gone already, the source untouched (the teardown checks) */
    if (tc->state != VMR_JOB_STATE_FAILED)
        g_assert_true (engine_fixture_run_step (&f, 1, &cancel));
    engine_fixture_teardown (&f);
    engine_fixture_keep_messages (NULL);
    g_string_free (messages, TRUE);
}

void
engine_add_converge_cases (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (converge_cases); i++)
        g_test_add_data_func (converge_cases[i].engine.name, &converge_cases[i], test_converge);
}
