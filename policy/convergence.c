#define G_LOG_DOMAIN "vmr-policy"

#include <math.h>

#include "convergence.h"

static const gchar *const convergence_names[] = {
    [VMR_CONVERGENCE_UNKNOWN] = "unknown",
    [VMR_CONVERGENCE_SHRINKING] = "shrinking",
    [VMR_CONVERGENCE_STALLED] = "stalled",
};

const gchar *
vmr_convergence_to_string (VmrConvergence convergence)
{
    return convergence < G_N_ELEMENTS (convergence_names) ? convergence_names[convergence]
                                                          : "unknown";
}

VmrConvergence
vmr_convergence_check (const VmrBacklogSample *samples, guint n_samples, gint64 converge_after_us,
                       gdouble *out_slope)
{
    gint64 newest;
    gint64 window_start;
    guint first;
    guint n;
    gdouble mean_t = 0, mean_b = 0;
    gdouble s_tt = 0, s_tb = 0, s_res = 0;
    gdouble slope, standard_error;

    if (out_slope != NULL)
        *out_slope = 0;
    if (n_samples == 0)
        return VMR_CONVERGENCE_UNKNOWN;
    newest = samples[n_samples - 1].time_us;
    window_start = newest - converge_after_us;
    if (samples[0].time_us > window_start)
        return VMR_CONVERGENCE_UNKNOWN;
    /* the window: from the last sample at or before its start */
    first = n_samples - 1;
    while (first > 0 && samples[first].time_us > window_start)
        first--;
    n = n_samples - first;
    if (n < 3)
        return VMR_CONVERGENCE_UNKNOWN;

    /* times in seconds from the newest, so that the sums stay small */
    for (guint i = first; i < n_samples; i++) {
        mean_t += (gdouble) (samples[i].time_us - newest) / G_USEC_PER_SEC;
        mean_b += (gdouble) samples[i].backlog_bytes;
    }
    mean_t /= n;
    mean_b /= n;
    for (guint i = first; i < n_samples; i++) {
        gdouble t = (gdouble) (samples[i].time_us - newest) / G_USEC_PER_SEC - mean_t;

        s_tt += t * t;
        s_tb += t * ((gdouble) samples[i].backlog_bytes - mean_b);
    }
    if (s_tt <= 0)
        return VMR_CONVERGENCE_UNKNOWN;
    slope = s_tb / s_tt;
    for (guint i = first; i < n_samples; i++) {
        gdouble t = (gdouble) (samples[i].time_us - newest) / G_USEC_PER_SEC - mean_t;
        gdouble residual = (gdouble) samples[i].backlog_bytes - (mean_b + slope * t);

        s_res += residual * residual;
    }
    standard_error = sqrt (s_res / (n - 2) / s_tt);
    if (out_slope != NULL)
        *out_slope = slope;
    return slope + 2 * standard_error < 0 ? VMR_CONVERGENCE_SHRINKING : VMR_CONVERGENCE_STALLED;
}
