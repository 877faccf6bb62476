/*
 * An NBD export named by a URI, as libnbd and QEMU spell them:
 * nbd://HOST[:PORT]/EXPORT, nbds://... (TLS), nbd+unix:///EXPORT?socket=PATH
 * and nbds+unix://... Parsed once into the parts that QEMU's blockdev-add,
 * libvirt's disk XML and libnbd's connect calls take.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the port of nbd://HOST/EXPORT */
#define VMR_NBD_DEFAULT_PORT 10809

typedef struct {
    gboolean tls;       /* nbds: the connection must be TLS */
    gchar *host;        /* TCP: the server's name or address, NULL for a UNIX socket */
    guint port;         /* TCP port, VMR_NBD_DEFAULT_PORT when the URI names none */
    gchar *socket;      /* absolute path of the UNIX socket, NULL for TCP */
    gchar *export_name; /* decoded, "" for the server's default export */
    gchar *canonical;   /* the URI rebuilt from the parts, e.g. nbd://h:10809/e */
} VmrNbdUri;

/* TRUE when @text starts with a URI scheme (e.g. "nbd:"), not a path */
gboolean vmr_nbd_uri_is_uri (const gchar *text);

/*
 * Parses @text. Sets VMR_ERROR_INVALID_ARGUMENT with one line naming what is
 * wrong: another scheme, no host (TCP), a host or no socket (UNIX), a
 * relative socket path, user info, a fragment, a query other than
 * socket=PATH, a bad port. Free with vmr_nbd_uri_free().
 */
VmrNbdUri *vmr_nbd_uri_parse (const gchar *text, GError **error);
VmrNbdUri *vmr_nbd_uri_copy (const VmrNbdUri *self);
void vmr_nbd_uri_free (VmrNbdUri *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrNbdUri, vmr_nbd_uri_free)

/*
 * The export @export_name of the same server, with the same TLS: a new URI,
 * free with vmr_nbd_uri_free().
 */
VmrNbdUri *vmr_nbd_uri_with_export (const VmrNbdUri *self, const gchar *export_name);

/*
 * The server alone, "nbd://h:10809" or "nbd+unix:PATH": what copies to one
 * server have in common. A new string.
 */
gchar *vmr_nbd_uri_server (const VmrNbdUri *self);

G_END_DECLS
