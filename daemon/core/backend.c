#define G_LOG_DOMAIN "vmr-daemon"

#include "backend.h"

#include "vmr-error.h"

enum { SIGNAL_JOB_READY, SIGNAL_JOB_FINISHED, SIGNAL_DISCONNECTED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_ABSTRACT_TYPE (VmrBackend, vmr_backend, G_TYPE_OBJECT)

void
vmr_backend_progress_free (VmrBackendProgress *self)
{
    if (self == NULL)
        return;
    g_free (self->job_id);
    g_free (self);
}

void
vmr_iothread_usage_free (VmrIothreadUsage *self)
{
    if (self == NULL)
        return;
    g_free (self->id);
    g_free (self);
}

const gchar *
vmr_backend_get_kind (VmrBackend *self)
{
    return VMR_BACKEND_GET_CLASS (self)->get_kind (self);
}

gboolean
vmr_backend_follows_domain (VmrBackend *self)
{
    VmrBackendClass *klass = VMR_BACKEND_GET_CLASS (self);

    return klass->follows_domain != NULL && klass->follows_domain (self);
}

JsonObject *
vmr_backend_describe (VmrBackend *self)
{
    return VMR_BACKEND_GET_CLASS (self)->describe (self);
}

void
vmr_backend_query_disks_async (VmrBackend *self, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    VMR_BACKEND_GET_CLASS (self)->query_disks_async (self, cancellable, callback, user_data);
}

GPtrArray *
vmr_backend_query_disks_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    return VMR_BACKEND_GET_CLASS (self)->query_disks_finish (self, res, error);
}

void
vmr_backend_start_copy_async (VmrBackend *self, VmrJob *job, const VmrDisk *disk,
                              GCancellable *cancellable, GAsyncReadyCallback callback,
                              gpointer user_data)
{
    VMR_BACKEND_GET_CLASS (self)->start_copy_async (self, job, disk, cancellable, callback,
                                                    user_data);
}

gboolean
vmr_backend_start_copy_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    return VMR_BACKEND_GET_CLASS (self)->start_copy_finish (self, res, error);
}

void
vmr_backend_job_command_async (VmrBackend *self, VmrJob *job, VmrBackendCommand command,
                               guint64 speed, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    VMR_BACKEND_GET_CLASS (self)->job_command_async (self, job, command, speed, cancellable,
                                                     callback, user_data);
}

gboolean
vmr_backend_job_command_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    return VMR_BACKEND_GET_CLASS (self)->job_command_finish (self, res, error);
}

void
vmr_backend_query_progress_async (VmrBackend *self, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
    VMR_BACKEND_GET_CLASS (self)->query_progress_async (self, cancellable, callback, user_data);
}

GPtrArray *
vmr_backend_query_progress_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    return VMR_BACKEND_GET_CLASS (self)->query_progress_finish (self, res, error);
}

void
vmr_backend_query_load_async (VmrBackend *self, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    VMR_BACKEND_GET_CLASS (self)->query_load_async (self, cancellable, callback, user_data);
}

GHashTable *
vmr_backend_query_load_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    return VMR_BACKEND_GET_CLASS (self)->query_load_finish (self, res, error);
}

gboolean
vmr_backend_can_query_iothreads (VmrBackend *self)
{
    return VMR_BACKEND_GET_CLASS (self)->query_iothreads_async != NULL;
}

void
vmr_backend_query_iothreads_async (VmrBackend *self, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendClass *klass = VMR_BACKEND_GET_CLASS (self);

    if (klass->query_iothreads_async == NULL) {
        g_task_report_new_error (self, callback, user_data, vmr_backend_query_iothreads_async,
                                 VMR_ERROR, VMR_ERROR_FAILED,
                                 "the %s backend does not read its I/O threads' CPU time",
                                 vmr_backend_get_kind (self));
        return;
    }
    klass->query_iothreads_async (self, cancellable, callback, user_data);
}

GPtrArray *
vmr_backend_query_iothreads_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    if (g_async_result_is_tagged (res, vmr_backend_query_iothreads_async))
        return g_task_propagate_pointer (G_TASK (res), error);
    return VMR_BACKEND_GET_CLASS (self)->query_iothreads_finish (self, res, error);
}

void
vmr_backend_adopt_copy_async (VmrBackend *self, VmrJob *job, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendClass *klass = VMR_BACKEND_GET_CLASS (self);

    if (klass->adopt_copy_async == NULL) {
        g_task_report_new_error (self, callback, user_data, vmr_backend_adopt_copy_async, VMR_ERROR,
                                 VMR_ERROR_FAILED,
                                 "this backend cannot pick up a copy of an earlier run");
        return;
    }
    klass->adopt_copy_async (self, job, cancellable, callback, user_data);
}

VmrBackendAdoption *
vmr_backend_adopt_copy_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    if (g_async_result_is_tagged (res, vmr_backend_adopt_copy_async))
        return g_task_propagate_pointer (G_TASK (res), error);
    return VMR_BACKEND_GET_CLASS (self)->adopt_copy_finish (self, res, error);
}

gboolean
vmr_backend_can_verify (VmrBackend *self)
{
    return VMR_BACKEND_GET_CLASS (self)->verify_copy_async != NULL;
}

void
vmr_backend_verify_copy_async (VmrBackend *self, VmrJob *job, VmrVerification *verification,
                               const gchar *work_dir, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendClass *klass = VMR_BACKEND_GET_CLASS (self);
    g_autoptr (GTask) task = NULL;

    if (klass->verify_copy_async != NULL) {
        klass->verify_copy_async (self, job, verification, work_dir, cancellable, callback,
                                  user_data);
        return;
    }
    task = g_task_new (self, cancellable, callback, user_data);
    g_task_set_source_tag (task, vmr_backend_verify_copy_async);
    g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_FAILED,
                             "the %s backend cannot verify copies", vmr_backend_get_kind (self));
}

gboolean
vmr_backend_verify_copy_finish (VmrBackend *self, GAsyncResult *res, GError **error)
{
    VmrBackendClass *klass = VMR_BACKEND_GET_CLASS (self);

    if (g_task_get_source_tag (G_TASK (res)) == vmr_backend_verify_copy_async)
        return g_task_propagate_boolean (G_TASK (res), error);
    return klass->verify_copy_finish (self, res, error);
}

void
vmr_backend_close (VmrBackend *self)
{
    VMR_BACKEND_GET_CLASS (self)->close (self);
}

void
vmr_backend_emit_job_ready (VmrBackend *self, const gchar *job_id)
{
    g_signal_emit (self, signals[SIGNAL_JOB_READY], 0, job_id);
}

void
vmr_backend_emit_job_finished (VmrBackend *self, const gchar *job_id, VmrBackendOutcome outcome,
                               const gchar *reason)
{
    g_signal_emit (self, signals[SIGNAL_JOB_FINISHED], 0, job_id, (gint) outcome, reason);
}

void
vmr_backend_emit_disconnected (VmrBackend *self, const GError *error)
{
    g_signal_emit (self, signals[SIGNAL_DISCONNECTED], 0, error);
}

static void
vmr_backend_init (VmrBackend *self)
{
}

static void
vmr_backend_class_init (VmrBackendClass *klass)
{
    signals[SIGNAL_JOB_READY]
        = g_signal_new ("job-ready", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
    signals[SIGNAL_JOB_FINISHED]
        = g_signal_new ("job-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 3, G_TYPE_STRING, G_TYPE_INT, G_TYPE_STRING);
    signals[SIGNAL_DISCONNECTED]
        = g_signal_new ("disconnected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}
