#define G_LOG_DOMAIN "vmr-cli"

#include "cli-watch.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>

#include "cli-json.h"
#include "cli-output.h"
#include "cli-progress.h"
#include "cli-screen.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* one job on view */
typedef struct {
    VmrCliJob *job;        /* the latest reading, owned */
    gchar *shown_state;    /* plain output: the state last printed */
    gchar *shown_progress; /* plain output: the state, bytes done and decision last printed */
} Entry;

typedef struct {
    VmrCliSession *session;
    VmrQmpClient *client; /* the session's */
    gchar **ids;          /* the jobs or groups named, NULL = every job */
    GPtrArray *order;     /* of gchar *, the ids of the jobs on view, oldest first */
    GHashTable *entries;  /* job id -> Entry *, owned */
    GHashTable *stale;    /* job ids to read again with query-job */
    GMainLoop *loop;
    VmrCliScreen *screen; /* NULL when stdout is not a terminal */
    gboolean json;        /* JSON mode: nothing is shown until the end */
    gboolean refreshing;  /* query-job replies are awaited: no refresh starts meanwhile */
    gboolean interrupted; /* SIGINT or SIGTERM */
    guint refresh_id;
    guint draw_id;
    guint keepalive_id;
    GError *error; /* what cut the watch off */
} Watch;

/*
 * a request now and then: the daemon cuts off a client of another user than
 * root that sends nothing for its --client-idle-timeout (10 min by default)
 */
#define KEEPALIVE_INTERVAL_S 60

static void
entry_free (Entry *entry)
{
    vmr_cli_job_free (entry->job);
    g_free (entry->shown_state);
    g_free (entry->shown_progress);
    g_free (entry);
}

/* whether a job is on view: every job, or one named or of a group named */
static gboolean
wanted (Watch *self, const VmrCliJob *job)
{
    const gchar *group;

    if (self->ids == NULL)
        return TRUE;
    group = vmr_json_get_string (vmr_json_node_object (job->node), "group");
    return g_strv_contains ((const gchar *const *) self->ids, job->id)
           || (group != NULL && g_strv_contains ((const gchar *const *) self->ids, group));
}

/* ---- plain output: one line per change ---- */

static gboolean
plain (Watch *self)
{
    return self->screen == NULL && !self->json;
}

static void
print_state (Entry *entry, const gchar *id, const gchar *state, const gchar *reason)
{
    if (state == NULL || g_strcmp0 (state, entry->shown_state) == 0)
        return;
    if (reason != NULL)
        g_print ("%s: %s (%s)\n", id, state, reason);
    else
        g_print ("%s: %s\n", id, state);
    g_free (entry->shown_state);
    entry->shown_state = g_strdup (state);
}

/*
 * A job's first reading gives its state; the states after it come from
 * the events, in their order, whatever a reading that crossed them says.
 */
static void
print_changes (Watch *self, Entry *entry)
{
    const VmrCliJob *job = entry->job;
    g_autofree gchar *progress = NULL;
    g_autofree gchar *decision = NULL;
    g_autofree gchar *key = NULL;

    if (!plain (self))
        return;
    if (entry->shown_state == NULL)
        print_state (entry, job->id, job->state,
                     vmr_cli_job_is_finished (job) ? job->reason : NULL);
    /* a line when the copy advanced or the policy decided anew, not for a rate that
     * wavers while a synced job waits */
    decision = vmr_cli_job_format_decision (job);
    key = g_strdup_printf ("%s %" G_GUINT64_FORMAT " %s", job->state, job->done,
                           decision != NULL ? decision : "-");
    progress = vmr_cli_progress_plain_line (job, TRUE);
    if (progress != NULL && !vmr_cli_job_is_finished (job)
        && g_strcmp0 (key, entry->shown_progress) != 0) {
        g_print ("%s\n", progress);
        g_free (entry->shown_progress);
        entry->shown_progress = g_steal_pointer (&key);
    }
    fflush (stdout);
}

/* ---- the terminal ---- */

static gchar *
format_title (Watch *self)
{
    guint n_active = 0, n_completed = 0, n_failed = 0;

    for (guint i = 0; i < self->order->len; i++) {
        Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, i));

        if (g_str_equal (entry->job->state, "completed"))
            n_completed++;
        else if (vmr_cli_job_is_finished (entry->job))
            n_failed++;
        else
            n_active++;
    }
    return g_strdup_printf ("virt-mirror watch: %u job%s, %u active, %u completed, %u failed or "
                            "cancelled%s",
                            self->order->len, self->order->len == 1 ? "" : "s", n_active,
                            n_completed, n_failed, self->ids == NULL ? "  (Ctrl-C to quit)" : "");
}

static void
draw (Watch *self)
{
    g_autoptr (GPtrArray) jobs = g_ptr_array_new ();
    g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
    g_auto (GStrv) table = NULL;

    if (self->screen == NULL)
        return;
    for (guint i = 0; i < self->order->len; i++) {
        Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, i));

        g_ptr_array_add (jobs, entry->job);
    }
    table = vmr_cli_progress_table ((VmrCliJob *const *) jobs->pdata, jobs->len,
                                    vmr_cli_screen_columns (self->screen));
    g_ptr_array_add (lines, format_title (self));
    g_ptr_array_add (lines, g_strdup (""));
    for (guint i = 0; table[i] != NULL; i++)
        g_ptr_array_add (lines, g_strdup (table[i]));
    if (jobs->len == 0)
        g_ptr_array_add (lines, g_strdup ("No jobs yet: new ones show here."));
    g_ptr_array_add (lines, NULL);
    vmr_cli_screen_draw (self->screen, (const gchar *const *) lines->pdata);
}

static gboolean
draw_cb (gpointer user_data)
{
    Watch *self = user_data;

    self->draw_id = 0;
    draw (self);
    return G_SOURCE_REMOVE;
}

/* many events come together: one draw for them */
static void
schedule_draw (Watch *self)
{
    if (self->draw_id == 0 && self->screen != NULL)
        self->draw_id = g_idle_add (draw_cb, self);
}

static void
resized_cb (gpointer user_data)
{
    draw (user_data);
}

/* ---- the jobs ---- */

static gboolean
all_ended (Watch *self)
{
    if (self->ids == NULL)
        return FALSE;
    for (guint i = 0; i < self->order->len; i++) {
        Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, i));

        if (!vmr_cli_job_is_finished (entry->job))
            return FALSE;
    }
    return TRUE;
}

/* keeps @job (consumed) as the latest reading of its job, if it is on view */
static void
take_job (Watch *self, VmrCliJob *job)
{
    Entry *entry = g_hash_table_lookup (self->entries, job->id);

    if (entry == NULL && !wanted (self, job)) {
        vmr_cli_job_free (job);
        return;
    }
    if (entry == NULL) {
        entry = g_new0 (Entry, 1);
        g_hash_table_insert (self->entries, g_strdup (job->id), entry);
        g_ptr_array_add (self->order, g_strdup (job->id));
    } else {
        vmr_cli_job_free (entry->job);
    }
    entry->job = job;
    print_changes (self, entry);
    schedule_draw (self);
    if (all_ended (self))
        g_main_loop_quit (self->loop);
}

static gboolean refresh_cb (gpointer user_data);

static void
schedule_refresh (Watch *self)
{
    if (self->refresh_id == 0 && !self->refreshing)
        self->refresh_id = g_idle_add (refresh_cb, self);
}

/* reads the jobs a state change named; a job gone from the daemon is left as last seen */
static gboolean
refresh_cb (gpointer user_data)
{
    Watch *self = user_data;
    g_autoptr (GHashTable) stale = g_steal_pointer (&self->stale);
    GHashTableIter iter;
    const gchar *id;

    self->refresh_id = 0;
    self->stale = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    self->refreshing = TRUE;
    g_hash_table_iter_init (&iter, stale);
    while (g_hash_table_iter_next (&iter, (gpointer *) &id, NULL) && self->error == NULL) {
        g_autoptr (JsonObject) arguments = json_object_new ();
        g_autoptr (JsonNode) reply = NULL;
        g_autoptr (GError) error = NULL;
        VmrCliJob *job;

        json_object_set_string_member (arguments, "id", id);
        reply = vmr_cli_session_call (self->session, "query-job", arguments, &error);
        if (reply == NULL && g_error_matches (error, VMR_ERROR, VMR_ERROR_NOT_FOUND))
            continue;
        job = reply != NULL ? vmr_cli_job_new (reply, "query-job", &error) : NULL;
        if (job == NULL) {
            g_propagate_prefixed_error (&self->error, g_steal_pointer (&error),
                                        "lost track of job %s: ", id);
            g_main_loop_quit (self->loop);
            break;
        }
        take_job (self, job);
    }
    self->refreshing = FALSE;
    if (g_hash_table_size (self->stale) > 0)
        schedule_refresh (self);
    return G_SOURCE_REMOVE;
}

/*
 * The figures of a JOB_PROGRESS (@data) laid over the last reading of its
 * job: its members replace the job's, those of "policy" one by one.
 */
static JsonNode *
overlay_progress (JsonNode *job_node, JsonObject *data)
{
    JsonNode *node = json_node_copy (job_node);
    JsonObject *job = vmr_json_node_object (node);
    JsonObject *policy = vmr_json_get_object (job, "policy");
    JsonObjectIter iter;
    const gchar *name;
    JsonNode *value;

    json_object_iter_init (&iter, data);
    while (json_object_iter_next (&iter, &name, &value)) {
        JsonObject *new_policy = vmr_json_node_object (value);

        if (g_str_equal (name, "policy") && policy != NULL && new_policy != NULL) {
            JsonObjectIter policy_iter;
            const gchar *key;
            JsonNode *member;

            json_object_iter_init (&policy_iter, new_policy);
            while (json_object_iter_next (&policy_iter, &key, &member))
                json_object_set_member (policy, key, json_node_copy (member));
            continue;
        }
        json_object_set_member (job, name, json_node_copy (value));
    }
    return node;
}

static void
event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
          gpointer user_data)
{
    Watch *self = user_data;
    const gchar *id = vmr_json_get_string (data, "id");
    Entry *entry = id != NULL ? g_hash_table_lookup (self->entries, id) : NULL;

    /* the jobs and groups named were all there at the start: a new job is not of them */
    if (id == NULL || (entry == NULL && self->ids != NULL))
        return;
    if (g_str_equal (name, "JOB_PROGRESS") && entry != NULL
        && !vmr_cli_job_is_finished (entry->job)) {
        g_autoptr (JsonNode) node = overlay_progress (entry->job->node, data);
        VmrCliJob *job = vmr_cli_job_new (node, "JOB_PROGRESS", NULL);

        if (job != NULL)
            take_job (self, job);
        return;
    }
    if (g_str_equal (name, "JOB_STATE_CHANGED") && entry != NULL && plain (self)) {
        print_state (entry, id, vmr_json_get_string (data, "state"),
                     vmr_json_get_string (data, "reason"));
        fflush (stdout);
    }
    /* a state change, or the progress of a job not read yet: read it whole */
    if (g_str_equal (name, "JOB_STATE_CHANGED")
        || (g_str_equal (name, "JOB_PROGRESS") && entry == NULL)) {
        g_hash_table_add (self->stale, g_strdup (id));
        schedule_refresh (self);
    }
}

static void
disconnected_cb (VmrQmpClient *client, GError *error, gpointer user_data)
{
    Watch *self = user_data;

    if (self->error == NULL)
        self->error = g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                   "lost the connection to virt-mirrord (%s)",
                                   error != NULL ? error->message : "closed");
    g_main_loop_quit (self->loop);
}

static gboolean
interrupted_cb (gpointer user_data)
{
    Watch *self = user_data;

    self->interrupted = TRUE;
    g_main_loop_quit (self->loop);
    return G_SOURCE_CONTINUE;
}

/* the jobs on view now; every id named must name a job or a group */
static gboolean
read_jobs (Watch *self, const VmrCliCommand *cmd, GError **error)
{
    g_autoptr (JsonNode) reply = vmr_cli_session_call (self->session, "query-jobs", NULL, error);
    JsonArray *jobs;

    if (reply == NULL) {
        g_prefix_error (error, "cannot watch the jobs: ");
        return FALSE;
    }
    jobs = vmr_cli_json_expect_array (reply, "query-jobs", error);
    if (jobs == NULL)
        return FALSE;
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        VmrCliJob *job = vmr_cli_job_new (json_array_get_element (jobs, i), "query-jobs", error);

        if (job == NULL)
            return FALSE;
        take_job (self, job);
    }
    for (guint i = 0; self->ids != NULL && self->ids[i] != NULL; i++) {
        gboolean found = FALSE;

        for (guint j = 0; j < self->order->len && !found; j++) {
            Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, j));
            const gchar *group
                = vmr_json_get_string (vmr_json_node_object (entry->job->node), "group");

            found = g_str_equal (entry->job->id, self->ids[i])
                    || g_strcmp0 (group, self->ids[i]) == 0;
        }
        if (!found) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                         "cannot watch %s: no such job or group", self->ids[i]);
            return FALSE;
        }
    }
    return TRUE;
}

/* the outcome of watching named jobs: an error naming each that did not complete */
static gboolean
check_outcome (Watch *self, GError **error)
{
    g_autoptr (GString) failures = g_string_new (NULL);
    guint n_failed = 0;

    for (guint i = 0; i < self->order->len; i++) {
        Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, i));
        const VmrCliJob *job = entry->job;

        if (g_str_equal (job->state, "completed"))
            continue;
        n_failed++;
        g_string_append_printf (
            failures, "\n%s (%s %s): %s%s%s", job->id, job->domain != NULL ? job->domain : "?",
            job->disk != NULL ? job->disk : "?", job->state, job->reason != NULL ? ": " : "",
            job->reason != NULL ? job->reason : "");
    }
    if (n_failed == 0)
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "watch: %u of %u jobs did not complete:%s",
                 n_failed, self->order->len, failures->str);
    return FALSE;
}

static void
print_json (Watch *self)
{
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_ARRAY);
    JsonArray *array = json_array_new ();

    for (guint i = 0; i < self->order->len; i++) {
        Entry *entry = g_hash_table_lookup (self->entries, g_ptr_array_index (self->order, i));

        json_array_add_element (array, json_node_copy (entry->job->node));
    }
    json_node_take_array (node, array);
    vmr_cli_json_print (node);
}

static void
keepalive_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (JsonNode) reply = NULL;

    /* a lost connection is said by "disconnected" */
    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, NULL);
}

static gboolean
keepalive_cb (gpointer user_data)
{
    Watch *self = user_data;

    vmr_qmp_client_execute_async (self->client, "query-version", NULL, 0, NULL, keepalive_done_cb,
                                  NULL);
    return G_SOURCE_CONTINUE;
}

static gboolean
run_watch (Watch *self, const VmrCliCommand *cmd, GError **error)
{
    gulong event_id, disconnected_id;
    guint sigint_id, sigterm_id;
    gboolean ok;

    self->client = vmr_cli_session_get_client (self->session, error);
    if (self->client == NULL) {
        g_prefix_error (error, "cannot watch the jobs: ");
        return FALSE;
    }
    /* the events first, so that no change between them and the first reading is lost */
    event_id = g_signal_connect (self->client, "event", G_CALLBACK (event_cb), self);
    disconnected_id
        = g_signal_connect (self->client, "disconnected", G_CALLBACK (disconnected_cb), self);
    sigint_id = g_unix_signal_add (SIGINT, interrupted_cb, self);
    sigterm_id = g_unix_signal_add (SIGTERM, interrupted_cb, self);
    if (!self->json && vmr_cli_screen_is_terminal ())
        self->screen = vmr_cli_screen_new (VMR_CLI_SCREEN_FULL, resized_cb, self);

    ok = read_jobs (self, cmd, error);
    if (ok && !all_ended (self) && !self->interrupted && self->error == NULL) {
        draw (self);
        self->keepalive_id = g_timeout_add_seconds (KEEPALIVE_INTERVAL_S, keepalive_cb, self);
        g_main_loop_run (self->loop);
        g_clear_handle_id (&self->keepalive_id, g_source_remove);
    }
    g_signal_handler_disconnect (self->client, event_id);
    g_signal_handler_disconnect (self->client, disconnected_id);
    g_source_remove (sigint_id);
    g_source_remove (sigterm_id);
    if (!ok)
        return FALSE;
    draw (self);
    g_clear_pointer (&self->screen, vmr_cli_screen_free);
    if (self->error != NULL) {
        g_propagate_error (error, g_steal_pointer (&self->error));
        return FALSE;
    }
    if (self->ids != NULL && !all_ended (self)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "interrupted: the jobs keep running; follow them with 'virt-mirror jobs'");
        return FALSE;
    }
    if (self->ids != NULL && !check_outcome (self, error))
        return FALSE;
    /* like migrate --wait: the jobs on success, the error object otherwise */
    if (self->json)
        print_json (self);
    return TRUE;
}

gboolean
vmr_cli_cmd_watch (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    Watch self = { 0 };
    gboolean ok;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    self.session = session;
    self.json = session->json;
    self.ids = args[0] != NULL ? args : NULL;
    self.order = g_ptr_array_new_with_free_func (g_free);
    self.entries
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) entry_free);
    self.stale = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    self.loop = g_main_loop_new (NULL, FALSE);
    ok = run_watch (&self, cmd, error);
    g_clear_pointer (&self.screen, vmr_cli_screen_free);
    g_clear_handle_id (&self.refresh_id, g_source_remove);
    g_clear_handle_id (&self.draw_id, g_source_remove);
    g_clear_error (&self.error);
    g_main_loop_unref (self.loop);
    g_hash_table_unref (self.stale);
    g_hash_table_unref (self.entries);
    g_ptr_array_unref (self.order);
    return ok;
}
