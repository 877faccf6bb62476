/* The simulated guests and the hand-made steps of controller-sim.h. */
#define G_LOG_DOMAIN "vmr-test"

#include "controller-sim.h"

#include <string.h>

/* the harm the guest feels when the copies move @total bytes/s */
gdouble
guest_harm (const Guest *guest, gdouble total)
{
    gdouble knee = guest->knee_mib * MIB;
    gdouble harm;

    if (guest->queueing)
        harm = total >= knee ? QUEUE_MAX_HARM
                             : MIN (guest->steepness * total / (knee - total), QUEUE_MAX_HARM);
    else if (guest->linear)
        harm = guest->steepness * total / knee;
    else
        harm = total <= knee ? 0 : guest->steepness * (total / knee - 1);
    if (total <= guest->floor_from_mib * MIB || total <= 0)
        return harm;
    return (1 + guest->floor) * (1 + harm) - 1;
}

/*
 * What a guest that catches up does in a second whose copy harms it by
 * @harm, as a fraction of its rate: its rate and what it owes, as much as
 * its queue allows. Updates @owed.
 */
static gdouble
catch_up (const Guest *guest, gdouble harm, gdouble *owed)
{
    gdouble can = guest->headroom / (1 + harm);
    gdouble done = MIN (1 + *owed, can);

    *owed = 1 + *owed - done;
    return done;
}

/*
 * The guest's figures without noise when the copies move @total bytes/s:
 * IOPS and latency as fractions of its own alone; @owed as catch_up()
 */
static void
guest_figures (const Guest *guest, gdouble total, gdouble *owed, gdouble *iops, gdouble *latency)
{
    gdouble harm = guest_harm (guest, total);

    *iops = 1;
    *latency = 1 + harm;
    if (guest->kind == GUEST_IOPS_BOUND) {
        *iops = MAX (1 - harm, 0.02);
        *latency = 1;
    } else if (guest->headroom > 0) {
        /* the I/O it makes up queues behind its own */
        *iops = catch_up (guest, harm, owed);
        *latency = (1 + harm) * MAX (*iops, 1.0);
    }
}

gdouble
guest_felt (const Guest *guest, gdouble total, gdouble owed)
{
    gdouble iops, latency;

    guest_figures (guest, total, &owed, &iops, &latency);
    return MAX (0.0, MAX (latency - 1, 1 - iops));
}

static VmrLoadSample
guest_sample (const Guest *guest, gdouble total, gint64 time_us, GRand *rand, gdouble *owed)
{
    gdouble latency_noise = 1 + g_rand_double_range (rand, -guest->noise, guest->noise + 1e-12);
    gdouble iops_noise = 1 + g_rand_double_range (rand, -guest->noise, guest->noise + 1e-12);
    gdouble base_latency = guest->base_latency_us > 0 ? guest->base_latency_us : BASE_LAT;
    VmrLoadSample sample = { .time_us = time_us };
    gdouble iops, latency;

    if (guest->spikes > 0 && g_rand_double (rand) < guest->spikes)
        latency_noise *= 1 + g_rand_double_range (rand, 0.2, 0.75);
    guest_figures (guest, total, owed, &iops, &latency);
    switch (guest->kind) {
        case GUEST_FIXED_RATE:
            sample.iops = BASE_IOPS * iops * iops_noise;
            sample.latency_us = base_latency * latency * latency_noise;
            break;
        case GUEST_IOPS_BOUND:
            sample.iops = BASE_IOPS * iops * iops_noise;
            sample.latency_us = base_latency * latency * latency_noise;
            break;
        case GUEST_IDLE:
        default:
            break;
    }
    return sample;
}

void
sim_init (Sim *sim, const Guest *guest, guint n_copies, guint64 max_speed)
{
    sim_init_seeded (sim, guest, n_copies, max_speed, 20261201);
}

void
sim_init_seeded (Sim *sim, const Guest *guest, guint n_copies, guint64 max_speed, guint32 seed)
{
    VmrLoadSample baseline = { 0 };

    *sim = (Sim){ .n_copies = n_copies,
                  .rand = g_rand_new_with_seed (seed),
                  .synced_at = G_MAXUINT };
    vmr_controller_config_init (&sim->config, TARGET, MIN_SPEED, max_speed);
    sim->totals = g_array_new (FALSE, FALSE, sizeof (gdouble));
    sim->harms = g_array_new (FALSE, FALSE, sizeof (gdouble));
    sim->kinds = g_array_new (FALSE, FALSE, sizeof (VmrControllerKind));
    /* the caller's baseline: five samples before the copy, as the engine's */
    {
        VmrLoadSample alone[VMR_CONTROLLER_BASELINE_MAX];

        for (guint s = 0; s < G_N_ELEMENTS (alone); s++)
            alone[s] = guest_sample (guest, 0, 0, sim->rand, &sim->owed);
        vmr_controller_baseline (&sim->config, alone, G_N_ELEMENTS (alone), &baseline, &sim->noise);
    }
    for (guint i = 0; i < n_copies; i++) {
        sim->baselines[i] = baseline;
        vmr_controller_state_init (&sim->states[i], 0);
        sim->speeds[i] = vmr_controller_start_speed (&sim->config);
        sim->started_us[i] = -1;
    }
}

void
sim_set_disk (Sim *sim, gdouble disk_bytes, gdouble write_rate)
{
    sim->disk_bytes = disk_bytes;
    sim->write_rate = write_rate;
    sim->backlog = disk_bytes;
    sim->dirty_rate = 0;
    sim->synced_at = G_MAXUINT;
}

void
sim_clear (Sim *sim)
{
    g_rand_free (sim->rand);
    g_array_unref (sim->totals);
    g_array_unref (sim->harms);
    g_array_unref (sim->kinds);
}

static gdouble
copy_rate (guint64 speed)
{
    return speed == 0 || (gdouble) speed > STORAGE ? STORAGE : (gdouble) speed;
}

void
sim_set_transient (Sim *sim, gdouble harm, gint64 duration_us)
{
    gint64 start = (gint64) (g_rand_double_range (sim->rand, 0.05, 0.95) * SECOND);

    sim->transient = harm;
    sim->transient_us = duration_us;
    for (guint i = 0; i < sim->n_copies; i++) {
        vmr_controller_state_init (&sim->states[i], start);
        sim->started_us[i] = start;
    }
}

/* the first buffer of the copies that started, in the sample that ends now */
static void
start_transient (Sim *sim, VmrLoadSample *load)
{
    gdouble share = 0;

    for (guint i = 0; i < sim->n_copies; i++) {
        gint64 from = sim->started_us[i];
        gint64 overlap;

        if (from < 0 || sim->paused[i])
            continue;
        overlap = MIN (sim->now_us, from + sim->transient_us) - MAX (sim->now_us - SECOND, from);
        share = MAX (share, (gdouble) MAX (overlap, 0) / SECOND);
        if (from + sim->transient_us <= sim->now_us)
            sim->started_us[i] = -1;
    }
    if (share <= 0 || sim->transient <= 0 || load->iops <= 0)
        return;
    load->latency_us *= 1 + share * sim->transient;
    load->iops /= 1 + share * sim->transient;
}

/* one sample interval: the guest under the copies, then each copy's decision */
void
sim_step (Sim *sim, const Guest *guest)
{
    gdouble rates[MAX_COPIES] = { 0 };
    gdouble total = 0;
    gdouble total_caps = 0;
    VmrLoadSample load;

    for (guint i = 0; i < sim->n_copies; i++) {
        rates[i] = sim->paused[i] ? 0 : copy_rate (sim->speeds[i]);
        total += rates[i];
    }
    /* the storage is shared */
    for (guint i = 0; total > STORAGE && i < sim->n_copies; i++)
        rates[i] *= STORAGE / total;
    total = MIN (total, STORAGE);
    /* the first copy's disk: what it sent, then what the guest's writes marked again */
    if (sim->disk_bytes > 0 && sim->synced_at == G_MAXUINT) {
        sim->backlog -= MIN (rates[0], sim->backlog);
        if (sim->backlog <= 0) {
            sim->synced_at = sim->totals->len;
        } else {
            sim->dirty_rate = sim->write_rate * (1 - sim->backlog / sim->disk_bytes);
            sim->backlog += sim->dirty_rate;
        }
    }
    sim->now_us += SECOND;
    if (sim->bursts) {
        gdouble felt = sim->lagged_total;

        sim->lagged_total = total;
        total = felt;
    }
    /* the harm the guest felt: with what it owed before this second */
    g_array_append_val (sim->harms, (gdouble){ guest_felt (guest, total, sim->owed) });
    load = guest_sample (guest, total, sim->now_us, sim->rand, &sim->owed);
    start_transient (sim, &load);

    for (guint i = 0; i < sim->n_copies; i++) {
        VmrControllerInput input = {
            .load = load,
            .baseline = sim->baselines[i],
            .speed = sim->speeds[i],
            .copy_rate = (guint64) (sim->bursts && sim->speeds[i] != 0
                                        ? rates[i] * g_rand_double_range (sim->rand, 0, 2)
                                        : rates[i]),
            .n_copies = sim->n_copies,
            .dirty_rate = i == 0 ? (guint64) sim->dirty_rate : 0,
            .noise = sim->noise,
        };
        g_auto (VmrControllerDecision) out = { 0 };

        vmr_controller_step (&sim->config, &sim->states[i], &input, &out);
        g_test_message ("t=%3" G_GINT64_FORMAT " copy %u: %s: %s", sim->now_us / SECOND, i,
                        vmr_controller_kind_to_string (out.kind), out.reason);
        sim->paused[i] = out.kind == VMR_CONTROLLER_MEASURE_BASELINE;
        if (out.kind == VMR_CONTROLLER_BASELINE_TAKEN)
            sim->baselines[i] = out.baseline;
        sim->speeds[i] = out.speed;
        total_caps += copy_rate (out.speed) / MIB;
        g_array_append_val (sim->kinds, out.kind);
    }
    g_array_append_val (sim->totals, total_caps);
}

gdouble
total_at (const Sim *sim, guint sample)
{
    return g_array_index (sim->totals, gdouble, sample);
}

/* the first sample whose total is within @fraction of @knee_mib, or G_MAXUINT */
guint
first_near (const Sim *sim, gdouble knee_mib, gdouble fraction)
{
    for (guint i = 0; i < sim->totals->len; i++)
        if (ABS (total_at (sim, i) - knee_mib) <= fraction * knee_mib)
            return i;
    return G_MAXUINT;
}

/* the lowest and highest total, and how often it turned, over samples [@from, end) */
void
tail_band (const Sim *sim, guint from, gdouble *low, gdouble *high, guint *turns)
{
    gint last_direction = 0;

    *low = G_MAXDOUBLE;
    *high = 0;
    *turns = 0;
    for (guint i = from; i < sim->totals->len; i++) {
        *low = MIN (*low, total_at (sim, i));
        *high = MAX (*high, total_at (sim, i));
        if (i > from && total_at (sim, i) != total_at (sim, i - 1)) {
            gint direction = total_at (sim, i) > total_at (sim, i - 1) ? 1 : -1;

            if (last_direction != 0 && direction != last_direction)
                (*turns)++;
            last_direction = direction;
        }
    }
}

guint
count_kind (const Sim *sim, VmrControllerKind kind)
{
    guint count = 0;

    for (guint i = 0; i < sim->kinds->len; i++)
        count += g_array_index (sim->kinds, VmrControllerKind, i) == kind;
    return count;
}

VmrControllerInput
step_input (const StepSpec *spec, gint64 time_us)
{
    return (VmrControllerInput){
        .load = { time_us, BASE_IOPS * spec->iops, BASE_LAT * spec->latency },
        .baseline = { 0, BASE_IOPS, BASE_LAT },
        .speed = spec->speed,
        .copy_rate = spec->copy_rate != 0 ? spec->copy_rate : spec->speed,
        .n_copies = 1,
        .dirty_rate = spec->dirty_rate,
    };
}

void
step_once (const StepSpec *spec, VmrControllerDecision *out)
{
    VmrControllerConfig config;
    VmrControllerState state;
    VmrControllerInput input = step_input (spec, 5 * SECOND);

    vmr_controller_config_init (&config, TARGET, MIN_SPEED, spec->max_speed);
    /* a hand-made sample long after the copy's start: none of its settling */
    config.settle_us = 0;
    if (spec->min_progress != 0)
        config.min_progress = MAX (spec->min_progress, 0);
    vmr_controller_state_init (&state, 0);
    if (spec->prior_harm > 0) {
        state.harms[0] = state.harms[1] = spec->prior_harm;
        state.n_harms = 2;
        state.n_at_speed = MIN (spec->at_speed, 2);
    }
    vmr_controller_step (&config, &state, &input, out);
}

void
step_case_test (gconstpointer data)
{
    const StepCase *tc = data;
    g_auto (VmrControllerDecision) out = { 0 };

    step_once (&tc->spec, &out);
    g_test_message ("%s: %s", vmr_controller_kind_to_string (out.kind), out.reason);
    g_assert_cmpstr (vmr_controller_kind_to_string (out.kind), ==,
                     vmr_controller_kind_to_string (tc->kind));
    g_assert_cmpuint (out.speed, ==, tc->speed);
    g_assert_nonnull (strstr (out.reason, tc->reason));
}

void
step_feed (const VmrControllerConfig *config, VmrControllerState *state, guint64 speed,
           gdouble latency, gint64 *t, VmrControllerDecision *out)
{
    const StepSpec spec = { latency, 1.0, speed };
    VmrControllerInput input = step_input (&spec, ++*t * SECOND);

    vmr_controller_step (config, state, &input, out);
    g_test_message ("%s: %s", vmr_controller_kind_to_string (out->kind), out->reason);
}
