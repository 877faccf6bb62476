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
 *   harm = max (latency / baseline latency - 1, 1 - IOPS / baseline IOPS)
 *
 * against a baseline measured with the copy paused. The harm of a copy as a
 * function of its speed has a knee that depends on the guest, the storage
 * and the hour (one measured machine: 150 MiB/s kept all of the guest's
 * IOPS, 175 MiB/s 66%, unlimited 41%), so no static cap is right for long;
 * the controller looks for the knee and stays just under it.
 *
 * The control law: additive-increase, multiplicative-decrease in the manner
 * of TCP congestion control, with a memory of the knee as in CUBIC.
 *
 * - Harm over the target: back off by (1 + target) / (1 + harm), clamped to
 *   [severe_backoff, backoff], so a deep excess (a step in load) gets under
 *   the new knee in one sample and a shallow one loses 30%. A shallow excess
 *   (up to severe_factor times the target) must be seen in two samples in a
 *   row: one noisy sample does not halve the copy. The speed at which harm
 *   crossed the target is remembered as the knee.
 * - Harm in the hold band [hold_below * target, target]: keep the speed.
 * - Harm under the band: raise. With no knee known, multiplicatively by
 *   probe_gain a sample (from min-speed to 150 MiB/s in about 14 samples).
 *   With a knee seen less than knee_memory_us ago, close approach_gain of
 *   the gap to knee_margin under it and stay there: no probing into a knee
 *   just found, which is what makes a fixed rate cap oscillate. Once the
 *   memory is stale, probe past the old knee slowly (fine_gain a sample),
 *   so the controller finds out whether the guest now allows more, and
 *   forget it when the speed passes knee_forget times it.
 * - n copies sharing one I/O thread share the guest's harm: each divides
 *   its raise by n, so that together they ramp up as one copy would; each
 *   backs off by the same factor, which backs off their sum by it.
 * - An idle guest (under idle_iops now and in the baseline) feels nothing:
 *   full speed (max-speed, or unlimited).
 * - With max-speed unlimited, a raise goes to unlimited once the copy moves
 *   less than cap_slack of its cap: the storage limits it, not the cap.
 *
 * The baseline goes stale: the guest's load changes while the copy runs.
 * The controller asks for a fresh one (decision measure-baseline) every
 * baseline_refresh_us of copying, and when a sample shows what a copy
 * cannot cause: more IOPS or a lower latency than the baseline by more than
 * unexplained_step, or a guest that turned idle or busy; the latter at most
 * once every measure_gap_us. The caller then pauses the copy for one sample
 * and passes that sample to the next step, which takes it as the baseline
 * (decision baseline-taken) and resumes at the speed before the pause:
 *
 *   copying --measure-baseline--> measuring --baseline-taken--> copying
 */
#pragma once

#include <glib.h>

#include "decision.h"

G_BEGIN_DECLS

typedef struct {
    gdouble target_harm; /* the fraction of its performance the guest may lose, e.g. 0.05 */
    guint64 min_speed;   /* bytes/s, > 0: a copy must go on */
    guint64 max_speed;   /* bytes/s, 0 = unlimited (the storage's full speed) */

    /* the tuning, set by vmr_controller_config_init(); the reasons are in the .c */
    gdouble hold_below;         /* the hold band starts at this fraction of the target */
    gdouble probe_gain;         /* raise a sample with no knee known, a fraction of the speed */
    gdouble approach_gain;      /* the fraction of the gap to a fresh knee closed a sample */
    gdouble fine_gain;          /* raise a sample past a stale knee, a fraction of the speed */
    gdouble knee_margin;        /* how far under a fresh knee to stay, a fraction of it */
    gdouble knee_forget;        /* a stale knee passed by this factor is forgotten */
    gint64 knee_memory_us;      /* how long a knee stays fresh */
    gdouble backoff;            /* the mildest back-off factor */
    gdouble severe_backoff;     /* the deepest back-off factor */
    gdouble severe_factor;      /* harm over this times the target backs off at once */
    gdouble idle_iops;          /* under this the guest does no I/O to speak of */
    gdouble unexplained_step;   /* a change in load a copy cannot cause, a fraction */
    gint64 baseline_refresh_us; /* a fresh baseline this often, 0 = only on a change in load */
    gint64 measure_gap_us;      /* at most one measure for a change in load this often */
    gdouble cap_slack;          /* a copy under this fraction of its cap is not held by it */
} VmrControllerConfig;

/* @config with @target_harm, @min_speed, @max_speed and the built-in tuning */
void vmr_controller_config_init (VmrControllerConfig *config, gdouble target_harm,
                                 guint64 min_speed, guint64 max_speed);

typedef enum {
    VMR_CONTROLLER_PHASE_COPYING,   /* the copy runs at the speed decided */
    VMR_CONTROLLER_PHASE_MEASURING, /* the copy is paused: the next sample is the baseline */
} VmrControllerPhase;

/* what the controller keeps between samples; one per copy */
typedef struct {
    VmrControllerPhase phase;
    guint64 knee_speed;      /* bytes/s at which harm last crossed the target, 0 = none */
    gint64 knee_time_us;     /* when */
    gboolean over_target;    /* the last sample's harm was over the target */
    guint64 resume_speed;    /* while measuring: the speed to go on at, 0 = unlimited */
    gint64 baseline_time_us; /* when the baseline was measured */
    gint64 measure_time_us;  /* when a change in load last asked for a measure */
} VmrControllerState;

/* a fresh controller whose baseline was measured at @baseline_time_us */
void vmr_controller_state_init (VmrControllerState *state, gint64 baseline_time_us);

typedef struct {
    VmrLoadSample load;     /* the guest on this disk over the last sample interval */
    VmrLoadSample baseline; /* the guest without the copy (time_us unused) */
    guint64 speed;          /* the copy's cap now, bytes/s, 0 = unlimited */
    guint64 copy_rate;      /* bytes/s the copy moved in the interval, 0 = unknown */
    guint n_copies;         /* copies on the disk's I/O thread, this one included (0 = 1) */
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
 * @out->reason is always set (free it with vmr_controller_decision_clear();
 * @out may be reused). With measure-baseline the caller pauses the copy for
 * one sample interval and passes that sample next; the decision after it is
 * baseline-taken, whose @out->baseline the caller passes as the baseline
 * from then on.
 */
void vmr_controller_step (const VmrControllerConfig *config, VmrControllerState *state,
                          const VmrControllerInput *input, VmrControllerDecision *out);

/* the harm of @input's load against its baseline, >= 0; 0 when neither can tell */
gdouble vmr_controller_harm (const VmrControllerInput *input);

const gchar *vmr_controller_kind_to_string (VmrControllerKind kind);

G_END_DECLS
