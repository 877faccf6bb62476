/*
 * The engine's groups (the disks of one domain that cut over together) and
 * its admission limits (how many copies run at once), against fake backends.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

/* web01 with two disks */
#define TWO_DISKS "web01=disk0,disk1"
#define SRCS      "web01-disk0.img web01-disk1.img"
#define ALL       "web01-disk0-dst.img web01-disk0.img web01-disk1-dst.img web01-disk1.img"

/* two domains of one disk each */
#define TWO_DOMAINS "web01=disk0 db01=disk0"
#define WEB_DONE    "db01-disk0.img web01-disk0-dst.img web01-disk0.img"

#define POLICY(keys) "[defaults]\nsample-interval = 60s\n" keys
/* the built-in limits: one copy per I/O thread of a domain */
#define BUILT_IN_LIMITS POLICY ("")
#define ONE_ON_HOST     POLICY ("max-parallel = 1\nmax-parallel-per-iothread = 0\n")

#define BOTH_STARTED                                                                               \
    MIGRATE (.arg = "disk0,disk1", .states = "vmr-1 copying, vmr-2 copying",                       \
             .changes = "vmr-1 queued, vmr-2 queued, vmr-1 copying, vmr-2 copying",                \
             .calls = "start_copy vmr-1 0; start_copy vmr-2 0",                                    \
             .replies = "migrate ok vmr-1 vmr-2", .files = ALL)
#define SECOND_WAITS(limit)                                                                        \
    MIGRATE (.domain = "db01", .states = "vmr-1 copying, vmr-2 queued (" limit ")", .calls = "",   \
             .replies = "migrate ok vmr-2")
#define CANCEL(id)                                                                                 \
    COMMAND (.job = id, .arg = "cancel", .calls = "cancel " id, .replies = "cancel " id " ok *")

static const EngineCase group_cases[] = {
    /* ---- groups ---- */
    { "/engine/group/cut-over", .domains = TWO_DISKS,
      .steps = { BOTH_STARTED,
                 /* the first in sync waits for the other */
                 READY (.states = "vmr-1 synced, vmr-2 copying", .calls = ""),
                 READY (.job = "vmr-2", .states = "vmr-1 completed, vmr-2 completed",
                        .changes = "vmr-2 synced, vmr-1 pivoting, vmr-2 pivoting, "
                                   "vmr-1 completed, vmr-2 completed",
                        .calls = "pivot vmr-1; pivot vmr-2") },
      .files = ALL },
    { "/engine/group/member-fails", .domains = TWO_DISKS,
      .steps = { BOTH_STARTED, READY (.states = "vmr-1 synced, vmr-2 copying"),
                 /* the other member, in sync, is cancelled: the domain stays on its sources */
                 FINISHED (.job = "vmr-2", .arg = "failed", .text = "I/O error",
                           .calls = "cancel vmr-1", .states = "vmr-1 cancelled, vmr-2 failed",
                           .changes = "vmr-2 failed, vmr-1 cancelled",
                           .reasons = "vmr-1=cancelled with its group: vmr-2 failed: I/O error",
                           .files = SRCS) } },
    { "/engine/group/user-cancels-one", .domains = TWO_DISKS,
      .steps
      = { BOTH_STARTED,
          COMMAND (.job = "vmr-2", .arg = "cancel", .states = "vmr-1 cancelled, vmr-2 cancelled",
                   .changes = "vmr-2 cancelled, vmr-1 cancelled",
                   .calls = "cancel vmr-2; cancel vmr-1", .replies = "cancel vmr-2 ok cancelled",
                   .reasons = "vmr-1=cancelled with its group: vmr-2 cancelled: *",
                   .files = SRCS) } },
    { "/engine/group/start-fails", .domains = TWO_DISKS,
      .steps
      = { HOLD ("start_copy"),
          MIGRATE (.arg = "disk0,disk1", .states = "vmr-1 queued, vmr-2 queued",
                   .calls = "start_copy vmr-1 0; start_copy vmr-2 0", .replies = "", .files = ALL),
          { STEP_FAIL, "vmr-1", .arg = "start_copy", .text = "no space",
            .states = "vmr-1 failed, vmr-2 queued", .changes = "vmr-1 failed", .calls = "",
            .replies = "migrate error: no space",
            .files = "web01-disk0.img web01-disk1-dst.img web01-disk1.img" },
          /* the other member is cancelled once its copy runs */
          { STEP_RELEASE, "vmr-2", .arg = "start_copy", .states = "vmr-1 failed, vmr-2 cancelled",
            .changes = "vmr-2 copying, vmr-2 cancelled", .calls = "cancel vmr-2",
            .reasons = "vmr-2=cancelled with its group: vmr-1 failed: no space",
            .files = SRCS } } },
    { "/engine/group/manual-pivot", .domains = TWO_DISKS,
      .steps
      = { MIGRATE (.arg = "disk0,disk1", .flags = MIGRATE_MANUAL_PIVOT,
                   .states = "vmr-1 copying, vmr-2 copying"),
          READY (.states = "vmr-1 synced, vmr-2 copying"),
          COMMAND (.arg = "pivot", .calls = "",
                   .replies = "pivot vmr-1 error: job vmr-1 is one of group vmr-1, and "
                              "vmr-2 is copying; the group can pivot once every member "
                              "is synced"),
          READY (.job = "vmr-2", .states = "vmr-1 synced, vmr-2 synced", .calls = ""),
          COMMAND (.job = "vmr-2", .arg = "pivot", .states = "vmr-1 completed, vmr-2 completed",
                   .calls = "pivot vmr-1; pivot vmr-2", .replies = "pivot vmr-2 ok *") },
      .files = ALL },
    { "/engine/group/pivot-refused-for-one", .domains = TWO_DISKS,
      .steps
      = { HOLD ("pivot"),
          BOTH_STARTED,
          READY (.states = "vmr-1 synced, vmr-2 copying"),
          READY (.job = "vmr-2", .states = "vmr-1 pivoting, vmr-2 pivoting",
                 .calls = "pivot vmr-1; pivot vmr-2"),
          { STEP_FAIL, "vmr-1", .arg = "pivot", .text = "refused",
            .warning = "*pivot of group vmr-1 refused*", .states = "vmr-1 synced, vmr-2 pivoting" },
          { STEP_RELEASE, "vmr-2", .arg = "pivot", .states = "vmr-1 synced, vmr-2 completed" },
          { STEP_REPLY, .arg = "pivot", .value = FAKE_REPLY_AT_ONCE },
          /* the domain runs on one new image and one old: the rest must be able to follow */
          COMMAND (.arg = "pivot", .states = "vmr-1 completed, vmr-2 completed",
                   .calls = "pivot vmr-1", .replies = "pivot vmr-1 ok *") },
      .files = ALL },
    { "/engine/group/waits-for-its-iothread", .domains = TWO_DISKS, .policy = BUILT_IN_LIMITS,
      .steps = { MIGRATE (.arg = "disk0,disk1",
                          .states = "vmr-1 copying, vmr-2 queued (max-parallel-per-iothread)",
                          .calls = "start_copy vmr-1 0", .replies = "migrate ok vmr-1 vmr-2"),
                 /* a member in sync frees its slot for the next */
                 READY (.states = "vmr-1 synced, vmr-2 copying",
                        .changes = "vmr-1 synced, vmr-2 copying", .calls = "start_copy vmr-2 0"),
                 READY (.job = "vmr-2", .states = "vmr-1 completed, vmr-2 completed",
                        .calls = "pivot vmr-1; pivot vmr-2") },
      .files = ALL },
    { "/engine/group/fails-while-one-waits", .domains = TWO_DISKS, .policy = BUILT_IN_LIMITS,
      .steps
      = { MIGRATE (.arg = "disk0,disk1",
                   .states = "vmr-1 copying, vmr-2 queued (max-parallel-per-iothread)"),
          FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed, vmr-2 cancelled",
                    .changes = "vmr-1 failed, vmr-2 cancelled", .calls = "",
                    .reasons = "vmr-2=cancelled with its group: vmr-1 failed: I/O error",
                    .files = SRCS) } },

    { "/engine/group/invalid-member", .domains = TWO_DISKS,
      /* nothing is created unless every disk of the request is valid */
      .steps = { MIGRATE (.arg = "disk0,disk9", .states = "", .calls = "",
                          .replies = "migrate error: domain web01 has no disk 'disk9' (its "
                                     "disks: disk0, disk1)") } },
    { "/engine/group/paused-member-holds-the-cut-over", .domains = TWO_DISKS,
      .steps
      = { BOTH_STARTED, COMMAND (.job = "vmr-2", .arg = "pause"),
          READY (.states = "vmr-1 synced, vmr-2 paused", .calls = ""),
          READY (.job = "vmr-2", .states = "vmr-1 synced, vmr-2 paused", .calls = ""),
          /* the resume finds it in sync, the last of its group */
          COMMAND (.job = "vmr-2", .arg = "resume", .states = "vmr-1 completed, vmr-2 completed",
                   .calls = "resume vmr-2; pivot vmr-1; pivot vmr-2") },
      .files = ALL },

    /* ---- evacuation: each domain's disks under a directory move as one group ---- */
    { "/engine/evacuate/dry-run", .domains = TWO_DISKS,
      .steps = { { STEP_EVACUATE, .arg = "dry-run", .states = "", .calls = "",
                   .replies = "evacuate ok web01 disk0 -, web01 disk1 -" } },
      .files = SRCS },
    { "/engine/evacuate/a-group-per-domain", .domains = TWO_DISKS " db01=disk0",
      .steps = { { STEP_EVACUATE, .states = "vmr-1 copying, vmr-2 copying, vmr-3 copying",
                   .calls = "start_copy vmr-2 0; start_copy vmr-3 0; start_copy vmr-1 0",
                   .replies = "evacuate ok db01 disk0 vmr-1, web01 disk0 vmr-2, web01 disk1 "
                              "vmr-3" },
                 READY (.states = "vmr-1 completed, vmr-2 copying, vmr-3 copying"),
                 READY (.job = "vmr-2", .states = "vmr-1 completed, vmr-2 synced, vmr-3 copying"),
                 READY (.job = "vmr-3", .calls = "pivot vmr-2; pivot vmr-3",
                        .states = "vmr-1 completed, vmr-2 completed, vmr-3 completed") },
      .files
      = "db01-disk0.img " SRCS " new/db01-disk0.img new/web01-disk0.img new/web01-disk1.img" },
    { "/engine/evacuate/skips-a-disk-that-migrates", .domains = TWO_DISKS,
      .steps
      = { MIGRATE (.states = "vmr-1 copying"),
          { STEP_EVACUATE, .states = "vmr-1 copying, vmr-2 copying", .calls = "start_copy vmr-2 0",
            .replies = "evacuate ok web01 disk0 skipped: already migrating, web01 disk1 "
                       "vmr-2" },
          COMMAND (.arg = "cancel", .states = "vmr-1 cancelled, vmr-2 copying"),
          COMMAND (.job = "vmr-2", .arg = "cancel", .states = "vmr-1 cancelled, vmr-2 cancelled") },
      .files = SRCS },

    /* ---- admission limits ---- */
    { "/engine/admission/max-parallel", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps = { MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0"),
                 SECOND_WAITS ("max-parallel"),
                 COMMAND (.job = "vmr-2", .arg = "set_speed", .value = 2000, .calls = "",
                          .replies = "set_speed vmr-2 ok queued"),
                 COMMAND (.job = "vmr-2", .arg = "pause", .calls = "",
                          .replies = "pause vmr-2 error: job vmr-2 is queued: its copy has not "
                                     "started"),
                 /* the copy that ends lets the next in line start, at its user's speed */
                 FINISHED (.arg = "completed", .states = "vmr-1 completed, vmr-2 copying",
                           .changes = "vmr-1 synced, vmr-1 pivoting, vmr-1 completed, "
                                      "vmr-2 copying",
                           .calls = "start_copy vmr-2 2000"),
                 CANCEL ("vmr-2") },
      .files = WEB_DONE },
    { "/engine/admission/cancel-waiting", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps
      = { MIGRATE (.states = "vmr-1 copying"), SECOND_WAITS ("max-parallel"),
          COMMAND (.job = "vmr-2", .arg = "cancel", .states = "vmr-1 copying, vmr-2 cancelled",
                   .calls = "", .replies = "cancel vmr-2 ok cancelled",
                   .reasons = "vmr-2=cancelled on request before the copy started"),
          CANCEL ("vmr-1") } },
    { "/engine/admission/synced-frees-the-slot", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps = { MIGRATE (.flags = MIGRATE_MANUAL_PIVOT, .states = "vmr-1 copying"),
                 SECOND_WAITS ("max-parallel"),
                 READY (.states = "vmr-1 synced, vmr-2 copying", .calls = "start_copy vmr-2 0"),
                 CANCEL ("vmr-1"), CANCEL ("vmr-2") } },
    { "/engine/admission/paused-keeps-the-slot", .domains = TWO_DISKS,
      .policy = POLICY ("max-parallel-per-iothread = 0\nmax-parallel-per-domain = 1\n"),
      .steps
      = { MIGRATE (.states = "vmr-1 copying"),
          MIGRATE (.arg = "disk1",
                   .states = "vmr-1 copying, vmr-2 queued (max-parallel-per-domain)", .calls = ""),
          COMMAND (.arg = "pause",
                   .states = "vmr-1 paused, vmr-2 queued (max-parallel-per-domain)"),
          COMMAND (.arg = "cancel", .states = "vmr-1 cancelled, vmr-2 copying",
                   .calls = "cancel vmr-1; start_copy vmr-2 0"),
          CANCEL ("vmr-2") } },
    { "/engine/admission/failed-start-frees-the-slot", .domains = TWO_DOMAINS,
      .policy = ONE_ON_HOST,
      .steps = { HOLD ("start_copy"),
                 MIGRATE (.states = "vmr-1 queued", .replies = ""),
                 /* a copy on its way to QEMU counts */
                 MIGRATE (.domain = "db01", .states = "vmr-1 queued, vmr-2 queued (max-parallel)",
                          .calls = "", .replies = "migrate ok vmr-2"),
                 { STEP_FAIL, "vmr-1", .arg = "start_copy", .text = "busy",
                   .states = "vmr-1 failed, vmr-2 copying", .calls = "start_copy vmr-2 0",
                   .replies = "migrate error: busy" },
                 CANCEL ("vmr-2") } },
    { "/engine/admission/reload-raises-the-limit", .domains = TWO_DOMAINS, .policy = ONE_ON_HOST,
      .steps
      = { MIGRATE (.states = "vmr-1 copying"),
          SECOND_WAITS ("max-parallel"),
          { STEP_RELOAD, .text = "[defaults]\nmax-parallel = lots\n",
            .states = "vmr-1 copying, vmr-2 queued (max-parallel)", .calls = "",
            .replies = "reload error: *max-parallel*\nthe policy is unchanged" },
          { STEP_RELOAD, .text = POLICY ("max-parallel = 2\nmax-parallel-per-iothread = 0\n"),
            .states = "vmr-1 copying, vmr-2 copying", .calls = "start_copy vmr-2 0",
            .replies = "reload ok" },
          CANCEL ("vmr-1"),
          CANCEL ("vmr-2") } },
    { "/engine/admission/per-destination", .domains = TWO_DOMAINS,
      .policy = POLICY ("max-parallel-per-iothread = 0\nmax-parallel-per-destination = 1\n"),
      .steps = { MIGRATE (.states = "vmr-1 copying"), SECOND_WAITS ("max-parallel-per-destination"),
                 FINISHED (.arg = "failed", .text = "I/O error",
                           .states = "vmr-1 failed, vmr-2 copying", .calls = "start_copy vmr-2 0"),
                 CANCEL ("vmr-2") } },
};

void
engine_add_group_cases (void)
{
    engine_cases_add (group_cases, G_N_ELEMENTS (group_cases));
}
