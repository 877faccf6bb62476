/*
 * The closed-loop copy speed's progress floor: a copy never goes slower
 * than the guest's writes add to its backlog, plus min-progress, whatever
 * the harm, so that it gets into sync; max-speed still wins, and off leaves
 * the copy at the guest's knee, where it never ends. On hand-made steps,
 * and on a simulated guest whose writes dirty its disk faster than its knee
 * lets a copy go.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "controller-sim.h"

static const StepCase progress_cases[] = {
    { "a back-off stops at the progress floor",
      { 3.0, 1.0, 100 * MIB, 0, 0, 2.0, 48 * MIB, 0 },
      VMR_CONTROLLER_BACK_OFF,
      60 * MIB,
      "100 MiB/s -> 60 MiB/s" },
    { "at the progress floor the harm is the copy's floor",
      { 2.0, 1.0, 25 * MIB, 0, 0, 1.0, 20 * MIB, 0 },
      VMR_CONTROLLER_HOLD,
      25 * MIB,
      "at the progress floor 25 MiB/s (the guest dirties 20 MiB/s): the copy's floor is 50.0%" },
    { "a floor that rose past the speed lifts it",
      { 1.04, 1.0, 16 * MIB, 0, 0, 0.04, 20 * MIB, 0 },
      VMR_CONTROLLER_HOLD,
      25 * MIB,
      "in the hold band 3.0%..5.0%: 16 MiB/s (latency 1.04x, IOPS 1.00x); within the progress "
      "floor 25 MiB/s (the guest dirties 20 MiB/s)" },
    { "min-progress 100%: twice what the guest dirties",
      { 3.0, 1.0, 100 * MIB, 0, 0, 2.0, 30 * MIB, 1.0 },
      VMR_CONTROLLER_BACK_OFF,
      60 * MIB,
      "100 MiB/s -> 60 MiB/s" },
    { "max-speed wins over the progress floor",
      { 2.0, 1.0, 16 * MIB, 0, 16 * MIB, 1.0, 20 * MIB, 0 },
      VMR_CONTROLLER_HOLD,
      16 * MIB,
      "at max-speed 16 MiB/s, under the progress floor (the guest dirties 20 MiB/s)" },
    { "a floor under min-speed is min-speed",
      { 2.0, 1.0, 12 * MIB, 0, 0, 1.0, 4 * MIB, 0 },
      VMR_CONTROLLER_BACK_OFF,
      MIN_SPEED,
      "12 MiB/s -> 8 MiB/s" },
    { "off: the back-off goes down to min-speed",
      { 3.0, 1.0, 100 * MIB, 0, 0, 2.0, 48 * MIB, -1 },
      VMR_CONTROLLER_BACK_OFF,
      50 * MIB,
      "100 MiB/s -> 50 MiB/s" },
    { "off: at min-speed the harm is the floor, whatever the guest dirties",
      { 2.0, 1.0, MIN_SPEED, 0, 0, 1.0, 48 * MIB, -1 },
      VMR_CONTROLLER_HOLD,
      MIN_SPEED,
      "at min-speed 8 MiB/s: the copy's floor is 50.0%" },
};

/*
 * The seeds' guest at 1400 IOPS, 30% of them 8 KiB writes: each marks a
 * 64 KiB granule, 26 MiB/s of them, on a 1 GiB disk. Its knee is at 12 MiB/s,
 * under what it dirties: a copy held at the knee leaves a backlog that
 * stops shrinking at about half the disk.
 */
#define DIRTY_SAMPLES 600
#define DISK          (1024.0 * MIB)
#define WRITE_RATE    (26.0 * MIB)
/* the samples of the copy's start, which begins over this guest's knee */
#define START_SAMPLES 30

static const Guest busy_writer = { GUEST_FIXED_RATE, 12, 2.0, FALSE, 0.02 };

static guint
run_writer (gdouble min_progress, gdouble *peak_mib)
{
    Sim sim;
    guint synced_at;

    sim_init (&sim, &busy_writer, 1, 0);
    sim.config.min_progress = min_progress;
    sim_set_disk (&sim, DISK, WRITE_RATE);
    *peak_mib = 0;
    for (guint i = 0; i < DIRTY_SAMPLES && sim.synced_at == G_MAXUINT; i++) {
        sim_step (&sim, &busy_writer);
        /* never under the floor, whatever the harm */
        if (min_progress > 0)
            g_assert_cmpfloat ((gdouble) sim.speeds[0] + 1, >=,
                               (1 + min_progress) * (gdouble) (guint64) sim.dirty_rate);
        g_assert_cmpuint (sim.speeds[0], >=, MIN_SPEED);
        /* the first samples are the start's, before the copy felt the knee */
        if (i >= START_SAMPLES)
            *peak_mib = MAX (*peak_mib, total_at (&sim, i));
    }
    synced_at = sim.synced_at;
    g_test_message ("min-progress %.0f%%: %s at sample %u, the backlog %.0f MiB, the guest "
                    "dirtying %.1f MiB/s, the speed at most %.1f MiB/s",
                    min_progress * 100, synced_at != G_MAXUINT ? "in sync" : "not in sync",
                    synced_at != G_MAXUINT ? synced_at : DIRTY_SAMPLES, sim.backlog / MIB,
                    sim.dirty_rate / MIB, *peak_mib);
    sim_clear (&sim);
    return synced_at;
}

static void
test_progress_converges (void)
{
    gdouble peak_off, peak_on;

    /* held at the knee, the copy never gets into sync */
    g_assert_cmpuint (run_writer (0, &peak_off), ==, G_MAXUINT);
    g_assert_cmpfloat (peak_off, <, WRITE_RATE / MIB);
    /* over the floor it does, and goes no faster than the floor needs */
    g_assert_cmpuint (run_writer (0.25, &peak_on), <, DIRTY_SAMPLES / 2);
    g_assert_cmpfloat (peak_on, <=, 1.25 * 1.25 * WRITE_RATE / MIB);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    for (gsize i = 0; i < G_N_ELEMENTS (progress_cases); i++) {
        g_autofree gchar *path
            = g_strdup_printf ("/controller/progress/step/%s", progress_cases[i].name);

        g_test_add_data_func (path, &progress_cases[i], step_case_test);
    }
    g_test_add_func ("/controller/progress/converges", test_progress_converges);
    return g_test_run ();
}
