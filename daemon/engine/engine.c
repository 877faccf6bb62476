#define G_LOG_DOMAIN "vmr-daemon"

#include "engine.h"

#include "engine-private.h"

#include "destination.h"
#include "vmr-error.h"

enum { SIGNAL_JOB_CHANGED, SIGNAL_HOOK_EVENT, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_TYPE (VmrEngine, vmr_engine, G_TYPE_OBJECT)

static void
domain_entry_free (DomainEntry *entry)
{
    if (entry->progress_source != 0)
        g_source_remove (entry->progress_source);
    if (entry->backend != NULL) {
        g_signal_handlers_disconnect_by_data (entry->backend, entry);
        vmr_backend_close (entry->backend);
        g_object_unref (entry->backend);
    }
    vmr_engine_policy_forget (entry);
    g_clear_pointer (&entry->disks, g_ptr_array_unref);
    g_free (entry->name);
    g_free (entry);
}

gboolean
vmr_engine_job_is_active (VmrJob *job)
{
    return !vmr_job_state_is_final (job->state);
}

VmrJob *
vmr_engine_active_job_for_disk (VmrEngine *self, const gchar *domain, const gchar *disk)
{
    for (guint i = 0; i < self->job_order->len; i++) {
        VmrJob *job = g_ptr_array_index (self->job_order, i);

        if (vmr_engine_job_is_active (job) && g_strcmp0 (job->domain, domain) == 0
            && g_strcmp0 (job->disk, disk) == 0)
            return job;
    }
    return NULL;
}

VmrJob *
vmr_engine_active_job_for_destination (VmrEngine *self, const gchar *destination)
{
    for (guint i = 0; i < self->job_order->len; i++) {
        VmrJob *job = g_ptr_array_index (self->job_order, i);

        if (vmr_engine_job_is_active (job) && vmr_destination_same_target (job->dest, destination))
            return job;
    }
    return NULL;
}

static void
complete_waiters (VmrEngine *self, VmrJob *job)
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

void
vmr_engine_save_job (VmrEngine *self, VmrJob *job)
{
    g_autoptr (GError) error = NULL;

    /* the job goes on: a record that lags is logged, not fatal */
    if (!vmr_job_save (job, self->state_dir, &error))
        g_warning ("%s", error->message);
}

/* moves @job to @state: logs it, saves the record and tells the watchers */
gboolean
vmr_engine_set_job_state (VmrEngine *self, VmrJob *job, VmrJobState state, const gchar *reason)
{
    VmrJobState previous = job->state;
    DomainEntry *entry;

    /* an ended job waits for nothing */
    if (vmr_job_state_is_final (state))
        job->orphaned = FALSE;
    if (!vmr_job_set_state (job, state, reason, g_get_real_time ())) {
        g_debug ("job %s: ignoring %s -> %s", job->id, vmr_job_state_to_string (previous),
                 vmr_job_state_to_string (state));
        return FALSE;
    }
    if (reason != NULL)
        g_message ("job %s (%s %s -> %s): %s -> %s: %s", job->id, job->domain, job->disk,
                   job->dest->location, vmr_job_state_to_string (previous),
                   vmr_job_state_to_string (state), reason);
    else
        g_message ("job %s (%s %s -> %s): %s -> %s", job->id, job->domain, job->disk,
                   job->dest->location, vmr_job_state_to_string (previous),
                   vmr_job_state_to_string (state));
    vmr_engine_policy_job_changed (self, job, previous);
    /* only a job that has not started waits for a limit */
    if (state != VMR_JOB_STATE_QUEUED && state != VMR_JOB_STATE_DELAYED)
        g_clear_pointer (&job->waiting_for, g_free);
    vmr_engine_save_job (self, job);
    g_signal_emit (self, signals[SIGNAL_JOB_CHANGED], 0, job, (gint) previous);
    if (vmr_job_state_is_final (state)) {
        /* before the waiters: a group's reply waits for all its members */
        vmr_engine_group_member_ended (self, job);
        complete_waiters (self, job);
        /* a slot may be free, or the job was first in line for one */
        vmr_engine_admission_schedule (self);
    } else if (state == VMR_JOB_STATE_SYNCED) {
        /* its bulk copy is over: its slot is free for the next in line */
        vmr_engine_admission_schedule (self);
    }
    /* a copy that was on its way to QEMU when its group failed */
    if (job->group_cancel_reason != NULL
        && (previous == VMR_JOB_STATE_QUEUED || previous == VMR_JOB_STATE_DELAYED))
        vmr_engine_group_cancel_member (self, job);
    entry = g_hash_table_lookup (self->domains, job->domain);
    if (entry != NULL)
        vmr_engine_update_timers (self, entry);
    return TRUE;
}

/* ---- progress ---- */

static void
progress_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autofree gchar *domain_name = user_data;
    VmrBackend *backend = VMR_BACKEND (source);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) progress = NULL;
    VmrEngine *self = g_object_get_data (G_OBJECT (backend), "vmr-engine");
    DomainEntry *entry;

    progress = vmr_backend_query_progress_finish (backend, res, &error);
    if (self == NULL)
        return;
    entry = g_hash_table_lookup (self->domains, domain_name);
    if (entry == NULL || entry->backend != backend)
        return;
    entry->progress_in_flight = FALSE;
    if (progress == NULL) {
        g_debug ("progress of %s: %s", domain_name, error->message);
        return;
    }
    for (guint i = 0; i < progress->len; i++) {
        VmrBackendProgress *p = g_ptr_array_index (progress, i);
        VmrJob *job = g_hash_table_lookup (self->jobs, p->job_id);

        if (job == NULL || !vmr_engine_job_is_active (job))
            continue;
        vmr_job_update_progress (job, p->total_bytes, p->done_bytes, g_get_monotonic_time ());
        job->speed = p->speed;
    }
}

static gboolean
progress_tick_cb (gpointer user_data)
{
    DomainEntry *entry = user_data;

    if (entry->progress_in_flight || !entry->connected)
        return G_SOURCE_CONTINUE;
    entry->progress_in_flight = TRUE;
    vmr_backend_query_progress_async (entry->backend, NULL, progress_cb, g_strdup (entry->name));
    return G_SOURCE_CONTINUE;
}

void
vmr_engine_update_timers (VmrEngine *self, DomainEntry *entry)
{
    gboolean wanted = FALSE;

    for (guint i = 0; entry->connected && i < self->job_order->len; i++) {
        VmrJob *job = g_ptr_array_index (self->job_order, i);

        if (vmr_engine_job_is_active (job) && g_strcmp0 (job->domain, entry->name) == 0)
            wanted = TRUE;
    }
    if (wanted && entry->progress_source == 0)
        entry->progress_source = g_timeout_add (PROGRESS_INTERVAL_MS, progress_tick_cb, entry);
    else if (!wanted && entry->progress_source != 0)
        g_clear_handle_id (&entry->progress_source, g_source_remove);
}

DomainEntry *
vmr_engine_lookup_domain (VmrEngine *self, const gchar *name, GError **error)
{
    DomainEntry *entry = name != NULL ? g_hash_table_lookup (self->domains, name) : NULL;

    if (entry == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "unknown domain '%s'",
                     name != NULL ? name : "");
    return entry;
}

void
vmr_engine_hook_event (VmrEngine *self, const gchar *domain, const gchar *op, const gchar *subop,
                       const gchar *uuid)
{
    g_debug ("hook: %s %s %s", domain, op, subop != NULL ? subop : "-");
    g_signal_emit (self, signals[SIGNAL_HOOK_EVENT], 0, domain, op, subop, uuid);
}

/* ---- migrate ---- */

typedef struct {
    gchar *disk;
    gchar *destination;
    gchar *format;
    VmrDestination *dest; /* made by check_target() */
} MigrateTarget;

typedef struct {
    gchar *domain;
    GArray *targets; /* of MigrateTarget */
    gboolean reuse;
    guint64 speed;
    gboolean speed_given;
    gboolean manual_pivot;
    GPtrArray *jobs; /* of VmrJob *, the new ones */
    guint pending;   /* members not started or waiting yet */
    GError *error;   /* the first member that could not start */
} MigrateData;

static void
migrate_target_clear (MigrateTarget *target)
{
    g_free (target->disk);
    g_free (target->destination);
    g_free (target->format);
    g_clear_pointer (&target->dest, vmr_destination_unref);
}

static void
migrate_data_free (MigrateData *data)
{
    g_free (data->domain);
    g_array_unref (data->targets);
    g_ptr_array_unref (data->jobs);
    g_clear_error (&data->error);
    g_free (data);
}

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    VmrJobState state; /* copying or throttled */
    GTask *task;       /* may be NULL */
} StartData;

static void
copy_started_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    StartData *data = user_data;
    g_autoptr (GError) error = NULL;

    data->job->policy_busy = FALSE;
    if (!vmr_backend_start_copy_finish (VMR_BACKEND (source), res, &error)) {
        vmr_engine_set_job_state (data->engine, data->job, VMR_JOB_STATE_FAILED, error->message);
        if (data->task != NULL)
            g_task_return_error (data->task, g_steal_pointer (&error));
    } else {
        if (data->job->state == VMR_JOB_STATE_QUEUED || data->job->state == VMR_JOB_STATE_DELAYED)
            vmr_engine_set_job_state (data->engine, data->job, data->state, NULL);
        if (data->task != NULL)
            g_task_return_pointer (data->task, vmr_job_ref (data->job),
                                   (GDestroyNotify) vmr_job_unref);
    }
    g_clear_object (&data->task);
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

void
vmr_engine_start_copy (VmrEngine *self, DomainEntry *entry, VmrJob *job, guint64 speed,
                       VmrJobState state, GTask *task)
{
    VmrDisk *disk = vmr_disk_lookup (entry->disks, job->disk);
    StartData *data;

    if (disk == NULL) {
        g_autofree gchar *reason
            = g_strdup_printf ("disk %s of %s is gone", job->disk, job->domain);

        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, reason);
        if (task != NULL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND, "%s", reason);
            g_object_unref (task);
        }
        return;
    }
    data = g_new0 (StartData, 1);
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->state = state;
    data->task = task;
    job->speed = speed;
    job->policy_busy = TRUE;
    vmr_backend_start_copy_async (entry->backend, job, disk, NULL, copy_started_cb, data);
}

/*
 * The destination is no disk of another domain the daemon knows, by any
 * path or link: the daemon's own refusal, not left to QEMU's image locking
 * (which a disk opened with locking=off, or a file system without locks,
 * does not give)
 */
static gboolean
check_not_elsewhere (VmrEngine *self, DomainEntry *entry, const VmrDestination *destination,
                     GError **error)
{
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, &value)) {
        DomainEntry *other = value;

        if (other == entry || other->disks == NULL)
            continue;
        for (guint i = 0; i < other->disks->len; i++) {
            VmrDisk *d = g_ptr_array_index (other->disks, i);

            if (vmr_destination_same_target (destination, d->path)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "destination %s is the disk %s of domain %s", destination->location,
                             d->id, other->name);
                return FALSE;
            }
        }
    }
    return TRUE;
}

/* checks one disk of a request; @disks are the domain's, @in_use their paths */
static VmrDisk *
check_target (VmrEngine *self, DomainEntry *entry, MigrateData *data, guint n,
              const gchar *const *in_use, guint64 *out_existing_size, GError **error)
{
    MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, n);
    g_autoptr (GString) names = g_string_new (NULL);
    VmrDisk *disk = vmr_disk_lookup (entry->disks, target->disk);
    VmrJob *busy;

    for (guint i = 0; i < entry->disks->len; i++) {
        VmrDisk *d = g_ptr_array_index (entry->disks, i);

        g_string_append_printf (names, "%s%s", i > 0 ? ", " : "", d->id);
    }
    if (disk == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                     "domain %s has no disk '%s' (its disks: %s)", data->domain, target->disk,
                     names->len > 0 ? names->str : "none");
        return NULL;
    }
    /* the same disk or destination twice in one request */
    for (guint i = 0; i < n; i++) {
        MigrateTarget *earlier = &g_array_index (data->targets, MigrateTarget, i);

        if (vmr_disk_lookup (entry->disks, earlier->disk) == disk) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "%s of %s is named twice",
                         disk->id, entry->name);
            return NULL;
        }
        if (g_strcmp0 (earlier->destination, target->destination) == 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s is named twice (for %s and %s)", target->destination,
                         earlier->disk, target->disk);
            return NULL;
        }
    }
    busy = vmr_engine_active_job_for_disk (self, entry->name, disk->id);
    if (busy != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "%s of %s is already migrating (job %s)",
                     disk->id, entry->name, busy->id);
        return NULL;
    }
    busy = vmr_engine_active_job_for_destination (self, target->destination);
    if (busy != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "destination %s is in use by job %s",
                     target->destination, busy->id);
        return NULL;
    }
    if (disk->read_only) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "%s of %s is read-only; there is nothing to migrate live", disk->id,
                     entry->name);
        return NULL;
    }
    target->dest = vmr_destination_new (target->destination, target->format, !data->reuse, error);
    if (target->dest == NULL || !check_not_elsewhere (self, entry, target->dest, error))
        return NULL;
    if (!vmr_destination_check (target->dest, disk->size, in_use, out_existing_size, error))
        return NULL;
    return disk;
}

static VmrJob *
create_job (VmrEngine *self, DomainEntry *entry, MigrateData *data, VmrDisk *disk,
            MigrateTarget *target)
{
    g_autofree gchar *job_id = g_strdup_printf ("vmr-%u", ++self->last_job_number);
    VmrJob *job = vmr_job_new (job_id, entry->name, disk->id, g_get_real_time ());

    job->source = g_strdup (disk->path);
    job->source_format = g_strdup (disk->format);
    job->source_node = g_strdup (disk->node);
    job->source_file_node = g_strdup (disk->file_node);
    job->dest = vmr_destination_ref (target->dest);
    job->speed = data->speed;
    job->base_speed = data->speed;
    job->speed_from_user = data->speed_given;
    job->manual_pivot = data->manual_pivot;
    job->total_bytes = disk->size;
    return job;
}

/* a member of the request started its copy, or waits, or could not start */
static void
member_admitted_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    MigrateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrJob) job = g_task_propagate_pointer (G_TASK (res), &error);

    if (job == NULL && data->error == NULL)
        data->error = g_steal_pointer (&error);
    if (--data->pending > 0)
        return;
    /* one member failed to start: its group is cancelled, say why */
    if (data->error != NULL)
        g_task_return_error (task, g_steal_pointer (&data->error));
    else
        g_task_return_pointer (task, g_ptr_array_ref (data->jobs),
                               (GDestroyNotify) g_ptr_array_unref);
}

static void
migrate_disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    MigrateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GPtrArray) in_use = g_ptr_array_new ();
    g_autoptr (GPtrArray) chosen = g_ptr_array_new ();
    DomainEntry *entry;

    disks = vmr_backend_query_disks_finish (VMR_BACKEND (source), res, &error);
    entry = g_hash_table_lookup (self->domains, data->domain);
    if (disks == NULL || entry == NULL || entry->backend != VMR_BACKEND (source)) {
        if (error == NULL)
            error
                = g_error_new (VMR_ERROR, VMR_ERROR_NOT_FOUND, "domain %s went away", data->domain);
        g_prefix_error (&error, "cannot list the disks of %s: ", data->domain);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_ptr_array_unref (entry->disks);
    entry->disks = g_steal_pointer (&disks);

    for (guint i = 0; i < entry->disks->len; i++)
        g_ptr_array_add (in_use, ((VmrDisk *) g_ptr_array_index (entry->disks, i))->path);
    g_ptr_array_add (in_use, NULL);
    /* every disk of the request is checked before anything is created */
    for (guint i = 0; i < data->targets->len; i++) {
        guint64 existing_size = 0;
        VmrDisk *disk = check_target (self, entry, data, i, (const gchar *const *) in_use->pdata,
                                      &existing_size, &error);

        if (disk == NULL) {
            g_task_return_error (task, g_steal_pointer (&error));
            return;
        }
        g_ptr_array_add (chosen, disk);
    }

    for (guint i = 0; i < chosen->len; i++) {
        MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, i);
        VmrJob *job = create_job (self, entry, data, g_ptr_array_index (chosen, i), target);

        if (chosen->len > 1)
            job->group
                = g_strdup (i == 0 ? job->id : ((VmrJob *) g_ptr_array_index (data->jobs, 0))->id);
        g_hash_table_insert (self->jobs, g_strdup (job->id), job);
        g_ptr_array_add (self->job_order, vmr_job_ref (job));
        g_ptr_array_add (data->jobs, vmr_job_ref (job));
        if (job->group != NULL)
            g_message ("job %s (%s %s -> %s): queued, group %s", job->id, job->domain, job->disk,
                       job->dest->location, job->group);
        else
            g_message ("job %s (%s %s -> %s): queued", job->id, job->domain, job->disk,
                       job->dest->location);
        vmr_engine_save_job (self, job);
        g_signal_emit (self, signals[SIGNAL_JOB_CHANGED], 0, job, (gint) VMR_JOB_STATE_QUEUED);
    }
    vmr_engine_update_timers (self, entry);
    /* each member's copy starts or waits; the reply when all have */
    data->pending = data->jobs->len;
    for (guint i = 0; i < data->jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (data->jobs, i);
        GTask *member_task = g_task_new (self, NULL, member_admitted_cb, g_object_ref (task));

        if (!vmr_engine_job_is_active (job)) {
            /* ended already: an earlier member failed and took the group along */
            g_task_return_pointer (member_task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
            g_object_unref (member_task);
            continue;
        }
        vmr_engine_policy_admit (self, entry, job, member_task);
    }
}

static gboolean
add_target (MigrateData *data, const gchar *disk, const gchar *destination, const gchar *format,
            GError **error)
{
    MigrateTarget target = { 0 };

    if (disk == NULL || *disk == '\0' || destination == NULL || *destination == '\0') {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "each disk to migrate needs a disk and a destination");
        return FALSE;
    }
    if (!vmr_destination_check_format (format, error))
        return FALSE;
    target.disk = g_strdup (disk);
    target.destination = g_strdup (destination);
    target.format = g_strdup (format);
    g_array_append_val (data->targets, target);
    return TRUE;
}

void
vmr_engine_migrate_async (VmrEngine *self, const VmrMigrateRequest *request,
                          GCancellable *cancellable, GAsyncReadyCallback callback,
                          gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
    MigrateData *data = g_new0 (MigrateData, 1);
    const gchar *format = request->format != NULL ? request->format : "raw";
    g_autoptr (GError) error = NULL;
    DomainEntry *entry;

    data->domain = g_strdup (request->domain);
    data->targets = g_array_new (FALSE, TRUE, sizeof (MigrateTarget));
    g_array_set_clear_func (data->targets, (GDestroyNotify) migrate_target_clear);
    data->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    data->reuse = request->reuse;
    data->speed = request->speed;
    data->speed_given = request->speed_given;
    data->manual_pivot = request->manual_pivot;
    g_task_set_task_data (task, data, (GDestroyNotify) migrate_data_free);

    entry = vmr_engine_lookup_domain (self, request->domain, &error);
    if (entry == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (!entry->connected) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                 "the QEMU monitor of %s is gone; detach and attach it again",
                                 entry->name);
        return;
    }
    if (request->n_targets == 0) {
        if (!add_target (data, request->disk, request->destination, format, &error)) {
            g_task_return_error (task, g_steal_pointer (&error));
            return;
        }
    }
    for (guint i = 0; i < request->n_targets; i++) {
        const VmrMigrateTarget *t = &request->targets[i];

        if (!add_target (data, t->disk, t->destination, t->format != NULL ? t->format : format,
                         &error)) {
            g_task_return_error (task, g_steal_pointer (&error));
            return;
        }
    }
    /* the disk list may have changed since the last look: read it again */
    vmr_backend_query_disks_async (entry->backend, cancellable, migrate_disks_cb,
                                   g_steal_pointer (&task));
}

GPtrArray *
vmr_engine_migrate_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

/* ---- jobs ---- */

JsonObject *
vmr_engine_job_to_json (VmrEngine *self, VmrJob *job)
{
    JsonObject *obj = vmr_job_to_json (job);

    json_object_set_object_member (obj, "policy", vmr_engine_policy_describe_job (self, job));
    return obj;
}

JsonArray *
vmr_engine_list_jobs (VmrEngine *self)
{
    JsonArray *result = json_array_new ();

    for (guint i = 0; i < self->job_order->len; i++)
        json_array_add_object_element (
            result, vmr_engine_job_to_json (self, g_ptr_array_index (self->job_order, i)));
    return result;
}

VmrJob *
vmr_engine_lookup_job (VmrEngine *self, const gchar *id, GError **error)
{
    VmrJob *job = id != NULL ? g_hash_table_lookup (self->jobs, id) : NULL;

    if (job == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "unknown job '%s'",
                     id != NULL ? id : "");
    return job;
}

void
vmr_engine_shutdown (VmrEngine *self)
{
    g_hash_table_remove_all (self->domains);
}

VmrEngine *
vmr_engine_new (const gchar *state_dir)
{
    VmrEngine *self = g_object_new (VMR_TYPE_ENGINE, NULL);

    self->state_dir = g_strdup (state_dir);
    self->last_job_number = vmr_job_scan_last_number (state_dir);
    self->policy = vmr_policy_new_default ();
    vmr_engine_load_unfinished (self);
    return self;
}

static void
vmr_engine_finalize (GObject *object)
{
    VmrEngine *self = VMR_ENGINE (object);

    g_clear_handle_id (&self->admission_source, g_source_remove);
    g_hash_table_unref (self->domains);
    g_hash_table_unref (self->waiters);
    g_hash_table_unref (self->jobs);
    g_ptr_array_unref (self->job_order);
    g_clear_pointer (&self->policy, vmr_policy_unref);
    g_free (self->policy_path);
    g_free (self->policy_refusal);
    g_free (self->state_dir);
    G_OBJECT_CLASS (vmr_engine_parent_class)->finalize (object);
}

static void
vmr_engine_init (VmrEngine *self)
{
    self->domains = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify) domain_entry_free);
    self->jobs
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) vmr_job_unref);
    self->job_order = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    self->waiters = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify) g_ptr_array_unref);
}

static void
vmr_engine_class_init (VmrEngineClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->finalize = vmr_engine_finalize;
    signals[SIGNAL_JOB_CHANGED]
        = g_signal_new ("job-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 2, G_TYPE_POINTER, G_TYPE_INT);
    signals[SIGNAL_HOOK_EVENT] = g_signal_new (
        "hook-event", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
        G_TYPE_NONE, 4, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_STRING);
}
