/*
 * The rules the decision tests decide with, built from the few fields a test
 * names: the built-in rule with one sample a second, and these fields.
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
} RuleSpec;

/* a guest doing ~1400 IOPS, slowed above 2000, held back above 4000 */
#define BUSY_RULE .iops_throttle = 2000, .iops_delay = 4000
#define NIGHT     .window_start = 23 * HOURS, .window_end = 2 * HOURS

/* the rule @spec describes; free with vmr_policy_rule_free() (g_autoptr) */
VmrPolicyRule *vmr_test_rule_new (const RuleSpec *spec);

G_END_DECLS
