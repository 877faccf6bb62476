#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The free space of the file systems that copies write into (file
 * destinations; a block device has its size checked, an NBD export by its
 * preflight). Before a copy: what it will really write, the source's
 * allocated bytes, plus the policy's space-margin, must fit beside what the
 * copies already going there still write. During the copies: after each
 * load sample, the copies to a file system whose free space falls under the
 * margin (plus what they may write until the next look) are paused, and
 * resumed once there is room again. docs/operations.md tells the whole story.
 */

#include "engine-private.h"

#include <errno.h>
#include <gio/gunixmounts.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "destination.h"
#include "units.h"
#include "vmr-error.h"

/* how many sample intervals ahead the watch counts what a running copy writes */
#define LOOKAHEAD_INTERVALS 2

/* one file system that copies write into */
typedef struct {
    gchar *name;        /* its mount point, or a directory of it */
    guint64 free_bytes; /* what a writer other than root may still use */
    guint64 margin;     /* the largest space-margin of the copies to it */
    guint64 remaining;  /* what the copies counted still write there */
    guint64 lookahead;  /* what the running ones may write until the next look */
    GPtrArray *jobs;    /* of VmrJob *, borrowed: the copies counted */
    guint64 claimed;    /* a request's new copies: what they write */
    guint64 claim_margin;
    const gchar *first_claim; /* the first of their destinations, borrowed */
    guint n_claims;
    gboolean refuse; /* a new copy's space-check is refuse, not warn */
} SpaceFs;

static void
space_fs_free (SpaceFs *fs)
{
    g_free (fs->name);
    g_ptr_array_unref (fs->jobs);
    g_free (fs);
}

/* the path whose file system @dest lies on: the file, or its directory before it exists */
static gchar *
existing_path (const VmrDestination *dest)
{
    if (g_file_test (dest->location, G_FILE_TEST_EXISTS))
        return g_strdup (dest->location);
    return g_path_get_dirname (dest->location);
}

/* the file system of @dest in @table (dev_t -> SpaceFs *), looked at once; NULL if unreadable */
static SpaceFs *
lookup_fs (GHashTable *table, const VmrDestination *dest)
{
    g_autofree gchar *path = existing_path (dest);
    g_autofree gchar *dir = NULL;
    GUnixMountEntry *mount;
    struct statvfs vfs;
    struct stat st;
    SpaceFs *fs;

    if (stat (path, &st) != 0)
        return NULL;
    fs = g_hash_table_lookup (table, GSIZE_TO_POINTER ((gsize) st.st_dev));
    if (fs != NULL)
        return fs;
    if (statvfs (path, &vfs) != 0)
        return NULL;
    dir = S_ISDIR (st.st_mode) ? g_strdup (path) : g_path_get_dirname (path);
    fs = g_new0 (SpaceFs, 1);
    fs->free_bytes = (guint64) vfs.f_bavail * vfs.f_frsize;
    fs->jobs = g_ptr_array_new ();
    mount = g_unix_mount_for (dir, NULL);
    fs->name = g_strdup (mount != NULL ? g_unix_mount_get_mount_path (mount) : dir);
    if (mount != NULL)
        g_unix_mount_free (mount);
    g_hash_table_insert (table, GSIZE_TO_POINTER ((gsize) st.st_dev), fs);
    return fs;
}

/* what a copy of @need bytes still writes into @dest: less what the file holds already */
static guint64
remaining_of (const VmrDestination *dest, guint64 need)
{
    struct stat st;
    guint64 held;

    if (stat (dest->location, &st) != 0)
        return need;
    held = (guint64) st.st_blocks * 512;
    return need > held ? need - held : 0;
}

/* whether the watch looks at @job's destination at all */
static gboolean
counts (const VmrJob *job)
{
    return vmr_engine_job_is_active ((VmrJob *) job) && job->dest != NULL
           && job->dest->kind == VMR_DESTINATION_FILE;
}

static gboolean
is_writing (const VmrJob *job)
{
    return job->state == VMR_JOB_STATE_COPYING || job->state == VMR_JOB_STATE_THROTTLED;
}

/* the file systems of every active copy whose policy checks space (dev_t -> SpaceFs *) */
static GHashTable *
collect (VmrEngine *self)
{
    GHashTable *table = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                               (GDestroyNotify) space_fs_free);
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);
        g_autoptr (VmrPolicyRule) rule = NULL;
        guint64 remaining;
        SpaceFs *fs;

        if (!counts (job) || job->state == VMR_JOB_STATE_PIVOTING)
            continue;
        rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
        if (rule->space_check == VMR_SPACE_CHECK_OFF)
            continue;
        fs = lookup_fs (table, job->dest);
        if (fs == NULL)
            continue;
        remaining = remaining_of (job->dest, job->space_need);
        fs->remaining += remaining;
        fs->margin = MAX (fs->margin, rule->space_margin);
        g_ptr_array_add (fs->jobs, job);
        if (is_writing (job)) {
            gdouble rate = job->speed > 0 ? (gdouble) job->speed : job->rate;
            gdouble ahead = rate * LOOKAHEAD_INTERVALS * rule->sample_interval_us / G_USEC_PER_SEC;

            fs->lookahead += MIN (remaining, (guint64) ahead);
        }
    }
    return table;
}

/* ---- before a copy ---- */

guint64
vmr_engine_space_need (const VmrDestination *dest, const VmrDisk *disk)
{
    return dest->kind == VMR_DESTINATION_FILE ? disk->allocated : 0;
}

/* one line on @fs's new copies that do not fit */
static gchar *
shortfall_message (SpaceFs *fs, guint64 others)
{
    g_autofree gchar *free_text = vmr_units_format_bytes (fs->free_bytes);
    g_autofree gchar *need = vmr_units_format_bytes (fs->claimed + fs->claim_margin);
    g_autofree gchar *data = vmr_units_format_bytes (fs->claimed);
    g_autofree gchar *margin = vmr_units_format_bytes (fs->claim_margin);
    g_autofree gchar *others_text = vmr_units_format_bytes (fs->remaining);
    g_autofree gchar *copies
        = fs->n_claims > 1 ? g_strdup_printf (" and %u more", fs->n_claims - 1) : g_strdup ("");
    g_autofree gchar *running
        = others > 0 ? g_strdup_printf (
              ", beside %s that %" G_GUINT64_FORMAT " other cop%s to it still write%s", others_text,
              others, others == 1 ? "y" : "ies", others == 1 ? "s" : "")
                     : g_strdup ("");

    return g_strdup_printf ("not enough space for %s%s: its file system %s has %s free, the copy "
                            "needs %s (%s of data and a space-margin of %s)%s",
                            fs->first_claim, copies, fs->name, free_text, need, data, margin,
                            running);
}

gboolean
vmr_engine_space_check (VmrEngine *self, const gchar *domain, const VmrEngineSpaceClaim *claims,
                        guint n_claims, GError **error)
{
    g_autoptr (GHashTable) table = collect (self);
    GHashTableIter iter;
    SpaceFs *fs;

    for (guint i = 0; i < n_claims; i++) {
        g_autoptr (VmrPolicyRule) rule
            = vmr_policy_lookup (self->policy, domain, claims[i].disk->id);

        if (claims[i].dest->kind != VMR_DESTINATION_FILE
            || rule->space_check == VMR_SPACE_CHECK_OFF)
            continue;
        fs = lookup_fs (table, claims[i].dest);
        if (fs == NULL)
            continue;
        if (fs->first_claim == NULL)
            fs->first_claim = claims[i].dest->location;
        fs->n_claims++;
        fs->claimed += remaining_of (claims[i].dest,
                                     vmr_engine_space_need (claims[i].dest, claims[i].disk));
        fs->claim_margin = MAX (fs->claim_margin, rule->space_margin);
        fs->refuse = fs->refuse || rule->space_check == VMR_SPACE_CHECK_REFUSE;
    }
    g_hash_table_iter_init (&iter, table);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &fs)) {
        g_autofree gchar *message = NULL;

        if (fs->n_claims == 0 || fs->free_bytes >= fs->remaining + fs->claimed + fs->claim_margin)
            continue;
        message = shortfall_message (fs, fs->jobs->len);
        if (fs->refuse) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "%s", message);
            return FALSE;
        }
        g_warning ("%s (space-check = warn: the copy starts anyway)", message);
    }
    return TRUE;
}

/* ---- during the copies ---- */

static void
note (VmrJob *job, const gchar *action, const gchar *reason)
{
    g_free (job->decision);
    job->decision = g_strdup (action);
    g_free (job->decision_reason);
    job->decision_reason = g_strdup (reason);
    g_message ("job %s (%s %s): %s: %s", job->id, job->domain, job->disk, action, reason);
}

static void
pause_job (VmrEngine *self, VmrJob *job, const gchar *reason)
{
    VmrEngineAction *action = vmr_engine_action_new (self, job, VMR_JOB_STATE_PAUSED);

    g_free (job->space_paused);
    job->space_paused = g_strdup (reason);
    note (job, "pause", reason);
    vmr_engine_action_step (action, VMR_BACKEND_COMMAND_PAUSE, 0);
}

static void
resume_job (VmrEngine *self, VmrJob *job, const gchar *reason)
{
    /* a copy the policy had slowed before the pause is still slowed */
    VmrEngineAction *action = vmr_engine_action_new (
        self, job, job->speed != job->base_speed ? VMR_JOB_STATE_THROTTLED : VMR_JOB_STATE_COPYING);

    g_clear_pointer (&job->space_paused, g_free);
    note (job, "resume", reason);
    vmr_engine_action_step (action, VMR_BACKEND_COMMAND_RESUME, 0);
}

/* "destination file system /x has 12 MiB free, ..." */
static gchar *
low_message (const SpaceFs *fs, const gchar *verb)
{
    g_autofree gchar *free_text = vmr_units_format_bytes (fs->free_bytes);
    g_autofree gchar *margin = vmr_units_format_bytes (fs->margin);
    g_autofree gchar *remaining = vmr_units_format_bytes (fs->remaining);

    return g_strdup_printf ("destination file system %s has %s free %s its space-margin of %s; "
                            "the copies to it still write %s",
                            fs->name, free_text, verb, margin, remaining);
}

static void
watch_fs (VmrEngine *self, const SpaceFs *fs)
{
    guint64 low = fs->margin + fs->lookahead;
    /* resumed with room for the rest, or for a margin more than it pauses at */
    guint64 high = low + MIN (fs->remaining, fs->margin);
    g_autofree gchar *reason = NULL;

    /* a copy whose pause QEMU refused runs: it is not paused for space */
    for (guint i = 0; i < fs->jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (fs->jobs, i);

        if (is_writing (job) && !job->policy_busy)
            g_clear_pointer (&job->space_paused, g_free);
    }
    if (fs->free_bytes < low) {
        reason = low_message (fs, "(with what the copies write until the next look), below");
        for (guint i = 0; i < fs->jobs->len; i++) {
            VmrJob *job = g_ptr_array_index (fs->jobs, i);

            if (is_writing (job) && !job->policy_busy && !job->orphaned)
                pause_job (self, job, reason);
        }
        return;
    }
    if (fs->free_bytes < high)
        return;
    reason = low_message (fs, "again, above");
    for (guint i = 0; i < fs->jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (fs->jobs, i);

        if (job->space_paused != NULL && job->state == VMR_JOB_STATE_PAUSED && !job->policy_busy
            && !job->orphaned && job->cluster_paused == NULL)
            resume_job (self, job, reason);
    }
}

/* a copy paused for space whose policy no longer checks it goes on */
static void
release_unchecked (VmrEngine *self)
{
    GPtrArray *active = vmr_job_table_get_active (self->jobs);
    g_autoptr (GPtrArray) jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);

    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);
        g_autoptr (VmrPolicyRule) rule = NULL;

        if (job->space_paused == NULL || job->policy_busy || job->orphaned
            || job->cluster_paused != NULL)
            continue;
        rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
        if (rule->space_check == VMR_SPACE_CHECK_OFF && job->state == VMR_JOB_STATE_PAUSED)
            g_ptr_array_add (jobs, vmr_job_ref (job));
    }
    for (guint i = 0; i < jobs->len; i++)
        resume_job (self, g_ptr_array_index (jobs, i), "space-check = off");
}

void
vmr_engine_space_watch (VmrEngine *self)
{
    g_autoptr (GHashTable) table = collect (self);
    GHashTableIter iter;
    SpaceFs *fs;

    g_hash_table_iter_init (&iter, table);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &fs))
        watch_fs (self, fs);
    release_unchecked (self);
}

void
vmr_engine_space_progress (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    g_autoptr (VmrPolicyRule) rule = NULL;
    g_autoptr (GHashTable) table = NULL;
    g_autofree gchar *reason = NULL;
    g_autofree gchar *free_text = NULL;
    SpaceFs *fs;

    /* QEMU stopped the copy on ENOSPC (on-target-error = enospc): it is paused, whether
     * or not the watch had asked for that too (QEMU then refused its pause) */
    if (!job->no_space || job->policy_busy
        || (!is_writing (job) && job->state != VMR_JOB_STATE_SYNCED))
        return;
    rule = vmr_policy_lookup (self->policy, job->domain, job->disk);
    table = collect (self);
    fs = counts (job) ? lookup_fs (table, job->dest) : NULL;
    free_text = vmr_units_format_bytes (fs != NULL ? fs->free_bytes : 0);
    reason = g_strdup_printf ("QEMU stopped the copy: %s (destination file system %s, %s free)",
                              g_strerror (ENOSPC), fs != NULL ? fs->name : job->dest->location,
                              free_text);
    if (rule->space_check == VMR_SPACE_CHECK_OFF) {
        /* nothing will resume it: it fails, and the VM stays on its source */
        VmrEngineAction *action = vmr_engine_action_new (self, job, job->state);

        g_free (job->pending_failure);
        job->pending_failure = g_strdup_printf ("%s; space-check = off", reason);
        vmr_engine_action_step (action, VMR_BACKEND_COMMAND_CANCEL, 0);
        return;
    }
    g_free (job->space_paused);
    job->space_paused = g_strdup (reason);
    note (job, "pause", reason);
    vmr_engine_set_job_state (self, job, VMR_JOB_STATE_PAUSED, reason);
}
