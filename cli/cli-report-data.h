/*
 * A job's timeline as the report reads it from the daemon's query-job-series
 * reply: its points, the bands of the policy's decisions and the figures of
 * the text summary. Pure: no I/O.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "cli-job.h"

G_BEGIN_DECLS

typedef struct {
    gdouble t;          /* seconds since the first point */
    gdouble rate;       /* bytes/s */
    gdouble backlog;    /* bytes */
    gdouble processed;  /* bytes */
    gdouble speed;      /* bytes/s, 0 = unlimited */
    gdouble iops;       /* the guest's */
    gdouble latency_us; /* the guest's mean latency, 0 = no I/O */
    const gchar *state; /* borrowed from the reply, NULL when absent */
    const gchar *band;  /* the band the point falls in (a static name), NULL = none */
    const gchar *reason;
} VmrReportPoint;

/* a run of points under one decision of the policy */
typedef struct {
    const gchar *action; /* "delay", "pause", "throttle", ...: a static name */
    const gchar *reason; /* the first point's, borrowed; NULL when it gave none */
    gdouble start;       /* seconds since the first point */
    gdouble end;
} VmrReportBand;

typedef struct {
    JsonNode *reply;    /* owned: the points' strings point into it */
    VmrCliJob *job;     /* owned */
    gint64 start_us;    /* wall clock of the first point */
    gdouble duration;   /* seconds from the first point to the last */
    gint64 interval_us; /* between points */
    GArray *points;     /* of VmrReportPoint, oldest first */
    GArray *bands;      /* of VmrReportBand, in time order */
} VmrReport;

/*
 * The report of @reply (a query-job-series reply; a reference is taken), or
 * NULL with VMR_ERROR_PROTOCOL when it is no such reply.
 */
VmrReport *vmr_report_new (JsonNode *reply, GError **error);
void vmr_report_free (VmrReport *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrReport, vmr_report_free)

/*
 * The band a point with @action and @state falls in: the policy holding,
 * pausing, slowing, steering or hurrying the copy; NULL when the copy runs as
 * it would without a policy.
 */
const gchar *vmr_report_band_of (const gchar *action, const gchar *state);

/* the short text summary of `virt-mirror report ID`; free with g_free() */
gchar *vmr_report_format_summary (const VmrReport *self);

G_END_DECLS
