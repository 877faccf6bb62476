#define G_LOG_DOMAIN "vmr-cli"

#include "cli-wait.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli-json.h"
#include "cli-output.h"
#include "cli-progress.h"
#include "cli-screen.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* ---- pacing the polls of any wait ---- */

struct _VmrCliWaitPacer {
    VmrQmpClient *client; /* owned */
    gchar *job_id;        /* NULL: the end of any job wakes the wait */
    GMainLoop *loop;
    guint tick_id; /* the timer of the next poll, 0 once it fired */
    guint sigint_id;
    guint sigterm_id;
    gulong event_id;
    gulong disconnected_id;
    gboolean interrupted; /* SIGINT or SIGTERM came */
    gboolean woken;       /* since the last poll: poll again at once */
};

/* the loop may not be running (an event during a poll): the flag keeps it */
static void
pacer_wake (VmrCliWaitPacer *self)
{
    self->woken = TRUE;
    g_main_loop_quit (self->loop);
}

static gboolean
pacer_interrupted_cb (gpointer user_data)
{
    VmrCliWaitPacer *self = user_data;

    self->interrupted = TRUE;
    g_main_loop_quit (self->loop);
    return G_SOURCE_CONTINUE;
}

static void
pacer_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                gpointer user_data)
{
    VmrCliWaitPacer *self = user_data;
    const gchar *state = vmr_json_get_string (data, "state");

    if (!g_str_equal (name, "JOB_STATE_CHANGED"))
        return;
    if (self->job_id != NULL
            ? g_strcmp0 (vmr_json_get_string (data, "id"), self->job_id) == 0
            : g_strcmp0 (state, "completed") == 0 || g_strcmp0 (state, "failed") == 0
                  || g_strcmp0 (state, "cancelled") == 0)
        pacer_wake (self);
}

/* the next poll fails at once and says why */
static void
pacer_disconnected_cb (VmrQmpClient *client, GError *error, gpointer user_data)
{
    pacer_wake (user_data);
}

static gboolean
pacer_tick_cb (gpointer user_data)
{
    VmrCliWaitPacer *self = user_data;

    self->tick_id = 0;
    g_main_loop_quit (self->loop);
    return G_SOURCE_REMOVE;
}

VmrCliWaitPacer *
vmr_cli_wait_pacer_new (VmrQmpClient *client, const gchar *job_id)
{
    VmrCliWaitPacer *self = g_new0 (VmrCliWaitPacer, 1);

    self->client = g_object_ref (client);
    self->job_id = g_strdup (job_id);
    self->loop = g_main_loop_new (NULL, FALSE);
    self->sigint_id = g_unix_signal_add (SIGINT, pacer_interrupted_cb, self);
    self->sigterm_id = g_unix_signal_add (SIGTERM, pacer_interrupted_cb, self);
    self->event_id = g_signal_connect (client, "event", G_CALLBACK (pacer_event_cb), self);
    self->disconnected_id
        = g_signal_connect (client, "disconnected", G_CALLBACK (pacer_disconnected_cb), self);
    return self;
}

gboolean
vmr_cli_wait_pacer_next (VmrCliWaitPacer *self)
{
    if (self->interrupted)
        return FALSE;
    if (self->woken) {
        self->woken = FALSE;
        return TRUE;
    }
    self->tick_id = g_timeout_add (VMR_CLI_WAIT_POLL_INTERVAL_MS, pacer_tick_cb, self);
    g_main_loop_run (self->loop);
    g_clear_handle_id (&self->tick_id, g_source_remove);
    self->woken = FALSE;
    return !self->interrupted;
}

void
vmr_cli_wait_pacer_free (VmrCliWaitPacer *self)
{
    if (self == NULL)
        return;
    g_signal_handler_disconnect (self->client, self->disconnected_id);
    g_signal_handler_disconnect (self->client, self->event_id);
    g_source_remove (self->sigterm_id);
    g_source_remove (self->sigint_id);
    g_main_loop_unref (self->loop);
    g_free (self->job_id);
    g_object_unref (self->client);
    g_free (self);
}

/* ---- following one job ---- */

typedef struct {
    gchar *job_id;
    gboolean tty;             /* draw a bar in place instead of lines */
    gboolean quiet;           /* JSON mode: stdout is for the result only */
    VmrCliJob *job;           /* the latest job seen, owned */
    gchar *shown_state;       /* the state last printed */
    guint shown_history;      /* history entries already printed */
    gint64 progress_shown_us; /* monotonic time of the last plain progress line */
    guint64 shown_done;       /* bytes done in the last plain progress line */
    VmrCliScreen *screen;     /* where the bar is drawn, once it is */
    gboolean pivot_hint_shown;
} WaitState;

static void
wait_state_clear (WaitState *state)
{
    g_clear_pointer (&state->screen, vmr_cli_screen_free);
    g_free (state->job_id);
    g_clear_pointer (&state->job, vmr_cli_job_free);
    g_free (state->shown_state);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WaitState, wait_state_clear)

static void redraw_cb (gpointer user_data);

static void
draw_bar (WaitState *state)
{
    g_autofree gchar *line = NULL;
    const gchar *lines[2] = { NULL, NULL };

    if (state->screen == NULL)
        state->screen = vmr_cli_screen_new (VMR_CLI_SCREEN_INLINE, redraw_cb, state);
    line = vmr_cli_progress_job_line (state->job, vmr_cli_screen_columns (state->screen));
    lines[0] = line;
    vmr_cli_screen_draw (state->screen, lines);
}

/* the terminal was resized */
static void
redraw_cb (gpointer user_data)
{
    WaitState *state = user_data;

    if (state->job != NULL)
        draw_bar (state);
}

static void
end_bar (WaitState *state)
{
    if (state->screen != NULL)
        vmr_cli_screen_finish (state->screen);
}

static void
print_state_line (WaitState *state, const gchar *job_state, const gchar *reason)
{
    if (reason != NULL)
        g_print ("%s: %s (%s)\n", state->job_id, job_state, reason);
    else
        g_print ("%s: %s\n", state->job_id, job_state);
    g_free (state->shown_state);
    state->shown_state = g_strdup (job_state);
}

/*
 * One line per state change, read from the job's history: a state that
 * lasted less than a poll interval is still shown, and a reply that is older
 * than the last one shown adds nothing.
 */
static gboolean
print_new_states (WaitState *state)
{
    const VmrCliJob *job = state->job;
    JsonArray *history = vmr_json_get_array (vmr_json_node_object (job->node), "history");
    guint n_entries = history != NULL ? json_array_get_length (history) : 0;
    gboolean printed = FALSE;

    for (guint i = state->shown_history; i < n_entries; i++) {
        JsonObject *entry = vmr_json_array_object (history, i);
        const gchar *entry_state = vmr_json_get_string (entry, "state");

        if (entry_state == NULL)
            continue;
        print_state_line (state, entry_state, vmr_json_get_string (entry, "reason"));
        printed = TRUE;
    }
    state->shown_history = MAX (state->shown_history, n_entries);
    /* without a history, or with one that lags behind the state */
    if (n_entries >= state->shown_history && g_strcmp0 (job->state, state->shown_state) != 0) {
        print_state_line (state, job->state, job->reason);
        printed = TRUE;
    }
    return printed;
}

static void
print_progress_line (WaitState *state)
{
    g_autofree gchar *line = vmr_cli_progress_plain_line (state->job, FALSE);

    if (line != NULL)
        g_print ("%s\n", line);
}

static void
show_plain (WaitState *state)
{
    const VmrCliJob *job = state->job;
    gint64 now = g_get_monotonic_time ();

    if (print_new_states (state)) {
        state->progress_shown_us = now;
        state->shown_done = job->done;
        return;
    }
    /* a synced job only follows the guest's writes: nothing to report */
    if (g_str_equal (job->state, "synced") || !job->has_progress || job->done == state->shown_done
        || now - state->progress_shown_us < VMR_CLI_WAIT_PRINT_INTERVAL_US)
        return;
    print_progress_line (state);
    state->progress_shown_us = now;
    state->shown_done = job->done;
}

static void
show_job (WaitState *state, VmrCliJob *job /* consumed */)
{
    g_clear_pointer (&state->job, vmr_cli_job_free);
    state->job = job;
    if (state->quiet)
        return;
    if (state->tty)
        draw_bar (state);
    else
        show_plain (state);

    if (job->manual_pivot && g_str_equal (job->state, "synced") && !state->pivot_hint_shown) {
        end_bar (state);
        g_print ("Job %s is synced and waits for 'virt-mirror pivot %s'\n", job->id, job->id);
        state->pivot_hint_shown = TRUE;
    }
    fflush (stdout);
}

/*
 * Polls query-job until the job ends. FALSE with an error when the wait was
 * interrupted or cut off: the job keeps running then.
 */
static gboolean
follow_job (VmrCliSession *session, VmrQmpClient *client, WaitState *state, GError **error)
{
    g_autoptr (VmrCliWaitPacer) pacer = vmr_cli_wait_pacer_new (client, state->job_id);
    g_autoptr (JsonObject) arguments = json_object_new ();

    json_object_set_string_member (arguments, "id", state->job_id);
    while (vmr_cli_wait_pacer_next (pacer)) {
        g_autoptr (GError) local_error = NULL;
        g_autoptr (JsonNode) reply
            = vmr_cli_session_call (session, "query-job", arguments, &local_error);
        VmrCliJob *job;

        if (reply == NULL && g_error_matches (local_error, VMR_ERROR, VMR_ERROR_DISCONNECTED)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                         "lost the connection to virt-mirrord (%s); job %s may still be "
                         "running: see 'virt-mirror job %s'",
                         local_error->message, state->job_id, state->job_id);
            return FALSE;
        }
        if (reply == NULL) {
            g_propagate_prefixed_error (error, g_steal_pointer (&local_error),
                                        "lost track of job %s: ", state->job_id);
            return FALSE;
        }
        job = vmr_cli_job_new (reply, "query-job", error);
        if (job == NULL)
            return FALSE;
        show_job (state, job);
        if (vmr_cli_job_is_finished (job))
            return TRUE;
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                 "interrupted: job %s keeps running; follow it with 'virt-mirror job %s'",
                 state->job_id, state->job_id);
    return FALSE;
}

static GError *
error_for_end (const VmrCliJob *job)
{
    g_autofree gchar *disk = vmr_cli_output_describe_disk (job);
    const gchar *verb = g_str_equal (job->state, "cancelled") ? "was cancelled" : "failed";
    g_autoptr (GString) message = g_string_new (NULL);

    g_string_append_printf (message, "job %s %s", job->id, verb);
    if (job->reason != NULL)
        g_string_append_printf (message, ": %s", job->reason);
    if (job->source != NULL)
        g_string_append_printf (message, "; %s stays on %s", disk, job->source);
    return g_error_new_literal (VMR_ERROR, VMR_ERROR_FAILED, message->str);
}

VmrCliJob *
vmr_cli_wait_job (VmrCliSession *session, const VmrCliJob *job, GError **error)
{
    VmrQmpClient *client = vmr_cli_session_get_client (session, error);
    g_auto (WaitState) state = { 0 };
    VmrCliJob *first;
    gboolean followed = TRUE;

    if (client == NULL)
        return NULL;
    first = vmr_cli_job_new (job->node, "migrate", error);
    if (first == NULL)
        return NULL;
    state.job_id = g_strdup (job->id);
    state.quiet = session->json;
    state.tty = !session->json && vmr_cli_screen_is_terminal ();
    show_job (&state, first);
    if (!vmr_cli_job_is_finished (state.job))
        followed = follow_job (session, client, &state, error);
    end_bar (&state);

    if (!followed)
        return NULL;
    if (!g_str_equal (state.job->state, "completed")) {
        g_propagate_error (error, error_for_end (state.job));
        return NULL;
    }
    return g_steal_pointer (&state.job);
}
