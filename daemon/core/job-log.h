/*
 * Messages about a job, with the journal fields that find them again:
 * VMR_JOB (its id), VMR_DOMAIN, VMR_DISK and VMR_STATE (its state when the
 * message is logged), so that `journalctl VMR_JOB=vmr-3` shows one job's
 * life. They go through g_log_structured(): on a terminal or a pipe they
 * read as any other message, the fields go to the journal.
 */
#pragma once

#include "job.h"

G_BEGIN_DECLS

/* logs the printf-style @format at @level in @log_domain, with @job's fields */
void vmr_job_log (const gchar *log_domain, GLogLevelFlags level, const gchar *code_file,
                  const gchar *code_line, const gchar *code_func, VmrJob *job, const gchar *format,
                  ...) G_GNUC_PRINTF (7, 8);

#define vmr_job_message(job, ...)                                                                  \
    vmr_job_log (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE, __FILE__, G_STRINGIFY (__LINE__), G_STRFUNC,   \
                 (job), __VA_ARGS__)
#define vmr_job_warning(job, ...)                                                                  \
    vmr_job_log (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING, __FILE__, G_STRINGIFY (__LINE__), G_STRFUNC,   \
                 (job), __VA_ARGS__)

G_END_DECLS
