/*
 * JSON-lines framing shared by QMP and the daemon's control socket: one JSON
 * object per line in each direction.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define VMR_TYPE_QMP_STREAM (vmr_qmp_stream_get_type ())
G_DECLARE_FINAL_TYPE (VmrQmpStream, vmr_qmp_stream, VMR, QMP_STREAM, GObject)

/* the longest line accepted from a peer; QEMU's schema reply is ~200 KiB */
#define VMR_QMP_STREAM_MAX_LINE (16 * 1024 * 1024)

/*
 * Wraps @stream (a reference is taken). Nothing is read until
 * vmr_qmp_stream_start(). Signals, emitted in the thread-default main context
 * of the caller of vmr_qmp_stream_start():
 *   "message"   (JsonObject *msg)              one well-formed object
 *   "malformed" (const gchar *line, const gchar *reason)   a line that is not
 *               a JSON object; the stream goes on reading
 *   "closed"    (GError *error)                end of stream (error NULL) or
 *               a read failure; G_IO_ERROR_PARTIAL_INPUT when the stream
 *               ended inside a line, which is not taken for a message;
 *               VMR_ERROR_PROTOCOL when the peer sent more than the longest
 *               line (VMR_QMP_STREAM_MAX_LINE, see vmr_qmp_stream_set_limits())
 *               without ending it, left a line unfinished too long, or sent
 *               nothing for too long (vmr_qmp_stream_set_idle_timeout()): then
 *               "malformed" (line "") comes first, a reply its handler queues
 *               is still written (for at most 2 s), and what the peer sends is
 *               never buffered beyond the limit; VMR_ERROR_BUSY when the peer
 *               left too much unread; emitted once, nothing is read afterwards
 */
VmrQmpStream *vmr_qmp_stream_new (GIOStream *stream);

void vmr_qmp_stream_start (VmrQmpStream *self);

/*
 * Limits for a peer that is not trusted, set before vmr_qmp_stream_start():
 * the longest line taken (at most VMR_QMP_STREAM_MAX_LINE, the default);
 * @max_queued, the bytes queued for writing beyond which the peer is cut
 * off ("closed" with VMR_ERROR_BUSY, from the main loop) when it has more
 * than one message waiting (0: no bound); @line_timeout_s, how long a line
 * may stay unfinished (0: forever).
 */
void vmr_qmp_stream_set_limits (VmrQmpStream *self, gsize max_line, gsize max_queued,
                                guint line_timeout_s);

/*
 * For a peer that may hold its connection without using it, set before
 * vmr_qmp_stream_start(): after @idle_timeout_s seconds in which it sent
 * nothing at all, it is cut off as a peer that breaks the line rules is
 * ("malformed" with "the peer sent nothing for N s", then "closed"). 0, the
 * default: it may stay silent forever.
 */
void vmr_qmp_stream_set_idle_timeout (VmrQmpStream *self, guint idle_timeout_s);

/* queues @msg (not consumed) for writing; writes keep their order */
void vmr_qmp_stream_send (VmrQmpStream *self, JsonObject *msg);

/*
 * As vmr_qmp_stream_send(), and the open descriptor @fd (not consumed: a
 * duplicate goes) travels with the first bytes of the line (SCM_RIGHTS), as
 * QEMU's add-fd and getfd take one. FALSE with VMR_ERROR_FAILED when the
 * stream is no UNIX socket or @fd cannot be duplicated, VMR_ERROR_DISCONNECTED
 * when it is closed; nothing is sent then.
 */
gboolean vmr_qmp_stream_send_with_fd (VmrQmpStream *self, JsonObject *msg, gint fd, GError **error);

/* stops reading and writing and closes the underlying stream; emits "closed"
 * if it was not emitted yet */
void vmr_qmp_stream_close (VmrQmpStream *self);

gboolean vmr_qmp_stream_is_closed (VmrQmpStream *self);

/* the credentials of a UNIX socket peer, or -1 when not known */
gint vmr_qmp_stream_get_peer_uid (VmrQmpStream *self);

/* parses one line into an object; NULL with @error for anything else */
JsonObject *vmr_qmp_parse_line (const gchar *line, gsize len, GError **error);

/* serializes @msg into one line terminated by '\n' */
gchar *vmr_qmp_serialize (JsonObject *msg);

G_END_DECLS
