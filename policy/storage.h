/*
 * The policy's [storage NAME] sections: the storages the daemon knows. A
 * storage is the set of locations one array (or pool, or NBD server) serves:
 * directories, block-device globs and NBD URI patterns (destination-pattern.h).
 * Its budget is the bytes/s all the copies that read from it or write to it
 * may move together. Pure: no file is looked at here.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    gchar *name;    /* as in [storage NAME] */
    GStrv paths;    /* parsed patterns, a directory without a wildcard standing for all below */
    guint64 budget; /* bytes/s for all the copies touching it together, 0 = none */
} VmrStorage;

/* a storage @name has no key yet; NULL with @error when @name is no storage name */
VmrStorage *vmr_storage_new (const gchar *name, GError **error);
void vmr_storage_free (VmrStorage *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrStorage, vmr_storage_free)

/* reads @text as the value of @key ("paths" or "budget"); one line in @error */
gboolean vmr_storage_parse_key (VmrStorage *self, const gchar *key, const gchar *text,
                                GError **error);

/* TRUE when @location (a canonical path or NBD URI) lies in @self */
gboolean vmr_storage_contains (const VmrStorage *self, const gchar *location);

/*
 * The first pattern of @self that a location of @other's patterns would
 * also match, e.g. "/srv/a" of a storage beside "/srv/a/fast", or NULL when
 * the two share none that a pattern's own text shows
 */
const gchar *vmr_storage_overlap (const VmrStorage *self, const VmrStorage *other);

G_END_DECLS
