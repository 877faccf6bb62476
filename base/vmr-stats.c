#include "vmr-stats.h"

#include <stdlib.h>

static gint
compare_doubles (gconstpointer a, gconstpointer b)
{
    gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

    return (x > y) - (x < y);
}

gdouble
vmr_median (gdouble *values, gsize n)
{
    if (n == 0)
        return 0;
    qsort (values, n, sizeof (gdouble), compare_doubles);
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
