#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The closed-loop speed (control = adaptive): after each load sample the
 * controller of policy/controller.h sets the copy's speed to the highest the
 * guest does not feel, measured against the guest's own baseline. The static
 * rules still decide when a copy may run at all (windows, the delay
 * thresholds, max-delay); the controller decides how fast it runs.
 */

#include "engine-private.h"
#include "job-log.h"

#include <string.h>

#include "units.h"
#include "vmr-stats.h"

/* the speeds a job remembers: ten minutes of one-second samples */
#define SPEED_POINTS_MAX 600

/* the rule's controller for @job, its max-speed no more than the job's share of a budget */
static void
config_of (VmrEngine *self, VmrJob *job, const VmrPolicyRule *rule, VmrControllerConfig *config)
{
    guint64 max_speed = vmr_engine_budget_max_speed (self, job, rule->max_speed);
    guint64 min_speed = max_speed > 0 ? MIN (rule->min_speed, max_speed) : rule->min_speed;

    vmr_controller_config_init (config, rule->guest_impact / 100.0, min_speed, max_speed);
    config->min_progress = rule->min_progress / 100.0;
    config->latency_floor_us = (gdouble) rule->latency_floor_us;
    config->max_harm = rule->max_harm / 100.0;
    config->start_speed = rule->start_speed;
}

static VmrJobAdaptive *
adaptive_new (gint64 now_us)
{
    VmrJobAdaptive *a = g_new0 (VmrJobAdaptive, 1);

    vmr_controller_state_init (&a->state, now_us);
    a->kind = VMR_CONTROLLER_HOLD;
    a->speeds = g_array_new (FALSE, FALSE, sizeof (VmrSpeedPoint));
    return a;
}

/* the job's speed series: a point for each change, the oldest dropped past the bound */
static void
note_speed (VmrJobAdaptive *a, guint64 speed, gint64 now_us)
{
    VmrSpeedPoint point = { now_us, speed };

    if (a->speeds->len > 0
        && g_array_index (a->speeds, VmrSpeedPoint, a->speeds->len - 1).speed == speed)
        return;
    if (a->speeds->len == SPEED_POINTS_MAX)
        g_array_remove_index (a->speeds, 0);
    g_array_append_val (a->speeds, point);
}

/*
 * The guest before the copy: the median of the newest samples, IOPS and
 * latency each, and their noise band (vmr_controller_baseline()). Not their
 * mean: QEMU's latency comes with spikes (a second at 1.7 times the rest),
 * and a baseline that holds one reads every quiet sample after it as faster
 * than the baseline (0.95 times it in logs of the test guest), which hides
 * that much harm. @newest is the newest sample.
 */
static gboolean
baseline_of (const VmrControllerConfig *config, VmrLoadHistory *history, VmrJobAdaptive *a,
             VmrLoadSample *newest)
{
    guint n = 0;
    const VmrLoadSample *samples
        = history != NULL ? vmr_load_history_get_samples (history, &n) : NULL;

    if (!vmr_controller_baseline (config, samples, n, &a->baseline, &a->noise))
        return FALSE;
    *newest = samples[n - 1];
    return TRUE;
}

/* the decision shown as the job's policy decision, and logged when it changes */
static void
note_decision (VmrEngine *self, VmrJob *job, VmrControllerKind kind, const gchar *reason)
{
    VmrJobAdaptive *a = job->adaptive;

    /* a new kind of decision, and every back-off and pause, is news; the rest is debug */
    if (a->reason == NULL || kind != a->kind || kind == VMR_CONTROLLER_BACK_OFF
        || kind == VMR_CONTROLLER_MEASURE_BASELINE || kind == VMR_CONTROLLER_BASELINE_TAKEN)
        vmr_job_message (job, "job %s (%s %s): controller: %s: %s", job->id, job->domain, job->disk,
                         vmr_controller_kind_to_string (kind), reason);
    else
        g_debug ("job %s: controller: %s: %s", job->id, vmr_controller_kind_to_string (kind),
                 reason);
    a->kind = kind;
    g_free (a->reason);
    a->reason = g_strdup (reason);
    g_free (job->decision);
    job->decision = g_strdup (vmr_controller_kind_to_string (kind));
    vmr_engine_count_decision (self, job->decision);
    g_free (job->decision_reason);
    job->decision_reason = g_strdup (reason);
}

guint64
vmr_engine_adaptive_start (VmrEngine *self, DomainEntry *entry, VmrJob *job,
                           const VmrPolicyRule *rule)
{
    gint64 now = g_get_monotonic_time ();
    VmrControllerConfig config;
    g_autofree gchar *speed_text = NULL;
    g_autofree gchar *reason = NULL;
    VmrLoadSample newest = { 0 };
    VmrJobAdaptive *a;
    guint64 speed;
    gboolean idle, changed;

    config_of (self, job, rule, &config);
    if (job->adaptive == NULL)
        job->adaptive = adaptive_new (now);
    a = job->adaptive;
    vmr_controller_state_init (&a->state, now);
    a->has_baseline = baseline_of (&config, vmr_engine_domain_load (entry, job->disk), a, &newest);
    /*
     * a guest that turned busy or idle in its newest sample: the median is
     * the old load's (an idle median at a burst's first second would start a
     * busy guest's copy at full speed). The first step measures it.
     */
    changed = a->has_baseline
              && (a->baseline.iops < config.idle_iops) != (newest.iops < config.idle_iops);
    if (changed)
        a->has_baseline = FALSE;
    /* a busy neighbour on the copy's storages feels it even when the guest does not */
    idle = a->has_baseline && a->baseline.iops < config.idle_iops
           && !vmr_engine_neighbours_start (self, job, &config);
    /*
     * an idle guest feels nothing: full speed from the start; a busy one from
     * start_speed; one with no baseline (no sample yet, or it just turned
     * busy or idle) from the bottom, until its first sample measures it
     */
    speed = idle               ? config.max_speed
            : !a->has_baseline ? config.min_speed
                               : vmr_controller_start_speed (&config);
    speed_text = vmr_units_format_speed (speed);
    if (a->has_baseline)
        reason = g_strdup_printf ("starting at %s: baseline %.0f IOPS, %.0f us, noise %.1f%%",
                                  speed_text, a->baseline.iops, a->baseline.latency_us,
                                  a->noise * 100);
    else if (changed)
        reason = g_strdup_printf ("starting at %s: the guest turned %s in its newest sample "
                                  "(%.0f IOPS, %.0f before it), the first sample measures it",
                                  speed_text, newest.iops < config.idle_iops ? "idle" : "busy",
                                  newest.iops, a->baseline.iops);
    else
        reason = g_strdup_printf ("starting at %s: no load sample yet, the first one measures "
                                  "the guest",
                                  speed_text);
    note_decision (self, job, idle ? VMR_CONTROLLER_IDLE_FULL_SPEED : VMR_CONTROLLER_RAISE, reason);
    note_speed (a, speed, now);
    return speed;
}

static gboolean
shares_iothread (const VmrDisk *a, const VmrDisk *b)
{
    if (a->iothreads == NULL || b->iothreads == NULL)
        return a->iothreads == NULL && b->iothreads == NULL;
    for (guint i = 0; a->iothreads[i] != NULL; i++) {
        if (g_strv_contains ((const gchar *const *) b->iothreads, a->iothreads[i]))
            return TRUE;
    }
    return FALSE;
}

/* the running copies on the I/O thread of @job's disk, @job's included: they share its harm */
static guint
copies_on_thread (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    GPtrArray *active = vmr_job_table_get_active (self->jobs);
    VmrDisk *disk = vmr_disk_lookup (entry->disks, job->disk);
    guint n = 0;

    for (guint i = 0; disk != NULL && i < active->len; i++) {
        VmrJob *other = g_ptr_array_index (active, i);
        VmrDisk *other_disk;

        if (other != job && g_strcmp0 (other->domain, job->domain) != 0)
            continue;
        if (other->state != VMR_JOB_STATE_COPYING && other->state != VMR_JOB_STATE_THROTTLED)
            continue;
        other_disk = vmr_disk_lookup (entry->disks, other->disk);
        if (other == job || (other_disk != NULL && shares_iothread (disk, other_disk)))
            n++;
    }
    return MAX (n, 1);
}

/* sends the decided speed, resuming a paused copy; a job already at it is left alone */
static void
apply_speed (VmrEngine *self, VmrJob *job, guint64 speed, gint64 now_us)
{
    VmrEngineAction *action;

    note_speed (job->adaptive, speed, now_us);
    if (job->state == VMR_JOB_STATE_PAUSED) {
        action = vmr_engine_action_new (self, job, VMR_JOB_STATE_COPYING);
        action->resume_after_speed = speed != job->speed;
        vmr_engine_action_step (action,
                                speed != job->speed ? VMR_BACKEND_COMMAND_SET_SPEED
                                                    : VMR_BACKEND_COMMAND_RESUME,
                                speed);
        return;
    }
    if (speed == job->speed && job->state == VMR_JOB_STATE_COPYING)
        return;
    action = vmr_engine_action_new (self, job, VMR_JOB_STATE_COPYING);
    vmr_engine_action_step (action, VMR_BACKEND_COMMAND_SET_SPEED, speed);
}

/* the copy pauses for one sample: the next one is the guest alone */
static void
measure (VmrEngine *self, VmrJob *job)
{
    job->adaptive->paused_us = g_get_monotonic_time ();
    vmr_engine_action_step (vmr_engine_action_new (self, job, VMR_JOB_STATE_PAUSED),
                            VMR_BACKEND_COMMAND_PAUSE, 0);
}

/*
 * The copy's neighbours (engine-neighbours.c): the one harmed most, when
 * more than the guest, replaces the guest's sample and baseline in @input
 * (at the guest's sample's time: it stands for this step), and is copied
 * to @worst; TRUE when so. A neighbour that turned busy asks for a
 * measuring pause instead, at most once a measure_gap_us: @measure is set.
 */
static gboolean
feed_neighbours (VmrEngine *self, VmrJob *job, const VmrControllerConfig *config,
                 VmrControllerInput *input, VmrNeighbour *worst, gboolean *measure_now)
{
    VmrJobAdaptive *a = job->adaptive;
    gboolean own_idle
        = input->load.iops < config->idle_iops && a->baseline.iops < config->idle_iops;
    gdouble own_harm = own_idle ? -1 : vmr_controller_harm (config, input);
    gboolean needs_baseline;
    gint pick;

    *measure_now = FALSE;
    if (a->state.phase == VMR_CONTROLLER_PHASE_MEASURING)
        return FALSE;
    pick = vmr_engine_neighbours_worst (self, job, config, own_harm, worst, &needs_baseline);
    if (needs_baseline && input->load.time_us - a->neighbour_measure_us >= config->measure_gap_us) {
        a->neighbour_measure_us = input->load.time_us;
        *measure_now = TRUE;
        return FALSE;
    }
    if (pick < 0)
        return FALSE;
    input->load.iops = worst->load.iops;
    input->load.latency_us = worst->load.latency_us;
    input->baseline = worst->baseline;
    input->noise = worst->noise;
    return TRUE;
}

/* a neighbour turned busy: the copy pauses for one sample to measure it alone */
static void
measure_neighbours (VmrEngine *self, VmrJob *job)
{
    vmr_controller_request_measure (&job->adaptive->state, job->speed);
    note_decision (self, job, VMR_CONTROLLER_MEASURE_BASELINE,
                   "a neighbour on the copy's storages turned busy: pausing the copy for one "
                   "sample to measure it alone");
    measure (self, job);
}

/* the decision's reason: the controller's, or the neighbour's that set the speed */
static void
note_step (VmrEngine *self, VmrJob *job, const VmrControllerDecision *out,
           const VmrNeighbour *worst)
{
    g_autofree gchar *reason = worst != NULL ? vmr_neighbour_reason (worst, out->reason) : NULL;

    note_decision (self, job, out->kind, reason != NULL ? reason : out->reason);
}

gboolean
vmr_engine_adaptive_step (VmrEngine *self, DomainEntry *entry, VmrJob *job,
                          const VmrPolicyRule *rule, const VmrPolicyDecision *decision)
{
    VmrLoadHistory *history = vmr_engine_domain_load (entry, job->disk);
    gint64 now = g_get_monotonic_time ();
    g_auto (VmrControllerDecision) out = { 0 };
    VmrControllerConfig config;
    VmrControllerInput input = { 0 };
    const VmrLoadSample *samples = NULL;
    VmrNeighbour worst = { 0 };
    gboolean by_neighbour, measure_now; /* a neighbour's sample fed, or a pause for one */
    VmrJobAdaptive *a;
    guint n = 0;

    /* a user's speed wins, and a reloaded policy may be static again */
    if (rule->control != VMR_CONTROL_ADAPTIVE || job->speed_from_user || job->policy_released) {
        g_clear_pointer (&job->adaptive, vmr_job_adaptive_free);
        return FALSE;
    }
    if (job->adaptive == NULL)
        job->adaptive = adaptive_new (now);
    a = job->adaptive;
    /* a copy paused by the rules (a window, a delay threshold) is theirs until they resume it */
    if (job->state == VMR_JOB_STATE_PAUSED && a->state.phase != VMR_CONTROLLER_PHASE_MEASURING) {
        if (decision->action != VMR_POLICY_ACTION_RESUME
            && decision->action != VMR_POLICY_ACTION_RESUME_THROTTLED
            && decision->action != VMR_POLICY_ACTION_PROCEED)
            return FALSE;
        apply_speed (self, job, job->speed, now);
        return TRUE;
    }
    /* the rules' pause and failure come first */
    if (decision->action == VMR_POLICY_ACTION_PAUSE || decision->action == VMR_POLICY_ACTION_FAIL)
        return FALSE;
    if (history != NULL)
        samples = vmr_load_history_get_samples (history, &n);
    /* the copy of a daemon that restarted, or of a policy that became adaptive */
    if (!a->has_baseline && a->state.phase != VMR_CONTROLLER_PHASE_MEASURING) {
        vmr_controller_request_measure (&a->state, job->speed);
        a->load.time_us = n > 0 ? samples[n - 1].time_us : 0;
        note_decision (self, job, VMR_CONTROLLER_MEASURE_BASELINE,
                       "no baseline: pausing the copy for one sample to measure the guest alone");
        measure (self, job);
        return TRUE;
    }
    /* one step a sample, on a sample taken after the last step */
    if (n == 0 || samples[n - 1].time_us == a->load.time_us)
        return TRUE;

    config_of (self, job, rule, &config);
    /* a measuring pause waits for the busy neighbours' samples too */
    if (a->state.phase == VMR_CONTROLLER_PHASE_MEASURING
        && !vmr_engine_neighbours_measured (self, job, &config, &samples[n - 1]))
        return TRUE;
    input.load = samples[n - 1];
    input.baseline = a->baseline;
    input.speed = job->speed;
    /*
     * An unlimited copy's rate, which a back-off starts from. A capped
     * copy's is not passed: QEMU's mirror under a cap copies in bursts and
     * waits between them, so the rate read from its progress falls far
     * under the cap between two bursts (seen with the test guest: a 1 MiB/s
     * cap read as 31 B/s), which says nothing of what the storage allows.
     */
    input.copy_rate = job->speed == 0 ? (guint64) job->rate : 0;
    /* what the guest's writes add to the backlog: under it the copy makes no progress */
    input.dirty_rate = (guint64) job->dirty_rate;
    input.n_copies = copies_on_thread (self, entry, job);
    input.noise = a->noise;
    a->load = samples[n - 1];
    by_neighbour = feed_neighbours (self, job, &config, &input, &worst, &measure_now);
    if (measure_now) {
        measure_neighbours (self, job);
        return TRUE;
    }
    vmr_controller_step (&config, &a->state, &input, &out);
    a->harm = out.harm;
    note_step (self, job, &out, by_neighbour ? &worst : NULL);
    switch (out.kind) {
        case VMR_CONTROLLER_MEASURE_BASELINE:
            measure (self, job);
            break;
        case VMR_CONTROLLER_BASELINE_TAKEN:
            a->baseline = out.baseline;
            a->has_baseline = TRUE;
            apply_speed (self, job, out.speed, now);
            break;
        /*
         * a hold keeps the controller's speed, which may still differ from
         * the job's: a cap over max-speed, a progress floor that rose, a copy
         * the static rules had throttled
         */
        case VMR_CONTROLLER_HOLD:
        case VMR_CONTROLLER_RAISE:
        case VMR_CONTROLLER_BACK_OFF:
        case VMR_CONTROLLER_IDLE_FULL_SPEED:
        default:
            apply_speed (self, job, out.speed, now);
            break;
    }
    return TRUE;
}

static JsonObject *
sample_to_json (const VmrLoadSample *sample)
{
    JsonObject *obj = json_object_new ();

    json_object_set_double_member (obj, "iops", sample->iops);
    json_object_set_double_member (obj, "latency-us", sample->latency_us);
    return obj;
}

JsonObject *
vmr_engine_adaptive_describe (VmrJob *job)
{
    VmrJobAdaptive *a = job->adaptive;
    JsonObject *obj;
    JsonArray *speeds;
    gint64 first;

    if (a == NULL)
        return NULL;
    obj = json_object_new ();
    speeds = json_array_new ();
    json_object_set_string_member (obj, "mode", "adaptive");
    json_object_set_int_member (obj, "speed", (gint64) job->speed);
    if (a->has_baseline)
        json_object_set_object_member (obj, "baseline", sample_to_json (&a->baseline));
    else
        json_object_set_null_member (obj, "baseline");
    if (a->load.time_us != 0)
        json_object_set_object_member (obj, "load", sample_to_json (&a->load));
    else
        json_object_set_null_member (obj, "load");
    json_object_set_double_member (obj, "harm", a->harm);
    json_object_set_string_member (obj, "decision", vmr_controller_kind_to_string (a->kind));
    if (a->reason != NULL)
        json_object_set_string_member (obj, "reason", a->reason);
    else
        json_object_set_null_member (obj, "reason");
    /* the speed series: seconds since the first, and the speed set then */
    first = a->speeds->len > 0 ? g_array_index (a->speeds, VmrSpeedPoint, 0).time_us : 0;
    for (guint i = 0; i < a->speeds->len; i++) {
        const VmrSpeedPoint *point = &g_array_index (a->speeds, VmrSpeedPoint, i);
        JsonObject *p = json_object_new ();

        json_object_set_double_member (p, "time",
                                       (gdouble) (point->time_us - first) / G_USEC_PER_SEC);
        json_object_set_int_member (p, "speed", (gint64) point->speed);
        json_array_add_object_element (speeds, p);
    }
    json_object_set_array_member (obj, "speeds", speeds);
    return obj;
}
