#define G_LOG_DOMAIN "vmr-daemon"

#include "log-throttle.h"

gboolean
vmr_log_throttle_pass (VmrLogThrottle *self, guint *out_left_out)
{
    gint64 now = g_get_monotonic_time ();

    if (self->logged_us != 0 && now - self->logged_us < self->interval_us) {
        self->left_out++;
        return FALSE;
    }
    *out_left_out = self->left_out;
    self->logged_us = now;
    self->left_out = 0;
    return TRUE;
}
