#define G_LOG_DOMAIN "vmr-policy"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "controller-private.h"

#include "units.h"
#include "vmr-stats.h"

/* a knee found again and again stays fresh 2, 4, 8, at most 16 times knee_memory_us */
#define KNEE_MEMORY_DOUBLINGS 4
/*
 * the newest samples that must all be over the target for a back-off, and
 * the window's median over it by more than the noise band allows: one of
 * QEMU's latency spikes (a second at up to 1.7 times the mean) must not
 * slow the copy. Three were tried: a guest that makes up its missed I/O (as
 * fio under a rate limit does) then stayed over a sharp knee long enough to
 * owe seconds of I/O, and its harm over two minutes doubled.
 */
#define OVER_SAMPLES 2
/*
 * the samples at a speed that show it: the guest's figures lag the speed by
 * about one sample (QEMU's mirror copies in bursts), so the first sample
 * after a change is mostly the speed before
 */
#define SEEN_SAMPLES 2
/* the samples at a back-off's speed that tell whether it lowered the harm */
#define JUDGE_SAMPLES 3
/*
 * A back-off lowered the harm if a sample at its speed is lower by this
 * share of what a harm that follows the speed would have come down: half,
 * so that a harm that follows the speed less than linearly still counts
 */
#define JUDGE_SHARE 0.5
/*
 * one periodic sample, noisy as it is, moves the baseline this far toward
 * it: half-way, as the load drifts slowly and one sample may be a spike
 */
#define REFRESH_WEIGHT 0.5
/*
 * fewer IOPS than the baseline by this many times the target, at no higher
 * latency, ask for a measure: a copy that costs a guest that much shows it
 * in the latency too, unless it holds the requests up before QEMU times
 * them, which the paused sample tells
 */
#define FEWER_IOPS_TARGETS 2
/* and not more often than every this many measure gaps, as it may be the copy after all */
#define FEWER_IOPS_GAPS 3
/*
 * under a known knee, an excess that spikes make moves the knee down by
 * this share of knee_margin at most: spike after spike would otherwise walk
 * it down to min-speed
 */
#define SPIKE_KNEE_STEP 0.5

/* the window of harms: the harm of the last samples, their median, and the harm counted over
 * the copy's floor */

/* the harm counted: over the copy's floor, if it has one */
static gdouble
over_floor (const VmrControllerState *state, gdouble harm)
{
    return MAX (0.0, (1 + harm) / (1 + state->floor_harm) - 1);
}

/* the median of the window's harms (raw), 0 for none */
static gdouble
window_median (const VmrControllerState *state)
{
    gdouble harms[VMR_CONTROLLER_WINDOW_MAX];

    memcpy (harms, state->harms, state->n_harms * sizeof (gdouble));
    return vmr_median (harms, state->n_harms);
}

/*
 * the median of the window's harms (raw) at the copy's speed now: what this
 * speed costs the guest; the window's when it holds none of them
 */
static gdouble
window_median_at_speed (const VmrControllerState *state)
{
    gdouble at_speed[VMR_CONTROLLER_WINDOW_MAX];
    guint n = MIN (state->n_at_speed, state->n_harms);

    if (n == 0)
        return window_median (state);
    memcpy (at_speed, state->harms + state->n_harms - n, n * sizeof (gdouble));
    return vmr_median (at_speed, n);
}

/* the lowest harm (raw) of the window's samples at the copy's speed now; 0 for fewer than two */
static gdouble
window_low_at_speed (const VmrControllerState *state)
{
    guint n = MIN (state->n_at_speed, state->n_harms);
    gdouble low = G_MAXDOUBLE;

    if (n < 2)
        return 0;
    for (guint i = state->n_harms - n; i < state->n_harms; i++)
        low = MIN (low, state->harms[i]);
    return low;
}

/* how many of the newest @last harms of the window, over the floor, are over (or under) @level */
static guint
window_count_past (const VmrControllerState *state, guint last, gdouble level, gboolean over)
{
    guint count = 0;

    for (guint i = state->n_harms > last ? state->n_harms - last : 0; i < state->n_harms; i++) {
        gdouble harm = over_floor (state, state->harms[i]);

        if (over ? harm > level : harm < level)
            count++;
    }
    return count;
}

static void
window_push (const VmrControllerConfig *config, VmrControllerState *state, gdouble harm)
{
    guint size = CLAMP (config->window, 1, VMR_CONTROLLER_WINDOW_MAX);

    if (state->n_harms >= size) {
        memmove (state->harms, state->harms + 1, (size - 1) * sizeof (gdouble));
        state->n_harms = size - 1;
    }
    state->harms[state->n_harms++] = harm;
    state->n_at_speed++;
}

/*
 * "harm 7.2%", "harm 7.2% (median 4.6%)"; with a floor the harm counted,
 * "harm 2.0% over the floor of 20.0% (median 1.0%)"; free with g_free()
 */
static gchar *
format_harm (const VmrControllerState *state, gdouble harm, gdouble median)
{
    g_autofree gchar *floor_text
        = state->floor_harm > 0
              ? g_strdup_printf (" over the floor of %.1f%%", state->floor_harm * 100)
              : g_strdup ("");

    harm = over_floor (state, harm);
    median = over_floor (state, median);
    if (ABS (harm - median) < 0.0005)
        return g_strdup_printf ("harm %.1f%%%s", harm * 100, floor_text);
    return g_strdup_printf ("harm %.1f%%%s (median %.1f%%)", harm * 100, floor_text, median * 100);
}

static const gchar *const kind_names[] = {
    [VMR_CONTROLLER_RAISE] = "raise",
    [VMR_CONTROLLER_HOLD] = "hold",
    [VMR_CONTROLLER_BACK_OFF] = "back-off",
    [VMR_CONTROLLER_IDLE_FULL_SPEED] = "idle-full-speed",
    [VMR_CONTROLLER_MEASURE_BASELINE] = "measure-baseline",
    [VMR_CONTROLLER_BASELINE_TAKEN] = "baseline-taken",
};

const gchar *
vmr_controller_kind_to_string (VmrControllerKind kind)
{
    return kind < G_N_ELEMENTS (kind_names) ? kind_names[kind] : "unknown";
}

void
vmr_controller_config_init (VmrControllerConfig *config, gdouble target_harm, guint64 min_speed,
                            guint64 max_speed)
{
    /* the reasons for these values are in the header */
    *config = (VmrControllerConfig){
        .target_harm = target_harm,
        .min_speed = min_speed,
        .max_speed = max_speed,
        .min_progress = 0.25,
        .start_speed = 64 * 1024 * 1024,
        .hold_below = 0.6,
        .start_gain = 1.0,
        .probe_gain = 0.25,
        .approach_gain = 0.5,
        .fine_gain = 0.1,
        .knee_margin = 0.1,
        .knee_forget = 1.3,
        .knee_memory_us = 10 * G_USEC_PER_SEC,
        .backoff = 0.7,
        .severe_backoff = 0.5,
        .window = 5,
        .severe_factor = 2.0,
        .max_floor = 0.5,
        .idle_iops = 5,
        .unexplained_step = 0.5,
        .baseline_refresh_us = 120 * G_USEC_PER_SEC,
        .measure_gap_us = 10 * G_USEC_PER_SEC,
        .latency_floor_us = 100,
        .settle_us = G_USEC_PER_SEC,
        .max_noise = 0.1,
        .max_harm = 1.0,
    };
}

guint64
vmr_controller_start_speed (const VmrControllerConfig *config)
{
    guint64 speed = MAX (config->start_speed, config->min_speed);

    return config->max_speed != 0 ? MIN (speed, config->max_speed) : speed;
}

void
vmr_controller_state_init (VmrControllerState *state, gint64 baseline_time_us)
{
    /* the baseline was just measured: a change in load waits measure_gap_us from it */
    *state = (VmrControllerState){
        .phase = VMR_CONTROLLER_PHASE_COPYING,
        .baseline_time_us = baseline_time_us,
        .measure_time_us = baseline_time_us,
        .settle_from_us = baseline_time_us,
        .last_sample_us = baseline_time_us,
    };
}

void
vmr_controller_decision_clear (VmrControllerDecision *decision)
{
    g_clear_pointer (&decision->reason, g_free);
}

/* takes @reason */
static void
set_decision (VmrControllerDecision *out, VmrControllerKind kind, guint64 speed, gchar *reason)
{
    out->kind = kind;
    out->speed = speed;
    g_free (out->reason);
    out->reason = reason;
}

/* the latency's excess counts against the baseline's latency or the floor, the larger */
static gdouble
latency_ratio (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    gdouble base = input->baseline.latency_us;

    if (base <= 0 || input->load.latency_us <= 0)
        return 1;
    return 1 + (input->load.latency_us - base) / MAX (base, config->latency_floor_us);
}

static gdouble
iops_ratio (const VmrControllerInput *input)
{
    if (input->baseline.iops <= 0)
        return 1;
    return input->load.iops / input->baseline.iops;
}

gdouble
vmr_controller_harm (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    return MAX (0.0, MAX (latency_ratio (config, input) - 1, 1 - iops_ratio (input)));
}

/* "latency 1.07x, IOPS 0.93x"; free with g_free() */
static gchar *
format_ratios (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    return g_strdup_printf ("latency %.2fx, IOPS %.2fx", latency_ratio (config, input),
                            iops_ratio (input));
}

/* the progress floor: the slowest copy whose backlog shrinks, bytes/s; 0 = none known */
static gdouble
progress_floor (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    if (config->min_progress <= 0)
        return 0;
    return (1 + config->min_progress) * (gdouble) input->dirty_rate;
}

/* the slowest the copy may go: min-speed, or the progress floor over it; max-speed wins */
static gdouble
lowest_speed (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    gdouble lowest = MAX ((gdouble) config->min_speed, progress_floor (config, input));

    if (config->max_speed != 0)
        lowest = MIN (lowest, (gdouble) config->max_speed);
    return lowest;
}

/*
 * "min-speed 8 MiB/s", "the progress floor 33 MiB/s (the guest dirties 26
 * MiB/s)", or max-speed under the progress floor; free with g_free()
 */
static gchar *
format_lowest (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    g_autofree gchar *lowest
        = vmr_units_format_speed ((guint64) llround (lowest_speed (config, input)));
    g_autofree gchar *dirty = NULL;

    if (progress_floor (config, input) <= (gdouble) config->min_speed)
        return g_strdup_printf ("min-speed %s", lowest);
    dirty = vmr_units_format_speed (input->dirty_rate);
    if (config->max_speed != 0 && progress_floor (config, input) > (gdouble) config->max_speed)
        return g_strdup_printf ("max-speed %s, under the progress floor (the guest dirties %s)",
                                lowest, dirty);
    return g_strdup_printf ("the progress floor %s (the guest dirties %s)", lowest, dirty);
}

/* @speed (bytes/s, never unlimited) within [the lowest speed, max-speed]; max-speed wins */
static guint64
clamp_speed (const VmrControllerConfig *config, const VmrControllerInput *input, gdouble speed)
{
    gdouble lowest = lowest_speed (config, input);

    if (speed < lowest)
        speed = lowest;
    if (config->max_speed != 0 && speed > (gdouble) config->max_speed)
        speed = (gdouble) config->max_speed;
    if (speed >= (gdouble) G_MAXUINT64)
        return G_MAXUINT64;
    return MAX ((guint64) llround (speed), 1);
}

/*
 * what the copy moves now, bytes/s: its cap; unlimited, what it moved. A
 * capped copy's rate is not read: its sleeps between bursts would read as
 * storage that holds it back.
 */
static guint64
current_rate (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    if (input->speed != 0)
        return input->speed;
    if (input->copy_rate != 0)
        return input->copy_rate;
    return config->max_speed != 0 ? config->max_speed : config->min_speed;
}

/* a change in the guest's load that a copy cannot cause, or NULL; free with g_free() */
static gchar *
describe_load_change (const VmrControllerConfig *config, const VmrControllerInput *input,
                      gboolean idle_now, gboolean idle_before)
{
    if (idle_before && !idle_now)
        return g_strdup_printf ("the guest turned busy (%.0f IOPS, baseline %.0f)",
                                input->load.iops, input->baseline.iops);
    if (!idle_before && idle_now)
        return g_strdup_printf ("the guest turned idle (%.1f IOPS, baseline %.0f)",
                                input->load.iops, input->baseline.iops);
    if (iops_ratio (input) > 1 + config->unexplained_step)
        return g_strdup_printf ("the guest does more I/O than in its baseline (IOPS %.2fx)",
                                iops_ratio (input));
    if (latency_ratio (config, input) < 1 / (1 + config->unexplained_step))
        return g_strdup_printf ("the guest's I/O is faster than in its baseline (latency %.2fx)",
                                latency_ratio (config, input));
    return NULL;
}

/* the next sample is the guest alone: a new baseline (@replace) or a correction of the old */
static void
begin_measure (VmrControllerState *state, gboolean replace, guint64 resume_speed)
{
    state->phase = VMR_CONTROLLER_PHASE_MEASURING;
    state->back_off.from = 0;
    state->measure_replaces = replace;
    state->resume_speed = resume_speed;
}

void
vmr_controller_request_measure (VmrControllerState *state, guint64 resume_speed)
{
    g_return_if_fail (state != NULL);

    if (state->phase != VMR_CONTROLLER_PHASE_MEASURING)
        begin_measure (state, TRUE, resume_speed);
}

/* the copy pauses for one sample; @why is taken */
static void
ask_for_baseline (VmrControllerState *state, const VmrControllerInput *input, gboolean replace,
                  gchar *why, VmrControllerDecision *out)
{
    g_autofree gchar *owned_why = why;

    begin_measure (state, replace, input->speed);
    set_decision (out, VMR_CONTROLLER_MEASURE_BASELINE, input->speed,
                  g_strdup_printf ("%s: pausing the copy for one sample to measure the guest alone",
                                   owned_why));
}

/* a new load: no knee, no floor, a slow start again */
static void
restart_slow (VmrControllerState *state)
{
    state->knee_speed = 0;
    state->knee_found_again = 0;
    state->felt = FALSE;
    state->floor_harm = 0;
    state->n_harms = 0;
    state->back_off.from = 0;
    state->last_raise = VMR_CONTROLLER_RAISE_NONE;
}

/* the sample of a paused copy: the new baseline */
static void
take_baseline (const VmrControllerConfig *config, VmrControllerState *state,
               const VmrControllerInput *input, VmrControllerDecision *out)
{
    gboolean idle = input->load.iops < config->idle_iops;
    gboolean was_idle = input->baseline.iops < config->idle_iops;
    guint64 speed;
    g_autofree gchar *speed_text = NULL;

    state->phase = VMR_CONTROLLER_PHASE_COPYING;
    state->baseline_time_us = input->load.time_us;
    state->n_harms = 0;
    /* a new load has its own floor; a periodic baseline only corrects the drift */
    if (state->measure_replaces)
        state->floor_harm = 0;
    state->last_raise = VMR_CONTROLLER_RAISE_NONE;
    out->baseline = input->load;
    /*
     * the load drifts: one sample, noisy as it is, moves a periodic baseline
     * half-way. Not a sample that shows more harm than the guest's noise: a
     * spike of QEMU's, or the copy's last I/O still in the guest's figures,
     * neither of which is the guest alone.
     */
    if (!state->measure_replaces && idle == was_idle && !idle
        && latency_ratio (config, input) - 1 > config->target_harm)
        out->baseline = input->baseline;
    else if (!state->measure_replaces && idle == was_idle && !idle) {
        out->baseline.iops
            = input->baseline.iops + (input->load.iops - input->baseline.iops) * REFRESH_WEIGHT;
        if (input->baseline.latency_us > 0 && input->load.latency_us > 0)
            out->baseline.latency_us
                = input->baseline.latency_us
                  + (input->load.latency_us - input->baseline.latency_us) * REFRESH_WEIGHT;
    }
    if (idle)
        speed = config->max_speed;
    else if (was_idle) {
        /*
         * busy after idle: the speed was an idle guest's, which says nothing
         * of this load. From the bottom, as a busy guest's copy starts.
         */
        restart_slow (state);
        speed = clamp_speed (config, input, (gdouble) config->min_speed);
    } else if (state->resume_speed == 0)
        speed = config->max_speed != 0 ? config->max_speed : 0;
    else
        speed = clamp_speed (config, input, (gdouble) state->resume_speed);
    speed_text = vmr_units_format_speed (speed);
    set_decision (out, VMR_CONTROLLER_BASELINE_TAKEN, speed,
                  g_strdup_printf ("baseline taken: %.0f IOPS, %.0f us%s; resuming at %s",
                                   out->baseline.iops, out->baseline.latency_us,
                                   idle       ? " (idle: full speed)"
                                   : was_idle ? " (busy after idle: from the bottom)"
                                              : "",
                                   speed_text));
}

/*
 * how long the knee stays fresh: knee_memory_us, doubled each time a probe
 * found it again where it was, up to KNEE_MEMORY_MAX times: a knee that
 * holds is probed less and less often, one that was a passing spell of
 * harm is soon left behind
 */
static gint64
knee_memory (const VmrControllerConfig *config, const VmrControllerState *state)
{
    return config->knee_memory_us << MIN (state->knee_found_again, KNEE_MEMORY_DOUBLINGS);
}

/* the harm is over the target: slower, and the knee is where the copy was */
static void
back_off (const VmrControllerConfig *config, VmrControllerState *state,
          const VmrControllerInput *input, gdouble harm, gdouble median, VmrControllerDecision *out)
{
    gdouble target = config->target_harm;
    gdouble excess = over_floor (state, median);
    gdouble low_at_speed = window_low_at_speed (state);
    gdouble at_speed = window_median_at_speed (state);
    guint64 from = current_rate (config, input);
    gboolean severe = excess > config->severe_factor * target;
    /*
     * a probe past a stale knee that found it again where it was: back under
     * it, no further. A deep excess at a speed that was held is a change in
     * load, which the factor answers.
     */
    gboolean knee_again = state->last_raise == VMR_CONTROLLER_RAISE_PAST_KNEE
                          && state->knee_speed != 0
                          && from <= state->knee_speed * config->knee_forget;
    /*
     * a shallow excess near a known knee: the load hovers there; or one that
     * a sample at this speed does not show: spikes. A small step answers
     * either.
     */
    gboolean spikes = state->n_at_speed >= 2 && over_floor (state, low_at_speed) <= target;
    gboolean small_step = knee_again || (state->knee_speed != 0 && (!severe || spikes));
    gdouble factor
        = small_step ? 1 - config->knee_margin
                     : CLAMP ((1 + target) / (1 + excess), config->severe_backoff, config->backoff);
    /*
     * under the knee a probe found again, not under the probe's speed: the
     * guest may show a speed a sample late, when the probe is a step past
     */
    guint64 to
        = clamp_speed (config, input,
                       knee_again ? MIN ((gdouble) from, (gdouble) state->knee_speed) * factor
                                  : (gdouble) from * factor);
    g_autofree gchar *head = format_harm (state, harm, median);
    g_autofree gchar *ratios = format_ratios (config, input);
    g_autofree gchar *from_text = vmr_units_format_speed (from);
    g_autofree gchar *to_text = vmr_units_format_speed (to);

    state->n_harms = 0;
    state->last_raise = VMR_CONTROLLER_RAISE_NONE;
    /*
     * judged: a back-off by 30% or more from over twice the target. A small
     * step from a harm that hovers near the target moves it by less than the
     * noise, which would tell nothing.
     */
    state->back_off = (VmrControllerBackOff){
        .from
        = !small_step && over_floor (state, at_speed) > config->severe_factor * target ? from : 0,
        .to = to,
        .median = at_speed,
        .knee_speed = state->knee_speed,
        .knee_time_us = state->knee_time_us,
        .knee_found_again = state->knee_found_again,
        .felt = state->felt,
    };
    state->felt = TRUE;
    if (to >= from && input->speed != 0) {
        /*
         * the copy at its slowest: what it costs the guest here, it costs at
         * any speed. That is its floor, and the target applies on top of it.
         */
        g_autofree gchar *min_text = format_lowest (config, input);

        state->knee_speed = 0;
        state->back_off.from = 0;
        state->floor_harm = MIN (MAX (state->floor_harm, median), config->max_floor);
        set_decision (out, VMR_CONTROLLER_HOLD, input->speed,
                      g_strdup_printf ("%s > %.1f%% at %s: the copy's floor is %.1f%%, "
                                       "the target applies on top of it (%s)",
                                       head, target * 100, min_text, state->floor_harm * 100,
                                       ratios));
        return;
    }
    /*
     * under a known knee, only an excess that every sample at this speed
     * shows moves the knee down: one that spikes make is noise, and the knee
     * stays where it was found, or spike after spike would walk it down to
     * min-speed
     */
    if (knee_again)
        state->knee_found_again++;
    else
        state->knee_found_again = 0;
    if (knee_again)
        state->knee_speed = MIN (from, state->knee_speed);
    else if (state->knee_speed == 0 || from >= state->knee_speed
             || over_floor (state, low_at_speed) > target)
        state->knee_speed = from;
    else
        state->knee_speed = MAX (from, (guint64) ((gdouble) state->knee_speed
                                                  * (1 - config->knee_margin * SPIKE_KNEE_STEP)));
    state->knee_time_us = input->load.time_us;
    set_decision (out, VMR_CONTROLLER_BACK_OFF, to,
                  g_strdup_printf ("%s > %.1f%%: %s -> %s%s (%s)", head, target * 100, from_text,
                                   to_text, knee_again ? ", under the knee found again" : "",
                                   ratios));
}

/* whether the sample began within settle_us of the copy's start: the mirror's first buffer may be
 * in it */
static gboolean
settling (const VmrControllerConfig *config, const VmrControllerState *state)
{
    return config->settle_us > 0
           && state->last_sample_us < state->settle_from_us + config->settle_us;
}

/* the last percent of an approach is not worth a sample */
#define APPROACH_CLOSE_ENOUGH 0.01

/*
 * The slow start's step, a fraction of @speed. From start_speed on, where
 * a busy guest's copy starts, probe_gain, and only from a speed a sample
 * has shown (start_waits()): a knee may be anywhere over it, and with the
 * guest a sample late a raise a sample passes it by two raises before the
 * harm shows (seen on a shared array: 64 MiB/s at harm 0.0% for three
 * samples, doubled to 128, past its knee near 85: harm 40% and 246% before
 * the back-off). So with a settling sample: part of it is before the
 * copy's start. Under start_speed (a copy sent to min-speed when its guest
 * turned busy) a doubling up to start_speed, where a copy may start
 * anyway, less as the harm nears the hold band.
 */
static gdouble
start_step (const VmrControllerConfig *config, const VmrControllerState *state, gdouble speed)
{
    gdouble band = config->hold_below * config->target_harm;
    gdouble probe = MIN (config->probe_gain, config->start_gain);
    gdouble start = (gdouble) vmr_controller_start_speed (config);
    gdouble seen;

    if (speed >= start || settling (config, state) || band <= 0)
        return probe;
    seen = over_floor (state, window_median_at_speed (state));
    return MIN (MAX (probe, config->start_gain * (1 - seen / band)),
                MAX (probe, start / speed - 1));
}

/* whether the slow start holds @speed (from start_speed on) until a sample shows it */
static gboolean
start_waits (const VmrControllerConfig *config, const VmrControllerState *state, gdouble speed)
{
    return state->knee_speed == 0 && !state->felt
           && speed >= (gdouble) vmr_controller_start_speed (config)
           && MIN (state->n_at_speed, state->n_harms) < SEEN_SAMPLES;
}

/*
 * The next speed up, in @next, and how: a slow start until the guest felt
 * the copy, a probe with no knee known, an approach to a known knee, a probe
 * past a stale one; NONE for a hold under a fresh knee.
 */
static VmrControllerRaiseKind
next_raise (const VmrControllerConfig *config, const VmrControllerState *state,
            const VmrControllerInput *input, gdouble *next)
{
    guint n_copies = MAX (input->n_copies, 1);
    gdouble speed = (gdouble) input->speed;
    gdouble ceiling = (gdouble) state->knee_speed * (1 - config->knee_margin);

    if (state->knee_speed == 0 && !state->felt) {
        /* a slow start, as TCP's: no harm yet at any speed */
        *next = speed * (1 + start_step (config, state, speed) / n_copies);
        return VMR_CONTROLLER_RAISE_SLOW_START;
    }
    if (state->knee_speed == 0) {
        *next = speed * (1 + config->probe_gain / n_copies);
        return VMR_CONTROLLER_RAISE_PROBE;
    }
    if (speed < (1 - APPROACH_CLOSE_ENOUGH) * ceiling) {
        *next = speed + (ceiling - speed) * config->approach_gain / n_copies;
        if (ceiling - *next < APPROACH_CLOSE_ENOUGH * ceiling)
            *next = ceiling;
        return VMR_CONTROLLER_RAISE_APPROACH;
    }
    if (input->load.time_us - state->knee_time_us < knee_memory (config, state))
        return VMR_CONTROLLER_RAISE_NONE;
    *next = speed * (1 + config->fine_gain / n_copies);
    return VMR_CONTROLLER_RAISE_PAST_KNEE;
}

/* "starting", "toward the knee at 150 MiB/s"; free with g_free() */
static gchar *
describe_raise (const VmrControllerState *state, VmrControllerRaiseKind kind)
{
    g_autofree gchar *knee_text = vmr_units_format_speed (state->knee_speed);

    switch (kind) {
        case VMR_CONTROLLER_RAISE_SLOW_START:
            return g_strdup ("starting");
        case VMR_CONTROLLER_RAISE_PROBE:
            return g_strdup ("probing");
        case VMR_CONTROLLER_RAISE_APPROACH:
            return g_strdup_printf ("toward the knee at %s", knee_text);
        case VMR_CONTROLLER_RAISE_PAST_KNEE:
            return g_strdup_printf ("probing past the knee at %s", knee_text);
        case VMR_CONTROLLER_RAISE_NONE:
        default:
            return g_strdup ("holding");
    }
}

/* harm under the hold band: faster, toward a fresh knee or probing */
static void
raise_speed (const VmrControllerConfig *config, VmrControllerState *state,
             const VmrControllerInput *input, gdouble harm, gdouble median,
             VmrControllerDecision *out)
{
    gint64 now = input->load.time_us;
    guint64 speed = input->speed;
    g_autofree gchar *ratios = format_ratios (config, input);
    g_autofree gchar *from_text = vmr_units_format_speed (speed);
    g_autofree gchar *to_text = NULL;
    g_autofree gchar *how = NULL;
    g_autofree gchar *harm_text = format_harm (state, harm, median);
    VmrControllerRaiseKind kind;
    g_autofree gchar *head = g_strdup_printf ("%s < %.1f%%", harm_text,
                                              config->hold_below * config->target_harm * 100);
    gdouble next;
    guint64 to;

    if (config->max_speed != 0 && (speed == 0 || speed > config->max_speed)) {
        g_autofree gchar *max_text = vmr_units_format_speed (config->max_speed);

        set_decision (
            out, VMR_CONTROLLER_HOLD, config->max_speed,
            g_strdup_printf ("%s: %s -> %s, max-speed (%s)", head, from_text, max_text, ratios));
        return;
    }
    if (speed == 0 || speed == config->max_speed) {
        set_decision (out, VMR_CONTROLLER_HOLD, speed,
                      g_strdup_printf ("%s: at full speed %s (%s)", head, from_text, ratios));
        return;
    }
    if (state->knee_speed != 0
        && (gdouble) speed > (gdouble) state->knee_speed * config->knee_forget)
        state->knee_speed = 0;
    if (start_waits (config, state, (gdouble) speed)) {
        set_decision (out, VMR_CONTROLLER_HOLD, speed,
                      g_strdup_printf ("%s: holding %s until a sample shows it (the guest shows a "
                                       "speed a sample late), starting (%s)",
                                       head, from_text, ratios));
        return;
    }
    kind = next_raise (config, state, input, &next);
    if (kind == VMR_CONTROLLER_RAISE_NONE) {
        g_autofree gchar *knee_text = vmr_units_format_speed (state->knee_speed);
        g_autofree gchar *left
            = vmr_units_format_duration (knee_memory (config, state) - (now - state->knee_time_us));

        set_decision (out, VMR_CONTROLLER_HOLD, speed,
                      g_strdup_printf ("%s: %s, under the knee at %s for another %s (%s)", head,
                                       from_text, knee_text, left, ratios));
        return;
    }
    /* a probe past a stale knee lasts until the next raise or back-off */
    state->last_raise = kind;
    how = describe_raise (state, kind);
    to = clamp_speed (config, input, next);
    to_text = vmr_units_format_speed (to);
    set_decision (out, to > speed ? VMR_CONTROLLER_RAISE : VMR_CONTROLLER_HOLD, to,
                  g_strdup_printf ("%s: %s -> %s, %s (%s)", head, from_text, to_text, how, ratios));
}

/*
 * a cap set from outside (a user, an older max-speed), or one that the
 * progress floor overtook, comes within [the lowest speed, max-speed]
 */
static void
clamp_decision (const VmrControllerConfig *config, const VmrControllerInput *input,
                VmrControllerDecision *out)
{
    guint64 clamped
        = out->speed == 0 ? config->max_speed : clamp_speed (config, input, (gdouble) out->speed);

    /* a cap no storage reaches is no cap: without max-speed it becomes unlimited */
    if (config->max_speed == 0 && out->speed > VMR_CONTROLLER_NO_CAP_ABOVE) {
        gchar *reason = g_strdup_printf ("%s; unlimited", out->reason);

        set_decision (out, out->kind, 0, reason);
        return;
    }
    g_autofree gchar *limit = NULL;
    gchar *reason;

    if (clamped == out->speed)
        return;
    if (clamped < out->speed || out->speed == 0) {
        g_autofree gchar *max_text = vmr_units_format_speed (clamped);

        limit = g_strdup_printf ("max-speed: %s", max_text);
    } else {
        limit = format_lowest (config, input);
    }
    reason = g_strdup_printf ("%s; within %s", out->reason, limit);
    set_decision (out, out->kind, clamped, reason);
}

/*
 * Whether the last back-off lowered the harm, once JUDGE_SAMPLES samples at
 * its speed tell. One that did not was no knee: what harms the guest is the
 * copy at any speed (its I/O on the guest's I/O thread and storage), or
 * something else. A slower copy would only last longer, so the back-off is
 * undone: the harm is the copy's floor, as at min-speed, and the copy goes
 * back to where it was, with the knee and the slow start as they were. TRUE
 * when it undid the back-off and set @out.
 */
static gboolean
judge_back_off (const VmrControllerConfig *config, VmrControllerState *state,
                const VmrControllerInput *input, gdouble harm, gdouble median,
                VmrControllerDecision *out)
{
    VmrControllerBackOff *b = &state->back_off;
    guint64 from = b->from;
    g_autofree gchar *head = NULL;
    g_autofree gchar *ratios = NULL;
    g_autofree gchar *at_text = NULL;
    g_autofree gchar *from_text = NULL;

    if (from == 0)
        return FALSE;
    /* a speed set since (a raise, the progress floor, a measure) ends the judging */
    if (input->speed != b->to || state->n_at_speed != state->n_harms) {
        b->from = 0;
        return FALSE;
    }
    if (state->n_harms < JUDGE_SAMPLES)
        return FALSE;
    b->from = 0;
    /*
     * It helped if the harm is within the target now, or if some sample at
     * the new speed is lower by half of what the speed came down (a harm
     * that follows the speed comes down with it): the speed matters, and
     * the next back-off goes on. QEMU's noise comes in spikes, so it takes
     * every sample to show that the harm stayed. Deeper than max-floor, it
     * is never a floor. Nor a harm with more IOPS than the baseline's: the
     * guest's own I/O queues behind itself (fio makes up what a slow second
     * cost it), which no speed of the copy explains, and which ends.
     */
    if (over_floor (state, median) <= config->target_harm
        || window_low_at_speed (state) + MIN (input->noise, config->max_noise)
               < b->median * (1 - JUDGE_SHARE * (1 - (gdouble) b->to / (gdouble) from))
        || median > config->max_floor || iops_ratio (input) > 1 + config->target_harm)
        return FALSE;

    head = format_harm (state, harm, median);
    /* the floor is what the guest felt at the speed the copy goes back to, at most */
    state->floor_harm = MIN (MAX (state->floor_harm, MIN (median, b->median)), config->max_floor);
    state->knee_speed = b->knee_speed;
    state->knee_time_us = b->knee_time_us;
    state->knee_found_again = b->knee_found_again;
    state->felt = b->felt;
    state->n_harms = 0;
    state->last_raise = VMR_CONTROLLER_RAISE_NONE;
    ratios = format_ratios (config, input);
    at_text = vmr_units_format_speed (input->speed);
    from_text = vmr_units_format_speed (from);
    set_decision (out, VMR_CONTROLLER_RAISE, from,
                  g_strdup_printf ("%s at %s, no lower than the %.1f%% that made the copy back "
                                   "off from %s: not the copy's speed. The copy's floor is "
                                   "%.1f%%, the target applies on top of it; back to %s (%s)",
                                   head, at_text, b->median * 100, from_text,
                                   state->floor_harm * 100, from_text, ratios));
    return TRUE;
}

/*
 * A guest that turned busy too soon after the last measure to pause the
 * copy again: its harm cannot be told against an idle baseline, and the
 * copy may be at an idle guest's full speed (seen: 4.9 times the latency
 * for the 5 s of a copy held there). To the bottom until the measure,
 * as a busy guest's copy starts. @why is taken.
 */
static void
turned_busy (const VmrControllerConfig *config, VmrControllerState *state,
             const VmrControllerInput *input, gchar *why, VmrControllerDecision *out)
{
    g_autofree gchar *owned_why = why;
    g_autofree gchar *lowest = format_lowest (config, input);
    guint64 to = clamp_speed (config, input, (gdouble) config->min_speed);

    restart_slow (state);
    if (input->speed != 0 && input->speed <= to) {
        set_decision (out, VMR_CONTROLLER_HOLD, to,
                      g_strdup_printf ("%s; measured too recently to pause again: at %s until "
                                       "the guest can be measured",
                                       owned_why, lowest));
        return;
    }
    set_decision (out, VMR_CONTROLLER_BACK_OFF, to,
                  g_strdup_printf ("%s; measured too recently to pause again: down to %s, where "
                                   "a busy guest's copy starts, until the guest can be measured",
                                   owned_why, lowest));
}

/* what a sample says of the guest's load, before the harm is read */
typedef enum {
    SAMPLE_BASELINE,       /* the copy was paused for it: the guest alone */
    SAMPLE_IDLE,           /* the guest was idle and is */
    SAMPLE_LOAD_CHANGE,    /* a change in load no copy causes, and a measure may be taken */
    SAMPLE_TURNED_BUSY,    /* the guest turned busy, measured too recently to pause again */
    SAMPLE_TURNED_IDLE,    /* the guest turned idle, measured too recently to pause again */
    SAMPLE_STALE_BASELINE, /* the baseline is baseline_refresh_us old */
    SAMPLE_HARM,           /* the load of the baseline: its harm is the copy's */
} SampleClass;

/*
 * fewer IOPS at no higher latency than the baseline's: by Little's law the
 * guest keeps fewer I/Os in flight, it asks for less, or the baseline was
 * taken in a burst. A copy that holds up the guest's requests before QEMU
 * times them could do it too: the paused sample tells. Not more often than
 * every FEWER_IOPS_GAPS measure gaps, as it may be the copy after all. NULL
 * for none; free with g_free()
 */
static gchar *
describe_fewer_iops (const VmrControllerConfig *config, const VmrControllerState *state,
                     const VmrControllerInput *input)
{
    if (input->load.iops < config->idle_iops || input->baseline.iops < config->idle_iops
        || iops_ratio (input) >= 1 - FEWER_IOPS_TARGETS * config->target_harm
        || latency_ratio (config, input) > 1
        || input->load.time_us - state->measure_time_us < FEWER_IOPS_GAPS * config->measure_gap_us)
        return NULL;
    return g_strdup_printf ("the guest does fewer IOPS than in its baseline (%.2fx) at no higher "
                            "latency (%.2fx)",
                            iops_ratio (input), latency_ratio (config, input));
}

/* what @input says of the load; @change, for a change in load, says which (free with g_free()) */
static SampleClass
classify_sample (const VmrControllerConfig *config, const VmrControllerState *state,
                 const VmrControllerInput *input, gchar **change)
{
    gint64 now = input->load.time_us;
    gboolean idle_now = input->load.iops < config->idle_iops;
    gboolean idle_before = input->baseline.iops < config->idle_iops;

    *change = NULL;
    if (state->phase == VMR_CONTROLLER_PHASE_MEASURING)
        return SAMPLE_BASELINE;
    if (idle_now && idle_before)
        return SAMPLE_IDLE;
    *change = describe_load_change (config, input, idle_now, idle_before);
    if (*change == NULL)
        *change = describe_fewer_iops (config, state, input);
    if (*change != NULL && now - state->measure_time_us >= config->measure_gap_us)
        return SAMPLE_LOAD_CHANGE;
    if (*change != NULL && idle_before && !idle_now)
        return SAMPLE_TURNED_BUSY;
    if (*change != NULL && idle_now)
        return SAMPLE_TURNED_IDLE;
    /* a change too soon after the last measure: the control goes on against the old baseline */
    g_clear_pointer (change, g_free);
    if (config->baseline_refresh_us > 0
        && now - state->baseline_time_us >= config->baseline_refresh_us)
        return SAMPLE_STALE_BASELINE;
    return SAMPLE_HARM;
}

/*
 * The noise band a back-off's evidence must clear: the baseline's, up to
 * the ceiling. Not capped at max_noise as the target's raise is: a guest
 * whose own seconds swing by more (seen on a loaded host: 147%, its IOPS
 * from 0.05 to 4.2 times the baseline's between seconds with the copy's
 * speed fixed) made the copy back off nine times on harm that was its own.
 */
static gdouble
evidence_band (const VmrControllerConfig *config, const VmrControllerInput *input)
{
    return MIN (input->noise, config->max_harm > 0 ? config->max_harm : 1.0);
}

/* what the window of harms says */
typedef enum {
    HARM_OVER,        /* most of it over the target: back off */
    HARM_OVER_JUDGED, /* the same while the last back-off is judged: hold */
    HARM_SPIKES,      /* the newest sample over the target, not most of the window: noise */
    HARM_IN_BAND,     /* in the hold band */
    HARM_UNDER,       /* the median and the newest sample under the band: raise */
} HarmClass;

/*
 * The newest OVER_SAMPLES samples over the target, and the window's median
 * less the noise band of the baseline over sqrt (n) still over it (a lower
 * bound of the harm: evidence larger than the noise), where a spike or two
 * is noise. Or the first two samples
 * after a slow start's raise both severely over it: the new speed is
 * past the knee, no need to wait for a third. Either must clear the noise
 * band (evidence_band()). A back-off is judged before the
 * next: a floor makes no cascade down to min-speed. A raise needs the
 * window's median under the band, and the newest sample too: noise either
 * way leaves the median alone.
 */
static HarmClass
classify_harm (const VmrControllerConfig *config, const VmrControllerState *state,
               const VmrControllerInput *input, gdouble harm, gdouble median)
{
    gdouble target = config->target_harm;
    gdouble band = evidence_band (config, input);
    gboolean over = state->n_harms >= OVER_SAMPLES
                    && window_count_past (state, OVER_SAMPLES, target, TRUE) == OVER_SAMPLES
                    && over_floor (state, median) - band / sqrt (state->n_harms) > target;
    /* the two samples at the new speed are its evidence */
    gboolean overshoot
        = state->n_harms >= 2 && state->n_at_speed == 2
          && state->last_raise == VMR_CONTROLLER_RAISE_SLOW_START
          && window_count_past (state, 2, config->severe_factor * target, TRUE) == 2
          && over_floor (state, window_median_at_speed (state)) - band / sqrt (2) > target;

    if (over || overshoot)
        return state->back_off.from != 0 && median <= config->max_floor ? HARM_OVER_JUDGED
                                                                        : HARM_OVER;
    if (over_floor (state, harm) > target)
        return HARM_SPIKES;
    if (over_floor (state, median) >= config->hold_below * target
        || over_floor (state, harm) >= config->hold_below * target)
        return HARM_IN_BAND;
    return HARM_UNDER;
}

/* holds the speed for @class, one of the holds of classify_harm() */
static void
hold_for_harm (const VmrControllerConfig *config, const VmrControllerState *state,
               const VmrControllerInput *input, HarmClass class, gdouble harm, gdouble median,
               VmrControllerDecision *out)
{
    g_autofree gchar *head = format_harm (state, harm, median);
    g_autofree gchar *ratios = format_ratios (config, input);
    g_autofree gchar *speed_text = vmr_units_format_speed (input->speed);
    gchar *reason;

    if (class == HARM_OVER_JUDGED)
        reason
            = g_strdup_printf ("%s > %.1f%%: holding %s for %u samples, to tell whether the "
                               "last back-off lowered the harm (%s)",
                               head, config->target_harm * 100, speed_text, JUDGE_SAMPLES, ratios);
    else if (class == HARM_SPIKES)
        reason = g_strdup_printf (
            "%s > %.1f%% in %u of the last %u samples: noise until most show it; holding %s (%s)",
            head, config->target_harm * 100,
            window_count_past (state, config->window, config->target_harm, TRUE), state->n_harms,
            speed_text, ratios);
    else
        reason = g_strdup_printf ("%s in the hold band %.1f%%..%.1f%%: %s (%s)", head,
                                  config->hold_below * config->target_harm * 100,
                                  config->target_harm * 100, speed_text, ratios);
    set_decision (out, VMR_CONTROLLER_HOLD, input->speed, reason);
}

/* a settling sample that shows harm: the speed holds, the window does not take it */
static void
hold_settling (const VmrControllerConfig *config, const VmrControllerState *state,
               const VmrControllerInput *input, gdouble harm, VmrControllerDecision *out)
{
    g_autofree gchar *ratios = format_ratios (config, input);
    g_autofree gchar *speed_text = vmr_units_format_speed (input->speed);
    g_autofree gchar *settle_text = vmr_units_format_duration (config->settle_us);

    set_decision (out, VMR_CONTROLLER_HOLD, input->speed,
                  g_strdup_printf ("harm %.1f%% in a sample that began within %s of the copy's "
                                   "start: settling (the mirror's first buffer goes out before "
                                   "its rate limit bites), no evidence; holding %s (%s)",
                                   over_floor (state, harm) * 100, settle_text, speed_text,
                                   ratios));
}

/*
 * A sample of the baseline's load: its harm into the window, then what the
 * window says. A floor over what a full window of the copy now harms, by
 * more than the target (not by noise), was no floor: the spell at min-speed
 * it came from passed (the start of a copy, whose first seconds hurt the
 * test guest at any speed, up to 13 times its latency).
 */
static void
control_harm (const VmrControllerConfig *config, VmrControllerState *state,
              const VmrControllerInput *input, VmrControllerDecision *out)
{
    gdouble harm = vmr_controller_harm (config, input);
    gdouble median;
    HarmClass class;

    out->harm = harm;
    /* a burst only adds harm: a settling sample under the hold band is evidence all the same */
    if (settling (config, state)
        && over_floor (state, harm) >= config->hold_below * config->target_harm) {
        hold_settling (config, state, input, harm, out);
        return;
    }
    window_push (config, state, harm);
    median = window_median (state);
    if (state->floor_harm > 0 && state->n_harms >= config->window && over_floor (state, median) == 0
        && (1 + state->floor_harm) / (1 + median) - 1 > config->target_harm)
        state->floor_harm = median;
    if (judge_back_off (config, state, input, harm, median, out))
        return;
    class = classify_harm (config, state, input, harm, median);
    switch (class) {
        case HARM_OVER:
            back_off (config, state, input, harm, median, out);
            break;
        case HARM_UNDER:
            raise_speed (config, state, input, harm, median, out);
            break;
        case HARM_OVER_JUDGED:
        case HARM_SPIKES:
        case HARM_IN_BAND:
        default:
            hold_for_harm (config, state, input, class, harm, median, out);
            break;
    }
}

/* a change in load that a measure may answer: the new load's baseline; @change is taken */
static void
measure_for_change (const VmrControllerConfig *config, VmrControllerState *state,
                    const VmrControllerInput *input, gchar *change, VmrControllerDecision *out)
{
    gint64 now = input->load.time_us;

    state->measure_time_us = now;
    /* the knee was the old load's: probe past it slowly */
    if (state->knee_speed != 0)
        state->knee_time_us = now - knee_memory (config, state);
    ask_for_baseline (state, input, TRUE, change, out);
}

/* classifies the sample, then acts on what it says */
static void
decide (const VmrControllerConfig *config, VmrControllerState *state,
        const VmrControllerInput *input, VmrControllerDecision *out)
{
    g_autofree gchar *change = NULL;
    g_autofree gchar *full = NULL;
    g_autofree gchar *age = NULL;

    out->harm = 0;
    out->baseline = input->baseline;
    switch (classify_sample (config, state, input, &change)) {
        case SAMPLE_BASELINE:
            take_baseline (config, state, input, out);
            break;
        case SAMPLE_IDLE:
            full = vmr_units_format_speed (config->max_speed);
            state->n_harms = 0;
            set_decision (out, VMR_CONTROLLER_IDLE_FULL_SPEED, config->max_speed,
                          g_strdup_printf ("guest idle (%.1f IOPS, baseline %.1f): full speed %s",
                                           input->load.iops, input->baseline.iops, full));
            break;
        case SAMPLE_LOAD_CHANGE:
            measure_for_change (config, state, input, g_steal_pointer (&change), out);
            break;
        case SAMPLE_TURNED_BUSY:
            turned_busy (config, state, input, g_steal_pointer (&change), out);
            break;
        case SAMPLE_TURNED_IDLE:
            /* no harm can be told from an idle guest */
            set_decision (out, VMR_CONTROLLER_HOLD, input->speed,
                          g_strdup_printf ("%s; measured too recently to pause again", change));
            break;
        case SAMPLE_STALE_BASELINE:
            age = vmr_units_format_duration (input->load.time_us - state->baseline_time_us);
            ask_for_baseline (state, input, FALSE, g_strdup_printf ("the baseline is %s old", age),
                              out);
            break;
        case SAMPLE_HARM:
        default:
            control_harm (config, state, input, out);
            break;
    }
}

/* appends @what to @out's reason */
static void
append_reason (VmrControllerDecision *out, const gchar *what)
{
    gchar *reason = g_strdup_printf ("%s; %s", out->reason, what);

    set_decision (out, out->kind, out->speed, reason);
}

void
vmr_controller_step (const VmrControllerConfig *config, VmrControllerState *state,
                     const VmrControllerInput *input, VmrControllerDecision *out)
{
    VmrControllerConfig effective = *config;
    g_autofree gchar *why = NULL;

    effective.target_harm = vmr_controller_target (config, state, input, &why);
    decide (&effective, state, input, out);
    state->last_sample_us = input->load.time_us;
    clamp_decision (&effective, input, out);
    if (why != NULL && out->kind != VMR_CONTROLLER_MEASURE_BASELINE
        && out->kind != VMR_CONTROLLER_BASELINE_TAKEN)
        append_reason (out, why);
    if (out->speed != input->speed || out->kind == VMR_CONTROLLER_MEASURE_BASELINE)
        state->n_at_speed = 0;
}
