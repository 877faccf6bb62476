#define G_LOG_DOMAIN "vmr-test"

/*
 * The CLI as the tests run it, and the jobs it starts, polled over the
 * daemon's control socket.
 */

#include "harness-private.h"

#include <string.h>

void
vmr_cli_result_free (VmrCliResult *result)
{
    g_free (result->cmdline);
    g_free (result->out);
    g_free (result->err);
    g_free (result);
}

struct _VmrCliRun {
    VmrHarness *h;
    GSubprocess *proc;
    pid_t pid;
    gchar *cmdline;
    GBytes *out;
    GBytes *err;
    GError *error;
    gboolean done;
};

static void
communicate_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrCliRun *run = user_data;

    g_subprocess_communicate_finish (G_SUBPROCESS (source), res, &run->out, &run->err, &run->error);
    run->done = TRUE;
}

static gboolean
flag_cb (gpointer user_data)
{
    *(gboolean *) user_data = TRUE;
    return G_SOURCE_REMOVE;
}

static gchar *
bytes_to_string (GBytes *bytes)
{
    gsize len = 0;
    const gchar *data = bytes != NULL ? g_bytes_get_data (bytes, &len) : NULL;

    return data != NULL ? g_strndup (data, len) : g_strdup ("");
}

VmrCliRun *
vmr_harness_cli_spawnv (VmrHarness *h, const gchar *const *args)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new ();
    VmrCliRun *run = g_new0 (VmrCliRun, 1);

    g_ptr_array_add (argv, (gpointer) g_getenv ("VMR_CLI"));
    g_ptr_array_add (argv, "-c");
    g_ptr_array_add (argv, h->socket);
    for (guint i = 0; args[i] != NULL; i++)
        g_ptr_array_add (argv, (gpointer) args[i]);
    g_ptr_array_add (argv, NULL);
    run->h = h;
    run->cmdline = g_strjoinv (" ", (gchar **) argv->pdata);
    run->proc = vmr_harness_spawn (h, (const gchar *const *) argv->pdata,
                                   G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                   &run->pid);
    /* the pipes are drained whenever the test iterates the main context */
    g_subprocess_communicate_async (run->proc, NULL, NULL, communicate_cb, run);
    return run;
}

void
vmr_harness_cli_signal (VmrCliRun *run, gint signum)
{
    g_assert_nonnull (run->proc);
    g_subprocess_send_signal (run->proc, signum);
}

gboolean
vmr_harness_cli_run_exited (VmrCliRun *run)
{
    while (g_main_context_iteration (NULL, FALSE))
        ;
    return run->done;
}

VmrCliResult *
vmr_harness_cli_wait (VmrCliRun *run)
{
    g_autoptr (GSource) timer = g_timeout_source_new_seconds (VMR_HARNESS_CLI_TIMEOUT_S);
    VmrCliResult *result = g_new0 (VmrCliResult, 1);
    gboolean timed_out = FALSE;

    g_source_set_callback (timer, flag_cb, &timed_out, NULL);
    g_source_attach (timer, NULL);
    while (!run->done) {
        g_main_context_iteration (NULL, TRUE);
        if (timed_out && !run->done)
            g_subprocess_force_exit (run->proc);
    }
    g_source_destroy (timer);
    g_assert_true (vmr_harness_wait_exit (run->proc, VMR_HARNESS_STOP_TIMEOUT_MS));
    vmr_harness_untrack_pid (run->pid);
    g_assert_no_error (run->error);
    result->cmdline = g_steal_pointer (&run->cmdline);
    result->out = bytes_to_string (run->out);
    result->err = bytes_to_string (run->err);
    if (g_subprocess_get_if_exited (run->proc))
        result->status = g_subprocess_get_exit_status (run->proc);
    else
        result->status = -g_subprocess_get_term_sig (run->proc);
    g_clear_pointer (&run->out, g_bytes_unref);
    g_clear_pointer (&run->err, g_bytes_unref);
    g_clear_object (&run->proc);
    g_free (run);
    {
        g_autofree gchar *out_line = vmr_harness_one_line (result->out);
        g_autofree gchar *err_line = vmr_harness_one_line (result->err);

        /* the whole of stdout is in a failure message; here the start is enough */
        if (strlen (out_line) > 200)
            strcpy (out_line + 190, "...");
        g_test_message ("-> status %d; stdout: %s; stderr: %s", result->status, out_line, err_line);
    }
    if (timed_out)
        vmr_fail ("%s did not finish within %d s", result->cmdline, VMR_HARNESS_CLI_TIMEOUT_S);
    return result;
}

VmrCliResult *
vmr_harness_cliv (VmrHarness *h, const gchar *const *args)
{
    return vmr_harness_cli_wait (vmr_harness_cli_spawnv (h, args));
}

static GPtrArray *
collect_args (const gchar *first, va_list ap)
{
    GPtrArray *args = g_ptr_array_new ();

    for (const gchar *arg = first; arg != NULL; arg = va_arg (ap, const gchar *))
        g_ptr_array_add (args, (gpointer) arg);
    g_ptr_array_add (args, NULL);
    return args;
}

VmrCliRun *
vmr_harness_cli_spawn (VmrHarness *h, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) args = NULL;
    va_list ap;

    va_start (ap, first_arg);
    args = collect_args (first_arg, ap);
    va_end (ap);
    return vmr_harness_cli_spawnv (h, (const gchar *const *) args->pdata);
}

VmrCliResult *
vmr_harness_cli (VmrHarness *h, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) args = NULL;
    va_list ap;

    va_start (ap, first_arg);
    args = collect_args (first_arg, ap);
    va_end (ap);
    return vmr_harness_cliv (h, (const gchar *const *) args->pdata);
}

G_GNUC_NORETURN static void
cli_fail (VmrCliResult *result, const gchar *what)
{
    g_autofree gchar *out_line = vmr_harness_one_line (result->out);
    g_autofree gchar *err_line = vmr_harness_one_line (result->err);

    vmr_fail ("%s: %s; got exit status %d; stdout: %s; stderr: %s", result->cmdline, what,
              result->status, out_line, err_line);
}

void
vmr_cli_result_assert_ok (VmrCliResult *result)
{
    if (result->status != 0)
        cli_fail (result, "expected exit status 0");
}

void
vmr_cli_result_assert_error (VmrCliResult *result, gint status)
{
    const gchar *newline = strchr (result->err, '\n');

    if (result->status != status) {
        g_autofree gchar *what = g_strdup_printf ("expected exit status %d", status);

        cli_fail (result, what);
    }
    if (!g_str_has_prefix (result->err, "virt-mirror: error: "))
        cli_fail (result, "stderr does not start with 'virt-mirror: error: '");
    if (newline == NULL || newline[1] != '\0')
        cli_fail (result, "stderr is not exactly one line");
    if (strlen (result->err) <= strlen ("virt-mirror: error: \n"))
        cli_fail (result, "the error message is empty");
}

JsonNode *
vmr_cli_result_parse_json (VmrCliResult *result)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    if (!json_parser_load_from_data (parser, result->out, -1, &error)) {
        g_autofree gchar *what = g_strdup_printf ("stdout is not JSON: %s", error->message);

        cli_fail (result, what);
    }
    if (json_parser_get_root (parser) == NULL)
        cli_fail (result, "stdout is empty, expected JSON");
    return json_node_copy (json_parser_get_root (parser));
}

JsonNode *
vmr_harness_cli_json (VmrHarness *h, const gchar *first_arg, ...)
{
    g_autoptr (GPtrArray) args = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    va_list ap;

    va_start (ap, first_arg);
    args = collect_args (first_arg, ap);
    va_end (ap);
    g_ptr_array_insert (args, 0, "--json");
    result = vmr_harness_cliv (h, (const gchar *const *) args->pdata);
    vmr_cli_result_assert_ok (result);
    return vmr_cli_result_parse_json (result);
}

void
vmr_harness_attach (VmrHarness *h, const gchar *name)
{
    g_autoptr (JsonNode) domain
        = vmr_harness_cli_json (h, "attach", name, "--qmp", h->qemu_monitor, NULL);

    g_assert_true (JSON_NODE_HOLDS_OBJECT (domain));
    g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_node_object (domain), "name"), ==,
                     name);
}

gchar *
vmr_harness_migratev (VmrHarness *h, const gchar *domain, const gchar *disk, const gchar *dest,
                      const gchar *const *extra)
{
    g_autoptr (GPtrArray) args = g_ptr_array_new ();
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonNode) job = NULL;
    JsonObject *object;

    g_ptr_array_add (args, "--json");
    g_ptr_array_add (args, "migrate");
    g_ptr_array_add (args, (gpointer) domain);
    g_ptr_array_add (args, (gpointer) disk);
    g_ptr_array_add (args, (gpointer) dest);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add (args, (gpointer) extra[i]);
    g_ptr_array_add (args, NULL);
    result = vmr_harness_cliv (h, (const gchar *const *) args->pdata);
    vmr_cli_result_assert_ok (result);
    job = vmr_cli_result_parse_json (result);
    if (!JSON_NODE_HOLDS_OBJECT (job))
        cli_fail (result, "expected a job object on stdout");
    object = vmr_harness_json_node_object (job);
    g_assert_cmpstr (vmr_harness_json_string (object, "domain"), ==, domain);
    g_assert_cmpstr (vmr_harness_json_string (object, "destination"), ==, dest);
    return g_strdup (vmr_harness_json_string (object, "id"));
}

gchar *
vmr_harness_migrate (VmrHarness *h, const gchar *domain, const gchar *disk, const gchar *dest, ...)
{
    g_autoptr (GPtrArray) extra = NULL;
    va_list ap;

    va_start (ap, dest);
    extra = collect_args (va_arg (ap, const gchar *), ap);
    va_end (ap);
    return vmr_harness_migratev (h, domain, disk, dest, (const gchar *const *) extra->pdata);
}

void
vmr_harness_vm_clear (VmrHarnessVm *vm)
{
    g_clear_pointer (&vm->source, g_free);
    g_clear_pointer (&vm->expected, g_free);
    g_clear_pointer (&vm->dest, g_free);
    g_clear_pointer (&vm->writer, vmr_harness_writer_free);
}

void
vmr_harness_start_vm (VmrHarness *h, VmrHarnessVm *vm, gsize size, guint64 seed)
{
    VmrHarnessDisk disk = { .id = "disk0", .format = "raw", .scsi = TRUE };

    vm->source = vmr_harness_create_image (h, "source.raw", "raw", size, seed);
    vm->expected = vmr_harness_expected_path (vm->source);
    vm->dest = vmr_harness_path (h, "dest.raw");
    disk.path = vm->source;
    vmr_harness_start_qemu (h, &disk, 1);
    vm->writer = vmr_harness_writer_new (h, "disk0", vm->expected, seed ^ 0x5eed);
    vmr_harness_attach (h, "vm");
}

gchar *
vmr_harness_start_slow_migration (VmrHarness *h, VmrHarnessVm *vm, const gchar *extra)
{
    g_autofree gchar *id = vmr_harness_migrate (h, "vm", "disk0", vm->dest, "--speed",
                                                VMR_HARNESS_SLOW_SPEED, extra, NULL);
    g_autoptr (JsonObject) job = vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);

    return g_steal_pointer (&id);
}

/* ---- jobs ---- */

JsonObject *
vmr_harness_get_job (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;

    g_assert_nonnull (h->control);
    json_object_set_string_member (args, "id", id);
    reply = vmr_qmp_client_execute_sync (h->control, "query-job", args, 10000, &error);
    if (error != NULL)
        vmr_fail ("query-job %s on the daemon's socket: %s", id, error->message);
    g_assert_true (JSON_NODE_HOLDS_OBJECT (reply));
    return json_object_ref (vmr_harness_json_node_object (reply));
}

JsonArray *
vmr_harness_job_series_points (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;

    g_assert_nonnull (h->control);
    json_object_set_string_member (args, "id", id);
    reply = vmr_qmp_client_execute_sync (h->control, "query-job-series", args, 10000, &error);
    if (error != NULL)
        vmr_fail ("query-job-series %s on the daemon's socket: %s", id, error->message);
    return json_array_ref (vmr_harness_json_array (vmr_harness_json_node_object (reply), "points"));
}

JsonArray *
vmr_harness_wait_job_samples (VmrHarness *h, const gchar *id, guint n)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;
    g_autoptr (JsonArray) first = vmr_harness_job_series_points (h, id);
    guint from = json_array_get_length (first);

    while (TRUE) {
        g_autoptr (JsonArray) points = vmr_harness_job_series_points (h, id);
        guint length = json_array_get_length (points);

        if (length >= from + n) {
            JsonArray *newest = json_array_sized_new (n);

            for (guint i = length - n; i < length; i++)
                json_array_add_element (newest, json_array_dup_element (points, i));
            return newest;
        }
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s: %u points of its series after %d s, waiting for %u", id,
                      length - MIN (length, from), VMR_HARNESS_JOB_TIMEOUT_S, n);
        g_usleep (VMR_HARNESS_POLL_INTERVAL_US);
    }
}

void
vmr_harness_assert_samples_state (JsonArray *points, const gchar *state)
{
    for (guint i = 0; i < json_array_get_length (points); i++)
        g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_element (points, i), "state"),
                         ==, state);
}

gboolean
vmr_harness_verification_ended (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

    return !vmr_harness_json_is_null (job, "verification")
           && g_strcmp0 (
                  vmr_harness_json_string (vmr_harness_json_object (job, "verification"), "state"),
                  "running")
                  != 0;
}

void
vmr_harness_assert_verify_failed_at (VmrHarness *h, const gchar *id, gint64 offset, gint64 length)
{
    g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);
    JsonObject *v = vmr_harness_json_object (job, "verification");
    JsonObject *first;

    g_assert_cmpstr (vmr_json_job_state (job), ==, "completed");
    g_assert_cmpstr (vmr_harness_json_string (v, "state"), ==, "failed");
    g_assert_cmpint (vmr_harness_json_int (v, "mismatched-ranges"), ==, 1);
    g_assert_cmpint (vmr_harness_json_int (v, "mismatched"), ==, length);
    first = vmr_harness_json_element (vmr_harness_json_array (v, "ranges"), 0);
    g_assert_cmpint (vmr_harness_json_int (first, "offset"), ==, offset);
    g_assert_cmpint (vmr_harness_json_int (first, "length"), ==, length);
}

static gboolean
strv_has (const gchar *const *strv, const gchar *str)
{
    return g_strv_contains (strv, str);
}

void
vmr_harness_wait_job_count (VmrHarness *h, guint n)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    while (vmr_harness_count_jobs (h) < n) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("the daemon knows %u jobs after %d s, waiting for %u",
                      vmr_harness_count_jobs (h), VMR_HARNESS_JOB_TIMEOUT_S, n);
        g_usleep (20 * 1000);
    }
}

JsonObject *
vmr_harness_wait_job (VmrHarness *h, const gchar *id, const gchar *state, guint timeout_s)
{
    static const gchar *const terminal[] = { "completed", "failed", "cancelled", NULL };
    static const gchar *const before_sync[] = { "queued", "copying", "paused", NULL };
    static const gchar *const after_sync[] = { "synced", "pivoting", "completed", NULL };
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_TIME_SPAN_SECOND;

    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);
        const gchar *now = vmr_harness_json_string (job, "state");

        if (g_strcmp0 (now, state) == 0)
            return g_steal_pointer (&job);
        const gchar *reason = vmr_json_get_string (job, "reason");
        if (strv_has (terminal, now))
            vmr_fail ("job %s ended %s (reason: %s) while waiting for %s", id, now, reason, state);
        if (strv_has (before_sync, state) && strv_has (after_sync, now))
            vmr_fail ("job %s is already %s while waiting for %s: the copy was too fast", id, now,
                      state);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s is still %s after %u s, waiting for %s", id, now, timeout_s, state);
        g_usleep (VMR_HARNESS_POLL_INTERVAL_US);
    }
}

guint
vmr_harness_count_jobs (VmrHarness *h)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);

    g_assert_true (JSON_NODE_HOLDS_ARRAY (jobs));
    return json_array_get_length (vmr_harness_json_node_array (jobs));
}

void
vmr_harness_assert_daemon_serving (VmrHarness *h)
{
    g_autoptr (VmrCliResult) version = vmr_harness_cli (h, "version", NULL);
    g_autoptr (VmrCliResult) jobs = vmr_harness_cli (h, "jobs", NULL);

    vmr_cli_result_assert_ok (version);
    vmr_cli_result_assert_ok (jobs);
    g_assert_nonnull (h->daemon);
    g_assert_nonnull (g_subprocess_get_identifier (h->daemon));
}

JsonObject *
vmr_harness_job_command (VmrHarness *h, const gchar *command, const gchar *id, const gchar *arg)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, command, id, arg, NULL);

    if (!JSON_NODE_HOLDS_OBJECT (node))
        vmr_fail ("`%s %s` printed no job object", command, id);
    g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_node_object (node), "id"), ==, id);
    return json_object_ref (vmr_harness_json_node_object (node));
}

JsonObject *
vmr_harness_wait_adopted (VmrHarness *h, const gchar *id)
{
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_USEC_PER_SEC;

    while (TRUE) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

        if (!vmr_json_job_orphaned (job))
            return g_steal_pointer (&job);
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("job %s is still orphaned %d s after its domain came back", id,
                      VMR_HARNESS_JOB_TIMEOUT_S);
        g_usleep (VMR_HARNESS_POLL_INTERVAL_US);
    }
}

/* ---- job objects ---- */

const gchar *
vmr_json_job_state (JsonObject *job)
{
    return vmr_harness_json_string (job, "state");
}

const gchar *
vmr_json_job_reason (JsonObject *job)
{
    JsonNode *reason = json_object_get_member (job, "reason");

    if (reason == NULL || JSON_NODE_HOLDS_NULL (reason))
        return NULL;
    return vmr_harness_json_string (job, "reason");
}

gboolean
vmr_json_job_orphaned (JsonObject *job)
{
    return json_object_has_member (job, "orphaned") && vmr_harness_json_bool (job, "orphaned");
}

/* the entry of @history for the first transition to @state, NULL when none */
static JsonObject *
find_transition (JsonArray *history, const gchar *state)
{
    for (guint i = 0; history != NULL && i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_harness_json_element (history, i);

        if (g_strcmp0 (vmr_harness_json_string (entry, "state"), state) == 0)
            return entry;
    }
    return NULL;
}

gint64
vmr_json_job_time_of (JsonObject *job, const gchar *state)
{
    JsonArray *history = vmr_harness_json_array (job, "history");
    JsonObject *entry;

    g_assert_nonnull (history);
    entry = find_transition (history, state);
    if (entry == NULL)
        vmr_fail ("job %s never was %s", vmr_harness_json_string (job, "id"), state);
    return vmr_harness_json_int (entry, "time");
}

gint64
vmr_json_job_first_time (JsonObject *job, const gchar *state)
{
    JsonObject *entry = find_transition (vmr_json_get_array (job, "history"), state);

    return entry != NULL ? vmr_harness_json_int (entry, "time") : 0;
}
