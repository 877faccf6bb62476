#define G_LOG_DOMAIN "vmr-cli"

#include "cli-verify.h"

#include "cli-json.h"
#include "cli-wait.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

gboolean
vmr_cli_verify_requested (const VmrCliJob *job)
{
    return vmr_json_bool_or (vmr_json_node_object (job->node), "verify", FALSE);
}

/* "0+4096, 1048576+8192" of the ranges kept, " (N more)" after */
static gchar *
describe_ranges (JsonObject *verification)
{
    JsonArray *ranges = vmr_json_get_array (verification, "ranges");
    guint n_kept = ranges != NULL ? json_array_get_length (ranges) : 0;
    guint64 n_all = vmr_json_uint_or (verification, "mismatched-ranges", n_kept);
    GString *text = g_string_new (NULL);

    for (guint i = 0; i < n_kept; i++) {
        JsonObject *range = vmr_json_array_object (ranges, i);

        g_string_append_printf (text, "%s%" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT,
                                i > 0 ? ", " : "", vmr_json_uint_or (range, "offset", 0),
                                vmr_json_uint_or (range, "length", 0));
    }
    if (n_all > n_kept)
        g_string_append_printf (text, " (%" G_GUINT64_FORMAT " more)", n_all - n_kept);
    return g_string_free (text, FALSE);
}

/* prints a passed verification; the error of any other */
static gboolean
report (const VmrCliJob *job, JsonObject *verification, gboolean json, GError **error)
{
    const gchar *state = vmr_json_get_string (verification, "state");
    g_autofree gchar *compared
        = vmr_units_format_bytes (vmr_json_uint_or (verification, "compared", 0));
    g_autofree gchar *zero = vmr_units_format_bytes (vmr_json_uint_or (verification, "zero", 0));
    g_autofree gchar *written
        = vmr_units_format_bytes (vmr_json_uint_or (verification, "written", 0));

    if (g_strcmp0 (state, "failed") == 0) {
        g_autofree gchar *ranges = describe_ranges (verification);
        g_autofree gchar *bytes
            = vmr_units_format_bytes (vmr_json_uint_or (verification, "mismatched", 0));

        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "job %s: verify failed: %s differs from the old source %s in %s at "
                     "(offset+length, bytes) %s; the old source is kept",
                     job->id, job->destination != NULL ? job->destination : "the destination",
                     job->source != NULL ? job->source : "", bytes, ranges);
        return FALSE;
    }
    if (g_strcmp0 (state, "passed") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "job %s: the copy could not be verified: %s", job->id,
                     vmr_json_get_string (verification, "error") != NULL
                         ? vmr_json_get_string (verification, "error")
                         : "no result");
        return FALSE;
    }
    if (!json)
        g_print ("Job %s verified: %s equals %s (%s compared, %s zero on both, %s written by the "
                 "guest since the pivot)\n",
                 job->id, job->destination != NULL ? job->destination : "the destination",
                 job->source != NULL ? job->source : "the old source", compared, zero, written);
    return TRUE;
}

gboolean
vmr_cli_verify_wait (VmrCliSession *session, const gchar *id, JsonNode **out_job, GError **error)
{
    VmrQmpClient *client = vmr_cli_session_get_client (session, error);
    g_autoptr (VmrCliWaitPacer) pacer = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();

    if (client == NULL)
        return FALSE;
    pacer = vmr_cli_wait_pacer_new (client, id);
    json_object_set_string_member (arguments, "id", id);
    if (!session->json)
        g_print ("Job %s: verifying the copy against its old source\n", id);
    while (vmr_cli_wait_pacer_next (pacer)) {
        g_autoptr (JsonNode) reply = vmr_cli_session_call (session, "query-job", arguments, error);
        g_autoptr (VmrCliJob) job = NULL;
        JsonObject *verification;

        if (reply == NULL) {
            g_prefix_error (error, "lost track of the verification of job %s: ", id);
            return FALSE;
        }
        job = vmr_cli_job_new (reply, "query-job", error);
        if (job == NULL)
            return FALSE;
        verification = vmr_json_get_object (vmr_json_node_object (job->node), "verification");
        if (verification == NULL
            || g_strcmp0 (vmr_json_get_string (verification, "state"), "running") == 0)
            continue;
        if (out_job != NULL)
            *out_job = json_node_ref (job->node);
        return report (job, verification, session->json, error);
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                 "interrupted: the verification of job %s goes on; see 'virt-mirror job %s'", id,
                 id);
    return FALSE;
}

gboolean
vmr_cli_cmd_verify (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *what = NULL;
    g_autoptr (JsonNode) final = NULL;
    gboolean ok;

    if (!vmr_cli_command_parse (cmd, session, NULL, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    json_object_set_string_member (arguments, "id", args[0]);
    what = g_strdup_printf ("verify job %s", args[0]);
    /* the reply comes once it runs; the JSON printed is the final job */
    reply = vmr_cli_session_call (session, "job-verify", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot %s: ", what);
        return FALSE;
    }
    ok = vmr_cli_verify_wait (session, args[0], &final, error);
    if (ok && session->json && final != NULL)
        vmr_cli_json_print (final);
    return ok;
}
