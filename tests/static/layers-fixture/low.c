#include "low.h"

#include <stddef.h>

static const LowWatcher *watching;

void
low_watch (const LowWatcher *watcher)
{
    watching = watcher;
}

void
low_change (int value)
{
    if (watching != NULL)
        watching->changed (value);
}
