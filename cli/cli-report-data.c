#define G_LOG_DOMAIN "vmr-cli"

#include "cli-report-data.h"

#include "cli-json.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* the decisions that hold the copy back or steer it, and the band each falls in */
static const struct {
    const gchar *action;
    const gchar *band;
} action_bands[] = {
    { "delay", "delay" },
    { "wait", "wait" },
    { "pause", "pause" },
    { "throttle", "throttle" },
    { "start-throttled", "throttle" },
    { "resume-throttled", "throttle" },
    { "raise", "adaptive" },
    { "hold", "adaptive" },
    { "baseline-taken", "adaptive" },
    { "back-off", "back-off" },
    { "measure-baseline", "baseline" },
    { "converge", "converge" },
};

/* the states in which the policy acts on a job; later, its last decision no longer holds */
static gboolean
policy_acts_in (const gchar *state)
{
    return g_strcmp0 (state, "synced") != 0 && g_strcmp0 (state, "pivoting") != 0
           && g_strcmp0 (state, "completed") != 0 && g_strcmp0 (state, "failed") != 0
           && g_strcmp0 (state, "cancelled") != 0;
}

const gchar *
vmr_report_band_of (const gchar *action, const gchar *state)
{
    if (!policy_acts_in (state))
        return NULL;
    for (guint i = 0; action != NULL && i < G_N_ELEMENTS (action_bands); i++)
        if (g_strcmp0 (action_bands[i].action, action) == 0)
            return action_bands[i].band;
    /* paused by a user or for space, throttled by a rule whose decision came earlier */
    if (g_strcmp0 (state, "paused") == 0)
        return "pause";
    if (g_strcmp0 (state, "throttled") == 0)
        return "throttle";
    return NULL;
}

/* runs of points in one band; a band ends where the next point begins */
static void
find_bands (VmrReport *self)
{
    for (guint i = 0; i < self->points->len;) {
        VmrReportPoint *first = &g_array_index (self->points, VmrReportPoint, i);
        VmrReportBand band = { first->band, first->reason, first->t, first->t };
        guint j = i + 1;

        while (j < self->points->len
               && g_strcmp0 (g_array_index (self->points, VmrReportPoint, j).band, first->band)
                      == 0)
            j++;
        band.end
            = g_array_index (self->points, VmrReportPoint, j < self->points->len ? j : j - 1).t;
        if (first->band != NULL)
            g_array_append_val (self->bands, band);
        i = j;
    }
}

static gdouble
figure (JsonObject *entry, const gchar *name)
{
    gdouble value = vmr_json_double_or (entry, name, 0);

    return value > 0 ? value : 0;
}

VmrReport *
vmr_report_new (JsonNode *reply, GError **error)
{
    JsonObject *obj = vmr_cli_json_expect_object (reply, "query-job-series", error);
    g_autoptr (VmrReport) self = NULL;
    g_autoptr (JsonNode) job_node = NULL;
    JsonArray *points;

    if (obj == NULL)
        return NULL;
    points = vmr_json_get_array (obj, "points");
    if (points == NULL || vmr_json_get_object (obj, "job") == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                             "unexpected reply to query-job-series: no job or points");
        return NULL;
    }
    self = g_new0 (VmrReport, 1);
    self->reply = json_node_ref (reply);
    self->points = g_array_new (FALSE, TRUE, sizeof (VmrReportPoint));
    self->bands = g_array_new (FALSE, TRUE, sizeof (VmrReportBand));
    self->interval_us = vmr_json_int_or (obj, "interval", G_USEC_PER_SEC);
    job_node = json_node_init_object (json_node_alloc (), vmr_json_get_object (obj, "job"));
    self->job = vmr_cli_job_new (job_node, "query-job-series", error);
    if (self->job == NULL)
        return NULL;
    for (guint i = 0; i < json_array_get_length (points); i++) {
        JsonObject *entry = vmr_json_array_object (points, i);
        VmrReportPoint point = { 0 };
        gint64 time_us;

        if (!vmr_json_get_int (entry, "time", &time_us))
            continue;
        if (self->points->len == 0)
            self->start_us = time_us;
        point.t = (gdouble) (time_us - self->start_us) / G_USEC_PER_SEC;
        point.rate = figure (entry, "rate");
        point.backlog = figure (entry, "backlog");
        point.processed = figure (entry, "processed");
        point.speed = figure (entry, "speed");
        point.iops = figure (entry, "iops");
        point.latency_us = figure (entry, "latency");
        point.state = vmr_json_get_string (entry, "state");
        point.band = vmr_report_band_of (vmr_json_get_string (entry, "action"), point.state);
        point.reason = vmr_json_get_string (entry, "reason");
        g_array_append_val (self->points, point);
    }
    if (self->points->len > 0)
        self->duration = g_array_index (self->points, VmrReportPoint, self->points->len - 1).t;
    find_bands (self);
    return g_steal_pointer (&self);
}

void
vmr_report_free (VmrReport *self)
{
    if (self == NULL)
        return;
    g_clear_pointer (&self->job, vmr_cli_job_free);
    g_clear_pointer (&self->points, g_array_unref);
    g_clear_pointer (&self->bands, g_array_unref);
    g_clear_pointer (&self->reply, json_node_unref);
    g_free (self);
}

/* "12s", "3m20s", as durations print */
static gchar *
format_seconds (gdouble seconds)
{
    return vmr_units_format_duration ((gint64) (seconds * G_USEC_PER_SEC));
}

gchar *
vmr_report_format_summary (const VmrReport *self)
{
    GString *text = g_string_new (NULL);
    const VmrCliJob *job = self->job;
    gdouble rate_sum = 0, rate_peak = 0, iops_sum = 0, iops_peak = 0, latency_sum = 0;
    gdouble latency_peak = 0;
    guint n_latency = 0;
    g_autofree gchar *duration = format_seconds (self->duration);
    g_autofree gchar *interval = vmr_units_format_duration (self->interval_us);

    g_string_append_printf (
        text, "Job %s: %s of %s, %s -> %s (%s)\n", job->id, job->disk != NULL ? job->disk : "?",
        job->domain != NULL ? job->domain : "?", job->source != NULL ? job->source : "?",
        job->destination != NULL ? job->destination : "?", job->state);
    if (self->points->len == 0) {
        g_string_append (text, "No timeline recorded (the job ended before its first sample, "
                               "or an older daemon ran it)\n");
        return g_string_free (text, FALSE);
    }
    for (guint i = 0; i < self->points->len; i++) {
        const VmrReportPoint *p = &g_array_index (self->points, VmrReportPoint, i);

        rate_sum += p->rate;
        rate_peak = MAX (rate_peak, p->rate);
        iops_sum += p->iops;
        iops_peak = MAX (iops_peak, p->iops);
        if (p->latency_us > 0) {
            latency_sum += p->latency_us;
            latency_peak = MAX (latency_peak, p->latency_us);
            n_latency++;
        }
    }
    {
        const VmrReportPoint *last
            = &g_array_index (self->points, VmrReportPoint, self->points->len - 1);
        g_autofree gchar *copied = vmr_units_format_bytes ((guint64) last->processed);
        g_autofree gchar *mean_rate
            = vmr_units_format_speed ((guint64) (rate_sum / self->points->len));
        g_autofree gchar *peak_rate = vmr_units_format_speed ((guint64) rate_peak);
        g_autofree gchar *mean_latency
            = vmr_cli_format_latency (n_latency > 0 ? latency_sum / n_latency : 0);
        g_autofree gchar *peak_latency = vmr_cli_format_latency (latency_peak);

        g_string_append_printf (text, "Timeline: %s, %u points, one every %s\n", duration,
                                self->points->len, interval);
        g_string_append_printf (text, "Copied:   %s, mean rate %s, peak %s\n", copied, mean_rate,
                                peak_rate);
        g_string_append_printf (text,
                                "Guest:    %.0f IOPS mean, %.0f peak; latency %s mean, %s "
                                "peak\n",
                                iops_sum / self->points->len, iops_peak, mean_latency,
                                peak_latency);
    }
    if (self->bands->len == 0)
        g_string_append (text, "Policy:   no decision held the copy back or slowed it\n");
    for (guint i = 0; i < self->bands->len; i++) {
        const VmrReportBand *band = &g_array_index (self->bands, VmrReportBand, i);
        g_autofree gchar *from = format_seconds (band->start);
        g_autofree gchar *to = format_seconds (band->end);

        g_string_append_printf (text, "%s %-9s %s to %s%s%s\n", i == 0 ? "Policy:  " : "         ",
                                band->action, from, to, band->reason != NULL ? ": " : "",
                                band->reason != NULL ? band->reason : "");
    }
    return g_string_free (text, FALSE);
}
