#define G_LOG_DOMAIN "vmr-policy"

#include "storage.h"

#include <string.h>

#include "destination-pattern.h"
#include "units.h"
#include "vmr-error.h"

VmrStorage *
vmr_storage_new (const gchar *name, GError **error)
{
    VmrStorage *self;

    if (*name == '\0') {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "a storage without a name ([storage NAME])");
        return NULL;
    }
    for (const gchar *c = name; *c != '\0'; c++) {
        if (!g_ascii_isalnum (*c) && strchr ("._-", *c) == NULL) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is not a storage name (letters, digits, '.', '_' and '-')", name);
            return NULL;
        }
    }
    self = g_new0 (VmrStorage, 1);
    self->name = g_strdup (name);
    return self;
}

void
vmr_storage_free (VmrStorage *self)
{
    if (self == NULL)
        return;
    g_free (self->name);
    g_strfreev (self->paths);
    g_free (self);
}

gboolean
vmr_storage_parse_key (VmrStorage *self, const gchar *key, const gchar *text, GError **error)
{
    if (g_strcmp0 (key, "paths") == 0) {
        GStrv paths = vmr_destination_patterns_parse (text, error);

        if (paths == NULL)
            return FALSE;
        g_strfreev (self->paths);
        self->paths = paths;
        return TRUE;
    }
    if (g_strcmp0 (key, "budget") == 0)
        return vmr_units_parse_bytes (text, &self->budget, error);
    g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "unknown key (a [storage] section has paths and budget)");
    return FALSE;
}

/* TRUE when @pattern matches @location, a path pattern also every location below it */
static gboolean
pattern_contains (const gchar *pattern, const gchar *location)
{
    g_autofree gchar *below = NULL;

    if (vmr_destination_pattern_match (pattern, location))
        return TRUE;
    if (*pattern != '/')
        return FALSE;
    below = g_str_equal (pattern, "/") ? g_strdup ("/**") : g_strconcat (pattern, "/**", NULL);
    return vmr_destination_pattern_match (below, location);
}

gboolean
vmr_storage_contains (const VmrStorage *self, const gchar *location)
{
    for (guint i = 0; self->paths != NULL && self->paths[i] != NULL; i++) {
        if (pattern_contains (self->paths[i], location))
            return TRUE;
    }
    return FALSE;
}

const gchar *
vmr_storage_overlap (const VmrStorage *self, const VmrStorage *other)
{
    for (guint i = 0; self->paths != NULL && self->paths[i] != NULL; i++) {
        for (guint j = 0; other->paths != NULL && other->paths[j] != NULL; j++) {
            if (pattern_contains (self->paths[i], other->paths[j])
                || pattern_contains (other->paths[j], self->paths[i]))
                return self->paths[i];
        }
    }
    return NULL;
}
