/*
 * The unit tests' own directories: made fresh for a test, removed with
 * everything in them at its end.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* removes @dir and everything below it (a link is removed, never followed); asserts */
void test_tree_remove (const gchar *dir);

G_END_DECLS
