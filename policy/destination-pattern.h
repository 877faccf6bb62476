/*
 * The patterns of allowed-destinations: path globs and NBD URI patterns that
 * name where copies may write. Pure: no file is looked at here; whoever
 * matches a destination resolves its symbolic links first.
 *
 * A pattern is matched one '/'-separated component at a time: '*' and '?'
 * (and [...] classes) match within a component as fnmatch(3) has them, and a
 * component that is "**" alone matches any number of components, none
 * included. An NBD URI pattern is matched against the destination's
 * canonical URI (nbd://HOST:PORT/EXPORT, nbd+unix:///EXPORT?socket=PATH).
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Checks @text as one pattern: an absolute path without "." or ".."
 * components, or a URI of the schemes nbd, nbds, nbd+unix or nbds+unix.
 * Returns the pattern as it is matched (a TCP URI without a port gets the
 * default port 10809), or NULL with VMR_ERROR_INVALID_ARGUMENT saying what
 * is wrong. Free with g_free().
 */
gchar *vmr_destination_pattern_parse (const gchar *text, GError **error);

/*
 * Patterns separated by commas, each read by vmr_destination_pattern_parse();
 * NULL with @error at the first bad one. Free with g_strfreev().
 */
GStrv vmr_destination_patterns_parse (const gchar *text, GError **error);

/* TRUE when @location (a canonical path or URI) matches @pattern, a parsed pattern */
gboolean vmr_destination_pattern_match (const gchar *pattern, const gchar *location);

/*
 * The first of @patterns (NULL-terminated) that @location matches, or
 * NULL when none does
 */
const gchar *vmr_destination_patterns_find (const gchar *const *patterns, const gchar *location);

/*
 * TRUE when a path pattern of @patterns (NULL-terminated) matches some
 * location inside the directory @dir (absolute, canonical), e.g.
 * "/srv/vm/ **" (without the space) of "/srv" or of "/srv/vm/a", not of
 * "/srv/other". URI patterns never do.
 */
gboolean vmr_destination_patterns_reach_below (const gchar *const *patterns, const gchar *dir);

/*
 * The part of a path pattern before its first component with a wildcard,
 * e.g. "/srv/vm" of "/srv/vm/ **" (without the space): the directory a
 * caller may resolve symbolic links of. NULL for a URI pattern or a pattern
 * whose first component has one. Free with g_free().
 */
gchar *vmr_destination_pattern_literal_dir (const gchar *pattern);

G_END_DECLS
