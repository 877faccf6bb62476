#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The cluster-wide admission limits: with a [cluster] section, a job that
 * the host's limits let go also needs a slot of the cluster (cluster.h);
 * its bulk copy over, the slot goes back. The cluster tells of changes
 * through the engine's observers (engine-observers.h): an admission pass.
 */

#include "engine-private.h"

#include "cluster-status.h"
#include "cluster.h"
#include "vmr-error.h"

static void
cluster_changed_cb (VmrCluster *cluster, gpointer user_data)
{
    VmrEngine *self = user_data;

    vmr_engine_notify_cluster_changed (self);
}

/* the shares of the storages' budgets moved: the copies are lowered, or raised, to theirs */
static void
shares_changed_cb (VmrCluster *cluster, gpointer user_data)
{
    vmr_engine_budget_policy_changed (user_data);
}

void
vmr_engine_cluster_clear (VmrEngine *self)
{
    if (self->cluster == NULL)
        return;
    vmr_engine_notify_cluster_leaving (self);
    g_signal_handlers_disconnect_by_data (self->cluster, self);
    g_clear_object (&self->cluster);
}

/*
 * This daemon's name among every daemon of the cluster: made once, kept in
 * the state directory, the same after a restart; NULL with @error when it
 * can be neither read nor written.
 */
static gchar *
cluster_instance (VmrEngine *self, GError **error)
{
    g_autofree gchar *path = g_build_filename (self->state_dir, "cluster-instance", NULL);
    g_autofree gchar *text = NULL;
    g_autofree gchar *made = NULL;

    if (g_file_get_contents (path, &text, NULL, NULL) && g_uuid_string_is_valid (g_strstrip (text)))
        return g_steal_pointer (&text);
    made = g_uuid_string_random ();
    if (!g_file_set_contents (path, made, -1, error))
        return NULL;
    return g_steal_pointer (&made);
}

/* joins the cluster of @config */
static void
cluster_join (VmrEngine *self, const VmrClusterConfig *config)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *instance = NULL;
    g_autofree gchar *lease_file = g_build_filename (self->state_dir, "cluster-lease", NULL);

    g_clear_pointer (&self->cluster_error, g_free);
    instance = cluster_instance (self, &error);
    if (instance != NULL)
        self->cluster = vmr_cluster_new (config, instance, lease_file, &error);
    if (self->cluster == NULL) {
        /* no copy starts rather than one beyond the cluster's limits */
        g_warning ("cluster %s: %s: no copy starts", config->name, error->message);
        self->cluster_error = g_strdup (error->message);
        return;
    }
    g_signal_connect (self->cluster, "changed", G_CALLBACK (cluster_changed_cb), self);
    g_signal_connect (self->cluster, "shares-changed", G_CALLBACK (shares_changed_cb), self);
    /* an admission pass registers the copies that run here before it lets a new one go */
    vmr_engine_notify_cluster_changed (self);
    vmr_engine_notify_cluster_joined (self);
    g_message ("cluster %s: admission through etcd at %s, as host %s", config->name,
               config->endpoints[0], config->host);
}

/* leaves the cluster for good (a [cluster] section removed or changed): its lease is revoked */
static void
cluster_leave (VmrEngine *self)
{
    vmr_cluster_leave (self->cluster);
    vmr_engine_cluster_clear (self);
}

void
vmr_engine_cluster_update (VmrEngine *self)
{
    const VmrClusterConfig *config = vmr_policy_get_cluster (self->policy);
    const gchar *key = NULL;

    if (self->cluster != NULL && config != NULL
        && vmr_cluster_reconfigure (self->cluster, config, &key))
        return;
    if (self->cluster != NULL) {
        g_message (config != NULL
                       ? "cluster %s: the policy's [cluster] %s changed: connecting again"
                       : "cluster %s: the policy has no [cluster] section%s: leaving it",
                   vmr_cluster_get_config (self->cluster)->name, config != NULL ? key : "");
        cluster_leave (self);
    }
    if (config == NULL) {
        g_clear_pointer (&self->cluster_error, g_free);
        return;
    }
    cluster_join (self, config);
}

/*
 * The storages @job reads from and writes to, as the cluster's limits count
 * them: a [storage] section's name, else vmr_cluster_config_storage_key()
 */
static void
job_storages (VmrEngine *self, VmrJob *job, gchar **out_source, gchar **out_destination)
{
    g_autofree gchar *source_dir = g_path_is_absolute (job->source)
                                       ? g_path_get_dirname (job->source)
                                       : g_strdup (job->source);

    *out_source = vmr_policy_storage_key (self->policy, job->source, source_dir);
    *out_destination
        = vmr_policy_storage_key (self->policy, job->dest->location, job->dest->admission_key);
}

gboolean
vmr_engine_cluster_admit (VmrEngine *self, VmrJob *job, const gchar **out_limit, gchar **out_reason)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *destination = NULL;

    if (self->cluster == NULL) {
        if (self->cluster_error == NULL)
            return TRUE;
        *out_limit = "cluster";
        *out_reason = g_strdup_printf ("%s: %s", VMR_CLUSTER_UNAVAILABLE, self->cluster_error);
        return FALSE;
    }
    job_storages (self, job, &source, &destination);
    return vmr_cluster_admit (self->cluster, job->id, source, destination, out_limit, out_reason);
}

void
vmr_engine_cluster_hold (VmrEngine *self, VmrJob *job)
{
    g_autofree gchar *source = NULL;
    g_autofree gchar *destination = NULL;

    if (self->cluster == NULL)
        return;
    job_storages (self, job, &source, &destination);
    vmr_cluster_hold (self->cluster, job->id, source, destination);
}

gboolean
vmr_engine_cluster_suspended (VmrEngine *self, VmrJob *job)
{
    if (job->cluster_paused != NULL)
        return TRUE;
    return self->cluster != NULL && vmr_cluster_is_suspended (self->cluster, job->id);
}

void
vmr_engine_cluster_forget_pause (VmrJob *job)
{
    g_clear_pointer (&job->cluster_paused, g_free);
    job->cluster_resume = FALSE;
}

/* what `cluster jobs` shows of @job */
static JsonObject *
job_summary (VmrJob *job)
{
    JsonObject *summary = json_object_new ();

    json_object_set_string_member (summary, "id", job->id);
    json_object_set_string_member (summary, "domain", job->domain);
    json_object_set_string_member (summary, "disk", job->disk);
    json_object_set_string_member (summary, "state", vmr_job_state_to_string (job->state));
    if (job->dest != NULL)
        json_object_set_string_member (summary, "destination", job->dest->location);
    if (job->waiting_for != NULL)
        json_object_set_string_member (summary, "waiting-for", job->waiting_for);
    json_object_set_int_member (summary, "updated", g_get_real_time ());
    return summary;
}

void
vmr_engine_cluster_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    /* a copy in sync or ended no longer waits for a slot */
    if (vmr_job_state_is_final (job->state) || job->state == VMR_JOB_STATE_SYNCED)
        vmr_engine_cluster_forget_pause (job);
    if (self->cluster == NULL)
        return;
    /* as the host's limits count it: a synced copy's bulk copy is over */
    if (vmr_job_state_is_final (job->state) || job->state == VMR_JOB_STATE_SYNCED)
        vmr_cluster_release (self->cluster, job->id);
    if (vmr_job_state_is_final (job->state)) {
        vmr_cluster_unpublish_job (self->cluster, job->id);
    } else {
        g_autoptr (JsonObject) summary = job_summary (job);

        vmr_cluster_publish_job (self->cluster, job->id, summary);
    }
}

static void
status_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    GError *error = NULL;
    JsonObject *status = vmr_cluster_status_finish (VMR_CLUSTER (source), result, &error);

    if (status == NULL) {
        g_prefix_error (&error,
                        "cluster %s: ", vmr_cluster_get_config (VMR_CLUSTER (source))->name);
        g_task_return_error (task, error);
        return;
    }
    g_task_return_pointer (task, status, (GDestroyNotify) json_object_unref);
}

void
vmr_engine_query_cluster_async (VmrEngine *self, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    if (self->cluster == NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                                 self->cluster_error != NULL
                                     ? "the daemon could not join its cluster: %s"
                                     : "the policy has no [cluster] section%s",
                                 self->cluster_error != NULL ? self->cluster_error : "");
        g_object_unref (task);
        return;
    }
    vmr_cluster_status_async (self->cluster, cancellable, status_done_cb, task);
}

JsonObject *
vmr_engine_query_cluster_finish (VmrEngine *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}
