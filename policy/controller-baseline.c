#define G_LOG_DOMAIN "vmr-policy"

/*
 * The closed-loop copy speed's baseline: the guest before a copy, from its
 * samples, and their noise band.
 */

#include <math.h>
#include <string.h>

#include "controller.h"
#include "vmr-stats.h"

/* twice the median of |values - their median| / max (median, @floor); 0 for fewer than 3 */
static gdouble
spread (const gdouble *values, guint n, gdouble floor)
{
    gdouble sorted[VMR_CONTROLLER_BASELINE_MAX];
    gdouble deviations[VMR_CONTROLLER_BASELINE_MAX];
    gdouble median;

    if (n < 3)
        return 0;
    memcpy (sorted, values, n * sizeof (gdouble));
    median = vmr_median (sorted, n);
    if (MAX (median, floor) <= 0)
        return 0;
    for (guint i = 0; i < n; i++)
        deviations[i] = fabs (values[i] - median) / MAX (median, floor);
    return 2 * vmr_median (deviations, n);
}

gboolean
vmr_controller_baseline (const VmrControllerConfig *config, const VmrLoadSample *samples, guint n,
                         VmrLoadSample *baseline, gdouble *noise)
{
    guint first = n > VMR_CONTROLLER_BASELINE_MAX ? n - VMR_CONTROLLER_BASELINE_MAX : 0;
    gdouble iops[VMR_CONTROLLER_BASELINE_MAX];
    gdouble latency[VMR_CONTROLLER_BASELINE_MAX];
    gdouble sorted[VMR_CONTROLLER_BASELINE_MAX];
    guint with_io = 0;

    *noise = 0;
    if (n == 0)
        return FALSE;
    memset (baseline, 0, sizeof (*baseline));
    for (guint i = first; i < n; i++) {
        iops[i - first] = samples[i].iops;
        if (samples[i].latency_us > 0)
            latency[with_io++] = samples[i].latency_us;
    }
    memcpy (sorted, iops, (n - first) * sizeof (gdouble));
    baseline->iops = vmr_median (sorted, n - first);
    memcpy (sorted, latency, with_io * sizeof (gdouble));
    baseline->latency_us = vmr_median (sorted, with_io);
    baseline->time_us = samples[n - 1].time_us;
    *noise = MAX (spread (iops, n - first, 0), spread (latency, with_io, config->latency_floor_us));
    return TRUE;
}
