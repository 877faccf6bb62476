/*
 * The report's picture: the axis math, the bands of the policy's decisions,
 * the text summary, and an SVG that is well-formed XML, escapes what the
 * daemon says, and carries every series' values as they came.
 */
#include <string.h>

#include "cli-report-data.h"
#include "cli-report-svg.h"

/* clang-format off */
static const struct {
    gdouble max;
    guint max_steps;
    gdouble step;
    gdouble top;
} axes[] = {
    { 0, 4, 0.25, 1 },        /* nothing: 0 to 1 */
    { -3, 4, 0.25, 1 },
    { 1, 4, 0.5, 1 },
    { 7, 4, 2, 8 },
    { 8, 4, 2, 8 },
    { 95, 4, 50, 100 },
    { 1400, 4, 500, 1500 },
    { 0.003, 4, 0.001, 0.003 },
    { 16.5, 10, 2, 18 },
    { 3600, 10, 500, 4000 },
};
/* clang-format on */

static void
test_axis (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (axes); i++) {
        VmrSvgAxis axis;

        vmr_svg_axis_for (axes[i].max, axes[i].max_steps, &axis);
        g_test_message ("max %g: step %g top %g", axes[i].max, axis.step, axis.top);
        g_assert_cmpfloat_with_epsilon (axis.step, axes[i].step, 1e-12);
        g_assert_cmpfloat_with_epsilon (axis.top, axes[i].top, 1e-12);
        g_assert_cmpuint (axis.n_steps, <=, axes[i].max_steps);
        g_assert_cmpfloat (axis.top, >=, MAX (axes[i].max, 0));
    }
}

/* clang-format off */
static const struct {
    gdouble seconds;
    gdouble step;
    gdouble top;
} time_axes[] = {
    { 0, 1, 1 },
    { 7, 1, 7 },
    { 14, 2, 14 },
    { 39, 5, 40 },
    { 95, 10, 100 },
    { 7198, 900, 7200 },
    { 86400 * 3.5, 43200, 86400 * 3.5 },
    { 86400 * 40, 86400 * 5, 86400 * 40 },
};
/* clang-format on */

static void
test_time_axis (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (time_axes); i++) {
        VmrSvgAxis axis;

        vmr_svg_time_axis_for (time_axes[i].seconds, 10, &axis);
        g_test_message ("%g s: step %g top %g", time_axes[i].seconds, axis.step, axis.top);
        g_assert_cmpfloat_with_epsilon (axis.step, time_axes[i].step, 1e-9);
        g_assert_cmpfloat_with_epsilon (axis.top, time_axes[i].top, 1e-9);
    }
}

static void
test_place (void)
{
    g_assert_cmpfloat (vmr_svg_axis_place (0, 10, 100, 200), ==, 100);
    g_assert_cmpfloat (vmr_svg_axis_place (5, 10, 100, 200), ==, 150);
    g_assert_cmpfloat (vmr_svg_axis_place (10, 10, 300, 200), ==, 200);
    /* outside the axis: at its ends */
    g_assert_cmpfloat (vmr_svg_axis_place (20, 10, 100, 200), ==, 200);
    g_assert_cmpfloat (vmr_svg_axis_place (-1, 10, 100, 200), ==, 100);
    g_assert_cmpfloat (vmr_svg_axis_place (3, 0, 100, 200), ==, 100);
}

/* clang-format off */
static const struct {
    const gchar *action;
    const gchar *state;
    const gchar *band;
} bands[] = {
    { "delay", "delayed", "delay" },
    { "wait", "queued", "wait" },
    { "throttle", "throttled", "throttle" },
    { "start-throttled", "throttled", "throttle" },
    { "pause", "paused", "pause" },
    { "back-off", "copying", "back-off" },
    { "raise", "copying", "adaptive" },
    { "measure-baseline", "paused", "baseline" },
    { "converge", "copying", "converge" },
    { "start", "copying", NULL },
    { "unthrottle", "copying", NULL },
    { "idle-full-speed", "copying", NULL },
    { NULL, "copying", NULL },
    { NULL, "paused", "pause" },      /* a user's pause */
    { "unthrottle", "throttled", "throttle" },
    { "throttle", "synced", NULL },   /* in sync, the policy no longer acts */
    { "delay", "completed", NULL },
};
/* clang-format on */

static void
test_band_of (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (bands); i++)
        g_assert_cmpstr (vmr_report_band_of (bands[i].action, bands[i].state), ==, bands[i].band);
}

#define T0 G_GINT64_CONSTANT (1764620000000000)

/* a reply as the daemon gives it: a delay, a throttle, then full speed to the end */
static JsonNode *
sample_reply (const gchar *source)
{
    g_autoptr (JsonBuilder) b = json_builder_new ();

    json_builder_begin_object (b);
    json_builder_set_member_name (b, "interval");
    json_builder_add_int_value (b, G_USEC_PER_SEC);
    json_builder_set_member_name (b, "job");
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "id");
    json_builder_add_string_value (b, "vmr-4");
    json_builder_set_member_name (b, "state");
    json_builder_add_string_value (b, "completed");
    json_builder_set_member_name (b, "domain");
    json_builder_add_string_value (b, "web01");
    json_builder_set_member_name (b, "disk");
    json_builder_add_string_value (b, "disk0");
    json_builder_set_member_name (b, "source");
    json_builder_add_string_value (b, source);
    json_builder_set_member_name (b, "destination");
    json_builder_add_string_value (b, "/new/web01.raw");
    json_builder_end_object (b);
    json_builder_set_member_name (b, "points");
    json_builder_begin_array (b);
    for (gint i = 0; i < 10; i++) {
        const gchar *action = i < 3 ? "delay" : i < 7 ? "throttle" : "unthrottle";
        const gchar *state = i < 3 ? "delayed" : i < 7 ? "throttled" : i < 9 ? "copying" : "synced";

        json_builder_begin_object (b);
        json_builder_set_member_name (b, "time");
        json_builder_add_int_value (b, T0 + i * G_USEC_PER_SEC);
        json_builder_set_member_name (b, "rate");
        json_builder_add_int_value (b, i < 3 ? 0 : 1048576 * i);
        json_builder_set_member_name (b, "backlog");
        json_builder_add_int_value (b, 10485760 - 1048576 * i);
        json_builder_set_member_name (b, "processed");
        json_builder_add_int_value (b, 1048576 * i);
        json_builder_set_member_name (b, "speed");
        json_builder_add_int_value (b, i >= 3 && i < 7 ? 4194304 : 0);
        json_builder_set_member_name (b, "iops");
        json_builder_add_double_value (b, 1234.5 + i);
        json_builder_set_member_name (b, "latency");
        json_builder_add_double_value (b, 250.25 * i);
        json_builder_set_member_name (b, "state");
        json_builder_add_string_value (b, state);
        json_builder_set_member_name (b, "action");
        json_builder_add_string_value (b, action);
        json_builder_set_member_name (b, "reason");
        json_builder_add_string_value (b, i < 3 ? "guest IOPS 1300 >= iops-delay 1000 <busy>"
                                                : "guest IOPS 1200 >= iops-throttle 800");
        json_builder_end_object (b);
    }
    json_builder_end_array (b);
    json_builder_end_object (b);
    return json_builder_get_root (b);
}

static void
test_report_bands (void)
{
    g_autoptr (JsonNode) reply = sample_reply ("/old/web01.raw");
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrReport) report = vmr_report_new (reply, &error);
    const VmrReportBand *band;

    g_assert_no_error (error);
    g_assert_cmpuint (report->points->len, ==, 10);
    g_assert_cmpfloat (report->duration, ==, 9);
    g_assert_cmpuint (report->bands->len, ==, 2);
    band = &g_array_index (report->bands, VmrReportBand, 0);
    g_assert_cmpstr (band->action, ==, "delay");
    g_assert_cmpfloat (band->start, ==, 0);
    g_assert_cmpfloat (band->end, ==, 3);
    band = &g_array_index (report->bands, VmrReportBand, 1);
    g_assert_cmpstr (band->action, ==, "throttle");
    g_assert_cmpfloat (band->start, ==, 3);
    g_assert_cmpfloat (band->end, ==, 7);
    g_assert_cmpstr (band->reason, ==, "guest IOPS 1200 >= iops-throttle 800");
}

static void
test_summary (void)
{
    g_autoptr (JsonNode) reply = sample_reply ("/old/web01.raw");
    g_autoptr (VmrReport) report = vmr_report_new (reply, NULL);
    g_autofree gchar *text = vmr_report_format_summary (report);

    g_test_message ("%s", text);
    g_assert_nonnull (strstr (text, "Job vmr-4: disk0 of web01, /old/web01.raw -> /new/web01.raw"));
    g_assert_nonnull (strstr (text, "10 points"));
    g_assert_nonnull (strstr (text, "delay     0s to 3s: guest IOPS 1300"));
    g_assert_nonnull (strstr (text, "throttle  3s to 7s: guest IOPS 1200 >= iops-throttle 800"));
}

/* what the test reads back from the SVG */
typedef struct {
    GHashTable *values; /* data-series -> data-values */
    guint n_bands;
    guint n_titles;
    gboolean in_metadata;
    GString *metadata;
    GString *text; /* of every <text> and <title> */
} Read;

static void
start_cb (GMarkupParseContext *context, const gchar *element, const gchar **names,
          const gchar **values, gpointer user_data, GError **error)
{
    Read *r = user_data;
    const gchar *series = NULL, *data = NULL;

    for (guint i = 0; names[i] != NULL; i++) {
        if (g_str_equal (names[i], "data-series"))
            series = values[i];
        if (g_str_equal (names[i], "data-values"))
            data = values[i];
        if (g_str_equal (names[i], "class") && g_str_equal (values[i], "band"))
            r->n_bands++;
    }
    if (series != NULL && data != NULL)
        g_hash_table_insert (r->values, g_strdup (series), g_strdup (data));
    if (g_str_equal (element, "title"))
        r->n_titles++;
    r->in_metadata = g_str_equal (element, "metadata");
}

static void
end_cb (GMarkupParseContext *context, const gchar *element, gpointer user_data, GError **error)
{
    ((Read *) user_data)->in_metadata = FALSE;
}

static void
text_cb (GMarkupParseContext *context, const gchar *text, gsize length, gpointer user_data,
         GError **error)
{
    Read *r = user_data;

    g_string_append_len (r->in_metadata ? r->metadata : r->text, text, (gssize) length);
}

static void
test_svg (void)
{
    static const GMarkupParser parser = { start_cb, end_cb, text_cb, NULL, NULL };
    /* a path with what XML must escape */
    g_autoptr (JsonNode) reply = sample_reply ("/old/a&b <c>.raw");
    g_autoptr (VmrReport) report = vmr_report_new (reply, NULL);
    g_autofree gchar *svg = vmr_report_to_svg (report);
    g_autoptr (GMarkupParseContext) context = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonParser) json = json_parser_new ();
    Read r = { g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
               0,
               0,
               FALSE,
               g_string_new (NULL),
               g_string_new (NULL) };
    g_auto (GStrv) iops = NULL;
    g_auto (GStrv) latency = NULL;

    context = g_markup_parse_context_new (&parser, 0, &r, NULL);
    g_assert_true (g_markup_parse_context_parse (context, svg, -1, &error));
    g_assert_true (g_markup_parse_context_end_parse (context, &error));
    g_assert_no_error (error);
    g_assert_true (g_str_has_prefix (svg, "<?xml"));
    /* one series each, all ten values as the daemon gave them */
    g_assert_cmpuint (g_hash_table_size (r.values), ==, 6);
    iops = g_strsplit (g_hash_table_lookup (r.values, "iops"), " ", -1);
    g_assert_cmpuint (g_strv_length (iops), ==, 10);
    g_assert_cmpfloat (g_ascii_strtod (iops[3], NULL), ==, 1237.5);
    latency = g_strsplit (g_hash_table_lookup (r.values, "latency"), " ", -1);
    g_assert_cmpfloat (g_ascii_strtod (latency[9], NULL), ==, 2252.25);
    g_assert_cmpstr (g_hash_table_lookup (r.values, "processed"), ==,
                     "0 1048576 2097152 3145728 4194304 5242880 6291456 7340032 8388608 9437184");
    /* the bands, each with its title; the document's title */
    g_assert_cmpuint (r.n_bands, ==, 2);
    g_assert_cmpuint (r.n_titles, ==, 3);
    g_assert_nonnull (
        strstr (r.text->str, "vmr-4: disk0 of web01, /old/a&b <c>.raw → /new/web01.raw"));
    g_assert_nonnull (strstr (r.text->str, "throttle from 3s to 7s: guest IOPS 1200"));
    g_assert_nonnull (strstr (r.text->str, "<busy>"));
    g_assert_nonnull (strstr (r.text->str, "Guest latency (ms)"));
    /* the metadata is the reply */
    g_assert_true (json_parser_load_from_data (json, r.metadata->str, -1, &error));
    g_assert_true (json_node_equal (json_parser_get_root (json), reply));

    g_hash_table_unref (r.values);
    g_string_free (r.metadata, TRUE);
    g_string_free (r.text, TRUE);
}

static void
test_not_a_reply (void)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrReport) report = NULL;

    g_assert_true (json_parser_load_from_data (parser, "{\"points\": []}", -1, NULL));
    report = vmr_report_new (json_parser_get_root (parser), &error);
    g_assert_null (report);
    g_assert_nonnull (error);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/report-svg/axis", test_axis);
    g_test_add_func ("/report-svg/time-axis", test_time_axis);
    g_test_add_func ("/report-svg/place", test_place);
    g_test_add_func ("/report-svg/band-of", test_band_of);
    g_test_add_func ("/report-svg/bands", test_report_bands);
    g_test_add_func ("/report-svg/summary", test_summary);
    g_test_add_func ("/report-svg/svg", test_svg);
    g_test_add_func ("/report-svg/not-a-reply", test_not_a_reply);
    return g_test_run ();
}
