/*
 * Small statistics on measured samples: the median, which a spike does not
 * move, where the mean would follow it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the median of @n values (sorting them in place), the mean of the middle two for even @n; 0 for
 * none */
gdouble vmr_median (gdouble *values, gsize n);

G_END_DECLS
