/*
 * The closed-loop copy speed's target, shared by controller.c and
 * controller-baseline.c; not for use outside policy/.
 */
#pragma once

#include "controller.h"

G_BEGIN_DECLS

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
