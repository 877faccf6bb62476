#define G_LOG_DOMAIN "vmr-cli"

#include "cli-cluster-commands.h"

#include "cli-json.h"
#include "cli-table.h"
#include "units.h"
#include "vmr-json.h"

/* the reply of query-cluster, or NULL with @error */
static JsonNode *
query_cluster (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, JsonObject **out,
               GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;

    *out = NULL;
    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error) || args == NULL)
        return NULL;
    reply = vmr_cli_command_call (session, "query-cluster", NULL, "read the cluster", error);
    if (reply == NULL || session->json)
        return g_steal_pointer (&reply);
    *out = vmr_cli_json_expect_object (reply, "query-cluster", error);
    return *out != NULL ? g_steal_pointer (&reply) : NULL;
}

static const gchar *
string_or (JsonObject *object, const gchar *member, const gchar *fallback)
{
    const gchar *text = vmr_json_get_string (object, member);

    return text != NULL ? text : fallback;
}

/* a lease as etcdctl shows it, in hex */
static gchar *
format_lease (JsonObject *object)
{
    guint64 lease = g_ascii_strtoull (string_or (object, "lease", "0"), NULL, 10);

    return g_strdup_printf ("%" G_GINT64_MODIFIER "x", lease);
}

static guint
count_jobs (JsonArray *jobs, const gchar *host)
{
    guint n = 0;

    for (guint i = 0; jobs != NULL && i < json_array_get_length (jobs); i++) {
        if (g_strcmp0 (vmr_json_get_string (json_array_get_object_element (jobs, i), "host"), host)
            == 0)
            n++;
    }
    return n;
}

static gchar *
format_limit (JsonObject *status, const gchar *member)
{
    gint64 limit = vmr_json_int_or (status, member, 0);

    return limit > 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, limit) : g_strdup ("no limit");
}

/* bytes/s as a share: "0" for none, which a speed would call unlimited */
static gchar *
format_share (JsonObject *object, const gchar *member)
{
    gint64 bytes = vmr_json_int_or (object, member, 0);

    return bytes > 0 ? vmr_units_format_speed ((guint64) bytes) : g_strdup ("0");
}

/* each budgeted storage: its budget, and every host's share of it */
static void
print_budgets (JsonArray *budgets)
{
    g_autoptr (VmrCliTable) table
        = vmr_cli_table_new ("STORAGE", "BUDGET", "HELD", "HOST", "SHARE", "COPIES", NULL);
    g_autofree gchar *text = NULL;

    if (budgets == NULL || json_array_get_length (budgets) == 0)
        return;
    for (guint i = 0; i < json_array_get_length (budgets); i++) {
        JsonObject *storage = json_array_get_object_element (budgets, i);
        JsonArray *shares = vmr_json_get_array (storage, "shares");
        guint n = shares != NULL ? json_array_get_length (shares) : 0;
        g_autofree gchar *budget = format_share (storage, "budget");
        g_autofree gchar *held = format_share (storage, "held");

        if (n == 0)
            vmr_cli_table_add_row (table, string_or (storage, "storage", "?"), budget, held, "-",
                                   "-", "-", NULL);
        for (guint j = 0; j < n; j++) {
            JsonObject *share = json_array_get_object_element (shares, j);
            g_autofree gchar *amount = format_share (share, "share");
            g_autofree gchar *copies
                = g_strdup_printf ("%" G_GINT64_FORMAT, vmr_json_int_or (share, "copies", 0));

            vmr_cli_table_add_row (table, j == 0 ? string_or (storage, "storage", "?") : "",
                                   j == 0 ? budget : "", j == 0 ? held : "",
                                   string_or (share, "host", "?"), amount, copies, NULL);
        }
    }
    text = vmr_cli_table_to_string (table, "");
    g_print ("\n%s", text);
}

gboolean
vmr_cli_cmd_cluster_status (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                            GError **error)
{
    JsonObject *status = NULL;
    g_autoptr (JsonNode) reply = query_cluster (cmd, session, argv, &status, error);
    g_autoptr (VmrCliTable) members
        = vmr_cli_table_new ("HOST", "LEASE", "TTL", "JOBS", "MACHINE-ID", NULL);
    g_autoptr (VmrCliTable) queue
        = vmr_cli_table_new ("#", "HOST", "JOB", "SLOT", "SOURCE", "DESTINATION", NULL);
    g_autofree gchar *limit = NULL;
    g_autofree gchar *per_source = NULL;
    g_autofree gchar *per_destination = NULL;
    g_autofree gchar *member_text = NULL;
    g_autofree gchar *queue_text = NULL;
    JsonArray *member_list;
    JsonArray *queue_list;
    JsonArray *jobs;
    guint taken = 0;

    if (status == NULL)
        return reply != NULL || (error == NULL || *error == NULL);
    member_list = vmr_json_get_array (status, "members");
    queue_list = vmr_json_get_array (status, "queue");
    jobs = vmr_json_get_array (status, "jobs");
    for (guint i = 0; member_list != NULL && i < json_array_get_length (member_list); i++) {
        JsonObject *member = json_array_get_object_element (member_list, i);
        const gchar *host = string_or (member, "host", "?");
        g_autofree gchar *lease = format_lease (member);
        g_autofree gchar *ttl
            = g_strdup_printf ("%" G_GINT64_FORMAT "s", vmr_json_int_or (member, "lease-ttl", 0));
        g_autofree gchar *n_jobs = g_strdup_printf ("%u", count_jobs (jobs, host));

        vmr_cli_table_add_row (members, host, lease, ttl, n_jobs,
                               string_or (member, "machine-id", "-"), NULL);
    }
    for (guint i = 0; queue_list != NULL && i < json_array_get_length (queue_list); i++) {
        JsonObject *entry = json_array_get_object_element (queue_list, i);
        gboolean started = vmr_json_bool_or (entry, "started", FALSE);
        g_autofree gchar *position = g_strdup_printf ("%u", i + 1);

        taken += started ? 1 : 0;
        vmr_cli_table_add_row (queue, position, string_or (entry, "host", "?"),
                               string_or (entry, "job", "?"), started ? "taken" : "waiting",
                               string_or (entry, "source", "-"),
                               string_or (entry, "destination", "-"), NULL);
    }
    limit = format_limit (status, "max-parallel");
    per_source = format_limit (status, "max-parallel-per-source");
    per_destination = format_limit (status, "max-parallel-per-destination");
    g_print ("Cluster %s, seen from %s through %s: %s\n", string_or (status, "name", "?"),
             string_or (status, "host", "?"), string_or (status, "endpoint", "?"),
             vmr_json_bool_or (status, "available", FALSE) ? "available" : "unavailable");
    if (vmr_json_get_string (status, "refused") != NULL)
        g_print ("Not joined: %s\n", vmr_json_get_string (status, "refused"));
    g_print ("Limits: max-parallel %s, per source %s, per destination %s\n", limit, per_source,
             per_destination);
    g_print ("Slots: %u taken, %u waiting\n\n", taken,
             (queue_list != NULL ? json_array_get_length (queue_list) : 0) - taken);
    member_text = vmr_cli_table_to_string (members, "");
    g_print ("%s", member_text);
    print_budgets (vmr_json_get_array (status, "budgets"));
    if (queue_list == NULL || json_array_get_length (queue_list) == 0) {
        g_print ("\nThe queue is empty.\n");
        return TRUE;
    }
    queue_text = vmr_cli_table_to_string (queue, "");
    g_print ("\n%s", queue_text);
    return TRUE;
}

gboolean
vmr_cli_cmd_cluster_jobs (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                          GError **error)
{
    JsonObject *status = NULL;
    g_autoptr (JsonNode) reply = query_cluster (cmd, session, argv, &status, error);
    g_autoptr (VmrCliTable) table
        = vmr_cli_table_new ("HOST", "ID", "DOMAIN", "DISK", "STATE", "DESTINATION", NULL);
    g_autofree gchar *text = NULL;
    JsonArray *jobs;

    if (status == NULL)
        return reply != NULL || (error == NULL || *error == NULL);
    jobs = vmr_json_get_array (status, "jobs");
    if (jobs == NULL || json_array_get_length (jobs) == 0) {
        g_print ("No jobs in cluster %s.\n", string_or (status, "name", "?"));
        return TRUE;
    }
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *job = json_array_get_object_element (jobs, i);
        const gchar *waiting = vmr_json_get_string (job, "waiting-for");
        g_autofree gchar *state
            = waiting != NULL ? g_strdup_printf ("%s (%s)", string_or (job, "state", "?"), waiting)
                              : g_strdup (string_or (job, "state", "?"));

        vmr_cli_table_add_row (table, string_or (job, "host", "?"), string_or (job, "id", "?"),
                               string_or (job, "domain", "?"), string_or (job, "disk", "?"), state,
                               string_or (job, "destination", "-"), NULL);
    }
    text = vmr_cli_table_to_string (table, "");
    g_print ("%s", text);
    return TRUE;
}
