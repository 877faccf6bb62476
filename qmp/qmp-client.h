/*
 * An asynchronous QMP client: QEMU's monitor, or the daemon's control socket,
 * which speaks the same protocol.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define VMR_TYPE_QMP_CLIENT (vmr_qmp_client_get_type ())
G_DECLARE_FINAL_TYPE (VmrQmpClient, vmr_qmp_client, VMR, QMP_CLIENT, GObject)

/* default per-command timeout, in milliseconds */
#define VMR_QMP_DEFAULT_TIMEOUT_MS 30000

/*
 * Signals, emitted in the thread-default main context of the caller of
 * vmr_qmp_client_connect_async():
 *   "event"        (const gchar *name, JsonObject *data, gint64 timestamp_us)
 *                  data is an empty object when the event has none;
 *                  timestamp_us is the peer's wall-clock stamp, or 0
 *   "disconnected" (GError *error)   once, when the peer went away
 */

/*
 * Connects to the UNIX socket @path, reads the greeting and negotiates
 * capabilities. On success the result is a ready client. @timeout_ms (0: the
 * default) bounds the greeting and the negotiation: VMR_ERROR_TIMEOUT.
 * Cancelling @cancellable ends the attempt at once (G_IO_ERROR_CANCELLED).
 */
void vmr_qmp_client_connect_async (const gchar *path, guint timeout_ms, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
VmrQmpClient *vmr_qmp_client_connect_finish (GAsyncResult *res, GError **error);

/* the same on an already connected stream; a reference is taken */
void vmr_qmp_client_new_for_stream_async (GIOStream *stream, guint timeout_ms,
                                          GCancellable *cancellable, GAsyncReadyCallback callback,
                                          gpointer user_data);

/* blocking wrapper: iterates the thread-default main context */
VmrQmpClient *vmr_qmp_client_connect_sync (const gchar *path, guint timeout_ms, GError **error);

/*
 * Runs @command with @arguments (nullable, not consumed). Several commands may
 * be in flight; replies are matched by id. @timeout_ms 0 means the default.
 * The result is the "return" member. A QMP error becomes a VMR_ERROR whose
 * code carries the class and whose message is QEMU's desc. No reply in time
 * is VMR_ERROR_TIMEOUT; cancelling @cancellable completes the call at once
 * with G_IO_ERROR_CANCELLED. Either way a reply that comes later is dropped.
 */
void vmr_qmp_client_execute_async (VmrQmpClient *self, const gchar *command, JsonObject *arguments,
                                   guint timeout_ms, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
JsonNode *vmr_qmp_client_execute_finish (VmrQmpClient *self, GAsyncResult *res, GError **error);

/*
 * As vmr_qmp_client_execute_async(), with the open descriptor @fd (not
 * consumed) passed along with the command (SCM_RIGHTS), for add-fd and
 * getfd; the monitor must be a UNIX socket. Finish with
 * vmr_qmp_client_execute_finish().
 */
void vmr_qmp_client_execute_with_fd_async (VmrQmpClient *self, const gchar *command,
                                           JsonObject *arguments, gint fd, guint timeout_ms,
                                           GCancellable *cancellable, GAsyncReadyCallback callback,
                                           gpointer user_data);

/* blocking wrapper: iterates the thread-default main context */
JsonNode *vmr_qmp_client_execute_sync (VmrQmpClient *self, const gchar *command,
                                       JsonObject *arguments, guint timeout_ms, GError **error);

/*
 * Whether the "return" of query-qmp-schema (@schema) lists a command named
 * @command. This is how to detect a feature: versions lie (backports).
 */
gboolean vmr_qmp_schema_has_command (JsonNode *schema, const gchar *command);

/*
 * The arguments of block-job-change that make the running mirror @job_id
 * write-blocking (free with json_object_unref), when @schema (the "return" of
 * query-qmp-schema) lists block-job-change. Otherwise NULL with
 * VMR_ERROR_FAILED: this QEMU cannot change the copy mode of a running mirror.
 */
JsonObject *vmr_qmp_schema_copy_mode_args (JsonNode *schema, const gchar *job_id, GError **error);

/* the "QMP" member of the greeting (version, capabilities); owned by @self */
JsonObject *vmr_qmp_client_get_greeting (VmrQmpClient *self);

gboolean vmr_qmp_client_is_connected (VmrQmpClient *self);

/* closes the connection; pending commands fail with VMR_ERROR_DISCONNECTED */
void vmr_qmp_client_close (VmrQmpClient *self);

G_END_DECLS
