/*
 * The picture of a job's timeline: four panels sharing one time axis (copy
 * rate and speed limit, backlog and bytes copied, the guest's IOPS, the
 * guest's latency) under the policy's decisions as shaded bands, written as
 * SVG text. Pure: the layout math and the writer, no I/O.
 *
 * Each drawn series carries its values as they came from the daemon in
 * data-series / data-values attributes, and the whole reply is kept in a
 * <metadata> element, so that a reader can check the picture against the job.
 */
#pragma once

#include <glib.h>

#include "cli-report-data.h"

G_BEGIN_DECLS

/* the ticks of an axis from 0: 0, step, 2 step, ... top */
typedef struct {
    gdouble step; /* 1, 2 or 5 times a power of ten */
    gdouble top;  /* a multiple of step, >= the largest value */
    guint n_steps;
} VmrSvgAxis;

/*
 * The axis for values from 0 to @max with at most @max_steps steps (at
 * least 1): the smallest 1-2-5 step that fits. An axis of 0 to 1 when @max
 * is not above 0.
 */
void vmr_svg_axis_for (gdouble max, guint max_steps, VmrSvgAxis *out);

/*
 * The time axis for @seconds with at most @max_steps steps: the smallest of
 * 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, 1 day (and
 * 1-2-5 days past that) that fits; 0 to 1 s when @seconds is not above 0.
 */
void vmr_svg_time_axis_for (gdouble seconds, guint max_steps, VmrSvgAxis *out);

/* where @value of an axis from 0 to @top falls between @from and @to (pixels) */
gdouble vmr_svg_axis_place (gdouble value, gdouble top, gdouble from, gdouble to);

/* the SVG document of @report; free with g_free() */
gchar *vmr_report_to_svg (const VmrReport *report);

G_END_DECLS
