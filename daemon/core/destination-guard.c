#define G_LOG_DOMAIN "vmr-daemon"

#include "destination-guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "destination-pattern.h"
#include "vmr-error.h"

gchar *
vmr_destination_resolve_path (const gchar *path)
{
    g_autofree gchar *existing = g_canonicalize_filename (path, "/");
    g_autoptr (GPtrArray) missing = g_ptr_array_new_with_free_func (g_free);
    g_autofree gchar *resolved = NULL;
    g_autofree gchar *parent = NULL;
    g_autoptr (GString) result = NULL;

    /* up the tree until a part exists; what is below it is appended as it stands */
    for (;;) {
        resolved = realpath (existing, NULL);
        if (resolved != NULL || g_strcmp0 (existing, "/") == 0)
            break;
        g_ptr_array_add (missing, g_path_get_basename (existing));
        parent = g_path_get_dirname (existing);
        g_free (existing);
        existing = g_steal_pointer (&parent);
    }
    result = g_string_new (resolved != NULL ? resolved : existing);
    for (guint i = missing->len; i > 0; i--) {
        if (result->str[result->len - 1] != '/')
            g_string_append_c (result, '/');
        g_string_append (result, g_ptr_array_index (missing, i - 1));
    }
    return g_string_free (g_steal_pointer (&result), FALSE);
}

static gboolean
is_local (const VmrDestination *self)
{
    return self->kind == VMR_DESTINATION_FILE || self->kind == VMR_DESTINATION_BLOCK;
}

/* @pattern with its literal directories resolved, as destinations are */
static gchar *
resolve_pattern (const gchar *pattern)
{
    g_autofree gchar *dir = vmr_destination_pattern_literal_dir (pattern);
    g_autofree gchar *resolved = NULL;

    if (dir == NULL)
        return g_strdup (pattern);
    resolved = vmr_destination_resolve_path (dir);
    return g_strconcat (resolved, pattern + strlen (dir), NULL);
}

/*
 * The name udev gave a block device, when @self is one named by a link in
 * /dev that leads to a device in /dev (/dev/vg0/web01 -> /dev/dm-3): its
 * path with the directories resolved, the link itself not. NULL otherwise:
 * a link anywhere else is judged by where it leads.
 */
static gchar *
udev_name (const VmrDestination *self, const gchar *resolved)
{
    g_autofree gchar *dir = g_path_get_dirname (self->location);
    g_autofree gchar *base = g_path_get_basename (self->location);
    g_autofree gchar *resolved_dir = vmr_destination_resolve_path (dir);
    g_autofree gchar *named = g_build_filename (resolved_dir, base, NULL);

    if (self->kind != VMR_DESTINATION_BLOCK || !g_str_has_prefix (named, "/dev/")
        || !g_str_has_prefix (resolved, "/dev/"))
        return NULL;
    return g_steal_pointer (&named);
}

gboolean
vmr_destination_check_allowed (const VmrDestination *self, const gchar *const *patterns,
                               GError **error)
{
    g_autofree gchar *location = NULL;
    g_autofree gchar *named = NULL;
    g_autofree gchar *list = NULL;
    g_autofree gchar *shown = NULL;

    if (patterns == NULL)
        return TRUE;
    location = is_local (self) ? vmr_destination_resolve_path (self->location)
                               : g_strdup (self->location);
    named = is_local (self) ? udev_name (self, location) : NULL;
    for (guint i = 0; patterns[i] != NULL; i++) {
        g_autofree gchar *pattern = is_local (self) ? resolve_pattern (patterns[i]) : NULL;
        const gchar *matched = pattern != NULL ? pattern : patterns[i];

        if (vmr_destination_pattern_match (matched, location)
            || (named != NULL && vmr_destination_pattern_match (matched, named)))
            return TRUE;
    }
    list = g_strjoinv (", ", (gchar **) patterns);
    shown = g_strcmp0 (location, self->location) != 0
                ? g_strdup_printf ("%s (which leads to %s)", self->location, location)
                : g_strdup (self->location);
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "destination %s is not in the policy's allowed-destinations (%s)", shown, list);
    return FALSE;
}

gboolean
vmr_destination_check_directory_allowed (const gchar *dir, const gchar *const *patterns,
                                         GError **error)
{
    g_autofree gchar *resolved = vmr_destination_resolve_path (dir);
    g_autoptr (GPtrArray) matched = g_ptr_array_new_with_free_func (g_free);
    g_autofree gchar *list = NULL;

    if (patterns == NULL)
        return TRUE;
    for (guint i = 0; patterns[i] != NULL; i++)
        g_ptr_array_add (matched, resolve_pattern (patterns[i]));
    g_ptr_array_add (matched, NULL);
    if (vmr_destination_patterns_reach_below ((const gchar *const *) matched->pdata, resolved))
        return TRUE;
    list = g_strjoinv (", ", (gchar **) patterns);
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "destination directory %s%s%s%s is outside the policy's allowed-destinations (%s)",
                 dir, g_strcmp0 (resolved, dir) != 0 ? " (which leads to " : "",
                 g_strcmp0 (resolved, dir) != 0 ? resolved : "",
                 g_strcmp0 (resolved, dir) != 0 ? ")" : "", list);
    return FALSE;
}

gboolean
vmr_destination_check_outside (const VmrDestination *self, const gchar *what, const gchar *dir,
                               GError **error)
{
    g_autofree gchar *location = NULL;
    g_autofree gchar *resolved_dir = NULL;

    if (!is_local (self) || dir == NULL)
        return TRUE;
    location = vmr_destination_resolve_path (self->location);
    resolved_dir = vmr_destination_resolve_path (dir);
    if (g_strcmp0 (location, resolved_dir) != 0
        && !(g_str_has_prefix (location, resolved_dir)
             && (g_str_has_suffix (resolved_dir, "/") || location[strlen (resolved_dir)] == '/')))
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "destination %s lies in the daemon's %s %s", self->location, what, dir);
    return FALSE;
}

gboolean
vmr_destination_check_no_symlinks (const VmrDestination *self, GError **error)
{
    g_autofree gchar *path = NULL;
    g_auto (GStrv) components = NULL;
    g_autoptr (GString) dir = g_string_new (NULL);

    if (!is_local (self))
        return TRUE;
    /* as written, "." and ".." taken away: each directory the kernel walks through */
    path = g_canonicalize_filename (self->location, "/");
    components = g_strsplit (path, "/", -1);
    for (guint i = 1; components[i] != NULL && components[i + 1] != NULL; i++) {
        GStatBuf st;

        g_string_append_printf (dir, "/%s", components[i]);
        if (g_lstat (dir->str, &st) == 0 && S_ISLNK (st.st_mode)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s: its directory %s is a symbolic link, which the "
                         "policy's destination-symlinks = refuse does not allow",
                         self->location, dir->str);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
vmr_destination_check_not_held (const VmrDestination *self, GError **error)
{
    int fd;

    if (self->kind != VMR_DESTINATION_BLOCK)
        return TRUE;
    /* on a block device, O_EXCL without O_CREAT fails if anyone holds it exclusively */
    fd = open (self->location, O_RDONLY | O_EXCL | O_CLOEXEC);
    if (fd >= 0) {
        close (fd);
        return TRUE;
    }
    if (errno == EBUSY) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                     "destination %s is in use by another process (mounted, part of another "
                     "device, or held open exclusively)",
                     self->location);
        return FALSE;
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot open destination %s: %s",
                 self->location, g_strerror (errno));
    return FALSE;
}
