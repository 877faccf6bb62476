#define G_LOG_DOMAIN "vmr-test"

/*
 * The live view in a real terminal: `virt-mirror watch` and `migrate
 * --wait` run in tmux (a private server on a socket in the test's
 * directory, a 120x30 window) while a slow copy runs and the guest writes;
 * the screens read back with `capture-pane` once each of the daemon's
 * JOB_PROGRESS redrew them (not at a pace of the test's own, which a loaded
 * machine puts out of step with the copy) show the bar and the percent
 * grow, the state and figures of the job as query-job has them, and at the
 * end `completed`; Ctrl-C ends the view with the cursor shown again. The
 * same view piped prints plain lines without escapes. JOB_PROGRESS comes at
 * most once a second with the job's figures. The destination holds every
 * byte the guest wrote.
 */

#include <string.h>

#include <glib/gstdio.h>

#include "harness.h"
#include "units.h"

/*
 * QEMU's mirror copies up to its buffer (16 MiB) at once and then sleeps as
 * the speed asks: six steps of a second each, several screens for each
 */
#define IMAGE_SIZE (96 * 1024 * 1024)
#define COPY_SPEED "16M"
#define WRITES     4
#define COLUMNS    "120"
#define ROWS       "30"

typedef struct {
    gchar *socket; /* the tmux server's */
} Tmux;

static void
tmux_clear (Tmux *tmux)
{
    g_free (tmux->socket);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Tmux, tmux_clear)

/* runs tmux with the NULL-terminated arguments on our server; returns its stdout */
static gchar *
tmux_run (Tmux *tmux, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;
    va_list args;

    g_ptr_array_add (argv, (gpointer) "tmux");
    g_ptr_array_add (argv, (gpointer) "-S");
    g_ptr_array_add (argv, tmux->socket);
    va_start (args, first_arg);
    for (const gchar *arg = first_arg; arg != NULL; arg = va_arg (args, const gchar *))
        g_ptr_array_add (argv, (gpointer) arg);
    va_end (args);
    g_ptr_array_add (argv, NULL);
    if (!g_spawn_sync (NULL, (gchar **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                       &err, &status, &error))
        vmr_fail ("cannot run tmux: %s", error->message);
    if (!g_spawn_check_wait_status (status, NULL))
        vmr_fail ("tmux %s failed: %s", first_arg, err);
    return g_steal_pointer (&out);
}

/* the text of window @window now */
static gchar *
capture (Tmux *tmux, const gchar *window)
{
    return tmux_run (tmux, "capture-pane", "-p", "-t", window, NULL);
}

/* the first line of @screen that starts with @prefix, NULL when none; free with g_free() */
static gchar *
find_line (const gchar *screen, const gchar *prefix)
{
    g_auto (GStrv) lines = g_strsplit (screen, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (g_str_has_prefix (lines[i], prefix))
            return g_strdup (lines[i]);
    }
    return NULL;
}

/*
 * the percent and the bar's filled share that @line shows, and one cell of
 * the bar as a share; FALSE without them
 */
static gboolean
read_bar (const gchar *line, gdouble *out_percent, gdouble *out_filled, gdouble *out_cell)
{
    g_autoptr (GRegex) regex
        = g_regex_new ("\\[([#.]{10,})\\] +([0-9.]+)%", G_REGEX_DEFAULT, 0, NULL);
    g_autoptr (GMatchInfo) match = NULL;
    g_autofree gchar *bar = NULL;
    g_autofree gchar *percent = NULL;
    guint filled = 0;

    if (line == NULL || !g_regex_match (regex, line, 0, &match))
        return FALSE;
    bar = g_match_info_fetch (match, 1);
    percent = g_match_info_fetch (match, 2);
    for (const gchar *p = bar; *p != '\0'; p++)
        filled += *p == '#';
    *out_percent = g_ascii_strtod (percent, NULL);
    *out_filled = (gdouble) filled / (gdouble) strlen (bar);
    *out_cell = 1.0 / (gdouble) strlen (bar);
    return TRUE;
}

/* the job's percent copied, as the CLI rounds it (down, to a tenth) */
static gdouble
job_percent (JsonObject *job)
{
    JsonObject *progress = vmr_harness_json_object (job, "progress");
    gint64 total = vmr_harness_json_int (progress, "total");
    gint64 done = vmr_harness_json_int (progress, "done");

    return total > 0 ? (gdouble) (done * 1000 / total) / 10.0 : 0.0;
}

/* the JOB_PROGRESS events seen on the test's own connection */
typedef struct {
    GArray *times_us;    /* of gint64: the daemon's timestamps */
    GArray *done;        /* of gint64: progress.done of each */
    gdouble percent;     /* the newest one's, as the CLI rounds it */
    guint state_changes; /* JOB_STATE_CHANGED events */
    gboolean bad_shape;  /* an event without the job's figures */
} ProgressEvents;

static void
progress_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
                   gpointer user_data)
{
    ProgressEvents *events = user_data;
    JsonObject *progress = vmr_json_get_object (data, "progress");
    JsonObject *policy = vmr_json_get_object (data, "policy");
    gint64 done = 0, total = 0;

    events->state_changes += g_str_equal (name, "JOB_STATE_CHANGED");
    if (!g_str_equal (name, "JOB_PROGRESS"))
        return;
    if (progress == NULL || policy == NULL || !vmr_json_get_int (progress, "done", &done)
        || !vmr_json_get_int (progress, "total", &total)
        || vmr_json_get_string (data, "state") == NULL
        || vmr_json_get_array (policy, "guest-iops") == NULL)
        events->bad_shape = TRUE;
    events->percent = total > 0 ? (gdouble) (done * 1000 / total) / 10.0 : 0.0;
    g_array_append_val (events->times_us, timestamp_us);
    g_array_append_val (events->done, done);
}

static gboolean
wake_cb (gpointer user_data)
{
    *(gboolean *) user_data = TRUE;
    return G_SOURCE_REMOVE;
}

/*
 * Waits for the daemon's next event of the job after the @progress-th
 * JOB_PROGRESS and the @changes-th JOB_STATE_CHANGED, at most @timeout_s
 */
static void
wait_next_event (ProgressEvents *events, guint progress, guint changes, guint timeout_s)
{
    gboolean late = FALSE;
    guint timer = g_timeout_add_seconds (timeout_s, wake_cb, &late);

    while (events->times_us->len == progress && events->state_changes == changes && !late)
        g_main_context_iteration (NULL, TRUE);
    if (late)
        vmr_fail ("no event of the job in %u s", timeout_s);
    g_source_remove (timer);
}

/* the screen of @window once it shows @needle (free with g_free()); waits at most @timeout_s */
static gchar *
wait_screen (Tmux *tmux, const gchar *window, const gchar *needle, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

    while (TRUE) {
        g_autofree gchar *screen = capture (tmux, window);

        if (strstr (screen, needle) != NULL)
            return g_steal_pointer (&screen);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("window %s never showed '%s'; it shows:\n%s", window, needle, screen);
        g_usleep (100 * 1000);
    }
}

/* what the screens showed while the job copied */
typedef struct {
    gdouble last_watch, last_migrate; /* the percents of the last screens */
    guint watch_grew, migrate_grew;   /* screens whose percent grew */
    guint matched;                    /* watch lines with the job's state, disk and policy */
    guint exact;                      /* watch lines with the job's own figures */
} LiveSeen;

/*
 * The screen of @window once the bar of vmr-1 shows @percent or more (the
 * figures of the daemon's newest JOB_PROGRESS, which redraws both views),
 * or the job no longer copies; free with g_free()
 */
static gchar *
wait_view (VmrHarness *h, Tmux *tmux, const gchar *window, gdouble percent)
{
    gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

    while (TRUE) {
        g_autofree gchar *screen = capture (tmux, window);
        g_autofree gchar *line = find_line (screen, "vmr-1 ");
        g_autoptr (JsonObject) job = NULL;
        gdouble shown, filled, cell;

        if (read_bar (line, &shown, &filled, &cell) && shown >= percent)
            return g_steal_pointer (&screen);
        job = vmr_harness_get_job (h, "vmr-1");
        if (!g_str_equal (vmr_json_job_state (job), "copying"))
            return g_steal_pointer (&screen);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("window %s did not show %.1f%% of vmr-1; it shows:\n%s", window, percent,
                      screen);
        g_usleep (100 * 1000);
    }
}

/*
 * the watch view's line of vmr-1 against the job's own reading: @job read
 * after the screen, @at_event (or NULL) read on the daemon's newest
 * JOB_PROGRESS, whose figures the view draws
 */
static void
check_watch_line (const gchar *screen, JsonObject *job, JsonObject *at_event, LiveSeen *seen)
{
    g_autofree gchar *line = find_line (screen, "vmr-1 ");
    gdouble percent, filled, cell;

    if (!read_bar (line, &percent, &filled, &cell))
        return;
    g_test_message ("watch: %s", line);
    /* what the view shows was true a moment ago: never ahead of the job */
    g_assert_cmpfloat (percent, <=, job_percent (job));
    /* the bar and the percent say the same, to a cell */
    g_assert_cmpfloat (ABS (filled - percent / 100.0), <=, cell);
    g_assert_cmpfloat (percent, >=, seen->last_watch);
    seen->watch_grew += percent > seen->last_watch;
    seen->last_watch = percent;
    if (strstr (line, " copying ") != NULL && strstr (line, "vm/disk0") != NULL
        && strstr (screen, "policy: ") != NULL)
        seen->matched++;
    /* between two steps of the copy the view has the job's own figures */
    if (at_event != NULL && percent == job_percent (at_event)) {
        g_autofree gchar *backlog = vmr_units_format_bytes ((guint64) vmr_harness_json_int (
            vmr_harness_json_object (at_event, "progress"), "backlog"));
        g_autofree gchar *backlog_cell = g_strdup_printf ("  %s  ", backlog);

        seen->exact += strstr (line, backlog_cell) != NULL;
    }
}

/* the `migrate --wait` view's line of vmr-1 against the job's own reading */
static void
check_migrate_line (const gchar *screen, JsonObject *job, LiveSeen *seen)
{
    g_autofree gchar *line = find_line (screen, "vmr-1 ");
    gdouble percent, filled, cell;

    if (!read_bar (line, &percent, &filled, &cell))
        return;
    g_test_message ("migrate: %s", line);
    g_assert_cmpfloat (ABS (filled - percent / 100.0), <=, cell);
    g_assert_true (g_str_has_prefix (line, "vmr-1 copying "));
    g_assert_cmpfloat (percent, <=, job_percent (job));
    g_assert_cmpfloat (percent, >=, seen->last_migrate);
    seen->migrate_grew += percent > seen->last_migrate;
    seen->last_migrate = percent;
}

/*
 * Both views, once each JOB_PROGRESS of the copy redrew them, against the
 * job read on that event and after the screens, until the job no longer
 * copies; the guest writes between two events
 */
static void
follow_copy (VmrHarness *h, Tmux *tmux, VmrHarnessVm *vm, ProgressEvents *events, LiveSeen *seen)
{
    g_autoptr (JsonObject) at_event = NULL;

    while (TRUE) {
        guint progress = events->times_us->len, changes = events->state_changes;
        g_autofree gchar *watch_screen = wait_view (h, tmux, "vmr:watch", events->percent);
        g_autofree gchar *migrate_screen = wait_view (h, tmux, "vmr:migrate", events->percent);
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, "vmr-1");

        if (!g_str_equal (vmr_json_job_state (job), "copying"))
            break;
        check_watch_line (watch_screen, job, at_event, seen);
        check_migrate_line (migrate_screen, job, seen);
        vmr_harness_writer_write (vm->writer, WRITES);
        wait_next_event (events, progress, changes, 10);
        g_clear_pointer (&at_event, json_object_unref);
        at_event = vmr_harness_get_job (h, "vmr-1");
    }
}

/* the end: completed on both screens, exit 0 for --wait */
static void
assert_completed_screens (Tmux *tmux)
{
    g_autofree gchar *final_watch = NULL;
    g_autofree gchar *final_migrate = NULL;

    final_migrate = wait_screen (tmux, "vmr:migrate", "MIGRATE-EXIT=0", 10);
    g_assert_nonnull (strstr (final_migrate, "Job vmr-1 completed: disk0 of vm is now on"));
    final_watch = wait_screen (tmux, "vmr:watch", "1 completed", 10);
    {
        g_autofree gchar *line = find_line (final_watch, "vmr-1 ");
        gdouble percent = 0, filled = 0, cell = 0;

        g_test_message ("final watch:\n%s", final_watch);
        g_assert_nonnull (line);
        g_assert_nonnull (strstr (line, " completed "));
        g_assert_true (read_bar (line, &percent, &filled, &cell));
        g_assert_cmpfloat (percent, ==, 100.0);
        g_assert_cmpfloat (filled, ==, 1.0);
    }
}

/* a narrower terminal (SIGWINCH): drawn again to its width, without the bar */
static void
assert_redrawn_narrower (Tmux *tmux)
{
    g_free (tmux_run (tmux, "resize-window", "-t", "vmr:watch", "-x", "70", NULL));
    {
        gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

        while (TRUE) {
            g_autofree gchar *screen = capture (tmux, "vmr:watch");
            g_autofree gchar *line = find_line (screen, "vmr-1 ");
            g_auto (GStrv) lines = g_strsplit (screen, "\n", -1);
            gboolean fits = TRUE;

            for (guint i = 0; lines[i] != NULL; i++)
                fits &= g_utf8_strlen (lines[i], -1) <= 69;
            if (line != NULL && strchr (line, '[') == NULL && strstr (line, "100%") != NULL
                && fits) {
                g_test_message ("resized:\n%s", screen);
                break;
            }
            if (g_get_monotonic_time () > deadline)
                vmr_fail ("the view was not drawn again for 70 columns:\n%s", screen);
            g_usleep (100 * 1000);
        }
    }
}

/* Ctrl-C: the view ends, exit 0 without named jobs, and the cursor is back */
static void
assert_interrupted (Tmux *tmux)
{
    g_autofree gchar *done_watch = NULL;
    g_autofree gchar *cursor = NULL;

    g_free (tmux_run (tmux, "send-keys", "-t", "vmr:watch", "C-c", NULL));
    done_watch = wait_screen (tmux, "vmr:watch", "WATCH-EXIT=0", 10);
    g_assert_nonnull (strstr (done_watch, "vmr-1 "));
    cursor = tmux_run (tmux, "display-message", "-p", "-t", "vmr:watch", "#{cursor_flag}", NULL);
    g_assert_cmpstr (g_strstrip (cursor), ==, "1");
    g_free (tmux_run (tmux, "kill-server", NULL));
}

/* piped: plain lines, no escapes, exit 0 once the named job completed */
static void
assert_piped (VmrCliRun *piped_run)
{
    g_autoptr (VmrCliResult) piped = NULL;

    piped = vmr_harness_cli_wait (piped_run);
    g_test_message ("piped watch:\n%s", piped->out);
    vmr_cli_result_assert_ok (piped);
    g_assert_null (strchr (piped->out, '\033'));
    g_assert_nonnull (strstr (piped->out, "vmr-1: copying\n"));
    g_assert_nonnull (strstr (piped->out, "vmr-1: copying "));
    g_assert_nonnull (strstr (piped->out, "% ("));
    g_assert_nonnull (strstr (piped->out, "vmr-1: completed\n"));
}

/* JOB_PROGRESS: the job's figures, growing, at most once a second */
static void
assert_progress_events (const ProgressEvents *events)
{
    g_test_message ("%u JOB_PROGRESS events", events->times_us->len);
    g_assert_false (events->bad_shape);
    g_assert_cmpuint (events->times_us->len, >=, 3);
    for (guint i = 1; i < events->times_us->len; i++) {
        gint64 gap = g_array_index (events->times_us, gint64, i)
                     - g_array_index (events->times_us, gint64, i - 1);

        g_assert_cmpint (gap, >=, 950 * 1000);
        g_assert_cmpint (g_array_index (events->done, gint64, i), >=,
                         g_array_index (events->done, gint64, i - 1));
    }
}

static void
test_live_view (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_auto (Tmux) tmux = { 0 };
    ProgressEvents events = { g_array_new (FALSE, FALSE, sizeof (gint64)),
                              g_array_new (FALSE, FALSE, sizeof (gint64)), 0, 0, FALSE };
    g_autofree gchar *watch_cmd = NULL;
    g_autofree gchar *migrate_cmd = NULL;
    g_autoptr (VmrCliResult) unknown = NULL;
    VmrCliRun *piped_run;
    g_autoptr (JsonObject) final = NULL;
    g_autofree gchar *cursor = NULL;
    LiveSeen seen = { -1, -1, 0, 0, 0, 0 };
    gulong event_id;

    if (!vmr_harness_require (h, "tmux", NULL))
        return;
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x71);

    /* bad input: one line, exit 1 */
    unknown = vmr_harness_cli (h, "watch", "vmr-99", NULL);
    vmr_cli_result_assert_error (unknown, 1);
    if (strstr (unknown->err, "vmr-99") == NULL)
        vmr_fail ("the refusal does not name the job: %s", unknown->err);

    tmux.socket = vmr_harness_path (h, "tmux.sock");
    watch_cmd = g_strdup_printf ("'%s' -c '%s' watch; echo WATCH-EXIT=$?; sleep 60",
                                 g_getenv ("VMR_CLI"), h->socket);
    migrate_cmd = g_strdup_printf ("'%s' -c '%s' migrate vm disk0 '%s' --speed " COPY_SPEED
                                   " --wait; echo MIGRATE-EXIT=$?; "
                                   "sleep 60",
                                   g_getenv ("VMR_CLI"), h->socket, vm.dest);
    g_free (tmux_run (&tmux, "-f", "/dev/null", "new-session", "-d", "-s", "vmr", "-n", "watch",
                      "-x", COLUMNS, "-y", ROWS, watch_cmd, NULL));
    g_free (wait_screen (&tmux, "vmr:watch", "No jobs yet", 10));
    cursor = tmux_run (&tmux, "display-message", "-p", "-t", "vmr:watch", "#{cursor_flag}", NULL);
    g_assert_cmpstr (g_strstrip (cursor), ==, "0");

    event_id = g_signal_connect (h->control, "event", G_CALLBACK (progress_event_cb), &events);
    g_free (tmux_run (&tmux, "new-window", "-d", "-t", "vmr", "-n", "migrate", migrate_cmd, NULL));
    vmr_harness_wait_job_count (h, 1);
    /* the loop below follows the copy from its start: the job is queued for a moment first */
    json_object_unref (vmr_harness_wait_job (h, "vmr-1", "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    /* the view piped: plain lines until the job ends */
    piped_run = vmr_harness_cli_spawn (h, "watch", "vmr-1", NULL);

    /* screens during the copy: growing bars, the job's own state and figures */
    follow_copy (h, &tmux, &vm, &events, &seen);
    g_test_message ("the watch bar grew %u times, the migrate bar %u times; %u screens had the "
                    "job's own figures",
                    seen.watch_grew, seen.migrate_grew, seen.exact);
    g_assert_cmpuint (seen.watch_grew, >=, 3);
    g_assert_cmpuint (seen.migrate_grew, >=, 3);
    g_assert_cmpuint (seen.matched, >=, 3);
    g_assert_cmpuint (seen.exact, >=, 2);

    final = vmr_harness_wait_job (h, "vmr-1", "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_signal_handler_disconnect (h->control, event_id);

    assert_completed_screens (&tmux);
    assert_redrawn_narrower (&tmux);
    assert_interrupted (&tmux);
    assert_piped (piped_run);
    assert_progress_events (&events);
    g_array_unref (events.times_us);
    g_array_unref (events.done);

    vmr_harness_assert_migrated (h, "vmr-1", "disk0", vm.source, vm.dest, "raw", vm.expected);
}

/*
 * evacuate --wait on a terminal: the table of its jobs, as watch draws it,
 * and the summary line under it, redrawn in place while the copy runs
 */
static void
test_evacuate_view (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Tmux) tmux = { 0 };
    g_autofree gchar *old_dir = NULL;
    g_autofree gchar *new_dir = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *command = NULL;
    g_autofree gchar *final = NULL;
    VmrHarnessDisk disk = { .id = "disk0", .format = "raw" };
    ProgressEvents events = { g_array_new (FALSE, FALSE, sizeof (gint64)),
                              g_array_new (FALSE, FALSE, sizeof (gint64)), 0, 0, FALSE };
    gdouble last = -1;
    guint grew = 0;
    gulong event_id;

    if (!vmr_harness_require (h, "tmux", NULL))
        return;
    old_dir = vmr_harness_path (h, "old");
    new_dir = vmr_harness_path (h, "new");
    g_assert_cmpint (g_mkdir (old_dir, 0755), ==, 0);
    g_assert_cmpint (g_mkdir (new_dir, 0755), ==, 0);
    source = vmr_harness_create_image (h, "old/disk0.raw", "raw", IMAGE_SIZE, 0x72);
    expected = vmr_harness_expected_path (source);
    dest = g_build_filename (new_dir, "disk0.raw", NULL);
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    vmr_harness_attach (h, "vm");

    tmux.socket = vmr_harness_path (h, "tmux.sock");
    command = g_strdup_printf ("'%s' -c '%s' evacuate --from '%s' --to '%s' --speed " COPY_SPEED
                               " --wait; echo EVACUATE-EXIT=$?; sleep 60",
                               g_getenv ("VMR_CLI"), h->socket, old_dir, new_dir);
    event_id = g_signal_connect (h->control, "event", G_CALLBACK (progress_event_cb), &events);
    g_free (tmux_run (&tmux, "-f", "/dev/null", "new-session", "-d", "-s", "vmr", "-n", "evacuate",
                      "-x", COLUMNS, "-y", ROWS, command, NULL));
    vmr_harness_wait_job_count (h, 1);
    json_object_unref (vmr_harness_wait_job (h, "vmr-1", "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    /* the screen once each JOB_PROGRESS redrew it, against the job read after it */
    while (TRUE) {
        guint progress = events.times_us->len, changes = events.state_changes;
        g_autofree gchar *screen = wait_view (h, &tmux, "vmr:evacuate", events.percent);
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, "vmr-1");
        g_autofree gchar *row = find_line (screen, "vmr-1 ");
        g_autofree gchar *summary = find_line (screen, "evacuate: ");
        gdouble percent, filled, cell;

        if (!g_str_equal (vmr_json_job_state (job), "copying"))
            break;
        if (read_bar (row, &percent, &filled, &cell) && summary != NULL) {
            g_test_message ("evacuate: %s\n%s", row, summary);
            g_assert_true (g_str_has_prefix (summary, "evacuate: 0/1 disks done, "));
            g_assert_cmpfloat (percent, <=, job_percent (job));
            g_assert_cmpfloat (percent, >=, last);
            grew += percent > last;
            last = percent;
        }
        wait_next_event (&events, progress, changes, 10);
    }
    g_signal_handler_disconnect (h->control, event_id);
    g_assert_false (events.bad_shape);
    g_array_unref (events.times_us);
    g_array_unref (events.done);
    g_assert_cmpuint (grew, >=, 3);
    final = wait_screen (&tmux, "vmr:evacuate", "EVACUATE-EXIT=0", VMR_HARNESS_JOB_TIMEOUT_S);
    g_test_message ("final evacuate:\n%s", final);
    g_assert_nonnull (strstr (final, "evacuate: 1/1 disks done"));
    g_assert_nonnull (strstr (final, "evacuate: completed: 1 disk moved off"));
    {
        g_autofree gchar *row = find_line (final, "vmr-1 ");

        g_assert_nonnull (row);
        g_assert_nonnull (strstr (row, " completed "));
    }
    g_free (tmux_run (&tmux, "kill-server", NULL));
    vmr_harness_assert_migrated (h, "vmr-1", "disk0", source, dest, "raw", expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/watch/live-view", NULL, test_live_view);
    VMR_HARNESS_ADD ("/watch/evacuate-view", NULL, test_evacuate_view);
    return g_test_run ();
}
