#define G_LOG_DOMAIN "vmr-test"

/*
 * How progress looks (cli/cli-progress.c): bars, ETAs, the line of
 * `migrate --wait`, the table of `watch` and its width on narrow and wide
 * terminals, and the plain lines for logs.
 */

#include <string.h>

#include "cli-progress.h"

static VmrCliJob *
job_from_json (const gchar *text)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    VmrCliJob *job;

    g_assert_true (json_parser_load_from_data (parser, text, -1, &error));
    job = vmr_cli_job_new (json_parser_get_root (parser), "query-job", &error);
    g_assert_no_error (error);
    g_assert_nonnull (job);
    return job;
}

/* a job a quarter copied of 4 GiB at 100 MiB/s, throttled by the policy */
static const gchar copying_job[]
    = "{\"id\": \"vmr-3\", \"domain\": \"web01\", \"disk\": \"disk0\", \"state\": \"throttled\","
      " \"progress\": {\"total\": 4294967296, \"done\": 1073741824, \"backlog\": 3221225472,"
      "  \"rate\": 104857600, \"eta\": 30.72},"
      " \"policy\": {\"decision\": \"throttle\","
      "  \"reason\": \"guest busy: 2400 IOPS above iops-throttle 2000\","
      "  \"guest-iops\": [1402, 2380, 2400], \"guest-latency-us\": 820.5}}";

static const gchar completed_job[]
    = "{\"id\": \"vmr-12\", \"domain\": \"db02\", \"disk\": \"vda\", \"state\": \"completed\","
      " \"progress\": {\"total\": 1048576, \"done\": 1048576, \"backlog\": 0, \"rate\": 0,"
      "  \"eta\": null}, \"policy\": {\"decision\": \"start\", \"reason\": \"guest quiet\","
      "  \"guest-iops\": [], \"guest-latency-us\": 0}}";

static const gchar queued_job[]
    = "{\"id\": \"vmr-4\", \"domain\": \"web01\", \"disk\": \"disk1\", \"state\": \"queued\","
      " \"waiting-for\": \"max-parallel\"}";

typedef struct {
    gdouble fraction;
    guint width;
    const gchar *bar;
} BarCase;

static const BarCase bar_cases[] = {
    { 0.0, 10, "[..........]" }, { 0.25, 10, "[##........]" },
    { 0.5, 4, "[##..]" },        { 0.999, 10, "[#########.]" },
    { 1.0, 10, "[##########]" }, { 1.5, 3, "[###]" },
    { -0.5, 3, "[...]" },        { 0.5, 0, "[]" },
};

static void
test_bar (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (bar_cases); i++) {
        g_autofree gchar *bar = vmr_cli_progress_bar (bar_cases[i].fraction, bar_cases[i].width);

        g_assert_cmpstr (bar, ==, bar_cases[i].bar);
    }
}

typedef struct {
    gdouble eta; /* seconds in the job's progress */
    const gchar *state;
    const gchar *shown; /* NULL: no ETA shown */
} EtaCase;

static const EtaCase eta_cases[] = {
    { 30.72, "copying", "31s" }, { 125, "copying", "2m05s" }, { 3725, "throttled", "1h02m" },
    { 1.5, "synced", "1.5s" },   { 30, "paused", NULL },      { 30, "completed", NULL },
    { -1, "copying", NULL },
};

static void
test_eta (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (eta_cases); i++) {
        g_autofree gchar *text = g_strdup_printf (
            "{\"id\": \"vmr-1\", \"state\": \"%s\", \"progress\": {\"total\": 100, \"done\": 50,"
            " \"rate\": 10, \"eta\": %s}}",
            eta_cases[i].state, eta_cases[i].eta < 0 ? "null" : "0");
        g_autoptr (VmrCliJob) job = job_from_json (text);
        g_autofree gchar *eta = NULL;

        job->eta = eta_cases[i].eta;
        eta = vmr_cli_job_format_eta (job);
        g_assert_cmpstr (eta, ==, eta_cases[i].shown);
    }
}

typedef struct {
    const gchar *text;
    guint columns;
    const gchar *cut;
} TruncateCase;

static const TruncateCase truncate_cases[] = {
    { "vmr-3 copying", 80, "vmr-3 copying" },
    { "vmr-3 copying", 5, "vmr-3" },
    { "vmr-3 copying", 0, "" },
    /* é is one cell in two bytes, 漢 two cells, a combining acute none */
    { "caf\xc3\xa9-disk", 4, "caf\xc3\xa9" },
    { "\xe6\xbc\xa2\xe6\xbc\xa2x", 3, "\xe6\xbc\xa2" },
    { "\xe6\xbc\xa2\xe6\xbc\xa2x", 4, "\xe6\xbc\xa2\xe6\xbc\xa2" },
    { "e\xcc\x81x", 1, "e\xcc\x81" },
};

static void
test_truncate (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (truncate_cases); i++) {
        g_autofree gchar *cut
            = vmr_cli_progress_truncate (truncate_cases[i].text, truncate_cases[i].columns);

        g_assert_cmpstr (cut, ==, truncate_cases[i].cut);
        g_assert_cmpuint (vmr_cli_progress_text_width (cut), <=, truncate_cases[i].columns);
    }
}

/* the line of migrate --wait: a bar from 91 columns on, never wider than the terminal */
static void
test_job_line (void)
{
    g_autoptr (VmrCliJob) job = job_from_json (copying_job);
    g_autofree gchar *wide = vmr_cli_progress_job_line (job, 120);
    g_autofree gchar *medium = vmr_cli_progress_job_line (job, 90);
    g_autofree gchar *narrow = vmr_cli_progress_job_line (job, 40);

    g_assert_cmpstr (wide, ==,
                     "vmr-3 throttled [#######.......................]  25.0%  1 GiB/4 GiB  "
                     "backlog 3 GiB  100 MiB/s  ETA 31s");
    g_assert_cmpstr (medium, ==,
                     "vmr-3 throttled  25.0%  1 GiB/4 GiB  backlog 3 GiB  100 MiB/s  ETA "
                     "31s");
    g_assert_cmpuint (strlen (narrow), ==, 39);
    g_assert_true (g_str_has_prefix (medium, narrow));
}

static void
test_plain_line (void)
{
    g_autoptr (VmrCliJob) job = job_from_json (copying_job);
    g_autoptr (VmrCliJob) queued = job_from_json (queued_job);
    g_autofree gchar *line = vmr_cli_progress_plain_line (job, FALSE);
    g_autofree gchar *guest = vmr_cli_progress_plain_line (job, TRUE);
    g_autofree gchar *none = vmr_cli_progress_plain_line (queued, TRUE);

    g_assert_cmpstr (line, ==,
                     "vmr-3: throttled 25.0% (1 GiB/4 GiB, backlog 3 GiB, 100 MiB/s, ETA "
                     "31s)");
    g_assert_cmpstr (guest, ==,
                     "vmr-3: throttled 25.0% (1 GiB/4 GiB, backlog 3 GiB, 100 MiB/s, ETA "
                     "31s); guest 2400 IOPS, 820 us; policy throttle (guest busy: 2400 IOPS "
                     "above iops-throttle 2000)");
    g_assert_null (none);
}

/* the cell of @column in the table's row @line, found under its title in @header */
static gchar *
cell_under (const gchar *header, const gchar *line, const gchar *column, const gchar *next)
{
    const gchar *start = strstr (header, column);
    const gchar *end = next != NULL ? strstr (header, next) : NULL;
    gsize from = (gsize) (start - header);
    gsize to = end != NULL ? (gsize) (end - header) : strlen (line);

    g_assert_nonnull (start);
    if (from >= strlen (line))
        return g_strdup ("");
    return g_strstrip (g_strndup (line + from, MIN (to, strlen (line)) - from));
}

/* @line has a bar of at least 10 cells with @fraction of them filled, then @after */
static void
assert_bar (const gchar *line, gdouble fraction, const gchar *after)
{
    const gchar *open = strchr (line, '[');
    const gchar *close = open != NULL ? strchr (open, ']') : NULL;
    guint width;
    g_autofree gchar *expected = NULL;

    g_assert_nonnull (close);
    width = (guint) (close - open - 1);
    g_assert_cmpuint (width, >=, 10);
    expected = vmr_cli_progress_bar (fraction, width);
    g_assert_cmpint (strncmp (open, expected, width + 2), ==, 0);
    g_assert_true (g_str_has_prefix (close + 1, after));
}

static void
test_table (void)
{
    g_autoptr (VmrCliJob) copying = job_from_json (copying_job);
    g_autoptr (VmrCliJob) completed = job_from_json (completed_job);
    g_autoptr (VmrCliJob) queued = job_from_json (queued_job);
    VmrCliJob *jobs[] = { copying, completed, queued };
    g_auto (GStrv) wide = vmr_cli_progress_table (jobs, 3, 120);
    g_auto (GStrv) narrow = vmr_cli_progress_table (jobs, 3, 80);
    g_auto (GStrv) tiny = vmr_cli_progress_table (jobs, 3, 30);
    g_auto (GStrv) empty = vmr_cli_progress_table (NULL, 0, 120);

    for (guint i = 0; g_test_verbose () && wide[i] != NULL; i++)
        g_test_message ("%s|\n%s|\n%s|", wide[i], narrow[i], tiny[i]);
    /* a line of titles, two lines per job */
    g_assert_cmpuint (g_strv_length (wide), ==, 7);
    g_assert_cmpuint (g_strv_length (narrow), ==, 7);
    g_assert_true (g_str_has_prefix (wide[0], "ID      DISK         STATE"));
    /* the columns line up under their titles */
    for (guint i = 0; i < 3; i++) {
        const gchar *row = wide[1 + 2 * i];
        g_autofree gchar *id = cell_under (wide[0], row, "ID", "DISK");
        g_autofree gchar *disk = cell_under (wide[0], row, "DISK", "STATE");
        g_autofree gchar *expected_disk = g_strdup_printf ("%s/%s", jobs[i]->domain, jobs[i]->disk);

        g_assert_cmpstr (id, ==, jobs[i]->id);
        g_assert_cmpstr (disk, ==, expected_disk);
    }
    assert_bar (wide[1], 0.25, "  25.0%");
    assert_bar (wide[3], 1.0, "   100%");
    assert_bar (wide[5], 0.0, "      -");
    g_assert_nonnull (strstr (wide[5], "queued (max-parallel)  ["));
    {
        g_autofree gchar *rate = cell_under (wide[0], wide[1], "RATE", "ETA");
        g_autofree gchar *eta = cell_under (wide[0], wide[1], "ETA", "BACKLOG");
        g_autofree gchar *backlog = cell_under (wide[0], wide[1], "BACKLOG", "IOPS");
        g_autofree gchar *iops = cell_under (wide[0], wide[1], "IOPS", "LATENCY");
        g_autofree gchar *latency = cell_under (wide[0], wide[1], "LATENCY", NULL);
        g_autofree gchar *done_rate = cell_under (wide[0], wide[3], "RATE", "ETA");

        g_assert_cmpstr (rate, ==, "100 MiB/s");
        g_assert_cmpstr (eta, ==, "31s");
        g_assert_cmpstr (backlog, ==, "3 GiB");
        g_assert_cmpstr (iops, ==, "2400");
        g_assert_cmpstr (latency, ==, "820 us");
        g_assert_cmpstr (done_rate, ==, "-");
    }
    /* the second line, under DISK */
    g_assert_cmpstr (wide[2], ==,
                     "        policy: throttle (guest busy: 2400 IOPS above iops-throttle 2000)");
    g_assert_cmpstr (wide[4], ==, "        policy: start (guest quiet)");
    g_assert_cmpstr (wide[6], ==, "        policy: -");

    /* no line wider than the terminal less one cell; a narrow one has no bar */
    for (guint i = 0; wide[i] != NULL; i++)
        g_assert_cmpuint (vmr_cli_progress_text_width (wide[i]), <=, 119);
    for (guint i = 0; narrow[i] != NULL; i++) {
        g_assert_cmpuint (vmr_cli_progress_text_width (narrow[i]), <=, 79);
        g_assert_null (strchr (narrow[i], '['));
    }
    g_assert_nonnull (strstr (narrow[1], " 25.0%"));
    for (guint i = 0; tiny[i] != NULL; i++)
        g_assert_cmpuint (vmr_cli_progress_text_width (tiny[i]), <=, 29);
    g_assert_cmpuint (g_strv_length (empty), ==, 1);
    g_assert_true (g_str_has_prefix (empty[0], "ID"));
}

/* a job that failed says why on its second line */
static void
test_table_failed (void)
{
    g_autoptr (VmrCliJob) failed = job_from_json (
        "{\"id\": \"vmr-7\", \"domain\": \"web01\", \"disk\": \"disk1\", \"state\": \"failed\","
        " \"reason\": \"destination I/O error: No space left on device\"}");
    VmrCliJob *jobs[] = { failed };
    g_auto (GStrv) table = vmr_cli_progress_table (jobs, 1, 120);

    g_assert_cmpuint (g_strv_length (table), ==, 3);
    g_assert_nonnull (strstr (table[1], "failed"));
    g_assert_cmpstr (table[2], ==, "       reason: destination I/O error: No space left on device");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/cli-progress/bar", test_bar);
    g_test_add_func ("/cli-progress/eta", test_eta);
    g_test_add_func ("/cli-progress/truncate", test_truncate);
    g_test_add_func ("/cli-progress/job-line", test_job_line);
    g_test_add_func ("/cli-progress/plain-line", test_plain_line);
    g_test_add_func ("/cli-progress/table", test_table);
    g_test_add_func ("/cli-progress/table-failed", test_table_failed);
    return g_test_run ();
}
