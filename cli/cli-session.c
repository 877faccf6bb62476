#define G_LOG_DOMAIN "vmr-cli"

#include "cli-session.h"

#include <gio/gunixsocketaddress.h>

#include "cli-json.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* the daemon answers at once; a slow greeting means a wrong socket */
#define VMR_CLI_CONNECT_TIMEOUT_MS 5000

VmrCliSession *
vmr_cli_session_new (const gchar *socket_path, gboolean json)
{
    VmrCliSession *self = g_new0 (VmrCliSession, 1);

    self->socket_path = g_strdup (socket_path);
    self->json = json;
    return self;
}

void
vmr_cli_session_free (VmrCliSession *self)
{
    if (self == NULL)
        return;
    if (self->client != NULL) {
        /* fails whatever is still pending, so no task outlives the client */
        vmr_qmp_client_close (self->client);
        g_clear_object (&self->client);
    }
    g_free (self->socket_path);
    g_free (self);
}

void
vmr_cli_session_set_socket (VmrCliSession *self, const gchar *socket_path)
{
    g_return_if_fail (self->client == NULL);
    g_free (self->socket_path);
    self->socket_path = g_strdup (socket_path);
}

static const gchar *
connect_failure_reason (const GError *error)
{
    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND))
        return "no such socket";
    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
        return "connection refused";
    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED))
        return "permission denied";
    return error->message;
}

static const gchar *
connect_failure_hint (const GError *error, gboolean read_only)
{
    if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED))
        return read_only ? "the read-only socket is for the group virt-mirrord serves it to"
                         : "the socket is root-only: run as root, or read with --readonly?";
    return "is virt-mirrord running? --connect or VIRT_MIRROR_SOCKET name another socket";
}

static void
result_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GAsyncResult **out = user_data;

    *out = g_object_ref (res);
}

static VmrQmpClient *
connect_daemon (const gchar *socket_path, gboolean read_only, GError **error)
{
    g_autoptr (GSocketClient) socket_client = g_socket_client_new ();
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (socket_path);
    g_autoptr (GSocketConnection) connection = NULL;
    g_autoptr (GAsyncResult) res = NULL;
    g_autoptr (VmrQmpClient) client = NULL;
    g_autoptr (GError) local_error = NULL;
    JsonObject *greeting;
    JsonObject *version;

    connection = g_socket_client_connect (socket_client, G_SOCKET_CONNECTABLE (address), NULL,
                                          &local_error);
    if (connection == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                     "cannot connect to virt-mirrord at %s: %s (%s)", socket_path,
                     connect_failure_reason (local_error),
                     connect_failure_hint (local_error, read_only));
        return NULL;
    }
    vmr_qmp_client_new_for_stream_async (G_IO_STREAM (connection), VMR_CLI_CONNECT_TIMEOUT_MS, NULL,
                                         result_cb, &res);
    while (res == NULL)
        g_main_context_iteration (NULL, TRUE);
    client = vmr_qmp_client_connect_finish (res, &local_error);
    if (client == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                     "cannot talk to virt-mirrord at %s: %s", socket_path, local_error->message);
        return NULL;
    }

    /* a QEMU monitor greets the same way; catch a --connect to the wrong socket */
    greeting = vmr_qmp_client_get_greeting (client);
    version = vmr_json_get_object (greeting, "version");
    if (version == NULL || !json_object_has_member (version, "virt-mirror")) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                     "%s is not the control socket of virt-mirrord (is it a QEMU monitor?)",
                     socket_path);
        return NULL;
    }
    return g_steal_pointer (&client);
}

VmrQmpClient *
vmr_cli_session_get_client (VmrCliSession *self, GError **error)
{
    if (self->client == NULL)
        self->client = connect_daemon (self->socket_path, self->read_only, error);
    return self->client;
}

JsonNode *
vmr_cli_session_call (VmrCliSession *self, const gchar *command, JsonObject *arguments,
                      GError **error)
{
    VmrQmpClient *client = vmr_cli_session_get_client (self, error);
    g_autoptr (JsonNode) reply = NULL;

    if (client == NULL)
        return NULL;
    reply = vmr_qmp_client_execute_sync (client, command, arguments, 0, error);
    if (reply == NULL)
        return NULL;
    return g_steal_pointer (&reply);
}
