#define G_LOG_DOMAIN "vmr-daemon"

#include "job-series.h"

#include <string.h>

#include "vmr-json.h"

struct _VmrJobSeries {
    GArray *points;   /* of VmrJobSeriesPoint, oldest first */
    guint max_points; /* at most this many; then neighbours merge */
    gint64 interval_us;
};

static void
point_clear (gpointer data)
{
    VmrJobSeriesPoint *point = data;

    g_free (point->state);
    g_free (point->action);
    g_free (point->reason);
}

VmrJobSeries *
vmr_job_series_new (guint max_points)
{
    VmrJobSeries *self = g_new0 (VmrJobSeries, 1);

    self->points = g_array_new (FALSE, TRUE, sizeof (VmrJobSeriesPoint));
    g_array_set_clear_func (self->points, point_clear);
    self->max_points = MAX (max_points, 2);
    self->interval_us = VMR_JOB_SERIES_INTERVAL_US;
    return self;
}

void
vmr_job_series_free (VmrJobSeries *self)
{
    if (self == NULL)
        return;
    g_array_unref (self->points);
    g_free (self);
}

gint64
vmr_job_series_get_interval (VmrJobSeries *self)
{
    return self->interval_us;
}

guint
vmr_job_series_get_length (VmrJobSeries *self)
{
    return self->points->len;
}

const VmrJobSeriesPoint *
vmr_job_series_get (VmrJobSeries *self, guint index)
{
    g_return_val_if_fail (index < self->points->len, NULL);
    return &g_array_index (self->points, VmrJobSeriesPoint, index);
}

gboolean
vmr_job_series_is_due (VmrJobSeries *self, gint64 now_us)
{
    const VmrJobSeriesPoint *last;

    if (self->points->len == 0)
        return TRUE;
    last = vmr_job_series_get (self, self->points->len - 1);
    if (now_us < last->time_us)
        return FALSE;
    /* a quarter of slack: the sample timer's ticks are not exact */
    return (guint64) now_us - (guint64) last->time_us
           >= (guint64) (self->interval_us - self->interval_us / 4);
}

/* @later absorbs @earlier: the mean of what is a rate, the rest is the later one's */
static void
merge_into (VmrJobSeriesPoint *later, VmrJobSeriesPoint *earlier)
{
    later->rate = (later->rate + earlier->rate) / 2;
    later->iops = (later->iops + earlier->iops) / 2;
    later->latency_us = (later->latency_us + earlier->latency_us) / 2;
    /* a decision is what the picture is for: one that held keeps its band */
    if (later->action == NULL && earlier->action != NULL) {
        later->action = g_steal_pointer (&earlier->action);
        g_free (later->reason);
        later->reason = g_steal_pointer (&earlier->reason);
    }
}

/* each two neighbours become one: half the points, twice the interval */
static void
halve (VmrJobSeries *self)
{
    guint kept = 0;

    for (guint i = 0; i < self->points->len; i += 2, kept++) {
        VmrJobSeriesPoint *dst = &g_array_index (self->points, VmrJobSeriesPoint, kept);
        VmrJobSeriesPoint *first = &g_array_index (self->points, VmrJobSeriesPoint, i);
        VmrJobSeriesPoint merged = *first;

        memset (first, 0, sizeof (*first));
        if (i + 1 < self->points->len) {
            VmrJobSeriesPoint *second = &g_array_index (self->points, VmrJobSeriesPoint, i + 1);
            VmrJobSeriesPoint later = *second;

            memset (second, 0, sizeof (*second));
            merge_into (&later, &merged);
            point_clear (&merged);
            merged = later;
        }
        *dst = merged;
    }
    g_array_set_size (self->points, kept);
    if (self->interval_us <= G_MAXINT64 / 2)
        self->interval_us *= 2;
}

void
vmr_job_series_append (VmrJobSeries *self, const VmrJobSeriesPoint *point)
{
    VmrJobSeriesPoint copy = *point;

    if (self->points->len >= self->max_points)
        halve (self);
    copy.state = g_strdup (point->state);
    copy.action = g_strdup (point->action);
    copy.reason = g_strdup (point->reason);
    g_array_append_val (self->points, copy);
}

static void
set_nullable (JsonObject *obj, const gchar *name, const gchar *value)
{
    if (value != NULL)
        json_object_set_string_member (obj, name, value);
    else
        json_object_set_null_member (obj, name);
}

JsonObject *
vmr_job_series_to_json (VmrJobSeries *self)
{
    JsonObject *obj = json_object_new ();
    JsonArray *points = json_array_sized_new (self->points->len);

    for (guint i = 0; i < self->points->len; i++) {
        const VmrJobSeriesPoint *p = vmr_job_series_get (self, i);
        JsonObject *entry = json_object_new ();

        json_object_set_int_member (entry, "time", p->time_us);
        json_object_set_int_member (entry, "rate", (gint64) p->rate);
        json_object_set_int_member (entry, "backlog", (gint64) p->backlog);
        json_object_set_int_member (entry, "processed", (gint64) p->processed);
        json_object_set_int_member (entry, "speed", (gint64) p->speed_limit);
        json_object_set_double_member (entry, "iops", p->iops);
        json_object_set_double_member (entry, "latency", p->latency_us);
        set_nullable (entry, "state", p->state);
        set_nullable (entry, "action", p->action);
        set_nullable (entry, "reason", p->reason);
        json_array_add_object_element (points, entry);
    }
    json_object_set_int_member (obj, "interval", self->interval_us);
    json_object_set_array_member (obj, "points", points);
    return obj;
}

/* a figure of a record: what is not a number >= 0 reads as 0 */
static gdouble
figure (JsonObject *entry, const gchar *name)
{
    gdouble value = vmr_json_double_or (entry, name, 0);

    return value >= 0 && value < G_MAXDOUBLE ? value : 0;
}

VmrJobSeries *
vmr_job_series_new_from_json (JsonObject *obj, guint max_points)
{
    VmrJobSeries *self = vmr_job_series_new (max_points);
    JsonArray *points = vmr_json_get_array (obj, "points");
    gint64 interval = vmr_json_int_or (obj, "interval", VMR_JOB_SERIES_INTERVAL_US);

    /* an interval the halving could have made; anything else starts again at one second */
    if (interval >= VMR_JOB_SERIES_INTERVAL_US)
        self->interval_us = interval;
    for (guint i = 0; points != NULL && i < json_array_get_length (points); i++) {
        JsonObject *entry = vmr_json_array_object (points, i);
        VmrJobSeriesPoint point = { 0 };

        if (!vmr_json_get_int (entry, "time", &point.time_us))
            continue;
        point.rate = figure (entry, "rate");
        point.backlog = vmr_json_uint_or (entry, "backlog", 0);
        point.processed = vmr_json_uint_or (entry, "processed", 0);
        point.speed_limit = vmr_json_uint_or (entry, "speed", 0);
        point.iops = figure (entry, "iops");
        point.latency_us = figure (entry, "latency");
        /* borrowed: append copies them */
        point.state = (gchar *) vmr_json_get_string (entry, "state");
        point.action = (gchar *) vmr_json_get_string (entry, "action");
        point.reason = (gchar *) vmr_json_get_string (entry, "reason");
        vmr_job_series_append (self, &point);
    }
    return self;
}
