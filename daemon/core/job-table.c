#define G_LOG_DOMAIN "vmr-daemon"

#include "job-table.h"
#include "job-log.h"

#include <errno.h>
#include <glib/gstdio.h>

/* a finished job, in memory or only as a record of an earlier run */
typedef struct {
    gchar *id;
    gint64 ended_us; /* wall clock */
    VmrJob *job;     /* NULL: on disk only */
} Finished;

struct _VmrJobTable {
    GObject parent_instance;

    gchar *state_dir;
    guint last_number;
    GHashTable *jobs;    /* id -> VmrJob *, every job kept, owned */
    GPtrArray *order;    /* of VmrJob *, every job kept, oldest first */
    GPtrArray *active;   /* of VmrJob *, the jobs that have not ended, oldest first */
    GQueue finished;     /* of Finished *, the earliest ended first */
    GHashTable *waiters; /* job id -> GPtrArray of GTask * waiting for the end */
    gint64 keep_us;
    guint keep_count;
    guint retention_source;
};

enum { SIGNAL_JOB_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE (VmrJobTable, vmr_job_table, G_TYPE_OBJECT)

static void retention_apply (VmrJobTable *self);

static void
finished_free (Finished *f)
{
    g_free (f->id);
    g_free (f);
}

static gchar *
record_path (VmrJobTable *self, const gchar *id)
{
    g_autofree gchar *basename = g_strconcat (id, ".json", NULL);

    return g_build_filename (self->state_dir, "jobs", basename, NULL);
}

static gchar *
last_number_path (VmrJobTable *self)
{
    return g_build_filename (self->state_dir, "jobs", "last-number", NULL);
}

VmrJobTable *
vmr_job_table_new (const gchar *state_dir)
{
    VmrJobTable *self = g_object_new (VMR_TYPE_JOB_TABLE, NULL);
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;

    self->state_dir = g_strdup (state_dir);
    self->last_number = vmr_job_scan_last_number (state_dir);
    /* the records of the newest jobs may have been dropped: the number stays */
    path = last_number_path (self);
    if (g_file_get_contents (path, &text, NULL, NULL)) {
        guint64 number = g_ascii_strtoull (text, NULL, 10);

        if (number <= G_MAXUINT)
            self->last_number = MAX (self->last_number, (guint) number);
    }
    return self;
}

gchar *
vmr_job_table_next_id (VmrJobTable *self)
{
    g_autofree gchar *path = last_number_path (self);
    g_autofree gchar *dir = g_path_get_dirname (path);
    g_autofree gchar *text = g_strdup_printf ("%u\n", ++self->last_number);
    g_autoptr (GError) error = NULL;

    if (g_mkdir_with_parents (dir, 0700) < 0
        || !g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error))
        g_warning ("cannot save the job number in %s: %s", path,
                   error != NULL ? error->message : g_strerror (errno));
    return g_strdup_printf ("vmr-%u", self->last_number);
}

static void
insert (VmrJobTable *self, VmrJob *job)
{
    g_hash_table_insert (self->jobs, g_strdup (job->id), vmr_job_ref (job));
    g_ptr_array_add (self->order, vmr_job_ref (job));
    if (!vmr_job_state_is_final (job->state))
        g_ptr_array_add (self->active, vmr_job_ref (job));
}

void
vmr_job_table_add (VmrJobTable *self, VmrJob *job)
{
    insert (self, job);
    vmr_job_table_save (self, job);
    g_signal_emit (self, signals[SIGNAL_JOB_CHANGED], 0, job, (gint) VMR_JOB_STATE_QUEUED);
}

static gint
compare_ended (gconstpointer a, gconstpointer b, gpointer user_data)
{
    const Finished *fa = a;
    const Finished *fb = b;

    return fa->ended_us < fb->ended_us ? -1 : fa->ended_us > fb->ended_us ? 1 : 0;
}

GPtrArray *
vmr_job_table_load_unfinished (VmrJobTable *self)
{
    g_autoptr (GPtrArray) records = vmr_job_load_records (self->state_dir);
    GPtrArray *loaded = g_ptr_array_new ();

    for (guint i = 0; i < records->len; i++) {
        VmrJob *job = g_ptr_array_index (records, i);

        if (g_hash_table_contains (self->jobs, job->id))
            continue;
        if (vmr_job_state_is_final (job->state)) {
            Finished *f = g_new0 (Finished, 1);

            f->id = g_strdup (job->id);
            f->ended_us = job->updated_us;
            g_queue_insert_sorted (&self->finished, f, compare_ended, NULL);
            continue;
        }
        job->orphaned = TRUE;
        insert (self, job);
        g_ptr_array_add (loaded, job);
    }
    retention_apply (self);
    return loaded;
}

VmrJob *
vmr_job_table_lookup (VmrJobTable *self, const gchar *id)
{
    return id != NULL ? g_hash_table_lookup (self->jobs, id) : NULL;
}

/* the finished job @id of an earlier run whose record the retention rules keep, or NULL */
static Finished *
find_finished (VmrJobTable *self, const gchar *id)
{
    for (GList *l = self->finished.head; id != NULL && l != NULL; l = l->next) {
        if (g_str_equal (((Finished *) l->data)->id, id))
            return l->data;
    }
    return NULL;
}

VmrJob *
vmr_job_table_read (VmrJobTable *self, const gchar *id)
{
    VmrJob *job = vmr_job_table_lookup (self, id);
    Finished *f = job == NULL ? find_finished (self, id) : NULL;
    g_autofree gchar *path = NULL;
    g_autoptr (GError) error = NULL;

    if (job != NULL)
        return vmr_job_ref (job);
    if (f == NULL)
        return NULL;
    if (f->job != NULL)
        return vmr_job_ref (f->job);
    path = record_path (self, id);
    job = vmr_job_load_record (path, &error);
    if (job == NULL)
        g_message ("job %s: cannot read its record %s: %s", id, path, error->message);
    else if (vmr_job_state_is_final (job->state))
        job->orphaned = FALSE;
    return job;
}

VmrJob *
vmr_job_table_lookup_or_load (VmrJobTable *self, const gchar *id)
{
    VmrJob *job = vmr_job_table_lookup (self, id);
    g_autofree gchar *path = NULL;
    g_autoptr (GError) error = NULL;
    Finished *f = job == NULL ? find_finished (self, id) : NULL;
    guint at;

    if (f == NULL || f->job != NULL)
        return job;
    path = record_path (self, id);
    job = vmr_job_load_record (path, &error);
    if (job == NULL || !vmr_job_state_is_final (job->state)) {
        g_message ("job %s: cannot load its record %s: %s", id, path,
                   error != NULL ? error->message : "it has not ended");
        g_clear_pointer (&job, vmr_job_unref);
        return NULL;
    }
    job->orphaned = FALSE;
    /* among the jobs kept, in the order they were made */
    for (at = 0; at < self->order->len; at++) {
        if (((VmrJob *) g_ptr_array_index (self->order, at))->created_us > job->created_us)
            break;
    }
    g_hash_table_insert (self->jobs, g_strdup (job->id), job);
    g_ptr_array_insert (self->order, (gint) at, vmr_job_ref (job));
    f->job = job;
    return job;
}

GPtrArray *
vmr_job_table_get_active (VmrJobTable *self)
{
    return self->active;
}

GPtrArray *
vmr_job_table_list (VmrJobTable *self)
{
    GPtrArray *list = g_ptr_array_sized_new (self->order->len);

    for (guint i = 0; i < self->order->len; i++)
        g_ptr_array_add (list, g_ptr_array_index (self->order, i));
    return list;
}

VmrJob *
vmr_job_table_active_for_disk (VmrJobTable *self, const gchar *domain, const gchar *disk)
{
    for (guint i = 0; i < self->active->len; i++) {
        VmrJob *job = g_ptr_array_index (self->active, i);

        if (g_strcmp0 (job->domain, domain) == 0 && g_strcmp0 (job->disk, disk) == 0)
            return job;
    }
    return NULL;
}

VmrJob *
vmr_job_table_active_for_destination (VmrJobTable *self, const gchar *destination)
{
    for (guint i = 0; i < self->active->len; i++) {
        VmrJob *job = g_ptr_array_index (self->active, i);

        if (vmr_destination_same_target (job->dest, destination))
            return job;
    }
    return NULL;
}

void
vmr_job_table_save (VmrJobTable *self, VmrJob *job)
{
    g_autoptr (GError) error = NULL;

    /* the job goes on: a record that lags is logged, not fatal */
    if (!vmr_job_save (job, self->state_dir, &error))
        g_warning ("%s", error->message);
}

/* the time the policy held the job back, for its report */
static void
account_held (VmrJob *job)
{
    gint64 now = g_get_monotonic_time ();
    gboolean held = job->state == VMR_JOB_STATE_DELAYED
                    || (job->state == VMR_JOB_STATE_PAUSED && !job->user_paused);

    if (held && job->held_since_us == 0)
        job->held_since_us = now;
    if (!held && job->held_since_us != 0) {
        job->held_total_us += now - job->held_since_us;
        job->held_since_us = 0;
    }
}

static void
complete_waiters (VmrJobTable *self, VmrJob *job)
{
    g_autoptr (GPtrArray) tasks = NULL;
    g_autofree gchar *key = NULL;

    if (!g_hash_table_steal_extended (self->waiters, job->id, (gpointer *) &key,
                                      (gpointer *) &tasks))
        return;
    for (guint i = 0; i < tasks->len; i++) {
        GTask *task = g_ptr_array_index (tasks, i);

        g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
    }
}

/* @job ended: out of the active jobs, into the care of the retention rules */
static void
job_ended (VmrJobTable *self, VmrJob *job)
{
    Finished *f = g_new0 (Finished, 1);

    g_ptr_array_remove (self->active, job);
    f->id = g_strdup (job->id);
    f->ended_us = job->updated_us;
    f->job = job;
    g_queue_insert_sorted (&self->finished, f, compare_ended, NULL);
    retention_apply (self);
}

gboolean
vmr_job_table_set_state (VmrJobTable *self, VmrJob *job, VmrJobState state, const gchar *reason)
{
    VmrJobState previous = job->state;

    /* an ended job waits for nothing */
    if (vmr_job_state_is_final (state))
        job->orphaned = FALSE;
    if (!vmr_job_set_state (job, state, reason, g_get_real_time ())) {
        g_debug ("job %s: ignoring %s -> %s", job->id, vmr_job_state_to_string (previous),
                 vmr_job_state_to_string (state));
        return FALSE;
    }
    if (reason != NULL)
        vmr_job_message (job, "job %s (%s %s -> %s): %s -> %s: %s", job->id, job->domain, job->disk,
                         job->dest->location, vmr_job_state_to_string (previous),
                         vmr_job_state_to_string (state), reason);
    else
        vmr_job_message (job, "job %s (%s %s -> %s): %s -> %s", job->id, job->domain, job->disk,
                         job->dest->location, vmr_job_state_to_string (previous),
                         vmr_job_state_to_string (state));
    account_held (job);
    /* only a job that has not started waits for a limit */
    if (state != VMR_JOB_STATE_QUEUED && state != VMR_JOB_STATE_DELAYED)
        g_clear_pointer (&job->waiting_for, g_free);
    vmr_job_table_save (self, job);
    /* the job stays valid through the handlers and the waiters */
    vmr_job_ref (job);
    g_signal_emit (self, signals[SIGNAL_JOB_CHANGED], 0, job, (gint) previous);
    if (vmr_job_state_is_final (state)) {
        complete_waiters (self, job);
        job_ended (self, job);
    }
    vmr_job_unref (job);
    return TRUE;
}

void
vmr_job_table_add_waiter (VmrJobTable *self, VmrJob *job, GTask *task)
{
    GPtrArray *tasks;

    if (vmr_job_state_is_final (job->state)) {
        g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
        g_object_unref (task);
        return;
    }
    tasks = g_hash_table_lookup (self->waiters, job->id);
    if (tasks == NULL) {
        tasks = g_ptr_array_new_with_free_func (g_object_unref);
        g_hash_table_insert (self->waiters, g_strdup (job->id), tasks);
    }
    g_ptr_array_add (tasks, task);
}

/* ---- retention ---- */

static void
forget (VmrJobTable *self, Finished *f)
{
    g_autofree gchar *path = record_path (self, f->id);

    if (g_unlink (path) < 0 && errno != ENOENT)
        g_warning ("cannot remove the record of job %s: %s", f->id, g_strerror (errno));
    if (f->job != NULL) {
        g_ptr_array_remove (self->order, f->job);
        /* last: the table's reference may be the last one */
        g_hash_table_remove (self->jobs, f->id);
    }
    g_debug ("job %s: finished long enough, forgotten", f->id);
    finished_free (f);
}

static gboolean
retention_timeout_cb (gpointer user_data)
{
    VmrJobTable *self = user_data;

    self->retention_source = 0;
    retention_apply (self);
    return G_SOURCE_REMOVE;
}

static void
retention_apply (VmrJobTable *self)
{
    gint64 now = g_get_real_time ();
    Finished *oldest;

    g_clear_handle_id (&self->retention_source, g_source_remove);
    while (self->keep_count > 0 && self->finished.length > self->keep_count)
        forget (self, g_queue_pop_head (&self->finished));
    while (self->keep_us > 0 && (oldest = g_queue_peek_head (&self->finished)) != NULL
           && now - oldest->ended_us >= self->keep_us)
        forget (self, g_queue_pop_head (&self->finished));
    oldest = g_queue_peek_head (&self->finished);
    if (self->keep_us > 0 && oldest != NULL) {
        gint64 due_ms = (oldest->ended_us + self->keep_us - now + 999) / 1000;

        self->retention_source
            = g_timeout_add ((guint) CLAMP (due_ms, 1, G_MAXUINT), retention_timeout_cb, self);
    }
}

void
vmr_job_table_set_retention (VmrJobTable *self, gint64 keep_us, guint keep_count)
{
    self->keep_us = MAX (keep_us, 0);
    self->keep_count = keep_count;
    retention_apply (self);
}

/* ---- object ---- */

static void
vmr_job_table_finalize (GObject *object)
{
    VmrJobTable *self = VMR_JOB_TABLE (object);

    g_clear_handle_id (&self->retention_source, g_source_remove);
    g_queue_clear_full (&self->finished, (GDestroyNotify) finished_free);
    g_hash_table_unref (self->waiters);
    g_ptr_array_unref (self->active);
    g_ptr_array_unref (self->order);
    g_hash_table_unref (self->jobs);
    g_free (self->state_dir);
    G_OBJECT_CLASS (vmr_job_table_parent_class)->finalize (object);
}

static void
vmr_job_table_init (VmrJobTable *self)
{
    self->jobs
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) vmr_job_unref);
    self->order = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    self->active = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    self->waiters = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify) g_ptr_array_unref);
    g_queue_init (&self->finished);
}

static void
vmr_job_table_class_init (VmrJobTableClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->finalize = vmr_job_table_finalize;
    signals[SIGNAL_JOB_CHANGED]
        = g_signal_new ("job-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_INT);
}
