/*
 * A migration job as virt-mirrord reports it (see docs/protocol.md), read
 * once from the reply so that printing code need not check types.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct {
    JsonNode *node;           /* the job object as received, owned */
    const gchar *id;          /* never NULL */
    const gchar *state;       /* never NULL */
    const gchar *domain;      /* NULL when absent, as are the strings below */
    const gchar *disk;        /* qdev id of the disk */
    const gchar *reason;      /* why it failed or was cancelled */
    const gchar *waiting_for; /* the admission limit that keeps it from starting, or NULL */
    gboolean orphaned;        /* of an earlier run of the daemon, its domain not known again */
    const gchar *source;      /* image path */
    const gchar *source_format;
    const gchar *destination; /* image path */
    const gchar *format;      /* format of the destination */
    gboolean created_destination;
    gboolean manual_pivot;
    guint64 speed; /* bytes/s, 0 = unlimited */
    gboolean has_progress;
    guint64 total;      /* bytes to copy, QEMU's len */
    guint64 done;       /* bytes copied, QEMU's offset */
    guint64 backlog;    /* bytes, total - done */
    guint64 rate;       /* bytes/s, recent */
    guint64 dirty_rate; /* bytes/s the guest's writes add to the backlog, recent */
    gdouble eta;        /* seconds left, < 0 when unknown */
    gint64 created;     /* microseconds since the epoch, 0 when unknown */
    gint64 updated;     /* microseconds since the epoch, 0 when unknown */

    /* what the policy does with the job: its "policy" member */
    gboolean has_policy;
    const gchar *decision;        /* the last action, e.g. "throttle"; NULL when none yet */
    const gchar *decision_reason; /* why, or NULL */
    gdouble held;                 /* seconds the policy has held the copy back, in all */
    gboolean has_base_speed;
    guint64 base_speed;       /* bytes/s of the copy when not throttled, 0 = unlimited */
    gboolean user_paused;     /* paused by a user: the policy leaves it alone */
    GArray *guest_iops;       /* of gint64: the guest's recent IOPS, oldest first; owned */
    gdouble guest_latency_us; /* mean guest I/O latency of the newest sample, < 0 = unknown */

    /* what was done about a copy that did not converge: its "convergence" member */
    const gchar *convergence_state;  /* "converging", "converged", "refused"; NULL = nothing */
    const gchar *converged_by;       /* "speed" or "write-blocking", NULL when absent */
    gint64 converged_since;          /* microseconds since the epoch, 0 when unknown */
    const gchar *convergence_reason; /* why, or NULL */

    /* its last verification: the "verification" member's state, NULL = none */
    const gchar *verify_state; /* "running", "passed", "failed", "error" */
} VmrCliJob;

/*
 * Reads the reply @node of @command (a reference is taken). Sets
 * VMR_ERROR_PROTOCOL when it is not an object with an id and a state.
 */
VmrCliJob *vmr_cli_job_new (JsonNode *node, const gchar *command, GError **error);

void vmr_cli_job_free (VmrCliJob *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliJob, vmr_cli_job_free)

/* whether the job has ended: completed, failed or cancelled */
gboolean vmr_cli_job_is_finished (const VmrCliJob *self);

/* whether the copy is moving: not finished, queued, delayed or paused */
gboolean vmr_cli_job_is_copying (const VmrCliJob *self);

/* "queued (max-parallel)" for a job a limit holds, the state otherwise; free with g_free() */
gchar *vmr_cli_job_format_state (const VmrCliJob *self);

/* "42.5%", or NULL when the size is not known yet; free with g_free() */
gchar *vmr_cli_job_format_percent (const VmrCliJob *self);

/* "700 MiB/s", or NULL when nothing is moving; free with g_free() */
gchar *vmr_cli_job_format_rate (const VmrCliJob *self);
/* "12 MiB/s of the disk (...)": what the guest dirties while the job copies, or NULL */
gchar *vmr_cli_job_format_dirty_rate (const VmrCliJob *self);

/* "2m05s", or NULL when not known; free with g_free() */
gchar *vmr_cli_job_format_eta (const VmrCliJob *self);

/*
 * "converging by write-blocking since 2026-12-01 12:40:01.123: backlog 812 MiB
 * not shrinking over 1m", or NULL when nothing was done; free with g_free()
 */
gchar *vmr_cli_job_format_convergence (const VmrCliJob *self);

/* "throttle (guest busy: ...)", or NULL when there is no decision; free with g_free() */
gchar *vmr_cli_job_format_decision (const VmrCliJob *self);

/* "1402 1398 1410", or NULL when there are no samples; free with g_free() */
gchar *vmr_cli_job_format_guest_iops (const VmrCliJob *self);

/* "800 us", "1.25 ms" or "- (no guest I/O)", or NULL when not known; free with g_free() */
gchar *vmr_cli_job_format_guest_latency (const VmrCliJob *self);

/* a mean I/O latency: "850 us", "1.25 ms", "- (no guest I/O)" for 0; NULL when < 0 */
gchar *vmr_cli_format_latency (gdouble latency_us);

/* "1.0 GiB/2.0 GiB", or NULL when the size is not known yet; free with g_free() */
gchar *vmr_cli_job_format_amount (const VmrCliJob *self);

/* a local time with milliseconds, "2026-11-29 19:10:02.218"; free with g_free() */
gchar *vmr_cli_format_time (gint64 usec_since_epoch);

G_END_DECLS
