#define G_LOG_DOMAIN "vmr-cli"

#include "cli-cluster-evacuate.h"

#include <stdio.h>

#include "cli-json.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* where a cluster evacuation stands, from the daemon's answers */
typedef struct {
    GHashTable *reports; /* host -> its last report (JsonObject *) */
    GHashTable *lost;    /* hosts whose report went with their lease before it ended */
    GHashTable *printed; /* host -> the last line printed of it */
} Following;

static void
following_clear (Following *following)
{
    g_clear_pointer (&following->reports, g_hash_table_unref);
    g_clear_pointer (&following->lost, g_hash_table_unref);
    g_clear_pointer (&following->printed, g_hash_table_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Following, following_clear)

/* the disks of @report in @state (NULL: every disk) */
static guint
count_disks (JsonObject *report, const gchar *state)
{
    JsonArray *disks = vmr_json_get_array (report, "disks");
    guint n = 0;

    for (guint i = 0; disks != NULL && i < json_array_get_length (disks); i++) {
        const gchar *disk_state
            = vmr_json_get_string (json_array_get_object_element (disks, i), "state");

        if (state == NULL || g_strcmp0 (disk_state, state) == 0)
            n++;
    }
    return n;
}

/* "host1: 2 of 3 disks completed, running" */
static gchar *
host_line (const gchar *host, JsonObject *report, const gchar *from)
{
    guint n_disks = count_disks (report, NULL);
    gboolean ended = g_strcmp0 (vmr_json_get_string (report, "state"), "ended") == 0;

    if (vmr_json_get_string (report, "error") != NULL)
        return g_strdup_printf ("%s: cannot evacuate: %s", host,
                                vmr_json_get_string (report, "error"));
    if (g_strcmp0 (vmr_json_get_string (report, "state"), "planning") == 0)
        return g_strdup_printf ("%s: planning", host);
    if (ended && n_disks == 0)
        return g_strdup_printf ("%s: nothing to move: no disk of its domains lies under %s", host,
                                from);
    return g_strdup_printf ("%s: %u of %u disk%s completed%s", host,
                            count_disks (report, "completed"), n_disks, n_disks == 1 ? "" : "s",
                            ended ? "" : ", running");
}

/* takes in one answer of query-cluster-evacuation; TRUE once every host has ended */
static gboolean
follow_answer (Following *following, JsonObject *answer, const gchar *from, gboolean print)
{
    JsonArray *hosts = vmr_json_get_array (answer, "hosts");
    JsonArray *members = vmr_json_get_array (answer, "members");
    g_autoptr (GHashTable) present = g_hash_table_new (g_str_hash, g_str_equal);
    GHashTableIter iter;
    const gchar *host;
    JsonObject *report;
    gboolean ended = TRUE;

    for (guint i = 0; hosts != NULL && i < json_array_get_length (hosts); i++) {
        JsonObject *object = json_array_get_object_element (hosts, i);

        host = vmr_json_get_string (object, "host");
        if (host == NULL)
            continue;
        g_hash_table_add (present, (gpointer) host);
        g_hash_table_replace (following->reports, g_strdup (host), json_object_ref (object));
    }
    g_hash_table_iter_init (&iter, following->reports);
    while (g_hash_table_iter_next (&iter, (gpointer *) &host, (gpointer *) &report)) {
        g_autofree gchar *line = NULL;
        gboolean host_ended = g_strcmp0 (vmr_json_get_string (report, "state"), "ended") == 0;

        if (!host_ended && !g_hash_table_contains (present, host))
            g_hash_table_add (following->lost, g_strdup (host));
        if (g_hash_table_contains (following->lost, host))
            continue;
        ended = ended && host_ended;
        line = host_line (host, report, from);
        if (print && g_strcmp0 (g_hash_table_lookup (following->printed, host), line) != 0) {
            g_print ("%s\n", line);
            fflush (stdout);
            g_hash_table_replace (following->printed, g_strdup (host), g_steal_pointer (&line));
        }
    }
    /* a member that has not reported yet is still to come */
    for (guint i = 0; members != NULL && i < json_array_get_length (members); i++) {
        host = json_array_get_string_element (members, i);
        if (host != NULL && !g_hash_table_contains (following->reports, host))
            ended = FALSE;
    }
    return ended;
}

/* the end: one error naming what was not moved, host by host, or TRUE */
static gboolean
conclude (Following *following, const gchar *from, gboolean print, GError **error)
{
    g_autoptr (GString) failures = g_string_new (NULL);
    GHashTableIter iter;
    const gchar *host;
    JsonObject *report;
    guint n_disks = 0;
    guint n_completed = 0;

    g_hash_table_iter_init (&iter, following->reports);
    while (g_hash_table_iter_next (&iter, (gpointer *) &host, (gpointer *) &report)) {
        JsonArray *disks = vmr_json_get_array (report, "disks");

        n_disks += count_disks (report, NULL);
        n_completed += count_disks (report, "completed");
        if (g_hash_table_contains (following->lost, host))
            g_string_append_printf (failures, "\n%s: lost (its daemon left the cluster)", host);
        else if (vmr_json_get_string (report, "error") != NULL)
            g_string_append_printf (failures, "\n%s: %s", host,
                                    vmr_json_get_string (report, "error"));
        for (guint i = 0; disks != NULL && i < json_array_get_length (disks); i++) {
            JsonObject *disk = json_array_get_object_element (disks, i);

            if (g_strcmp0 (vmr_json_get_string (disk, "state"), "completed") == 0)
                continue;
            g_string_append_printf (
                failures, "\n%s: %s (%s %s): %s%s%s", host,
                vmr_json_get_string (disk, "job") != NULL ? vmr_json_get_string (disk, "job")
                                                          : "not submitted",
                vmr_json_get_string (disk, "domain"), vmr_json_get_string (disk, "disk"),
                vmr_json_get_string (disk, "state"),
                vmr_json_get_string (disk, "error") != NULL ? ": " : "",
                vmr_json_get_string (disk, "error") != NULL ? vmr_json_get_string (disk, "error")
                                                            : "");
        }
    }
    if (failures->len > 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "evacuate: %u of %u disks not moved across the cluster:%s",
                     n_disks - n_completed, n_disks, failures->str);
        return FALSE;
    }
    if (print)
        g_print ("evacuate: completed: %u disk%s moved off %s on %u host%s\n", n_completed,
                 n_completed == 1 ? "" : "s", from, g_hash_table_size (following->reports),
                 g_hash_table_size (following->reports) == 1 ? "" : "s");
    return TRUE;
}

gboolean
vmr_cli_cluster_evacuate (VmrCliSession *session, JsonObject *arguments, gboolean wait,
                          GError **error)
{
    const gchar *from = vmr_json_get_string (arguments, "from");
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (JsonNode) last = NULL;
    g_autofree gchar *id = NULL;
    g_auto (Following) following = {
        g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) json_object_unref),
        g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
        g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free),
    };
    gint64 after = 0;
    JsonObject *answer;

    json_object_set_boolean_member (arguments, "cluster", TRUE);
    reply = vmr_cli_session_call (session, "evacuate", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot evacuate %s: ", from);
        return FALSE;
    }
    answer = vmr_cli_json_expect_object (reply, "evacuate", error);
    if (answer == NULL)
        return FALSE;
    id = g_strdup (vmr_json_get_string (answer, "id"));
    if (!session->json)
        g_print ("evacuate: %s: every host of cluster %s evacuates %s\n", id,
                 vmr_json_get_string (answer, "cluster"), from);
    if (!wait) {
        if (session->json)
            vmr_cli_json_print (reply);
        return TRUE;
    }
    for (;;) {
        g_autoptr (JsonObject) query = json_object_new ();

        json_object_set_string_member (query, "id", id);
        if (after > 0)
            json_object_set_int_member (query, "after", after);
        g_clear_pointer (&last, json_node_unref);
        /* the daemon answers once a key of the evacuation changed: a watch, no polling */
        last = vmr_cli_session_call (session, "query-cluster-evacuation", query, error);
        answer = last != NULL ? vmr_cli_json_expect_object (last, "query-cluster-evacuation", error)
                              : NULL;
        if (answer == NULL) {
            g_prefix_error (error,
                            "lost track of evacuation %s, whose jobs may still be running "
                            "(see 'virt-mirror cluster jobs'): ",
                            id);
            return FALSE;
        }
        after = vmr_json_int_or (answer, "revision", after);
        if (follow_answer (&following, answer, from, !session->json))
            break;
    }
    if (session->json)
        vmr_cli_json_print (last);
    return conclude (&following, from, !session->json, error);
}
