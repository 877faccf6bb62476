#define G_LOG_DOMAIN "vmr-policy"

#include "destination-pattern.h"

#include <fnmatch.h>
#include <string.h>

#include "vmr-error.h"

/* the URI schemes of NBD exports, as nbd/nbd-uri.h reads them */
static const struct {
    const gchar *prefix;
    gboolean tcp; /* a host follows; a missing port is the default one */
} schemes[] = {
    { "nbd://", TRUE },
    { "nbds://", TRUE },
    { "nbd+unix://", FALSE },
    { "nbds+unix://", FALSE },
};

#define NBD_DEFAULT_PORT "10809"

static gboolean
has_wildcard (const gchar *text)
{
    return strpbrk (text, "*?[") != NULL;
}

/* @text (a TCP URI pattern after its scheme @prefix) with the default port when it names none */
static gchar *
with_port (const gchar *text, const gchar *prefix)
{
    const gchar *authority = text + strlen (prefix);
    const gchar *slash = strchr (authority, '/');
    gsize len = slash != NULL ? (gsize) (slash - authority) : strlen (authority);
    g_autofree gchar *host = g_strndup (authority, len);
    const gchar *colon = strrchr (host, ':');
    const gchar *bracket = strrchr (host, ']');

    /* "[::1]" names no port, "[::1]:10809" and "host:*" do */
    if (colon != NULL && (bracket == NULL || colon > bracket))
        return g_strdup (text);
    return g_strdup_printf ("%s%s:%s%s", prefix, host, NBD_DEFAULT_PORT,
                            slash != NULL ? slash : "/");
}

gchar *
vmr_destination_pattern_parse (const gchar *text, GError **error)
{
    g_auto (GStrv) components = NULL;

    if (text == NULL || *text == '\0') {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "an empty pattern");
        return NULL;
    }
    for (guint i = 0; i < G_N_ELEMENTS (schemes); i++) {
        if (!g_str_has_prefix (text, schemes[i].prefix))
            continue;
        if (schemes[i].tcp && text[strlen (schemes[i].prefix)] == '\0') {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' names no host (nbd://HOST[:PORT]/EXPORT)", text);
            return NULL;
        }
        return schemes[i].tcp ? with_port (text, schemes[i].prefix) : g_strdup (text);
    }
    if (strstr (text, "://") != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s': the scheme must be nbd, nbds, nbd+unix or nbds+unix", text);
        return NULL;
    }
    if (*text != '/') {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is neither an absolute path nor an NBD URI", text);
        return NULL;
    }
    /* destinations are matched in canonical form, which has neither */
    if (g_str_has_suffix (text, "/")) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' ends in '/': write %s** for everything below it", text, text);
        return NULL;
    }
    components = g_strsplit (text, "/", -1);
    for (guint i = 1; components[i] != NULL; i++) {
        if (*components[i] == '\0') {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' has an empty component ('//')", text);
            return NULL;
        }
        if (g_strcmp0 (components[i], ".") == 0 || g_strcmp0 (components[i], "..") == 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' has a '%s' component: write the directory itself", text,
                         components[i]);
            return NULL;
        }
    }
    return g_strdup (text);
}

/* @pattern[@p...] against @location[@l...], a component each */
static gboolean
match_components (gchar **pattern, gchar **location)
{
    if (*pattern == NULL)
        return *location == NULL;
    if (g_strcmp0 (*pattern, "**") == 0) {
        /* none, one, or more of the location's components */
        for (gchar **rest = location;; rest++) {
            if (match_components (pattern + 1, rest))
                return TRUE;
            if (*rest == NULL)
                return FALSE;
        }
    }
    if (*location == NULL || fnmatch (*pattern, *location, 0) != 0)
        return FALSE;
    return match_components (pattern + 1, location + 1);
}

gboolean
vmr_destination_pattern_match (const gchar *pattern, const gchar *location)
{
    g_auto (GStrv) pattern_parts = NULL;
    g_auto (GStrv) location_parts = NULL;

    if (pattern == NULL || location == NULL)
        return FALSE;
    pattern_parts = g_strsplit (pattern, "/", -1);
    location_parts = g_strsplit (location, "/", -1);
    return match_components (pattern_parts, location_parts);
}

/* whether @pattern, from its components on, matches some location that has @dir's as its first */
static gboolean
match_below (gchar **pattern, gchar **dir)
{
    if (*dir == NULL)
        return *pattern != NULL; /* the rest of the pattern names something inside */
    if (*pattern == NULL)
        return FALSE;
    if (g_strcmp0 (*pattern, "**") == 0)
        return TRUE; /* it takes the rest of @dir and one name more */
    if (fnmatch (*pattern, *dir, 0) != 0)
        return FALSE;
    return match_below (pattern + 1, dir + 1);
}

gboolean
vmr_destination_patterns_reach_below (const gchar *const *patterns, const gchar *dir)
{
    g_autofree gchar *trimmed = g_strdup (dir);
    g_auto (GStrv) dir_parts = NULL;

    if (dir == NULL || *dir != '/')
        return FALSE;
    while (strlen (trimmed) > 1 && g_str_has_suffix (trimmed, "/"))
        trimmed[strlen (trimmed) - 1] = '\0';
    /* "/" is the one component "" before the first slash, as "/srv" is "" and "srv" */
    dir_parts
        = g_str_equal (trimmed, "/") ? g_strsplit ("/", "/", 1) : g_strsplit (trimmed, "/", -1);
    if (g_str_equal (trimmed, "/"))
        dir_parts[0][0] = '\0';
    for (guint i = 0; patterns != NULL && patterns[i] != NULL; i++) {
        g_auto (GStrv) pattern_parts = NULL;

        if (*patterns[i] != '/')
            continue;
        pattern_parts = g_strsplit (patterns[i], "/", -1);
        if (match_below (pattern_parts, dir_parts))
            return TRUE;
    }
    return FALSE;
}

const gchar *
vmr_destination_patterns_find (const gchar *const *patterns, const gchar *location)
{
    for (guint i = 0; patterns != NULL && patterns[i] != NULL; i++) {
        if (vmr_destination_pattern_match (patterns[i], location))
            return patterns[i];
    }
    return NULL;
}

gchar *
vmr_destination_pattern_literal_dir (const gchar *pattern)
{
    g_auto (GStrv) components = NULL;
    g_autoptr (GPtrArray) literal = g_ptr_array_new ();
    g_autofree gchar *joined = NULL;

    if (pattern == NULL || *pattern != '/')
        return NULL;
    components = g_strsplit (pattern + 1, "/", -1);
    /* the last component names the destination itself, not a directory */
    for (guint i = 0; components[i] != NULL && components[i + 1] != NULL; i++) {
        if (has_wildcard (components[i]))
            break;
        g_ptr_array_add (literal, components[i]);
    }
    if (literal->len == 0)
        return NULL;
    g_ptr_array_add (literal, NULL);
    joined = g_strjoinv ("/", (gchar **) literal->pdata);
    return g_strconcat ("/", joined, NULL);
}

GStrv
vmr_destination_patterns_parse (const gchar *text, GError **error)
{
    g_auto (GStrv) items = g_strsplit (text, ",", -1);
    g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();

    for (guint i = 0; items[i] != NULL; i++) {
        g_autofree gchar *pattern = vmr_destination_pattern_parse (g_strstrip (items[i]), error);

        if (pattern == NULL)
            return NULL;
        g_strv_builder_add (builder, pattern);
    }
    return g_strv_builder_end (builder);
}
