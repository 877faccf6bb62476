/*
 * The guest's I/O samples from a file, and their means over a span.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-samples.h"

#include "vmr-error.h"

/* @text as a number, FALSE when it is not all of one */
static gboolean
parse_number (const gchar *text, gdouble *out)
{
    gchar *end = NULL;

    *out = g_ascii_strtod (text, &end);
    return end != text && *end == '\0';
}

/* one line "END IOPS LAT_US [SPAN]" into @sample */
static gboolean
parse_sample (const gchar *line, gdouble default_span_s, BenchSample *sample)
{
    g_auto (GStrv) fields = g_strsplit_set (g_strstrip ((gchar *) line), " \t", -1);
    guint n = g_strv_length (fields);

    sample->span_s = default_span_s;
    return (n == 3 || n == 4) && parse_number (fields[0], &sample->end_s)
           && parse_number (fields[1], &sample->iops) && parse_number (fields[2], &sample->lat_us)
           && (n == 3 || parse_number (fields[3], &sample->span_s)) && sample->span_s > 0
           && sample->iops >= 0 && sample->lat_us >= 0;
}

GArray *
bench_samples_load (const gchar *path, gdouble default_span_s, GError **error)
{
    g_autofree gchar *text = NULL;
    g_auto (GStrv) lines = NULL;
    g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (BenchSample));

    if (!g_file_get_contents (path, &text, NULL, error))
        return NULL;
    lines = g_strsplit (text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        BenchSample sample;

        if (*g_strstrip (lines[i]) == '\0')
            continue;
        if (!parse_sample (lines[i], default_span_s, &sample)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "%s:%u: not a sample (END IOPS LAT_US [SPAN]): '%s'", path, i + 1,
                         lines[i]);
            return NULL;
        }
        if (samples->len > 0
            && g_array_index (samples, BenchSample, samples->len - 1).end_s == sample.end_s)
            continue;
        g_array_append_val (samples, sample);
    }
    return g_steal_pointer (&samples);
}

gdouble
bench_samples_mean (GArray *samples, gdouble from_s, gdouble to_s, gdouble *out_lat_us)
{
    gdouble span = 0, ios = 0, lat_ios = 0;

    for (guint i = 0; i < samples->len; i++) {
        const BenchSample *sample = &g_array_index (samples, BenchSample, i);
        gdouble middle = sample->end_s - sample->span_s / 2;

        if (middle < from_s || middle >= to_s)
            continue;
        span += sample->span_s;
        ios += sample->iops * sample->span_s;
        if (sample->lat_us > 0)
            lat_ios += sample->iops * sample->span_s * sample->lat_us;
    }
    if (out_lat_us != NULL)
        *out_lat_us = ios > 0 ? lat_ios / ios : 0;
    return span > 0 ? ios / span : -1;
}
