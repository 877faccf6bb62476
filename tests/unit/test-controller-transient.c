/*
 * The closed-loop copy speed against the start transient of QEMU's mirror:
 * its first buffer goes out before its rate limit bites, and the guest's
 * first samples of a copy show harm at any speed. Properties, each over SEEDS runs with their own
 * noise and the copy's start at its own point of the first sample: a start transient does not lower
 * the speed; a steady harm over the target still lowers it within OVER_WITHIN samples; the copy
 * never goes unlimited while the guest is busy. And the simulator's transient is no straw man:
 * without the settling samples it lowers the speed on a share of the seeds.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "controller-sim.h"

#define SEEDS 50
/* long enough for the knee's probes and a periodic measure (every 120 s) */
#define SAMPLES 150
/* measured on a shared array: 9 to 2500 times the latency for 0.4 to 0.6 s (docs/performance.md) */
#define TRANSIENT_HARM 20.0
#define TRANSIENT_US   (G_USEC_PER_SEC * 6 / 10)
/*
 * a steady harm over the target backs off within this many samples of the
 * start: up to two settling samples, then the two over the target that a
 * back-off needs
 */
#define OVER_WITHIN 4

/* room for the copy: a sharp knee at 200 MiB/s, over the start speed */
static const Guest roomy_guest = { GUEST_FIXED_RATE, 200, 2.0, FALSE, 0.02 };
/* a knee at 30 MiB/s, under the start speed: 2.3 times the target's harm there */
static const Guest tight_guest = { GUEST_FIXED_RATE, 30, 2.0, FALSE, 0.02 };

typedef struct {
    guint back_offs_under_knee; /* back-offs from a speed at which the guest feels nothing */
    guint first_under_start;    /* the first sample (from 1) whose speed is under the start's */
    gboolean unlimited;
} TransientRun;

static void
run_transient (const Guest *guest, guint32 seed, gint64 settle_us, TransientRun *run)
{
    Sim sim;
    guint64 start;

    sim_init_seeded (&sim, guest, 1, 0, seed);
    sim.config.settle_us = settle_us;
    sim_set_transient (&sim, TRANSIENT_HARM, TRANSIENT_US);
    start = sim.speeds[0];
    *run = (TransientRun){ .first_under_start = G_MAXUINT };
    for (guint i = 0; i < SAMPLES; i++) {
        guint64 before = sim.speeds[0];

        sim_step (&sim, guest);
        run->unlimited |= sim.speeds[0] == 0;
        if (g_array_index (sim.kinds, VmrControllerKind, i) == VMR_CONTROLLER_BACK_OFF
            && (gdouble) before <= guest->knee_mib * MIB)
            run->back_offs_under_knee++;
        if (sim.speeds[0] < start && run->first_under_start == G_MAXUINT)
            run->first_under_start = i + 1;
    }
    g_test_message ("seed %2u, settle %.1f s: %u back-offs under the knee, first under the start "
                    "speed at sample %d%s",
                    seed, (gdouble) settle_us / G_USEC_PER_SEC, run->back_offs_under_knee,
                    run->first_under_start == G_MAXUINT ? -1 : (gint) run->first_under_start,
                    run->unlimited ? ", unlimited" : "");
    sim_clear (&sim);
}

/* a start transient does not lower the speed of a copy under the knee */
static void
test_transient_no_back_off (void)
{
    VmrControllerConfig defaults;
    guint ok = 0, fooled = 0;

    vmr_controller_config_init (&defaults, TARGET, MIN_SPEED, 0);
    for (guint32 seed = 1; seed <= SEEDS; seed++) {
        TransientRun run;

        run_transient (&roomy_guest, seed, defaults.settle_us, &run);
        g_assert_false (run.unlimited);
        ok += run.back_offs_under_knee == 0;
        run_transient (&roomy_guest, seed, 0, &run);
        fooled += run.back_offs_under_knee > 0;
    }
    g_test_message ("no back-off under the knee in %u of %u runs; without settling samples the "
                    "transient made one in %u",
                    ok, SEEDS, fooled);
    g_assert_cmpuint (ok * 10, >=, SEEDS * 9);
    /* the transient of the simulator is one that fools a controller that does not settle */
    g_assert_cmpuint (fooled * 3, >=, SEEDS);
}

/* a steady harm over the target, from the start on, still lowers the speed within OVER_WITHIN */
static void
test_transient_steady_harm (void)
{
    VmrControllerConfig defaults;
    guint ok = 0;

    vmr_controller_config_init (&defaults, TARGET, MIN_SPEED, 0);
    for (guint32 seed = 1; seed <= SEEDS; seed++) {
        TransientRun run;

        run_transient (&tight_guest, seed, defaults.settle_us, &run);
        g_assert_false (run.unlimited);
        ok += run.first_under_start <= OVER_WITHIN;
    }
    g_test_message ("under the start speed within %u samples in %u of %u runs", OVER_WITHIN, ok,
                    SEEDS);
    g_assert_cmpuint (ok * 10, >=, SEEDS * 9);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/controller/transient/no-back-off", test_transient_no_back_off);
    g_test_add_func ("/controller/transient/steady-harm", test_transient_steady_harm);
    return g_test_run ();
}
