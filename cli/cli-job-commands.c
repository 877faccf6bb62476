#define G_LOG_DOMAIN "vmr-cli"

#include "cli-job-commands.h"

#include "cli-json.h"
#include "cli-output.h"
#include "cli-verify.h"
#include "cli-wait.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* the options of migrate, which apply to every disk */
typedef struct {
    const gchar *format; /* NULL: the daemon's default */
    gboolean reuse;
    const gchar *speed_text; /* NULL when --speed was not given */
    guint64 speed;           /* bytes/s, 0 = unlimited */
    gboolean manual_pivot;
    gboolean verify;
    gboolean wait;
    gchar *tls_creds; /* absolute, NULL when --tls-creds was not given */
} MigrateOptions;

/*
 * DEST as the daemon takes it: an NBD URI as it is, a path made absolute
 * (the daemon has its own working directory)
 */
static gchar *
destination_arg (const gchar *dest)
{
    if (g_uri_peek_scheme (dest) != NULL)
        return g_strdup (dest);
    return g_canonicalize_filename (dest, NULL);
}

static void
add_migrate_options (JsonObject *arguments, const MigrateOptions *options)
{
    if (options->format != NULL)
        json_object_set_string_member (arguments, "format", options->format);
    if (options->reuse)
        json_object_set_boolean_member (arguments, "reuse", TRUE);
    if (options->speed_text != NULL)
        json_object_set_int_member (arguments, "speed", (gint64) options->speed);
    if (options->manual_pivot)
        json_object_set_boolean_member (arguments, "manual-pivot", TRUE);
    if (options->tls_creds != NULL)
        json_object_set_string_member (arguments, "tls-creds", options->tls_creds);
    if (options->verify)
        json_object_set_boolean_member (arguments, "verify", TRUE);
}

static gboolean
wait_for_job (VmrCliSession *session, const VmrCliJob *job, GError **error)
{
    g_autoptr (VmrCliJob) final = vmr_cli_wait_job (session, job, error);
    g_autofree gchar *disk = NULL;

    if (final == NULL)
        return FALSE;
    if (!session->json) {
        disk = vmr_cli_output_describe_disk (final);
        g_print ("Job %s completed: %s is now on %s\n", final->id, disk,
                 final->destination != NULL ? final->destination : "its destination");
    }
    /* in JSON mode the job printed is the verified one */
    if (vmr_cli_verify_requested (final)) {
        g_autoptr (JsonNode) verified = NULL;
        gboolean ok = vmr_cli_verify_wait (session, final->id, &verified, error);

        if (ok && session->json && verified != NULL)
            vmr_cli_json_print (verified);
        return ok;
    }
    if (session->json)
        vmr_cli_json_print (final->node);
    return TRUE;
}

static void
print_started (const VmrCliJob *job, const gchar *destination)
{
    g_autofree gchar *disk = vmr_cli_output_describe_disk (job);

    g_print ("Job %s started: %s -> %s\n", job->id, disk,
             job->destination != NULL ? job->destination : destination);
}

static gboolean
migrate_one (VmrCliSession *session, gchar **args, const MigrateOptions *options, GError **error)
{
    g_autofree gchar *destination = destination_arg (args[2]);
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (VmrCliJob) job = NULL;

    json_object_set_string_member (arguments, "domain", args[0]);
    json_object_set_string_member (arguments, "disk", args[1]);
    json_object_set_string_member (arguments, "destination", destination);
    add_migrate_options (arguments, options);
    reply = vmr_cli_session_call (session, "migrate", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot migrate %s of %s: ", args[1], args[0]);
        return FALSE;
    }
    if (session->json && !options->wait) {
        vmr_cli_json_print (reply);
        return TRUE;
    }
    job = vmr_cli_job_new (reply, "migrate", error);
    if (job == NULL)
        return FALSE;
    if (!session->json)
        print_started (job, destination);
    if (!options->wait)
        return TRUE;
    return wait_for_job (session, job, error);
}

/* the job @id as it is now, or NULL when the daemon cannot say */
static VmrCliJob *
query_job (VmrCliSession *session, const gchar *id)
{
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    json_object_set_string_member (arguments, "id", id);
    reply = vmr_cli_session_call (session, "query-job", arguments, NULL);
    if (reply == NULL)
        return NULL;
    return vmr_cli_job_new (reply, "query-job", NULL);
}

/*
 * Follows every member of the group @group_id in turn: the daemon pivots them
 * together, so the first to complete is soon followed by the others. Prints
 * the final {"group", "jobs"} in JSON mode; sets one error that lists every
 * member that did not complete.
 */
static gboolean
wait_for_group (VmrCliSession *session, const gchar *group_id, GPtrArray *jobs, GError **error)
{
    g_autoptr (JsonArray) final_jobs = json_array_new ();
    g_autoptr (GPtrArray) final_nodes
        = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
    g_autoptr (GString) failures = g_string_new (NULL);
    g_autoptr (JsonObject) result = NULL;
    g_autoptr (JsonNode) result_node = NULL;

    for (guint i = 0; i < jobs->len; i++) {
        const VmrCliJob *job = g_ptr_array_index (jobs, i);
        g_autoptr (GError) local_error = NULL;
        g_autoptr (VmrCliJob) final = vmr_cli_wait_job (session, job, &local_error);
        g_autofree gchar *disk = NULL;

        if (final != NULL) {
            g_ptr_array_add (final_nodes, json_node_ref (final->node));
            if (!session->json) {
                disk = vmr_cli_output_describe_disk (final);
                g_print ("Job %s completed: %s is now on %s\n", final->id, disk,
                         final->destination != NULL ? final->destination : "its destination");
            }
            continue;
        }
        /* an interrupted or cut-off wait leaves the job running: stop there */
        final = query_job (session, job->id);
        if (final == NULL || !vmr_cli_job_is_finished (final)) {
            g_propagate_error (error, g_steal_pointer (&local_error));
            return FALSE;
        }
        g_ptr_array_add (final_nodes, json_node_ref (final->node));
        g_string_append_printf (failures, "\n%s", local_error->message);
    }
    if (failures->len > 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "group %s did not complete:%s", group_id,
                     failures->str);
        return FALSE;
    }
    /* the members verify one after the other in QEMU: wait for each */
    for (guint i = 0; i < final_nodes->len; i++) {
        g_autoptr (VmrCliJob) member
            = vmr_cli_job_new (g_ptr_array_index (final_nodes, i), "query-job", NULL);
        g_autoptr (GError) local_error = NULL;
        JsonNode *verified = NULL;

        if (member == NULL || !vmr_cli_verify_requested (member))
            continue;
        if (!vmr_cli_verify_wait (session, member->id, &verified, &local_error))
            g_string_append_printf (failures, "\n%s", local_error->message);
        if (verified != NULL) {
            json_node_unref (g_ptr_array_index (final_nodes, i));
            final_nodes->pdata[i] = verified;
        }
    }
    for (guint i = 0; i < final_nodes->len; i++)
        json_array_add_element (final_jobs, json_node_ref (g_ptr_array_index (final_nodes, i)));
    if (failures->len > 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "group %s did not verify:%s", group_id,
                     failures->str);
        return FALSE;
    }
    if (!session->json)
        return TRUE;
    result = json_object_new ();
    json_object_set_string_member (result, "group", group_id);
    json_object_set_array_member (result, "jobs", g_steal_pointer (&final_jobs));
    result_node = json_node_init_object (json_node_alloc (), result);
    vmr_cli_json_print (result_node);
    return TRUE;
}

/* "disk0, disk1" of the DISK DEST pairs after the domain in @args */
static gchar *
join_disk_names (gchar **args)
{
    g_autoptr (GString) names = g_string_new (NULL);

    for (guint i = 1; args[i] != NULL && args[i + 1] != NULL; i += 2)
        g_string_append_printf (names, "%s%s", i > 1 ? ", " : "", args[i]);
    return g_string_free (g_steal_pointer (&names), FALSE);
}

/* the group form: args[1..] are two or more DISK DEST pairs */
static gboolean
migrate_group (VmrCliSession *session, gchar **args, const MigrateOptions *options, GError **error)
{
    g_autoptr (JsonObject) arguments = json_object_new ();
    JsonArray *disks = json_array_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GPtrArray) jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_cli_job_free);
    JsonObject *obj;
    JsonArray *job_nodes;
    const gchar *group_id;

    for (guint i = 1; args[i] != NULL && args[i + 1] != NULL; i += 2) {
        JsonObject *member = json_object_new ();
        g_autofree gchar *destination = destination_arg (args[i + 1]);

        json_object_set_string_member (member, "disk", args[i]);
        json_object_set_string_member (member, "destination", destination);
        json_array_add_object_element (disks, member);
    }
    json_object_set_string_member (arguments, "domain", args[0]);
    json_object_set_array_member (arguments, "disks", disks);
    add_migrate_options (arguments, options);
    reply = vmr_cli_session_call (session, "migrate", arguments, error);
    if (reply == NULL) {
        g_autofree gchar *names = join_disk_names (args);

        g_prefix_error (error, "cannot migrate %s of %s: ", names, args[0]);
        return FALSE;
    }
    if (session->json && !options->wait) {
        vmr_cli_json_print (reply);
        return TRUE;
    }
    obj = vmr_cli_json_expect_object (reply, "migrate", error);
    if (obj == NULL)
        return FALSE;
    group_id = vmr_json_get_string (obj, "group");
    job_nodes = vmr_json_get_array (obj, "jobs");
    if (group_id == NULL || job_nodes == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to 'migrate' from virt-mirrord: a group without "
                     "group or jobs");
        return FALSE;
    }
    for (guint i = 0; i < json_array_get_length (job_nodes); i++) {
        VmrCliJob *job = vmr_cli_job_new (json_array_get_element (job_nodes, i), "migrate", error);

        if (job == NULL)
            return FALSE;
        g_ptr_array_add (jobs, job);
        if (!session->json)
            print_started (job, "its destination");
    }
    if (!options->wait)
        return TRUE;
    return wait_for_group (session, group_id, jobs, error);
}

gboolean
vmr_cli_cmd_migrate (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_autofree gchar *format = NULL;
    g_autofree gchar *speed_text = NULL;
    g_autofree gchar *tls_creds = NULL;
    MigrateOptions options = { 0 };
    guint n_args;
    g_auto (GStrv) args = NULL;
    const GOptionEntry entries[] = {
        { "format", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &format,
          "Image format of DEST: raw (the default) or qcow2", "FORMAT" },
        { "reuse", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &options.reuse,
          "Copy into an existing DEST instead of creating it", NULL },
        { "speed", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &speed_text,
          "Limit the copy rate (bytes/s, K/M/G suffixes, 0 = unlimited)", "RATE" },
        { "manual-pivot", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &options.manual_pivot,
          "Stay synced until 'virt-mirror pivot ID' instead of switching over", NULL },
        { "verify", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &options.verify,
          "After the pivot, compare the old source with the destination", NULL },
        { "wait", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &options.wait,
          "Follow the jobs until they end; exit 0 only if all completed", NULL },
        { "tls-creds", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &tls_creds,
          "x509 files (ca-cert.pem, client-cert.pem, client-key.pem) for nbds:// DESTs", "DIR" },
        G_OPTION_ENTRY_NULL,
    };
    g_autofree gchar *tls_creds_abs = NULL;

    if (!vmr_cli_command_parse (cmd, session, entries, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    n_args = g_strv_length (args);
    /* DOMAIN, then DISK DEST pairs */
    if (n_args % 2 == 0) {
        vmr_cli_command_set_usage_error (error, cmd,
                                         "missing DEST after DISK '%s': give a DEST for every DISK",
                                         args[n_args - 1]);
        return FALSE;
    }
    if (!vmr_cli_command_check_format (cmd, format, error))
        return FALSE;
    if (speed_text != NULL && !vmr_cli_command_parse_rate (cmd, speed_text, &options.speed, error))
        return FALSE;

    options.format = format;
    options.speed_text = speed_text;
    if (tls_creds != NULL)
        options.tls_creds = tls_creds_abs = g_canonicalize_filename (tls_creds, NULL);
    if (n_args == 3)
        return migrate_one (session, args, &options, error);
    return migrate_group (session, args, &options, error);
}

gboolean
vmr_cli_cmd_jobs (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = vmr_cli_command_call (session, "query-jobs", NULL, "list jobs", error);
    if (reply == NULL)
        return FALSE;
    return session->json || vmr_cli_output_jobs (reply, error);
}

/*
 * Runs @command on the job args[0], with the extra members of @arguments, and
 * prints the reply in JSON mode. Returns the reply, or NULL with @error.
 */
static JsonNode *
call_job_command (VmrCliSession *session, gchar **args, const gchar *command, JsonObject *arguments,
                  const gchar *what, GError **error)
{
    g_autofree gchar *what_job = g_strdup_printf ("%s job %s", what, args[0]);

    json_object_set_string_member (arguments, "id", args[0]);
    return vmr_cli_command_call (session, command, arguments, what_job, error);
}

gboolean
vmr_cli_cmd_job (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (VmrCliJob) job = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = call_job_command (session, args, "query-job", arguments, "show", error);
    if (reply == NULL)
        return FALSE;
    if (session->json)
        return TRUE;
    job = vmr_cli_job_new (reply, "query-job", error);
    if (job == NULL)
        return FALSE;
    vmr_cli_output_job (job);
    return TRUE;
}

/*
 * The confirming line of a job command: the reply is the job, but the
 * command did succeed even when the reply is not what we expect.
 */
static void
print_confirmation (JsonNode *reply, const gchar *id, const gchar *command)
{
    g_autoptr (VmrCliJob) job = vmr_cli_job_new (reply, command, NULL);
    g_autofree gchar *disk = job != NULL ? vmr_cli_output_describe_disk (job) : NULL;
    g_autofree gchar *percent = job != NULL ? vmr_cli_job_format_percent (job) : NULL;

    if (g_str_equal (command, "job-pause")) {
        if (percent != NULL)
            g_print ("Job %s paused at %s\n", id, percent);
        else
            g_print ("Job %s paused\n", id);
    } else if (g_str_equal (command, "job-resume")) {
        g_print ("Job %s resumed (%s)\n", id, job != NULL ? job->state : "?");
    } else if (g_str_equal (command, "job-cancel")) {
        if (job != NULL && job->source != NULL)
            g_print ("Job %s cancelled: %s stays on %s\n", id, disk, job->source);
        else
            g_print ("Job %s cancelled\n", id);
    } else if (g_str_equal (command, "job-pivot")) {
        if (job != NULL && job->destination != NULL)
            g_print ("Job %s pivot requested: %s -> %s (%s)\n", id, disk, job->destination,
                     job->state);
        else
            g_print ("Job %s pivot requested\n", id);
    }
}

gboolean
vmr_cli_cmd_job_step (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                      GError **error)
{
    g_autofree gchar *command = g_strconcat ("job-", cmd->name, NULL);
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = call_job_command (session, args, command, arguments, cmd->name, error);
    if (reply == NULL)
        return FALSE;
    if (!session->json)
        print_confirmation (reply, args[0], command);
    return TRUE;
}

gboolean
vmr_cli_cmd_set_speed (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                       GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *speed_text = NULL;
    guint64 speed = 0;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (!vmr_cli_command_parse_rate (cmd, args[1], &speed, error))
        return FALSE;
    json_object_set_int_member (arguments, "speed", (gint64) speed);
    reply = call_job_command (session, args, "job-set-speed", arguments, "set the speed of", error);
    if (reply == NULL)
        return FALSE;
    if (session->json)
        return TRUE;
    speed_text = vmr_units_format_speed (speed);
    if (speed == 0)
        g_print ("Job %s speed limit removed (unlimited)\n", args[0]);
    else
        g_print ("Job %s speed limit set to %s\n", args[0], speed_text);
    return TRUE;
}

gboolean
vmr_cli_cmd_set_copy_mode (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                           GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    /* the daemon checks the mode: it knows what QEMU can do */
    json_object_set_string_member (arguments, "mode", args[1]);
    reply = call_job_command (session, args, "job-set-copy-mode", arguments, "set the copy mode of",
                              error);
    if (reply == NULL)
        return FALSE;
    if (!session->json)
        g_print ("Job %s copy mode set to write-blocking\n", args[0]);
    return TRUE;
}
