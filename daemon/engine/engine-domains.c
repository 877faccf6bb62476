#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The domains the engine knows: attaching QEMU processes, adding the domains
 * a backend finds by itself (libvirt), forgetting them, listing them, and
 * what their backends report about jobs.
 */

#include "engine-private.h"

#include "destination.h"
#include "job-log.h"
#include "vmr-error.h"

/* ---- the table ---- */

void
vmr_engine_domain_entry_free (DomainEntry *entry)
{
    if (entry->progress_source != 0)
        g_source_remove (entry->progress_source);
    if (entry->backend != NULL) {
        g_signal_handlers_disconnect_by_data (entry->backend, entry);
        vmr_backend_close (entry->backend);
        g_object_unref (entry->backend);
    }
    if (entry->sample_source != 0)
        g_source_remove (entry->sample_source);
    g_clear_pointer (&entry->load, g_hash_table_unref);
    g_clear_pointer (&entry->iothreads, g_ptr_array_unref);
    g_clear_pointer (&entry->disks, g_ptr_array_unref);
    g_free (entry->name);
    g_free (entry);
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

VmrLoadHistory *
vmr_engine_domain_load (DomainEntry *entry, const gchar *disk)
{
    return entry != NULL && entry->load != NULL ? g_hash_table_lookup (entry->load, disk) : NULL;
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
        VmrJob *job = vmr_job_table_lookup (self->jobs, p->job_id);

        if (job == NULL || !vmr_engine_job_is_active (job))
            continue;
        vmr_job_update_progress (job, p->total_bytes, p->done_bytes, g_get_monotonic_time ());
        job->speed = p->speed;
        job->no_space = p->no_space;
        vmr_engine_notify_progress_read (self, entry, job);
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
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    for (guint i = 0; entry->connected && i < active->len && !wanted; i++)
        wanted = g_strcmp0 (((VmrJob *) g_ptr_array_index (active, i))->domain, entry->name) == 0;
    if (wanted && entry->progress_source == 0)
        entry->progress_source
            = g_timeout_add (self->progress_interval_ms, progress_tick_cb, entry);
    else if (!wanted && entry->progress_source != 0)
        g_clear_handle_id (&entry->progress_source, g_source_remove);
}

/* why the jobs of a domain fail all at once */
typedef enum {
    DOMAIN_GONE,  /* the domain stopped: the cause is the whole reason */
    MONITOR_LOST, /* the connection to its QEMU broke */
} DomainLoss;

static gchar *
loss_reason (DomainLoss loss, const gchar *cause, VmrJob *job)
{
    if (job->state == VMR_JOB_STATE_PIVOTING) {
        /* the switch may have happened: both files stay, the user checks */
        if (loss == MONITOR_LOST)
            return g_strdup_printf ("QEMU monitor connection lost during the pivot (%s); "
                                    "check which of %s and %s the VM uses",
                                    cause, job->source, job->dest->location);
        return g_strdup_printf ("%s during the pivot; check which of %s and %s "
                                "the domain's definition names",
                                cause, job->source, job->dest->location);
    }
    if (loss == MONITOR_LOST && job->pivot_unanswered)
        return g_strdup_printf ("QEMU monitor connection lost before QEMU took the pivot (%s); "
                                "the VM stays on its source %s",
                                cause, job->source);
    if (loss == MONITOR_LOST)
        return g_strdup_printf ("QEMU monitor connection lost (%s); the source %s "
                                "was not changed",
                                cause, job->source);
    return g_strdup (cause);
}

/*
 * Fails every job of @entry that this connection runs, because the domain or
 * its connection is gone. A job that was cutting over keeps both files; any
 * other removes the destination the daemon made (a copy that never started
 * made none; a start in flight cleans up after itself).
 */
static void
fail_domain_jobs (VmrEngine *self, DomainEntry *entry, DomainLoss loss, const gchar *cause)
{
    g_autoptr (GPtrArray) jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_job_unref);
    GPtrArray *active = vmr_job_table_get_active (self->jobs);

    /* a failure changes the active list: work on a copy */
    for (guint i = 0; i < active->len; i++) {
        VmrJob *job = g_ptr_array_index (active, i);

        /* an orphaned job was never this connection's: it waits for the next */
        if (g_strcmp0 (job->domain, entry->name) == 0 && !job->orphaned)
            g_ptr_array_add (jobs, vmr_job_ref (job));
    }
    for (guint i = 0; i < jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (jobs, i);
        g_autofree gchar *reason = loss_reason (loss, cause, job);

        if (job->state != VMR_JOB_STATE_PIVOTING && job->state != VMR_JOB_STATE_QUEUED
            && job->state != VMR_JOB_STATE_DELAYED)
            vmr_engine_remove_destination (self, job);
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, reason);
    }
}

/* ---- reacting to the backend ---- */

/* the active job @job_id of @entry's domain: a backend speaks only for its own domain */
static VmrJob *
job_of_backend (DomainEntry *entry, const gchar *job_id)
{
    VmrJob *job = vmr_job_table_lookup (entry->engine->jobs, job_id);

    if (job == NULL || !vmr_engine_job_is_active (job))
        return NULL;
    if (g_strcmp0 (job->domain, entry->name) != 0) {
        vmr_job_warning (job, "the backend of %s reported on job %s of %s: ignored", entry->name,
                         job->id, job->domain);
        return NULL;
    }
    return job;
}

static void
backend_job_ready_cb (VmrBackend *backend, const gchar *job_id, gpointer user_data)
{
    DomainEntry *entry = user_data;
    VmrEngine *self = entry->engine;
    VmrJob *job = job_of_backend (entry, job_id);

    if (job == NULL)
        return;
    job->ready = TRUE;
    /* a job being picked up goes on once the backend has said how it found it */
    if (job->orphaned)
        return;
    /* the copy may be in sync before the reply to blockdev-mirror is read */
    if (job->state == VMR_JOB_STATE_QUEUED)
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_COPYING, NULL);
    if (job->state != VMR_JOB_STATE_COPYING && job->state != VMR_JOB_STATE_THROTTLED)
        return;
    vmr_engine_notify_copy_in_sync (self, entry, job);
}

static void
backend_job_finished_cb (VmrBackend *backend, const gchar *job_id, gint outcome,
                         const gchar *reason, gpointer user_data)
{
    DomainEntry *entry = user_data;
    VmrEngine *self = entry->engine;
    VmrJob *job = job_of_backend (entry, job_id);

    if (job == NULL)
        return;
    switch ((VmrBackendOutcome) outcome) {
        case VMR_BACKEND_OUTCOME_COMPLETED:
            /* a pivot made outside virt-mirror still is a pivot */
            if (job->state != VMR_JOB_STATE_PIVOTING) {
                if (job->state == VMR_JOB_STATE_PAUSED || job->state == VMR_JOB_STATE_COPYING
                    || job->state == VMR_JOB_STATE_THROTTLED)
                    vmr_engine_set_job_state (self, job, VMR_JOB_STATE_SYNCED, NULL);
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_PIVOTING, NULL);
            }
            job->done_bytes = job->total_bytes;
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_COMPLETED, NULL);
            break;
        case VMR_BACKEND_OUTCOME_CANCELLED:
            /* the domain stays on its source, and the hypervisor closed the destination */
            vmr_engine_remove_destination (self, job);
            /* the policy cancels a copy it gave up on: that is a failure */
            if (job->pending_failure != NULL)
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, job->pending_failure);
            else if (job->group_cancel_reason != NULL)
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_CANCELLED,
                                          job->group_cancel_reason);
            else
                vmr_engine_set_job_state (self, job, VMR_JOB_STATE_CANCELLED, reason);
            break;
        case VMR_BACKEND_OUTCOME_FAILED:
        default:
            vmr_engine_remove_destination (self, job);
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, reason);
            break;
    }
}

static void
backend_disconnected_cb (VmrBackend *backend, GError *error, gpointer user_data)
{
    DomainEntry *entry = user_data;

    entry->connected = FALSE;
    fail_domain_jobs (entry->engine, entry, MONITOR_LOST, error->message);
    vmr_engine_update_timers (entry->engine, entry);
}

/* ---- attach and detach ---- */

typedef struct {
    gchar *name;
    VmrBackend *backend;
} AttachData;

static void
attach_data_free (AttachData *data)
{
    g_free (data->name);
    g_clear_object (&data->backend);
    g_free (data);
}

static JsonObject *
domain_to_json (VmrEngine *self, DomainEntry *entry)
{
    JsonObject *obj = vmr_backend_describe (entry->backend);
    JsonArray *disks = json_array_new ();

    json_object_set_string_member (obj, "name", entry->name);
    json_object_set_string_member (obj, "backend", vmr_backend_get_kind (entry->backend));
    json_object_set_boolean_member (obj, "connected", entry->connected);
    for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
        VmrDisk *disk = g_ptr_array_index (entry->disks, i);
        VmrJob *job = vmr_job_table_active_for_disk (self->jobs, entry->name, disk->id);
        const VmrStorage *storage = vmr_policy_find_storage (self->policy, disk->path);
        JsonObject *disk_obj = vmr_disk_to_json (disk, job != NULL ? job->id : NULL);

        if (storage != NULL)
            json_object_set_string_member (disk_obj, "storage", storage->name);
        json_array_add_object_element (disks, disk_obj);
    }
    json_object_set_array_member (obj, "disks", disks);
    return obj;
}

static void
attach_disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    AttachData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    DomainEntry *entry;

    disks = vmr_backend_query_disks_finish (VMR_BACKEND (source), res, &error);
    if (disks == NULL) {
        vmr_backend_close (data->backend);
        g_prefix_error (&error, "cannot list the disks of %s: ", data->name);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (g_hash_table_contains (self->domains, data->name)) {
        vmr_backend_close (data->backend);
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "a domain named %s is attached already", data->name);
        return;
    }
    entry = g_new0 (DomainEntry, 1);
    entry->engine = self;
    entry->name = g_strdup (data->name);
    entry->backend = g_steal_pointer (&data->backend);
    entry->disks = g_steal_pointer (&disks);
    entry->connected = TRUE;
    g_object_set_data (G_OBJECT (entry->backend), "vmr-engine", self);
    g_signal_connect (entry->backend, "job-ready", G_CALLBACK (backend_job_ready_cb), entry);
    g_signal_connect (entry->backend, "job-finished", G_CALLBACK (backend_job_finished_cb), entry);
    g_signal_connect (entry->backend, "disconnected", G_CALLBACK (backend_disconnected_cb), entry);
    g_hash_table_insert (self->domains, g_strdup (entry->name), entry);
    g_message ("domain %s attached (%u disk%s)", entry->name, entry->disks->len,
               entry->disks->len == 1 ? "" : "s");
    /* the load sampling and the jobs an earlier run left with this domain */
    vmr_engine_notify_domain_added (self, entry);
    g_task_return_pointer (task, domain_to_json (self, entry), (GDestroyNotify) json_object_unref);
}

void
vmr_engine_add_domain_async (VmrEngine *self, const gchar *name, VmrBackend *backend,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
    AttachData *data = g_new0 (AttachData, 1);

    data->name = g_strdup (name);
    data->backend = g_object_ref (backend);
    g_task_set_task_data (task, data, (GDestroyNotify) attach_data_free);
    if (g_hash_table_contains (self->domains, name)) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "a domain named %s is attached already", name);
        return;
    }
    vmr_backend_query_disks_async (backend, cancellable, attach_disks_cb, g_steal_pointer (&task));
}

JsonObject *
vmr_engine_add_domain_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

gboolean
vmr_engine_has_domain (VmrEngine *self, const gchar *name)
{
    return name != NULL && g_hash_table_contains (self->domains, name);
}

VmrBackend *
vmr_engine_get_backend (VmrEngine *self, const gchar *name)
{
    DomainEntry *entry = name != NULL ? g_hash_table_lookup (self->domains, name) : NULL;

    return entry != NULL ? entry->backend : NULL;
}

void
vmr_engine_remove_domain (VmrEngine *self, const gchar *name, const gchar *reason)
{
    DomainEntry *entry = g_hash_table_lookup (self->domains, name);

    if (entry == NULL)
        return;
    /* nothing more goes to the backend */
    entry->connected = FALSE;
    fail_domain_jobs (self, entry, DOMAIN_GONE, reason);
    g_message ("domain %s is gone: %s", name, reason);
    g_hash_table_remove (self->domains, name);
}

gboolean
vmr_engine_detach (VmrEngine *self, const gchar *name, GError **error)
{
    DomainEntry *entry = vmr_engine_lookup_domain (self, name, error);

    if (entry == NULL)
        return FALSE;
    /* a domain its backend found comes and goes with it */
    if (vmr_backend_follows_domain (entry->backend)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "domain %s is followed through %s; it leaves when it stops", name,
                     vmr_backend_get_kind (entry->backend));
        return FALSE;
    }
    for (guint i = 0; i < vmr_job_table_get_active (self->jobs)->len; i++) {
        VmrJob *job = g_ptr_array_index (vmr_job_table_get_active (self->jobs), i);

        if (g_strcmp0 (job->domain, name) == 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                         "domain %s has a migration running (job %s); cancel it first", name,
                         job->id);
            return FALSE;
        }
    }
    g_message ("domain %s detached", name);
    g_hash_table_remove (self->domains, name);
    return TRUE;
}

/* ---- listing domains ---- */

typedef struct {
    JsonArray *result;
    guint pending;
} QueryDomainsData;

static void
query_domains_data_free (QueryDomainsData *data)
{
    json_array_unref (data->result);
    g_free (data);
}

static void
query_domains_finish_one (GTask *task)
{
    VmrEngine *self = g_task_get_source_object (task);
    QueryDomainsData *data = g_task_get_task_data (task);
    g_autoptr (GList) names = NULL;

    if (--data->pending > 0)
        return;
    names = g_list_sort (g_hash_table_get_keys (self->domains), (GCompareFunc) g_strcmp0);
    for (GList *l = names; l != NULL; l = l->next) {
        DomainEntry *entry = g_hash_table_lookup (self->domains, l->data);

        json_array_add_object_element (data->result, domain_to_json (self, entry));
    }
    g_task_return_pointer (task, json_array_ref (data->result), (GDestroyNotify) json_array_unref);
}

static void
query_domains_disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = NULL;

    disks = vmr_backend_query_disks_finish (VMR_BACKEND (source), res, &error);
    if (disks != NULL) {
        GHashTableIter iter;
        DomainEntry *entry;

        /* the domain may have been detached meanwhile */
        g_hash_table_iter_init (&iter, self->domains);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
            if (entry->backend == VMR_BACKEND (source)) {
                g_ptr_array_unref (entry->disks);
                entry->disks = g_steal_pointer (&disks);
                break;
            }
        }
    } else {
        g_debug ("cannot refresh the disks: %s", error->message);
    }
    query_domains_finish_one (task);
}

void
vmr_engine_query_domains_async (VmrEngine *self, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    QueryDomainsData *data = g_new0 (QueryDomainsData, 1);
    GHashTableIter iter;
    DomainEntry *entry;

    data->result = json_array_new ();
    data->pending = 1;
    g_task_set_task_data (task, data, (GDestroyNotify) query_domains_data_free);
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        if (!entry->connected)
            continue;
        data->pending++;
        vmr_backend_query_disks_async (entry->backend, cancellable, query_domains_disks_cb,
                                       g_object_ref (task));
    }
    query_domains_finish_one (task);
    g_object_unref (task);
}

JsonArray *
vmr_engine_query_domains_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
