#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster-share.h"

guint64
vmr_share_target (guint64 budget, const VmrShareOthers *others)
{
    return budget / (others->hosts + 1);
}

guint64
vmr_share_usable (const VmrShareState *state, gboolean leased, const VmrShareOthers *others)
{
    if (!leased || !state->held)
        return 0;
    return MIN (state->granted, vmr_share_target (state->budget, others));
}

/*
 * A share over the target is lowered once the copies use no more than the
 * target; one under it raised as far as the other hosts' shares leave
 * room; one write of the key at a time.
 */
VmrShareAction
vmr_share_next (const VmrShareState *state, const VmrShareOthers *others, guint64 *out_share)
{
    guint64 target = vmr_share_target (state->budget, others);
    guint64 room = others->shares < state->budget ? state->budget - others->shares : 0;
    guint64 want = MIN (target, room);

    *out_share = 0;
    if (state->in_flight)
        return VMR_SHARE_KEEP;
    if (state->copies == 0)
        return state->held ? VMR_SHARE_DROP : VMR_SHARE_KEEP;
    if (state->held && state->granted > target) {
        /* the engine lowers its copies first, then says what they use */
        if (state->used > target)
            return VMR_SHARE_KEEP;
        *out_share = target;
        return VMR_SHARE_LOWER;
    }
    if (state->held && want <= state->granted)
        return VMR_SHARE_KEEP;
    *out_share = want;
    return VMR_SHARE_RAISE;
}

void
vmr_share_begin (VmrShareState *state, VmrShareAction action, guint64 share)
{
    if (action == VMR_SHARE_KEEP)
        return;
    state->in_flight = TRUE;
    if (action == VMR_SHARE_DROP)
        state->granted = 0;
    else if (action == VMR_SHARE_LOWER)
        state->granted = MIN (state->granted, share);
}

void
vmr_share_written (VmrShareState *state, VmrShareAction action, guint64 share, gboolean taken)
{
    state->in_flight = FALSE;
    if (!taken)
        return;
    state->held = action != VMR_SHARE_DROP;
    if (action == VMR_SHARE_RAISE)
        state->granted = share;
    else
        state->granted = MIN (state->granted, state->held ? share : 0);
}

void
vmr_share_seen (VmrShareState *state, gboolean present, guint64 share)
{
    state->held = present;
    state->granted = present ? MIN (state->granted, share) : 0;
}

guint64
vmr_share_per_copy (guint64 share, guint n_copies, guint64 room)
{
    guint64 speed = n_copies > 0 ? share / n_copies : share;

    return MAX (MIN (speed, room), 1);
}
