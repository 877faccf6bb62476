/*
 * A job's timeline: one point about every second while the job is active,
 * with the copy's rate, backlog and speed limit, the guest's load and the
 * policy's decision in force. Bounded: when it is full, neighbours are merged
 * and the resolution halves, so that a long copy keeps its whole timeline.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* the points a series holds at most before it halves its resolution */
#define VMR_JOB_SERIES_MAX_POINTS 3600

/* the time between points at first, microseconds */
#define VMR_JOB_SERIES_INTERVAL_US G_USEC_PER_SEC

typedef struct {
    gint64 time_us;      /* wall clock, microseconds since the epoch */
    gdouble rate;        /* copy rate, bytes/s */
    guint64 backlog;     /* bytes still to copy: len - offset */
    guint64 processed;   /* bytes copied: offset */
    guint64 speed_limit; /* bytes/s, 0 = unlimited */
    gdouble iops;        /* the guest disk's reads + writes per second */
    gdouble latency_us;  /* the guest disk's mean I/O latency, 0 when there was no I/O */
    gchar *state;        /* the job's state, e.g. "copying" */
    gchar *action;       /* the policy's decision in force, e.g. "throttle"; NULL = none */
    gchar *reason;       /* and why; NULL = none */
} VmrJobSeriesPoint;

typedef struct _VmrJobSeries VmrJobSeries;

/* an empty series that holds at most @max_points (at least 2) */
VmrJobSeries *vmr_job_series_new (guint max_points);
void vmr_job_series_free (VmrJobSeries *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrJobSeries, vmr_job_series_free)

/* the time between points now: it doubles each time the series halves, microseconds */
gint64 vmr_job_series_get_interval (VmrJobSeries *self);

guint vmr_job_series_get_length (VmrJobSeries *self);

/* the point @index, oldest first; owned by @self, valid until the next append */
const VmrJobSeriesPoint *vmr_job_series_get (VmrJobSeries *self, guint index);

/* whether a point taken at @now_us (wall clock) is due: the first, or one interval on */
gboolean vmr_job_series_is_due (VmrJobSeries *self, gint64 now_us);

/*
 * Appends a copy of @point (its strings are copied). When the series is full,
 * each two neighbours become one first: the rates and the load averaged, the
 * rest of the later one, a decision kept over none.
 */
void vmr_job_series_append (VmrJobSeries *self, const VmrJobSeriesPoint *point);

/* {"interval": µs, "points": [{"time", "rate", "backlog", ...}, ...]} (docs/protocol.md) */
JsonObject *vmr_job_series_to_json (VmrJobSeries *self);

/*
 * The series of @obj as vmr_job_series_to_json() writes it; a point that is
 * not an object with a time is skipped, a missing member reads as 0 or
 * none, and more points than @max_points are merged down. An empty series
 * when @obj is NULL.
 */
VmrJobSeries *vmr_job_series_new_from_json (JsonObject *obj, guint max_points);

G_END_DECLS
