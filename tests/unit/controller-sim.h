/*
 * Simulated guests for the closed-loop copy speed's tests: a guest whose
 * harm is a function of the copies' speed, the copies on its I/O thread,
 * each with its controller, sampled once a second, and a disk whose backlog
 * the guest's writes grow; and one step of a fresh controller on a
 * hand-made sample.
 */
#pragma once

#include <glib.h>

#include "controller.h"

#define MIB        (G_GUINT64_CONSTANT (1) << 20)
#define SECOND     G_USEC_PER_SEC
#define TARGET     0.05
#define MIN_SPEED  (8 * MIB)
#define STORAGE    (400.0 * MIB) /* what copies move at most, together */
#define BASE_IOPS  1400.0
#define BASE_LAT   600.0 /* us */
#define MAX_COPIES 2

typedef enum {
    GUEST_FIXED_RATE, /* keeps its IOPS; its latency shows the harm */
    GUEST_IOPS_BOUND, /* loses IOPS; its mean latency does not show it */
    GUEST_IDLE,       /* no I/O */
} GuestKind;

typedef struct {
    GuestKind kind;
    gdouble knee_mib;  /* the copies' total speed the guest takes without harm */
    gdouble steepness; /* harm per knee of speed over the knee; with linear, per knee of speed */
    gboolean linear;   /* harm from the first byte: steepness * speed / knee */
    gdouble noise;     /* each figure of a sample off by up to this fraction, either way */
    gdouble spikes;    /* the share of samples whose latency is 20% to 75% over (QEMU's noise) */
    gdouble floor;     /* the harm of any copy, at any speed over floor_from_mib */
    gdouble floor_from_mib;  /* the copies' total speed from which the floor shows, 0 = any */
    gdouble base_latency_us; /* the latency QEMU sees of the guest alone, 0 = BASE_LAT */
    /*
     * A queue: harm = steepness * total / (knee - total), convex from the
     * first byte and without bound near knee_mib, the storage's budget
     * (at most QUEUE_MAX_HARM); the knee and linear above are unused
     */
    gboolean queueing;
    /*
     * A guest that catches up, as fio under a rate limit does: it can do
     * headroom times its rate at its baseline latency (its queue's room),
     * fewer as the copy slows its I/O (headroom / (1 + harm)), and makes up
     * every I/O a slow second cost it as fast as that allows; the I/O it
     * makes up queues behind its own, its latency rising with it. 0 = a
     * guest that drops what it missed
     */
    gdouble headroom;
} Guest;

#define QUEUE_MAX_HARM 20.0

/* copies on one disk's I/O thread, each with its controller, sampled once a second */
typedef struct {
    VmrControllerConfig config;
    guint n_copies;
    VmrControllerState states[MAX_COPIES];
    VmrLoadSample baselines[MAX_COPIES];
    guint64 speeds[MAX_COPIES]; /* caps, 0 = unlimited */
    gboolean paused[MAX_COPIES];
    GRand *rand;
    gdouble noise; /* the baseline's noise band */
    /*
     * A mirror as QEMU's: under a cap it copies in bursts and sleeps
     * between them, so the rate read over one sample is its cap times 0 to
     * 2; and the guest's figures of a sample are those of the speed one
     * sample before (a one-sample lag)
     */
    gboolean bursts;
    gdouble lagged_total; /* the copies' total of the sample before, bytes/s */
    /*
     * The start transient of QEMU's mirror: its first buffer goes out
     * before its rate limit bites, so a copy's start holds the guest up for
     * transient_us:
     * a sample that it covers in part, a share f of it, shows (1 + f *
     * transient) times the latency and 1 / (1 + f * transient) of the IOPS,
     * at any speed (measured: 11.6 times the latency and 0.10 of the IOPS
     * in a second at 64 MiB/s); 0 = none. sim_set_transient() sets it.
     */
    gdouble transient;
    gint64 transient_us;           /* how long the first buffer holds the guest up */
    gint64 started_us[MAX_COPIES]; /* when each copy started, -1 = long ago */
    gint64 now_us;
    GArray *totals; /* gdouble: the caps' sum after each sample, MiB/s (unlimited: STORAGE) */
    GArray *harms;  /* gdouble: the harm the guest felt in each sample */
    GArray *kinds;  /* VmrControllerKind of each copy, sample by sample */
    /*
     * The disk the first copy moves, for the progress floor: a copy that
     * starts with all of it to copy, into which the guest's writes mark
     * write_rate bytes/s of granules, those that fall into what the copy
     * already sent adding to its backlog (QEMU's len growing). 0 = no disk:
     * no copy ever ends.
     */
    gdouble disk_bytes;
    gdouble write_rate;
    gdouble backlog;    /* bytes left to copy */
    gdouble dirty_rate; /* what the guest's writes added to the backlog in the last sample */
    guint synced_at;    /* the first sample whose copy left no backlog, G_MAXUINT = none */
    gdouble owed;       /* the I/Os a catching-up guest has still to make up */
} Sim;

/* @guest's harm when the copies move @total bytes/s */
gdouble guest_harm (const Guest *guest, gdouble total);
/*
 * the harm @guest feels when the copies move @total bytes/s and it owes
 * @owed of a second's I/O: guest_harm() for a guest that does not catch up
 */
gdouble guest_felt (const Guest *guest, gdouble total, gdouble owed);

/* @n_copies copies at min-speed after a baseline of ten samples; @max_speed 0 = unlimited */
void sim_init (Sim *sim, const Guest *guest, guint n_copies, guint64 max_speed);
/* the same with the noise of @seed instead of the fixed one */
void sim_init_seeded (Sim *sim, const Guest *guest, guint n_copies, guint64 max_speed,
                      guint32 seed);
/*
 * each copy's start holds the guest up by @harm (see Sim.transient) for
 * @duration_us, the copies starting at a random point of the first sample,
 * as the engine's copy starts between two of its samples. Call before the
 * first step.
 */
void sim_set_transient (Sim *sim, gdouble harm, gint64 duration_us);
/* the first copy moves a disk of @disk_bytes into which the guest marks @write_rate bytes/s */
void sim_set_disk (Sim *sim, gdouble disk_bytes, gdouble write_rate);
void sim_clear (Sim *sim);
/* one sample interval: the guest under the copies, then each copy's decision */
void sim_step (Sim *sim, const Guest *guest);

/* the caps' sum after @sample, MiB/s */
gdouble total_at (const Sim *sim, guint sample);
/* the first sample whose total is within @fraction of @knee_mib, or G_MAXUINT */
guint first_near (const Sim *sim, gdouble knee_mib, gdouble fraction);
/* the lowest and highest total, and how often it turned, over samples [@from, end) */
void tail_band (const Sim *sim, guint from, gdouble *low, gdouble *high, guint *turns);
guint count_kind (const Sim *sim, VmrControllerKind kind);

/* one step of a fresh controller on a hand-made sample */
typedef struct {
    gdouble latency;      /* times the baseline's */
    gdouble iops;         /* times the baseline's */
    guint64 speed;        /* the copy's cap, 0 = unlimited */
    guint64 copy_rate;    /* 0 = the cap */
    guint64 max_speed;    /* 0 = unlimited */
    gdouble prior_harm;   /* the harm of the two samples before, in the window, 0 = none */
    guint64 dirty_rate;   /* what the guest's writes add to the backlog, bytes/s, 0 = unknown */
    gdouble min_progress; /* 0 = the built-in, < 0 = off */
    guint at_speed;       /* of the prior_harm samples, those at this speed (at most 2) */
} StepSpec;

VmrControllerInput step_input (const StepSpec *spec, gint64 time_us);
/* one step of a fresh controller, at max-speed spec->max_speed */
void step_once (const StepSpec *spec, VmrControllerDecision *out);

/* a step and what it decides */
typedef struct {
    const gchar *name;
    StepSpec spec;
    VmrControllerKind kind;
    guint64 speed;
    const gchar *reason; /* a part of the reason */
} StepCase;

/* the test of a StepCase */
void step_case_test (gconstpointer data);

/*
 * one step of @state on a sample a second after *@t (which it advances) at
 * @speed, the guest's latency @latency times its baseline's
 */
void step_feed (const VmrControllerConfig *config, VmrControllerState *state, guint64 speed,
                gdouble latency, gint64 *t, VmrControllerDecision *out);
