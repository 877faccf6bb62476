#define G_LOG_DOMAIN "vmr-cli"

#include "cli-job.h"

#include <math.h>

#include "cli-json.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

static guint64
get_size (JsonObject *obj, const gchar *name)
{
    gdouble value = 0;

    if (!vmr_json_get_double (obj, name, &value) || !isfinite (value) || value < 0)
        return 0;
    return (guint64) value;
}

/* the "policy" member: absent from a daemon without a policy engine */
static void
read_policy (VmrCliJob *self, JsonObject *policy)
{
    JsonArray *iops = vmr_json_get_array (policy, "guest-iops");
    gdouble base_speed = 0;

    self->has_policy = TRUE;
    self->decision = vmr_json_get_string (policy, "decision");
    self->decision_reason = vmr_json_get_string (policy, "reason");
    if (!vmr_json_get_double (policy, "held", &self->held) || !isfinite (self->held)
        || self->held < 0)
        self->held = 0;
    if (vmr_json_get_double (policy, "base-speed", &base_speed) && isfinite (base_speed)
        && base_speed >= 0) {
        self->has_base_speed = TRUE;
        self->base_speed = (guint64) base_speed;
    }
    self->user_paused = vmr_json_bool_or (policy, "user-paused", FALSE);
    self->guest_iops = g_array_new (FALSE, FALSE, sizeof (gint64));
    for (guint i = 0; iops != NULL && i < json_array_get_length (iops); i++) {
        JsonNode *element = json_array_get_element (iops, i);
        gint64 value;

        if (!JSON_NODE_HOLDS_VALUE (element))
            continue;
        value = json_node_get_int (element);
        g_array_append_val (self->guest_iops, value);
    }
    if (!vmr_json_get_double (policy, "guest-latency-us", &self->guest_latency_us)
        || !isfinite (self->guest_latency_us))
        self->guest_latency_us = -1;
}

/* the "convergence" member: null or absent when nothing was done */
static void
read_convergence (VmrCliJob *self, JsonObject *convergence)
{
    self->convergence_state = vmr_json_get_string (convergence, "state");
    if (self->convergence_state == NULL)
        return;
    self->converged_by = vmr_json_get_string (convergence, "by");
    self->convergence_reason = vmr_json_get_string (convergence, "reason");
    if (!vmr_json_get_int (convergence, "since", &self->converged_since))
        self->converged_since = 0;
}

VmrCliJob *
vmr_cli_job_new (JsonNode *node, const gchar *command, GError **error)
{
    g_autoptr (VmrCliJob) self = g_new0 (VmrCliJob, 1);
    JsonObject *obj = vmr_cli_json_expect_object (node, command, error);
    JsonObject *progress;
    JsonObject *policy;

    if (obj == NULL)
        return NULL;
    self->node = json_node_ref (node);
    self->id = vmr_json_get_string (obj, "id");
    self->state = vmr_json_get_string (obj, "state");
    if (self->id == NULL || self->state == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                     "unexpected reply to '%s' from virt-mirrord: a job without id or state",
                     command);
        return NULL;
    }
    self->domain = vmr_json_get_string (obj, "domain");
    self->disk = vmr_json_get_string (obj, "disk");
    self->reason = vmr_json_get_string (obj, "reason");
    self->waiting_for = vmr_json_get_string (obj, "waiting-for");
    self->orphaned = vmr_json_bool_or (obj, "orphaned", FALSE);
    self->source = vmr_json_get_string (obj, "source");
    self->source_format = vmr_json_get_string (obj, "source-format");
    self->destination = vmr_json_get_string (obj, "destination");
    self->format = vmr_json_get_string (obj, "format");
    self->created_destination = vmr_json_bool_or (obj, "created-destination", FALSE);
    self->manual_pivot = vmr_json_bool_or (obj, "manual-pivot", FALSE);
    self->speed = get_size (obj, "speed");
    self->eta = -1;
    progress = vmr_json_get_object (obj, "progress");
    if (progress != NULL) {
        self->has_progress = TRUE;
        self->total = get_size (progress, "total");
        self->done = MIN (get_size (progress, "done"), self->total);
        if (json_object_has_member (progress, "backlog"))
            self->backlog = get_size (progress, "backlog");
        else
            self->backlog = self->total - self->done;
        self->rate = get_size (progress, "rate");
        self->dirty_rate = get_size (progress, "dirty-rate");
        if (!vmr_json_get_double (progress, "eta", &self->eta) || !isfinite (self->eta))
            self->eta = -1;
    }
    vmr_json_get_int (obj, "created", &self->created);
    vmr_json_get_int (obj, "updated", &self->updated);
    self->guest_latency_us = -1;
    policy = vmr_json_get_object (obj, "policy");
    if (policy != NULL)
        read_policy (self, policy);
    read_convergence (self, vmr_json_get_object (obj, "convergence"));
    self->verify_state = vmr_json_get_string (vmr_json_get_object (obj, "verification"), "state");
    return g_steal_pointer (&self);
}

void
vmr_cli_job_free (VmrCliJob *self)
{
    if (self == NULL)
        return;
    g_clear_pointer (&self->node, json_node_unref);
    g_clear_pointer (&self->guest_iops, g_array_unref);
    g_free (self);
}

gboolean
vmr_cli_job_is_finished (const VmrCliJob *self)
{
    return g_str_equal (self->state, "completed") || g_str_equal (self->state, "failed")
           || g_str_equal (self->state, "cancelled");
}

/* a paused or waiting job keeps its last rate, which no longer means anything */
gboolean
vmr_cli_job_is_copying (const VmrCliJob *self)
{
    static const gchar *const idle_states[] = { "queued", "delayed", "paused", NULL };

    return !vmr_cli_job_is_finished (self) && !g_strv_contains (idle_states, self->state);
}

gchar *
vmr_cli_job_format_percent (const VmrCliJob *self)
{
    gdouble percent;

    if (g_str_equal (self->state, "completed"))
        return g_strdup ("100%");
    if (!self->has_progress || self->total == 0)
        return NULL;
    /* round down, so that 100% means every byte is there */
    percent = floor ((gdouble) self->done * 1000.0 / (gdouble) self->total) / 10.0;
    return g_strdup_printf ("%.1f%%", percent);
}

/* "@rate/s@suffix" of a job that copies, NULL for none or a rate of 0 */
static gchar *
format_copying_rate (const VmrCliJob *self, guint64 rate, const gchar *suffix)
{
    g_autofree gchar *bytes = NULL;

    if (!self->has_progress || rate == 0 || !vmr_cli_job_is_copying (self))
        return NULL;
    bytes = vmr_units_format_bytes (rate);
    return g_strdup_printf ("%s/s%s", bytes, suffix);
}

gchar *
vmr_cli_job_format_rate (const VmrCliJob *self)
{
    return format_copying_rate (self, self->rate, "");
}

gchar *
vmr_cli_job_format_dirty_rate (const VmrCliJob *self)
{
    return format_copying_rate (self, self->dirty_rate,
                                " of the disk (what its writes add to the backlog)");
}

gchar *
vmr_cli_job_format_eta (const VmrCliJob *self)
{
    if (!self->has_progress || self->eta < 0 || !vmr_cli_job_is_copying (self))
        return NULL;
    return vmr_units_format_duration ((gint64) (self->eta * G_USEC_PER_SEC));
}

gchar *
vmr_cli_job_format_convergence (const VmrCliJob *self)
{
    g_autofree gchar *since = NULL;

    if (self->convergence_state == NULL)
        return NULL;
    since = vmr_cli_format_time (self->converged_since);
    return g_strdup_printf ("%s by %s since %s%s%s", self->convergence_state,
                            self->converged_by != NULL ? self->converged_by : "?", since,
                            self->convergence_reason != NULL ? ": " : "",
                            self->convergence_reason != NULL ? self->convergence_reason : "");
}

gchar *
vmr_cli_job_format_decision (const VmrCliJob *self)
{
    if (self->decision == NULL)
        return NULL;
    if (self->decision_reason == NULL)
        return g_strdup (self->decision);
    return g_strdup_printf ("%s (%s)", self->decision, self->decision_reason);
}

gchar *
vmr_cli_job_format_guest_iops (const VmrCliJob *self)
{
    g_autoptr (GString) text = NULL;

    if (self->guest_iops == NULL || self->guest_iops->len == 0)
        return NULL;
    text = g_string_new (NULL);
    for (guint i = 0; i < self->guest_iops->len; i++)
        g_string_append_printf (text, "%s%" G_GINT64_FORMAT, i > 0 ? " " : "",
                                g_array_index (self->guest_iops, gint64, i));
    return g_string_free (g_steal_pointer (&text), FALSE);
}

gchar *
vmr_cli_format_latency (gdouble latency_us)
{
    if (latency_us < 0 || !isfinite (latency_us))
        return NULL;
    /* the daemon's 0 means there was no I/O to time */
    if (latency_us == 0)
        return g_strdup ("- (no guest I/O)");
    if (latency_us < 1000)
        return g_strdup_printf ("%.0f us", latency_us);
    if (latency_us < 10000)
        return g_strdup_printf ("%.2f ms", latency_us / 1000);
    return g_strdup_printf ("%.1f ms", latency_us / 1000);
}

gchar *
vmr_cli_job_format_guest_latency (const VmrCliJob *self)
{
    return vmr_cli_format_latency (self->guest_latency_us);
}

gchar *
vmr_cli_job_format_amount (const VmrCliJob *self)
{
    g_autofree gchar *done = NULL;
    g_autofree gchar *total = NULL;

    if (!self->has_progress || self->total == 0)
        return NULL;
    done = vmr_units_format_bytes (self->done);
    total = vmr_units_format_bytes (self->total);
    return g_strdup_printf ("%s/%s", done, total);
}

gchar *
vmr_cli_format_time (gint64 usec_since_epoch)
{
    g_autoptr (GDateTime) seconds = NULL;
    g_autofree gchar *text = NULL;

    if (usec_since_epoch <= 0)
        return g_strdup ("?");
    seconds = g_date_time_new_from_unix_local (usec_since_epoch / G_USEC_PER_SEC);
    if (seconds == NULL)
        return g_strdup ("?");
    text = g_date_time_format (seconds, "%Y-%m-%d %H:%M:%S");
    return g_strdup_printf ("%s.%03d", text, (gint) (usec_since_epoch % G_USEC_PER_SEC / 1000));
}

gchar *
vmr_cli_job_format_state (const VmrCliJob *self)
{
    if (self->orphaned && !vmr_cli_job_is_finished (self))
        return g_strdup_printf ("%s (no domain)", self->state);
    if (self->waiting_for != NULL && !vmr_cli_job_is_finished (self))
        return g_strdup_printf ("%s (%s)", self->state, self->waiting_for);
    if (g_strcmp0 (self->verify_state, "running") == 0)
        return g_strdup_printf ("%s, verifying", self->state);
    if (g_strcmp0 (self->verify_state, "passed") == 0)
        return g_strdup_printf ("%s, verified", self->state);
    if (g_strcmp0 (self->verify_state, "failed") == 0)
        return g_strdup_printf ("%s, verify failed", self->state);
    if (g_strcmp0 (self->verify_state, "error") == 0)
        return g_strdup_printf ("%s, not verified", self->state);
    return g_strdup (self->state);
}
