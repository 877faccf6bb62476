#include "high.h"

#include "low.h"

static int last_value;

static void
changed_cb (int value)
{
    last_value = value;
}

static const LowWatcher watcher = { .changed = changed_cb };

int
high_run (void)
{
    low_watch (&watcher);
    low_change (3);
    return last_value;
}
