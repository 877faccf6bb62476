/*
 * The guest's harm and QEMU's counters of its device (see guest-harm.h).
 */
#define G_LOG_DOMAIN "vmr-test"

#include "guest-harm.h"

#include <math.h>

#include "vmr-json.h"

gdouble
vmr_guest_harm (gdouble before_iops, gdouble before_lat_us, gdouble during_iops,
                gdouble during_lat_us)
{
    gdouble harm = 0;

    if (before_iops <= 0)
        return 0;
    if (before_lat_us > 0 && during_lat_us > 0)
        harm = during_lat_us / before_lat_us - 1;
    harm = MAX (harm, 1 - MAX (during_iops, 0) / before_iops);
    return MAX (harm, 0);
}

gdouble
vmr_guest_window_deviation (gdouble median_iops, gdouble median_lat_us, gdouble iops,
                            gdouble lat_us)
{
    gdouble deviation = 0;

    if (median_iops > 0)
        deviation = fabs (iops / median_iops - 1);
    if (median_lat_us > 0 && lat_us > 0)
        deviation = MAX (deviation, fabs (lat_us / median_lat_us - 1));
    return deviation;
}

/* the stats of @device in a reply of query-blockstats, NULL when it is not there */
static JsonObject *
find_device_stats (JsonNode *reply, const gchar *device)
{
    JsonArray *devices = reply != NULL ? vmr_json_node_array (reply) : NULL;
    g_autofree gchar *qdev_prefix = g_strdup_printf ("/machine/peripheral/%s/", device);

    for (guint i = 0; devices != NULL && i < json_array_get_length (devices); i++) {
        JsonObject *entry = vmr_json_array_object (devices, i);
        const gchar *qdev = vmr_json_get_string (entry, "qdev");

        if (g_strcmp0 (vmr_json_get_string (entry, "device"), device) == 0
            || (qdev != NULL && g_str_has_prefix (qdev, qdev_prefix)))
            return vmr_json_get_object (entry, "stats");
    }
    return NULL;
}

gboolean
vmr_block_counters_read (JsonNode *reply, const gchar *device, VmrBlockCounters *out)
{
    JsonObject *stats = find_device_stats (reply, device);

    if (stats == NULL)
        return FALSE;
    out->ops
        = vmr_json_int_or (stats, "rd_operations", 0) + vmr_json_int_or (stats, "wr_operations", 0);
    out->time_ns = vmr_json_int_or (stats, "rd_total_time_ns", 0)
                   + vmr_json_int_or (stats, "wr_total_time_ns", 0);
    return TRUE;
}

gdouble
vmr_block_counters_iops (const VmrBlockCounters *from, const VmrBlockCounters *to, gint64 span_us,
                         gdouble *out_latency_us)
{
    gint64 ops = to->ops - from->ops;

    if (span_us <= 0)
        return -1;
    if (out_latency_us != NULL)
        *out_latency_us = ops > 0 ? (gdouble) (to->time_ns - from->time_ns) / ops / 1000 : 0;
    return (gdouble) ops * G_USEC_PER_SEC / span_us;
}
