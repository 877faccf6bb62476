#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The policy's actions on a running copy, for the static rules and the
 * closed-loop speed alike: a command to the backend (a speed, a pause, a
 * resume, a cancel), then the job's next state once it is done.
 */

#include "engine-private.h"
#include "job-log.h"

static void
action_data_free (VmrEngineAction *data)
{
    data->job->policy_busy = FALSE;
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

static void
action_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrEngineAction *data = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_job_command_finish (VMR_BACKEND (source), res, &error)) {
        vmr_job_message (data->job, "job %s: policy action refused: %s", data->job->id,
                         error->message);
        action_data_free (data);
        return;
    }
    if (data->resume_after_speed) {
        data->resume_after_speed = FALSE;
        vmr_engine_action_step (data, VMR_BACKEND_COMMAND_RESUME, 0);
        return;
    }
    if (vmr_engine_job_is_active (data->job) && data->job->state != data->next_state) {
        /* a copy that became ready while paused resumes in sync */
        if (data->job->ready && data->job->state == VMR_JOB_STATE_PAUSED) {
            DomainEntry *entry = g_hash_table_lookup (data->engine->domains, data->job->domain);

            vmr_engine_set_job_state (data->engine, data->job, VMR_JOB_STATE_SYNCED, NULL);
            if (entry != NULL)
                vmr_engine_job_in_sync (data->engine, entry, data->job);
        } else {
            vmr_engine_set_job_state (data->engine, data->job, data->next_state, NULL);
        }
    }
    action_data_free (data);
}

void
vmr_engine_action_step (VmrEngineAction *data, VmrBackendCommand command, guint64 speed)
{
    DomainEntry *entry = g_hash_table_lookup (data->engine->domains, data->job->domain);

    if (entry == NULL || !entry->connected) {
        action_data_free (data);
        return;
    }
    /* a copy that resumes takes its share of its storages' budgets first */
    if (data->next_state != VMR_JOB_STATE_PAUSED && data->job->state == VMR_JOB_STATE_PAUSED)
        vmr_engine_budget_join (data->engine, data->job,
                                command == VMR_BACKEND_COMMAND_SET_SPEED ? speed
                                                                         : data->job->speed);
    if (command == VMR_BACKEND_COMMAND_SET_SPEED) {
        speed = vmr_engine_budget_cap (data->engine, data->job, speed);
        data->job->speed = speed;
    }
    vmr_backend_job_command_async (entry->backend, data->job, command, speed, NULL, action_cb,
                                   data);
}

VmrEngineAction *
vmr_engine_action_new (VmrEngine *self, VmrJob *job, VmrJobState next_state)
{
    VmrEngineAction *data = g_new0 (VmrEngineAction, 1);

    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->next_state = next_state;
    job->policy_busy = TRUE;
    return data;
}
