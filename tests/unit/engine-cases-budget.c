/*
 * A storage's budget on one host: the copies on it share it equally, each
 * speed sent to the backend is capped to its share and never unlimited, a
 * copy that joins lowers the others first, and a copy that leaves gives its
 * share to the others only once every lower is answered.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

/* every image lies in "all", whose budget is 60 MiB/s */
#define BUDGET_POLICY ENGINE_TEST_POLICY "[storage all]\npaths = /**\nbudget = 60M\n"

#define WHOLE "62914560"
#define HALF  "31457280"
#define THIRD "20971520"

static const EngineCase budget_cases[] = {
    { "/engine/budget/shared",
      .domains = "web01=disk0,disk1,disk2",
      .policy = BUDGET_POLICY,
      .steps = {
          /* alone: the whole budget, not unlimited as the policy's speed = 0 asks */
          MIGRATE (.states = "vmr-1 copying", .calls = "start_copy vmr-1 " WHOLE "*"),
          /* a second: the first is lowered to half before the second starts at half */
          MIGRATE (.arg = "disk1", .states = "vmr-1 copying, vmr-2 copying",
                   .calls = "set_speed vmr-1 " HALF "; start_copy vmr-2 " HALF "*"),
          /* the lowers go unanswered: the third starts at what the lowered speeds leave */
          HOLD ("set_speed"),
          MIGRATE (.arg = "disk2", .states = "vmr-1 copying, vmr-2 copying, vmr-3 copying",
                   .calls = "set_speed vmr-? " THIRD "; set_speed vmr-? " THIRD
                            "; start_copy vmr-3 " THIRD "*"),
          /* the first leaves: no raise while a lower is on its way */
          COMMAND (.arg = "cancel", .states = "vmr-1 cancelled, vmr-2 copying, vmr-3 copying",
                   .calls = "cancel vmr-1"),
          STEP (STEP_RELEASE, .arg = "set_speed", .calls = ""),
          STEP (STEP_RELEASE, .arg = "set_speed", .calls = ""),
          STEP (STEP_REPLY, .arg = "set_speed", .value = FAKE_REPLY_AT_ONCE, .calls = ""),
          /* the last lower answered: the other two are raised to half each */
          STEP (STEP_RELEASE, .arg = "set_speed",
                .calls = "set_speed vmr-? " HALF "; set_speed vmr-? " HALF),
          /* a user's speed over the share is capped to it */
          COMMAND (.job = "vmr-2", .arg = "set_speed", .value = 100 * 1024 * 1024,
                   .calls = "set_speed vmr-2 " HALF),
          /* a pause gives the share to the other, a resume takes it back, lowering it first */
          COMMAND (.job = "vmr-2", .arg = "pause", .states = "vmr-1 cancelled, vmr-2 paused, "
                                                            "vmr-3 copying",
                   .calls = "pause vmr-2; set_speed vmr-3 " WHOLE),
          COMMAND (.job = "vmr-2", .arg = "resume",
                   .states = "vmr-1 cancelled, vmr-2 copying, vmr-3 copying",
                   .calls = "set_speed vmr-3 " HALF "; resume vmr-2*") },
      /* the two copies still running at the shutdown keep their destinations */
      .files = "web01-disk0.img web01-disk1-dst.img web01-disk1.img web01-disk2-dst.img "
               "web01-disk2.img" },
};

void
engine_add_budget_cases (void)
{
    engine_cases_add (budget_cases, G_N_ELEMENTS (budget_cases));
}
