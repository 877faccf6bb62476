/*
 * A TCP proxy on a free port of 127.0.0.1 to a port of the same address,
 * that a test cuts and restores: cut, every connection through it is
 * closed and every new one closed as soon as it comes, as when the far
 * side cannot be reached; restored, it forwards again. It runs on a thread
 * of its own.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _VmrCutProxy VmrCutProxy;

/* a proxy to 127.0.0.1:@target, forwarding */
VmrCutProxy *vmr_cut_proxy_new (guint target);

/* the port it listens on */
guint vmr_cut_proxy_get_port (VmrCutProxy *self);

/* cuts it (@cut) or restores it */
void vmr_cut_proxy_set_cut (VmrCutProxy *self, gboolean cut);

void vmr_cut_proxy_free (VmrCutProxy *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCutProxy, vmr_cut_proxy_free)

G_END_DECLS
