/*
 * The policy's decision for one job at one moment: a pure function of the
 * rule, the guest's recent load, the job's state and the time. No I/O, no
 * clock reads; every input is an argument, so that tables can test it.
 */
#pragma once

#include <glib.h>

#include "policy.h"

G_BEGIN_DECLS

/* the guest's load over one sample interval */
typedef struct {
    gint64 time_us;     /* monotonic time at the end of the interval */
    gdouble iops;       /* guest reads + writes per second */
    gdouble latency_us; /* mean guest I/O latency, 0 when there was no I/O */
    gint64 interval_us; /* the interval's length: since the reading before */
} VmrLoadSample;

/* where the policy stands with a job */
typedef enum {
    VMR_POLICY_PHASE_QUEUED,    /* not started, never held back yet */
    VMR_POLICY_PHASE_DELAYED,   /* not started, held back */
    VMR_POLICY_PHASE_RUNNING,   /* copying at full speed */
    VMR_POLICY_PHASE_THROTTLED, /* copying at throttle-speed */
    VMR_POLICY_PHASE_PAUSED,    /* paused by the policy */
    VMR_POLICY_PHASE_RELEASED,  /* max-delay passed with proceed: the policy lets it run */
} VmrPolicyPhase;

typedef enum {
    VMR_POLICY_ACTION_KEEP,             /* nothing changes */
    VMR_POLICY_ACTION_START,            /* start the copy at full speed */
    VMR_POLICY_ACTION_START_THROTTLED,  /* start it at throttle-speed */
    VMR_POLICY_ACTION_DELAY,            /* do not start yet */
    VMR_POLICY_ACTION_PAUSE,            /* pause the running copy */
    VMR_POLICY_ACTION_RESUME,           /* resume at full speed */
    VMR_POLICY_ACTION_RESUME_THROTTLED, /* resume at throttle-speed */
    VMR_POLICY_ACTION_THROTTLE,         /* slow the copy to throttle-speed */
    VMR_POLICY_ACTION_UNTHROTTLE,       /* back to full speed */
    VMR_POLICY_ACTION_PROCEED,          /* max-delay passed: run regardless of load and window */
    VMR_POLICY_ACTION_FAIL,             /* max-delay passed: give up */
} VmrPolicyAction;

typedef struct {
    VmrPolicyAction action;
    gchar *reason; /* one line for logs and `virt-mirror job` */
} VmrPolicyDecision;

void vmr_policy_decision_clear (VmrPolicyDecision *decision);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VmrPolicyDecision, vmr_policy_decision_clear)

/*
 * Decides what to do with a job in @phase; @out->reason is always set (free
 * it with vmr_policy_decision_clear(); @out may be reused).
 * @samples: the guest's recent load, oldest first (may be empty);
 * @held_us: how long the policy has held this job back so far (delayed or
 *   paused), for max-delay, which applies only when the job would still be
 *   held back: a job the load and window let go starts or resumes as usual;
 * @now_us: monotonic time, on the same clock as the samples;
 * @seconds_of_day: local wall-clock time of day, for windows.
 * docs/policy.md describes the rules in full.
 */
void vmr_policy_decide (const VmrPolicyRule *rule, const VmrLoadSample *samples, guint n_samples,
                        VmrPolicyPhase phase, gint64 held_us, gint64 now_us, gint seconds_of_day,
                        VmrPolicyDecision *out);

const gchar *vmr_policy_action_to_string (VmrPolicyAction action);
const gchar *vmr_policy_phase_to_string (VmrPolicyPhase phase);

G_END_DECLS
