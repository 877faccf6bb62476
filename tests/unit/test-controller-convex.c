/*
 * The closed-loop copy speed on a guest whose latency rises as a queue's
 * with the copy's load (convex from the first byte, no sharp knee), behind
 * a mirror that copies in bursts and sleeps between them, whose guest
 * shows each speed one sample late. Properties, not constants, each over
 * SEEDS runs with their own noise: a back-off lowers the speed; the harm
 * stays within the target plus a margin; the copy never goes unlimited
 * while the guest is busy; the speed settles near the knee (the speed at
 * which the harm reaches the target).
 */
#define G_LOG_DOMAIN "vmr-test"

#include "controller-sim.h"
#include "vmr-stats.h"

#define SEEDS   20
#define SAMPLES 240
#define TAIL    120
/* the harm over the tail may pass the target by this much: the noise of a sample */
#define MARGIN 0.05
/*
 * how close to the knee the speed settles. The hold band (harm from 60% of
 * the target to the target) is 63% to 100% of the knee's speed on this
 * curve, and the speed may rest anywhere in it: within 15% of the knee in
 * 15 of 20 runs with the lag, 9 without, so 30% is what holds
 */
#define KNEE_WITHIN 0.3

/* a budget of 300 MiB/s: harm 5% at 100 MiB/s, 10% at 150, 20 times the latency unlimited */
static const Guest queue_guest = {
    GUEST_FIXED_RATE, 300, 0.1, FALSE, 0.02, .queueing = TRUE,
};

/* the speed at which the queue's harm reaches @target, MiB/s */
static gdouble
convex_knee (const Guest *guest, gdouble target)
{
    return guest->knee_mib * target / (guest->steepness + target);
}

typedef struct {
    gdouble tail_speed; /* the median total over the tail, MiB/s */
    gdouble tail_harm;  /* the mean harm over the tail */
    gboolean unlimited; /* some sample left the copy unlimited */
    guint back_offs;
    guint back_offs_lower; /* those that lowered the speed */
} ConvexRun;

static void
run_convex (const Guest *guest, guint32 seed, ConvexRun *run)
{
    gdouble totals[TAIL];
    Sim sim;

    sim_init_seeded (&sim, guest, 1, 0, seed);
    sim.bursts = TRUE;
    *run = (ConvexRun){ 0 };
    for (guint i = 0; i < SAMPLES; i++) {
        guint64 before = sim.speeds[0];

        sim_step (&sim, guest);
        if (sim.speeds[0] == 0)
            run->unlimited = TRUE;
        if (g_array_index (sim.kinds, VmrControllerKind, i) == VMR_CONTROLLER_BACK_OFF) {
            run->back_offs++;
            run->back_offs_lower += before == 0 || sim.speeds[0] < before;
        }
        if (i >= SAMPLES - TAIL) {
            totals[i - (SAMPLES - TAIL)] = total_at (&sim, i);
            run->tail_harm += g_array_index (sim.harms, gdouble, i) / TAIL;
        }
    }
    run->tail_speed = vmr_median (totals, TAIL);
    g_test_message ("seed %2u: the last %u samples at %.1f MiB/s (median; knee %.1f), mean harm "
                    "%.3f, %u back-offs%s",
                    seed, TAIL, run->tail_speed, convex_knee (guest, TARGET), run->tail_harm,
                    run->back_offs, run->unlimited ? ", unlimited" : "");
    sim_clear (&sim);
}

static void
test_convex (void)
{
    gdouble knee = convex_knee (&queue_guest, TARGET);
    guint harm_ok = 0, knee_ok = 0, knee_close = 0;

    for (guint32 seed = 1; seed <= SEEDS; seed++) {
        ConvexRun run;

        run_convex (&queue_guest, seed, &run);
        /* every back-off lowers the speed; none leaves the copy unlimited */
        g_assert_cmpuint (run.back_offs_lower, ==, run.back_offs);
        g_assert_false (run.unlimited);
        harm_ok += run.tail_harm <= TARGET + MARGIN;
        knee_ok += ABS (run.tail_speed - knee) <= KNEE_WITHIN * knee;
        knee_close += ABS (run.tail_speed - knee) <= 0.15 * knee;
    }
    g_test_message ("harm within the target plus %.0f%% in %u of %u runs, the speed within "
                    "%.0f%% of the knee in %u, within 15%% in %u",
                    MARGIN * 100, harm_ok, SEEDS, KNEE_WITHIN * 100, knee_ok, knee_close);
    g_assert_cmpuint (harm_ok * 10, >=, SEEDS * 9);
    g_assert_cmpuint (knee_ok * 10, >=, SEEDS * 9);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/controller/convex/queue", test_convex);
    return g_test_run ();
}
