/*
 * The guest's I/O second by second, as a file of samples, and its mean
 * over a span of time: what scripts/demo hands frontier-verdict.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* one sample: the guest's I/O over (end_s - span_s, end_s] */
typedef struct {
    gdouble end_s;  /* seconds, on any clock all samples and spans share */
    gdouble span_s; /* > 0 */
    gdouble iops;
    gdouble lat_us; /* the mean time of one I/O, 0 = none done */
} BenchSample;

/*
 * The samples of @path, one a line: "END IOPS LAT_US [SPAN]" (SPAN
 * @default_span_s when left out); a line equal in END to the one before is
 * the same sample read twice and left out. An array of BenchSample, NULL
 * with @error set on a file that cannot be read or a line that does not
 * parse (its number in the message).
 */
GArray *bench_samples_load (const gchar *path, gdouble default_span_s, GError **error);

/*
 * The mean IOPS of the samples whose middle lies in [@from_s, @to_s),
 * weighted by their spans, and in *@out_lat_us (may be NULL) their mean
 * latency, weighted by their I/Os; -1 (and 0) with no sample there.
 */
gdouble bench_samples_mean (GArray *samples, gdouble from_s, gdouble to_s, gdouble *out_lat_us);

G_END_DECLS
