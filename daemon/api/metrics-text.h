/*
 * The engine's statistics in the Prometheus text exposition format
 * (version 0.0.4): what /metrics serves and query-metrics returns. Pure: a
 * snapshot in, text out. docs/metrics.md describes every metric.
 */
#pragma once

#include "engine-stats.h"

G_BEGIN_DECLS

/* the HTTP content type of the text */
#define VMR_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* the metrics of @stats, each family with its # HELP and # TYPE; free with g_free() */
gchar *vmr_metrics_format (const VmrEngineStats *stats);

/* @value as a label value: backslash, double quote and newline escaped; free with g_free() */
gchar *vmr_metrics_escape_label (const gchar *value);

G_END_DECLS
