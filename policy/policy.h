/*
 * The policy file: a GKeyFile INI file owned by config management. It holds
 * [defaults] and selector sections ([domain GLOB], [domain GLOB disk NAME]);
 * for a given domain and disk the most specific section that sets a key wins,
 * key by key, and among equally specific sections the later one in the file.
 */
#pragma once

#include <glib.h>

#include "cluster-config.h"
#include "storage.h"

G_BEGIN_DECLS

typedef enum {
    VMR_ON_MAX_DELAY_PROCEED,
    VMR_ON_MAX_DELAY_FAIL,
} VmrOnMaxDelay;

/* who sets a running copy's speed */
typedef enum {
    VMR_CONTROL_STATIC,   /* speed, and throttle-speed when the load is high */
    VMR_CONTROL_ADAPTIVE, /* the controller: as fast as guest-impact allows */
} VmrControl;

/* how a copy that does not converge is made to */
typedef enum {
    VMR_CONVERGE_BY_SPEED,          /* full speed: finishing sooner is the smaller harm */
    VMR_CONVERGE_BY_WRITE_BLOCKING, /* guest writes go to both images from then on */
} VmrConvergeBy;

/* what happens to a copy that has not finished by its deadline */
typedef enum {
    VMR_ON_DEADLINE_CONTINUE, /* it goes on as before */
    VMR_ON_DEADLINE_CONVERGE, /* it converges, at any cost, by converge-by */
    VMR_ON_DEADLINE_FAIL,     /* it is cancelled: the VM stays on its source */
} VmrOnDeadline;

/* what the free space of a destination's file system is checked against */
typedef enum {
    VMR_SPACE_CHECK_REFUSE, /* a copy that would not fit is refused; copies pause before it fills */
    VMR_SPACE_CHECK_WARN,   /* it is started with a warning; copies pause before it fills */
    VMR_SPACE_CHECK_OFF,    /* neither */
} VmrSpaceCheck;

/* a daily time range, in seconds since local midnight; end < start crosses midnight */
typedef struct {
    gint start; /* 0 to 86399 */
    gint end;   /* 0 to 86400 (24:00), never equal to start */
} VmrWindow;

typedef enum {
    VMR_POLICY_KEY_SAMPLE_INTERVAL,
    VMR_POLICY_KEY_SPEED,
    VMR_POLICY_KEY_IOPS_THROTTLE,
    VMR_POLICY_KEY_THROTTLE_SPEED,
    VMR_POLICY_KEY_IOPS_DELAY,
    VMR_POLICY_KEY_RESUME_BELOW,
    VMR_POLICY_KEY_HOLD,
    VMR_POLICY_KEY_WINDOW,
    VMR_POLICY_KEY_MAX_DELAY,
    VMR_POLICY_KEY_ON_MAX_DELAY,
    /* the admission limits, in the order of VmrLimit */
    VMR_POLICY_KEY_MAX_PARALLEL,
    VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD,
    VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN,
    VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION,
    /* how long and how many finished jobs the daemon keeps */
    VMR_POLICY_KEY_KEEP_FINISHED,
    VMR_POLICY_KEY_KEEP_FINISHED_COUNT,
    /* the closed-loop speed */
    VMR_POLICY_KEY_CONTROL,
    VMR_POLICY_KEY_GUEST_IMPACT,
    VMR_POLICY_KEY_MIN_SPEED,
    VMR_POLICY_KEY_MAX_SPEED,
    VMR_POLICY_KEY_START_SPEED,
    VMR_POLICY_KEY_MIN_PROGRESS,
    VMR_POLICY_KEY_LATENCY_FLOOR,
    VMR_POLICY_KEY_MAX_HARM,
    /* the mirror's dirty-bitmap granularity */
    VMR_POLICY_KEY_GRANULARITY,
    /* the most the mirror has in flight between source and destination */
    VMR_POLICY_KEY_BUF_SIZE,
    /* the latency thresholds, beside the IOPS ones */
    VMR_POLICY_KEY_LATENCY_THROTTLE,
    VMR_POLICY_KEY_LATENCY_DELAY,
    /* a copy that does not converge, and its deadline */
    VMR_POLICY_KEY_CONVERGE_AFTER,
    VMR_POLICY_KEY_CONVERGE_BY,
    VMR_POLICY_KEY_DEADLINE,
    VMR_POLICY_KEY_ON_DEADLINE,
    /* NBD destinations */
    VMR_POLICY_KEY_RECONNECT_DELAY,
    VMR_POLICY_KEY_TLS_CREDS,
    /* compare the old source with the destination after the pivot */
    VMR_POLICY_KEY_VERIFY,
    /* the free space of a destination's file system */
    VMR_POLICY_KEY_SPACE_CHECK,
    VMR_POLICY_KEY_SPACE_MARGIN,
    /* where copies may write, and the symbolic links a destination's path may have */
    VMR_POLICY_KEY_ALLOWED_DESTINATIONS,
    VMR_POLICY_KEY_DESTINATION_SYMLINKS,
    VMR_POLICY_KEY_LAST,
} VmrPolicyKey;

/* the groups of copies an admission limit counts in, checked in this order */
typedef enum {
    VMR_LIMIT_HOST,        /* max-parallel: every copy of the host */
    VMR_LIMIT_IOTHREAD,    /* copies whose source disk one QEMU I/O thread serves */
    VMR_LIMIT_DOMAIN,      /* copies of one domain */
    VMR_LIMIT_DESTINATION, /* copies into one directory or block device */
    VMR_LIMIT_LAST,
} VmrLimit;

/* the key of @limit, e.g. VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN */
#define VMR_POLICY_KEY_OF_LIMIT(limit) ((VmrPolicyKey) (VMR_POLICY_KEY_MAX_PARALLEL + (limit)))

/* the effective values for one disk */
typedef struct {
    gint64 sample_interval_us; /* how often guest load is sampled */
    guint64 speed;             /* bytes/s of a copy at full speed, 0 = unlimited */
    guint64 iops_throttle;     /* guest IOPS above which a copy slows down, 0 = never */
    guint64 throttle_speed;    /* bytes/s of a slowed copy */
    guint64 iops_delay;        /* guest IOPS above which a copy must not run, 0 = never */
    guint resume_below;        /* percent of a threshold the load must fall under */
    gint64 hold_us;            /* ... and stay under, before the copy speeds up again */
    GArray *windows;           /* of VmrWindow; empty = any time */
    gint64 max_delay_us;       /* longest time a copy may be held back, 0 = no limit */
    VmrOnMaxDelay on_max_delay;
    guint64 limits[VMR_LIMIT_LAST]; /* running copies allowed per group, 0 = no limit */
    gint64 keep_finished_us; /* a finished job is forgotten this long after it ended, 0 = never */
    guint keep_finished;     /* at most this many finished jobs are kept, 0 = no limit */
    VmrControl control;
    guint guest_impact;  /* percent of its performance the guest may lose, adaptive */
    guint64 min_speed;   /* bytes/s, > 0: the slowest adaptive copy */
    guint64 max_speed;   /* bytes/s, 0 = unlimited: the fastest adaptive copy */
    guint64 start_speed; /* bytes/s, > 0: where a busy guest's adaptive copy starts */
    guint min_progress;  /* percent an adaptive copy moves over what the guest dirties, 0 = off */
    gint64 latency_floor_us;    /* an adaptive copy's added latency counts against at least this */
    guint max_harm;             /* percent of harm an adaptive copy never passes, floor included */
    guint64 granularity;        /* bytes a guest write makes the mirror copy again, 0 = QEMU's */
    guint64 buf_size;           /* bytes the mirror may have in flight, 0 = QEMU's */
    gint64 latency_throttle_us; /* mean guest latency above which a copy slows down, 0 = never */
    gint64 latency_delay_us;    /* ... above which a copy must not run, 0 = never */
    gint64 converge_after_us;   /* a backlog not shrinking this long: converge, 0 = never */
    VmrConvergeBy converge_by;
    gint64 deadline_us; /* the longest a copy may take from its start, 0 = none */
    VmrOnDeadline on_deadline;
    guint reconnect_delay_s; /* an NBD destination's: QEMU retries this long, 0 = never */
    gchar *tls_creds;        /* directory of x509 files for nbds destinations, NULL = none */
    gboolean verify;         /* compare the old source with the destination after the pivot */
    VmrSpaceCheck space_check;
    guint64 space_margin;       /* bytes a file system keeps free beyond the copies' data */
    GStrv allowed_destinations; /* patterns of destination-pattern.h, NULL = anywhere */
    gboolean refuse_destination_symlinks; /* a symbolic link among a destination's directories
                                           * refuses it */

    /* the section each value came from, e.g. "defaults", "domain web*", or
     * "built-in" for a key no section sets */
    gchar *origin[VMR_POLICY_KEY_LAST];
} VmrPolicyRule;

typedef struct _VmrPolicy VmrPolicy;

/* the built-in policy, used when no file exists */
VmrPolicy *vmr_policy_new_default (void);

/*
 * Loads and validates @path. Every problem is reported, one per line and in
 * the order of the file, as "FILE:LINE: [SECTION] KEY: what is wrong" (the
 * section and key when there is one), in @error (VMR_ERROR_INVALID_ARGUMENT).
 * A file that cannot be read is one line without a line number.
 */
VmrPolicy *vmr_policy_load (const gchar *path, GError **error);

/* the same from text; @name is used in messages */
VmrPolicy *vmr_policy_load_from_data (const gchar *name, const gchar *text, GError **error);

VmrPolicy *vmr_policy_ref (VmrPolicy *self);
void vmr_policy_unref (VmrPolicy *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrPolicy, vmr_policy_unref)

/* where the policy came from: a path, or "built-in" */
const gchar *vmr_policy_get_source (VmrPolicy *self);

/* the [cluster] section, or NULL when the file has none (admission by this host alone) */
const VmrClusterConfig *vmr_policy_get_cluster (VmrPolicy *self);

/* the [storage NAME] sections, of VmrStorage *, in the order of the file */
GPtrArray *vmr_policy_get_storages (VmrPolicy *self);

/* the storage @location (a canonical path or NBD URI) lies in, or NULL */
const VmrStorage *vmr_policy_find_storage (VmrPolicy *self, const gchar *location);

/*
 * What the cluster's per-storage limits count @location under: the name of
 * its [storage] section, else the [cluster] storage prefix @fallback (the
 * directory of a file, a block device, an NBD server) lies under, else
 * @fallback itself. Free with g_free().
 */
gchar *vmr_policy_storage_key (VmrPolicy *self, const gchar *location, const gchar *fallback);

/* the effective values for @disk of @domain (@disk may be NULL) */
VmrPolicyRule *vmr_policy_lookup (VmrPolicy *self, const gchar *domain, const gchar *disk);

void vmr_policy_rule_free (VmrPolicyRule *rule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrPolicyRule, vmr_policy_rule_free)

/* the key's name in the file, e.g. "iops-delay" */
const gchar *vmr_policy_key_name (VmrPolicyKey key);

/*
 * The value of @key in @rule as the file would spell it, e.g. "10s"; it
 * reads back to the same value, except a window of "any time", which the
 * file spells by leaving the key out. Free with g_free().
 */
gchar *vmr_policy_rule_format_value (const VmrPolicyRule *rule, VmrPolicyKey key);

/* TRUE if @seconds_of_day (local time) lies in one of the rule's windows */
gboolean vmr_policy_rule_in_window (const VmrPolicyRule *rule, gint seconds_of_day);

/* "22:00-06:00, 12:00-13:00" or "any time" */
gchar *vmr_policy_rule_format_windows (const VmrPolicyRule *rule);

G_END_DECLS
