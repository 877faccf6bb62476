#define G_LOG_DOMAIN "vmr-test"

/*
 * The picture of a migration: the test guest writes (and later checks its
 * writes) while its disk is copied under a policy that throttles the copy
 * while the guest is busy. Then `virt-mirror report ID --svg` draws the
 * job's timeline, rsvg-convert renders it to PNG, and the test checks the
 * PNG, that every series the SVG draws is the daemon's query-job-series, that
 * the throttle shows as a band with its reason, `--json` against
 * query-job-series, the text summary, bad input, that the timeline survives
 * a restart of the daemon, and every byte of the copy.
 */

#include "policy-fixture.h"

#include <math.h>
#include <string.h>

/* the members of a point that the SVG draws, by its data-series names */
static const gchar *const drawn_series[]
    = { "rate", "speed", "backlog", "processed", "iops", "latency" };

/* the query-job-series reply, over the daemon's control socket */
static JsonObject *
query_series (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;

    json_object_set_string_member (args, "id", id);
    reply = vmr_qmp_client_execute_sync (h->control, "query-job-series", args, 10000, &error);
    if (error != NULL)
        vmr_fail ("query-job-series %s: %s", id, error->message);
    return json_object_ref (vmr_harness_json_node_object (reply));
}

/* what the test reads back from the SVG */
typedef struct {
    GHashTable *values; /* data-series -> its data-values text */
    GPtrArray *bands;   /* of gchar *: "ACTION\tTITLE" of each band */
    GString *metadata;  /* the text of <metadata id="vmr-series"> */
    gboolean in_band;   /* inside a band's <rect> */
    gboolean in_title;  /* inside its <title> */
    gboolean in_metadata;
    gchar *band_action;
    GString *title;
} SvgRead;

static void
svg_start_cb (GMarkupParseContext *context, const gchar *element, const gchar **names,
              const gchar **values, gpointer user_data, GError **error)
{
    SvgRead *r = user_data;
    const gchar *series = NULL, *data = NULL, *class = NULL, *action = NULL, *id = NULL;

    for (guint i = 0; names[i] != NULL; i++) {
        if (g_str_equal (names[i], "data-series"))
            series = values[i];
        else if (g_str_equal (names[i], "data-values"))
            data = values[i];
        else if (g_str_equal (names[i], "class"))
            class = values[i];
        else if (g_str_equal (names[i], "data-action"))
            action = values[i];
        else if (g_str_equal (names[i], "id"))
            id = values[i];
    }
    if (g_str_equal (element, "path") && series != NULL && data != NULL)
        g_hash_table_insert (r->values, g_strdup (series), g_strdup (data));
    if (g_str_equal (element, "rect") && g_strcmp0 (class, "band") == 0) {
        r->in_band = TRUE;
        r->band_action = g_strdup (action);
        g_string_truncate (r->title, 0);
    }
    if (g_str_equal (element, "title") && r->in_band)
        r->in_title = TRUE;
    if (g_str_equal (element, "metadata") && g_strcmp0 (id, "vmr-series") == 0)
        r->in_metadata = TRUE;
}

static void
svg_end_cb (GMarkupParseContext *context, const gchar *element, gpointer user_data, GError **error)
{
    SvgRead *r = user_data;

    if (g_str_equal (element, "title"))
        r->in_title = FALSE;
    if (g_str_equal (element, "metadata"))
        r->in_metadata = FALSE;
    if (g_str_equal (element, "rect") && r->in_band) {
        g_ptr_array_add (r->bands, g_strdup_printf ("%s\t%s", r->band_action, r->title->str));
        g_clear_pointer (&r->band_action, g_free);
        r->in_band = FALSE;
    }
}

static void
svg_text_cb (GMarkupParseContext *context, const gchar *text, gsize length, gpointer user_data,
             GError **error)
{
    SvgRead *r = user_data;

    if (r->in_title)
        g_string_append_len (r->title, text, (gssize) length);
    if (r->in_metadata)
        g_string_append_len (r->metadata, text, (gssize) length);
}

static void
svg_read_clear (SvgRead *r)
{
    g_clear_pointer (&r->values, g_hash_table_unref);
    g_clear_pointer (&r->bands, g_ptr_array_unref);
    if (r->metadata != NULL)
        g_string_free (r->metadata, TRUE);
    if (r->title != NULL)
        g_string_free (r->title, TRUE);
    g_free (r->band_action);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SvgRead, svg_read_clear)

/* the SVG at @path, parsed as XML: it must be well-formed */
static void
read_svg (const gchar *path, SvgRead *r)
{
    static const GMarkupParser parser = { svg_start_cb, svg_end_cb, svg_text_cb, NULL, NULL };
    g_autoptr (GMarkupParseContext) context = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr (GError) error = NULL;
    gsize length;

    r->values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    r->bands = g_ptr_array_new_with_free_func (g_free);
    r->metadata = g_string_new (NULL);
    r->title = g_string_new (NULL);
    g_assert_true (g_file_get_contents (path, &text, &length, NULL));
    context = g_markup_parse_context_new (&parser, G_MARKUP_IGNORE_QUALIFIED, r, NULL);
    if (!g_markup_parse_context_parse (context, text, (gssize) length, &error)
        || !g_markup_parse_context_end_parse (context, &error))
        vmr_fail ("%s is not well-formed XML: %s", path, error->message);
}

/* rsvg-convert renders @svg; the PNG has PNG's signature and an IHDR of the SVG's width */
static void
assert_renders (VmrHarness *h, const gchar *svg)
{
    static const guchar signature[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    g_autofree gchar *png = vmr_harness_path (h, "report.png");
    g_autofree gchar *bytes = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;
    gsize length = 0;
    guint32 width, height;
    const gchar *argv[] = { "rsvg-convert", "--format", "png", "--output", png, svg, NULL };

    if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                       &status, &error)
        || !g_spawn_check_wait_status (status, &error))
        vmr_fail ("rsvg-convert %s: %s", svg, error->message);
    g_assert_true (g_file_get_contents (png, &bytes, &length, NULL));
    g_assert_cmpuint (length, >, 33);
    g_assert_cmpmem (bytes, sizeof signature, signature, sizeof signature);
    /* the first chunk: length 13, "IHDR", width and height big-endian */
    g_assert_cmpmem (bytes + 12, 4, "IHDR", 4);
    memcpy (&width, bytes + 16, 4);
    memcpy (&height, bytes + 20, 4);
    width = GUINT32_FROM_BE (width);
    height = GUINT32_FROM_BE (height);
    g_test_message ("%s: %u x %u, %" G_GSIZE_FORMAT " bytes", png, width, height, length);
    g_assert_cmpuint (width, ==, 960);
    g_assert_cmpuint (height, >, 600);
}

/* each series the SVG draws holds, point for point, the daemon's values */
static void
assert_series_drawn (SvgRead *r, JsonArray *points)
{
    for (guint s = 0; s < G_N_ELEMENTS (drawn_series); s++) {
        const gchar *text = g_hash_table_lookup (r->values, drawn_series[s]);
        g_auto (GStrv) values = NULL;

        if (text == NULL)
            vmr_fail ("the SVG draws no series %s", drawn_series[s]);
        values = g_strsplit (text, " ", -1);
        g_assert_cmpuint (g_strv_length (values), ==, json_array_get_length (points));
        for (guint i = 0; values[i] != NULL; i++) {
            JsonObject *point = vmr_json_array_object (points, i);
            gdouble drawn = g_ascii_strtod (values[i], NULL);
            gdouble daemon = vmr_json_double_or (point, drawn_series[s], -1);

            if (fabs (drawn - daemon) > 1e-9 * MAX (1.0, fabs (daemon)))
                vmr_fail ("point %u of %s: the SVG has %s, the daemon %g", i, drawn_series[s],
                          values[i], daemon);
        }
    }
}

/* the throttle shows as a band whose title names the policy's reason */
static void
assert_throttle_band (SvgRead *r, guint threshold)
{
    g_autofree gchar *named = g_strdup_printf ("iops-throttle %u", threshold);

    for (guint i = 0; i < r->bands->len; i++) {
        const gchar *band = g_ptr_array_index (r->bands, i);

        g_test_message ("band: %s", band);
        if (g_str_has_prefix (band, "throttle\t") && strstr (band, named) != NULL)
            return;
    }
    vmr_fail ("no throttle band naming %s among the %u bands", named, r->bands->len);
}

static void
assert_points_equal (JsonArray *a, JsonArray *b, const gchar *what)
{
    g_autoptr (JsonNode) na = json_node_init_array (json_node_alloc (), a);
    g_autoptr (JsonNode) nb = json_node_init_array (json_node_alloc (), b);

    if (!json_node_equal (na, nb))
        vmr_fail ("%s differ from query-job-series's points", what);
}

/* the report of the job @id that completed: the picture, --json, the summary, bad input */
static void
check_report (VmrHarness *h, const gchar *id, guint threshold)
{
    g_autofree gchar *svg = vmr_harness_path (h, "report.svg");
    g_autofree gchar *nowhere = vmr_harness_path (h, "no-such-dir/report.svg");
    g_autoptr (JsonObject) series = query_series (h, id);
    JsonArray *points = vmr_harness_json_array (series, "points");
    JsonObject *last = vmr_json_array_object (points, json_array_get_length (points) - 1);
    JsonObject *job = vmr_harness_json_object (series, "job");
    g_autoptr (VmrCliResult) drawn = vmr_harness_cli (h, "report", id, "--svg", svg, NULL);
    g_autoptr (VmrCliResult) summary = vmr_harness_cli (h, "report", id, NULL);
    g_autoptr (VmrCliResult) unknown = vmr_harness_cli (h, "report", "vmr-99", NULL);
    g_autoptr (VmrCliResult) unwritable = vmr_harness_cli (h, "report", id, "--svg", nowhere, NULL);
    g_autoptr (JsonNode) json = vmr_harness_cli_json (h, "report", id, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_auto (SvgRead) r = { 0 };

    /* a copy of a few seconds under the policy: a point about every second */
    g_test_message ("%u points", json_array_get_length (points));
    g_assert_cmpuint (json_array_get_length (points), >=, 5);
    g_assert_cmpint (vmr_harness_json_int (last, "processed"), ==,
                     vmr_harness_json_int (vmr_harness_json_object (job, "progress"), "done"));
    /* the guest's writes during the copy are copied again: QEMU's offset passes the disk's size */
    g_assert_cmpint (vmr_harness_json_int (last, "processed"), >=, DISK_SIZE);
    g_assert_cmpint (vmr_harness_json_int (last, "backlog"), ==, 0);

    vmr_cli_result_assert_ok (drawn);
    read_svg (svg, &r);
    assert_renders (h, svg);
    assert_series_drawn (&r, points);
    assert_throttle_band (&r, threshold);
    if (!json_parser_load_from_data (parser, r.metadata->str, -1, NULL))
        vmr_fail ("the SVG's metadata is not JSON");
    assert_points_equal (
        vmr_harness_json_array (vmr_harness_json_node_object (json_parser_get_root (parser)),
                                "points"),
        points, "the SVG's metadata points");
    assert_points_equal (vmr_harness_json_array (vmr_harness_json_node_object (json), "points"),
                         points, "report --json's points");

    vmr_cli_result_assert_ok (summary);
    assert_contains (summary->out, "throttle", "the summary");
    assert_contains (summary->out, "Copied:", "the summary");
    /* bad input: one line, exit 1, nothing made */
    vmr_cli_result_assert_error (unknown, 1);
    assert_contains (unknown->err, "vmr-99", "the error of an unknown job");
    vmr_cli_result_assert_error (unwritable, 1);
    assert_contains (unwritable->err, "cannot write the report", "the error of a bad file");
    g_assert_false (g_file_test (nowhere, G_FILE_TEST_EXISTS));
}

/*
 * A guest writing through a throttled copy; the report of the copy; the
 * guest's own check of its writes and the rest of the disk byte for byte;
 * the timeline read back from the record after a restart.
 */
static void
test_throttled_copy (VmrHarness *h, gconstpointer user_data)
{
    static const gchar policy[] = "[defaults]\n"
                                  "sample-interval = 1s\n"
                                  "iops-throttle = THRESHOLD\n"
                                  "throttle-speed = 16M\n"
                                  "resume-below = 50%\n"
                                  "hold = 3s\n";
    const VmrHarnessGuestJob verify = { "verify", 200, 20, NULL, NULL, NULL };
    g_autofree gchar *policy_path = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (JsonObject) final = NULL;
    g_autoptr (JsonObject) before = NULL;
    g_autoptr (JsonObject) after = NULL;
    const gchar *restart_args[] = { "--policy", NULL, NULL };
    guint threshold;

    if (!vmr_harness_require_guest (h) || !vmr_harness_require (h, "rsvg-convert", NULL))
        return;
    policy_path = start_policy_daemon (h, QUIET_POLICY);
    source = boot_guest (h, &verify, DISK_SIZE);
    dest = vmr_harness_path (h, "dest.raw");
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    threshold = threshold_below (wait_load_baseline (h));
    reload_policy_with (h, policy, threshold);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, NULL);
    final = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_history (final, "throttled", "synced", "completed", NULL);
    check_report (h, id, threshold);
    assert_verify_guest (h, history_time (final, "completed"), source, dest, DISK_SIZE);

    /* the timeline is in the record: a restarted daemon reports the same */
    before = query_series (h, id);
    vmr_harness_stop_daemon (h);
    restart_args[1] = policy_path;
    vmr_harness_restart_daemon (h, restart_args);
    after = query_series (h, id);
    assert_points_equal (vmr_harness_json_array (after, "points"),
                         vmr_harness_json_array (before, "points"), "the points after a restart");
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);

    VMR_HARNESS_ADD_NO_DAEMON ("/report/throttled-copy", NULL, test_throttled_copy);
    return g_test_run ();
}
