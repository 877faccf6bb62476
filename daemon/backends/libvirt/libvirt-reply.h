/*
 * The bound on what the daemon takes from libvirt: a string that libvirt
 * hands over (a domain's XML, a QMP passthrough reply) is measured before it
 * is parsed, as every read from a peer is. No libvirt calls, so that it
 * builds and is tested without libvirt.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Whether @reply (not NULL), what libvirt returned from @call for the domain
 * @domain, is short enough to parse: at most VMR_QMP_STREAM_MAX_LINE bytes,
 * the limit on a line from a QMP peer. A longer one is refused with
 * VMR_ERROR_PROTOCOL naming @call and @domain, and a warning in the log.
 * Only the first VMR_QMP_STREAM_MAX_LINE + 1 bytes are looked at.
 */
gboolean vmr_libvirt_reply_check (const gchar *reply, const gchar *call, const gchar *domain,
                                  GError **error);

G_END_DECLS
