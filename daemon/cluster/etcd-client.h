/*
 * A client of etcd's v3 API through its JSON gateway (/v3/...): unary calls
 * (lease, kv, txn) and watches, async on the GLib main loop, with libsoup.
 * A call goes to the endpoint that answered last; when it cannot be reached
 * or answers that it cannot serve (5xx: no leader, stopping), the next one
 * is tried, each once. Keys and values are base64 on the wire; the helpers
 * below encode and decode them.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define VMR_TYPE_ETCD_CLIENT (vmr_etcd_client_get_type ())
G_DECLARE_FINAL_TYPE (VmrEtcdClient, vmr_etcd_client, VMR, ETCD_CLIENT, GObject)

/*
 * A client of @endpoints ("http://HOST:PORT" or "https://..."); with
 * @tls_dir, its ca.pem verifies the servers and cert.pem and key.pem are
 * this client's certificate. NULL with @error when the files cannot be read.
 */
VmrEtcdClient *vmr_etcd_client_new (const gchar *const *endpoints, const gchar *tls_dir,
                                    GError **error);

/*
 * POSTs @body (consumed) to /v3/@method, e.g. "kv/put". The reply's object
 * comes from _finish (free with json_object_unref()); an error reply of
 * etcd (e.g. a lease not found) is VMR_ERROR_FAILED with etcd's message,
 * no endpoint reached is VMR_ERROR_DISCONNECTED.
 */
void vmr_etcd_client_call_async (VmrEtcdClient *self, const gchar *method, JsonObject *body,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data);
JsonObject *vmr_etcd_client_call_finish (VmrEtcdClient *self, GAsyncResult *result, GError **error);

/* how many requests the client has sent (calls and watches, retries included) */
guint64 vmr_etcd_client_get_requests (VmrEtcdClient *self);

/* the endpoint the next call goes to first */
const gchar *vmr_etcd_client_get_endpoint (VmrEtcdClient *self);

/* each "result" object of a watch's stream; the object belongs to the watch */
typedef void (*VmrEtcdWatchFunc) (JsonObject *result, gpointer user_data);
/* the stream ended or could not start; @error says why */
typedef void (*VmrEtcdWatchClosedFunc) (const GError *error, gpointer user_data);

typedef struct _VmrEtcdWatch VmrEtcdWatch;

/*
 * Opens a watch: @create_request (consumed) is the WatchCreateRequest's
 * object. @on_result runs for every message of the stream, @on_closed
 * once when it ends (not after vmr_etcd_watch_free()).
 */
VmrEtcdWatch *vmr_etcd_client_watch (VmrEtcdClient *self, JsonObject *create_request,
                                     VmrEtcdWatchFunc on_result, VmrEtcdWatchClosedFunc on_closed,
                                     gpointer user_data);
/* stops the watch; its callbacks never run again */
void vmr_etcd_watch_free (VmrEtcdWatch *watch);

/* base64 of @text's bytes, as etcd's JSON spells keys and values */
gchar *vmr_etcd_encode (const gchar *text);
/* the text of base64 @encoded, or NULL when it is not base64 */
gchar *vmr_etcd_decode (const gchar *encoded);
/* the end of the range of keys that start with @prefix, base64 */
gchar *vmr_etcd_prefix_end (const gchar *prefix);

/* an int64 of etcd's JSON, which spells them as strings; 0 when missing, as proto3 leaves it */
gint64 vmr_etcd_json_int64 (JsonObject *object, const gchar *name);

/*
 * the JSON object a key-value of etcd's reply holds, its value decoded, with
 * "revision" (the key's create_revision) and "lease" (its lease id, "0" for
 * none) added; NULL when the value is not a JSON object. Unref with
 * json_object_unref().
 */
JsonObject *vmr_etcd_kv_object (JsonObject *kv);

G_END_DECLS
