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

#define VMR_CLI_BAR_MIN_WIDTH 10
#define VMR_CLI_BAR_MAX_WIDTH 30
/* room for the id, state and figures of a typical progress line */
#define VMR_CLI_BAR_TEXT_BUDGET 80

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
    gboolean bar_on_screen;   /* a bar is drawn and its line not ended yet */
    gboolean pivot_hint_shown;
} WaitState;

static void
wait_state_clear (WaitState *state)
{
    g_free (state->job_id);
    g_clear_pointer (&state->job, vmr_cli_job_free);
    g_free (state->shown_state);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WaitState, wait_state_clear)

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
    state.tty = !session->json && isatty (STDOUT_FILENO);
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
