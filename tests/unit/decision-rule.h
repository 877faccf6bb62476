/*
 * What the decision tests share: the rules they decide with, built from the
 * few fields a test names (the built-in rule with one sample a second, and
 * these fields); the guest's load, written as a short text; and the run of a
 * table of cases.
 */
#pragma once

#include "decision.h"

G_BEGIN_DECLS

#define SECOND G_USEC_PER_SEC
#define NOW    (G_GINT64_CONSTANT (100000) * SECOND)
#define HOURS  3600

/* the parts of a rule the decision reads; the others keep their built-in value */
typedef struct {
    guint64 iops_throttle;
    guint64 iops_delay;
    guint resume_below; /* 0: 80 */
    gint hold_s;        /* < 0: 0 s; 0: 30 s */
    gint window_start;  /* seconds of day */
    gint window_end;    /* == window_start: no window */
    gint max_delay_s;
    VmrOnMaxDelay on_max_delay;
    gint latency_throttle_ms;
    gint latency_delay_ms;
} RuleSpec;

/* a guest doing ~1400 IOPS, slowed above 2000, held back above 4000 */
#define BUSY_RULE .iops_throttle = 2000, .iops_delay = 4000
/* its I/O taking ~2 ms: slowed above 10 ms, held back above 20 ms */
#define SLOW_RULE .latency_throttle_ms = 10, .latency_delay_ms = 20
#define NIGHT     .window_start = 23 * HOURS, .window_end = 2 * HOURS

/* the rule @spec describes; free with vmr_policy_rule_free() (g_autoptr) */
VmrPolicyRule *vmr_test_rule_new (const RuleSpec *spec);

/*
 * The samples @load describes, of VmrLoadSample, oldest first: one per
 * second, the last one ending at NOW. Each word is "IOPS", "IOPS/LATENCY"
 * (latency in milliseconds, 0.5 when left out; "0/0" is an idle second),
 * and "*COUNT" after it repeats it: "4500/25 1000*30". NULL is no sample.
 */
GArray *vmr_test_samples_new (const gchar *load);

typedef struct {
    const gchar *name;
    RuleSpec rule;
    const gchar *load; /* see vmr_test_samples_new(); NULL = no sample yet */
    VmrPolicyPhase phase;
    gint held_s;
    gint clock; /* seconds of day */
    VmrPolicyAction action;
    const gchar *reason; /* a part of the reason */
} DecideCase;

/* decides each case at NOW and reports every one whose action or reason differs */
void vmr_test_decide_cases (const DecideCase *cases, gsize n_cases);

G_END_DECLS
