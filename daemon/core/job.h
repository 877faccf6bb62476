/*
 * A migration job: the plain record of one disk moving from its source to its
 * destination, and the state machine it follows.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "controller.h"
#include "convergence.h"
#include "destination-handle.h"
#include "destination.h"
#include "job-series.h"
#include "verification.h"

G_BEGIN_DECLS

typedef enum {
    VMR_JOB_STATE_QUEUED,
    VMR_JOB_STATE_DELAYED, /* the policy holds the copy back before it starts */
    VMR_JOB_STATE_COPYING,
    VMR_JOB_STATE_THROTTLED, /* copying at the policy's throttle-speed */
    VMR_JOB_STATE_PAUSED,
    VMR_JOB_STATE_SYNCED,
    VMR_JOB_STATE_PIVOTING,
    VMR_JOB_STATE_COMPLETED,
    VMR_JOB_STATE_FAILED,
    VMR_JOB_STATE_CANCELLED,
    VMR_JOB_STATE_LAST,
} VmrJobState;

typedef struct {
    VmrJobState state;
    gint64 time_us; /* wall clock, microseconds since the epoch */
} VmrJobTransition;

/*
 * The span of len's growth a job's dirty rate is read over: QEMU updates
 * len between its rounds of copying, which a capped mirror spaces out
 */
#define VMR_JOB_DIRTY_WINDOW_US (10 * G_USEC_PER_SEC)

/* QEMU's len at a reading of progress at which it had grown */
typedef struct {
    gint64 time_us; /* monotonic */
    guint64 len;
} VmrLenPoint;

/* one speed a copy ran at, from when on */
typedef struct {
    gint64 time_us; /* monotonic */
    guint64 speed;  /* bytes/s, 0 = unlimited */
} VmrSpeedPoint;

/* what the closed-loop speed (control = adaptive) keeps of a copy */
typedef struct {
    VmrControllerState state;
    VmrLoadSample baseline;      /* the guest without the copy */
    gboolean has_baseline;       /* FALSE: the first sample of the copy measures it */
    gdouble noise;               /* the baseline's noise band, from the samples before the copy */
    VmrLoadSample load;          /* the last sample the controller saw */
    gdouble harm;                /* its harm, 0 when it could not tell */
    VmrControllerKind kind;      /* the last decision */
    gchar *reason;               /* and why, NULL before the first */
    GArray *speeds;              /* of VmrSpeedPoint, the speeds it set, oldest first, bounded */
    GHashTable *neighbours;      /* the other disks on the copy's storages, as engine-neighbours.c
                                  * keeps them: their baselines and last harm; NULL before any */
    gint64 paused_us;            /* monotonic: when the controller's last measuring pause began */
    gint64 neighbour_measure_us; /* when a neighbour that turned busy last asked for one */
} VmrJobAdaptive;

void vmr_job_adaptive_free (VmrJobAdaptive *self);

typedef struct {
    gint ref_count;

    gchar *id;     /* ours, also QEMU's job id, e.g. "vmr-3" */
    gchar *domain; /* domain name */
    gchar *disk;   /* qdev id of the guest device */

    gchar *source;           /* image path before the pivot */
    gchar *source_format;    /* "raw", "qcow2", ... */
    gchar *source_node;      /* top node QEMU used before the pivot */
    gchar *source_file_node; /* its protocol child, NULL if none */
    VmrDestination *dest;    /* where it goes, owned; NULL until the request is checked */
    /* the file the daemon made for the copy, by its identity (vmr_job_set_dest_made()); NULL
     * when it made none, or the record is older than this: then nothing is ever removed */
    VmrDestinationMade *dest_made;
    /* the destination as the daemon opened it to start the copy (vmr_job_set_dest_handle());
     * NULL before the start and after a restart; not saved */
    VmrDestinationHandle *dest_handle;
    VmrNbdExportFacts *nbd; /* what the preflight found on an NBD export, owned; NULL otherwise */
    gboolean manual_pivot;
    guint pivot_retry_ms; /* the wait before the next try of an automatic pivot that was
                           * refused, 0 = none refused yet; not saved */
    /* the last pivot sent got no answer: the connection to the hypervisor broke first; not
     * saved */
    gboolean pivot_unanswered;
    gboolean ready;          /* QEMU reported the copy in sync; it stays so until the end */
    gboolean write_blocking; /* copy-mode write-blocking: guest writes reach both images */
    guint64 granularity;     /* bytes of the mirror's dirty bitmap, 0 = the hypervisor's default */
    guint64 buf_size;        /* bytes the mirror may have in flight, 0 = the hypervisor's default */

    /* what the policy did and why */
    guint64 base_speed;       /* bytes/s when not throttled, 0 = unlimited */
    gboolean speed_from_user; /* base_speed was asked for, not taken from the policy */
    gboolean under_budget;    /* a storage's budget caps the speed: never unlimited, not even
                               * for the moment a pivot lifts the limit to wake the copy */
    gboolean user_paused;     /* paused by a user: the policy leaves it alone */
    gboolean policy_released; /* max-delay passed with proceed */
    gint64 held_since_us;     /* monotonic; when the policy began holding it back, 0 = not */
    gint64 held_total_us;     /* time held back before held_since_us */
    gchar *decision;          /* the last policy action, e.g. "throttle" */
    gchar *decision_reason;   /* and why */
    gboolean policy_busy;     /* a policy action is on its way to QEMU */
    gboolean cancel_sent;     /* a user's cancel is on its way: the policy leaves it; not saved */
    gchar *pending_failure;   /* the reason to report when a cancel we made ends */
    gchar *waiting_for;       /* the admission limit that keeps it from starting, or NULL */
    VmrJobAdaptive *adaptive; /* the closed-loop speed sets its speed; NULL: the static rules */

    /* a copy whose backlog did not shrink, or that ran past its deadline */
    GArray *backlog;             /* of VmrBacklogSample, the recent progress; not saved */
    const gchar *converged_by;   /* "speed" or "write-blocking" (static), NULL = not made to */
    gint64 converged_us;         /* wall clock: when it was made to converge */
    gchar *convergence_reason;   /* why, and what QEMU refused on the way */
    gboolean convergence_failed; /* QEMU refused every way: the copy goes on as before */
    gboolean deadline_passed;    /* on-deadline was applied; not saved */

    /* the free space of the destination's file system (a file destination) */
    guint64 space_need;     /* bytes the copy writes there, counted when it was submitted */
    gchar *space_paused;    /* why the daemon paused it for lack of space, NULL = it did not */
    gboolean no_space;      /* the hypervisor stopped the copy on a full destination; not saved */
    gboolean space_watched; /* space-check is not off: a full file stops the copy (QMP's
                             * on-target-error = enospc) instead of failing it; not saved */

    /* a copy whose cluster slot went with a lease that could not be kept alive */
    gchar *cluster_paused;   /* why the daemon paused it, NULL = it did not */
    gboolean cluster_resume; /* ... it was copying: it resumes once it holds a slot again */

    /* a member of a group: the disks of one domain that cut over together */
    gchar *group;               /* the first member's id, NULL for a job of its own */
    gchar *group_cancel_reason; /* the group failed: cancel this one with this reason */

    /* after the pivot: the old source compared with the destination */
    gboolean verify;               /* asked for (migrate --verify, policy verify = yes) */
    VmrVerification *verification; /* the last one, NULL before the first */

    /* loaded from a record of an earlier run: waits for its domain to be known again */
    gboolean orphaned;

    VmrJobState state;
    gchar *reason; /* why it failed or was cancelled, NULL otherwise */
    guint64 speed; /* bytes/s, 0 = unlimited */

    guint64 total_bytes;     /* QEMU's len */
    guint64 done_bytes;      /* QEMU's offset */
    gdouble rate;            /* bytes/s, smoothed; 0 when unknown */
    gdouble dirty_rate;      /* bytes/s len grows by: what the guest's writes add to the
                              * backlog, over about VMR_JOB_DIRTY_WINDOW_US; 0 = unknown */
    GArray *len_points;      /* of VmrLenPoint: where len grew lately, at least two */
    gint64 progress_time_us; /* monotonic time of the last progress sample, 0 = none */

    gint64 created_us;    /* wall clock */
    gint64 updated_us;    /* wall clock of the last transition */
    GArray *history;      /* of VmrJobTransition */
    VmrJobSeries *series; /* the timeline, about a point a second while active; owned */
} VmrJob;

/* a new job in state queued; @now_us is the wall clock */
VmrJob *vmr_job_new (const gchar *id, const gchar *domain, const gchar *disk, gint64 now_us);
VmrJob *vmr_job_ref (VmrJob *self);
void vmr_job_unref (VmrJob *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrJob, vmr_job_unref)

/* "copying"; never NULL */
const gchar *vmr_job_state_to_string (VmrJobState state);

/* VMR_JOB_STATE_LAST for an unknown name */
VmrJobState vmr_job_state_from_string (const gchar *name);

/* TRUE for completed, failed and cancelled */
gboolean vmr_job_state_is_final (VmrJobState state);

/* whether the state machine allows @from -> @to */
gboolean vmr_job_state_can_transition (VmrJobState from, VmrJobState to);

/*
 * Moves the job to @state, recording @reason (for failed and cancelled) and
 * the time. Returns FALSE and changes nothing if the transition is not
 * allowed.
 */
gboolean vmr_job_set_state (VmrJob *self, VmrJobState state, const gchar *reason, gint64 now_us);

/* whether the job was set to full speed to converge: the policy no longer slows it */
gboolean vmr_job_converges_at_full_speed (VmrJob *self);

/* records the identity of the file the daemon made for @self's copy (copied; NULL: none) */
void vmr_job_set_dest_made (VmrJob *self, const VmrDestinationMade *made);

/* holds @handle, the destination opened for the copy (a reference is taken; NULL lets go) */
void vmr_job_set_dest_handle (VmrJob *self, VmrDestinationHandle *handle);

/* records a progress sample; @mono_us is the monotonic clock */
void vmr_job_update_progress (VmrJob *self, guint64 total_bytes, guint64 done_bytes,
                              gint64 mono_us);

/* the protocol's job object (docs/protocol.md) */
JsonObject *vmr_job_to_json (VmrJob *self);

/* writes DIR/jobs/ID.json atomically */
gboolean vmr_job_save (VmrJob *self, const gchar *state_dir, GError **error);

/*
 * The job of the record @text (@length bytes, as vmr_job_save() writes it),
 * marked orphaned; NULL with @error for text that is not JSON or not a job
 * record.
 */
VmrJob *vmr_job_new_from_record (const gchar *text, gsize length, GError **error);

/*
 * The job of the record at @path, marked orphaned; NULL with @error when it
 * cannot be read or is no job record.
 */
VmrJob *vmr_job_load_record (const gchar *path, GError **error);

/*
 * The jobs of the records DIR/jobs/vmr-N.json, oldest first, those that had
 * not ended marked orphaned; a record that cannot be read is logged and skipped.
 */
GPtrArray *vmr_job_load_records (const gchar *state_dir);

/* the highest N of the records DIR/jobs/vmr-N.json, 0 when there are none */
guint vmr_job_scan_last_number (const gchar *state_dir);

G_END_DECLS
