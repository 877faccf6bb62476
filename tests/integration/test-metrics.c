#define G_LOG_DOMAIN "vmr-test"

/*
 * The metrics against Prometheus's own tools: the daemon serves /metrics
 * (--metrics-listen on a free port of 127.0.0.1) while a disk on an I/O
 * thread moves and writes go through its device; `promtool check metrics`
 * passes on what /metrics serves and on what `virt-mirror metrics` prints,
 * during the copy and after it. A real Prometheus server (its own config,
 * data directory and port, written by the test) scrapes the daemon every
 * second all along; its HTTP API then holds
 * virt_mirror_job_data_processed_bytes of the job, rising during the copy
 * and ending at the completed job's figure. The moved disk holds every byte
 * the guest sees. The test guest, reading its disk with fio, shows in the
 * guest metrics as fio counts its load (within 10% over the daemon's own
 * sample windows), and its I/O thread's CPU time grows. A bad
 * --metrics-listen, or a port another socket holds, stops the daemon with
 * one line before it serves anything.
 */

#include <libsoup/soup.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "nbd-fixture.h"
#include "policy-fixture.h"
#include "vmr-error.h"

#define IMAGE_SIZE (24 * 1024 * 1024)
/* a copy of several seconds, so that Prometheus scrapes it while it runs */
#define COPY_SPEED "4M"
#define WRITES     20
/* how long Prometheus may take to have scraped what the daemon serves */
#define SCRAPE_TIMEOUT_S 30

/* GET @url; asserts status 200 and returns the body, with its Content-Type in @out_type */
static gchar *
http_get (const gchar *url, gchar **out_type)
{
    g_autoptr (SoupSession) session = soup_session_new_with_options ("timeout", 10, NULL);
    g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
    g_autoptr (GError) error = NULL;
    g_autoptr (GBytes) body = NULL;
    gsize size = 0;
    const gchar *data;

    g_assert_nonnull (msg);
    body = soup_session_send_and_read (session, msg, NULL, &error);
    if (body == NULL)
        vmr_fail ("GET %s: %s", url, error->message);
    if (soup_message_get_status (msg) != SOUP_STATUS_OK)
        vmr_fail ("GET %s: HTTP %u", url, soup_message_get_status (msg));
    if (out_type != NULL)
        *out_type = g_strdup (
            soup_message_headers_get_one (soup_message_get_response_headers (msg), "Content-Type"));
    data = g_bytes_get_data (body, &size);
    return g_strndup (data != NULL ? data : "", size);
}

/* the status of @method @url, for the requests /metrics refuses */
static guint
http_status (const gchar *method, const gchar *url)
{
    g_autoptr (SoupSession) session = soup_session_new_with_options ("timeout", 10, NULL);
    g_autoptr (SoupMessage) msg = soup_message_new (method, url);
    g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, NULL);

    return soup_message_get_status (msg);
}

/* `virt-mirror metrics`: asserts it succeeds */
static gchar *
cli_metrics (VmrHarness *h)
{
    g_autoptr (VmrCliResult) result = vmr_harness_cli (h, "metrics", NULL);

    vmr_cli_result_assert_ok (result);
    return g_strdup (result->out);
}

/* ---- Prometheus ---- */

typedef struct {
    VmrNbdTest t; /* first: the harness's functions take the fixture */
    guint prometheus_port;
} Scraper;

/* starts Prometheus scraping 127.0.0.1:@target_port every second */
static void
start_prometheus (Scraper *s, guint target_port)
{
    VmrHarness *h = &s->t.h;
    g_autofree gchar *config = vmr_harness_path (h, "prometheus.yml");
    g_autofree gchar *tsdb = vmr_harness_path (h, "tsdb");
    g_autofree gchar *text = NULL;
    g_autofree gchar *config_arg = NULL;
    g_autofree gchar *tsdb_arg = NULL;
    g_autofree gchar *listen_arg = NULL;
    g_autoptr (GError) error = NULL;

    do
        s->prometheus_port = vmr_nbd_free_port ();
    while (s->prometheus_port == target_port);
    text = g_strdup_printf ("global:\n"
                            "  scrape_interval: 1s\n"
                            "  scrape_timeout: 1s\n"
                            "scrape_configs:\n"
                            "  - job_name: virt-mirror\n"
                            "    static_configs:\n"
                            "      - targets: ['127.0.0.1:%u']\n",
                            target_port);
    g_assert_true (g_file_set_contents (config, text, -1, &error));
    config_arg = g_strdup_printf ("--config.file=%s", config);
    tsdb_arg = g_strdup_printf ("--storage.tsdb.path=%s", tsdb);
    listen_arg = g_strdup_printf ("--web.listen-address=127.0.0.1:%u", s->prometheus_port);
    {
        const gchar *argv[]
            = { "prometheus", config_arg, tsdb_arg, listen_arg, "--log.level=warn", NULL };

        vmr_nbd_start_server (&s->t.servers, argv, NULL, s->prometheus_port);
    }
}

/* the "result" array of Prometheus's API at @path_and_query, which must succeed */
static JsonArray *
prometheus_api (Scraper *s, const gchar *path_and_query, JsonNode **out_root)
{
    g_autofree gchar *url
        = g_strdup_printf ("http://127.0.0.1:%u%s", s->prometheus_port, path_and_query);
    g_autofree gchar *body = http_get (url, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    JsonObject *root;

    if (!json_parser_load_from_data (parser, body, -1, &error))
        vmr_fail ("%s: not JSON: %s", url, body);
    *out_root = json_node_ref (json_parser_get_root (parser));
    root = vmr_harness_json_node_object (*out_root);
    g_assert_cmpstr (vmr_harness_json_string (root, "status"), ==, "success");
    return vmr_harness_json_array (vmr_harness_json_object (root, "data"), "result");
}

/* the value of a point of the API, [time, "value"] */
static gdouble
point_value (JsonArray *point)
{
    const gchar *value = vmr_json_array_string (point, 1);

    if (value == NULL)
        vmr_fail ("a point of Prometheus's API without a value");
    return g_ascii_strtod (value, NULL);
}

/*
 * The latest value Prometheus holds of @metric for the job @id, or -1 when
 * it has none. The daemon's "job" label is "exported_job" there: Prometheus
 * keeps "job" for its scrape job.
 */
static gdouble
prometheus_job_value (Scraper *s, const gchar *metric, const gchar *id, const gchar *extra)
{
    g_autofree gchar *query
        = g_strdup_printf ("%s{exported_job=\"%s\"%s}", metric, id, extra != NULL ? extra : "");
    g_autofree gchar *escaped = g_uri_escape_string (query, NULL, FALSE);
    g_autofree gchar *path = g_strdup_printf ("/api/v1/query?query=%s", escaped);
    g_autoptr (JsonNode) root = NULL;
    JsonArray *result = prometheus_api (s, path, &root);
    JsonObject *series;
    JsonArray *value;

    if (json_array_get_length (result) == 0)
        return -1;
    g_assert_cmpuint (json_array_get_length (result), ==, 1);
    series = vmr_harness_json_element (result, 0);
    g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_object (series, "metric"), "job"),
                     ==, "virt-mirror");
    value = vmr_harness_json_array (series, "value");
    return point_value (value);
}

/* polls until Prometheus holds @wanted as @metric of @id (with @extra labels) */
static void
wait_prometheus_value (Scraper *s, const gchar *metric, const gchar *id, const gchar *extra,
                       gdouble wanted)
{
    gint64 deadline = g_get_monotonic_time () + SCRAPE_TIMEOUT_S * G_USEC_PER_SEC;
    gdouble value;

    while ((value = prometheus_job_value (s, metric, id, extra)) != wanted) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("Prometheus holds %s{exported_job=\"%s\"%s} = %g after %d s, not %g", metric,
                      id, extra != NULL ? extra : "", value, SCRAPE_TIMEOUT_S, wanted);
        g_usleep (200 * 1000);
    }
}

/*
 * Every value Prometheus scraped of the job's processed bytes from
 * @start_s to now (seconds since the epoch): non-decreasing, at least one
 * scraped while the copy ran (below @final), the last @final
 */
static void
assert_prometheus_history (Scraper *s, const gchar *id, gdouble start_s, gdouble final)
{
    g_autofree gchar *query
        = g_strdup_printf ("virt_mirror_job_data_processed_bytes{exported_job=\"%s\"}", id);
    g_autofree gchar *escaped = g_uri_escape_string (query, NULL, FALSE);
    g_autofree gchar *path
        = g_strdup_printf ("/api/v1/query_range?query=%s&start=%.3f&end=%.3f&step=1", escaped,
                           start_s, (gdouble) g_get_real_time () / G_USEC_PER_SEC + 1);
    g_autoptr (JsonNode) root = NULL;
    JsonArray *result = prometheus_api (s, path, &root);
    JsonArray *values;
    gdouble previous = 0;
    guint during_copy = 0;
    guint n;

    g_assert_cmpuint (json_array_get_length (result), ==, 1);
    values = vmr_harness_json_array (vmr_harness_json_element (result, 0), "values");
    n = json_array_get_length (values);
    g_assert_cmpuint (n, >, 0);
    for (guint i = 0; i < n; i++) {
        JsonArray *point = vmr_harness_json_node_array (json_array_get_element (values, i));
        gdouble value = point_value (point);

        g_test_message ("Prometheus: %s processed %.0f bytes", id, value);
        g_assert_cmpfloat (value, >=, previous);
        during_copy += value < final;
        previous = value;
    }
    g_assert_cmpfloat (previous, ==, final);
    if (during_copy == 0)
        vmr_fail ("Prometheus scraped %s only after its copy: %u values", id, n);
}

static void
scraper_setup (Scraper *s, gconstpointer user_data)
{
    vmr_nbd_setup_no_daemon (&s->t, user_data);
    if (!vmr_harness_skipped (&s->t.h))
        vmr_harness_require (&s->t.h, "prometheus", "promtool", NULL);
}

static void
scraper_teardown (Scraper *s, gconstpointer user_data)
{
    vmr_nbd_teardown (&s->t, user_data);
}

/* the series of the job @id in /metrics text, @name{job="ID",domain="vm",disk="disk0"} */
static gchar *
job_series (const gchar *name, const gchar *id)
{
    return g_strdup_printf ("virt_mirror_%s{job=\"%s\",domain=\"vm\",disk=\"disk0\"}", name, id);
}

/* /metrics and `virt-mirror metrics` while the copy of @id runs */
static void
check_metrics_during_copy (VmrHarness *h, const gchar *url, const gchar *id)
{
    g_autofree gchar *type = NULL;
    g_autofree gchar *text = http_get (url, &type);
    g_autofree gchar *cli_text = cli_metrics (h);
    g_autofree gchar *info = g_strdup_printf (
        "virt_mirror_job_info{job=\"%s\",domain=\"vm\",disk=\"disk0\",state=\"copying\","
        "backend=\"qmp\"}",
        id);
    g_autofree gchar *total = job_series ("job_data_total_bytes", id);
    g_autofree gchar *limit = job_series ("job_speed_limit_bytes", id);
    g_autofree gchar *start = job_series ("job_start_time_seconds", id);
    g_autofree gchar *end = job_series ("job_end_time_seconds", id);

    g_assert_cmpstr (type, ==, "text/plain; version=0.0.4; charset=utf-8");
    assert_promtool_passes ("/metrics", text);
    assert_promtool_passes ("virt-mirror metrics", cli_text);
    g_assert_cmpfloat (sample_value (text, info), ==, 1);
    g_assert_cmpfloat (sample_value (text, total), >=, IMAGE_SIZE);
    g_assert_cmpfloat (sample_value (text, limit), ==, 4 * 1024 * 1024);
    g_assert_cmpfloat (sample_value (text, start), >, 0);
    /* a copy that runs has not ended */
    g_assert_cmpfloat (sample_value (text, end), ==, -1);
    g_assert_cmpfloat (sample_value (text, "virt_mirror_jobs{state=\"copying\"}"), ==, 1);
    /* the disk's I/O thread, sampled with the load */
    g_assert_cmpfloat (
        sample_value (text,
                      "virt_mirror_iothread_cpu_seconds_total{domain=\"vm\",iothread=\"io0\"}"),
        >=, 0);
    g_assert_cmpfloat (sample_value (text, "virt_mirror_policy_decisions_total{action=\"start\"}"),
                       ==, 1);
    /* the storage's budget, and the copy's speed as what it uses of it */
    g_assert_cmpfloat (sample_value (text, "virt_mirror_storage_budget_bytes{storage=\"array-a\"}"),
                       ==, 60 * 1024 * 1024);
    g_assert_cmpfloat (sample_value (text, "virt_mirror_storage_used_bytes{storage=\"array-a\"}"),
                       ==, 4 * 1024 * 1024);
    g_assert_cmpuint (http_status ("POST", url), ==, SOUP_STATUS_METHOD_NOT_ALLOWED);
}

/* waits until the guest disk has a load sample in /metrics */
static void
wait_guest_sample (const gchar *url)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *text = http_get (url, NULL);

        if (sample_value (text, "virt_mirror_guest_iops{domain=\"vm\",disk=\"disk0\"}") >= 0
            && sample_value (text,
                             "virt_mirror_guest_latency_seconds{domain=\"vm\",disk=\"disk0\"}")
                   >= 0)
            return;
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("no guest load sample in /metrics:\n%s", text);
        g_usleep (100 * 1000);
    }
}

/* the lines of @text that only a request could change: the jobs and the storages' budgets.
 * The guest's load samples, the I/O threads' CPU time and the policy's decisions move on
 * with every tick, so they are left out. */
static gchar *
job_lines (const gchar *text)
{
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
    g_autoptr (GString) kept = g_string_new (NULL);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix (lines[i], "virt_mirror_job")
            || g_str_has_prefix (lines[i], "virt_mirror_storage_budget"))
            g_string_append_printf (kept, "%s\n", lines[i]);
    }
    return g_string_free (g_steal_pointer (&kept), FALSE);
}

/* `metrics` with an argument, and query-metrics with one, are refused and change nothing */
static void
assert_bad_requests (VmrHarness *h)
{
    g_autoptr (VmrCliResult) extra = vmr_harness_cli (h, "metrics", "vmr-1", NULL);
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *all_before = cli_metrics (h);
    g_autofree gchar *before = job_lines (all_before);
    g_autofree gchar *all_after = NULL;
    g_autofree gchar *after = NULL;

    vmr_cli_result_assert_error (extra, 2);
    g_assert_nonnull (strstr (extra->err, "unexpected argument 'vmr-1'"));
    json_object_set_int_member (args, "job", 1);
    reply = vmr_qmp_client_execute_sync (h->control, "query-metrics", args, 10000, &error);
    g_assert_null (reply);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_test_message ("query-metrics with an argument: %s", error->message);
    all_after = cli_metrics (h);
    after = job_lines (all_after);
    g_assert_nonnull (strstr (before, "virt_mirror_job_info{job=\"vmr-1\""));
    g_assert_cmpstr (after, ==, before);
}

static void
test_scraped (Scraper *s, gconstpointer user_data)
{
    VmrHarness *h = &s->t.h;
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *listen = g_strdup_printf ("127.0.0.1:%u", port);
    g_autofree gchar *url = g_strdup_printf ("http://%s/metrics", listen);
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *text = NULL;
    g_autofree gchar *policy_text = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *processed = NULL;
    g_autofree gchar *completed = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    g_autoptr (JsonObject) job = NULL;
    VmrHarnessDisk disk = { "disk0", NULL, "raw", "io0", .scsi = TRUE };
    gdouble start_s = (gdouble) g_get_real_time () / G_USEC_PER_SEC;
    gint64 done;

    if (vmr_harness_skipped (h))
        return;
    dest = vmr_harness_path (h, "dest.raw");
    /* the destination's storage has a budget well over the copy's speed */
    policy_text = g_strdup_printf ("[storage array-a]\npaths = %s\nbudget = 60M\n", dest);
    policy = vmr_harness_write_policy (h, policy_text);
    vmr_harness_start_daemon (h, "--metrics-listen", listen, "--policy", policy, NULL);
    start_prometheus (s, port);
    source = vmr_harness_create_image (h, "source.raw", "raw", IMAGE_SIZE, 0x3e7);
    expected = vmr_harness_expected_path (source);
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    writer = vmr_harness_writer_new (h, "disk0", expected, 0x3e7);
    vmr_harness_attach (h, "vm");
    wait_guest_sample (url);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--speed", COPY_SPEED, NULL);
    json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_writer_write (writer, WRITES);
    check_metrics_during_copy (h, url, id);
    /* Prometheus has the copy while it runs */
    while (prometheus_job_value (s, "virt_mirror_job_data_processed_bytes", id, NULL) < 0) {
        g_autoptr (JsonObject) running = vmr_harness_get_job (h, id);

        if (g_strcmp0 (vmr_json_job_state (running), "copying") != 0)
            vmr_fail ("Prometheus had no sample of %s before it left copying", id);
        g_usleep (200 * 1000);
    }
    vmr_harness_writer_write (writer, WRITES);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    done = vmr_harness_json_int (vmr_harness_json_object (job, "progress"), "done");
    /* the guest's writes during the copy add to what it moves */
    g_assert_cmpint (done, ==,
                     vmr_harness_json_int (vmr_harness_json_object (job, "progress"), "total"));
    g_assert_cmpint (done, >=, IMAGE_SIZE);

    /* the completed job's figures, over HTTP and through the control socket */
    text = http_get (url, NULL);
    assert_promtool_passes ("/metrics after the copy", text);
    g_clear_pointer (&text, g_free);
    text = cli_metrics (h);
    assert_promtool_passes ("virt-mirror metrics after the copy", text);
    processed = job_series ("job_data_processed_bytes", id);
    g_assert_cmpfloat (sample_value (text, processed), ==, (gdouble) done);
    completed = g_strdup_printf (
        "virt_mirror_job_info{job=\"%s\",domain=\"vm\",disk=\"disk0\",state=\"completed\","
        "backend=\"qmp\"}",
        id);
    g_assert_cmpfloat (sample_value (text, completed), ==, 1);
    g_assert_cmpfloat (sample_value (text, "virt_mirror_jobs_total{result=\"completed\"}"), ==, 1);

    /* Prometheus scraped the end too, and the whole copy on its way */
    wait_prometheus_value (s, "virt_mirror_job_info", id, ",state=\"completed\"", 1);
    wait_prometheus_value (s, "virt_mirror_job_data_processed_bytes", id, NULL, (gdouble) done);
    assert_prometheus_history (s, id, start_s, (gdouble) done);

    assert_bad_requests (h);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
    vmr_harness_stop_daemon (h);
}

/* the sample of @series in /metrics once it is at least @min, waiting for it */
static gdouble
wait_sample_at_least (const gchar *url, const gchar *series, gdouble min)
{
    gint64 deadline = g_get_monotonic_time () + SCRAPE_TIMEOUT_S * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *text = http_get (url, NULL);
        gdouble value = sample_value (text, series);

        if (value >= min) {
            assert_promtool_passes ("/metrics with the guest's load", text);
            return value;
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%s is not %g or more after %d s:\n%s", series, min, SCRAPE_TIMEOUT_S, text);
        g_usleep (200 * 1000);
    }
}

/* one load sample of the daemon's, as /metrics shows it */
typedef struct {
    gint64 end_us;      /* wall clock: the end of its interval */
    gdouble interval_s; /* its length */
    gdouble iops;
} DaemonSample;

#define GUEST_SERIES(name) "virt_mirror_" name "{domain=\"vm\",disk=\"disk0\"}"

/*
 * The daemon's load samples of the guest's disk, each once, as /metrics shows
 * them (read every 100 ms, well within a sample interval), until there are
 * @count of them. A sample's end is put on the wall clock at each scrape:
 * the same sample reads a few microseconds apart, a new one an interval on
 */
static GArray *
collect_daemon_samples (const gchar *url, guint count)
{
    GArray *samples = g_array_new (FALSE, TRUE, sizeof (DaemonSample));
    gint64 deadline = g_get_monotonic_time () + SCRAPE_TIMEOUT_S * G_USEC_PER_SEC;

    while (samples->len < count) {
        g_autofree gchar *text = http_get (url, NULL);
        gdouble end_s = sample_value (text, GUEST_SERIES ("guest_sample_time_seconds"));
        DaemonSample sample = {
            .end_us = (gint64) (end_s * G_USEC_PER_SEC),
            .interval_s = sample_value (text, GUEST_SERIES ("guest_sample_interval_seconds")),
            .iops = sample_value (text, GUEST_SERIES ("guest_iops")),
        };
        const DaemonSample *last
            = samples->len > 0 ? &g_array_index (samples, DaemonSample, samples->len - 1) : NULL;

        if (end_s > 0 && sample.interval_s > 0
            && (last == NULL
                || sample.end_us - last->end_us > sample.interval_s * G_USEC_PER_SEC / 2))
            g_array_append_val (samples, sample);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("%u load samples in /metrics within %d s, not %u", samples->len,
                      SCRAPE_TIMEOUT_S, count);
        g_usleep (100 * 1000);
    }
    return samples;
}

/*
 * The daemon's samples against fio's reports of the same time: for each
 * sample that fio's steady reports cover (not the first, which holds fio's
 * start), fio's mean IOPS over the sample's own interval, each report
 * counting for the part of its second inside it. Prints each pair; the
 * means of the pairs are within 10% of each other. Returns fio's mean
 */
static gdouble
assert_samples_match_fio (GArray *samples, GArray *lines)
{
    /* the console's lines carry the host's monotonic time, the daemon's samples its wall clock */
    gint64 offset = g_get_real_time () - g_get_monotonic_time ();
    gint64 covered_from = g_array_index (lines, VmrGuestIops, 0).mono_us;
    gint64 covered_to = g_array_index (lines, VmrGuestIops, lines->len - 1).mono_us;
    gdouble daemon_sum = 0;
    gdouble fio_sum = 0;
    guint windows = 0;

    for (guint i = 0; i < samples->len; i++) {
        const DaemonSample *d = &g_array_index (samples, DaemonSample, i);
        gint64 to = d->end_us - offset;
        gint64 from = to - (gint64) (d->interval_s * G_USEC_PER_SEC);
        gdouble fio;

        if (from < covered_from || to > covered_to)
            continue;
        fio = vmr_guest_iops_mean (lines, from, to, NULL, NULL);
        g_test_message ("window %.2f s ending %.3f: daemon %.1f IOPS, fio %.1f", d->interval_s,
                        (gdouble) d->end_us / G_USEC_PER_SEC, d->iops, fio);
        daemon_sum += d->iops;
        fio_sum += fio;
        windows++;
    }
    g_assert_cmpuint (windows, >=, 6);
    g_test_message ("over %u windows: the daemon %.1f IOPS, fio %.1f (%+.1f%%)", windows,
                    daemon_sum / windows, fio_sum / windows,
                    100 * (daemon_sum - fio_sum) / fio_sum);
    if (fabs (daemon_sum - fio_sum) > 0.1 * fio_sum)
        vmr_fail ("the daemon's IOPS (%.1f) are not within 10%% of fio's (%.1f) over %u windows",
                  daemon_sum / windows, fio_sum / windows, windows);
    return fio_sum / windows;
}

/*
 * The test guest reads its disk (fio, randread at GUEST_RATE IOPS), the disk
 * on an I/O thread, the daemon sampling it every 500 ms: /metrics has the
 * guest's IOPS as fio counts them (within 10% over the same windows), a
 * latency below a second, and the I/O thread's CPU time growing
 */
#define GUEST_RATE 200

static void
test_guest_load (Scraper *s, gconstpointer user_data)
{
    const VmrHarnessGuestJob load = { "load", GUEST_RATE, 20, "randread", NULL, "idle" };
    VmrHarness *h = &s->t.h;
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *listen = g_strdup_printf ("127.0.0.1:%u", port);
    g_autofree gchar *url = g_strdup_printf ("http://%s/metrics", listen);
    g_autofree gchar *policy = NULL;
    g_autofree gchar *source = NULL;
    g_autoptr (VmrConsoleLine) ready = NULL;
    g_autoptr (GArray) samples = NULL;
    g_autoptr (GArray) seen = NULL;
    g_autoptr (GArray) lines = NULL;
    const gchar *cpu = "virt_mirror_iothread_cpu_seconds_total{domain=\"vm\",iothread=\"io0\"}";
    gdouble latency;
    gdouble cpu_before;

    if (vmr_harness_skipped (h) || !vmr_harness_require_guest (h))
        return;
    policy = vmr_harness_write_policy (h, "[defaults]\nsample-interval = 500ms\n");
    vmr_harness_start_daemon (h, "--metrics-listen", listen, "--policy", policy, NULL);
    source = boot_guest (h, &load, 32 * MIB);
    ready = vmr_harness_guest_wait_line (h, "VMR-READY", VMR_HARNESS_GUEST_BOOT_TIMEOUT_S);
    wait_load_baseline (h);
    samples = collect_daemon_samples (url, 12);
    /* and fio's next report, that covers the newest sample */
    seen = vmr_harness_guest_get_iops (h);
    lines = vmr_harness_guest_wait_iops (h, seen->len + 1, 1, 10);
    assert_samples_match_fio (samples, lines);
    latency = wait_sample_at_least (url, GUEST_SERIES ("guest_latency_seconds"), 1e-9);
    g_test_message ("mean latency %.6f s", latency);
    g_assert_cmpfloat (latency, <, 1);
    cpu_before = wait_sample_at_least (url, cpu, 0);
    wait_sample_at_least (url, cpu, cpu_before + 0.01);
    vmr_harness_stop_daemon (h);
}

/* the daemon's stderr has one line, that names @needle; it serves nothing */
static void
assert_refused (VmrHarness *h, VmrCliResult *run, gint status, const gchar *needle)
{
    g_auto (GStrv) lines = g_strsplit (run->err, "\n", -1);
    guint said = 0;

    g_test_message ("virt-mirrord: status %d, stderr: %s", run->status, run->err);
    g_assert_cmpint (run->status, ==, status);
    g_assert_cmpstr (run->out, ==, "");
    for (guint i = 0; lines[i] != NULL; i++) {
        if (!g_str_has_prefix (lines[i], "virt-mirrord: "))
            continue;
        said++;
        if (strstr (lines[i], needle) == NULL)
            vmr_fail ("the refusal does not name %s: %s", needle, lines[i]);
    }
    g_assert_cmpuint (said, ==, 1);
    g_assert_false (g_file_test (h->socket, G_FILE_TEST_EXISTS));
}

static void
test_bad_listen (Scraper *s, gconstpointer user_data)
{
    static const gchar *const bad[] = {
        "nonsense",
        "127.0.0.1",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "localhost:9474",
        "[::1]",
        ":9474",
        /* every address, not loopback: only with --metrics-allow-remote */
        "0.0.0.0:9474",
        "[::]:9474",
    };
    VmrHarness *h = &s->t.h;
    g_autoptr (GSocket) holder = NULL;
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (GSocketAddress) bound = NULL;
    g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
    g_autoptr (GError) error = NULL;
    g_autofree gchar *taken = NULL;
    g_autoptr (VmrCliResult) run = NULL;

    if (vmr_harness_skipped (h))
        return;
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
        g_autoptr (VmrCliResult) refused
            = vmr_harness_run_daemon (h, "--metrics-listen", bad[i], NULL);

        assert_refused (h, refused, 2, bad[i]);
        g_assert_nonnull (strstr (refused->err, "--metrics-listen"));
    }
    /* the environment's address, when there is no option */
    g_setenv ("VIRT_MIRROR_METRICS_LISTEN", "from-env", TRUE);
    {
        g_autoptr (VmrCliResult) refused = vmr_harness_run_daemon (h, "--no-libvirt", NULL);

        g_unsetenv ("VIRT_MIRROR_METRICS_LISTEN");
        assert_refused (h, refused, 2, "'from-env'");
    }
    /* a port another socket listens on */
    holder
        = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
    g_assert_no_error (error);
    address = g_inet_socket_address_new (loopback, 0);
    g_assert_true (g_socket_bind (holder, address, FALSE, &error));
    g_assert_true (g_socket_listen (holder, &error));
    bound = g_socket_get_local_address (holder, &error);
    g_assert_no_error (error);
    taken = g_strdup_printf ("127.0.0.1:%u",
                             g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
    run = vmr_harness_run_daemon (h, "--metrics-listen", taken, NULL);
    assert_refused (h, run, 1, taken);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    g_test_add ("/metrics/scraped", Scraper, NULL, scraper_setup, test_scraped, scraper_teardown);
    g_test_add ("/metrics/guest-load", Scraper, NULL, scraper_setup, test_guest_load,
                scraper_teardown);
    g_test_add ("/metrics/bad-listen", Scraper, NULL, scraper_setup, test_bad_listen,
                scraper_teardown);
    return g_test_run ();
}
