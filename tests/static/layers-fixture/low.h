/*
 * A fixture of the layers check (tests/static/test-check-layers.py): a
 * lower library that calls an upper one through a function pointer it
 * declares, a call that no symbol of the objects shows.
 */
#pragma once

typedef struct {
    /* the upper library's handler of a change */
    void (*changed) (int value);
} LowWatcher;

/* @watcher's changed() is called at each low_change() */
void low_watch (const LowWatcher *watcher);

void low_change (int value);
