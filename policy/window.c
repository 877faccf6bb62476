#define G_LOG_DOMAIN "vmr-policy"

#include "window.h"

#include <string.h>

#include "vmr-error.h"

/* "H:MM" or "HH:MM", 00:00 to 24:00; sscanf alone would take "+9:5" */
static gboolean
parse_clock (const gchar *text, gint *out_seconds)
{
    gsize len = strlen (text);
    guint hours, minutes;

    if ((len != 4 && len != 5) || text[len - 3] != ':')
        return FALSE;
    for (gsize i = 0; i < len; i++) {
        if (i != len - 3 && !g_ascii_isdigit (text[i]))
            return FALSE;
    }
    hours = (guint) g_ascii_strtoull (text, NULL, 10);
    minutes = (guint) g_ascii_strtoull (text + len - 2, NULL, 10);
    if (hours > 24 || minutes > 59 || (hours == 24 && minutes != 0))
        return FALSE;
    *out_seconds = (gint) (hours * 3600 + minutes * 60);
    return TRUE;
}

gboolean
vmr_window_list_parse (const gchar *text, GArray *windows, GError **error)
{
    g_auto (GStrv) parts = g_strsplit_set (text, ", ", -1);

    for (guint i = 0; parts[i] != NULL; i++) {
        g_auto (GStrv) ends = NULL;
        VmrWindow window;

        if (*parts[i] == '\0')
            continue;
        ends = g_strsplit (parts[i], "-", -1);
        if (g_strv_length (ends) != 2 || !parse_clock (ends[0], &window.start)
            || !parse_clock (ends[1], &window.end)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is not a time range like 22:00-06:00", parts[i]);
            return FALSE;
        }
        /*
         * 24:00 ends the day, so 00:00-24:00 is all of it and 22:00-24:00
         * needs no crossing; as a start it is the same as 00:00
         */
        if (window.start == 24 * 3600)
            window.start = 0;
        if (window.start == window.end) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is empty (use no window for any time)", parts[i]);
            return FALSE;
        }
        g_array_append_val (windows, window);
    }
    if (windows->len == 0) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "no time range given (leave the key out for any time)");
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_window_list_contains (GArray *windows, gint seconds_of_day)
{
    if (windows->len == 0)
        return TRUE;
    for (guint i = 0; i < windows->len; i++) {
        const VmrWindow *w = &g_array_index (windows, VmrWindow, i);

        if (w->start < w->end && seconds_of_day >= w->start && seconds_of_day < w->end)
            return TRUE;
        /* a range that crosses midnight */
        if (w->start > w->end && (seconds_of_day >= w->start || seconds_of_day < w->end))
            return TRUE;
    }
    return FALSE;
}

gchar *
vmr_window_list_format (GArray *windows)
{
    g_autoptr (GString) text = g_string_new (NULL);

    if (windows->len == 0)
        return g_strdup ("any time");
    for (guint i = 0; i < windows->len; i++) {
        const VmrWindow *w = &g_array_index (windows, VmrWindow, i);

        g_string_append_printf (text, "%s%02d:%02d-%02d:%02d", i > 0 ? ", " : "", w->start / 3600,
                                (w->start / 60) % 60, w->end / 3600, (w->end / 60) % 60);
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}
