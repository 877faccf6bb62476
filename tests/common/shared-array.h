/*
 * The shared-array storage of the benchmarks and the integration tests: an
 * image directory served by nbdkit's file plugin behind its rate and delay
 * filters, so that the guest and a copy's reads share one budget with a
 * base latency, as on an array that also serves the guest. The knee of a
 * copy's speed comes from queueing for that budget.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the rate filter's bucket, seconds of the budget */
#define VMR_SHARED_ARRAY_BURST_S 0.5

/*
 * The command line of one nbdkit server (in the foreground, ended with its
 * parent) of the images in @image_dir on the UNIX socket @socket, at
 * @budget_mb MB (10^6) a second, reads and writes together, and @delay_ms
 * added to each request. Free with g_strfreev().
 */
gchar **vmr_shared_array_argv (const gchar *socket, const gchar *image_dir, guint budget_mb,
                               gdouble delay_ms);

/* the URI of the image @path (in the served directory) on @socket; free with g_free() */
gchar *vmr_shared_array_uri (const gchar *socket, const gchar *path);

/* one line on the storage, for a report; free with g_free() */
gchar *vmr_shared_array_describe (const gchar *image_dir, guint budget_mb, gdouble delay_ms);

G_END_DECLS
