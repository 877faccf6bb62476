/*
 * The bulk copies of jobs, from their histories: the spans in which each
 * moved data (copying or throttled, up to its next state), and how many of
 * them overlapped at most. The histories of several daemons on one machine
 * share one clock, so the cluster's limit is judged from them, not by polling.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* whether @state (a job state's name) moves data in bulk: copying or throttled */
gboolean vmr_bulk_spans_moves_data (const gchar *state);

/*
 * appends the spans of @job's history (a job object) in which it moved data,
 * [start, end) pairs of microseconds, to @spans (of gint64); asserts that the
 * job no longer moves data
 */
void vmr_bulk_spans_add (JsonObject *job, GArray *spans);

/* the most of @spans that overlap: at the start of each, those begun by then and not ended */
guint vmr_bulk_spans_most_at_once (GArray *spans);

G_END_DECLS
