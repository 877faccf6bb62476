#define G_LOG_DOMAIN "vmr-daemon"

/*
 * A migrate request: every disk it names is checked before anything is
 * created (an NBD export by a preflight on a thread, see
 * vmr_destination_preflight_async()), then its jobs (a group when it names several disks) go to the
 * admission limits and the policy.
 */

#include "engine-private.h"
#include "job-log.h"

#include "destination.h"
#include "vmr-error.h"

typedef struct {
    gchar *disk;
    gchar *destination;
    gchar *format;
    VmrDestination *dest;     /* made by check_target() */
    VmrNbdExportFacts *facts; /* what the preflight found on an NBD export */
} MigrateTarget;

typedef struct {
    gchar *domain;
    GArray *targets; /* of MigrateTarget */
    gboolean reuse;
    guint64 speed;
    gboolean speed_given;
    gboolean manual_pivot;
    gchar *tls_creds;
    gboolean verify;
    guint next_preflight; /* the target whose preflight runs */
    GPtrArray *jobs;      /* of VmrJob *, the new ones */
    guint pending;        /* members not started or waiting yet */
    GError *error;        /* the first member that could not start */
} MigrateData;

static void
migrate_target_clear (MigrateTarget *target)
{
    g_free (target->disk);
    g_free (target->destination);
    g_free (target->format);
    g_clear_pointer (&target->dest, vmr_destination_unref);
    g_free (target->facts);
}

static void
migrate_data_free (MigrateData *data)
{
    g_free (data->domain);
    g_free (data->tls_creds);
    g_array_unref (data->targets);
    g_ptr_array_unref (data->jobs);
    g_clear_error (&data->error);
    g_free (data);
}

/* no job moves @disk or writes @target's destination */
static gboolean
check_not_busy (VmrEngine *self, MigrateData *data, const VmrDisk *disk,
                const MigrateTarget *target, GError **error)
{
    VmrJob *busy = vmr_job_table_active_for_disk (self->jobs, data->domain, disk->id);

    if (busy != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "%s of %s is already migrating (job %s)",
                     disk->id, data->domain, busy->id);
        return FALSE;
    }
    busy = vmr_job_table_active_for_destination (self->jobs, target->destination);
    if (busy != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "destination %s is in use by job %s",
                     target->destination, busy->id);
        return FALSE;
    }
    return TRUE;
}

/* the destination of @target, with the policy's NBD options for @disk */
static VmrDestination *
new_destination (VmrEngine *self, MigrateData *data, const VmrDisk *disk, MigrateTarget *target,
                 GError **error)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, data->domain, disk->id);
    VmrDestinationNbdOptions options = {
        .tls_creds = data->tls_creds != NULL ? data->tls_creds : rule->tls_creds,
        .reconnect_delay_s = rule->reconnect_delay_s,
    };

    return vmr_destination_new_full (target->destination, target->format, !data->reuse, &options,
                                     error);
}

/* checks one disk of a request; @disks are the domain's, @in_use their paths */
static VmrDisk *
check_target (VmrEngine *self, DomainEntry *entry, MigrateData *data, guint n,
              const gchar *const *in_use, guint64 *out_existing_size, GError **error)
{
    MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, n);
    g_autoptr (GString) names = g_string_new (NULL);
    VmrDisk *disk = vmr_disk_lookup (entry->disks, target->disk);

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
    if (!check_not_busy (self, data, disk, target, error))
        return NULL;
    if (disk->read_only) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "%s of %s is read-only; there is nothing to migrate live", disk->id,
                     entry->name);
        return NULL;
    }
    target->dest = new_destination (self, data, disk, target, error);
    if (target->dest == NULL
        || !vmr_engine_check_not_elsewhere (self, entry->name, target->dest, error))
        return NULL;
    if (!vmr_destination_check (target->dest, disk->size, in_use, out_existing_size, error))
        return NULL;
    if (!vmr_engine_guard_destination (self, target->dest, error))
        return NULL;
    return disk;
}

static VmrJob *
create_job (VmrEngine *self, DomainEntry *entry, MigrateData *data, VmrDisk *disk,
            MigrateTarget *target)
{
    g_autofree gchar *job_id = vmr_job_table_next_id (self->jobs);
    VmrJob *job = vmr_job_new (job_id, entry->name, disk->id, g_get_real_time ());
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, entry->name, disk->id);

    job->source = g_strdup (disk->path);
    job->source_format = g_strdup (disk->format);
    job->source_node = g_strdup (disk->node);
    job->source_file_node = g_strdup (disk->file_node);
    job->dest = vmr_destination_ref (target->dest);
    job->speed = data->speed;
    job->base_speed = data->speed;
    job->speed_from_user = data->speed_given;
    job->manual_pivot = data->manual_pivot;
    job->verify = data->verify || rule->verify;
    job->granularity = rule->granularity;
    job->buf_size = rule->buf_size;
    job->total_bytes = disk->size;
    job->space_need = vmr_engine_space_need (target->dest, disk);
    job->space_watched = rule->space_check != VMR_SPACE_CHECK_OFF;
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

static void preflight_next (GTask *task);

static void
migrate_disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    MigrateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GPtrArray) in_use = g_ptr_array_new ();
    g_autoptr (GArray) claims = g_array_new (FALSE, FALSE, sizeof (VmrEngineSpaceClaim));
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

        VmrEngineSpaceClaim claim;

        if (disk == NULL) {
            g_task_return_error (task, g_steal_pointer (&error));
            return;
        }
        claim.dest = g_array_index (data->targets, MigrateTarget, i).dest;
        claim.disk = disk;
        g_array_append_val (claims, claim);
    }
    /* what the copies write must fit into their file systems */
    if (!vmr_engine_space_check (self, data->domain, (VmrEngineSpaceClaim *) claims->data,
                                 claims->len, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    preflight_next (g_steal_pointer (&task));
}

/*
 * the disk of @target as the domain has it now, which may have changed while
 * a preflight ran; NULL with @task failed (and unreferenced) when it is gone
 */
static VmrDisk *
target_disk (GTask *task, const MigrateTarget *target)
{
    VmrEngine *self = g_task_get_source_object (task);
    MigrateData *data = g_task_get_task_data (task);
    DomainEntry *entry = g_hash_table_lookup (self->domains, data->domain);
    VmrDisk *disk = entry != NULL && entry->disks != NULL
                        ? vmr_disk_lookup (entry->disks, target->disk)
                        : NULL;

    if (disk == NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                                 "%s of %s went away during the checks", target->disk,
                                 data->domain);
        g_object_unref (task);
    }
    return disk;
}

/* every destination was checked: the jobs are made and go to admission */
static void
submit_jobs (GTask *task)
{
    VmrEngine *self = g_task_get_source_object (task);
    MigrateData *data = g_task_get_task_data (task);
    g_autoptr (GPtrArray) chosen = g_ptr_array_new ();
    g_autoptr (GError) error = NULL;
    DomainEntry *entry = g_hash_table_lookup (self->domains, data->domain);

    /* the domain and its disks may have changed while a preflight ran */
    for (guint i = 0; i < data->targets->len; i++) {
        MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, i);
        VmrDisk *disk = target_disk (task, target);

        if (disk == NULL)
            return;
        if (!check_not_busy (self, data, disk, target, &error)) {
            g_task_return_error (task, g_steal_pointer (&error));
            g_object_unref (task);
            return;
        }
        g_ptr_array_add (chosen, disk);
    }

    for (guint i = 0; i < chosen->len; i++) {
        MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, i);
        VmrJob *job = create_job (self, entry, data, g_ptr_array_index (chosen, i), target);

        job->nbd = g_steal_pointer (&target->facts);

        if (chosen->len > 1)
            job->group
                = g_strdup (i == 0 ? job->id : ((VmrJob *) g_ptr_array_index (data->jobs, 0))->id);
        g_ptr_array_add (data->jobs, job);
        if (job->group != NULL)
            vmr_job_message (job, "job %s (%s %s -> %s): queued, group %s", job->id, job->domain,
                             job->disk, job->dest->location, job->group);
        else
            vmr_job_message (job, "job %s (%s %s -> %s): queued", job->id, job->domain, job->disk,
                             job->dest->location);
        /* once, before the copy starts: what the export's lack of zeroes costs */
        if (vmr_destination_nbd_zero_fallback (job->nbd) != NULL)
            vmr_job_message (job, "job %s (%s %s -> %s): %s", job->id, job->domain, job->disk,
                             job->dest->location, vmr_destination_nbd_zero_fallback (job->nbd));
        vmr_job_table_add (self->jobs, job);
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
        vmr_engine_admission_admit (self, entry, job, member_task);
    }
    g_object_unref (task);
}

static void
preflight_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GTask *task = user_data;
    MigrateData *data = g_task_get_task_data (task);
    MigrateTarget *target = &g_array_index (data->targets, MigrateTarget, data->next_preflight);
    g_autoptr (GError) error = NULL;

    if (!vmr_destination_preflight_finish (res, &target->facts, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    if (target->facts != NULL)
        g_message ("%s: %" G_GUINT64_FORMAT " bytes, structured replies %s, zero %s, fast zero "
                   "%s, trim %s, preferred block size %" G_GUINT64_FORMAT,
                   target->dest->location, target->facts->size,
                   target->facts->structured_replies ? "yes" : "no",
                   target->facts->can_zero ? "yes" : "no",
                   target->facts->can_fast_zero ? "yes" : "no",
                   target->facts->can_trim ? "yes" : "no", target->facts->preferred_block_size);
    data->next_preflight++;
    preflight_next (task);
}

/* the preflight of each destination in turn, then the jobs */
static void
preflight_next (GTask *task)
{
    MigrateData *data = g_task_get_task_data (task);
    MigrateTarget *target;
    VmrDisk *disk;

    /* files and devices were checked in full already */
    while (data->next_preflight < data->targets->len
           && g_array_index (data->targets, MigrateTarget, data->next_preflight).dest->kind
                  != VMR_DESTINATION_NBD)
        data->next_preflight++;
    if (data->next_preflight >= data->targets->len) {
        submit_jobs (task);
        return;
    }
    target = &g_array_index (data->targets, MigrateTarget, data->next_preflight);
    disk = target_disk (task, target);
    if (disk == NULL)
        return;
    vmr_destination_preflight_async (target->dest, disk->size, g_task_get_cancellable (task),
                                     preflight_cb, task);
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
    data->tls_creds = g_strdup (request->tls_creds);
    data->verify = request->verify;
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
    if (request->verify && !vmr_backend_can_verify (entry->backend)) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "the %s backend of %s cannot verify copies: migrate without "
                                 "--verify (docs/operations.md says why)",
                                 vmr_backend_get_kind (entry->backend), entry->name);
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
