#define G_LOG_DOMAIN "vmr-cli"

#include "cli-evacuate-command.h"

#include <math.h>
#include <stdio.h>

#include "cli-cluster-evacuate.h"
#include "cli-job.h"
#include "cli-json.h"
#include "cli-output.h"
#include "cli-progress.h"
#include "cli-screen.h"
#include "cli-table.h"
#include "cli-wait.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* where the jobs of the plan stand, from one query-jobs */
typedef struct {
    guint n_jobs;
    guint n_ended; /* completed, failed or cancelled */
    guint n_completed;
    guint64 done;      /* bytes copied */
    guint64 total;     /* bytes to copy */
    guint64 rate;      /* bytes/s of the copies moving now */
    GPtrArray *failed; /* gchar *: "vmr-5 (web01 disk1): failed: REASON", owned */
    GPtrArray *jobs;   /* VmrCliJob *: the plan's jobs the daemon lists, in its order, owned */
} Progress;

static void
progress_clear (Progress *progress)
{
    g_clear_pointer (&progress->failed, g_ptr_array_unref);
    g_clear_pointer (&progress->jobs, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Progress, progress_clear)

/* the entries of the reply's "disks" (borrowed), the malformed ones left out */
static GPtrArray *
get_plan_entries (JsonObject *plan)
{
    JsonArray *disks = vmr_json_get_array (plan, "disks");
    GPtrArray *entries = g_ptr_array_new ();

    for (guint i = 0; disks != NULL && i < json_array_get_length (disks); i++) {
        JsonObject *entry = vmr_json_array_object (disks, i);

        if (entry != NULL)
            g_ptr_array_add (entries, entry);
    }
    return entries;
}

/* bytes, 0 when unknown */
static guint64
get_entry_size (JsonObject *entry)
{
    gdouble size = 0;

    if (!vmr_json_get_double (entry, "size", &size) || !isfinite (size) || size < 0)
        return 0;
    return (guint64) size;
}

/* the JOB cell: the job, why the disk was not planned again, or NULL ("-") in a dry run */
static gchar *
format_job_cell (JsonObject *entry)
{
    const gchar *job = vmr_json_get_string (entry, "job");
    const gchar *skipped = vmr_json_get_string (entry, "skipped");

    if (vmr_json_get_string (entry, "error") != NULL)
        return g_strdup ("not submitted");
    if (skipped != NULL && job != NULL)
        return g_strdup_printf ("%s (%s)", job, skipped);
    if (skipped != NULL)
        return g_strdup (skipped);
    return g_strdup (job);
}

/* the table of the plan, then "3 disks of 2 domains, 60 GiB" */
static void
print_plan (JsonObject *plan, GPtrArray *entries, gboolean dry_run)
{
    g_autoptr (VmrCliTable) table = NULL;
    g_autoptr (GHashTable) domains = g_hash_table_new (g_str_hash, g_str_equal);
    g_autofree gchar *text = NULL;
    g_autofree gchar *total_text = NULL;
    guint64 total_bytes = 0;
    gdouble reported_total = 0;
    guint n_domains;

    table = vmr_cli_table_new ("DOMAIN", "DISK", "SIZE", "SOURCE", "DESTINATION", "JOB", NULL);
    for (guint i = 0; i < entries->len; i++) {
        JsonObject *entry = g_ptr_array_index (entries, i);
        const gchar *domain = vmr_json_get_string (entry, "domain");
        g_autofree gchar *size = NULL;
        g_autofree gchar *job = format_job_cell (entry);

        if (json_object_has_member (entry, "size"))
            size = vmr_units_format_bytes (get_entry_size (entry));
        vmr_cli_table_add_row (table, domain, vmr_json_get_string (entry, "disk"), size,
                               vmr_json_get_string (entry, "source"),
                               vmr_json_get_string (entry, "destination"), job, NULL);
        if (domain != NULL)
            g_hash_table_add (domains, (gpointer) domain);
        total_bytes += get_entry_size (entry);
    }
    if (vmr_json_get_double (plan, "total-bytes", &reported_total) && isfinite (reported_total)
        && reported_total >= 0)
        total_bytes = (guint64) reported_total;
    text = vmr_cli_table_to_string (table, "");
    g_print ("%s", text);

    n_domains = g_hash_table_size (domains);
    total_text = vmr_units_format_bytes (total_bytes);
    g_print ("%u disk%s of %u domain%s, %s%s\n", entries->len, entries->len == 1 ? "" : "s",
             n_domains, n_domains == 1 ? "" : "s", total_text,
             dry_run ? " (dry run: nothing submitted)" : "");
}

/*
 * "web01: not submitted: REASON", once per domain whose submission failed;
 * *@out_n_disks counts their disks.
 */
static GPtrArray *
get_submission_failures (GPtrArray *entries, guint *out_n_disks)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GHashTable) domains = g_hash_table_new (g_str_hash, g_str_equal);

    *out_n_disks = 0;
    for (guint i = 0; i < entries->len; i++) {
        JsonObject *entry = g_ptr_array_index (entries, i);
        const gchar *domain = vmr_json_get_string (entry, "domain");
        const gchar *reason = vmr_json_get_string (entry, "error");

        if (reason == NULL)
            continue;
        (*out_n_disks)++;
        if (domain == NULL)
            domain = "?";
        if (!g_hash_table_add (domains, (gpointer) domain))
            continue;
        g_ptr_array_add (lines, g_strdup_printf ("%s: not submitted: %s", domain, reason));
    }
    return lines;
}

/* the entries with a job, one per job: those --wait follows */
static GPtrArray *
get_plan_jobs (GPtrArray *entries)
{
    GPtrArray *jobs = g_ptr_array_new ();
    g_autoptr (GHashTable) ids = g_hash_table_new (g_str_hash, g_str_equal);

    for (guint i = 0; i < entries->len; i++) {
        JsonObject *entry = g_ptr_array_index (entries, i);
        const gchar *id = vmr_json_get_string (entry, "job");

        if (id != NULL && g_hash_table_add (ids, (gpointer) id))
            g_ptr_array_add (jobs, entry);
    }
    return jobs;
}

static gchar *
format_failure (const gchar *id, const gchar *domain, const gchar *disk, const gchar *state,
                const gchar *reason)
{
    return g_strdup_printf ("%s (%s %s): %s%s%s", id, domain != NULL ? domain : "?",
                            disk != NULL ? disk : "?", state, reason != NULL ? ": " : "",
                            reason != NULL ? reason : "");
}

/* reads where the jobs of @plan_jobs stand from the query-jobs @reply */
static gboolean
read_progress (JsonNode *reply, GPtrArray *plan_jobs, Progress *progress, GError **error)
{
    JsonArray *jobs = vmr_cli_json_expect_array (reply, "query-jobs", error);
    g_autoptr (GHashTable) by_id = NULL;

    if (jobs == NULL)
        return FALSE;
    by_id
        = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) vmr_cli_job_free);
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        VmrCliJob *job = vmr_cli_job_new (json_array_get_element (jobs, i), "query-jobs", error);

        if (job == NULL)
            return FALSE;
        g_hash_table_replace (by_id, (gpointer) job->id, job);
    }

    progress_clear (progress);
    *progress = (Progress){
        .failed = g_ptr_array_new_with_free_func (g_free),
        .jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_cli_job_free),
    };
    for (guint i = 0; i < plan_jobs->len; i++) {
        JsonObject *entry = g_ptr_array_index (plan_jobs, i);
        const gchar *id = vmr_json_get_string (entry, "job");
        const VmrCliJob *job = g_hash_table_lookup (by_id, id);
        guint64 size = get_entry_size (entry);

        progress->n_jobs++;
        if (job == NULL) {
            /* nothing more will come of it */
            progress->n_ended++;
            progress->total += size;
            g_ptr_array_add (progress->failed,
                             format_failure (id, vmr_json_get_string (entry, "domain"),
                                             vmr_json_get_string (entry, "disk"), "unknown",
                                             "virt-mirrord no longer lists it"));
            continue;
        }
        g_ptr_array_add (progress->jobs, (gpointer) job);
        g_hash_table_steal (by_id, id);
        if (job->has_progress && job->total > 0)
            size = job->total;
        progress->total += size;
        if (g_str_equal (job->state, "completed")) {
            progress->n_ended++;
            progress->n_completed++;
            progress->done += size;
            continue;
        }
        if (job->has_progress)
            progress->done += MIN (job->done, size);
        if (vmr_cli_job_is_finished (job)) {
            progress->n_ended++;
            g_ptr_array_add (progress->failed, format_failure (job->id, job->domain, job->disk,
                                                               job->state, job->reason));
        } else if (job->has_progress && vmr_cli_job_is_copying (job)) {
            progress->rate += job->rate;
        }
    }
    return TRUE;
}

/* "0:03", "12:45", "1:02:03" at the current rate; "-" when nothing moves */
static gchar *
format_eta (const Progress *progress)
{
    guint64 left = progress->total - MIN (progress->done, progress->total);
    guint64 seconds;

    if (left == 0)
        return g_strdup ("0:00");
    if (progress->rate == 0)
        return g_strdup ("-");
    seconds = (left + progress->rate - 1) / progress->rate;
    if (seconds >= 3600)
        return g_strdup_printf ("%" G_GUINT64_FORMAT ":%02u:%02u", seconds / 3600,
                                (guint) (seconds % 3600 / 60), (guint) (seconds % 60));
    return g_strdup_printf ("%" G_GUINT64_FORMAT ":%02u", seconds / 60, (guint) (seconds % 60));
}

/*
 * "evacuate: 3/10 disks done, 1.2 GiB of 4 GiB, 850 MiB/s, ETA 0:03"; once
 * every job has ended, the rate is the average over the wait (@average,
 * bytes/s), since nothing moves any more.
 */
static gchar *
format_summary (const Progress *progress, gboolean ended, guint64 average)
{
    g_autofree gchar *done = vmr_units_format_bytes (progress->done);
    g_autofree gchar *total = vmr_units_format_bytes (progress->total);
    g_autofree gchar *rate = vmr_units_format_bytes (ended ? average : progress->rate);
    g_autofree gchar *eta = format_eta (progress);

    return g_strdup_printf ("evacuate: %u/%u disks done, %s of %s, %s/s%s, ETA %s",
                            progress->n_completed, progress->n_jobs, done, total, rate,
                            ended ? " on average" : "", eta);
}

/* on a terminal: the table of the jobs, as `watch` draws it, and the summary under it */
static void
draw_progress (VmrCliScreen *screen, const Progress *progress, const gchar *summary)
{
    g_auto (GStrv) table
        = vmr_cli_progress_table ((VmrCliJob *const *) progress->jobs->pdata, progress->jobs->len,
                                  vmr_cli_screen_columns (screen));
    g_autoptr (GPtrArray) lines = g_ptr_array_new ();

    for (guint i = 0; table[i] != NULL; i++)
        g_ptr_array_add (lines, table[i]);
    g_ptr_array_add (lines, (gpointer) summary);
    g_ptr_array_add (lines, NULL);
    vmr_cli_screen_draw (screen, (const gchar *const *) lines->pdata);
}

/*
 * Polls query-jobs until every job of @plan_jobs has ended, printing a
 * progress line at the start, at most every VMR_CLI_WAIT_PRINT_INTERVAL_US
 * and at the end unless the session prints JSON; on a terminal, the jobs
 * and that line redrawn at every reading instead. Fills @progress
 * with the last reading. Sets an error when the wait was interrupted or the
 * daemon cut off; the jobs then keep running.
 */
static gboolean
follow_jobs (VmrCliSession *session, GPtrArray *plan_jobs, Progress *progress, GError **error)
{
    VmrQmpClient *client = vmr_cli_session_get_client (session, error);
    g_autoptr (VmrCliWaitPacer) pacer = NULL;
    gint64 start_us = g_get_monotonic_time ();
    gint64 printed_us = 0;
    guint64 start_done = 0;
    gboolean first = TRUE;
    g_autoptr (VmrCliScreen) screen = NULL;

    if (client == NULL)
        return FALSE;
    if (!session->json && vmr_cli_screen_is_terminal ())
        screen = vmr_cli_screen_new (VMR_CLI_SCREEN_INLINE, NULL, NULL);
    /* the end of any job wakes the wait: the last one ends it without delay */
    pacer = vmr_cli_wait_pacer_new (client, NULL);
    do {
        g_autoptr (JsonNode) reply = vmr_cli_session_call (session, "query-jobs", NULL, error);
        gboolean ended;
        gint64 now_us;

        if (reply == NULL) {
            g_prefix_error (error, "lost track of the evacuation, whose jobs may still be "
                                   "running (see 'virt-mirror jobs'): ");
            return FALSE;
        }
        if (!read_progress (reply, plan_jobs, progress, error))
            return FALSE;
        now_us = g_get_monotonic_time ();
        ended = progress->n_ended == progress->n_jobs;
        if (first)
            start_done = progress->done;
        first = FALSE;
        /* a terminal is redrawn at every reading, a log gets a line every 2 s */
        if (!session->json
            && (screen != NULL || ended || printed_us == 0
                || now_us - printed_us >= VMR_CLI_WAIT_PRINT_INTERVAL_US)) {
            gdouble seconds = (gdouble) MAX (now_us - start_us, 1) / G_USEC_PER_SEC;
            guint64 moved = progress->done - MIN (start_done, progress->done);
            g_autofree gchar *summary
                = format_summary (progress, ended, (guint64) (moved / seconds));

            if (screen != NULL) {
                draw_progress (screen, progress, summary);
            } else {
                g_print ("%s\n", summary);
                fflush (stdout);
            }
            printed_us = now_us;
        }
        if (ended)
            return TRUE;
    } while (vmr_cli_wait_pacer_next (pacer));
    g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                 "interrupted: the jobs of the evacuation keep running; follow them "
                 "with 'virt-mirror jobs'");
    return FALSE;
}

/* once the reply is printed in JSON mode it stays alone on stdout: errors go to stderr */
static gboolean
fail_after_reply (VmrCliSession *session, GError **error)
{
    if (session->json && error != NULL && *error != NULL) {
        vmr_cli_output_error (*error, FALSE);
        g_clear_error (error);
        g_set_error_literal (error, VMR_CLI_REPORTED_ERROR, 0, "reported");
    }
    return FALSE;
}

/* one error naming every disk that was not moved, or not submitted without --wait */
static gboolean
set_failure_error (GPtrArray *submission_failures, guint n_unsubmitted, const Progress *progress,
                   guint n_disks, GError **error)
{
    g_autoptr (GString) message = g_string_new (NULL);
    guint n_failed = progress != NULL ? progress->failed->len : 0;

    if (n_unsubmitted + n_failed == 0)
        return TRUE;
    if (progress != NULL)
        g_string_append_printf (
            message, "evacuate: %u of %u disks not moved:", n_unsubmitted + n_failed, n_disks);
    else
        g_string_append_printf (message, "evacuate: %u of %u disks not submitted:", n_unsubmitted,
                                n_disks);
    for (guint i = 0; i < submission_failures->len; i++)
        g_string_append_printf (message, "\n%s",
                                (const gchar *) g_ptr_array_index (submission_failures, i));
    for (guint i = 0; i < n_failed; i++)
        g_string_append_printf (message, "\n%s",
                                (const gchar *) g_ptr_array_index (progress->failed, i));
    g_set_error_literal (error, VMR_ERROR, VMR_ERROR_FAILED, message->str);
    return FALSE;
}

static JsonObject *
new_evacuate_arguments (const gchar *from, const gchar *to, const gchar *domains,
                        const gchar *format, const gchar *speed_text, guint64 speed,
                        gboolean dry_run)
{
    JsonObject *arguments = json_object_new ();

    json_object_set_string_member (arguments, "from", from);
    json_object_set_string_member (arguments, "to", to);
    if (domains != NULL)
        json_object_set_string_member (arguments, "domains", domains);
    if (format != NULL)
        json_object_set_string_member (arguments, "format", format);
    if (speed_text != NULL)
        json_object_set_int_member (arguments, "speed", (gint64) speed);
    if (dry_run)
        json_object_set_boolean_member (arguments, "dry-run", TRUE);
    return arguments;
}

/*
 * Prints the plan of the daemon's @reply to `evacuate` (or the reply itself
 * with --json), then follows its jobs with @wait; FALSE when a disk was not
 * submitted, or did not complete
 */
static gboolean
show_and_follow_plan (VmrCliSession *session, JsonNode *reply, const gchar *from_path,
                      gboolean dry_run, gboolean wait, GError **error)
{
    g_autoptr (GPtrArray) entries = NULL;
    g_autoptr (GPtrArray) submission_failures = NULL;
    g_autoptr (GPtrArray) plan_jobs = NULL;
    g_auto (Progress) progress = { 0 };
    guint n_unsubmitted = 0;
    JsonObject *plan;

    plan = vmr_cli_json_expect_object (reply, "evacuate", error);
    if (plan == NULL)
        return FALSE;
    if (session->json)
        vmr_cli_json_print (reply);

    entries = get_plan_entries (plan);
    submission_failures = get_submission_failures (entries, &n_unsubmitted);
    if (!session->json && entries->len == 0)
        g_print ("nothing to evacuate: no disk of a known domain lies under %s\n",
                 vmr_json_get_string (plan, "from") != NULL ? vmr_json_get_string (plan, "from")
                                                            : from_path);
    else if (!session->json)
        print_plan (plan, entries, dry_run);

    /* a dry run has nothing to wait for */
    plan_jobs = get_plan_jobs (entries);
    if (!wait || dry_run || plan_jobs->len == 0) {
        if (!set_failure_error (submission_failures, n_unsubmitted, NULL, entries->len, error))
            return fail_after_reply (session, error);
        return TRUE;
    }
    if (!follow_jobs (session, plan_jobs, &progress, error))
        return fail_after_reply (session, error);
    if (!set_failure_error (submission_failures, n_unsubmitted, &progress, entries->len, error))
        return fail_after_reply (session, error);
    if (!session->json)
        g_print ("evacuate: completed: %u disk%s moved off %s\n", progress.n_completed,
                 progress.n_completed == 1 ? "" : "s", from_path);
    return TRUE;
}

gboolean
vmr_cli_cmd_evacuate (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                      GError **error)
{
    g_autofree gchar *from = NULL;
    g_autofree gchar *to = NULL;
    g_autofree gchar *domains = NULL;
    g_autofree gchar *format = NULL;
    g_autofree gchar *speed_text = NULL;
    gboolean dry_run = FALSE;
    gboolean wait = FALSE;
    gboolean cluster = FALSE;
    guint64 speed = 0;
    g_auto (GStrv) args = NULL;
    g_autofree gchar *from_path = NULL;
    g_autofree gchar *to_path = NULL;
    g_autoptr (JsonObject) arguments = NULL;
    g_autoptr (JsonNode) reply = NULL;
    const GOptionEntry entries_options[] = {
        { "from", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &from,
          "Move the disks whose images lie under DIR (required)", "DIR" },
        { "to", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &to,
          "Put the new images under DIR (required)", "DIR" },
        { "domains", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &domains,
          "Only the domains whose names match GLOB", "GLOB" },
        { "format", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &format,
          "Image format of the new images: raw or qcow2 (default: each source's)", "FORMAT" },
        { "speed", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &speed_text,
          "Limit the copy rate of each disk (bytes/s, K/M/G suffixes, 0 = unlimited)", "RATE" },
        { "dry-run", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &dry_run,
          "Show the plan without submitting it", NULL },
        { "wait", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &wait,
          "Follow the jobs until they end; exit 0 only if all completed", NULL },
        { "cluster", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &cluster,
          "Every host of the policy's cluster evacuates its own domains", NULL },
        G_OPTION_ENTRY_NULL,
    };

    if (!vmr_cli_command_parse (cmd, session, entries_options, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (from == NULL || *from == '\0') {
        vmr_cli_command_set_usage_error (error, cmd, "missing --from DIR");
        return FALSE;
    }
    if (to == NULL || *to == '\0') {
        vmr_cli_command_set_usage_error (error, cmd, "missing --to DIR");
        return FALSE;
    }
    if (cluster && dry_run) {
        vmr_cli_command_set_usage_error (error, cmd, "--dry-run is of one host, not --cluster");
        return FALSE;
    }
    if (!vmr_cli_command_check_format (cmd, format, error))
        return FALSE;
    if (speed_text != NULL && !vmr_cli_command_parse_rate (cmd, speed_text, &speed, error))
        return FALSE;

    /* the daemon has its own working directory */
    from_path = g_canonicalize_filename (from, NULL);
    /* an NBD server's URI goes as it is */
    to_path = g_uri_peek_scheme (to) != NULL ? g_strdup (to) : g_canonicalize_filename (to, NULL);
    arguments
        = new_evacuate_arguments (from_path, to_path, domains, format, speed_text, speed, dry_run);
    if (cluster)
        return vmr_cli_cluster_evacuate (session, arguments, wait, error);
    reply = vmr_cli_session_call (session, "evacuate", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot evacuate %s: ", from_path);
        return FALSE;
    }
    return show_and_follow_plan (session, reply, from_path, dry_run, wait, error);
}
