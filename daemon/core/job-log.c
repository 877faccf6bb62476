#define G_LOG_DOMAIN "vmr-daemon"

#include "job-log.h"

void
vmr_job_log (const gchar *log_domain, GLogLevelFlags level, const gchar *code_file,
             const gchar *code_line, const gchar *code_func, VmrJob *job, const gchar *format, ...)
{
    g_autofree gchar *text = NULL;
    va_list args;

    va_start (args, format);
    text = g_strdup_vprintf (format, args);
    va_end (args);
    g_log_structured (log_domain, level, "CODE_FILE", code_file, "CODE_LINE", code_line,
                      "CODE_FUNC", code_func, "VMR_JOB", job->id, "VMR_DOMAIN", job->domain,
                      "VMR_DISK", job->disk, "VMR_STATE", vmr_job_state_to_string (job->state),
                      "MESSAGE", "%s", text);
}
