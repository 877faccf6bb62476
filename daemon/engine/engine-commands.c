#define G_LOG_DOMAIN "vmr-daemon"

#include "engine-private.h"
#include "job-log.h"

#include "vmr-error.h"

typedef struct {
    VmrJob *job;
    VmrBackendCommand command;
    guint64 speed;
    gboolean pivot_after_resume;
} CommandData;

static void
command_data_free (CommandData *data)
{
    vmr_job_unref (data->job);
    g_free (data);
}

static void
command_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    CommandData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    DomainEntry *entry;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        if (data->command == VMR_BACKEND_COMMAND_CANCEL)
            data->job->cancel_sent = FALSE;
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    switch (data->command) {
        case VMR_BACKEND_COMMAND_PAUSE:
            /* the policy leaves a job that a user paused alone */
            data->job->user_paused = TRUE;
            vmr_engine_set_job_state (self, data->job, VMR_JOB_STATE_PAUSED, NULL);
            break;
        case VMR_BACKEND_COMMAND_RESUME:
            data->job->user_paused = FALSE;
            /* a copy the policy had slowed before the pause is still slowed */
            vmr_engine_set_job_state (self, data->job,
                                      data->job->ready ? VMR_JOB_STATE_SYNCED
                                      : data->job->speed != data->job->base_speed
                                          ? VMR_JOB_STATE_THROTTLED
                                          : VMR_JOB_STATE_COPYING,
                                      NULL);
            entry = g_hash_table_lookup (self->domains, data->job->domain);
            if (data->pivot_after_resume && entry != NULL) {
                vmr_engine_pivot_job (self, entry, data->job, g_steal_pointer (&task));
                return;
            }
            /* a copy that became ready while paused pivots now unless told not to */
            if (data->job->ready && entry != NULL)
                vmr_engine_job_in_sync (self, entry, data->job);
            break;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            /* the user's speed replaces the policy's, throttle included */
            data->job->speed = data->speed;
            data->job->base_speed = data->speed;
            data->job->speed_from_user = TRUE;
            /* a restarted daemon goes on at the user's speed */
            if (data->job->state != VMR_JOB_STATE_THROTTLED
                || !vmr_engine_set_job_state (self, data->job, VMR_JOB_STATE_COPYING,
                                              "speed set by a user"))
                vmr_engine_save_job (self, data->job);
            vmr_job_message (data->job, "job %s: speed set to %" G_GUINT64_FORMAT " bytes/s",
                             data->job->id, data->speed);
            break;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            data->job->write_blocking = TRUE;
            vmr_engine_save_job (self, data->job);
            vmr_job_message (data->job, "job %s: copy mode set to write-blocking", data->job->id);
            break;
        case VMR_BACKEND_COMMAND_CANCEL:
            /* the reply waits for the end of the job */
            if (vmr_engine_job_is_active (data->job)) {
                vmr_job_table_add_waiter (self->jobs, data->job, g_steal_pointer (&task));
                return;
            }
            break;
        case VMR_BACKEND_COMMAND_PIVOT:
        default:
            break;
    }
    g_task_return_pointer (task, vmr_job_ref (data->job), (GDestroyNotify) vmr_job_unref);
}

static gboolean
check_command (VmrJob *job, VmrBackendCommand command, GError **error)
{
    const gchar *state = vmr_job_state_to_string (job->state);

    if (vmr_job_state_is_final (job->state)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "job %s is %s already", job->id,
                     state);
        return FALSE;
    }
    if (job->policy_busy
        && (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "job %s is starting; try again", job->id);
        return FALSE;
    }
    if (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED) {
        if (command == VMR_BACKEND_COMMAND_CANCEL || command == VMR_BACKEND_COMMAND_SET_SPEED)
            return TRUE;
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "job %s is %s: its copy has not started", job->id, state);
        return FALSE;
    }
    switch (command) {
        case VMR_BACKEND_COMMAND_PAUSE:
            if (job->state == VMR_JOB_STATE_PAUSED) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "job %s is paused already", job->id);
                return FALSE;
            }
            if (job->state == VMR_JOB_STATE_PIVOTING) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                             "job %s is pivoting and cannot pause", job->id);
                return FALSE;
            }
            return TRUE;
        case VMR_BACKEND_COMMAND_RESUME:
            if (job->state != VMR_JOB_STATE_PAUSED) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "job %s is %s, not paused", job->id, state);
                return FALSE;
            }
            if (job->space_paused != NULL) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                             "job %s is paused for space (%s); it resumes by itself when there "
                             "is room again",
                             job->id, job->space_paused);
                return FALSE;
            }
            if (job->cluster_paused != NULL) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                             "job %s is paused for the cluster (%s); it resumes by itself once "
                             "it holds a slot again",
                             job->id, job->cluster_paused);
                return FALSE;
            }
            return TRUE;
        case VMR_BACKEND_COMMAND_CANCEL:
            if (job->state == VMR_JOB_STATE_PIVOTING) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                             "job %s is pivoting; it can no longer be cancelled", job->id);
                return FALSE;
            }
            return TRUE;
        case VMR_BACKEND_COMMAND_PIVOT:
            if (job->state == VMR_JOB_STATE_PIVOTING) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "job %s is pivoting already",
                             job->id);
                return FALSE;
            }
            if (!job->ready) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "job %s is %s; it can pivot once it is synced", job->id, state);
                return FALSE;
            }
            return TRUE;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            if (job->state == VMR_JOB_STATE_PIVOTING) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY, "job %s is pivoting", job->id);
                return FALSE;
            }
            return TRUE;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            /* only a running mirror can change its mode; pivoting is too late */
            if (job->state != VMR_JOB_STATE_COPYING && job->state != VMR_JOB_STATE_THROTTLED
                && job->state != VMR_JOB_STATE_PAUSED && job->state != VMR_JOB_STATE_SYNCED) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "job %s is %s; its copy mode can change while it copies", job->id,
                             state);
                return FALSE;
            }
            if (job->write_blocking) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "job %s is write-blocking already", job->id);
                return FALSE;
            }
            return TRUE;
        default:
            return FALSE;
    }
}

/* the backend's step for a user's command */
static VmrBackendCommand
backend_command_of (VmrJobCommand command)
{
    switch (command) {
        case VMR_JOB_COMMAND_PAUSE:
            return VMR_BACKEND_COMMAND_PAUSE;
        case VMR_JOB_COMMAND_RESUME:
            return VMR_BACKEND_COMMAND_RESUME;
        case VMR_JOB_COMMAND_CANCEL:
            return VMR_BACKEND_COMMAND_CANCEL;
        case VMR_JOB_COMMAND_PIVOT:
            return VMR_BACKEND_COMMAND_PIVOT;
        case VMR_JOB_COMMAND_SET_SPEED:
            return VMR_BACKEND_COMMAND_SET_SPEED;
        case VMR_JOB_COMMAND_SET_COPY_MODE_ACTIVE:
        default:
            return VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE;
    }
}

void
vmr_engine_job_command_async (VmrEngine *self, const gchar *id, VmrJobCommand user_command,
                              guint64 speed, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendCommand command = backend_command_of (user_command);
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
    g_autoptr (GError) error = NULL;
    VmrJob *job = vmr_engine_lookup_job (self, id, &error);
    DomainEntry *entry;
    CommandData *data;

    if (job == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* a job of an earlier run whose domain is not known again: nothing to talk to */
    if (job->orphaned && vmr_engine_job_is_active (job)) {
        if (command != VMR_BACKEND_COMMAND_CANCEL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "job %s waits for its domain %s, which is not known since "
                                     "the daemon restarted; attach it again (or let libvirt "
                                     "report it) and the job is picked up",
                                     job->id, job->domain);
            return;
        }
        vmr_engine_set_job_state (self, job, VMR_JOB_STATE_CANCELLED,
                                  "cancelled while its domain was not known; its copy, if "
                                  "any, was left alone");
        g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
        return;
    }
    if (!check_command (job, command, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }

    /* a copy that has not started has nothing in QEMU to talk to */
    if (job->state == VMR_JOB_STATE_QUEUED || job->state == VMR_JOB_STATE_DELAYED) {
        if (command == VMR_BACKEND_COMMAND_CANCEL) {
            vmr_engine_set_job_state (self, job, VMR_JOB_STATE_CANCELLED,
                                      "cancelled on request before the copy started");
        } else {
            job->base_speed = speed;
            job->speed = speed;
            job->speed_from_user = TRUE;
            vmr_engine_save_job (self, job);
        }
        g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
        return;
    }
    entry = g_hash_table_lookup (self->domains, job->domain);
    if (entry == NULL || !entry->connected) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                 "the QEMU monitor of %s is gone", job->domain);
        return;
    }
    /* a user's speed and resume stay under the storages' budgets too */
    if (command == VMR_BACKEND_COMMAND_SET_SPEED)
        speed = vmr_engine_budget_cap (self, job, speed);
    if (job->state == VMR_JOB_STATE_PAUSED
        && (command == VMR_BACKEND_COMMAND_RESUME || command == VMR_BACKEND_COMMAND_PIVOT))
        vmr_engine_budget_join (self, job, job->speed);
    data = g_new0 (CommandData, 1);
    data->job = vmr_job_ref (job);
    data->command = command;
    data->speed = speed;
    g_task_set_task_data (task, data, (GDestroyNotify) command_data_free);

    if (command == VMR_BACKEND_COMMAND_PIVOT && job->group != NULL) {
        VmrJob *laggard = vmr_engine_group_laggard (self, job);

        /* a group cuts over as one: every member in sync, none paused */
        if (laggard != NULL) {
            g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "job %s is one of group %s, and %s is %s; the group can "
                                     "pivot once every member is synced",
                                     job->id, job->group, laggard->id,
                                     vmr_job_state_to_string (laggard->state));
            return;
        }
        vmr_engine_pivot_group (self, entry, job, g_steal_pointer (&task));
        return;
    }
    if (command == VMR_BACKEND_COMMAND_PIVOT) {
        /* a paused job is resumed before the pivot */
        if (job->state == VMR_JOB_STATE_PAUSED) {
            data->command = VMR_BACKEND_COMMAND_RESUME;
            data->pivot_after_resume = TRUE;
            vmr_backend_job_command_async (entry->backend, job, VMR_BACKEND_COMMAND_RESUME, 0, NULL,
                                           command_cb, g_steal_pointer (&task));
            return;
        }
        vmr_engine_pivot_job (self, entry, job, g_steal_pointer (&task));
        return;
    }
    /* the policy leaves a copy alone once a user's cancel is on its way */
    if (command == VMR_BACKEND_COMMAND_CANCEL)
        job->cancel_sent = TRUE;
    vmr_backend_job_command_async (entry->backend, job, command, speed, NULL, command_cb,
                                   g_steal_pointer (&task));
}

VmrJob *
vmr_engine_job_command_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
