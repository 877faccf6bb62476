#define G_LOG_DOMAIN "vmr-cli"

#include "cli-report.h"

#include "cli-json.h"
#include "cli-report-data.h"
#include "cli-report-svg.h"
#include "units.h"
#include "vmr-error.h"

/* writes the picture of @report to @path atomically: a failure leaves what was there */
static gboolean
write_svg (const VmrReport *report, const gchar *path, GError **error)
{
    g_autofree gchar *svg = NULL;
    g_autoptr (GError) local_error = NULL;

    if (report->points->len == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "job %s has no timeline to draw (it ended before its first sample, or an "
                     "older daemon ran it)",
                     report->job->id);
        return FALSE;
    }
    svg = vmr_report_to_svg (report);
    if (!g_file_set_contents_full (path, svg, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                   &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot write the report of job %s: %s",
                     report->job->id, local_error->message);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_cli_cmd_report (const VmrCliCommand *cmd, VmrCliSession *session, gchar **argv, GError **error)
{
    g_autofree gchar *svg_path = NULL;
    const GOptionEntry entries[] = {
        { "svg", 0, G_OPTION_FLAG_NONE, G_OPTION_ARG_FILENAME, &svg_path,
          "Draw the job's timeline into FILE as SVG", "FILE" },
        { NULL },
    };
    g_auto (GStrv) args = NULL;
    g_autoptr (JsonObject) arguments = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (VmrReport) report = NULL;

    if (!vmr_cli_command_parse (cmd, session, entries, argv, &args, error))
        return FALSE;
    if (args == NULL)
        return TRUE;
    if (svg_path != NULL && *svg_path == '\0') {
        vmr_cli_command_set_usage_error (error, cmd, "--svg needs a file name");
        return FALSE;
    }
    json_object_set_string_member (arguments, "id", args[0]);
    /* not printed as it comes: with --svg, a file that cannot be written is the one line */
    reply = vmr_cli_session_call (session, "query-job-series", arguments, error);
    if (reply == NULL) {
        g_prefix_error (error, "cannot report on job %s: ", args[0]);
        return FALSE;
    }
    report = vmr_report_new (reply, error);
    if (report == NULL)
        return FALSE;
    if (svg_path != NULL && !write_svg (report, svg_path, error))
        return FALSE;
    if (session->json) {
        vmr_cli_json_print (reply);
    } else if (svg_path != NULL) {
        g_autofree gchar *duration
            = vmr_units_format_duration ((gint64) (report->duration * G_USEC_PER_SEC));

        g_print ("Report of job %s written to %s (%s, %u samples, %u policy bands)\n",
                 report->job->id, svg_path, duration, report->points->len, report->bands->len);
    } else {
        g_autofree gchar *summary = vmr_report_format_summary (report);

        g_print ("%s", summary);
    }
    return TRUE;
}
