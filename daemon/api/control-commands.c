/*
 * The control socket's commands: the checks of their arguments, their
 * handlers and the table that names each with its argument schema.
 */
#define G_LOG_DOMAIN "vmr-daemon"

#include "control-server-private.h"

#include "backend-qmp.h"
#include "metrics-text.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* ---- commands ---- */

static void
handle_capabilities (Request *req, JsonObject *args)
{
    vmr_control_request_return_object (req, json_object_new ());
}

static void
handle_query_version (Request *req, JsonObject *args)
{
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "version", VMR_VERSION);
    vmr_control_request_return_object (req, obj);
}

static void
attach_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *domain = vmr_engine_add_domain_finish (VMR_ENGINE (source), res, &error);

    if (domain == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, domain);
}

typedef struct {
    Request *req;
    gchar *name;
} AttachData;

static void
attach_connect_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autofree AttachData *data = user_data;
    g_autofree gchar *name = data->name;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrBackend) backend = vmr_backend_qmp_connect_finish (res, &error);

    if (backend == NULL) {
        vmr_control_request_error (data->req, error);
        return;
    }
    vmr_engine_add_domain_async (data->req->server->engine, name, backend, NULL, attach_cb,
                                 data->req);
}

/* a QEMU process by its monitor socket: the QMP backend, built here */
static void
handle_attach (Request *req, JsonObject *args)
{
    const gchar *name = vmr_json_get_string (args, "name");
    const gchar *monitor_path = vmr_json_get_string (args, "qmp");
    g_autoptr (GError) error = NULL;
    AttachData *data;

    if (name == NULL || *name == '\0')
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "a domain needs a name");
    else if (vmr_engine_has_domain (req->server->engine, name))
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "a domain named %s is attached already", name);
    else if (monitor_path == NULL || !g_path_is_absolute (monitor_path))
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "the monitor socket must be an absolute path");
    else if (!g_file_test (monitor_path, G_FILE_TEST_EXISTS))
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "monitor socket %s does not exist", monitor_path);
    if (error != NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    data = g_new0 (AttachData, 1);
    data->req = req;
    data->name = g_strdup (name);
    vmr_backend_qmp_connect_async (monitor_path, NULL, attach_connect_cb, data);
}

static void
handle_detach (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;

    if (!vmr_engine_detach (req->server->engine, vmr_json_get_string (args, "name"), &error)) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, json_object_new ());
}

static void
query_domains_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonArray *domains = vmr_engine_query_domains_finish (VMR_ENGINE (source), res, &error);

    if (domains == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_array (req, domains);
}

static void
handle_query_domains (Request *req, JsonObject *args)
{
    vmr_engine_query_domains_async (req->server->engine, NULL, query_domains_cb, req);
}

static void
query_cluster_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *status = vmr_engine_query_cluster_finish (VMR_ENGINE (source), res, &error);

    if (status == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, status);
}

static void
handle_query_cluster (Request *req, JsonObject *args)
{
    vmr_engine_query_cluster_async (req->server->engine, NULL, query_cluster_cb, req);
}

static void
query_cluster_evacuation_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *evacuation
        = vmr_engine_query_cluster_evacuation_finish (VMR_ENGINE (source), res, &error);

    if (evacuation == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, evacuation);
}

/* answered at once without "after", else once a key of the evacuation changed past it */
static void
handle_query_cluster_evacuation (Request *req, JsonObject *args)
{
    guint64 after = 0;

    vmr_json_get_uint (args, "after", &after);
    vmr_engine_query_cluster_evacuation_async (req->server->engine,
                                               vmr_json_get_string (args, "id"), (gint64) after,
                                               NULL, query_cluster_evacuation_cb, req);
}

static void
job_reply_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrJob) job = vmr_engine_job_command_finish (VMR_ENGINE (source), res, &error);

    if (job == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, vmr_engine_job_to_json (req->server->engine, job));
}

typedef struct {
    Request *req;
    gboolean group; /* the request named its disks as a group */
} MigrateReply;

static void
migrate_reply_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    MigrateReply *reply = user_data;
    Request *req = reply->req;
    gboolean group = reply->group;
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) jobs = vmr_engine_migrate_finish (VMR_ENGINE (source), res, &error);
    JsonObject *obj;
    JsonArray *array;

    g_free (reply);
    if (jobs == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    if (!group) {
        vmr_control_request_return_object (
            req, vmr_engine_job_to_json (req->server->engine, g_ptr_array_index (jobs, 0)));
        return;
    }
    obj = json_object_new ();
    array = json_array_new ();
    json_object_set_string_member (obj, "group", ((VmrJob *) g_ptr_array_index (jobs, 0))->group);
    for (guint i = 0; i < jobs->len; i++)
        json_array_add_object_element (
            array, vmr_engine_job_to_json (req->server->engine, g_ptr_array_index (jobs, i)));
    json_object_set_array_member (obj, "jobs", array);
    vmr_control_request_return_object (req, obj);
}

/* the "disks" of a group migrate: [{"disk": ..., "destination": ...}, ...] */
static GArray *
parse_targets (JsonArray *array, GError **error)
{
    g_autoptr (GArray) targets = g_array_new (FALSE, TRUE, sizeof (VmrMigrateTarget));

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *obj = vmr_json_array_object (array, i);
        VmrMigrateTarget target = {
            .disk = vmr_json_get_string (obj, "disk"),
            .destination = vmr_json_get_string (obj, "destination"),
        };

        if (target.disk == NULL || target.destination == NULL || json_object_get_size (obj) != 2) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "parameter 'disks' must be a list of {\"disk\", \"destination\"} "
                         "objects (element %u is not)",
                         i);
            return NULL;
        }
        g_array_append_val (targets, target);
    }
    if (targets->len < 2) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "parameter 'disks' must name two disks or more (one disk: use 'disk' and "
                     "'destination')");
        return NULL;
    }
    return g_steal_pointer (&targets);
}

static void
handle_migrate (Request *req, JsonObject *args)
{
    JsonArray *disks = vmr_json_get_array (args, "disks");
    g_autoptr (GArray) targets = NULL;
    g_autoptr (GError) error = NULL;
    MigrateReply *reply;
    VmrMigrateRequest request = {
        .domain = vmr_json_get_string (args, "domain"),
        .disk = vmr_json_get_string (args, "disk"),
        .destination = vmr_json_get_string (args, "destination"),
        .format = vmr_json_get_string (args, "format"),
        .reuse = vmr_json_bool_or (args, "reuse", FALSE),
        .manual_pivot = vmr_json_bool_or (args, "manual-pivot", FALSE),
        .tls_creds = vmr_json_get_string (args, "tls-creds"),
        .verify = vmr_json_bool_or (args, "verify", FALSE),
    };

    if (request.tls_creds != NULL && !g_path_is_absolute (request.tls_creds)) {
        g_set_error (&error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "parameter 'tls-creds' must be an absolute directory");
        vmr_control_request_error (req, error);
        return;
    }
    request.speed_given = vmr_json_get_uint (args, "speed", &request.speed);

    if (disks != NULL) {
        if (request.disk != NULL || request.destination != NULL) {
            g_set_error_literal (&error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "give either 'disks' or 'disk' and 'destination', not both");
            vmr_control_request_error (req, error);
            return;
        }
        targets = parse_targets (disks, &error);
        if (targets == NULL) {
            vmr_control_request_error (req, error);
            return;
        }
        request.targets = (const VmrMigrateTarget *) targets->data;
        request.n_targets = targets->len;
    } else if (request.disk == NULL || request.destination == NULL) {
        g_set_error (&error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "parameter '%s' is missing",
                     request.disk == NULL ? "disk" : "destination");
        vmr_control_request_error (req, error);
        return;
    }
    reply = g_new0 (MigrateReply, 1);
    reply->req = req;
    reply->group = targets != NULL;
    vmr_engine_migrate_async (req->server->engine, &request, NULL, migrate_reply_cb, reply);
}

static void
evacuate_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *plan = vmr_engine_evacuate_finish (VMR_ENGINE (source), res, &error);

    if (plan == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, plan);
}

static void
cluster_evacuate_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *answer = vmr_engine_cluster_evacuate_finish (VMR_ENGINE (source), res, &error);

    if (answer == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, answer);
}

/* "cluster": every daemon of the cluster evacuates its own domains */
static void
handle_cluster_evacuate (Request *req, JsonObject *args)
{
    g_autoptr (JsonObject) request = json_object_new ();
    static const gchar *const members[] = { "from", "to", "domains", "format", "speed" };

    for (guint i = 0; i < G_N_ELEMENTS (members); i++) {
        if (json_object_has_member (args, members[i]))
            json_object_set_member (request, members[i],
                                    json_node_copy (json_object_get_member (args, members[i])));
    }
    vmr_engine_cluster_evacuate_async (req->server->engine, request, NULL, cluster_evacuate_cb,
                                       req);
}

static void
handle_evacuate (Request *req, JsonObject *args)
{
    VmrEvacuateRequest request = {
        .from = vmr_json_get_string (args, "from"),
        .to = vmr_json_get_string (args, "to"),
        .domains = vmr_json_get_string (args, "domains"),
        .format = vmr_json_get_string (args, "format"),
        .dry_run = vmr_json_bool_or (args, "dry-run", FALSE),
    };

    request.speed_given = vmr_json_get_uint (args, "speed", &request.speed);

    if (vmr_json_bool_or (args, "cluster", FALSE)) {
        if (request.dry_run) {
            g_autoptr (GError) error = g_error_new_literal (
                VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                "a dry run is of one host: 'cluster' and 'dry-run' do not go together");

            vmr_control_request_error (req, error);
            return;
        }
        handle_cluster_evacuate (req, args);
        return;
    }
    vmr_engine_evacuate_async (req->server->engine, &request, NULL, evacuate_cb, req);
}

static void
handle_query_jobs (Request *req, JsonObject *args)
{
    vmr_control_request_return_array (req, vmr_engine_list_jobs (req->server->engine));
}

/* the metrics, as /metrics serves them (docs/metrics.md) */
static void
handle_query_metrics (Request *req, JsonObject *args)
{
    g_autoptr (VmrEngineStats) stats = vmr_engine_get_stats (req->server->engine);
    g_autofree gchar *text = vmr_metrics_format (stats);
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "content-type", VMR_METRICS_CONTENT_TYPE);
    json_object_set_string_member (obj, "text", text);
    vmr_control_request_return_object (req, obj);
}

static void
handle_query_job (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    VmrJob *job
        = vmr_engine_lookup_job (req->server->engine, vmr_json_get_string (args, "id"), &error);

    if (job == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, vmr_engine_job_to_json (req->server->engine, job));
}

/* the job's timeline with the job itself: all a report needs in one reply */
static void
handle_query_job_series (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    /* a finished job of an earlier run too, read from its record */
    g_autoptr (VmrJob) job
        = vmr_engine_read_job (req->server->engine, vmr_json_get_string (args, "id"), &error);
    JsonObject *obj;

    if (job == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    obj = vmr_job_series_to_json (job->series);
    json_object_set_object_member (obj, "job", vmr_engine_job_to_json (req->server->engine, job));
    vmr_control_request_return_object (req, obj);
}

static void
job_command (Request *req, JsonObject *args, VmrJobCommand command)
{
    vmr_engine_job_command_async (req->server->engine, vmr_json_get_string (args, "id"), command,
                                  vmr_json_uint_or (args, "speed", 0), NULL, job_reply_cb, req);
}

static void
handle_job_pause (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_JOB_COMMAND_PAUSE);
}

static void
handle_job_resume (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_JOB_COMMAND_RESUME);
}

static void
handle_job_cancel (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_JOB_COMMAND_CANCEL);
}

static void
handle_job_pivot (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_JOB_COMMAND_PIVOT);
}

static void
handle_job_set_speed (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_JOB_COMMAND_SET_SPEED);
}

static void
handle_job_set_copy_mode (Request *req, JsonObject *args)
{
    const gchar *mode = vmr_json_get_string (args, "mode");
    g_autoptr (GError) error = NULL;

    /* QEMU can only go from background to write-blocking */
    if (g_strcmp0 (mode, "write-blocking") != 0 && g_strcmp0 (mode, "active") != 0) {
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "copy mode '%s' is not supported: only 'write-blocking' (or "
                             "'active') can be set on a running copy",
                             mode);
        vmr_control_request_error (req, error);
        return;
    }
    job_command (req, args, VMR_JOB_COMMAND_SET_COPY_MODE_ACTIVE);
}

static void
verify_reply_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrJob) job = vmr_engine_verify_job_finish (VMR_ENGINE (source), res, &error);

    if (job == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, vmr_engine_job_to_json (req->server->engine, job));
}

static void
handle_job_verify (Request *req, JsonObject *args)
{
    vmr_engine_verify_job_async (req->server->engine, vmr_json_get_string (args, "id"), NULL,
                                 verify_reply_cb, req);
}

static void
handle_reload (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    JsonObject *obj;

    if (!vmr_engine_reload_policy (req->server->engine, &error)) {
        vmr_control_request_error (req, error);
        return;
    }
    obj = vmr_engine_show_policy (req->server->engine, NULL, NULL, NULL);
    vmr_control_request_return_object (req, obj);
}

static void
handle_query_policy (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    JsonObject *obj
        = vmr_engine_show_policy (req->server->engine, vmr_json_get_string (args, "domain"),
                                  vmr_json_get_string (args, "disk"), &error);

    if (obj == NULL) {
        vmr_control_request_error (req, error);
        return;
    }
    vmr_control_request_return_object (req, obj);
}

/*
 * The libvirt hook, while libvirtd waits for it: the answer goes out first,
 * whatever follows (libvirt calls included) happens afterwards.
 */
static void
handle_hook_event (Request *req, JsonObject *args)
{
    g_autoptr (VmrEngine) engine = g_object_ref (req->server->engine);
    g_autofree gchar *domain = g_strdup (vmr_json_get_string (args, "domain"));
    g_autofree gchar *op = g_strdup (vmr_json_get_string (args, "op"));
    g_autofree gchar *subop = g_strdup (vmr_json_get_string (args, "subop"));
    g_autofree gchar *uuid = g_strdup (vmr_json_get_string (args, "uuid"));

    vmr_control_request_return_object (req, json_object_new ());
    vmr_engine_hook_event (engine, domain, op, subop, uuid);
}

static const ArgSpec no_args[] = { { NULL } };
static const ArgSpec policy_args[]
    = { { "domain", ARG_STRING, FALSE }, { "disk", ARG_STRING, FALSE }, { NULL } };
static const ArgSpec attach_args[]
    = { { "name", ARG_STRING, TRUE }, { "qmp", ARG_STRING, TRUE }, { NULL } };
static const ArgSpec name_args[] = { { "name", ARG_STRING, TRUE }, { NULL } };
static const ArgSpec id_args[] = { { "id", ARG_STRING, TRUE }, { NULL } };
static const ArgSpec speed_args[]
    = { { "id", ARG_STRING, TRUE }, { "speed", ARG_UINT, TRUE }, { NULL } };
static const ArgSpec copy_mode_args[]
    = { { "id", ARG_STRING, TRUE }, { "mode", ARG_STRING, TRUE }, { NULL } };
static const ArgSpec hook_args[] = {
    { "domain", ARG_STRING, TRUE }, { "op", ARG_STRING, TRUE },    { "subop", ARG_STRING, FALSE },
    { "extra", ARG_STRING, FALSE }, { "uuid", ARG_STRING, FALSE }, { NULL },
};
static const ArgSpec migrate_args[] = {
    { "domain", ARG_STRING, TRUE },
    { "disk", ARG_STRING, FALSE },
    { "destination", ARG_STRING, FALSE },
    { "disks", ARG_ARRAY, FALSE },
    { "format", ARG_STRING, FALSE },
    { "reuse", ARG_BOOL, FALSE },
    { "speed", ARG_UINT, FALSE },
    { "manual-pivot", ARG_BOOL, FALSE },
    { "tls-creds", ARG_STRING, FALSE },
    { "verify", ARG_BOOL, FALSE },
    { NULL },
};
static const ArgSpec evacuate_args[] = {
    { "from", ARG_STRING, TRUE },     { "to", ARG_STRING, TRUE },
    { "domains", ARG_STRING, FALSE }, { "format", ARG_STRING, FALSE },
    { "speed", ARG_UINT, FALSE },     { "dry-run", ARG_BOOL, FALSE },
    { "cluster", ARG_BOOL, FALSE },   { NULL },
};
static const ArgSpec cluster_evacuation_args[] = {
    { "id", ARG_STRING, TRUE },
    { "after", ARG_UINT, FALSE },
    { NULL },
};

const CommandSpec vmr_control_commands[] = {
    { "qmp_capabilities", NULL, handle_capabilities, TRUE },
    { "query-version", no_args, handle_query_version, TRUE },
    { "attach", attach_args, handle_attach },
    { "detach", name_args, handle_detach },
    { "query-domains", no_args, handle_query_domains, TRUE },
    { "migrate", migrate_args, handle_migrate },
    { "evacuate", evacuate_args, handle_evacuate },
    { "query-jobs", no_args, handle_query_jobs, TRUE },
    { "query-job", id_args, handle_query_job, TRUE },
    { "query-job-series", id_args, handle_query_job_series, TRUE },
    { "job-pause", id_args, handle_job_pause },
    { "job-resume", id_args, handle_job_resume },
    { "job-cancel", id_args, handle_job_cancel },
    { "job-pivot", id_args, handle_job_pivot },
    { "job-set-speed", speed_args, handle_job_set_speed },
    { "job-set-copy-mode", copy_mode_args, handle_job_set_copy_mode },
    { "job-verify", id_args, handle_job_verify },
    { "reload", no_args, handle_reload },
    { "query-policy", policy_args, handle_query_policy, TRUE },
    { "query-metrics", no_args, handle_query_metrics, TRUE },
    { "hook-event", hook_args, handle_hook_event },
    { "query-cluster", no_args, handle_query_cluster, TRUE },
    { "query-cluster-evacuation", cluster_evacuation_args, handle_query_cluster_evacuation, TRUE },
};

const gsize vmr_control_n_commands = G_N_ELEMENTS (vmr_control_commands);
