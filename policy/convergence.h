/*
 * Whether a running copy converges: a guest that writes faster than the copy
 * moves its data keeps the mirror's backlog (len - offset) from shrinking,
 * and the copy never gets into sync. A pure function of the backlog's recent
 * samples; no I/O, no clock reads.
 *
 * The trend is the least-squares slope of the backlog over the last
 * converge-after. A backlog does not converge unless it shrinks by more than
 * its noise: the slope must be under zero by two of its standard errors (a
 * one-sided test at about 97.5% for a line through noisy samples), so that a
 * backlog that wobbles around a level is seen as steady, not as shrinking in
 * one half of the windows.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* one reading of a running copy */
typedef struct {
    gint64 time_us;        /* monotonic */
    guint64 backlog_bytes; /* the mirror's len - offset: what is left to copy */
} VmrBacklogSample;

typedef enum {
    VMR_CONVERGENCE_UNKNOWN,   /* the samples do not span converge-after yet */
    VMR_CONVERGENCE_SHRINKING, /* the backlog shrinks beyond its noise */
    VMR_CONVERGENCE_STALLED,   /* steady or growing over converge-after */
} VmrConvergence;

/*
 * The trend of the backlog over the last @converge_after_us of @samples
 * (oldest first, times increasing). UNKNOWN unless a sample is at least
 * @converge_after_us older than the newest and at least three fall in the
 * window. @out_slope (may be NULL) gets the slope in bytes/s, < 0 shrinking,
 * 0 when UNKNOWN.
 */
VmrConvergence vmr_convergence_check (const VmrBacklogSample *samples, guint n_samples,
                                      gint64 converge_after_us, gdouble *out_slope);

const gchar *vmr_convergence_to_string (VmrConvergence convergence);

G_END_DECLS
