#define G_LOG_DOMAIN "vmr-cli"

#include "cli-complete.h"

#include "cli-output.h"
#include "qmp-client.h"
#include "vmr-json.h"

/* a shell waits for it on every Tab: a daemon slower than this gives no names */
#define COMPLETE_TIMEOUT_MS 1000

/* the reply of @command (no arguments) as an array, or NULL */
static JsonArray *
query (VmrQmpClient *client, const gchar *command)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_sync (client, command, NULL, COMPLETE_TIMEOUT_MS, &error);

    if (reply == NULL || !JSON_NODE_HOLDS_ARRAY (reply))
        return NULL;
    return json_array_ref (json_node_get_array (reply));
}

/* prints member @name of every object of @array */
static void
print_members (JsonArray *array, const gchar *name)
{
    for (guint i = 0; array != NULL && i < json_array_get_length (array); i++) {
        JsonObject *object = vmr_json_array_object (array, i);
        const gchar *value = object != NULL ? vmr_json_get_string (object, name) : NULL;

        if (value != NULL)
            g_print ("%s\n", value);
    }
}

gint
vmr_cli_complete (const gchar *socket_path, gchar **argv)
{
    const gchar *kind = argv[1];
    g_autoptr (VmrQmpClient) client = NULL;
    g_autoptr (JsonArray) items = NULL;

    if (kind == NULL
        || (!g_str_equal (kind, "domains") && !g_str_equal (kind, "disks")
            && !g_str_equal (kind, "jobs")))
        return VMR_CLI_EXIT_USAGE;
    client = vmr_qmp_client_connect_sync (socket_path, COMPLETE_TIMEOUT_MS, NULL);
    if (client == NULL)
        return VMR_CLI_EXIT_FAILED;
    if (g_str_equal (kind, "jobs")) {
        items = query (client, "query-jobs");
        print_members (items, "id");
    } else if (g_str_equal (kind, "domains")) {
        items = query (client, "query-domains");
        print_members (items, "name");
    } else {
        items = query (client, "query-domains");
        for (guint i = 0; items != NULL && i < json_array_get_length (items); i++) {
            JsonObject *domain = vmr_json_array_object (items, i);

            if (domain != NULL && argv[2] != NULL
                && g_strcmp0 (vmr_json_get_string (domain, "name"), argv[2]) == 0)
                print_members (vmr_json_get_array (domain, "disks"), "id");
        }
    }
    vmr_qmp_client_close (client);
    return items != NULL ? VMR_CLI_EXIT_OK : VMR_CLI_EXIT_FAILED;
}
