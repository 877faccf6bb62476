/*
 * The closed-loop copy speed: how fast a copy may go for its guest to lose
 * no more than a target fraction of what it does without the copy. A pure
 * function of the configuration, the controller's state and one sample; no
 * I/O, no clock reads, so that tables of simulated guests can test it.
 *
 * The model. A copy harms its guest by adding I/O latency. A guest that
 * issues I/O at a fixed rate shows it as a higher latency; a closed-loop
 * guest (one that issues the next I/O when the last is done) shows it as
 * fewer IOPS. The harm of one sample is the larger of the two:
 *
 *   harm = max ((latency - baseline latency) / max (baseline latency,
 *                latency_floor_us), 1 - IOPS / baseline IOPS)
 *
 * against a baseline measured with the copy paused. The latency floor keeps
 * a few microseconds on an I/O QEMU serves from memory in 10 us, which no
 * guest feels, from reading as 20% to 70% harm. The harm of a copy as a
 * function of its speed has a knee that depends on the guest, the storage
 * and the hour (one measured machine: 150 MiB/s kept all of the guest's
 * IOPS, 175 MiB/s 66%, unlimited 41%), so no static cap is right for long;
 * the controller looks for the knee and stays just under it.
 *
 * The control law: probe upward, back off fast by a factor (the
 * multiplicative decrease of TCP congestion control), remember the knee
 * and approach it in shrinking steps (as TCP CUBIC does with its last
 * window), with a hold band between, so that a load that hovers does not
 * make the speed oscillate. A gradient on harm over speed would need the
 * slope of a curve that is flat under the knee and steep over it, and noisy
 * on both sides; the knee's memory needs only the speed at which the
 * target was crossed.
 *
 * - The decisions read the harm of the last samples, never of one: the
 *   latency QEMU sees for a guest's I/O is noisy (from one second to the
 *   next, 0.9x to 1.7x its mean was measured with the copy's speed fixed),
 *   and its noise comes in spikes. A back-off needs the newest two samples
 *   over the target and evidence larger than the baseline's noise band: the
 *   window's median less the band over sqrt (samples) still over the target
 *   (a lower bound of the harm; a single spike never lowers the speed), a
 *   raise their median under the hold band and the newest sample under the
 *   target; the size of a back-off follows their median. The window starts
 *   again after every back-off and baseline.
 * - The copy's floor. A copy costs its guest something at any speed (its
 *   I/O on the guest's I/O thread, its reads and writes on the same
 *   storage): measured with the test guest, 8 MiB/s added 20% to the latency
 *   QEMU saw. When the harm is over the target at min-speed, that harm is
 *   the floor: no speed avoids it, and holding the copy at min-speed would
 *   only make it last longer. The target then applies on top of it: the
 *   harm counted is (1 + harm) / (1 + floor) - 1, where the floor is the
 *   median of the window at min-speed (spikes left out), at most
 *   max_floor; a full window whose median is lower by more than the
 *   target, at whatever speed, lowers it (it was a passing spell, such as a copy's first seconds).
 * A baseline taken for a change in load forgets the floor.
 * - A target that cannot be met. A floor over the target says that no
 *   speed keeps the guest within it, and the reason says so. The floor and
 *   the target on top of it together never pass max_harm: the ceiling past
 *   which guests time out.
 * - A back-off that did not lower the harm. The floor shows at any speed,
 *   not only at min-speed: measured on a fast disk, the test guest's
 *   latency as QEMU saw it stood 10% to 26% over its baseline in most samples
 *   from 22 to 64 MiB/s, and each back-off from there only made the copy
 *   slower. So a back-off by 30% or more from over twice the target is
 *   judged on the next three samples at its speed (no further
 *   back-off meanwhile): when each of them is still over half-way from the
 *   old harm to what a harm that follows the speed would have come down to
 *   (give or take the guest's noise band), and their median is over the
 *   target, the back-off is undone. The harm at the old speed becomes the
 *   floor, and the copy goes back there with
 *   its knee and slow start as they were. A slower copy that spares the
 *   guest nothing is harm for longer: its harm times its time is larger.
 * - The copy's start transient. QEMU's mirror sends its first buffer
 *   before its rate limit bites; the guest's first samples of a copy then
 *   show harm at any cap (up to 2500 times the latency for half a second
 *   at 4 MiB/s on a shared array, gone by the next second). The samples
 *   that began within settle_us of the start are settling samples: when
 *   they show harm (at the hold band or over), the copy holds its speed
 *   and they stay out of the window; under the band they count, as the
 *   buffer only adds harm. A steady harm over the target backs off once
 *   they passed, a settle time later than without them.
 * - The slow start's overshoot: the first two samples after a raise of the
 *   slow start both over severe_factor times the target back off at once.
 *   After another raise the window decides, as for any speed.
 * - Harm over the target: back off by (1 + target) / (1 + harm), clamped to
 *   [severe_backoff, backoff], so a deep excess (a step in load) gets under
 *   the new knee in one sample and a shallow one loses 30%. The speed at
 *   which harm crossed the target is remembered as the knee. Near a knee
 *   already known, a shallow excess (a load that hovers), and a probe past
 *   a stale knee that crosses where the knee was, go back by knee_margin
 *   only: back under the knee, no further.
 * - Harm in the hold band [hold_below * target, target]: keep the speed.
 * - Harm under the band, in the window's median: raise. Until the copy
 *   first backs off, a slow start: from start_speed on by probe_gain once
 *   a sample has shown the speed (not the first at it), as a knee may be
 *   anywhere over it and the guest shows a speed a sample late (a doubling
 *   from 64 MiB/s, harmless for three samples, passed a shared array's
 *   knee near 85 MiB/s: 246% before the back-off);
 *   under it (after a turn to busy, from min-speed) by start_gain, as
 *   TCP's slow start, up to start_speed, less as the harm nears the hold
 *   band; a settling sample by probe_gain. Then with no knee known, by
 *   probe_gain a sample. With a knee known, close approach_gain of the
 *   gap to knee_margin under it; while the knee is fresh (seen less than
 *   knee_memory_us ago) stay there: no probing into a knee just found,
 *   which is what makes a fixed rate cap oscillate. Once the memory is
 *   stale, probe past the old knee slowly (fine_gain a sample), so the
 *   controller finds out whether the guest now allows more, and forget it
 *   when the speed passes knee_forget times it.
 * - n copies sharing one I/O thread share the guest's harm: each divides
 *   its raise by n, so that together they ramp up as one copy would; each
 *   backs off by the same factor, which backs off their sum by it.
 * - The progress floor. A copy slower than the guest dirties its disk
 *   never gets into sync: its backlog does not shrink, and all it does is
 *   harm the guest. The copy never goes under (1 + min_progress) times the
 *   rate at which the guest's writes add to the backlog (the growth of
 *   QEMU's len, which the caller measures), whatever the harm: over it the
 *   backlog shrinks. max-speed still wins. Where the harm at that speed is
 *   over the target, it is the copy's floor, as at min-speed.
 * - An idle guest (under idle_iops now and in the baseline) feels nothing:
 *   full speed (max-speed, or unlimited). A guest that turns busy under it
 *   is measured again, and the copy starts over from min-speed with a slow
 *   start; too soon after the last measure to pause again, the copy drops
 *   to min-speed at once (back-off) and waits there for the measure.
 * - With max-speed unlimited, a raise past what any storage moves
 *   (VMR_CONTROLLER_NO_CAP_ABOVE) goes to unlimited. A capped copy's rate
 *   is never read as the storage's: QEMU's mirror under a cap copies in
 *   bursts and sleeps between them, so its rate over a second falls far
 *   under its cap while the storage would allow more (a 1 MiB/s cap was
 *   read as 31 B/s), and a busy guest's copy must not go unlimited on that.
 *
 * The baseline goes stale: the guest's load changes while the copy runs.
 * The controller asks for a fresh one (decision measure-baseline) every
 * baseline_refresh_us of copying, and when a sample shows what a copy
 * cannot cause: more IOPS or a lower latency than the baseline by more than
 * unexplained_step, or a guest that turned idle or busy, at most once every
 * measure_gap_us; and fewer IOPS (by twice the target) at no higher latency,
 * at most once every three of them (Little's law: the guest keeps fewer I/Os
 * in flight, unless the copy holds them up before QEMU times them). The
 * caller then pauses the copy for one sample and passes that sample to the
 * next step, which takes it as the baseline (decision baseline-taken) and
 * resumes at the speed before the pause. A periodic baseline moves half-way
 * to the new sample, as one sample is noisy, unless its latency is over the
 * baseline's by more than the target (a spike, or the copy's last I/O still
 * in the guest's figures: not the guest alone); one asked for by a change in
 * load replaces the old one:
 *
 *   copying --measure-baseline--> measuring --baseline-taken--> copying
 */
#pragma once

#include <glib.h>

#include "decision.h"

G_BEGIN_DECLS

/* a cap above this, with max-speed unlimited, is made unlimited: no storage moves 64 GiB/s */
#define VMR_CONTROLLER_NO_CAP_ABOVE (G_GUINT64_CONSTANT (64) << 30)
/* the most samples a decision reads */
#define VMR_CONTROLLER_WINDOW_MAX 8
/* the newest samples before a copy that make its baseline */
#define VMR_CONTROLLER_BASELINE_MAX 5

typedef struct {
    gdouble target_harm;  /* the fraction of its performance the guest may lose, e.g. 0.05 */
    guint64 min_speed;    /* bytes/s, > 0: a copy must go on */
    guint64 max_speed;    /* bytes/s, 0 = unlimited (the storage's full speed) */
    gdouble min_progress; /* [0.25] the copy goes at least this much faster than the guest
                           * dirties the disk (0 = no such floor): slower, its backlog never
                           * shrinks and it harms the guest for nothing */

    /*
     * The tuning. vmr_controller_config_init() sets the values in brackets,
     * chosen for a sample interval of about a second, for these reasons.
     */
    guint64 start_speed;    /* [64 MiB/s] where a busy guest's copy starts, within min-speed and
                             * max-speed: a slow start from min-speed spent 3 to 4 samples under
                             * the knee (8, 16, 32 MiB/s) of a copy that a static cap near 100
                             * MiB/s finished in 6 s; over the knee, the harm shows in a sample
                             * or two and the copy backs off from there */
    gdouble hold_below;     /* [0.6] the hold band starts at this fraction of the target: a guest's
                             * figures wobble by a few percent from second to second */
    gdouble start_gain;     /* [1] raise a sample under start_speed until the copy first harms
                             * the guest: TCP's slow start, 8 MiB/s to 64 MiB/s in 3 samples
                             * (no further: over it, probe_gain), shrunk as the harm nears the
                             * hold band */
    gdouble probe_gain;     /* [0.25] raise a sample with no knee known from start_speed on, or
                             * once the guest has felt the copy: past a knee by 25% at most */
    gdouble approach_gain;  /* [0.5] the fraction of the gap to a fresh knee closed a sample:
                             * within 6% of it in 4 samples */
    gdouble fine_gain;      /* [0.1] raise a sample past a stale knee, a fraction of the speed:
                             * a knee that has not moved is passed by 10% for a sample or two */
    gdouble knee_margin;    /* [0.1] how far under a fresh knee to stay, a fraction of it: room
                             * for noise and for a knee that moves with the load */
    gdouble knee_forget;    /* [1.3] a stale knee passed by this factor, three probes' worth,
                             * without a back-off is forgotten: the load has changed, probe
                             * freely (a pair of QEMU's spikes makes a knee where there is
                             * none) */
    gint64 knee_memory_us;  /* [10 s] how long a knee stays fresh, doubled each time a probe
                             * finds it again, up to 16 times: a copy of a few minutes cannot
                             * wait longer for a spell of harm that was no knee (the test
                             * guest's storage had one every 30 s or so, at any speed), and
                             * a knee that holds is probed less and less often */
    gdouble backoff;        /* [0.7] the mildest back-off factor, TCP CUBIC's: AIMD's 0.5 would
                             * halve the copy for an excess of 1% */
    gdouble severe_backoff; /* [0.5] the deepest back-off factor: the next sample can back off
                             * again, while a copy slowed too far takes samples to recover */
    gdouble severe_factor;  /* [2] an excess over this times the target is severe: the first two
                             * samples after a slow start's raise over it back off at once
                             * (past the knee); near a known knee it backs off by the factor,
                             * not by knee_margin (a change in load); a back-off from it is
                             * judged (a step by more than the noise) */
    gdouble max_floor;      /* [0.5] the copy's floor at most: harm beyond it is never a floor,
                             * whatever min-speed */
    guint window;           /* [5] the samples a decision reads: three of five over the target
                             * back off (two of two, three of three or four), so a spike or two
                             * does not; a step in load shows in two to three samples */
    gdouble idle_iops;      /* [5] under this the guest does no I/O to speak of (a log line now
                             * and then) */
    gdouble unexplained_step;   /* [0.5] a copy only lowers IOPS and raises latency: a sample 50%
                                 * the other way is a change in the guest's load */
    gint64 baseline_refresh_us; /* [120 s] a fresh baseline this often, 0 = only on a change in
                                 * load: a pause of one sample in 120 costs the copy under 1% */
    gint64 measure_gap_us;      /* [10 s] at most one measure for a change in load this often: a
                                 * bursty guest must not pause the copy every other sample */
    gdouble latency_floor_us;   /* [100 us] the latency added to a guest's I/O counts against its
                                 * baseline or this, whichever is larger: QEMU's own time for an
                                 * I/O from memory is 7 to 11 us, where a few microseconds more,
                                 * which no guest feels, would read as 20% to 70% */
    gdouble max_harm;           /* [1.0] the ceiling: twice the latency or half the IOPS, past which
                                 * guests time out and reset devices; the floor and the target on
                                 * top of it never pass it (0 = none) */
    gint64 settle_us;           /* [1 s] the samples that began within this of the copy's start
                                 * settle: QEMU's mirror sends its first buffer (16 MiB) before
                                 * its rate limit bites, and the guest waits behind it at any cap
                                 * (measured on a shared array: 19 to 2500 times the latency for
                                 * 0.4 to 0.6 s after a start at 4 or 8 MiB/s, gone within
                                 * 0.8 s). Their harm is no evidence of the speed: the copy holds
                                 * through them and judges the speed on the rest. The buffer only
                                 * adds harm: one of them under the hold band counts, and may
                                 * raise. Not after a raise: its burst is the new speed's, and
                                 * the guest's samples lag the speed by one already */
    gdouble max_noise;          /* [0.1] the noise band at most: a baseline noisier than this (three
                                 * of QEMU's spikes in five samples) says more about its spell
                                 * than about the guest */
} VmrControllerConfig;

/* @config with @target_harm, @min_speed, @max_speed and the built-in tuning */
void vmr_controller_config_init (VmrControllerConfig *config, gdouble target_harm,
                                 guint64 min_speed, guint64 max_speed);

typedef enum {
    VMR_CONTROLLER_PHASE_COPYING,   /* the copy runs at the speed decided */
    VMR_CONTROLLER_PHASE_MEASURING, /* the copy is paused: the next sample is the baseline */
} VmrControllerPhase;

/* how the controller last raised the speed: what the samples after it say depends on it */
typedef enum {
    VMR_CONTROLLER_RAISE_NONE,       /* no raise since the last back-off or baseline */
    VMR_CONTROLLER_RAISE_SLOW_START, /* the speed doubled: the guest had not felt the copy */
    VMR_CONTROLLER_RAISE_PROBE,      /* by probe_gain: no knee known */
    VMR_CONTROLLER_RAISE_APPROACH,   /* toward knee_margin under a known knee */
    VMR_CONTROLLER_RAISE_PAST_KNEE,  /* by fine_gain past a stale knee: a back-off before the
                                      * speed passes knee_forget times it finds the knee again */
} VmrControllerRaiseKind;

/*
 * The last back-off, until the samples after it tell whether it lowered the
 * harm, and what the controller was before it, for an undo.
 */
typedef struct {
    guint64 from;           /* the speed it left, bytes/s; 0 = nothing to judge */
    guint64 to;             /* the speed it set */
    gdouble median;         /* the window's median harm (raw) that made it */
    guint64 knee_speed;     /* the controller's knee before it */
    gint64 knee_time_us;    /* when that knee was found */
    guint knee_found_again; /* and how often a probe found it again */
    gboolean felt;          /* whether the slow start was over before it */
} VmrControllerBackOff;

/* what the controller keeps between samples; one per copy */
typedef struct {
    VmrControllerPhase phase;
    guint64 knee_speed;  /* bytes/s at which harm last crossed the target, 0 = none */
    gint64 knee_time_us; /* when */
    gdouble harms[VMR_CONTROLLER_WINDOW_MAX]; /* the harm of the last samples, newest last */
    guint n_harms;                            /* how many, 0 = none: the window starts again */
    guint n_at_speed;                         /* how many of them at the copy's speed now */
    gdouble floor_harm;                /* the harm the copy causes at min-speed, 0 = none found */
    gboolean felt;                     /* the copy has backed off once: the slow start is over */
    guint knee_found_again;            /* probes in a row that found the knee where it was */
    gboolean measure_replaces;         /* while measuring: the sample replaces the baseline */
    guint64 resume_speed;              /* while measuring: the speed to go on at, 0 = unlimited */
    gint64 baseline_time_us;           /* when the baseline was measured */
    gint64 measure_time_us;            /* when a change in load last asked for a measure */
    VmrControllerRaiseKind last_raise; /* until a back-off, a baseline or another raise */
    VmrControllerBackOff back_off;     /* the last back-off, while it is judged */
    gint64 settle_from_us;             /* the copy's start */
    gint64 last_sample_us;             /* the end of the last sample: where the next began */
} VmrControllerState;

/*
 * The speed a busy guest's copy starts at, bytes/s: config->start_speed
 * within [min-speed, max-speed], from which the slow start goes on
 */
guint64 vmr_controller_start_speed (const VmrControllerConfig *config);

/* a fresh controller whose baseline was measured at @baseline_time_us */
void vmr_controller_state_init (VmrControllerState *state, gint64 baseline_time_us);

typedef struct {
    VmrLoadSample load;     /* the guest on this disk over the last sample interval */
    VmrLoadSample baseline; /* the guest without the copy (time_us unused) */
    guint64 speed;          /* the copy's cap now, bytes/s, 0 = unlimited */
    guint64 copy_rate;      /* bytes/s an unlimited copy moved in the interval, 0 = unknown: a
                             * back-off from unlimited starts from it; a capped copy's is not
                             * read (its sleeps between bursts say nothing of the storage) */
    guint64 dirty_rate;     /* bytes/s the guest's writes add to what is left to copy (QEMU's
                             * len grows by them), 0 = unknown or none */
    guint n_copies;         /* copies on the disk's I/O thread, this one included (0 = 1) */
    gdouble noise;          /* the baseline's noise band (vmr_controller_baseline()), 0 = none:
                             * a target under it is raised to it */
} VmrControllerInput;

typedef enum {
    VMR_CONTROLLER_RAISE,            /* faster: the guest allows more */
    VMR_CONTROLLER_HOLD,             /* the same speed */
    VMR_CONTROLLER_BACK_OFF,         /* slower: the harm is over the target */
    VMR_CONTROLLER_IDLE_FULL_SPEED,  /* the guest is idle: full speed */
    VMR_CONTROLLER_MEASURE_BASELINE, /* pause the copy for one sample, pass it next */
    VMR_CONTROLLER_BASELINE_TAKEN,   /* that sample is the new baseline; the copy resumes */
} VmrControllerKind;

typedef struct {
    VmrControllerKind kind;
    guint64 speed;          /* bytes/s, 0 = unlimited; with measure-baseline, the speed after it */
    gdouble harm;           /* this sample's, 0 when the sample cannot tell */
    VmrLoadSample baseline; /* with baseline-taken: the baseline to pass from now on */
    gchar *reason;          /* one line naming the numbers, for logs and `virt-mirror job` */
} VmrControllerDecision;

void vmr_controller_decision_clear (VmrControllerDecision *decision);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VmrControllerDecision, vmr_controller_decision_clear)

/*
 * Decides the copy's speed after the sample in @input and updates @state.
 * A busy guest's copy starts at vmr_controller_start_speed(), with the
 * baseline the caller measured before.
 * @out->reason is always set (free it with vmr_controller_decision_clear();
 * @out may be reused). With measure-baseline the caller pauses the copy for
 * one sample interval and passes that sample next; the decision after it is
 * baseline-taken, whose @out->baseline the caller passes as the baseline
 * from then on.
 */
void vmr_controller_step (const VmrControllerConfig *config, VmrControllerState *state,
                          const VmrControllerInput *input, VmrControllerDecision *out);

/*
 * Asks for a baseline from outside a step (a copy with none: its daemon
 * restarted, or its policy became adaptive): @state measures, the caller
 * pauses the copy for one sample and passes that sample to the next step,
 * which replaces the baseline with it and resumes at @resume_speed (bytes/s,
 * 0 = unlimited). Nothing changes while @state already measures.
 */
void vmr_controller_request_measure (VmrControllerState *state, guint64 resume_speed);

/*
 * the harm of @input's load against its baseline, >= 0; 0 when neither can
 * tell. The latency's excess counts against the larger of the baseline's
 * latency and config->latency_floor_us.
 */
gdouble vmr_controller_harm (const VmrControllerConfig *config, const VmrControllerInput *input);

/*
 * The guest before a copy from its @n newest @samples: @baseline the median
 * of their IOPS and of their latencies, @noise their spread as harm (twice
 * the median deviation of each figure from its median, the latency's
 * against the floor as in the harm; the larger of the two), 0 for fewer
 * than three samples. The median deviation leaves out QEMU's spikes, which
 * the window's decisions already ignore. FALSE when @n is 0.
 */
gboolean vmr_controller_baseline (const VmrControllerConfig *config, const VmrLoadSample *samples,
                                  guint n, VmrLoadSample *baseline, gdouble *noise);

const gchar *vmr_controller_kind_to_string (VmrControllerKind kind);

G_END_DECLS
