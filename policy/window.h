/*
 * The copy windows of the policy: daily time ranges in local time, as the
 * `window` key spells them ("22:00-06:00, 12:00-13:00").
 */
#pragma once

#include <glib.h>

#include "policy.h"

G_BEGIN_DECLS

/*
 * Appends the ranges of @text to @windows (of VmrWindow). Sets
 * VMR_ERROR_INVALID_ARGUMENT for a range that is not HH:MM-HH:MM, an empty
 * range and an empty list.
 */
gboolean vmr_window_list_parse (const gchar *text, GArray *windows, GError **error);

/* TRUE if @seconds_of_day lies in one of @windows, or @windows is empty (any time) */
gboolean vmr_window_list_contains (GArray *windows, gint seconds_of_day);

/* "22:00-06:00, 12:00-13:00", or "any time" for none; free with g_free() */
gchar *vmr_window_list_format (GArray *windows);

G_END_DECLS
