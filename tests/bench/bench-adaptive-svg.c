/*
 * bench-adaptive's picture: the report of one adaptive copy (its speed
 * series and the guest's IOPS and latency, drawn by `virt-mirror report
 * --svg`'s code) above the (harm, time) points of its round's static
 * copies, the frontier it is judged against, and its own point.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-adaptive.h"

#include <stdio.h>
#include <string.h>

#include "cli-report-svg.h"

#define FRONTIER_WIDTH  900.0
#define FRONTIER_HEIGHT 360.0
#define PLOT_LEFT       80.0
#define PLOT_RIGHT      860.0
#define PLOT_TOP        50.0
#define PLOT_BOTTOM     300.0

/* the width and height of the document @svg, from its root element; FALSE when it has none */
static gboolean
svg_size (const gchar *svg, gdouble *out_width, gdouble *out_height)
{
    const gchar *root = strstr (svg, "<svg ");
    const gchar *width = root != NULL ? strstr (root, " width=\"") : NULL;
    const gchar *height = root != NULL ? strstr (root, " height=\"") : NULL;

    return width != NULL && height != NULL && sscanf (width, " width=\"%lf\"", out_width) == 1
           && sscanf (height, " height=\"%lf\"", out_height) == 1;
}

/* one point: a circle for a static copy, a square for the adaptive one, and its label */
static void
write_point (GString *svg, const JobResult *result, gdouble x, gdouble y)
{
    gboolean adaptive = result->kind == JOB_ADAPTIVE;
    g_autofree gchar *label = result->kind == JOB_CAP ? g_strdup_printf ("cap %uM", result->cap_mib)
                              : adaptive
                                  ? g_strdup ("adaptive")
                                  : g_strdup_printf ("unlimited (harm %.2f)", job_harm (result));

    if (adaptive)
        g_string_append_printf (svg,
                                "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" "
                                "fill=\"#d62728\" data-harm=\"%.4f\" data-time=\"%.2f\"/>\n",
                                x - 5, y - 5, job_harm (result), result->migration_s);
    else
        g_string_append_printf (svg,
                                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#1f77b4\" "
                                "data-harm=\"%.4f\" data-time=\"%.2f\"/>\n",
                                x, y, job_harm (result), result->migration_s);
    g_string_append_printf (svg, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%s</text>\n", x + 8,
                            y - 6, label);
}

/* the axes' ticks and titles */
static void
write_axes (GString *svg, const VmrSvgAxis *harm, const VmrSvgAxis *time)
{
    for (guint i = 0; i <= harm->n_steps; i++) {
        gdouble value = harm->step * i;
        gdouble x = vmr_svg_axis_place (value, harm->top, PLOT_LEFT, PLOT_RIGHT);

        g_string_append_printf (svg,
                                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                                "class=\"grid\"/>\n<text x=\"%.1f\" y=\"%.0f\" class=\"tick\" "
                                "text-anchor=\"middle\">%g</text>\n",
                                x, PLOT_TOP, x, PLOT_BOTTOM, x, PLOT_BOTTOM + 16, value);
    }
    for (guint i = 0; i <= time->n_steps; i++) {
        gdouble value = time->step * i;
        gdouble y = vmr_svg_axis_place (value, time->top, PLOT_BOTTOM, PLOT_TOP);

        g_string_append_printf (svg,
                                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                                "class=\"grid\"/>\n<text x=\"%.0f\" y=\"%.1f\" class=\"tick\" "
                                "text-anchor=\"end\">%g</text>\n",
                                PLOT_LEFT, y, PLOT_RIGHT, y, PLOT_LEFT - 6, y + 4, value);
    }
    g_string_append_printf (svg,
                            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                            "class=\"frame\"/>\n<text x=\"%.0f\" y=\"%.0f\" class=\"tick\" "
                            "text-anchor=\"middle\">harm (the larger of fio's and QEMU's "
                            "views)</text>\n<text x=\"20\" y=\"%.0f\" class=\"tick\" "
                            "transform=\"rotate(-90 20 %.0f)\" text-anchor=\"middle\">time "
                            "(s)</text>\n",
                            PLOT_LEFT, PLOT_TOP, PLOT_RIGHT - PLOT_LEFT, PLOT_BOTTOM - PLOT_TOP,
                            (PLOT_LEFT + PLOT_RIGHT) / 2, PLOT_BOTTOM + 36,
                            (PLOT_TOP + PLOT_BOTTOM) / 2, (PLOT_TOP + PLOT_BOTTOM) / 2);
}

/* the panel of @round's points, X and X + noise as dashed lines */
static void
write_frontier (GString *svg, const WorkloadRound *round, const AdaptiveYardstick *yardstick)
{
    gdouble noise = workload_round_noise (round);
    gdouble max_harm = yardstick->target + noise, max_time = 0;
    VmrSvgAxis harm, time;

    /* the unlimited copy's harm can be ten times the others': it goes at the right edge */
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (result->kind != JOB_UNLIMITED)
            max_harm = MAX (max_harm, job_harm (result));
        max_time = MAX (max_time, result->migration_s);
    }
    max_harm *= 1.2;
    vmr_svg_axis_for (max_harm, 10, &harm);
    vmr_svg_axis_for (max_time, 6, &time);
    g_string_append_printf (svg,
                            "<text x=\"%.0f\" y=\"24\" class=\"panel-title\">%s on %s, round "
                            "%u: static copies (circles), adaptive (square), X = %.0f%% and "
                            "X + noise %.3f (dashed)</text>\n",
                            PLOT_LEFT, round->workload->name, yardstick->storage, round->round,
                            yardstick->target * 100, noise);
    write_axes (svg, &harm, &time);
    for (guint i = 0; i < 2; i++) {
        gdouble x = vmr_svg_axis_place (yardstick->target + (i == 1 ? noise : 0), harm.top,
                                        PLOT_LEFT, PLOT_RIGHT);

        g_string_append_printf (svg,
                                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                                "stroke=\"#2ca02c\" stroke-dasharray=\"%s\"/>\n",
                                x, PLOT_TOP, x, PLOT_BOTTOM, i == 0 ? "6,4" : "2,3");
    }
    for (guint i = 0; i < round->jobs->len; i++) {
        const JobResult *result = g_ptr_array_index (round->jobs, i);

        if (result->kind != JOB_ADAPTIVE && !job_static_converged (result))
            continue;
        write_point (
            svg, result,
            vmr_svg_axis_place (MIN (job_harm (result), harm.top), harm.top, PLOT_LEFT, PLOT_RIGHT),
            vmr_svg_axis_place (result->migration_s, time.top, PLOT_BOTTOM, PLOT_TOP));
    }
}

gchar *
adaptive_frontier_svg (const WorkloadRound *round, const gchar *report_svg,
                       const AdaptiveYardstick *yardstick)
{
    GString *svg = g_string_new (NULL);
    const gchar *root = report_svg != NULL ? strstr (report_svg, "<svg ") : NULL;
    gdouble report_width = 0, report_height = 0;
    gdouble width;

    if (root == NULL || !svg_size (root, &report_width, &report_height))
        root = NULL;
    width = MAX (report_width, FRONTIER_WIDTH);
    g_string_append_printf (svg,
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
                            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                            width, report_height + FRONTIER_HEIGHT, width,
                            report_height + FRONTIER_HEIGHT);
    /* the report's own document, nested as it is: its styles and metadata stay its own */
    if (root != NULL)
        g_string_append (svg, root);
    g_string_append_printf (svg, "<g transform=\"translate(0 %.0f)\">\n", report_height);
    g_string_append (svg, "<style>text { font-family: sans-serif; fill: #222; } "
                          ".panel-title { font-size: 13px; font-weight: bold; } "
                          ".tick { font-size: 11px; } "
                          ".grid { stroke: #e0e0e0; stroke-width: 1; } "
                          ".frame { fill: none; stroke: #888; stroke-width: 1; }</style>\n");
    write_frontier (svg, round, yardstick);
    g_string_append (svg, "</g>\n</svg>\n");
    return g_string_free (svg, FALSE);
}
