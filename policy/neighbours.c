#define G_LOG_DOMAIN "vmr-policy"

#include "neighbours.h"

gboolean
vmr_neighbour_of (const VmrNeighbour *candidate, const gchar *domain, const gchar *disk,
                  const VmrStorage *source, const VmrStorage *dest)
{
    g_return_val_if_fail (candidate != NULL, FALSE);

    if (candidate->storage == NULL)
        return FALSE;
    if (g_strcmp0 (candidate->domain, domain) == 0 && g_strcmp0 (candidate->disk, disk) == 0)
        return FALSE;
    return candidate->storage == source || candidate->storage == dest;
}

static gboolean
is_idle (const VmrControllerConfig *config, const VmrLoadSample *sample)
{
    return sample->iops < config->idle_iops;
}

gboolean
vmr_neighbour_needs_baseline (const VmrControllerConfig *config, const VmrNeighbour *neighbour)
{
    if (neighbour->load.time_us == 0 || is_idle (config, &neighbour->load))
        return FALSE;
    return !neighbour->has_baseline || is_idle (config, &neighbour->baseline);
}

/* a busy neighbour with a busy baseline: its harm can be told */
static gboolean
counts (const VmrControllerConfig *config, const VmrNeighbour *neighbour)
{
    return neighbour->has_baseline && neighbour->load.time_us != 0
           && !is_idle (config, &neighbour->load) && !is_idle (config, &neighbour->baseline);
}

gdouble
vmr_neighbour_harm (const VmrControllerConfig *config, const VmrNeighbour *neighbour)
{
    VmrControllerInput input = { 0 };

    if (!counts (config, neighbour))
        return 0;
    input.load = neighbour->load;
    input.baseline = neighbour->baseline;
    return vmr_controller_harm (config, &input);
}

gint
vmr_neighbour_pick (const VmrControllerConfig *config, const VmrNeighbour *candidates, guint n,
                    const gchar *domain, const gchar *disk, const VmrStorage *source,
                    const VmrStorage *dest, gdouble own_harm, gdouble *harm)
{
    gint best = -1;
    gdouble best_harm = own_harm;

    for (guint i = 0; i < n; i++) {
        gdouble h;

        if (!vmr_neighbour_of (&candidates[i], domain, disk, source, dest)
            || !counts (config, &candidates[i]))
            continue;
        h = vmr_neighbour_harm (config, &candidates[i]);
        if (h > best_harm) {
            best = (gint) i;
            best_harm = h;
        }
    }
    if (harm != NULL)
        *harm = best_harm;
    return best;
}

gchar *
vmr_neighbour_reason (const VmrNeighbour *neighbour, const gchar *reason)
{
    const VmrLoadSample *load = &neighbour->load;
    const VmrLoadSample *base = &neighbour->baseline;
    gdouble latency = base->latency_us > 0 ? load->latency_us / base->latency_us : 0;
    gdouble iops = base->iops > 0 ? load->iops / base->iops : 0;
    /* the figure that shows the harm: a higher latency, or fewer IOPS */
    gboolean by_latency = latency - 1 >= 1 - iops;

    return g_strdup_printf ("%s %s on storage %s at %.2fx its %s; %s", neighbour->domain,
                            neighbour->disk, neighbour->storage->name, by_latency ? latency : iops,
                            by_latency ? "latency" : "IOPS", reason);
}
