#define G_LOG_DOMAIN "vmr-cli"

#include "cli-report-svg.h"

#include <math.h>

#include "cli-json.h"
#include "units.h"

/* the page, in pixels */
#define WIDTH          960.0
#define PLOT_LEFT      90.0
#define PLOT_RIGHT     (WIDTH - 30.0)
#define TITLE_HEIGHT   80.0
#define PANEL_HEIGHT   130.0
#define PANEL_GAP      40.0 /* above each panel: its name */
#define LEGEND_LINE    18.0
#define REASON_MAX     110 /* characters of a reason in the legend */
#define BAND_LABEL_MIN 60  /* pixels a band needs for its name on it */
#define PATH_MAX_SHOWN 60  /* characters of a path in the heading */

void
vmr_svg_axis_for (gdouble max, guint max_steps, VmrSvgAxis *out)
{
    static const gdouble mantissas[] = { 1, 2, 5 };
    gdouble magnitude;

    max_steps = MAX (max_steps, 1);
    if (!(max > 0) || !isfinite (max)) {
        *out = (VmrSvgAxis){ 1.0 / max_steps, 1, max_steps };
        return;
    }
    magnitude = pow (10, floor (log10 (max / max_steps)));
    for (guint round = 0;; round++) {
        for (guint i = 0; i < G_N_ELEMENTS (mantissas); i++) {
            gdouble step = mantissas[i] * magnitude * pow (10, round);
            gdouble n = ceil (max / step - 1e-9);

            if (n <= max_steps) {
                *out = (VmrSvgAxis){ step, n * step, (guint) n };
                return;
            }
        }
    }
}

void
vmr_svg_time_axis_for (gdouble seconds, guint max_steps, VmrSvgAxis *out)
{
    /* steps a clock reads well: seconds, minutes, hours */
    static const gdouble steps[] = { 1,   2,   5,    10,   15,   30,    60,    120,   300,
                                     600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400 };

    max_steps = MAX (max_steps, 1);
    for (guint i = 0; seconds > 0 && isfinite (seconds) && i < G_N_ELEMENTS (steps); i++) {
        gdouble n = ceil (seconds / steps[i] - 1e-9);

        if (n <= max_steps) {
            *out = (VmrSvgAxis){ steps[i], MAX (n, 1) * steps[i], (guint) MAX (n, 1) };
            return;
        }
    }
    if (seconds > 0 && isfinite (seconds)) {
        /* days, in 1-2-5 steps of them */
        vmr_svg_axis_for (seconds / 86400, max_steps, out);
        out->step *= 86400;
        out->top *= 86400;
        return;
    }
    *out = (VmrSvgAxis){ 1, 1, 1 };
}

gdouble
vmr_svg_axis_place (gdouble value, gdouble top, gdouble from, gdouble to)
{
    if (!(top > 0))
        return from;
    return from + (to - from) * CLAMP (value / top, 0, 1);
}

/* one line of a panel: a member of VmrReportPoint, drawn in a colour */
typedef struct {
    const gchar *name;  /* data-series, and the key of the daemon's points */
    const gchar *label; /* in the legend */
    gsize offset;       /* of its gdouble in VmrReportPoint */
    const gchar *colour;
    gboolean dashed;
    gboolean gaps_at_zero; /* 0 means none (an unlimited speed): no line there */
} SeriesSpec;

typedef struct {
    const gchar *title;
    gdouble divisor; /* from the daemon's unit to the axis' */
    SeriesSpec series[2];
    const gchar *big_title; /* in a unit 1024 times larger, past 10240 of the first; or NULL */
} PanelSpec;

#define POINT_MEMBER(m) G_STRUCT_OFFSET (VmrReportPoint, m)

/* clang-format off */
static const PanelSpec panels[] = {
    { "Copy rate (MiB/s)", 1024.0 * 1024.0,
      { { "rate", "copy rate", POINT_MEMBER (rate), "#1f77b4", FALSE, FALSE },
        { "speed", "speed limit", POINT_MEMBER (speed), "#d62728", TRUE, TRUE } },
      "Copy rate (GiB/s)" },
    { "Data (MiB)", 1024.0 * 1024.0,
      { { "backlog", "backlog", POINT_MEMBER (backlog), "#9467bd", FALSE, FALSE },
        { "processed", "copied", POINT_MEMBER (processed), "#7f7f7f", TRUE, FALSE } },
      "Data (GiB)" },
    { "Guest IOPS", 1.0,
      { { "iops", "guest IOPS", POINT_MEMBER (iops), "#2ca02c", FALSE, FALSE } } },
    { "Guest latency (ms)", 1000.0,
      { { "latency", "guest latency", POINT_MEMBER (latency_us), "#ff7f0e", FALSE, FALSE } } },
};

/* the colour of each band of the policy's decisions */
static const struct {
    const gchar *band;
    const gchar *colour;
    const gchar *meaning;
} band_colours[] = {
    { "delay", "#9e9e9e", "not started: the policy holds it back" },
    { "wait", "#c5b0d5", "not started: a limit on copies at once" },
    { "pause", "#ff9896", "paused" },
    { "throttle", "#ffbb78", "throttled to throttle-speed" },
    { "adaptive", "#aec7e8", "adaptive speed" },
    { "back-off", "#f7b6d2", "adaptive speed backing off" },
    { "baseline", "#dbdb8d", "paused to measure the guest alone" },
    { "converge", "#98df8a", "made to converge" },
};
/* clang-format on */

static const gchar *
band_colour (const gchar *band)
{
    for (guint i = 0; i < G_N_ELEMENTS (band_colours); i++)
        if (g_strcmp0 (band_colours[i].band, band) == 0)
            return band_colours[i].colour;
    return "#d9d9d9";
}

static gdouble
value_of (const VmrReportPoint *point, const SeriesSpec *spec)
{
    return G_STRUCT_MEMBER (gdouble, point, spec->offset);
}

static gdouble
panel_top (guint index)
{
    return TITLE_HEIGHT + PANEL_GAP + index * (PANEL_HEIGHT + PANEL_GAP);
}

/* a number for an attribute: C locale, as exact as the double */
static void
append_number (GString *svg, gdouble value)
{
    gchar buffer[G_ASCII_DTOSTR_BUF_SIZE];

    g_string_append (svg, g_ascii_dtostr (buffer, sizeof buffer, value));
}

/* a pixel position, to a tenth */
static void
append_pixel (GString *svg, gdouble value)
{
    gchar buffer[G_ASCII_DTOSTR_BUF_SIZE];

    g_string_append (svg, g_ascii_formatd (buffer, sizeof buffer, "%.1f", value));
}

static void
write_series (GString *svg, const VmrReport *report, const SeriesSpec *spec, gdouble top,
              gdouble divisor, const VmrSvgAxis *x, gdouble y0)
{
    gboolean pen_down = FALSE;

    g_string_append_printf (svg, "<path class=\"series\" data-series=\"%s\" data-values=\"",
                            spec->name);
    for (guint i = 0; i < report->points->len; i++) {
        if (i > 0)
            g_string_append_c (svg, ' ');
        append_number (svg, value_of (&g_array_index (report->points, VmrReportPoint, i), spec));
    }
    g_string_append_printf (svg, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s d=\"",
                            spec->colour, spec->dashed ? " stroke-dasharray=\"6 3\"" : "");
    for (guint i = 0; i < report->points->len; i++) {
        const VmrReportPoint *p = &g_array_index (report->points, VmrReportPoint, i);
        gdouble value = value_of (p, spec);

        if (spec->gaps_at_zero && value <= 0) {
            pen_down = FALSE;
            continue;
        }
        g_string_append (svg, pen_down ? " L" : " M");
        append_pixel (svg, vmr_svg_axis_place (p->t, x->top, PLOT_LEFT, PLOT_RIGHT));
        g_string_append_c (svg, ',');
        append_pixel (svg, vmr_svg_axis_place (value / divisor, top, y0 + PANEL_HEIGHT, y0));
        pen_down = TRUE;
    }
    g_string_append (svg, "\"/>\n");
}

static void
write_panel (GString *svg, const VmrReport *report, guint index, const VmrSvgAxis *x)
{
    const PanelSpec *panel = &panels[index];
    gdouble y0 = panel_top (index);
    gdouble max = 0;
    gdouble divisor = panel->divisor;
    const gchar *title = panel->title;
    VmrSvgAxis y;

    for (guint s = 0; s < G_N_ELEMENTS (panel->series) && panel->series[s].name != NULL; s++)
        for (guint i = 0; i < report->points->len; i++)
            max = MAX (max, value_of (&g_array_index (report->points, VmrReportPoint, i),
                                      &panel->series[s])
                                / divisor);
    /* a copy of hundreds of GiB reads better in GiB */
    if (panel->big_title != NULL && max >= 10240) {
        divisor *= 1024;
        max /= 1024;
        title = panel->big_title;
    }
    vmr_svg_axis_for (max, 4, &y);
    g_string_append_printf (svg, "<g class=\"panel\" id=\"panel-%u\">\n", index);
    g_string_append_printf (svg, "<text x=\"%.0f\" y=\"%.0f\" class=\"panel-title\">%s</text>\n",
                            PLOT_LEFT, y0 - 8, title);
    for (guint k = 0; k <= y.n_steps; k++) {
        gdouble value = k * y.step;
        gdouble py = vmr_svg_axis_place (value, y.top, y0 + PANEL_HEIGHT, y0);
        gchar label[G_ASCII_DTOSTR_BUF_SIZE];

        g_string_append_printf (svg,
                                "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" "
                                "class=\"grid\"/><text x=\"%.0f\" y=\"%.1f\" class=\"tick\" "
                                "text-anchor=\"end\">%s</text>\n",
                                PLOT_LEFT, PLOT_RIGHT, py, py, PLOT_LEFT - 6, py + 4,
                                g_ascii_formatd (label, sizeof label, "%g", value));
    }
    g_string_append_printf (svg,
                            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                            "class=\"frame\"/>\n",
                            PLOT_LEFT, y0, PLOT_RIGHT - PLOT_LEFT, PANEL_HEIGHT);
    for (guint s = 0; s < G_N_ELEMENTS (panel->series) && panel->series[s].name != NULL; s++)
        write_series (svg, report, &panel->series[s], y.top, divisor, x, y0);
    g_string_append (svg, "</g>\n");
}

/* the bands behind every panel, each with a <title> naming its decision and reason */
static void
write_bands (GString *svg, const VmrReport *report, const VmrSvgAxis *x)
{
    gdouble top = panel_top (0);
    gdouble bottom = panel_top (G_N_ELEMENTS (panels) - 1) + PANEL_HEIGHT;

    for (guint i = 0; i < report->bands->len; i++) {
        const VmrReportBand *band = &g_array_index (report->bands, VmrReportBand, i);
        gdouble left = vmr_svg_axis_place (band->start, x->top, PLOT_LEFT, PLOT_RIGHT);
        gdouble right = vmr_svg_axis_place (band->end, x->top, PLOT_LEFT, PLOT_RIGHT);
        g_autofree gchar *from = vmr_units_format_duration ((gint64) (band->start * 1e6));
        g_autofree gchar *to = vmr_units_format_duration ((gint64) (band->end * 1e6));
        g_autofree gchar *title = g_markup_printf_escaped (
            "%s from %s to %s%s%s", band->action, from, to, band->reason != NULL ? ": " : "",
            band->reason != NULL ? band->reason : "");

        g_string_append_printf (svg,
                                "<rect class=\"band\" data-action=\"%s\" x=\"%.1f\" y=\"%.0f\" "
                                "width=\"%.1f\" height=\"%.0f\" fill=\"%s\" fill-opacity=\"0.45\">"
                                "<title>%s</title></rect>\n",
                                band->action, left, top - PANEL_GAP + 22, MAX (right - left, 1.5),
                                bottom - top + PANEL_GAP - 22, band_colour (band->action), title);
        /* named on the picture too where there is room */
        if (right - left >= BAND_LABEL_MIN)
            g_string_append_printf (svg,
                                    "<text x=\"%.1f\" y=\"%.0f\" class=\"band-label\">%s</text>\n",
                                    left + 4, top + 14, band->action);
    }
}

static void
write_time_axis (GString *svg, const VmrSvgAxis *x)
{
    gdouble y = panel_top (G_N_ELEMENTS (panels) - 1) + PANEL_HEIGHT;

    for (guint k = 0; k <= x->n_steps; k++) {
        gdouble px = vmr_svg_axis_place (k * x->step, x->top, PLOT_LEFT, PLOT_RIGHT);
        g_autofree gchar *label = vmr_units_format_duration ((gint64) (k * x->step * 1e6));

        g_string_append_printf (svg,
                                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" "
                                "class=\"grid\"/><text x=\"%.1f\" y=\"%.0f\" class=\"tick\" "
                                "text-anchor=\"middle\">%s</text>\n",
                                px, px, panel_top (0), y + 4, px, y + 18, label);
    }
    g_string_append_printf (svg,
                            "<text x=\"%.0f\" y=\"%.0f\" class=\"tick\" text-anchor=\"end\">"
                            "time since the first sample</text>\n",
                            PLOT_RIGHT, y + 34);
}

/* what each line and each band is; returns the height it took */
static gdouble
write_legend (GString *svg, const VmrReport *report, gdouble y)
{
    gdouble x = PLOT_LEFT;
    gdouble start = y;

    for (guint p = 0; p < G_N_ELEMENTS (panels); p++)
        for (guint s = 0; s < G_N_ELEMENTS (panels[p].series) && panels[p].series[s].name; s++) {
            const SeriesSpec *spec = &panels[p].series[s];

            g_string_append_printf (svg,
                                    "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" "
                                    "stroke=\"%s\" stroke-width=\"2\"%s/><text x=\"%.0f\" "
                                    "y=\"%.0f\" class=\"legend\">%s</text>\n",
                                    x, x + 20, y - 4, y - 4, spec->colour,
                                    spec->dashed ? " stroke-dasharray=\"6 3\"" : "", x + 26, y,
                                    spec->label);
            x += (PLOT_RIGHT - PLOT_LEFT) / 6;
        }
    y += LEGEND_LINE + 4;
    for (guint i = 0; i < report->bands->len; i++) {
        const VmrReportBand *band = &g_array_index (report->bands, VmrReportBand, i);
        g_autofree gchar *reason = NULL;
        g_autofree gchar *text = NULL;
        g_autofree gchar *from = vmr_units_format_duration ((gint64) (band->start * 1e6));
        g_autofree gchar *to = vmr_units_format_duration ((gint64) (band->end * 1e6));
        const gchar *meaning = "";

        for (guint c = 0; c < G_N_ELEMENTS (band_colours); c++)
            if (g_strcmp0 (band_colours[c].band, band->action) == 0)
                meaning = band_colours[c].meaning;
        if (band->reason != NULL && g_utf8_strlen (band->reason, -1) > REASON_MAX) {
            g_autofree gchar *cut = g_utf8_substring (band->reason, 0, REASON_MAX);

            reason = g_strconcat (cut, "…", NULL);
        } else {
            reason = g_strdup (band->reason != NULL ? band->reason : meaning);
        }
        text = g_markup_printf_escaped ("%s %s–%s: %s", band->action, from, to, reason);
        g_string_append_printf (svg,
                                "<rect x=\"%.0f\" y=\"%.0f\" width=\"20\" height=\"12\" "
                                "fill=\"%s\" fill-opacity=\"0.45\"/><text x=\"%.0f\" y=\"%.0f\" "
                                "class=\"legend\">%s</text>\n",
                                PLOT_LEFT, y - 11, band_colour (band->action), PLOT_LEFT + 26, y,
                                text);
        y += LEGEND_LINE;
    }
    return y - start;
}

/* @path in at most @max characters: its middle left out when it is longer */
static gchar *
shorten_middle (const gchar *path, glong max)
{
    glong length = g_utf8_strlen (path, -1);
    g_autofree gchar *head = NULL;
    g_autofree gchar *tail = NULL;

    if (length <= max)
        return g_strdup (path);
    head = g_utf8_substring (path, 0, max / 2 - 1);
    tail = g_utf8_substring (path, length - (max - max / 2), length);
    return g_strconcat (head, "…", tail, NULL);
}

static void
write_title (GString *svg, const VmrReport *report)
{
    const VmrCliJob *job = report->job;
    const gchar *source = job->source != NULL ? job->source : "?";
    const gchar *destination = job->destination != NULL ? job->destination : "?";
    g_autoptr (GDateTime) start = g_date_time_new_from_unix_utc (report->start_us / G_USEC_PER_SEC);
    g_autofree gchar *when = start != NULL ? g_date_time_format (start, "%F %T UTC") : NULL;
    g_autofree gchar *duration = vmr_units_format_duration ((gint64) (report->duration * 1e6));
    g_autofree gchar *copied = vmr_units_format_bytes (job->done);
    g_autofree gchar *short_source = shorten_middle (source, PATH_MAX_SHOWN);
    g_autofree gchar *short_destination = shorten_middle (destination, PATH_MAX_SHOWN);
    /* the whole of it in the document's title; on the page, paths that fit */
    g_autofree gchar *title = g_markup_printf_escaped (
        "%s: %s of %s, %s → %s", job->id, job->disk != NULL ? job->disk : "?",
        job->domain != NULL ? job->domain : "?", source, destination);
    g_autofree gchar *heading
        = g_markup_printf_escaped ("%s: %s of %s", job->id, job->disk != NULL ? job->disk : "?",
                                   job->domain != NULL ? job->domain : "?");
    g_autofree gchar *paths = g_markup_printf_escaped ("%s → %s", short_source, short_destination);
    g_autofree gchar *line
        = g_markup_printf_escaped ("%s, %s from %s, %s copied, %u samples", job->state, duration,
                                   when != NULL ? when : "?", copied, report->points->len);

    g_string_append_printf (svg, "<title>%s</title>\n", title);
    g_string_append_printf (svg, "<text x=\"%.0f\" y=\"26\" class=\"title\">%s</text>\n", PLOT_LEFT,
                            heading);
    g_string_append_printf (svg, "<text x=\"%.0f\" y=\"46\" class=\"subtitle\">%s</text>\n",
                            PLOT_LEFT, paths);
    g_string_append_printf (svg, "<text x=\"%.0f\" y=\"64\" class=\"subtitle\">%s</text>\n",
                            PLOT_LEFT, line);
}

gchar *
vmr_report_to_svg (const VmrReport *report)
{
    GString *svg = g_string_new (NULL);
    gdouble legend_top = panel_top (G_N_ELEMENTS (panels) - 1) + PANEL_HEIGHT + 60;
    g_autoptr (GString) legend = g_string_new (NULL);
    g_autofree gchar *reply = vmr_cli_json_to_string (report->reply, FALSE);
    g_autofree gchar *reply_escaped = g_markup_escape_text (reply, -1);
    gdouble legend_height = write_legend (legend, report, legend_top);
    g_autofree gchar *id = g_markup_escape_text (report->job->id, -1);
    VmrSvgAxis x;

    vmr_svg_time_axis_for (report->duration, 10, &x);
    g_string_append_printf (svg,
                            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" data-job=\"%s\">\n",
                            WIDTH, legend_top + legend_height + 10, WIDTH,
                            legend_top + legend_height + 10, id);
    g_string_append (svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    write_title (svg, report);
    g_string_append_printf (svg, "<metadata id=\"vmr-series\">%s</metadata>\n", reply_escaped);
    g_string_append (
        svg, "<style>text { font-family: sans-serif; fill: #222; } "
             ".title { font-size: 17px; font-weight: bold; } .subtitle { font-size: 13px; } "
             ".panel-title { font-size: 13px; font-weight: bold; } "
             ".tick, .legend { font-size: 11px; } "
             ".band-label { font-size: 11px; font-style: italic; fill: #555; } "
             ".grid { stroke: #e0e0e0; stroke-width: 1; } "
             ".frame { fill: none; stroke: #888; stroke-width: 1; }</style>\n");
    write_bands (svg, report, &x);
    for (guint i = 0; i < G_N_ELEMENTS (panels); i++)
        write_panel (svg, report, i, &x);
    write_time_axis (svg, &x);
    g_string_append_len (svg, legend->str, (gssize) legend->len);
    g_string_append (svg, "</svg>\n");
    return g_string_free (svg, FALSE);
}
