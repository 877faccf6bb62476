/*
 * The closed-loop copy speed's window of harms, shared by controller.c and
 * controller-window.c; not for use outside policy/.
 */
#pragma once

#include "controller.h"

G_BEGIN_DECLS

/* the harm counted: over the copy's floor, if it has one */
gdouble vmr_controller_over_floor (const VmrControllerState *state, gdouble harm);
/* the median of the window's harms (raw), 0 for none */
gdouble vmr_controller_window_median (const VmrControllerState *state);
/* the median of the window's harms (raw) at the copy's speed now; the window's when none */
gdouble vmr_controller_window_median_at_speed (const VmrControllerState *state);
/* the lowest harm (raw) of the window's samples at the copy's speed now; 0 for fewer than two */
gdouble vmr_controller_window_low_at_speed (const VmrControllerState *state);
/* how many of the newest @last harms of the window, over the floor, are over (or under) @level */
guint vmr_controller_window_count_past (const VmrControllerState *state, guint last, gdouble level,
                                        gboolean over);
/* @harm, the newest sample's, into the window of config->window samples */
void vmr_controller_window_push (const VmrControllerConfig *config, VmrControllerState *state,
                                 gdouble harm);
/*
 * "harm 7.2%", "harm 7.2% (median 4.6%)"; with a floor the harm counted,
 * "harm 2.0% over the floor of 20.0% (median 1.0%)"; free with g_free()
 */
gchar *vmr_controller_format_harm (const VmrControllerState *state, gdouble harm, gdouble median);

/*
 * The target the controller holds, counted over the copy's floor:
 * config->target_harm, raised to the guest's noise band (at most
 * max_noise); where the floor says the target cannot be met, never so high
 * that the floor and it together pass max_harm. @why says why when it is
 * not config->target_harm or the floor is over it (free with g_free()),
 * NULL otherwise.
 */
gdouble vmr_controller_target (const VmrControllerConfig *config, const VmrControllerState *state,
                               const VmrControllerInput *input, gchar **why);

G_END_DECLS
