/*
 * The engine's unit tests: an engine on a fresh state directory, its domains
 * served by fake backends, and cases written as tables of steps. A step is
 * an event of a backend or a command of a user; after each the main loop
 * runs until it is quiet, and what the step expects is checked: the jobs'
 * states, the transitions the step made, the backend calls it caused, the
 * replies that came, reasons, the engine's warnings and the files in the
 * images directory. At the end the engine is shut down: it must close its
 * backends, leave no call held and be finalized.
 */
#pragma once

#include "engine.h"
#include "fake-backend.h"

G_BEGIN_DECLS

typedef enum {
    STEP_END,
    STEP_MIGRATE,       /* a user: migrate .arg ("disk0,disk1"; NULL: disk0) at speed .value */
    STEP_COMMAND,       /* a user: .arg ("pause", "set_speed", ...) on .job, speed .value */
    STEP_DETACH,        /* a user: detach .domain */
    STEP_READY,         /* the backend: "job-ready" for .job */
    STEP_FINISHED,      /* the backend: "job-finished" for .job, outcome .arg, reason .text */
    STEP_REPLY,         /* the backend answers the calls .arg as FakeReplyMode .value from now */
    STEP_RELEASE,       /* the backend: the held call .arg (of .job, if set) succeeds */
    STEP_FAIL,          /* the backend: the held call .arg (of .job, if set) fails with .text */
    STEP_DISCONNECT,    /* the backend: "disconnected" with .text */
    STEP_REMOVE_DOMAIN, /* the domain stopped: vmr_engine_remove_domain (.text) */
    STEP_RESTART,       /* a new engine on the same state directory, no domain attached */
    STEP_CRASH,         /* the same, the old one killed: its records and files as they were */
    STEP_ADOPTION,      /* what the backend finds of .job: outcome .value, ADOPT_* .flags */
    STEP_ATTACH,        /* .domain is attached (again) */
    STEP_RELOAD,        /* the policy file becomes .text and is loaded again */
    STEP_EVACUATE,      /* a user: evacuate the images to the directory "new" (.arg "dry-run") */
    STEP_WRITE,         /* someone else: the file .arg of the images is a new one holding .text */
    STEP_READ,          /* the file .arg of the images holds .text (checked at once) */
    STEP_DEFINE,        /* a domain .text is defined, not running, with the image .arg as disk */
} EngineStepKind;

/* .flags of STEP_MIGRATE */
#define MIGRATE_MANUAL_PIVOT (1u << 0)
#define MIGRATE_REUSE        (1u << 1) /* the destinations exist and are used as they are */

/* .flags of STEP_ADOPTION */
#define ADOPT_READY  (1u << 0)
#define ADOPT_PAUSED (1u << 1)
#define ADOPT_IN_USE (1u << 2) /* GONE: the domain's definition names the destination */

typedef struct {
    EngineStepKind kind;
    const gchar *job;    /* "vmr-7"; NULL: vmr-1 for a command, "job-ready" or "job-finished",
                          * any job for a held call */
    const gchar *domain; /* NULL: the domain of .job, or else the first one */
    const gchar *arg;
    const gchar *text;
    guint64 value;
    guint flags;
    guint64 speed;        /* STEP_ADOPTION: the copy's speed in QEMU, bytes/s */
    const gchar *warning; /* a glob on the warnings the step makes the engine log; NULL: none */

    /* checked once the loop is quiet after the step; NULL is not checked, "" is none */
    const gchar *states; /* every job, oldest first: "vmr-1 copying, vmr-2 queued (max-parallel)" */
    const gchar *changes; /* the transitions of the step: "vmr-1 synced, vmr-1 pivoting" */
    const gchar *calls; /* the backend calls of the step, queries left out, a glob: "pause vmr-1" */
    const gchar *replies; /* a glob on the replies that came: "pause vmr-1 ok paused" */
    const gchar *reasons; /* globs on the jobs' reasons: "vmr-1=*lost* | vmr-2=cancelled*" */
    /* the images directory, sorted, then "new/NAME" for the files of "new":
     * "web01-disk0-dst.img web01-disk0.img" */
    const gchar *files;
} EngineStep;

#define ENGINE_MAX_STEPS 16

/* steps in tables; the disk is disk0 and the job vmr-1 unless a step says */
#define STEP(step_kind, ...)                                                                       \
    {                                                                                              \
        .kind = step_kind, __VA_ARGS__                                                             \
    }
#define MIGRATE(...)  STEP (STEP_MIGRATE, __VA_ARGS__)
#define COMMAND(...)  STEP (STEP_COMMAND, __VA_ARGS__)
#define READY(...)    STEP (STEP_READY, __VA_ARGS__)
#define FINISHED(...) STEP (STEP_FINISHED, __VA_ARGS__)
#define HOLD(call)    STEP (STEP_REPLY, .arg = call, .value = FAKE_REPLY_HOLD)

typedef struct {
    const gchar *name; /* the test path */
    /* the domains and their disks, each disk with its I/O threads if any:
     * "web01=disk0,disk1@io1 db01=disk0"; NULL: "web01=disk0" */
    const gchar *domains;
    const gchar *policy;    /* the policy file; NULL: ENGINE_TEST_POLICY */
    gboolean manual_finish; /* a cancel or pivot is not followed by QEMU's job-finished */
    gboolean follows;       /* the backends follow their domains' lives, as libvirt does */
    EngineStep steps[ENGINE_MAX_STEPS];
    /* the images directory at the end, after the engine shut down; NULL: the sources */
    const gchar *files;
} EngineCase;

/* sampling out of the way: cases are driven by events; no limit per I/O thread */
#define ENGINE_TEST_POLICY "[defaults]\nsample-interval = 60s\nmax-parallel-per-iothread = 0\n"

/* sources and destinations: DOMAIN-DISK.img and DOMAIN-DISK-dst.img */
#define ENGINE_DISK_SIZE (G_GUINT64_CONSTANT (1) << 20)

typedef struct {
    const EngineCase *tc;
    gchar *dir;       /* the images */
    gchar *new_dir;   /* where an evacuation moves them, or NULL */
    gchar *state_dir; /* the engine's records and the policy file */
    gchar *policy_path;
    VmrEngine *engine;
    GPtrArray *domain_names; /* of gchar *, in the order of the case */
    GHashTable *backends;    /* domain name -> FakeBackend *, owned */
    GHashTable *sources;     /* path -> the contents it was made with */
    GString *changes;        /* job-changed since the last step */
    GString *replies;        /* replies since the last step */
    guint pending_replies;   /* user steps not answered yet */
} EngineFixture;

/*
 * Keeps the engine's warnings for the steps to check instead of aborting,
 * and passes its messages on as TAP comments; called once, after g_test_init()
 */
void engine_fixture_init_logging (void);

/* appends each of the engine's messages, one a line, to @messages; NULL stops */
void engine_fixture_keep_messages (GString *messages);

/* makes the directories, the sources and the engine; attaches every domain */
void engine_fixture_setup (EngineFixture *f, const EngineCase *tc);

/* runs step @index of the case, asserting each of its checks */
gboolean engine_fixture_run_step (EngineFixture *f, guint index, const EngineStep *step);

/* shuts the engine down and checks what it left: no calls held, the files */
void engine_fixture_teardown (EngineFixture *f);

/* runs the default main context until nothing is ready */
void engine_fixture_iterate (void);

/* runs the main loop until @cond holds, for at most @limit_ms */
gboolean engine_fixture_wait_for (gboolean (*cond) (EngineFixture *f), EngineFixture *f,
                                  guint limit_ms);

/* the fake backend of @domain (transfer none) */
FakeBackend *engine_fixture_backend (EngineFixture *f, const gchar *domain);

/* the job @id, which must exist (transfer none) */
static inline VmrJob *
engine_fixture_job (EngineFixture *f, const gchar *id)
{
    VmrJob *job = vmr_engine_lookup_job (f->engine, id, NULL);

    g_assert_nonnull (job);
    return job;
}

/* "vmr-1 copying, vmr-2 queued (max-parallel)" */
gchar *engine_fixture_describe_jobs (EngineFixture *f);

/* the whole case: setup, every step, teardown */
void engine_case_run (gconstpointer data);

/* registers each case as a test named after it */
void engine_cases_add (const EngineCase *cases, guint n_cases);

/* the tables of the other files of the program */
void engine_add_group_cases (void);
void engine_add_domain_cases (void);
void engine_add_policy_cases (void);
void engine_add_adaptive_cases (void);
void engine_add_converge_cases (void);
void engine_add_budget_cases (void);
void engine_add_space_cases (void);
void engine_add_destination_cases (void);

G_END_DECLS
