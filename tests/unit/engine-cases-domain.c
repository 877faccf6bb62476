/*
 * The life of a domain under the engine's jobs: the domain stops, its
 * monitor connection is lost, it is detached; and the daemon restarts, a new
 * engine picking up the jobs the previous one left, whatever the backend
 * finds of each copy.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#define SRC      "web01-disk0.img"
#define BOTH     "web01-disk0-dst.img web01-disk0.img"
#define SRCS     "web01-disk0.img web01-disk1.img"
#define WEB_DONE "db01-disk0.img web01-disk0-dst.img web01-disk0.img"

#define TWO_DISKS   "web01=disk0,disk1"
#define TWO_DOMAINS "web01=disk0 db01=disk0"
#define ONE_ON_HOST                                                                                \
    "[defaults]\nsample-interval = 60s\nmax-parallel = 1\nmax-parallel-per-iothread = 0\n"

#define COPYING  MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0")
#define WAITING  MIGRATE (.domain = "db01", .states = "vmr-1 copying, vmr-2 queued (max-parallel)")
#define PIVOTING HOLD ("pivot"), COPYING, READY (.states = "vmr-1 pivoting")
#define STARTING                                                                                   \
    HOLD ("start_copy"), MIGRATE (.states = "vmr-1 queued", .replies = "", .files = BOTH)
#define CANCEL(id)    COMMAND (.job = id, .arg = "cancel", .replies = "cancel " id " ok cancelled")
#define RESTART(jobs) STEP (STEP_RESTART, .states = jobs, .calls = "")
#define CRASH(jobs)   STEP (STEP_CRASH, .states = jobs, .calls = "")
#define ADOPTION(outcome, ...)                                                                     \
    STEP (STEP_ADOPTION, .value = VMR_BACKEND_ADOPT_##outcome, __VA_ARGS__)
#define ATTACH(...) STEP (STEP_ATTACH, .replies = "attach * ok", __VA_ARGS__)

/* the copy runs in QEMU, in sync: picked up, it pivots */
#define PICKED_UP_IN_SYNC                                                                          \
    ADOPTION (RUNNING, .flags = ADOPT_READY),                                                      \
        ATTACH (.states = "vmr-1 completed",                                                       \
                .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed",                        \
                .calls = "adopt_copy vmr-1; pivot vmr-1")

/* "the domain stopped", or a lost connection, during the pivot */
#define DURING_PIVOT "*during the pivot*check which of */web01-disk0.img and */web01-disk0-dst.img*"

static const EngineCase domain_cases[] = {
    /* ---- the domain stops ---- */
    { "/engine/domain/removed-while-copying",
      .steps = { COPYING,
                 { STEP_REMOVE_DOMAIN, .states = "vmr-1 failed", .changes = "vmr-1 failed",
                   .calls = "close", .reasons = "vmr-1=the domain stopped", .files = SRC },
                 MIGRATE (.calls = "", .replies = "migrate error: unknown domain 'web01'") } },
    { "/engine/domain/removed-while-pivoting",
      /* the switch may have happened: both files stay */
      .steps = { PIVOTING,
                 { STEP_REMOVE_DOMAIN, .states = "vmr-1 failed", .calls = "close",
                   .reasons = "vmr-1=the domain stopped" DURING_PIVOT, .files = BOTH } },
      .files = BOTH },
    { "/engine/domain/removed-while-starting",
      .steps = { STARTING,
                 { STEP_REMOVE_DOMAIN, .states = "vmr-1 failed", .calls = "close",
                   .replies = "migrate error: *closed*", .files = SRC } } },
    { "/engine/domain/removed-while-waiting", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps = { COPYING,
                 WAITING,
                 { STEP_REMOVE_DOMAIN, .domain = "db01", .states = "vmr-1 copying, vmr-2 failed",
                   .calls = "close", .files = WEB_DONE },
                 CANCEL ("vmr-1") } },
    { "/engine/domain/removed-with-a-group", .domains = TWO_DISKS,
      .steps
      = { MIGRATE (.arg = "disk0,disk1", .states = "vmr-1 copying, vmr-2 copying"),
          /* nothing more goes to the backend, not even the group's cancel */
          { STEP_REMOVE_DOMAIN, .states = "vmr-1 failed, vmr-2 failed", .calls = "close",
            .reasons = "vmr-1=the domain stopped | vmr-2=the domain stopped", .files = SRCS } } },

    { "/engine/domain/removed-while-cancelling", .manual_finish = TRUE,
      .steps = { COPYING,
                 COMMAND (.arg = "cancel", .states = "vmr-1 copying", .calls = "cancel vmr-1",
                          .replies = ""),
                 /* the cancel is answered once the job has ended, whichever way */
                 { STEP_REMOVE_DOMAIN, .states = "vmr-1 failed", .calls = "close",
                   .replies = "cancel vmr-1 ok failed", .files = SRC } } },

    /* ---- events from the backend of another domain ---- */
    { "/engine/event/finished-from-another-domain", .domains = TWO_DOMAINS,
      .steps
      = { COPYING,
          FINISHED (.domain = "db01", .arg = "failed", .text = "not ours",
                    .states = "vmr-1 copying", .changes = "", .calls = "",
                    .warning = "the backend of db01 reported on job vmr-1 of web01: ignored"),
          CANCEL ("vmr-1") } },
    { "/engine/event/ready-from-another-domain", .domains = TWO_DOMAINS,
      .steps = { COPYING,
                 READY (.domain = "db01", .states = "vmr-1 copying", .changes = "", .calls = "",
                        .warning = "the backend of db01 reported on job vmr-1 of web01: ignored"),
                 CANCEL ("vmr-1") } },

    /* ---- the monitor connection is lost ---- */
    { "/engine/disconnect/copying",
      .steps = { COPYING,
                 { STEP_DISCONNECT, .text = "reset by peer", .states = "vmr-1 failed", .calls = "",
                   .reasons = "vmr-1=QEMU monitor connection lost (reset by peer); the source "
                              "*/web01-disk0.img was not changed",
                   .files = SRC },
                 MIGRATE (.calls = "", .replies
                                       = "migrate error: the QEMU monitor of web01 is gone; detach "
                                         "and attach it again"),
                 { STEP_DETACH, .calls = "close", .replies = "detach ok" } } },
    { "/engine/disconnect/pivoting",
      .steps = { PIVOTING,
                 { STEP_DISCONNECT, .states = "vmr-1 failed", .reasons = "vmr-1=*" DURING_PIVOT,
                   .files = BOTH } },
      .files = BOTH },
    { "/engine/disconnect/starting",
      /* a start on its way cleans up after itself */
      .steps
      = { STARTING,
          { STEP_DISCONNECT, .states = "vmr-1 failed", .files = BOTH },
          { STEP_FAIL, .arg = "start_copy", .text = "connection lost", .states = "vmr-1 failed",
            .changes = "", .replies = "migrate error: connection lost", .files = SRC } } },
    { "/engine/disconnect/waiting", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps
      = { COPYING,
          WAITING,
          { STEP_DISCONNECT, .domain = "db01", .states = "vmr-1 copying, vmr-2 failed",
            .files = WEB_DONE },
          /* the slot that frees has nobody left to take it */
          FINISHED (.arg = "completed", .states = "vmr-1 completed, vmr-2 failed", .calls = "") },
      .files = WEB_DONE },
    { "/engine/detach/busy",
      .steps = { COPYING,
                 { STEP_DETACH, .calls = "",
                   .replies = "detach error: domain web01 has a migration running (job vmr-1); "
                              "cancel it first" },
                 CANCEL ("vmr-1"),
                 { STEP_DETACH, .calls = "close", .replies = "detach ok" } } },

    { "/engine/detach/follows-its-domain", .follows = TRUE,
      .steps = { { STEP_DETACH, .calls = "",
                   .replies = "detach error: domain web01 is followed through fake; it leaves "
                              "when it stops" },
                 { STEP_REMOVE_DOMAIN, .calls = "close", .states = "" } } },
    { "/engine/domain/attached-twice",
      .steps = { { STEP_ATTACH, .calls = "",
                   .replies = "attach web01 error: a domain named web01 is attached already" } } },

    /* ---- the daemon restarts ---- */
    { "/engine/restart/running",
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"),
                 COMMAND (.arg = "pause", .calls = "",
                          .replies = "pause vmr-1 error: job vmr-1 waits for its domain web01, *"),
                 ADOPTION (RUNNING),
                 ATTACH (.states = "vmr-1 copying", .changes = "", .calls = "adopt_copy vmr-1"),
                 /* followed again: its events count */
                 READY (.states = "vmr-1 completed", .calls = "pivot vmr-1") },
      .files = BOTH },
    { "/engine/restart/running-in-sync",
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"), PICKED_UP_IN_SYNC }, .files = BOTH },
    { "/engine/restart/in-sync-for-a-manual-pivot",
      .steps = { MIGRATE (.flags = MIGRATE_MANUAL_PIVOT), READY (.states = "vmr-1 synced"),
                 RESTART ("vmr-1 synced orphaned"), ADOPTION (RUNNING, .flags = ADOPT_READY),
                 ATTACH (.states = "vmr-1 synced", .changes = "", .calls = "adopt_copy vmr-1"),
                 COMMAND (.arg = "pivot", .states = "vmr-1 completed", .calls = "pivot vmr-1") },
      .files = BOTH },
    { "/engine/restart/paused-meanwhile",
      .steps
      = { COPYING, RESTART ("vmr-1 copying orphaned"), ADOPTION (RUNNING, .flags = ADOPT_PAUSED),
          ATTACH (.states = "vmr-1 paused", .changes = "vmr-1 paused"),
          COMMAND (.arg = "resume", .states = "vmr-1 copying", .calls = "resume vmr-1"),
          CANCEL ("vmr-1") } },
    { "/engine/restart/ending",
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"), ADOPTION (ENDING),
                 ATTACH (.states = "vmr-1 copying", .calls = "adopt_copy vmr-1"),
                 FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                           .reasons = "vmr-1=I/O error", .files = SRC) } },
    { "/engine/restart/on-destination",
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"), ADOPTION (ON_DESTINATION),
                 ATTACH (.states = "vmr-1 completed",
                         .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed",
                         .calls = "adopt_copy vmr-1", .files = BOTH) },
      .files = BOTH },
    { "/engine/restart/gone",
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"), ADOPTION (GONE),
                 ATTACH (.states = "vmr-1 failed", .calls = "adopt_copy vmr-1",
                         .reasons = "vmr-1=the copy was lost while virt-mirrord was not running; "
                                    "disk0 of web01 stays on */web01-disk0.img",
                         .files = SRC) } },
    { "/engine/restart/gone-before-it-started", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps = { COPYING, WAITING, RESTART ("vmr-1 copying orphaned, vmr-2 queued orphaned"),
                 ADOPTION (RUNNING), ADOPTION (GONE, .job = "vmr-2"),
                 /* it waits for its turn again; the copy of the earlier run still counts */
                 ATTACH (.domain = "db01",
                         .states = "vmr-1 copying orphaned, vmr-2 queued "
                                   "(max-parallel)",
                         .calls = "adopt_copy vmr-2"),
                 ATTACH (.domain = "web01", .states = "vmr-1 copying, vmr-2 queued (max-parallel)",
                         .calls = "adopt_copy vmr-1"),
                 FINISHED (.arg = "completed", .states = "vmr-1 completed, vmr-2 copying",
                           .calls = "start_copy vmr-2 0"),
                 CANCEL ("vmr-2") },
      .files = WEB_DONE },
    { "/engine/restart/speed-set-while-waiting", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps = { COPYING, WAITING,
                 COMMAND (.job = "vmr-2", .arg = "set_speed", .value = 2000,
                          .replies = "set_speed vmr-2 ok queued"),
                 RESTART ("vmr-1 copying orphaned, vmr-2 queued orphaned"), ADOPTION (RUNNING),
                 ATTACH (.domain = "web01"), ATTACH (.domain = "db01"),
                 FINISHED (.arg = "completed", .states = "vmr-1 completed, vmr-2 copying",
                           .calls = "start_copy vmr-2 2000"),
                 CANCEL ("vmr-2") },
      .files = WEB_DONE },
    { "/engine/restart/speed-set-while-copying",
      .steps
      = { MIGRATE (.value = 1000, .calls = "start_copy vmr-1 1000"),
          COMMAND (.arg = "set_speed", .value = 5000, .calls = "set_speed vmr-1 5000"),
          RESTART ("vmr-1 copying orphaned"), ADOPTION (RUNNING, .speed = 5000),
          ATTACH (.states = "vmr-1 copying"), COMMAND (.arg = "pause", .states = "vmr-1 paused"),
          COMMAND (.arg = "resume", .states = "vmr-1 copying",
                   .replies = "resume vmr-1 ok copying"),
          CANCEL ("vmr-1") } },
    { "/engine/restart/cannot-pick-up",
      .steps
      = { COPYING,
          RESTART ("vmr-1 copying orphaned"),
          { STEP_REPLY, .arg = "adopt_copy", .value = FAKE_REPLY_FAIL, .text = "busy" },
          ATTACH (.warning = "*cannot pick it up: busy", .states = "vmr-1 copying orphaned",
                  .calls = "adopt_copy vmr-1"),
          /* the copy, if any, is left alone */
          COMMAND (.arg = "cancel", .states = "vmr-1 cancelled", .calls = "",
                   .reasons = "vmr-1=cancelled while its domain was not known*", .files = BOTH) },
      .files = BOTH },
    { "/engine/restart/new-job-numbers", .domains = TWO_DISKS,
      .steps = { COPYING, RESTART ("vmr-1 copying orphaned"), ATTACH (.states = "vmr-1 failed"),
                 MIGRATE (.arg = "disk1", .states = "vmr-1 failed, vmr-2 copying",
                          .calls = "start_copy vmr-2 0", .replies = "migrate ok vmr-2"),
                 CANCEL ("vmr-2") },
      .files = SRCS },
    { "/engine/restart/group-member-gone", .domains = TWO_DISKS,
      .steps = { MIGRATE (.arg = "disk0,disk1", .states = "vmr-1 copying, vmr-2 copying"),
                 READY (.states = "vmr-1 synced, vmr-2 copying"),
                 RESTART ("vmr-1 synced orphaned, vmr-2 copying orphaned"),
                 ADOPTION (RUNNING, .flags = ADOPT_READY),
                 /* the member in sync waits for the other, which is lost: the group fails */
                 ATTACH (.states = "vmr-1 cancelled, vmr-2 failed",
                         .calls = "adopt_copy vmr-1; adopt_copy vmr-2; cancel vmr-1",
                         .reasons = "vmr-1=cancelled with its group: vmr-2 failed: the copy was "
                                    "lost*",
                         .files = SRCS) },
      .files = SRCS },

    /* ---- the daemon is killed: its records are as they were ---- */
    { "/engine/crash/while-pivoting-it-pivoted",
      .steps = { PIVOTING, CRASH ("vmr-1 pivoting orphaned"), ADOPTION (ON_DESTINATION),
                 ATTACH (.states = "vmr-1 completed", .changes = "vmr-1 completed",
                         .calls = "adopt_copy vmr-1") },
      .files = BOTH },
    { "/engine/crash/while-pivoting-it-did-not",
      /* QEMU's READY does not go back: in sync again, it pivots again */
      .steps = { PIVOTING, CRASH ("vmr-1 pivoting orphaned"), PICKED_UP_IN_SYNC }, .files = BOTH },
    { "/engine/crash/while-starting-it-started",
      .steps = { STARTING, CRASH ("vmr-1 queued orphaned"), ADOPTION (RUNNING),
                 ATTACH (.states = "vmr-1 copying", .changes = "vmr-1 copying",
                         .calls = "adopt_copy vmr-1"),
                 READY (.states = "vmr-1 completed", .calls = "pivot vmr-1") },
      .files = BOTH },
    { "/engine/crash/while-starting-it-did-not",
      .steps
      = { STARTING, CRASH ("vmr-1 queued orphaned"), ADOPTION (GONE),
          ATTACH (.states = "vmr-1 copying", .calls = "adopt_copy vmr-1; start_copy vmr-1 0"),
          CANCEL ("vmr-1") } },
};

void
engine_add_domain_cases (void)
{
    engine_cases_add (domain_cases, G_N_ELEMENTS (domain_cases));
}
