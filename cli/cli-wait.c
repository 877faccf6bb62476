#define G_LOG_DOMAIN "vmr-cli"

#include "cli-wait.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli-json.h"
#include "cli-output.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

#define VMR_CLI_POLL_INTERVAL_MS 200
/* plain output goes to logs: a line every poll would flood them */
#define VMR_CLI_PROGRESS_LINE_INTERVAL_US (2 * G_USEC_PER_SEC)
#define VMR_CLI_BAR_MIN_WIDTH             10
#define VMR_CLI_BAR_MAX_WIDTH             30
/* room for the id, state and figures of a typical progress line */
#define VMR_CLI_BAR_TEXT_BUDGET 80

typedef struct {
    VmrQmpClient *client; /* owned */
    gchar *job_id;
    GMainLoop *loop;
    gboolean tty;             /* draw a bar in place instead of lines */
    gboolean quiet;           /* JSON mode: stdout is for the result only */
    gboolean ended;           /* the loop was told to quit; late replies are ignored */
    gboolean query_pending;   /* a query-job is in flight */
    gboolean query_again;     /* an event came while it was */
    VmrCliJob *job;           /* the latest job seen, owned */
    gchar *shown_state;       /* the state last printed */
    guint shown_history;      /* history entries already printed */
    gint64 progress_shown_us; /* monotonic time of the last plain progress line */
    guint64 shown_done;       /* bytes done in the last plain progress line */
    gboolean bar_on_screen;   /* a bar is drawn and its line not ended yet */
    gboolean pivot_hint_shown;
    GError *error; /* why the wait ended early, owned */
} WaitState;

static void
wait_state_clear (gpointer data)
{
    WaitState *state = data;

    g_clear_object (&state->client);
    g_free (state->job_id);
    g_clear_pointer (&state->loop, g_main_loop_unref);
    g_clear_pointer (&state->job, vmr_cli_job_free);
    g_free (state->shown_state);
    g_clear_error (&state->error);
}

static void
wait_state_release (WaitState *state)
{
    g_rc_box_release_full (state, wait_state_clear);
}

static void
end_wait (WaitState *state, GError *error /* consumed, nullable */)
{
    if (state->ended) {
        g_clear_error (&error);
        return;
    }
    state->ended = TRUE;
    state->error = error;
    g_main_loop_quit (state->loop);
}

static guint
terminal_columns (void)
{
    struct winsize size = { 0 };

    if (ioctl (STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        return size.ws_col;
    return 80;
}

static void
append_bar (GString *line, const VmrCliJob *job, guint width)
{
    guint filled = 0;

    if (g_str_equal (job->state, "completed"))
        filled = width;
    else if (job->has_progress && job->total > 0)
        filled = (guint) ((gdouble) job->done / (gdouble) job->total * width);
    g_string_append_c (line, '[');
    for (guint i = 0; i < width; i++)
        g_string_append_c (line, i < filled ? '#' : '.');
    g_string_append (line, "] ");
}

/* "vmr-3 copying   [####......]  42.0%  1 GiB/2 GiB  backlog 1 GiB  700 MiB/s  ETA 1.5s" */
static gchar *
format_bar (const VmrCliJob *job, guint columns)
{
    g_autoptr (GString) line = g_string_new (NULL);
    g_autoptr (GString) figures = g_string_new (NULL);
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);
    g_autofree gchar *amount = vmr_cli_job_format_amount (job);
    g_autofree gchar *rate = vmr_cli_job_format_rate (job);
    g_autofree gchar *eta = vmr_cli_job_format_eta (job);
    glong bar_width;

    g_string_append_printf (figures, "%6s", percent != NULL ? percent : "-");
    if (amount != NULL) {
        g_autofree gchar *backlog = vmr_units_format_bytes (job->backlog);

        g_string_append_printf (figures, "  %s  backlog %s", amount, backlog);
    }
    if (rate != NULL)
        g_string_append_printf (figures, "  %s", rate);
    if (eta != NULL)
        g_string_append_printf (figures, "  ETA %s", eta);

    /* the state is padded and the bar sized from the terminal alone, so that
     * nothing jumps between redraws; narrow terminals get the figures only */
    g_string_append_printf (line, "%s %-9s ", job->id, job->state);
    bar_width = (glong) columns - 1 - VMR_CLI_BAR_TEXT_BUDGET;
    if (bar_width >= VMR_CLI_BAR_MIN_WIDTH)
        append_bar (line, job, MIN (bar_width, VMR_CLI_BAR_MAX_WIDTH));
    g_string_append (line, figures->str);
    return g_string_free (g_steal_pointer (&line), FALSE);
}

static void
draw_bar (WaitState *state)
{
    guint columns = terminal_columns ();
    g_autofree gchar *line = format_bar (state->job, columns);

    /* a line longer than the terminal wraps, and \r no longer redraws it */
    if (g_utf8_strlen (line, -1) > (glong) columns - 1) {
        gchar *cut = g_utf8_substring (line, 0, (glong) columns - 1);

        g_free (line);
        line = cut;
    }
    g_print ("\r%s\033[K", line);
    fflush (stdout);
    state->bar_on_screen = TRUE;
}

static void
end_bar (WaitState *state)
{
    if (!state->bar_on_screen)
        return;
    g_print ("\n");
    fflush (stdout);
    state->bar_on_screen = FALSE;
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
    const VmrCliJob *job = state->job;
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);
    g_autofree gchar *amount = vmr_cli_job_format_amount (job);
    g_autofree gchar *backlog = vmr_units_format_bytes (job->backlog);
    g_autofree gchar *rate = vmr_cli_job_format_rate (job);
    g_autofree gchar *eta = vmr_cli_job_format_eta (job);
    g_autoptr (GString) line = g_string_new (NULL);

    if (percent == NULL || amount == NULL)
        return;
    g_string_append_printf (line, "%s: %s %s (%s, backlog %s", job->id, job->state, percent, amount,
                            backlog);
    if (rate != NULL)
        g_string_append_printf (line, ", %s", rate);
    if (eta != NULL)
        g_string_append_printf (line, ", ETA %s", eta);
    g_print ("%s)\n", line->str);
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
        || now - state->progress_shown_us < VMR_CLI_PROGRESS_LINE_INTERVAL_US)
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

static void query_job (WaitState *state, gboolean after_event);

static void
handle_query_reply (WaitState *state, GAsyncResult *res)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    VmrCliJob *job;

    reply = vmr_qmp_client_execute_finish (state->client, res, &error);
    state->query_pending = FALSE;
    if (state->ended)
        return;
    if (reply == NULL) {
        g_prefix_error (&error, "lost track of job %s: ", state->job_id);
        end_wait (state, g_steal_pointer (&error));
        return;
    }
    job = vmr_cli_job_new (reply, "query-job", &error);
    if (job == NULL) {
        end_wait (state, g_steal_pointer (&error));
        return;
    }
    show_job (state, job);
    if (vmr_cli_job_is_finished (job)) {
        end_wait (state, NULL);
        return;
    }
    if (state->query_again) {
        state->query_again = FALSE;
        query_job (state, FALSE);
    }
}

static void
query_job_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    WaitState *state = user_data;

    handle_query_reply (state, res);
    wait_state_release (state);
}

static void
query_job (WaitState *state, gboolean after_event)
{
    g_autoptr (JsonObject) arguments = NULL;

    /* a timer tick can skip a beat; an event must not be lost */
    if (state->query_pending) {
        state->query_again |= after_event;
        return;
    }
    arguments = json_object_new ();
    json_object_set_string_member (arguments, "id", state->job_id);
    state->query_pending = TRUE;
    vmr_qmp_client_execute_async (state->client, "query-job", arguments, 0, NULL, query_job_cb,
                                  g_rc_box_acquire (state));
}

static gboolean
poll_cb (gpointer user_data)
{
    query_job (user_data, FALSE);
    return G_SOURCE_CONTINUE;
}

static void
event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
          gpointer user_data)
{
    WaitState *state = user_data;

    if (g_str_equal (name, "JOB_STATE_CHANGED")
        && g_strcmp0 (vmr_json_get_string (data, "id"), state->job_id) == 0)
        query_job (state, TRUE);
}

static void
disconnected_cb (VmrQmpClient *client, GError *error, gpointer user_data)
{
    WaitState *state = user_data;

    end_wait (state, g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                  "lost the connection to virt-mirrord (%s); job %s may still "
                                  "be running: see 'virt-mirror job %s'",
                                  error != NULL ? error->message : "closed", state->job_id,
                                  state->job_id));
}

static gboolean
interrupted_cb (gpointer user_data)
{
    WaitState *state = user_data;

    end_wait (state, g_error_new (VMR_ERROR, VMR_ERROR_FAILED,
                                  "interrupted: job %s keeps running; follow it with "
                                  "'virt-mirror job %s'",
                                  state->job_id, state->job_id));
    return G_SOURCE_CONTINUE;
}

static void
run_loop (WaitState *state)
{
    guint poll_id = g_timeout_add (VMR_CLI_POLL_INTERVAL_MS, poll_cb, state);
    guint sigint_id = g_unix_signal_add (SIGINT, interrupted_cb, state);
    guint sigterm_id = g_unix_signal_add (SIGTERM, interrupted_cb, state);
    gulong event_id = g_signal_connect (state->client, "event", G_CALLBACK (event_cb), state);
    gulong disconnected_id
        = g_signal_connect (state->client, "disconnected", G_CALLBACK (disconnected_cb), state);

    g_main_loop_run (state->loop);

    g_signal_handler_disconnect (state->client, disconnected_id);
    g_signal_handler_disconnect (state->client, event_id);
    g_source_remove (sigterm_id);
    g_source_remove (sigint_id);
    g_source_remove (poll_id);
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
    WaitState *state;
    VmrCliJob *first;
    VmrCliJob *result = NULL;

    if (client == NULL)
        return NULL;
    first = vmr_cli_job_new (job->node, "migrate", error);
    if (first == NULL)
        return NULL;
    state = g_rc_box_new0 (WaitState);
    state->client = g_object_ref (client);
    state->job_id = g_strdup (job->id);
    state->loop = g_main_loop_new (NULL, FALSE);
    state->quiet = session->json;
    state->tty = !session->json && isatty (STDOUT_FILENO);
    show_job (state, first);
    if (!vmr_cli_job_is_finished (state->job))
        run_loop (state);
    end_bar (state);

    if (state->error != NULL)
        g_propagate_error (error, g_steal_pointer (&state->error));
    else if (g_str_equal (state->job->state, "completed"))
        result = g_steal_pointer (&state->job);
    else
        g_propagate_error (error, error_for_end (state->job));
    wait_state_release (state);
    return result;
}
