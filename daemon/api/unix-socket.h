/*
 * A UNIX socket the daemon serves (the control sockets, the metrics on
 * unix:PATH): born with its mode and group, never more open than asked even
 * for a moment; a stale socket file left by a crash is replaced, one that
 * another process still serves is left alone.
 */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

G_BEGIN_DECLS

/*
 * A socket bound to @path with @mode, of group @gid ((gid_t) -1: the
 * daemon's), listening with @backlog; @path's directory is made (0755)
 * when missing. NULL with VMR_ERROR_BUSY when another process serves
 * @path, VMR_ERROR_FAILED for anything else, one line naming @path.
 */
GSocket *vmr_unix_socket_listen (const gchar *path, mode_t mode, gid_t gid, gint backlog,
                                 GError **error);

G_END_DECLS
