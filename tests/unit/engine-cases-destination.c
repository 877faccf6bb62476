/*
 * A destination between the request and the end of its copy: someone else
 * writes a file where a queued job's destination is to be made, while the
 * daemon runs or while it is down; the policy is tightened at a reload; the
 * file the daemon made is replaced before the copy ends or cuts over; a
 * domain that is defined and not running has the destination as its disk.
 * The daemon checks again before anything is made, removes only the file it
 * made, and fails the job with one line.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#define SRC  "web01-disk0.img"
#define BOTH "web01-disk0-dst.img web01-disk0.img"

#define TWO_DISKS "web01=disk0,disk1"
#define ONE_AT_A_TIME                                                                              \
    "[defaults]\nsample-interval = 60s\nmax-parallel = 1\nmax-parallel-per-iothread = 0\n"

#define COPYING MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 0")
/* vmr-1 copies disk0, vmr-2 waits to copy disk1 */
#define ONE_WAITS                                                                                  \
    COPYING, MIGRATE (.arg = "disk1", .states = "vmr-1 copying, vmr-2 queued (max-parallel)",      \
                      .calls = "")
#define PRECIOUS      "the bytes someone else wrote"
#define WRITE(name)   STEP (STEP_WRITE, .arg = name, .text = PRECIOUS, .calls = "")
#define READ(name)    STEP (STEP_READ, .arg = name, .text = PRECIOUS, .calls = "")
#define CANCEL(id)    COMMAND (.job = id, .arg = "cancel", .replies = "cancel " id " ok cancelled")
#define CRASH(jobs)   STEP (STEP_CRASH, .states = jobs, .calls = "")
#define ATTACH(...)   STEP (STEP_ATTACH, .replies = "attach * ok", __VA_ARGS__)
#define EXISTS(id, f) id "=destination */" f " exists; pass --reuse to copy onto it"
#define NOT_OURS(f)   "*not removing */" f ": it is not the file the daemon made (it was replaced)"

static const EngineCase destination_cases[] = {
    /* the restart case of issue 29, without a restart: it stays, the job fails with its line */
    { "/engine/destination/appeared-while-queued", .domains = TWO_DISKS, .policy = ONE_AT_A_TIME,
      .steps = { ONE_WAITS, WRITE ("web01-disk1-dst.img"), CANCEL ("vmr-1"),
                 STEP (STEP_READ, .arg = "web01-disk1-dst.img", .text = PRECIOUS,
                       .states = "vmr-1 cancelled, vmr-2 failed",
                       .reasons = EXISTS ("vmr-2", "web01-disk1-dst.img")) },
      .files = "web01-disk0.img web01-disk1-dst.img web01-disk1.img" },
    /* and with a restart: its record says it made nothing, so nothing is removed */
    { "/engine/destination/appeared-while-the-daemon-was-down", .domains = TWO_DISKS,
      .policy = ONE_AT_A_TIME,
      .steps
      = { ONE_WAITS, CRASH ("vmr-1 copying orphaned, vmr-2 queued orphaned"),
          WRITE ("web01-disk1-dst.img"), STEP (STEP_ADOPTION, .value = VMR_BACKEND_ADOPT_RUNNING),
          ATTACH (.states = "vmr-1 copying, vmr-2 failed",
                  .calls = "adopt_copy vmr-1; adopt_copy vmr-2",
                  .reasons = EXISTS ("vmr-2", "web01-disk1-dst.img")),
          READ ("web01-disk1-dst.img"), CANCEL ("vmr-1") },
      .files = "web01-disk0.img web01-disk1-dst.img web01-disk1.img" },
    /* a reload that tightens the policy: the queued job fails, nothing is made */
    { "/engine/destination/reload-refuses-a-queued-job", .domains = TWO_DISKS,
      .policy = ONE_AT_A_TIME,
      .steps = { ONE_WAITS,
                 STEP (STEP_RELOAD, .text = ONE_AT_A_TIME "allowed-destinations = /nowhere/*\n",
                       .states = "vmr-1 copying, vmr-2 failed", .calls = "", .replies = "reload ok",
                       .reasons = "vmr-2=destination */web01-disk1-dst.img is not in the policy's "
                                  "allowed-destinations (/nowhere/*)"),
                 CANCEL ("vmr-1") },
      .files = "web01-disk0.img web01-disk1.img" },
    /* the file the daemon made was replaced: what is there now stays */
    { "/engine/destination/replaced-before-the-copy-failed",
      .steps = { COPYING, WRITE ("web01-disk0-dst.img"),
                 FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                           .warning = NOT_OURS ("web01-disk0-dst.img")),
                 READ ("web01-disk0-dst.img") },
      .files = BOTH },
    /* nor does the guest move to a file its path no longer names */
    { "/engine/destination/replaced-before-the-pivot",
      .steps = { COPYING, WRITE ("web01-disk0-dst.img"),
                 READY (.states = "vmr-1 failed", .calls = "cancel vmr-1",
                        .reasons = "vmr-1=destination */web01-disk0-dst.img no longer leads to the "
                                   "file the copy writes*",
                        .warning = "*the copy is cancelled, disk0 stays on *; " NOT_OURS (
                            "web01-disk0-dst.img")),
                 READ ("web01-disk0-dst.img") },
      .files = BOTH },
    /* what the daemon made goes when the copy fails; a record says so */
    { "/engine/destination/made-goes-when-the-copy-fails",
      .steps = { COPYING, FINISHED (.arg = "failed", .text = "I/O error", .states = "vmr-1 failed",
                                    .files = SRC) } },
    /* after a restart, unless the domain's definition names it */
    { "/engine/destination/named-by-the-definition-stays",
      .steps = { COPYING, CRASH ("vmr-1 copying orphaned"),
                 STEP (STEP_ADOPTION, .value = VMR_BACKEND_ADOPT_GONE, .flags = ADOPT_IN_USE),
                 ATTACH (.states = "vmr-1 failed", .calls = "adopt_copy vmr-1", .files = BOTH) },
      .files = BOTH },
    /* the disk of a domain that does not run is refused as another domain's disk is */
    { "/engine/destination/disk-of-a-defined-domain",
      .steps = { STEP (STEP_DEFINE, .text = "old01", .arg = "web01-disk0-dst.img", .calls = ""),
                 MIGRATE (.states = "", .calls = "",
                          .replies = "migrate error: destination */web01-disk0-dst.img is the disk "
                                     "vda of domain old01, which is defined and not running") } },
};

void
engine_add_destination_cases (void)
{
    engine_cases_add (destination_cases, G_N_ELEMENTS (destination_cases));
}
