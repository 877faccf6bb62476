#define G_LOG_DOMAIN "vmr-policy"

/*
 * The controller's window: the harm of the last samples, their median, and
 * the harm counted over the copy's floor.
 */

#include <string.h>

#include "controller-private.h"
#include "vmr-stats.h"

/* the harm counted: over the copy's floor, if it has one */
gdouble
vmr_controller_over_floor (const VmrControllerState *state, gdouble harm)
{
    return MAX (0.0, (1 + harm) / (1 + state->floor_harm) - 1);
}

/* the median of the window's harms (raw), 0 for none */
gdouble
vmr_controller_window_median (const VmrControllerState *state)
{
    gdouble harms[VMR_CONTROLLER_WINDOW_MAX];

    memcpy (harms, state->harms, state->n_harms * sizeof (gdouble));
    return vmr_median (harms, state->n_harms);
}

/*
 * the median of the window's harms (raw) at the copy's speed now: what this
 * speed costs the guest; the window's when it holds none of them
 */
gdouble
vmr_controller_window_median_at_speed (const VmrControllerState *state)
{
    gdouble at_speed[VMR_CONTROLLER_WINDOW_MAX];
    guint n = MIN (state->n_at_speed, state->n_harms);

    if (n == 0)
        return vmr_controller_window_median (state);
    memcpy (at_speed, state->harms + state->n_harms - n, n * sizeof (gdouble));
    return vmr_median (at_speed, n);
}

/* the lowest harm (raw) of the window's samples at the copy's speed now; 0 for fewer than two */
gdouble
vmr_controller_window_low_at_speed (const VmrControllerState *state)
{
    guint n = MIN (state->n_at_speed, state->n_harms);
    gdouble low = G_MAXDOUBLE;

    if (n < 2)
        return 0;
    for (guint i = state->n_harms - n; i < state->n_harms; i++)
        low = MIN (low, state->harms[i]);
    return low;
}

/* how many of the newest @last harms of the window, over the floor, are over (or under) @level */
guint
vmr_controller_window_count_past (const VmrControllerState *state, guint last, gdouble level,
                                  gboolean over)
{
    guint count = 0;

    for (guint i = state->n_harms > last ? state->n_harms - last : 0; i < state->n_harms; i++) {
        gdouble harm = vmr_controller_over_floor (state, state->harms[i]);

        if (over ? harm > level : harm < level)
            count++;
    }
    return count;
}

void
vmr_controller_window_push (const VmrControllerConfig *config, VmrControllerState *state,
                            gdouble harm)
{
    guint size = CLAMP (config->window, 1, VMR_CONTROLLER_WINDOW_MAX);

    if (state->n_harms >= size) {
        memmove (state->harms, state->harms + 1, (size - 1) * sizeof (gdouble));
        state->n_harms = size - 1;
    }
    state->harms[state->n_harms++] = harm;
    state->n_at_speed++;
}

/*
 * "harm 7.2%", "harm 7.2% (median 4.6%)"; with a floor the harm counted,
 * "harm 2.0% over the floor of 20.0% (median 1.0%)"; free with g_free()
 */
gchar *
vmr_controller_format_harm (const VmrControllerState *state, gdouble harm, gdouble median)
{
    g_autofree gchar *floor_text
        = state->floor_harm > 0
              ? g_strdup_printf (" over the floor of %.1f%%", state->floor_harm * 100)
              : g_strdup ("");

    harm = vmr_controller_over_floor (state, harm);
    median = vmr_controller_over_floor (state, median);
    if (ABS (harm - median) < 0.0005)
        return g_strdup_printf ("harm %.1f%%%s", harm * 100, floor_text);
    return g_strdup_printf ("harm %.1f%%%s (median %.1f%%)", harm * 100, floor_text, median * 100);
}
