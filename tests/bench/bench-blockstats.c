/*
 * QEMU's block statistics of the guest's device, sampled once a second (see
 * bench-blockstats.h).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-blockstats.h"

#include <gio/gio.h>

#include "guest-harm.h"

#define SAMPLE_INTERVAL_MS 1000
#define QUERY_TIMEOUT_MS   900

/* one reply of query-blockstats for the device */
typedef struct {
    gint64 mono_us; /* when the reply arrived */
    gint64 ops;     /* reads + writes completed so far */
    gint64 time_ns; /* their total time */
} BlockSample;

struct _VmrBenchBlockstats {
    VmrQmpClient *qemu;
    gchar *device;
    GArray *samples; /* of BlockSample, oldest first */
    GCancellable *cancellable;
    guint timer;
    gboolean in_flight; /* a query not answered yet: the next tick waits for it */
};

static void
query_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    VmrBenchBlockstats *self = user_data;
    VmrBlockCounters counters;
    BlockSample sample;

    /* cancelled: @self is gone */
    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    self->in_flight = FALSE;
    if (!vmr_block_counters_read (reply, self->device, &counters))
        return;
    sample.mono_us = g_get_monotonic_time ();
    sample.ops = counters.ops;
    sample.time_ns = counters.time_ns;
    g_array_append_val (self->samples, sample);
}

static gboolean
tick_cb (gpointer user_data)
{
    VmrBenchBlockstats *self = user_data;

    if (self->in_flight || !vmr_qmp_client_is_connected (self->qemu))
        return G_SOURCE_CONTINUE;
    self->in_flight = TRUE;
    vmr_qmp_client_execute_async (self->qemu, "query-blockstats", NULL, QUERY_TIMEOUT_MS,
                                  self->cancellable, query_done_cb, self);
    return G_SOURCE_CONTINUE;
}

VmrBenchBlockstats *
vmr_bench_blockstats_new (VmrQmpClient *qemu, const gchar *device)
{
    VmrBenchBlockstats *self = g_new0 (VmrBenchBlockstats, 1);

    g_return_val_if_fail (VMR_IS_QMP_CLIENT (qemu), NULL);
    self->qemu = g_object_ref (qemu);
    self->device = g_strdup (device);
    self->samples = g_array_new (FALSE, FALSE, sizeof (BlockSample));
    self->cancellable = g_cancellable_new ();
    self->timer = g_timeout_add (SAMPLE_INTERVAL_MS, tick_cb, self);
    return self;
}

void
vmr_bench_blockstats_free (VmrBenchBlockstats *self)
{
    if (self == NULL)
        return;
    g_source_remove (self->timer);
    g_cancellable_cancel (self->cancellable);
    g_object_unref (self->cancellable);
    g_object_unref (self->qemu);
    g_array_unref (self->samples);
    g_free (self->device);
    g_free (self);
}

guint
vmr_bench_blockstats_count (const VmrBenchBlockstats *self)
{
    return self->samples->len;
}

gdouble
vmr_bench_blockstats_mean (const VmrBenchBlockstats *self, gint64 from_mono_us, gint64 to_mono_us,
                           gdouble min_iops, gdouble *out_latency_us)
{
    const BlockSample *last = NULL;
    gint64 ops = 0, time_ns = 0, span_us = 0;

    for (guint i = 0; i < self->samples->len; i++) {
        const BlockSample *sample = &g_array_index (self->samples, BlockSample, i);

        if (sample->mono_us < from_mono_us || sample->mono_us > to_mono_us)
            continue;
        if (last != NULL && sample->mono_us > last->mono_us) {
            gint64 step_us = sample->mono_us - last->mono_us;
            gint64 step_ops = sample->ops - last->ops;

            if ((gdouble) step_ops * G_USEC_PER_SEC / step_us >= min_iops) {
                ops += step_ops;
                time_ns += sample->time_ns - last->time_ns;
                span_us += step_us;
            }
        }
        last = sample;
    }
    if (span_us == 0)
        return -1;
    if (out_latency_us != NULL)
        *out_latency_us = ops > 0 ? (gdouble) time_ns / ops / 1000 : 0;
    return (gdouble) ops * G_USEC_PER_SEC / span_us;
}
