#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Verifying a copy after its pivot: the backend compares the old source with
 * the disk the guest runs on; the result goes into the job's record and the
 * log, loudly when they differ. The old source is never touched.
 */

#include "engine-private.h"
#include "job-log.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "vmr-error.h"

typedef struct {
    VmrEngine *engine;
    VmrJob *job;
    VmrVerification *verification; /* the job's; kept alive by the job's reference */
} VerifyData;

static void
verify_data_free (VerifyData *data)
{
    g_object_unref (data->engine);
    vmr_job_unref (data->job);
    g_free (data);
}

/* the end of a verification: the record and the log */
static void
record_result (VmrEngine *self, VmrJob *job, VmrVerification *v, const GError *error)
{
    g_autofree gchar *ranges = NULL;

    v->finished_us = g_get_real_time ();
    if (error != NULL) {
        v->state = VMR_VERIFY_ERROR;
        g_free (v->error);
        v->error = g_strdup (error->message);
        vmr_job_warning (job, "job %s: the copy of %s of %s could not be verified: %s", job->id,
                         job->disk, job->domain, error->message);
    } else if (v->n_ranges > 0) {
        v->state = VMR_VERIFY_FAILED;
        ranges = vmr_verification_describe_ranges (v);
        vmr_job_warning (job,
                         "job %s: VERIFY FAILED: %s (the old source) and %s differ in %u range(s), "
                         "%" G_GUINT64_FORMAT " bytes: %s; the old source is kept",
                         job->id, job->source, job->dest->location, v->n_ranges, v->mismatched,
                         ranges);
    } else {
        v->state = VMR_VERIFY_PASSED;
        vmr_job_message (job,
                         "job %s: verified: %s equals %s (%" G_GUINT64_FORMAT
                         " bytes compared, %" G_GUINT64_FORMAT " zero on both, %" G_GUINT64_FORMAT
                         " written by the guest since the pivot)",
                         job->id, job->dest->location, job->source, v->compared, v->zero,
                         v->written);
    }
    vmr_engine_save_job (self, job);
}

static void
verified_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyData *data = user_data;
    g_autoptr (GError) error = NULL;

    if (!vmr_backend_verify_copy_finish (VMR_BACKEND (source), res, &error))
        record_result (data->engine, data->job, data->verification, error);
    else
        record_result (data->engine, data->job, data->verification, NULL);
    verify_data_free (data);
}

/* what keeps @job from being verified now, as an error; TRUE when nothing does */
static gboolean
check_verifiable (VmrEngine *self, VmrJob *job, GError **error)
{
    if (job->state != VMR_JOB_STATE_COMPLETED) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "the job is %s: only a completed copy can be verified",
                     vmr_job_state_to_string (job->state));
        return FALSE;
    }
    if (job->verification != NULL && job->verification->state == VMR_VERIFY_RUNNING) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_BUSY, "its verification already runs");
        return FALSE;
    }
    if (job->source == NULL || !g_file_test (job->source, G_FILE_TEST_EXISTS)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "the old source %s no longer exists",
                     job->source != NULL ? job->source : "(unknown)");
        return FALSE;
    }
    return TRUE;
}

/* starts verifying @job; a failure to start is the verification's result */
static void
start_verification (VmrEngine *self, VmrJob *job)
{
    g_autofree gchar *work_dir = g_build_filename (self->state_dir, "verify", NULL);
    g_autoptr (GError) error = NULL;
    DomainEntry *entry;
    VerifyData *data;

    g_clear_pointer (&job->verification, vmr_verification_free);
    job->verification = vmr_verification_new (g_get_real_time ());
    entry = vmr_engine_lookup_domain (self, job->domain, &error);
    if (entry != NULL && !entry->connected)
        g_set_error (&error, VMR_ERROR, VMR_ERROR_DISCONNECTED, "the domain %s is not connected",
                     job->domain);
    if (error == NULL && g_mkdir_with_parents (work_dir, 0700) < 0)
        g_set_error (&error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", work_dir,
                     g_strerror (errno));
    if (error != NULL) {
        record_result (self, job, job->verification, error);
        return;
    }
    vmr_job_message (job, "job %s: verifying %s against the old source %s", job->id,
                     job->dest->location, job->source);
    vmr_engine_save_job (self, job);
    data = g_new0 (VerifyData, 1);
    data->engine = g_object_ref (self);
    data->job = vmr_job_ref (job);
    data->verification = job->verification;
    vmr_backend_verify_copy_async (entry->backend, job, job->verification, work_dir, NULL,
                                   verified_cb, data);
}

void
vmr_engine_verify_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    g_autoptr (GError) error = NULL;

    if (job->state != VMR_JOB_STATE_COMPLETED || previous == VMR_JOB_STATE_COMPLETED
        || !job->verify)
        return;
    if (!check_verifiable (self, job, &error)) {
        g_clear_pointer (&job->verification, vmr_verification_free);
        job->verification = vmr_verification_new (g_get_real_time ());
        record_result (self, job, job->verification, error);
        return;
    }
    start_verification (self, job);
}

void
vmr_engine_verify_job_async (VmrEngine *self, const gchar *id, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
    g_autoptr (GError) error = NULL;
    /* a job of an earlier run of the daemon comes back from its record */
    VmrJob *job = id != NULL ? vmr_job_table_lookup_or_load (self->jobs, id) : NULL;
    DomainEntry *entry = NULL;

    if (job == NULL)
        g_set_error (&error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "unknown job '%s'",
                     id != NULL ? id : "");
    if (job == NULL || !check_verifiable (self, job, &error)
        || (entry = vmr_engine_lookup_domain (self, job->domain, &error)) == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (!vmr_backend_can_verify (entry->backend)) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "the %s backend of %s cannot verify copies",
                                 vmr_backend_get_kind (entry->backend), entry->name);
        return;
    }
    start_verification (self, job);
    g_task_return_pointer (task, vmr_job_ref (job), (GDestroyNotify) vmr_job_unref);
}

VmrJob *
vmr_engine_verify_job_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
