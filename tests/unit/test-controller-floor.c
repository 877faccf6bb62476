/*
 * The closed-loop copy speed's floors, on hand-made steps: harm that no
 * speed avoids. At min-speed, where the copy cannot back off, and after a
 * back-off that did not lower the harm, which is undone; and the slow
 * start's rule that backs off after two samples, which follows a doubling
 * only.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <math.h>
#include <string.h>

#include "controller-sim.h"

/*
 * Harm that stays at min-speed is the copy's floor: no speed avoids it. It
 * leaves no knee, and the target applies on top of it, so the copy speeds up
 * while the harm does not grow past the floor's; a fresh baseline forgets it.
 */
static void
test_floor_at_min_speed (void)
{
    VmrControllerConfig config;
    VmrControllerState state;
    const StepSpec hurt = { 1.2, 1.0, MIN_SPEED, 0, 0, 0 };
    const StepSpec worse = { 1.3, 1.0, 10 * MIB, 0, 0, 0 };
    VmrControllerInput input;
    g_auto (VmrControllerDecision) out = { 0 };

    vmr_controller_config_init (&config, TARGET, MIN_SPEED, 0);
    /* hand-made samples from the first second on: no start transient in them */
    config.settle_us = 0;
    vmr_controller_state_init (&state, 0);
    for (gint64 t = 1; t <= 2; t++) {
        input = step_input (&hurt, t * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
    }
    g_test_message ("%s: %s", vmr_controller_kind_to_string (out.kind), out.reason);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_HOLD);
    g_assert_cmpuint (state.knee_speed, ==, 0);
    g_assert_cmpfloat_with_epsilon (state.floor_harm, 0.2, 1e-9);
    g_assert_nonnull (strstr (out.reason, "the copy's floor is 20.0%"));
    /* as harmful as the floor: under the target over it, faster */
    for (gint64 t = 3; t <= 4; t++) {
        input = step_input (&hurt, t * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
    }
    g_test_message ("%s: %s", vmr_controller_kind_to_string (out.kind), out.reason);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_RAISE);
    g_assert_cmpuint (out.speed, ==, 10 * MIB);
    g_assert_nonnull (strstr (out.reason, "over the floor of 20.0%"));
    /* 8% over the floor, in three samples of five: back off */
    for (gint64 t = 5; t <= 7; t++) {
        input = step_input (&worse, t * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
    }
    g_test_message ("%s: %s", vmr_controller_kind_to_string (out.kind), out.reason);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_BACK_OFF);
    g_assert_cmpuint (out.speed, ==, MIN_SPEED);
    /* a floor no full window shows any more was a passing spell: it comes down */
    state.floor_harm = 0.4;
    for (gint64 t = 8; t <= 12; t++) {
        input = step_input (&hurt, t * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
    }
    g_assert_cmpfloat_with_epsilon (state.floor_harm, 0.2, 1e-9);
    /* a periodic baseline keeps the floor; one for a change in load forgets it */
    for (guint replaces = 0; replaces <= 1; replaces++) {
        state.phase = VMR_CONTROLLER_PHASE_MEASURING;
        state.measure_replaces = replaces;
        state.resume_speed = MIN_SPEED;
        input = step_input (&hurt, (13 + replaces) * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
        g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_BASELINE_TAKEN);
        g_assert_cmpfloat_with_epsilon (state.floor_harm, replaces ? 0 : 0.2, 1e-9);
    }
}

/* one sample of the guest at @latency times its baseline, at the speed decided last */
static void
feed (const VmrControllerConfig *config, VmrControllerState *state, gdouble latency, gint64 *t,
      VmrControllerDecision *out)
{
    step_feed (config, state, out->speed, latency, t, out);
}

/* a copy at 64 MiB/s, backed off to 44.8 MiB/s by two samples of harm 14% */
static void
back_off_from_64 (const VmrControllerConfig *config, VmrControllerState *state, gint64 *t,
                  VmrControllerDecision *out)
{
    vmr_controller_state_init (state, 0);
    out->speed = 64 * MIB;
    feed (config, state, 1.14, t, out);
    feed (config, state, 1.14, t, out);
    g_assert_cmpint (out->kind, ==, VMR_CONTROLLER_BACK_OFF);
    g_assert_cmpuint (out->speed, ==, (guint64) llround (64 * MIB * 0.7));
}

/*
 * A back-off that did not lower the harm is undone: the harm is the copy's
 * floor, and the copy goes back to its speed, with its slow start as it
 * was. One whose samples came down with the speed goes on backing off.
 */
static void
test_back_off_undone (void)
{
    VmrControllerConfig config;
    VmrControllerState state;
    g_auto (VmrControllerDecision) out = { 0 };
    gint64 t = 0;

    vmr_controller_config_init (&config, TARGET, MIN_SPEED, 0);
    /* hand-made samples from the first second on: no start transient in them */
    config.settle_us = 0;
    back_off_from_64 (&config, &state, &t, &out);
    /* over the target in both samples: held, not a cascade, until the third */
    feed (&config, &state, 1.15, &t, &out);
    feed (&config, &state, 1.13, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_HOLD);
    g_assert_nonnull (strstr (out.reason, "whether the last back-off lowered the harm"));
    feed (&config, &state, 1.16, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_RAISE);
    g_assert_cmpuint (out.speed, ==, 64 * MIB);
    g_assert_nonnull (strstr (out.reason, "no lower than the 14.0% that made the copy back off "
                                          "from 64 MiB/s"));
    /* the floor is what 64 MiB/s cost, not the 15% at the slower speed */
    g_assert_cmpfloat_with_epsilon (state.floor_harm, 0.14, 1e-9);
    g_assert_cmpuint (state.knee_speed, ==, 0);
    /*
     * the slow start goes on over the floor, by probe_gain once a sample
     * has shown 64 MiB/s since the copy went back there: the second
     */
    feed (&config, &state, 1.14, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_HOLD);
    g_assert_nonnull (strstr (out.reason, "until a sample shows it"));
    feed (&config, &state, 1.14, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_RAISE);
    g_assert_cmpuint (out.speed, ==, 80 * MIB);
    g_assert_nonnull (strstr (out.reason, "over the floor of 14.0%"));
    g_assert_nonnull (strstr (out.reason, "starting"));

    /* 8% to 9% at the slower speed: lower by more than noise, the speed matters */
    back_off_from_64 (&config, &state, &t, &out);
    feed (&config, &state, 1.09, &t, &out);
    feed (&config, &state, 1.08, &t, &out);
    feed (&config, &state, 1.09, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_BACK_OFF);
    g_assert_cmpuint (out.speed, <, (guint64) llround (64 * MIB * 0.7));
    g_assert_cmpfloat (state.floor_harm, ==, 0);

    /* a spike among samples that came down is noise: no floor */
    back_off_from_64 (&config, &state, &t, &out);
    feed (&config, &state, 1.60, &t, &out);
    feed (&config, &state, 1.07, &t, &out);
    feed (&config, &state, 1.15, &t, &out);
    g_assert_cmpint (out.kind, !=, VMR_CONTROLLER_RAISE);
    g_assert_cmpfloat (state.floor_harm, ==, 0);

    /* within the target at the slower speed: the back-off did its work */
    back_off_from_64 (&config, &state, &t, &out);
    for (guint i = 0; i < 3; i++)
        feed (&config, &state, 1.04, &t, &out);
    g_assert_cmpint (out.kind, ==, VMR_CONTROLLER_HOLD);
    g_assert_cmpuint (out.speed, ==, (guint64) llround (64 * MIB * 0.7));
    g_assert_cmpfloat (state.floor_harm, ==, 0);
}

/*
 * Two samples over twice the target back off at once after a slow start's
 * doubling only; after a smaller raise they are two of a window of five,
 * which holds until most show it.
 */
static void
test_overshoot_after_doubling (void)
{
    VmrControllerConfig config;

    vmr_controller_config_init (&config, TARGET, MIN_SPEED, 0);
    /* hand-made samples from the first second on: no start transient in them */
    config.settle_us = 0;
    for (guint doubled = 0; doubled <= 1; doubled++) {
        VmrControllerState state;
        g_auto (VmrControllerDecision) out = { 0 };
        gint64 t = 10;

        vmr_controller_state_init (&state, 0);
        state.felt = !doubled;
        state.last_raise = doubled ? VMR_CONTROLLER_RAISE_SLOW_START : VMR_CONTROLLER_RAISE_NONE;
        state.n_harms = 3;
        out.speed = 40 * MIB;
        feed (&config, &state, 1.12, &t, &out);
        feed (&config, &state, 1.12, &t, &out);
        g_assert_cmpint (out.kind, ==, doubled ? VMR_CONTROLLER_BACK_OFF : VMR_CONTROLLER_HOLD);
    }
}

/*
 * A floor over the target says it cannot be met, and the reason says so;
 * the floor and the target on top of it never pass max-harm: 40% on top of
 * a floor of 50% would be 110%, the ceiling holds it at 100%
 */
static gdouble
ceiling_case (gdouble max_harm, VmrControllerKind *kind)
{
    VmrControllerConfig config;
    VmrControllerState state;
    /* 2.05 times the latency: 36.7% over the floor of 50%, 105% in all */
    const StepSpec over = { 2.05, 1.0, 16 * MIB, 0, 0, 0 };
    VmrControllerInput input;
    g_auto (VmrControllerDecision) out = { 0 };

    vmr_controller_config_init (&config, 0.4, MIN_SPEED, 0);
    /* hand-made samples from the first second on: no start transient in them */
    config.settle_us = 0;
    config.max_harm = max_harm;
    vmr_controller_state_init (&state, 0);
    state.floor_harm = 0.5;
    state.felt = TRUE;
    /* two samples of two over the target back off */
    for (gint64 t = 1; t <= 2; t++) {
        input = step_input (&over, t * SECOND);
        vmr_controller_step (&config, &state, &input, &out);
    }
    g_test_message ("max-harm %.0f%%: %s: %s", max_harm * 100,
                    vmr_controller_kind_to_string (out.kind), out.reason);
    g_assert_nonnull (strstr (out.reason, "the target 40.0% cannot be met (the copy's floor is "
                                          "50.0%)"));
    *kind = out.kind;
    return (gdouble) out.speed;
}

static void
test_ceiling (void)
{
    VmrControllerKind kind;

    /* the ceiling: back off, under 105% in all */
    g_assert_cmpfloat (ceiling_case (1.0, &kind), <, 16 * MIB);
    g_assert_cmpint (kind, ==, VMR_CONTROLLER_BACK_OFF);
    /* a ceiling of 300%: 105% is within the floor and the target on top of it */
    g_assert_cmpfloat (ceiling_case (3.0, &kind), ==, 16 * MIB);
    g_assert_cmpint (kind, ==, VMR_CONTROLLER_HOLD);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/controller/floor/at-min-speed", test_floor_at_min_speed);
    g_test_add_func ("/controller/floor/back-off-undone", test_back_off_undone);
    g_test_add_func ("/controller/floor/overshoot-after-doubling", test_overshoot_after_doubling);
    g_test_add_func ("/controller/floor/ceiling", test_ceiling);
    return g_test_run ();
}
