/*
 * Units in user input: byte rates and sizes with K/M/G/T suffixes (1024-based)
 * and durations with ms/s/m/h suffixes.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Parses "100M", "1.5G", "4096", "512K/s" or "64MiB" into bytes. Suffixes are
 * 1024-based and case-insensitive; a trailing "B", "iB" or "/s" is accepted.
 * Sets VMR_ERROR_INVALID_ARGUMENT naming @text on anything else.
 */
gboolean vmr_units_parse_bytes (const gchar *text, guint64 *out_bytes, GError **error);

/*
 * Parses "500ms", "2s", "5m", "1h" or a plain number of seconds into
 * microseconds. Sets VMR_ERROR_INVALID_ARGUMENT on anything else.
 */
gboolean vmr_units_parse_duration (const gchar *text, gint64 *out_usec, GError **error);

/* "1.5 GiB", "512 KiB", "17 B"; free with g_free() */
gchar *vmr_units_format_bytes (guint64 bytes);

/* a rate: "100 MiB/s", or "unlimited" for 0; free with g_free() */
gchar *vmr_units_format_speed (guint64 bytes_per_second);

/* "2m05s", "1h02m", "7s", "0.4s"; free with g_free() */
gchar *vmr_units_format_duration (gint64 usec);

G_END_DECLS
