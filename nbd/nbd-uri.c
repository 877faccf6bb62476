#define G_LOG_DOMAIN "vmr-nbd"

#include "nbd-uri.h"

#include <string.h>

#include "vmr-error.h"

/* the schemes, as libnbd's nbd_connect_uri() names them */
static const struct {
    const gchar *name;
    gboolean tls;
    gboolean unix_socket;
} schemes[] = {
    { "nbd", FALSE, FALSE },
    { "nbds", TRUE, FALSE },
    { "nbd+unix", FALSE, TRUE },
    { "nbds+unix", TRUE, TRUE },
};

gboolean
vmr_nbd_uri_is_uri (const gchar *text)
{
    return text != NULL && g_uri_peek_scheme (text) != NULL;
}

void
vmr_nbd_uri_free (VmrNbdUri *self)
{
    if (self == NULL)
        return;
    g_free (self->host);
    g_free (self->socket);
    g_free (self->export_name);
    g_free (self->canonical);
    g_free (self);
}

VmrNbdUri *
vmr_nbd_uri_copy (const VmrNbdUri *self)
{
    VmrNbdUri *copy = g_new0 (VmrNbdUri, 1);

    copy->tls = self->tls;
    copy->host = g_strdup (self->host);
    copy->port = self->port;
    copy->socket = g_strdup (self->socket);
    copy->export_name = g_strdup (self->export_name);
    copy->canonical = g_strdup (self->canonical);
    return copy;
}

static gboolean
fail (GError **error, const gchar *text, const gchar *what)
{
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "malformed NBD URI '%s': %s", text,
                 what);
    return FALSE;
}

/* the socket=PATH of a UNIX URI's query, which must be all of it */
static gboolean
parse_query (VmrNbdUri *self, const gchar *text, const gchar *query, GError **error)
{
    g_autoptr (GHashTable) params = NULL;
    g_autoptr (GError) local_error = NULL;
    const gchar *socket;

    if (query == NULL || *query == '\0')
        return fail (error, text, "a UNIX socket URI needs ?socket=PATH");
    params = g_uri_parse_params (query, -1, "&", G_URI_PARAMS_NONE, &local_error);
    if (params == NULL)
        return fail (error, text, local_error->message);
    socket = g_hash_table_lookup (params, "socket");
    if (socket == NULL || g_hash_table_size (params) != 1)
        return fail (error, text, "the query may only be socket=PATH");
    if (!g_path_is_absolute (socket))
        return fail (error, text, "the socket must be an absolute path");
    self->socket = g_strdup (socket);
    return TRUE;
}

static gchar *
build_canonical (const VmrNbdUri *self)
{
    g_autofree gchar *export_part = g_uri_escape_string (self->export_name, "/", FALSE);

    if (self->socket != NULL) {
        g_autofree gchar *socket = g_uri_escape_string (self->socket, "/", FALSE);

        return g_strdup_printf ("%s:///%s?socket=%s", self->tls ? "nbds+unix" : "nbd+unix",
                                export_part, socket);
    }
    return g_strdup_printf ("%s://%s%s%s:%u/%s", self->tls ? "nbds" : "nbd",
                            strchr (self->host, ':') != NULL ? "[" : "", self->host,
                            strchr (self->host, ':') != NULL ? "]" : "", self->port, export_part);
}

VmrNbdUri *
vmr_nbd_uri_parse (const gchar *text, GError **error)
{
    g_autoptr (VmrNbdUri) self = g_new0 (VmrNbdUri, 1);
    g_autoptr (GUri) uri = NULL;
    g_autoptr (GError) local_error = NULL;
    const gchar *scheme;
    const gchar *host;
    const gchar *path;
    gint port;
    gint kind = -1;

    uri = g_uri_parse (text != NULL ? text : "", G_URI_FLAGS_NONE, &local_error);
    if (uri == NULL) {
        fail (error, text != NULL ? text : "", local_error->message);
        return NULL;
    }
    scheme = g_uri_get_scheme (uri);
    for (guint i = 0; i < G_N_ELEMENTS (schemes); i++) {
        if (g_ascii_strcasecmp (scheme, schemes[i].name) == 0)
            kind = (gint) i;
    }
    if (kind < 0) {
        fail (error, text, "the scheme must be nbd, nbds, nbd+unix or nbds+unix");
        return NULL;
    }
    if (g_uri_get_userinfo (uri) != NULL || g_uri_get_fragment (uri) != NULL) {
        fail (error, text, "user names and fragments are not allowed");
        return NULL;
    }
    self->tls = schemes[kind].tls;
    host = g_uri_get_host (uri);
    port = g_uri_get_port (uri);
    if (schemes[kind].unix_socket) {
        if ((host != NULL && *host != '\0') || port != -1) {
            fail (error, text, "a UNIX socket URI names no host (nbd+unix:///EXPORT?socket=PATH)");
            return NULL;
        }
        if (!parse_query (self, text, g_uri_get_query (uri), error))
            return NULL;
    } else {
        if (host == NULL || *host == '\0') {
            fail (error, text, "no host (nbd://HOST[:PORT]/EXPORT)");
            return NULL;
        }
        if (g_uri_get_query (uri) != NULL) {
            fail (error, text, "a TCP URI takes no query");
            return NULL;
        }
        if (port == 0) {
            fail (error, text, "port 0");
            return NULL;
        }
        self->host = g_strdup (host);
        self->port = port > 0 ? (guint) port : VMR_NBD_DEFAULT_PORT;
    }
    /* the path is "/" and the export name, as libnbd reads it */
    path = g_uri_get_path (uri);
    if (*path != '\0' && *path != '/') {
        fail (error, text, "the export must follow a '/'");
        return NULL;
    }
    self->export_name = g_strdup (*path == '/' ? path + 1 : path);
    self->canonical = build_canonical (self);
    return g_steal_pointer (&self);
}

VmrNbdUri *
vmr_nbd_uri_with_export (const VmrNbdUri *self, const gchar *export_name)
{
    VmrNbdUri *copy = vmr_nbd_uri_copy (self);

    g_free (copy->export_name);
    copy->export_name = g_strdup (export_name);
    g_free (copy->canonical);
    copy->canonical = build_canonical (copy);
    return copy;
}

gchar *
vmr_nbd_uri_server (const VmrNbdUri *self)
{
    if (self->socket != NULL)
        return g_strdup_printf ("nbd+unix:%s", self->socket);
    return g_strdup_printf ("nbd://%s:%u", self->host, self->port);
}
