#define G_LOG_DOMAIN "vmr-daemon"

#include "unix-socket.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmr-error.h"

static gboolean
socket_is_served (const gchar *path)
{
    g_autoptr (GSocketClient) client = g_socket_client_new ();
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GSocketConnection) conn = NULL;

    conn = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (address), NULL, NULL);
    return conn != NULL;
}

/* @socket bound to @path with @mode: the umask makes it so from its first moment */
static gboolean
bind_with_mode (GSocket *socket, const gchar *path, mode_t mode, GError **error)
{
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GError) local_error = NULL;
    mode_t old_umask = umask (~mode & 0777);
    gboolean bound = g_socket_bind (socket, address, FALSE, &local_error);

    umask (old_umask);
    if (!bound) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot listen on %s: %s", path,
                     local_error->message);
        return FALSE;
    }
    return TRUE;
}

GSocket *
vmr_unix_socket_listen (const gchar *path, mode_t mode, gid_t gid, gint backlog, GError **error)
{
    g_autofree gchar *dir = g_path_get_dirname (path);
    g_autoptr (GSocket) socket = NULL;
    g_autoptr (GError) local_error = NULL;

    if (g_mkdir_with_parents (dir, 0755) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", dir,
                     g_strerror (errno));
        return NULL;
    }
    if (g_file_test (path, G_FILE_TEST_EXISTS)) {
        if (socket_is_served (path)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                         "another virt-mirrord is listening on %s", path);
            return NULL;
        }
        g_debug ("removing the stale socket %s", path);
        g_unlink (path);
    }
    socket = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                           &local_error);
    if (socket == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot listen on %s: %s", path,
                     local_error->message);
        return NULL;
    }
    if (!bind_with_mode (socket, path, mode, error))
        return NULL;
    if (gid != (gid_t) -1 && chown (path, (uid_t) -1, gid) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot give %s to group %u: %s", path,
                     (guint) gid, g_strerror (errno));
        g_unlink (path);
        return NULL;
    }
    g_socket_set_listen_backlog (socket, backlog);
    if (!g_socket_listen (socket, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot listen on %s: %s", path,
                     local_error->message);
        g_unlink (path);
        return NULL;
    }
    return g_steal_pointer (&socket);
}
