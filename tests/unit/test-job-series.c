/*
 * A job's timeline: the bound, the halving that keeps a long copy's whole
 * timeline, the decisions it keeps through a merge, and the record's form,
 * including records of the wrong shape.
 */
#include <glib/gstdio.h>

#include "job-series.h"
#include "job.h"

static VmrJobSeriesPoint
point_at (gint64 second, const gchar *action)
{
    return (VmrJobSeriesPoint){
        .time_us = second * G_USEC_PER_SEC,
        .rate = 100.0 * second,
        .backlog = 1000 - (guint64) second,
        .processed = (guint64) second,
        .speed_limit = 4096,
        .iops = 10.0 * second,
        .latency_us = 2.0 * second,
        .state = (gchar *) "copying",
        .action = (gchar *) action,
        .reason = action != NULL ? (gchar *) "because" : NULL,
    };
}

/* a point is due at first, then once an interval (less a quarter) has passed */
static void
test_due (void)
{
    g_autoptr (VmrJobSeries) series = vmr_job_series_new (10);
    VmrJobSeriesPoint p = point_at (10, NULL);

    g_assert_true (vmr_job_series_is_due (series, 0));
    vmr_job_series_append (series, &p);
    g_assert_false (vmr_job_series_is_due (series, 10 * G_USEC_PER_SEC + 500000));
    g_assert_true (vmr_job_series_is_due (series, 10 * G_USEC_PER_SEC + 800000));
    /* a clock that went back waits */
    g_assert_false (vmr_job_series_is_due (series, 0));
}

/* full: neighbours merge, the interval doubles, the first and last times stay */
static void
test_halving (void)
{
    g_autoptr (VmrJobSeries) series = vmr_job_series_new (8);
    const VmrJobSeriesPoint *first;
    const VmrJobSeriesPoint *merged;

    for (gint64 s = 1; s <= 8; s++) {
        VmrJobSeriesPoint p = point_at (s, s == 3 ? "throttle" : NULL);

        vmr_job_series_append (series, &p);
    }
    g_assert_cmpuint (vmr_job_series_get_length (series), ==, 8);
    g_assert_cmpint (vmr_job_series_get_interval (series), ==, G_USEC_PER_SEC);
    {
        VmrJobSeriesPoint p = point_at (9, NULL);

        vmr_job_series_append (series, &p);
    }
    /* 8 became 4, then the ninth */
    g_assert_cmpuint (vmr_job_series_get_length (series), ==, 5);
    g_assert_cmpint (vmr_job_series_get_interval (series), ==, 2 * G_USEC_PER_SEC);
    first = vmr_job_series_get (series, 0);
    g_assert_cmpint (first->time_us, ==, 2 * G_USEC_PER_SEC);
    g_assert_cmpfloat (first->rate, ==, 150.0);
    g_assert_cmpfloat (first->iops, ==, 15.0);
    g_assert_cmpuint (first->processed, ==, 2);
    /* points 3 and 4: the throttle of 3 is kept over 4's none */
    merged = vmr_job_series_get (series, 1);
    g_assert_cmpint (merged->time_us, ==, 4 * G_USEC_PER_SEC);
    g_assert_cmpstr (merged->action, ==, "throttle");
    g_assert_cmpstr (merged->reason, ==, "because");
    g_assert_null (vmr_job_series_get (series, 2)->action);
    g_assert_cmpint (vmr_job_series_get (series, 4)->time_us, ==, 9 * G_USEC_PER_SEC);
}

/* a day of points stays within the bound and keeps its start and end */
static void
test_long_copy (void)
{
    g_autoptr (VmrJobSeries) series = vmr_job_series_new (VMR_JOB_SERIES_MAX_POINTS);

    /* as the engine appends: a sample every second, a point when one is due */
    for (gint64 s = 1; s <= 86400; s++) {
        VmrJobSeriesPoint p = point_at (s, NULL);

        if (vmr_job_series_is_due (series, p.time_us))
            vmr_job_series_append (series, &p);
    }
    g_assert_cmpuint (vmr_job_series_get_length (series), <=, VMR_JOB_SERIES_MAX_POINTS);
    g_assert_cmpuint (vmr_job_series_get_length (series), >=, VMR_JOB_SERIES_MAX_POINTS / 2);
    g_assert_cmpint (vmr_job_series_get_interval (series), ==, 32 * G_USEC_PER_SEC);
    g_assert_cmpint (vmr_job_series_get (series, 0)->time_us, <=, 32 * G_USEC_PER_SEC);
    g_assert_cmpint (vmr_job_series_get (series, vmr_job_series_get_length (series) - 1)->time_us,
                     >, G_GINT64_CONSTANT (86400 - 32) * G_USEC_PER_SEC);
}

/* the record's form read back gives the same series */
static void
test_json_round_trip (void)
{
    g_autoptr (VmrJobSeries) series = vmr_job_series_new (100);
    g_autoptr (JsonObject) obj = NULL;
    g_autoptr (VmrJobSeries) back = NULL;
    g_autoptr (JsonObject) again = NULL;
    g_autoptr (JsonNode) a = NULL;
    g_autoptr (JsonNode) b = NULL;

    for (gint64 s = 1; s <= 5; s++) {
        VmrJobSeriesPoint p = point_at (s, s > 3 ? "delay" : NULL);

        vmr_job_series_append (series, &p);
    }
    obj = vmr_job_series_to_json (series);
    back = vmr_job_series_new_from_json (obj, 100);
    g_assert_cmpuint (vmr_job_series_get_length (back), ==, 5);
    g_assert_cmpstr (vmr_job_series_get (back, 4)->action, ==, "delay");
    g_assert_cmpstr (vmr_job_series_get (back, 4)->state, ==, "copying");
    g_assert_cmpfloat (vmr_job_series_get (back, 2)->latency_us, ==, 6.0);
    again = vmr_job_series_to_json (back);
    a = json_node_init_object (json_node_alloc (), obj);
    b = json_node_init_object (json_node_alloc (), again);
    g_assert_true (json_node_equal (a, b));
}

/* records of the wrong shape: what cannot be a point is skipped, nothing aborts */
static const struct {
    const gchar *name;
    const gchar *json;
    guint n_points;
    gint64 interval_us;
} bad_records[] = {
    { "no-points", "{}", 0, G_USEC_PER_SEC },
    { "points-not-array", "{\"points\": 3}", 0, G_USEC_PER_SEC },
    { "point-not-object", "{\"points\": [1, \"x\", null, {\"time\": 5}]}", 1, G_USEC_PER_SEC },
    { "no-time", "{\"points\": [{\"rate\": 5}]}", 0, G_USEC_PER_SEC },
    { "wrong-types",
      "{\"interval\": \"x\", \"points\": [{\"time\": 1, \"rate\": \"fast\", \"iops\": -4, "
      "\"state\": 7, \"action\": [], \"backlog\": -1}]}",
      1, G_USEC_PER_SEC },
    { "interval-too-small", "{\"interval\": 5, \"points\": []}", 0, G_USEC_PER_SEC },
    { "interval-kept", "{\"interval\": 4000000, \"points\": []}", 0, 4 * G_USEC_PER_SEC },
    { "interval-huge", "{\"interval\": 9223372036854775807, \"points\": []}", 0, G_MAXINT64 },
};

static void
test_bad_record (gconstpointer data)
{
    guint i = GPOINTER_TO_UINT (data);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (VmrJobSeries) series = NULL;

    g_assert_true (json_parser_load_from_data (parser, bad_records[i].json, -1, NULL));
    series
        = vmr_job_series_new_from_json (json_node_get_object (json_parser_get_root (parser)), 10);
    g_assert_cmpuint (vmr_job_series_get_length (series), ==, bad_records[i].n_points);
    g_assert_cmpint (vmr_job_series_get_interval (series), ==, bad_records[i].interval_us);
    if (bad_records[i].n_points == 1) {
        const VmrJobSeriesPoint *p = vmr_job_series_get (series, 0);

        g_assert_cmpfloat (p->rate, ==, 0);
        g_assert_cmpfloat (p->iops, ==, 0);
        g_assert_null (p->state);
        g_assert_null (p->action);
    }
}

/* more points than the bound in a record are merged down to it */
static void
test_record_over_bound (void)
{
    g_autoptr (JsonObject) obj = json_object_new ();
    JsonArray *points = json_array_new ();
    g_autoptr (VmrJobSeries) series = NULL;

    for (gint64 s = 1; s <= 25; s++) {
        JsonObject *p = json_object_new ();

        json_object_set_int_member (p, "time", s * G_USEC_PER_SEC);
        json_array_add_object_element (points, p);
    }
    json_object_set_array_member (obj, "points", points);
    series = vmr_job_series_new_from_json (obj, 10);
    g_assert_cmpuint (vmr_job_series_get_length (series), <=, 10);
    g_assert_cmpint (vmr_job_series_get (series, vmr_job_series_get_length (series) - 1)->time_us,
                     ==, 25 * G_USEC_PER_SEC);
}

/*
 * a job record keeps its series and a pause for the cluster; one of an
 * earlier version, without them, reads with none
 */
static void
test_job_record (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-series-XXXXXX", NULL);
    g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);
    g_autofree gchar *path = g_build_filename (jobs_dir, "vmr-7.json", NULL);
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-7", "web01", "disk0", 1000);
    g_autoptr (VmrJob) back = NULL;
    g_autoptr (VmrJob) old = NULL;
    g_autoptr (GError) error = NULL;
    static const gchar old_record[]
        = "{\"id\": \"vmr-2\", \"domain\": \"d\", \"disk\": \"disk0\", \"destination\": "
          "\"/nonexistent/x.raw\", \"state\": \"completed\"}";

    job->dest = vmr_destination_new ("/nonexistent/dest.raw", "raw", FALSE, &error);
    g_assert_no_error (error);
    for (gint64 s = 1; s <= 3; s++) {
        VmrJobSeriesPoint p = point_at (s, "throttle");

        vmr_job_series_append (job->series, &p);
    }
    /* a copy paused for the cluster stays so across a restart */
    job->cluster_paused = g_strdup ("the cluster's lease could not be kept alive");
    job->cluster_resume = TRUE;
    g_assert_true (vmr_job_save (job, dir, &error));
    back = vmr_job_load_record (path, &error);
    g_assert_no_error (error);
    g_assert_cmpuint (vmr_job_series_get_length (back->series), ==, 3);
    g_assert_cmpstr (vmr_job_series_get (back->series, 2)->action, ==, "throttle");
    g_assert_cmpstr (back->cluster_paused, ==, job->cluster_paused);
    g_assert_true (back->cluster_resume);

    old = vmr_job_new_from_record (old_record, sizeof old_record - 1, &error);
    g_assert_no_error (error);
    g_assert_nonnull (old->series);
    g_assert_cmpuint (vmr_job_series_get_length (old->series), ==, 0);
    g_assert_null (old->cluster_paused);
    g_assert_false (old->cluster_resume);

    g_unlink (path);
    g_rmdir (jobs_dir);
    g_rmdir (dir);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/job-series/due", test_due);
    g_test_add_func ("/job-series/halving", test_halving);
    g_test_add_func ("/job-series/long-copy", test_long_copy);
    g_test_add_func ("/job-series/json-round-trip", test_json_round_trip);
    for (guint i = 0; i < G_N_ELEMENTS (bad_records); i++) {
        g_autofree gchar *path = g_strdup_printf ("/job-series/bad-record/%s", bad_records[i].name);

        g_test_add_data_func (path, GUINT_TO_POINTER (i), test_bad_record);
    }
    g_test_add_func ("/job-series/record-over-bound", test_record_over_bound);
    g_test_add_func ("/job-series/job-record", test_job_record);
    return g_test_run ();
}
