#define G_LOG_DOMAIN "vmr-test"

#include "bulk-spans.h"

#include "harness.h"

gboolean
vmr_bulk_spans_moves_data (const gchar *state)
{
    return g_strcmp0 (state, "copying") == 0 || g_strcmp0 (state, "throttled") == 0;
}

void
vmr_bulk_spans_add (JsonObject *job, GArray *spans)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    gint64 start = 0;

    for (guint k = 0; k < json_array_get_length (history); k++) {
        JsonObject *entry = json_array_get_object_element (history, k);
        gint64 time = vmr_harness_json_int (entry, "time");

        if (vmr_bulk_spans_moves_data (vmr_harness_json_string (entry, "state"))) {
            if (start == 0)
                start = time;
            continue;
        }
        if (start != 0) {
            gint64 span[2] = { start, time };

            g_array_append_vals (spans, span, 2);
            start = 0;
        }
    }
    g_assert_cmpint (start, ==, 0);
}

guint
vmr_bulk_spans_most_at_once (GArray *spans)
{
    const gint64 *s = (const gint64 *) spans->data;
    guint most = 0;

    for (guint i = 0; i < spans->len; i += 2) {
        guint running = 0;

        for (guint j = 0; j < spans->len; j += 2)
            if (s[j] <= s[i] && s[j + 1] > s[i])
                running++;
        most = MAX (most, running);
    }
    return most;
}
