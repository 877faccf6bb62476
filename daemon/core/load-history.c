#define G_LOG_DOMAIN "vmr-daemon"

#include "load-history.h"

/* never more samples than this, whatever keep_us says */
#define MAX_SAMPLES 4096

struct _VmrLoadHistory {
    gboolean have_base;
    VmrIoCounters base;
    gint64 base_time_us;
    GArray *samples;       /* of VmrLoadSample, oldest first */
    gint64 latest_wall_us; /* the wall clock when the newest sample was added */
};

VmrLoadHistory *
vmr_load_history_new (void)
{
    VmrLoadHistory *self = g_new0 (VmrLoadHistory, 1);

    self->samples = g_array_new (FALSE, FALSE, sizeof (VmrLoadSample));
    return self;
}

void
vmr_load_history_free (VmrLoadHistory *self)
{
    if (self == NULL)
        return;
    g_array_unref (self->samples);
    g_free (self);
}

void
vmr_load_history_add (VmrLoadHistory *self, const VmrIoCounters *counters, gint64 now_us,
                      gint64 keep_us)
{
    guint drop = 0;

    if (self->have_base && now_us > self->base_time_us && counters->read_ops >= self->base.read_ops
        && counters->write_ops >= self->base.write_ops
        && counters->read_time_ns >= self->base.read_time_ns
        && counters->write_time_ns >= self->base.write_time_ns) {
        guint64 ops = (counters->read_ops - self->base.read_ops)
                      + (counters->write_ops - self->base.write_ops);
        guint64 time_ns = (counters->read_time_ns - self->base.read_time_ns)
                          + (counters->write_time_ns - self->base.write_time_ns);
        gdouble seconds = (gdouble) (now_us - self->base_time_us) / G_USEC_PER_SEC;
        VmrLoadSample sample = {
            .time_us = now_us,
            .iops = (gdouble) ops / seconds,
            .latency_us = ops > 0 ? (gdouble) time_ns / 1000.0 / (gdouble) ops : 0,
            .interval_us = now_us - self->base_time_us,
        };

        g_array_append_val (self->samples, sample);
        self->latest_wall_us = g_get_real_time ();
    }
    self->base = *counters;
    self->base_time_us = now_us;
    self->have_base = TRUE;

    while (drop < self->samples->len
           && (self->samples->len - drop > MAX_SAMPLES
               || g_array_index (self->samples, VmrLoadSample, drop).time_us < now_us - keep_us))
        drop++;
    if (drop > 0)
        g_array_remove_range (self->samples, 0, drop);
}

const VmrLoadSample *
vmr_load_history_get_samples (VmrLoadHistory *self, guint *out_n)
{
    *out_n = self->samples->len;
    return (const VmrLoadSample *) self->samples->data;
}

gint64
vmr_load_history_latest_wall_time (VmrLoadHistory *self)
{
    return self->samples->len > 0 ? self->latest_wall_us : 0;
}

const VmrLoadSample *
vmr_load_history_latest (VmrLoadHistory *self)
{
    if (self->samples->len == 0)
        return NULL;
    return &g_array_index (self->samples, VmrLoadSample, self->samples->len - 1);
}
