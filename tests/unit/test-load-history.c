/*
 * A disk's load history: cumulative I/O counters in, per-interval IOPS and
 * mean latency out.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "load-history.h"

#define MS G_GINT64_CONSTANT (1000)

typedef struct {
    gint64 time_ms; /* monotonic */
    guint64 read_ops, write_ops;
    guint64 read_time_ms, write_time_ms; /* counters in ms, for readable tables */
} Reading;

typedef struct {
    gint64 time_ms;
    gdouble iops;
    gdouble latency_us;
} ExpectedSample;

typedef struct {
    const gchar *name;
    gint64 keep_ms;
    Reading readings[8];       /* up to the first with time 0 */
    ExpectedSample samples[8]; /* oldest first, up to the first with time 0 */
} HistoryCase;

static const HistoryCase history_cases[] = {
    { "the first reading only sets the base", 60000, { { 1000, 500, 200, 100, 50 } }, { { 0 } } },
    { "one interval: 8 KB random I/O at 1400 IOPS, 70% reads",
      60000,
      { { 1000, 0, 0, 0, 0 }, { 2000, 980, 420, 686, 434 } },
      /* (686 + 434) ms over 1400 operations: 800 us each */
      { { 2000, 1400, 800 } } },
    { "an interval of 2 s",
      60000,
      { { 1000, 100, 100, 10, 10 }, { 3000, 1500, 1500, 1410, 1410 } },
      { { 3000, 1400, 1000 } } },
    { "an interval of 500 ms",
      60000,
      { { 1000, 0, 0, 0, 0 }, { 1500, 350, 350, 70, 70 } },
      { { 1500, 1400, 200 } } },
    { "no I/O: 0 IOPS, latency 0",
      60000,
      { { 1000, 7, 7, 7, 7 }, { 2000, 7, 7, 7, 7 } },
      { { 2000, 0, 0 } } },
    { "several intervals",
      60000,
      { { 1000, 0, 0, 0, 0 },
        { 2000, 1000, 0, 1000, 0 },
        { 3000, 1000, 2000, 1000, 1000 },
        { 4000, 1500, 2000, 1500, 1000 } },
      { { 2000, 1000, 1000 }, { 3000, 2000, 500 }, { 4000, 500, 1000 } } },
    { "read counter backwards: the base restarts",
      60000,
      { { 1000, 0, 0, 0, 0 },
        { 2000, 1400, 0, 700, 0 },
        { 3000, 10, 0, 5, 0 },
        { 4000, 1410, 0, 705, 0 } },
      { { 2000, 1400, 500 }, { 4000, 1400, 500 } } },
    { "write counter backwards: the base restarts",
      60000,
      { { 1000, 0, 5000, 0, 5000 }, { 2000, 0, 3, 0, 1 }, { 3000, 0, 1003, 0, 1001 } },
      { { 3000, 1000, 1000 } } },
    { "time counter backwards: the base restarts",
      60000,
      { { 1000, 0, 0, 9000, 0 }, { 2000, 100, 0, 10, 0 }, { 3000, 200, 0, 20, 0 } },
      { { 3000, 100, 100 } } },
    { "no time passed: no sample",
      60000,
      { { 1000, 0, 0, 0, 0 }, { 1000, 100, 0, 1, 0 }, { 2000, 200, 0, 2, 0 } },
      { { 2000, 100, 10 } } },
    { "old samples dropped",
      2500,
      { { 1000, 0, 0, 0, 0 },
        { 2000, 100, 0, 0, 0 },
        { 3000, 300, 0, 0, 0 },
        { 4000, 600, 0, 0, 0 },
        { 5000, 1000, 0, 0, 0 },
        { 6000, 1500, 0, 0, 0 } },
      /* kept: those no older than 6000 - 2500 */
      { { 4000, 300, 0 }, { 5000, 400, 0 }, { 6000, 500, 0 } } },
    { "a sample exactly keep old stays",
      2000,
      { { 1000, 0, 0, 0, 0 },
        { 2000, 100, 0, 0, 0 },
        { 3000, 300, 0, 0, 0 },
        { 4000, 600, 0, 0, 0 } },
      { { 2000, 100, 0 }, { 3000, 200, 0 }, { 4000, 300, 0 } } },
};

/* the time of the last reading of @c before the last one at @time_ms */
static gint64
reading_before (const HistoryCase *c, gint64 time_ms)
{
    gint64 before = 0;

    for (guint r = 1; r < G_N_ELEMENTS (c->readings) && c->readings[r].time_ms > 0; r++) {
        if (c->readings[r].time_ms == time_ms)
            before = c->readings[r - 1].time_ms;
    }
    return before;
}

static void
test_load_history_table (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (history_cases); i++) {
        const HistoryCase *c = &history_cases[i];
        g_autoptr (VmrLoadHistory) history = vmr_load_history_new ();
        const VmrLoadSample *samples;
        guint n_expected = 0;
        guint n = 0;

        g_test_message ("%s", c->name);
        for (guint r = 0; r < G_N_ELEMENTS (c->readings) && c->readings[r].time_ms > 0; r++) {
            const Reading *reading = &c->readings[r];
            VmrIoCounters counters = {
                .read_ops = reading->read_ops,
                .write_ops = reading->write_ops,
                .read_time_ns = reading->read_time_ms * 1000 * 1000,
                .write_time_ns = reading->write_time_ms * 1000 * 1000,
            };

            vmr_load_history_add (history, &counters, reading->time_ms * MS, c->keep_ms * MS);
        }
        while (n_expected < G_N_ELEMENTS (c->samples) && c->samples[n_expected].time_ms > 0)
            n_expected++;
        samples = vmr_load_history_get_samples (history, &n);
        g_assert_cmpuint (n, ==, n_expected);
        for (guint s = 0; s < n; s++) {
            g_assert_cmpint (samples[s].time_us, ==, c->samples[s].time_ms * MS);
            g_assert_cmpfloat_with_epsilon (samples[s].iops, c->samples[s].iops, 1e-6);
            g_assert_cmpfloat_with_epsilon (samples[s].latency_us, c->samples[s].latency_us, 1e-6);
            /* each interval runs from the reading before, whether that one made a sample or not */
            g_assert_cmpint (samples[s].interval_us, ==,
                             (c->samples[s].time_ms - reading_before (c, c->samples[s].time_ms))
                                 * MS);
        }
        if (n == 0)
            g_assert_null (vmr_load_history_latest (history));
        else
            g_assert_true (vmr_load_history_latest (history) == &samples[n - 1]);
    }
}

/* a long history is capped, whatever keep says */
static void
test_load_history_cap (void)
{
    g_autoptr (VmrLoadHistory) history = vmr_load_history_new ();
    const VmrLoadSample *samples;
    guint n = 0;

    for (guint i = 0; i <= 5000; i++) {
        VmrIoCounters counters = { .read_ops = (guint64) i * 1400 };

        vmr_load_history_add (history, &counters, (gint64) (i + 1) * G_USEC_PER_SEC,
                              G_GINT64_CONSTANT (1000000) * G_USEC_PER_SEC);
    }
    samples = vmr_load_history_get_samples (history, &n);
    g_assert_cmpuint (n, ==, 4096);
    /* the newest are kept */
    g_assert_cmpint (samples[n - 1].time_us, ==, G_GINT64_CONSTANT (5001) * G_USEC_PER_SEC);
    g_assert_cmpint (samples[0].time_us, ==, G_GINT64_CONSTANT (906) * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (samples[0].iops, 1400, 1e-6);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/load-history/table", test_load_history_table);
    g_test_add_func ("/load-history/cap", test_load_history_cap);
    return g_test_run ();
}
