#define G_LOG_DOMAIN "vmr-policy"

/*
 * The closed-loop copy speed's baseline: the guest before a copy, from its
 * samples, and their noise band; and the target the controller holds,
 * which the noise band may raise and the ceiling (max_harm) lower.
 */

#include <math.h>
#include <string.h>

#include "controller.h"
#include "controller-private.h"
#include "vmr-stats.h"

/* twice the median of |values - their median| / max (median, @least); 0 for fewer than 3 */
static gdouble
spread (const gdouble *values, guint n, gdouble least)
{
    gdouble sorted[VMR_CONTROLLER_BASELINE_MAX];
    gdouble deviations[VMR_CONTROLLER_BASELINE_MAX];
    gdouble median;

    if (n < 3)
        return 0;
    memcpy (sorted, values, n * sizeof (gdouble));
    median = vmr_median (sorted, n);
    if (MAX (median, least) <= 0)
        return 0;
    for (guint i = 0; i < n; i++)
        deviations[i] = fabs (values[i] - median) / MAX (median, least);
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

gdouble
vmr_controller_target (const VmrControllerConfig *config, const VmrControllerState *state,
                       const VmrControllerInput *input, gchar **why)
{
    /*
     * a target under the noise of the guest's own figures cannot be told
     * from it: the copy would back off on noise alone
     */
    gdouble noise = MIN (input->noise, config->max_noise);
    gdouble target = MAX (config->target_harm, noise);
    gdouble f = state->floor_harm;
    /* on top of a floor, the target counts over it: never past the ceiling */
    gdouble ceiling = config->max_harm > 0 ? (1 + config->max_harm) / (1 + f) - 1 : target;

    *why = NULL;
    if (f >= config->target_harm && ceiling < target) {
        *why = g_strdup_printf ("the target %.1f%% cannot be met (the copy's floor is %.1f%%): "
                                "held to %.1f%% on top of it, under max-harm %.0f%%",
                                target * 100, f * 100, MAX (ceiling, 0.0) * 100,
                                config->max_harm * 100);
        return MAX (ceiling, 0.0);
    }
    if (f >= config->target_harm && f > 0)
        *why = g_strdup_printf ("the target %.1f%% cannot be met (the copy's floor is %.1f%%): "
                                "held on top of the floor, under max-harm %.0f%%",
                                target * 100, f * 100, config->max_harm * 100);
    else if (noise > config->target_harm)
        *why = g_strdup_printf ("the target %.1f%% is under the guest's noise, %.1f%%: held to "
                                "that",
                                config->target_harm * 100, noise * 100);
    return target;
}
