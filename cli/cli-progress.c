#define G_LOG_DOMAIN "vmr-cli"

#include "cli-progress.h"

#include "units.h"

/* the bar of `migrate --wait`: sized from the terminal alone, so that nothing jumps */
#define LINE_BAR_MIN_WIDTH 10
#define LINE_BAR_MAX_WIDTH 30
/* room for the id, state and figures of a typical progress line */
#define LINE_TEXT_BUDGET 80

/* the table of `watch`: the bar's bounds */
#define TABLE_BAR_MIN_WIDTH 10
#define TABLE_BAR_MAX_WIDTH 30

gchar *
vmr_cli_progress_bar (gdouble fraction, guint width)
{
    GString *bar = g_string_sized_new (width + 2);
    guint filled;

    if (!(fraction > 0))
        fraction = 0;
    filled = (guint) (MIN (fraction, 1.0) * width);
    g_string_append_c (bar, '[');
    for (guint i = 0; i < width; i++)
        g_string_append_c (bar, i < filled ? '#' : '.');
    g_string_append_c (bar, ']');
    return g_string_free (bar, FALSE);
}

gdouble
vmr_cli_progress_fraction (const VmrCliJob *job)
{
    if (g_str_equal (job->state, "completed"))
        return 1.0;
    if (!job->has_progress || job->total == 0)
        return 0.0;
    return (gdouble) job->done / (gdouble) job->total;
}

static guint
char_width (gunichar c)
{
    if (g_unichar_iszerowidth (c))
        return 0;
    return g_unichar_iswide (c) ? 2 : 1;
}

guint
vmr_cli_progress_text_width (const gchar *text)
{
    guint width = 0;

    for (const gchar *p = text; *p != '\0'; p = g_utf8_next_char (p))
        width += char_width (g_utf8_get_char (p));
    return width;
}

gchar *
vmr_cli_progress_truncate (const gchar *text, guint columns)
{
    guint width = 0;
    const gchar *p;

    for (p = text; *p != '\0'; p = g_utf8_next_char (p)) {
        guint w = char_width (g_utf8_get_char (p));

        if (width + w > columns)
            break;
        width += w;
    }
    return g_strndup (text, (gsize) (p - text));
}

gchar *
vmr_cli_progress_job_line (const VmrCliJob *job, guint columns)
{
    g_autoptr (GString) line = g_string_new (NULL);
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);
    g_autofree gchar *amount = vmr_cli_job_format_amount (job);
    g_autofree gchar *rate = vmr_cli_job_format_rate (job);
    g_autofree gchar *eta = vmr_cli_job_format_eta (job);
    glong bar_width = (glong) columns - 1 - LINE_TEXT_BUDGET;

    /* the state is padded so that nothing jumps between redraws; narrow terminals get the
     * figures only */
    g_string_append_printf (line, "%s %-9s ", job->id, job->state);
    if (bar_width >= LINE_BAR_MIN_WIDTH) {
        g_autofree gchar *bar = vmr_cli_progress_bar (vmr_cli_progress_fraction (job),
                                                      (guint) MIN (bar_width, LINE_BAR_MAX_WIDTH));

        g_string_append_printf (line, "%s ", bar);
    }
    g_string_append_printf (line, "%6s", percent != NULL ? percent : "-");
    if (amount != NULL) {
        g_autofree gchar *backlog = vmr_units_format_bytes (job->backlog);

        g_string_append_printf (line, "  %s  backlog %s", amount, backlog);
    }
    if (rate != NULL)
        g_string_append_printf (line, "  %s", rate);
    if (eta != NULL)
        g_string_append_printf (line, "  ETA %s", eta);
    /* a line longer than the terminal wraps, and it can no longer be redrawn in place */
    return vmr_cli_progress_truncate (line->str, columns > 0 ? columns - 1 : 0);
}

/* the guest's latest IOPS, or NULL before the first sample */
static gchar *
format_latest_iops (const VmrCliJob *job)
{
    if (job->guest_iops == NULL || job->guest_iops->len == 0)
        return NULL;
    return g_strdup_printf ("%" G_GINT64_FORMAT,
                            g_array_index (job->guest_iops, gint64, job->guest_iops->len - 1));
}

/* the guest's latest mean latency, "-" when it did no I/O, NULL when not known */
static gchar *
format_latest_latency (const VmrCliJob *job)
{
    if (job->guest_latency_us == 0)
        return g_strdup ("-");
    return vmr_cli_job_format_guest_latency (job);
}

gchar *
vmr_cli_progress_plain_line (const VmrCliJob *job, gboolean with_guest)
{
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);
    g_autofree gchar *amount = vmr_cli_job_format_amount (job);
    g_autofree gchar *backlog = vmr_units_format_bytes (job->backlog);
    g_autofree gchar *rate = vmr_cli_job_format_rate (job);
    g_autofree gchar *eta = vmr_cli_job_format_eta (job);
    g_autoptr (GString) line = g_string_new (NULL);

    if (percent == NULL || amount == NULL)
        return NULL;
    g_string_append_printf (line, "%s: %s %s (%s, backlog %s", job->id, job->state, percent, amount,
                            backlog);
    if (rate != NULL)
        g_string_append_printf (line, ", %s", rate);
    if (eta != NULL)
        g_string_append_printf (line, ", ETA %s", eta);
    g_string_append_c (line, ')');
    if (with_guest) {
        g_autofree gchar *iops = format_latest_iops (job);
        g_autofree gchar *latency = format_latest_latency (job);
        g_autofree gchar *decision = vmr_cli_job_format_decision (job);

        if (iops != NULL)
            g_string_append_printf (line, "; guest %s IOPS, %s", iops,
                                    latency != NULL ? latency : "-");
        if (decision != NULL)
            g_string_append_printf (line, "; policy %s", decision);
    }
    return g_string_free (g_steal_pointer (&line), FALSE);
}

/* ---- the table of watch ---- */

enum {
    COL_ID,
    COL_DISK,
    COL_STATE,
    COL_PROGRESS,
    COL_RATE,
    COL_ETA,
    COL_BACKLOG,
    COL_IOPS,
    COL_LATENCY,
    N_COLS
};

static const struct {
    const gchar *title;
    guint min_width; /* figures that change keep their column from jumping */
    gboolean right;  /* aligned right: numbers */
} columns_of_table[N_COLS] = {
    [COL_ID] = { "ID", 0, FALSE },          [COL_DISK] = { "DISK", 0, FALSE },
    [COL_STATE] = { "STATE", 9, FALSE },    [COL_PROGRESS] = { "PROGRESS", 6, FALSE },
    [COL_RATE] = { "RATE", 10, TRUE },      [COL_ETA] = { "ETA", 6, TRUE },
    [COL_BACKLOG] = { "BACKLOG", 9, TRUE }, [COL_IOPS] = { "IOPS", 5, TRUE },
    [COL_LATENCY] = { "LATENCY", 8, TRUE },
};

/* the second line of @job: why it ended, or the policy's decision; free with g_free() */
static gchar *
format_why (const VmrCliJob *job, guint indent)
{
    g_autofree gchar *decision = vmr_cli_job_format_decision (job);

    if (vmr_cli_job_is_finished (job) && job->reason != NULL)
        return g_strdup_printf ("%*sreason: %s", (gint) indent, "", job->reason);
    return g_strdup_printf ("%*spolicy: %s", (gint) indent, "", decision != NULL ? decision : "-");
}

/* the cells of @job's row, but the bar; free with g_strfreev() */
static GStrv
row_cells (const VmrCliJob *job)
{
    GStrv cells = g_new0 (gchar *, N_COLS + 1);
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);

    cells[COL_ID] = g_strdup (job->id);
    cells[COL_DISK] = g_strdup_printf ("%s/%s", job->domain != NULL ? job->domain : "?",
                                       job->disk != NULL ? job->disk : "?");
    cells[COL_STATE] = vmr_cli_job_format_state (job);
    cells[COL_PROGRESS] = g_strdup_printf ("%6s", percent != NULL ? percent : "-");
    cells[COL_RATE] = vmr_cli_job_format_rate (job);
    cells[COL_ETA] = vmr_cli_job_format_eta (job);
    cells[COL_BACKLOG] = job->has_progress && job->total > 0 && !vmr_cli_job_is_finished (job)
                             ? vmr_units_format_bytes (job->backlog)
                             : NULL;
    cells[COL_IOPS] = vmr_cli_job_is_finished (job) ? NULL : format_latest_iops (job);
    cells[COL_LATENCY] = vmr_cli_job_is_finished (job) ? NULL : format_latest_latency (job);
    for (guint i = 0; i < N_COLS; i++) {
        if (cells[i] == NULL)
            cells[i] = g_strdup ("-");
    }
    return cells;
}

static void
append_cell (GString *line, const gchar *text, guint width, gboolean right)
{
    guint pad = width - MIN (width, vmr_cli_progress_text_width (text));

    if (right)
        for (guint i = 0; i < pad; i++)
            g_string_append_c (line, ' ');
    g_string_append (line, text);
    if (!right)
        for (guint i = 0; i < pad; i++)
            g_string_append_c (line, ' ');
}

GStrv
vmr_cli_progress_table (VmrCliJob *const *jobs, guint n_jobs, guint columns)
{
    g_autoptr (GPtrArray) rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
    GPtrArray *lines = g_ptr_array_new ();
    guint widths[N_COLS];
    guint fixed = 0;
    glong bar_width;
    guint max_cells = columns > 0 ? columns - 1 : 0;

    for (guint c = 0; c < N_COLS; c++)
        widths[c] = MAX (columns_of_table[c].min_width,
                         vmr_cli_progress_text_width (columns_of_table[c].title));
    for (guint i = 0; i < n_jobs; i++) {
        GStrv cells = row_cells (jobs[i]);

        for (guint c = 0; c < N_COLS; c++)
            widths[c] = MAX (widths[c], vmr_cli_progress_text_width (cells[c]));
        g_ptr_array_add (rows, cells);
    }
    /* what is left of the line for the bar (and its brackets and space), after the columns
     * and two spaces between each */
    for (guint c = 0; c < N_COLS; c++)
        fixed += widths[c] + (c > 0 ? 2 : 0);
    bar_width = (glong) max_cells - (glong) fixed - 3;
    if (bar_width >= TABLE_BAR_MIN_WIDTH) {
        bar_width = MIN (bar_width, TABLE_BAR_MAX_WIDTH);
        widths[COL_PROGRESS] += (guint) bar_width + 3;
    } else {
        bar_width = 0;
    }

    for (guint r = 0; r <= rows->len; r++) {
        g_autoptr (GString) line = g_string_new (NULL);
        GStrv cells = r > 0 ? g_ptr_array_index (rows, r - 1) : NULL;

        for (guint c = 0; c < N_COLS; c++) {
            g_autofree gchar *progress = NULL;
            const gchar *text = cells != NULL ? cells[c] : columns_of_table[c].title;

            if (c > 0)
                g_string_append (line, "  ");
            if (cells != NULL && c == COL_PROGRESS && bar_width > 0) {
                g_autofree gchar *bar
                    = vmr_cli_progress_bar (vmr_cli_progress_fraction (jobs[r - 1]), bar_width);

                text = progress = g_strdup_printf ("%s %s", bar, cells[c]);
            }
            append_cell (line, text, widths[c], cells != NULL && columns_of_table[c].right);
        }
        g_ptr_array_add (lines, vmr_cli_progress_truncate (g_strchomp (line->str), max_cells));
        if (cells != NULL) {
            g_autofree gchar *why = format_why (jobs[r - 1], widths[COL_ID] + 2);

            g_ptr_array_add (lines, vmr_cli_progress_truncate (why, max_cells));
        }
    }
    g_ptr_array_add (lines, NULL);
    return (GStrv) g_ptr_array_free (lines, FALSE);
}
