#define G_LOG_DOMAIN "vmr-daemon"

/*
 * A job's destination on this host: the refusals that hold whatever a
 * request says, run when the request comes and again when the copy starts,
 * on each queued job at a reload and on the queued jobs of an earlier run;
 * opening it (or making it) when the copy starts, so that nothing names it
 * again; the check that its name still leads there before the pivot; and
 * the removal of a file the daemon made, when the copy does not complete.
 */

#include "engine-private.h"
#include "job-log.h"

#include "destination-guard.h"
#include "destination-handle.h"
#include "vmr-error.h"

/* ---- the refusals ---- */

/* the refusals of where @destination lies: the daemon's own directories, symbolic links */
static gboolean
guard_place (VmrEngine *self, const VmrPolicyRule *rule, const VmrDestination *destination,
             GError **error)
{
    GHashTableIter iter;
    gpointer dir, what;

    g_hash_table_iter_init (&iter, self->protected_dirs);
    while (g_hash_table_iter_next (&iter, &dir, &what)) {
        if (!vmr_destination_check_outside (destination, what, dir, error))
            return FALSE;
    }
    return !rule->refuse_destination_symlinks
           || vmr_destination_check_no_symlinks (destination, error);
}

gboolean
vmr_engine_guard_destination (VmrEngine *self, const VmrDestination *destination, GError **error)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, NULL, NULL);

    if (!vmr_destination_check_allowed (destination,
                                        (const gchar *const *) rule->allowed_destinations, error))
        return FALSE;
    return guard_place (self, rule, destination, error)
           && vmr_destination_check_not_held (destination, error);
}

gboolean
vmr_engine_guard_directory (VmrEngine *self, const gchar *dir, GError **error)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, NULL, NULL);
    g_autoptr (VmrDestination) destination = NULL;

    if (!vmr_destination_check_directory_allowed (
            dir, (const gchar *const *) rule->allowed_destinations, error))
        return FALSE;
    destination = vmr_destination_new (dir, NULL, FALSE, error);
    return destination != NULL && guard_place (self, rule, destination, error);
}

/*
 * The destination is no disk of another domain the daemon knows, by any
 * path or link, nor of a domain that is defined and not running: the
 * daemon's own refusal, not left to QEMU's image locking (which a disk
 * opened with locking=off, a file system without locks, or a domain that
 * does not run, does not give)
 */
gboolean
vmr_engine_check_not_elsewhere (VmrEngine *self, const gchar *domain,
                                const VmrDestination *destination, GError **error)
{
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, &value)) {
        DomainEntry *other = value;

        if (g_strcmp0 (other->name, domain) == 0 || other->disks == NULL)
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
    for (guint i = 0; i < self->defined_disks->len; i++) {
        VmrEngineDefinedDisk *d = g_ptr_array_index (self->defined_disks, i);

        if (g_strcmp0 (d->domain, domain) != 0
            && vmr_destination_same_target (destination, d->path)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s is the disk %s of domain %s, which is defined and not "
                         "running",
                         destination->location, d->disk, d->domain);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
vmr_engine_recheck_destination (VmrEngine *self, VmrJob *job, GError **error)
{
    DomainEntry *entry = g_hash_table_lookup (self->domains, job->domain);
    VmrDisk *disk
        = entry != NULL && entry->disks != NULL ? vmr_disk_lookup (entry->disks, job->disk) : NULL;
    g_autoptr (GPtrArray) in_use = g_ptr_array_new ();

    for (guint i = 0; entry != NULL && entry->disks != NULL && i < entry->disks->len; i++)
        g_ptr_array_add (in_use, ((VmrDisk *) g_ptr_array_index (entry->disks, i))->path);
    g_ptr_array_add (in_use, NULL);
    /* what the request's checks were, in their order */
    return vmr_engine_check_not_elsewhere (self, job->domain, job->dest, error)
           && vmr_destination_check (job->dest, disk != NULL ? disk->size : job->total_bytes,
                                     (const gchar *const *) in_use->pdata, NULL, error)
           && vmr_engine_guard_destination (self, job->dest, error);
}

void
vmr_engine_recheck_queued (VmrEngine *self)
{
    g_autoptr (GPtrArray) jobs = vmr_job_table_list (self->jobs);

    for (guint i = 0; i < jobs->len; i++) {
        VmrJob *job = g_ptr_array_index (jobs, i);
        g_autoptr (GError) error = NULL;

        if ((job->state != VMR_JOB_STATE_QUEUED && job->state != VMR_JOB_STATE_DELAYED)
            || job->policy_busy || job->orphaned)
            continue;
        if (!vmr_engine_recheck_destination (self, job, &error))
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_FAILED, error->message);
    }
}

/* ---- opening it when the copy starts ---- */

typedef struct {
    VmrJob *job;
    VmrDestinationHandle *handle;
} OpenData;

static void
open_data_free (OpenData *data)
{
    vmr_job_unref (data->job);
    g_clear_pointer (&data->handle, vmr_destination_handle_unref);
    g_free (data);
}

/*
 * The directory of @job's destination, opened once: it must be the one the
 * checks judged, which a link swapped in between would change
 */
static VmrDestinationHandle *
open_directory (VmrEngine *self, VmrJob *job, GError **error)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, NULL, NULL);
    g_autoptr (VmrDestinationHandle) handle
        = vmr_destination_handle_open_dir (job->dest, rule->refuse_destination_symlinks, error);
    g_autofree gchar *canonical = g_canonicalize_filename (job->dest->location, "/");
    g_autofree gchar *dir = g_path_get_dirname (canonical);
    g_autofree gchar *judged = vmr_destination_resolve_path (dir);
    g_autofree gchar *opened = handle != NULL ? vmr_destination_handle_dir_path (handle) : NULL;

    if (handle == NULL)
        return NULL;
    if (g_strcmp0 (judged, opened) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s: its directory %s changed while the copy started (it led to "
                     "%s, then to %s)",
                     job->dest->location, dir, judged, opened != NULL ? opened : "nothing");
        return NULL;
    }
    return g_steal_pointer (&handle);
}

/* the existing destination of @job, opened: it must be the one the checks judged */
static gboolean
open_existing (VmrDestinationHandle *handle, VmrJob *job, GError **error)
{
    g_autofree gchar *judged = vmr_destination_resolve_path (job->dest->location);
    g_autofree gchar *opened = NULL;

    if (!vmr_destination_handle_open_existing (handle, error))
        return FALSE;
    opened = vmr_destination_handle_file_path (handle);
    if (g_strcmp0 (judged, opened) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s changed while the copy started (it led to %s, then to %s)",
                     job->dest->location, judged, opened != NULL ? opened : "nothing");
        return FALSE;
    }
    return TRUE;
}

static void
created_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    OpenData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;

    if (!vmr_destination_handle_create_finish (res, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* from now on the record proves the file ours, before QEMU or libvirt sees it */
    vmr_job_set_dest_made (data->job, vmr_destination_handle_get_made (data->handle));
    vmr_job_set_dest_handle (data->job, data->handle);
    vmr_engine_save_job (self, data->job);
    g_task_return_boolean (task, TRUE);
}

void
vmr_engine_open_destination_async (VmrEngine *self, VmrJob *job, const VmrDisk *disk,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, NULL, callback, user_data);
    OpenData *data = g_new0 (OpenData, 1);
    g_autoptr (GError) error = NULL;

    data->job = vmr_job_ref (job);
    g_task_set_task_data (task, data, (GDestroyNotify) open_data_free);
    /* hours may have passed since the request: every check again, before anything is made */
    if (!vmr_engine_recheck_destination (self, job, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* an export is reached by its URI, never opened here */
    if (job->dest->kind == VMR_DESTINATION_NBD) {
        g_task_return_boolean (task, TRUE);
        return;
    }
    data->handle = open_directory (self, job, &error);
    if (data->handle == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (job->dest->created) {
        vmr_destination_handle_create_async (data->handle, disk->size, disk->path, NULL, created_cb,
                                             g_steal_pointer (&task));
        return;
    }
    if (!open_existing (data->handle, job, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    vmr_job_set_dest_handle (job, data->handle);
    g_task_return_boolean (task, TRUE);
}

gboolean
vmr_engine_open_destination_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

/* ---- before the pivot, and after the copy ---- */

gboolean
vmr_engine_check_destination_named (VmrEngine *self, VmrJob *job, GError **error)
{
    if (job->dest_handle != NULL)
        return vmr_destination_handle_check_named (job->dest_handle, error);
    /* picked up after a restart: what proves the file is its identity */
    if (job->dest_made != NULL)
        return vmr_destination_check_made (job->dest, job->dest_made, error);
    return TRUE;
}

void
vmr_engine_remove_destination (VmrEngine *self, VmrJob *job)
{
    g_autoptr (GError) error = NULL;

    if (job->dest_made == NULL)
        return;
    if (vmr_destination_remove_made (job->dest, job->dest_made, job->dest_handle, &error))
        g_debug ("job %s: removed %s", job->id, job->dest->location);
    else
        vmr_job_warning (job, "job %s (%s %s): %s", job->id, job->domain, job->disk,
                         error->message);
    /* whatever is there now is not a file the daemon made */
    vmr_job_set_dest_made (job, NULL);
    vmr_engine_save_job (self, job);
}

void
vmr_engine_destination_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    /* an ended job lets go of the descriptors; QEMU holds its own */
    if (vmr_job_state_is_final (job->state))
        vmr_job_set_dest_handle (job, NULL);
}
