/*
 * The refusals that protect the host from a copy written to the wrong place,
 * whatever else a request says: a destination outside the policy's
 * allowed-destinations, inside one of the daemon's own directories, behind a
 * symbolic link in its directories (when the policy asks), or a block
 * device that another process holds. Each one touches nothing and sets
 * VMR_ERROR_INVALID_ARGUMENT (VMR_ERROR_BUSY for a device in use) with one
 * line naming the destination and why.
 *
 * A local destination is judged by where it really leads: the canonical
 * path with every symbolic link of the part that exists resolved
 * (vmr_destination_resolve_path()).
 */
#pragma once

#include "destination.h"

G_BEGIN_DECLS

/*
 * @path (absolute) made canonical, with every symbolic link of its longest
 * existing part resolved and the rest appended as written. A new string.
 */
gchar *vmr_destination_resolve_path (const gchar *path);

/*
 * Checks that @self matches one of @patterns (NULL-terminated, as the
 * policy's allowed-destinations holds them; NULL = anywhere): a file or
 * device by its resolved path, the literal directories of path patterns
 * resolved the same way, and a block device named by a link in /dev (as
 * udev names them: /dev/vg0/web01) by that name too; an NBD export by its
 * canonical URI.
 */
gboolean vmr_destination_check_allowed (const VmrDestination *self, const gchar *const *patterns,
                                        GError **error);

/*
 * Checks that @patterns (as above; NULL = anywhere) allow something inside
 * the directory @dir (absolute): a path pattern matches a location inside
 * it, @dir and the patterns' literal directories resolved as above.
 */
gboolean vmr_destination_check_directory_allowed (const gchar *dir, const gchar *const *patterns,
                                                  GError **error);

/*
 * Checks that @self does not lie in @dir (or is not @dir), what the
 * daemon calls @what ("state directory", ...), both resolved. An NBD export
 * always passes.
 */
gboolean vmr_destination_check_outside (const VmrDestination *self, const gchar *what,
                                        const gchar *dir, GError **error);

/*
 * Checks that no directory on the way to @self, as the request names it,
 * is a symbolic link (the destination itself may be one: /dev/VG/LV is).
 */
gboolean vmr_destination_check_no_symlinks (const VmrDestination *self, GError **error);

/*
 * Checks that a block device @self is not held by another process: a
 * mounted file system, a device-mapper or md member, an exclusive opener
 * (opened with O_EXCL for a moment: VMR_ERROR_BUSY when that fails with
 * EBUSY). Other kinds always pass.
 */
gboolean vmr_destination_check_not_held (const VmrDestination *self, GError **error);

G_END_DECLS
