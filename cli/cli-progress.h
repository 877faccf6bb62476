/*
 * How jobs' progress looks on a terminal and in logs: bars, the line
 * `migrate --wait` redraws, the table of `watch`, the plain progress lines.
 * Pure: no terminal, no I/O; cli-screen.c draws what these make.
 */
#pragma once

#include <glib.h>

#include "cli-job.h"

G_BEGIN_DECLS

/* "[####......]": @width cells between the brackets, @fraction (0..1, clamped) of them filled */
gchar *vmr_cli_progress_bar (gdouble fraction, guint width);

/* the share of @job copied, 0..1: 1 once completed, 0 while the size is not known */
gdouble vmr_cli_progress_fraction (const VmrCliJob *job);

/* the terminal cells @text (UTF-8) takes: two for a wide character, none for a combining one */
guint vmr_cli_progress_text_width (const gchar *text);

/* @text cut to at most @columns terminal cells; free with g_free() */
gchar *vmr_cli_progress_truncate (const gchar *text, guint columns);

/*
 * The line `migrate --wait` redraws on a terminal of @columns:
 * "vmr-3 copying   [####......]  42.0%  1 GiB/2 GiB  backlog 1 GiB  700 MiB/s  ETA 1.5s",
 * the bar only from 91 columns on, the whole at most @columns - 1 cells.
 * Free with g_free().
 */
gchar *vmr_cli_progress_job_line (const VmrCliJob *job, guint columns);

/*
 * A plain progress line, for logs: "vmr-3: copying 35.2% (7 GiB/20 GiB,
 * backlog 13 GiB, 700 MiB/s, ETA 19s)"; with @with_guest the guest's
 * latest IOPS and latency and the policy's decision follow
 * ("; guest 1402 IOPS, 820 us; policy throttle (...)"). NULL while the
 * size is not known. Free with g_free().
 */
gchar *vmr_cli_progress_plain_line (const VmrCliJob *job, gboolean with_guest);

/*
 * The table of `watch` on a terminal of @columns: a line of titles, then
 * two lines per job of @jobs (@n_jobs of them). The first has ID, DISK
 * (domain/disk), STATE, PROGRESS (a bar when there is room, and the
 * percent), RATE, ETA, BACKLOG, IOPS and LATENCY (the guest's latest
 * sample); the second, under DISK, "policy: " and the policy's decision
 * with its reason, or for a job that failed or was cancelled "reason: "
 * and why. Every line is at most @columns - 1 cells. Free with
 * g_strfreev().
 */
GStrv vmr_cli_progress_table (VmrCliJob *const *jobs, guint n_jobs, guint columns);

G_END_DECLS
