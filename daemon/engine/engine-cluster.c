#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The cluster-wide admission limits: with a [cluster] section, a job that
 * the host's limits let go also needs a slot of the cluster (cluster.h);
 * its bulk copy over, the slot goes back. The cluster tells of changes
 * through the hook the facade sets, which runs an admission pass.
 */

#include "engine-private.h"

#include "cluster.h"

static void
cluster_changed_cb (VmrCluster *cluster, gpointer user_data)
{
    VmrEngine *self = user_data;

    if (self->hooks.cluster_changed != NULL)
        self->hooks.cluster_changed (self);
}

void
vmr_engine_cluster_clear (VmrEngine *self)
{
    if (self->cluster == NULL)
        return;
    g_signal_handlers_disconnect_by_data (self->cluster, self);
    g_clear_object (&self->cluster);
}

void
vmr_engine_cluster_update (VmrEngine *self)
{
    const VmrClusterConfig *config = vmr_policy_get_cluster (self->policy);
    g_autoptr (GError) error = NULL;

    if (self->cluster != NULL) {
        if (!vmr_cluster_config_equal (config, vmr_cluster_get_config (self->cluster)))
            g_warning ("the policy's [cluster] section changed: it takes effect when the daemon "
                       "restarts");
        return;
    }
    if (config == NULL)
        return;
    self->cluster = vmr_cluster_new (config, &error);
    if (self->cluster == NULL) {
        /* no copy starts rather than one beyond the cluster's limits */
        g_warning ("cluster %s: %s: no copy starts", config->name, error->message);
        self->cluster_error = g_strdup (error->message);
        return;
    }
    g_signal_connect (self->cluster, "changed", G_CALLBACK (cluster_changed_cb), self);
    g_message ("cluster %s: admission through etcd at %s, as host %s", config->name,
               config->endpoints[0], config->host);
}

/* the storages @job reads from and writes to, as the cluster's limits count them */
static void
job_storages (VmrEngine *self, VmrJob *job, gchar **out_source, gchar **out_destination)
{
    const VmrClusterConfig *config = vmr_cluster_get_config (self->cluster);
    g_autofree gchar *source_dir = g_path_is_absolute (job->source)
                                       ? g_path_get_dirname (job->source)
                                       : g_strdup (job->source);

    *out_source = vmr_cluster_config_storage_key (config, source_dir);
    *out_destination = vmr_cluster_config_storage_key (config, job->dest->admission_key);
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

void
vmr_engine_cluster_job_changed (VmrEngine *self, VmrJob *job, VmrJobState previous)
{
    /* as the host's limits count it: a synced copy's bulk copy is over */
    if (self->cluster != NULL
        && (vmr_job_state_is_final (job->state) || job->state == VMR_JOB_STATE_SYNCED))
        vmr_cluster_release (self->cluster, job->id);
}
