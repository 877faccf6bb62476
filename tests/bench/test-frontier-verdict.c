/*
 * The arithmetic scripts/demo's verdict rests on: the means of the guest's
 * samples over a window, the static frontier read at the adaptive copy's
 * harm, and frontier-verdict's lines on a run of three copies (the lines
 * there, their numbers parsing), whatever the verdict.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "bench-adaptive.h"
#include "bench-samples.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* a file of @text in a new directory, for the loader; its path */
static gchar *
write_file (const gchar *dir, const gchar *name, const gchar *text)
{
    gchar *path = g_build_filename (dir, name, NULL);

    g_assert_true (g_file_set_contents (path, text, -1, NULL));
    return path;
}

static void
test_samples_mean (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("frontier-XXXXXX", NULL);
    /* the same sample twice (a reading taken before the next sample), then one of 2 s */
    g_autofree gchar *path
        = write_file (dir, "s.log", "10 100 50 1\n10 100 50 1\n11 300 150\n\n13 200 0 2\n");
    g_autoptr (GArray) samples = bench_samples_load (path, 1, NULL);
    gdouble lat = -1, iops;

    g_assert_nonnull (samples);
    g_assert_cmpuint (samples->len, ==, 3);
    /* the middles: 9.5, 10.5, 12; IOPS weighted by span, latency by I/Os */
    iops = bench_samples_mean (samples, 9, 11, &lat);
    g_assert_cmpfloat_with_epsilon (iops, (100 + 300) / 2.0, 1e-9);
    g_assert_cmpfloat_with_epsilon (lat, (100 * 50 + 300 * 150) / 400.0, 1e-9);
    iops = bench_samples_mean (samples, 9, 14, &lat);
    g_assert_cmpfloat_with_epsilon (iops, (100 + 300 + 2 * 200) / 4.0, 1e-9);
    g_assert_cmpfloat_with_epsilon (lat, (100 * 50 + 300 * 150) / 800.0, 1e-9);
    /* a window's end is not in it */
    g_assert_cmpfloat (bench_samples_mean (samples, 0, 9.5, &lat), ==, -1);
    g_assert_cmpfloat (lat, ==, 0);
    g_unlink (path);
    g_rmdir (dir);
}

static void
test_samples_bad (void)
{
    static const gchar *const bad[] = { "10 100\n", "10 x 50\n", "10 100 50 0\n", "10 -1 50\n" };

    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
        g_autofree gchar *dir = g_dir_make_tmp ("frontier-XXXXXX", NULL);
        g_autofree gchar *text = g_strdup_printf ("1 100 50\n%s", bad[i]);
        g_autofree gchar *path = write_file (dir, "s.log", text);
        g_autoptr (GError) error = NULL;
        g_autoptr (GArray) samples = bench_samples_load (path, 1, &error);

        g_assert_null (samples);
        g_assert_nonnull (strstr (error->message, ":2: not a sample"));
        g_unlink (path);
        g_rmdir (dir);
    }
}

/* a job of @kind that took @time_s at @harm (in QEMU's view; fio's none) */
static JobResult *
job (JobKind kind, guint cap_mib, gdouble harm, gdouble time_s)
{
    JobResult *result = g_new0 (JobResult, 1);

    result->kind = kind;
    result->cap_mib = cap_mib;
    result->before_iops = result->during_iops = 1000;
    result->before_lat_us = result->during_lat_us = 500;
    result->qemu_before_iops = result->qemu_during_iops = 1000;
    result->qemu_before_lat_us = 20;
    result->qemu_during_lat_us = 20 * (1 + harm);
    result->migration_s = time_s;
    return result;
}

typedef struct {
    const gchar *what;
    gdouble adaptive_harm, adaptive_s;
    gdouble unlimited_harm, unlimited_s;
    gdouble cap_harm, cap_s;
    gboolean bracketed; /* a static copy on each side of the adaptive copy's harm */
    gboolean dominated; /* a static copy no harsher and no slower */
} FrontierCase;

static const FrontierCase frontier_cases[] = {
    { "bracketed, fast enough", 0.5, 9, 2.0, 4, 0.1, 10, TRUE, FALSE },
    { "bracketed, too slow", 0.5, 19.8, 2.0, 2, 0.1, 20, TRUE, FALSE },
    { "dominated by the cap", 0.5, 11, 2.0, 4, 0.4, 10, TRUE, TRUE },
    { "every static copy gentler, slower", 3.0, 3, 2.0, 4, 0.1, 10, FALSE, FALSE },
    { "gentler than every static copy", 0.05, 11, 2.0, 4, 0.1, 10, FALSE, FALSE },
};

static void
test_frontier (void)
{
    AdaptiveYardstick yardstick = { .target = 0.2, .max_harm = 1.0, .storage = "test" };
    static const Workload workload = { .name = "test", .fixed_rate = TRUE };

    for (guint i = 0; i < G_N_ELEMENTS (frontier_cases); i++) {
        const FrontierCase *c = &frontier_cases[i];
        g_autoptr (WorkloadRound) round = workload_round_new (&workload, 1);
        g_autoptr (GString) text = g_string_new (NULL);
        JobResult *adaptive = job (JOB_ADAPTIVE, 0, c->adaptive_harm, c->adaptive_s);
        FrontierJudgement judgement;
        gdouble expected_s;

        g_test_message ("%s", c->what);
        g_ptr_array_add (round->jobs, adaptive);
        g_ptr_array_add (round->jobs, job (JOB_UNLIMITED, 0, c->unlimited_harm, c->unlimited_s));
        g_ptr_array_add (round->jobs, job (JOB_CAP, 100, c->cap_harm, c->cap_s));
        adaptive_judge_frontier (round, adaptive, &yardstick, &judgement, text);
        g_assert_cmpfloat_with_epsilon (judgement.harm, c->adaptive_harm, 1e-9);
        /* equal baselines: no noise */
        g_assert_cmpfloat_with_epsilon (judgement.noise, 0, 1e-9);
        g_assert_true (judgement.f1_met == (c->adaptive_harm <= yardstick.target));
        g_assert_true ((judgement.gentle != NULL && judgement.harsh != NULL) == c->bracketed);
        g_assert_true ((judgement.dominating != NULL) == c->dominated);
        g_assert_true (judgement.f2_applies == (c->cap_harm <= yardstick.target));
        if (c->bracketed)
            /* on the line between the two static points */
            expected_s = c->cap_s
                         + (c->adaptive_harm - c->cap_harm) / (c->unlimited_harm - c->cap_harm)
                               * (c->unlimited_s - c->cap_s);
        else if (judgement.gentle == NULL)
            expected_s = c->cap_s; /* the gentlest one's */
        else
            expected_s = MIN (c->cap_s, c->unlimited_s); /* the fastest gentler one's */
        g_assert_cmpfloat_with_epsilon (judgement.frontier_s, expected_s, 1e-9);
        g_assert_true (judgement.f2_met == (c->adaptive_s <= ADAPTIVE_FRONTIER_SLACK * expected_s));
        g_assert_cmpuint (text->len, >, 0);
    }
}

/* the numbers of a copy's line after its name: time, MiB/s, harm fio, harm QEMU */
static void
assert_copy_line (const gchar *output, const gchar *name)
{
    g_autofree gchar *prefix = g_strdup_printf ("\n  %s ", name);
    const gchar *line = strstr (output, prefix);
    gchar *end;
    gdouble time_s, mib_s;

    g_assert_nonnull (line);
    line += strlen (prefix);
    time_s = g_ascii_strtod (line, &end);
    g_assert_true (end != line && time_s > 0);
    line = end + (*end == '+');
    mib_s = g_ascii_strtod (line, &end);
    g_assert_true (end != line && mib_s > 0);
    for (guint i = 0; i < 2; i++) {
        line = end;
        g_assert_cmpfloat (g_ascii_strtod (line, &end), >=, 0);
        g_assert_true (end != line);
    }
}

/* a guest at 1000 IOPS, 400 us (fio) and 20 us (QEMU), slower while copies 2 and 3 run */
static void
write_run (const gchar *dir, gchar **out_fio, gchar **out_qemu)
{
    g_autoptr (GString) fio = g_string_new (NULL);
    g_autoptr (GString) qemu = g_string_new (NULL);

    for (guint t = 1; t <= 60; t++) {
        gdouble slower = (t > 25 && t <= 28) ? 3 : (t > 45 && t <= 55) ? 1.2 : 1;

        g_string_append_printf (fio, "%u.2 %.0f %.0f\n", t, 1000 / slower, 400 * slower);
        /* each reading twice, as a poll every half sample-interval takes it */
        for (guint n = 0; n < 2; n++)
            g_string_append_printf (qemu, "%u %.0f %.0f 1\n", t, 1000 / slower, 20 * slower);
    }
    *out_fio = write_file (dir, "fio.log", fio->str);
    *out_qemu = write_file (dir, "qemu.log", qemu->str);
}

/* frontier-verdict on @fio and @qemu with the NULL-terminated @copies; its wait status */
static gint
run_program (const gchar *fio, const gchar *qemu, const gchar *const *copies, gchar **out,
             gchar **err)
{
    const gchar *program = g_getenv ("FRONTIER_VERDICT");
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    const gchar *const options[]
        = { "--guest-impact", "20%", "--disk-mib", "1024", "--fio", fio, "--qemu", qemu };
    gint status = -1;

    g_assert_nonnull (program);
    g_ptr_array_add (argv, (gpointer) program);
    for (guint i = 0; i < G_N_ELEMENTS (options); i++)
        g_ptr_array_add (argv, (gpointer) options[i]);
    for (guint i = 0; copies[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) copies[i]);
    g_ptr_array_add (argv, NULL);
    g_assert_true (g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                 out, err, &status, NULL));
    return status;
}

static void
test_program (void)
{
    static const gchar *const copies[] = { "adaptive,2,10,18", "unlimited,20,25,28",
                                           "cap128,40,45,55", "cap8,30,35,40,timed-out", NULL };
    g_autofree gchar *dir = g_dir_make_tmp ("frontier-XXXXXX", NULL);
    g_autofree gchar *fio = NULL, *qemu = NULL;
    g_autofree gchar *out = NULL, *err = NULL;
    gint status;

    write_run (dir, &fio, &qemu);
    status = run_program (fio, qemu, copies, &out, &err);
    g_test_message ("%s%s", out, err);
    g_assert_true (g_spawn_check_wait_status (status, NULL));
    assert_copy_line (out, "adaptive");
    assert_copy_line (out, "unlimited");
    assert_copy_line (out, "cap 128M");
    /* a copy not in sync in time is said to be no point */
    g_assert_nonnull (strstr (out, "\n  cap 8M     not in sync within 5 s"));
    g_assert_true (g_regex_match_simple ("^noise of the pre-copy windows: [0-9.]+$", out,
                                         G_REGEX_MULTILINE, 0));
    g_assert_true (
        g_regex_match_simple ("^F1 (met|missed): harm [0-9.]+ ", out, G_REGEX_MULTILINE, 0));
    g_assert_true (
        g_regex_match_simple ("^F2 (met|missed|cannot judge): ", out, G_REGEX_MULTILINE, 0));
    g_assert_true (g_regex_match_simple ("^verdict: ", out, G_REGEX_MULTILINE, 0));
    g_unlink (fio);
    g_unlink (qemu);
    g_rmdir (dir);
}

/* bad input: one line naming the problem, exit 2 */
static void
test_program_bad (void)
{
    static const gchar *const bad[] = { "adaptive,10,5,18", "fast,2,10,18", "adaptive,2,10" };
    g_autofree gchar *dir = g_dir_make_tmp ("frontier-XXXXXX", NULL);
    g_autofree gchar *fio = NULL, *qemu = NULL;

    write_run (dir, &fio, &qemu);
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
        const gchar *const copies[] = { bad[i], "unlimited,20,25,28", NULL };
        g_autofree gchar *out = NULL, *err = NULL;
        gint status = run_program (fio, qemu, copies, &out, &err);

        g_assert_true (WIFEXITED (status));
        g_assert_cmpint (WEXITSTATUS (status), ==, 2);
        g_assert_nonnull (strstr (err, bad[i]));
        g_assert_cmpstr (out, ==, "");
    }
    g_unlink (fio);
    g_unlink (qemu);
    g_rmdir (dir);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/frontier-verdict/samples-mean", test_samples_mean);
    g_test_add_func ("/frontier-verdict/samples-bad", test_samples_bad);
    g_test_add_func ("/frontier-verdict/frontier", test_frontier);
    g_test_add_func ("/frontier-verdict/program", test_program);
    g_test_add_func ("/frontier-verdict/program-bad", test_program_bad);
    return g_test_run ();
}
