#define G_LOG_DOMAIN "vmr-cli"

#include "cli-job-commands.h"

#include "cli-json.h"
#include "cli-output.h"
#include "cli-wait.h"

static gboolean
check_format (const VmrCliCommand *cmd, const gchar *format, GError **error)
{
    if (format == NULL || g_str_equal (format, "raw") || g_str_equal (format, "qcow2"))
        return TRUE;
    vmr_cli_command_set_usage_error (error, cmd, "bad --format '%s': use raw or qcow2", format);
    return FALSE;
}

static JsonObject *
new_migrate_arguments (gchar **args, const gchar *destination, const gchar *format, gboolean reuse,
                       const gchar *speed_text, guint64 speed, gboolean manual_pivot)
{
    JsonObject *arguments = json_object_new ();

    json_object_set_string_member (arguments, "domain", args[0]);
    json_object_set_string_member (arguments, "disk", args[1]);
    json_object_set_string_member (arguments, "destination", destination);
    if (format != NULL)
        json_object_set_string_member (arguments, "format", format);
    if (reuse)
        json_object_set_boolean_member (arguments, "reuse", TRUE);
    if (speed_text != NULL)
        json_object_set_int_member (arguments, "speed", (gint64) speed);
    if (manual_pivot)
        json_object_set_boolean_member (arguments, "manual-pivot", TRUE);
    return arguments;
}

static gboolean
wait_for_job (VmrCliSession *session, const VmrCliJob *job, GError **error)
{
    g_autoptr (VmrCliJob) final = vmr_cli_wait_job (session, job, error);
    g_autofree gchar *disk = NULL;

    if (final == NULL)
        return FALSE;
    if (session->json) {
        vmr_cli_json_print (final->node);
        return TRUE;
    }
    disk = vmr_cli_output_describe_disk (final);
    g_print ("Job %s completed: %s is now on %s\n", final->id, disk,
             final->destination != NULL ? final->destination : "its destination");
    return TRUE;
}

gboolean
vmr_cli_cmd_migrate (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_autofree gchar *format = NULL;
    g_autofree gchar *speed_text = NULL;
    gboolean reuse = FALSE;
    gboolean manual_pivot = FALSE;
    gboolean wait = FALSE;
    guint64 speed = 0;
    g_auto (GStrv) args = NULL;
    g_autofree gchar *destination = NULL;
    g_autoptr (JsonObject) arguments = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (VmrCliJob) job = NULL;
    g_autofree gchar *disk = NULL;
    const GOptionEntry entries[] = {
        { "format", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &format,
          "Image format of DEST: raw (the default) or qcow2", "FORMAT" },
        { "reuse", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &reuse,
          "Copy into an existing DEST instead of creating it", NULL },
        { "speed", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_STRING, &speed_text,
          "Limit the copy rate (bytes/s, K/M/G suffixes, 0 = unlimited)", "RATE" },
        { "manual-pivot", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &manual_pivot,
          "Stay synced until 'virt-mirror pivot ID' instead of switching over", NULL },
        { "wait", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_NONE, &wait,
          "Follow the job until it ends; exit 0 only if it completed", NULL },
        G_OPTION_ENTRY_NULL,
    };

    if (!vmr_cli_command_parse (cmd, session, entries, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (!check_format (cmd, format, error))
        return FALSE;
    if (speed_text != NULL && !vmr_cli_command_parse_rate (cmd, speed_text, &speed, error))
        return FALSE;

    /* the daemon has its own working directory */
    destination = g_canonicalize_filename (args[2], NULL);
    arguments
        = new_migrate_arguments (args, destination, format, reuse, speed_text, speed, manual_pivot);
    reply = vmr_cli_session_call (session, "migrate", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot migrate %s of %s: ", args[1], args[0]);
        return FALSE;
    }
    if (session->json && !wait) {
        vmr_cli_json_print (reply);
        return TRUE;
    }
    job = vmr_cli_job_new (reply, "migrate", error);
    if (job == NULL)
        return FALSE;
    if (!session->json) {
        disk = vmr_cli_output_describe_disk (job);
        g_print ("Job %s started: %s -> %s\n", job->id, disk,
                 job->destination != NULL ? job->destination : destination);
    }
    if (!wait)
        return TRUE;
    return wait_for_job (session, job, error);
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
    reply = vmr_cli_session_call (session, "query-jobs", NULL, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot list jobs: ");
        return FALSE;
    }
    if (session->json) {
        vmr_cli_json_print (reply);
        return TRUE;
    }
    return vmr_cli_output_jobs (reply, error);
}

/*
 * Runs @command on the job args[0], with the extra members of @arguments, and
 * prints the reply in JSON mode. Returns the reply, or NULL with @error.
 */
static JsonNode *
call_job_command (VmrCliSession *session, gchar **args, const gchar *command, JsonObject *arguments,
                  const gchar *what, GError **error)
{
    JsonNode *reply;

    json_object_set_string_member (arguments, "id", args[0]);
    reply = vmr_cli_session_call (session, command, arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot %s job %s: ", what, args[0]);
        return NULL;
    }
    if (session->json)
        vmr_cli_json_print (reply);
    return reply;
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

static gboolean
run_simple_job_command (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv,
                        const gchar *command, const gchar *what, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    reply = call_job_command (session, args, command, arguments, what, error);
    if (reply == NULL)
        return FALSE;
    if (!session->json)
        print_confirmation (reply, args[0], command);
    return TRUE;
}

gboolean
vmr_cli_cmd_pause (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    return run_simple_job_command (cmd, session, argv, "job-pause", "pause", error);
}

gboolean
vmr_cli_cmd_resume (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    return run_simple_job_command (cmd, session, argv, "job-resume", "resume", error);
}

gboolean
vmr_cli_cmd_cancel (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    return run_simple_job_command (cmd, session, argv, "job-cancel", "cancel", error);
}

gboolean
vmr_cli_cmd_pivot (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    return run_simple_job_command (cmd, session, argv, "job-pivot", "pivot", error);
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
    speed_text = vmr_cli_format_speed (speed);
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
