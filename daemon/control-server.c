#define G_LOG_DOMAIN "vmr-daemon"

#include "control-server.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <sys/stat.h>

#include "qmp-stream.h"
#include "vmr-error.h"

struct _VmrControlServer {
    GObject parent_instance;

    VmrEngine *engine;
    GSocketService *service;
    gchar *path;
    GPtrArray *connections; /* of VmrQmpStream *, owned */
    gulong job_changed_id;
};

G_DEFINE_TYPE (VmrControlServer, vmr_control_server, G_TYPE_OBJECT)

/* one command being answered */
typedef struct {
    VmrControlServer *server;
    VmrQmpStream *stream;
    JsonNode *id; /* copied into the reply, NULL if the client sent none */
    gchar *command;
} Request;

static void
request_free (Request *req)
{
    g_object_unref (req->server);
    g_object_unref (req->stream);
    g_clear_pointer (&req->id, json_node_unref);
    g_free (req->command);
    g_free (req);
}

static void
request_reply (Request *req, const gchar *member, JsonNode *value)
{
    g_autoptr (JsonObject) msg = json_object_new ();

    json_object_set_member (msg, member, value);
    if (req->id != NULL)
        json_object_set_member (msg, "id", json_node_copy (req->id));
    vmr_qmp_stream_send (req->stream, msg);
}

/* answers with @value (consumed) and frees @req */
static void
request_return (Request *req, JsonNode *value)
{
    request_reply (req, "return", value);
    request_free (req);
}

static void
request_return_object (Request *req, JsonObject *obj)
{
    JsonNode *node = json_node_new (JSON_NODE_OBJECT);

    json_node_take_object (node, obj);
    request_return (req, node);
}

static void
request_return_array (Request *req, JsonArray *array)
{
    JsonNode *node = json_node_new (JSON_NODE_ARRAY);

    json_node_take_array (node, array);
    request_return (req, node);
}

/* answers with @error and frees @req */
static void
request_error (Request *req, const GError *error)
{
    JsonObject *err = json_object_new ();
    JsonNode *node = json_node_new (JSON_NODE_OBJECT);
    gint code = error->domain == VMR_ERROR ? error->code : VMR_ERROR_FAILED;

    g_message ("%s: %s", req->command, error->message);
    json_object_set_string_member (err, "class", vmr_error_class_name (code));
    json_object_set_string_member (err, "desc", error->message);
    json_node_take_object (node, err);
    request_reply (req, "error", node);
    request_free (req);
}

/* ---- arguments ---- */

typedef enum { ARG_STRING, ARG_BOOL, ARG_UINT, ARG_ARRAY } ArgType;

typedef struct {
    const gchar *name;
    ArgType type;
    gboolean required;
} ArgSpec;

/* checks @args against @spec: unknown, missing and mistyped arguments */
static gboolean
check_args (JsonObject *args, const ArgSpec *spec, GError **error)
{
    g_autoptr (GList) members = json_object_get_members (args);

    for (GList *l = members; l != NULL; l = l->next) {
        gboolean known = FALSE;

        for (const ArgSpec *s = spec; s != NULL && s->name != NULL; s++)
            known |= g_strcmp0 (s->name, l->data) == 0;
        if (!known) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "parameter '%s' is unexpected", (const gchar *) l->data);
            return FALSE;
        }
    }
    for (const ArgSpec *s = spec; s != NULL && s->name != NULL; s++) {
        JsonNode *node = json_object_get_member (args, s->name);
        GType value_type;

        if (node == NULL || JSON_NODE_HOLDS_NULL (node)) {
            if (s->required) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "parameter '%s' is missing", s->name);
                return FALSE;
            }
            continue;
        }
        value_type = JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node) : G_TYPE_NONE;
        if (s->type == ARG_ARRAY) {
            if (!JSON_NODE_HOLDS_ARRAY (node)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "parameter '%s' must be an array", s->name);
                return FALSE;
            }
            continue;
        }
        if ((s->type == ARG_STRING && value_type != G_TYPE_STRING)
            || (s->type == ARG_BOOL && value_type != G_TYPE_BOOLEAN)
            || (s->type == ARG_UINT
                && (value_type != G_TYPE_INT64 || json_node_get_int (node) < 0))) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "parameter '%s' must be %s",
                         s->name,
                         s->type == ARG_STRING ? "a string"
                         : s->type == ARG_BOOL ? "a boolean"
                                               : "a non-negative integer");
            return FALSE;
        }
    }
    return TRUE;
}

static const gchar *
arg_string (JsonObject *args, const gchar *name)
{
    JsonNode *node = json_object_get_member (args, name);

    return node != NULL && !JSON_NODE_HOLDS_NULL (node) ? json_node_get_string (node) : NULL;
}

static gboolean
arg_bool (JsonObject *args, const gchar *name)
{
    JsonNode *node = json_object_get_member (args, name);

    return node != NULL && !JSON_NODE_HOLDS_NULL (node) && json_node_get_boolean (node);
}

static guint64
arg_uint (JsonObject *args, const gchar *name)
{
    JsonNode *node = json_object_get_member (args, name);

    return node != NULL && !JSON_NODE_HOLDS_NULL (node) ? (guint64) json_node_get_int (node) : 0;
}

/* ---- commands ---- */

static void
handle_capabilities (Request *req, JsonObject *args)
{
    request_return_object (req, json_object_new ());
}

static void
handle_query_version (Request *req, JsonObject *args)
{
    JsonObject *obj = json_object_new ();

    json_object_set_string_member (obj, "version", VMR_VERSION);
    request_return_object (req, obj);
}

static void
attach_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonObject *domain = vmr_engine_attach_finish (VMR_ENGINE (source), res, &error);

    if (domain == NULL) {
        request_error (req, error);
        return;
    }
    request_return_object (req, domain);
}

static void
handle_attach (Request *req, JsonObject *args)
{
    vmr_engine_attach_async (req->server->engine, arg_string (args, "name"),
                             arg_string (args, "qmp"), NULL, attach_cb, req);
}

static void
handle_detach (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;

    if (!vmr_engine_detach (req->server->engine, arg_string (args, "name"), &error)) {
        request_error (req, error);
        return;
    }
    request_return_object (req, json_object_new ());
}

static void
query_domains_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    JsonArray *domains = vmr_engine_query_domains_finish (VMR_ENGINE (source), res, &error);

    if (domains == NULL) {
        request_error (req, error);
        return;
    }
    request_return_array (req, domains);
}

static void
handle_query_domains (Request *req, JsonObject *args)
{
    vmr_engine_query_domains_async (req->server->engine, NULL, query_domains_cb, req);
}

static void
job_reply_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Request *req = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrJob) job = vmr_engine_job_command_finish (VMR_ENGINE (source), res, &error);

    if (job == NULL) {
        request_error (req, error);
        return;
    }
    request_return_object (req, vmr_engine_job_to_json (req->server->engine, job));
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
        request_error (req, error);
        return;
    }
    if (!group) {
        request_return_object (
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
    request_return_object (req, obj);
}

/* the "disks" of a group migrate: [{"disk": ..., "destination": ...}, ...] */
static GArray *
parse_targets (JsonArray *array, GError **error)
{
    g_autoptr (GArray) targets = g_array_new (FALSE, TRUE, sizeof (VmrMigrateTarget));

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonNode *node = json_array_get_element (array, i);
        JsonObject *obj = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
        JsonNode *disk = obj != NULL ? json_object_get_member (obj, "disk") : NULL;
        JsonNode *dest = obj != NULL ? json_object_get_member (obj, "destination") : NULL;
        VmrMigrateTarget target = { 0 };

        if (disk == NULL || dest == NULL || json_node_get_value_type (disk) != G_TYPE_STRING
            || json_node_get_value_type (dest) != G_TYPE_STRING
            || json_object_get_size (obj) != 2) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "parameter 'disks' must be a list of {\"disk\", \"destination\"} "
                         "objects (element %u is not)",
                         i);
            return NULL;
        }
        target.disk = json_node_get_string (disk);
        target.destination = json_node_get_string (dest);
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
    JsonNode *disks = json_object_get_member (args, "disks");
    g_autoptr (GArray) targets = NULL;
    g_autoptr (GError) error = NULL;
    MigrateReply *reply;
    VmrMigrateRequest request = {
        .domain = arg_string (args, "domain"),
        .disk = arg_string (args, "disk"),
        .destination = arg_string (args, "destination"),
        .format = arg_string (args, "format"),
        .reuse = arg_bool (args, "reuse"),
        .speed = arg_uint (args, "speed"),
        .speed_given = json_object_has_member (args, "speed")
                       && !JSON_NODE_HOLDS_NULL (json_object_get_member (args, "speed")),
        .manual_pivot = arg_bool (args, "manual-pivot"),
    };

    if (disks != NULL && !JSON_NODE_HOLDS_NULL (disks)) {
        if (request.disk != NULL || request.destination != NULL) {
            g_set_error_literal (&error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "give either 'disks' or 'disk' and 'destination', not both");
            request_error (req, error);
            return;
        }
        targets = parse_targets (json_node_get_array (disks), &error);
        if (targets == NULL) {
            request_error (req, error);
            return;
        }
        request.targets = (const VmrMigrateTarget *) targets->data;
        request.n_targets = targets->len;
    } else if (request.disk == NULL || request.destination == NULL) {
        g_set_error (&error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "parameter '%s' is missing",
                     request.disk == NULL ? "disk" : "destination");
        request_error (req, error);
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
        request_error (req, error);
        return;
    }
    request_return_object (req, plan);
}

static void
handle_evacuate (Request *req, JsonObject *args)
{
    VmrEvacuateRequest request = {
        .from = arg_string (args, "from"),
        .to = arg_string (args, "to"),
        .domains = arg_string (args, "domains"),
        .format = arg_string (args, "format"),
        .speed = arg_uint (args, "speed"),
        .speed_given = json_object_has_member (args, "speed")
                       && !JSON_NODE_HOLDS_NULL (json_object_get_member (args, "speed")),
        .dry_run = arg_bool (args, "dry-run"),
    };

    vmr_engine_evacuate_async (req->server->engine, &request, NULL, evacuate_cb, req);
}

static void
handle_query_jobs (Request *req, JsonObject *args)
{
    request_return_array (req, vmr_engine_list_jobs (req->server->engine));
}

static void
handle_query_job (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    VmrJob *job = vmr_engine_lookup_job (req->server->engine, arg_string (args, "id"), &error);

    if (job == NULL) {
        request_error (req, error);
        return;
    }
    request_return_object (req, vmr_engine_job_to_json (req->server->engine, job));
}

static void
job_command (Request *req, JsonObject *args, VmrBackendCommand command)
{
    vmr_engine_job_command_async (req->server->engine, arg_string (args, "id"), command,
                                  arg_uint (args, "speed"), NULL, job_reply_cb, req);
}

static void
handle_job_pause (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_BACKEND_COMMAND_PAUSE);
}

static void
handle_job_resume (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_BACKEND_COMMAND_RESUME);
}

static void
handle_job_cancel (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_BACKEND_COMMAND_CANCEL);
}

static void
handle_job_pivot (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_BACKEND_COMMAND_PIVOT);
}

static void
handle_job_set_speed (Request *req, JsonObject *args)
{
    job_command (req, args, VMR_BACKEND_COMMAND_SET_SPEED);
}

static void
handle_job_set_copy_mode (Request *req, JsonObject *args)
{
    const gchar *mode = arg_string (args, "mode");
    g_autoptr (GError) error = NULL;

    /* QEMU can only go from background to write-blocking */
    if (g_strcmp0 (mode, "write-blocking") != 0 && g_strcmp0 (mode, "active") != 0) {
        error = g_error_new (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "copy mode '%s' is not supported: only 'write-blocking' (or "
                             "'active') can be set on a running copy",
                             mode);
        request_error (req, error);
        return;
    }
    job_command (req, args, VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE);
}

static void
handle_reload (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    JsonObject *obj;

    if (!vmr_engine_reload_policy (req->server->engine, &error)) {
        request_error (req, error);
        return;
    }
    obj = vmr_engine_show_policy (req->server->engine, NULL, NULL, NULL);
    request_return_object (req, obj);
}

static void
handle_query_policy (Request *req, JsonObject *args)
{
    g_autoptr (GError) error = NULL;
    JsonObject *obj = vmr_engine_show_policy (req->server->engine, arg_string (args, "domain"),
                                              arg_string (args, "disk"), &error);

    if (obj == NULL) {
        request_error (req, error);
        return;
    }
    request_return_object (req, obj);
}

/*
 * The libvirt hook, while libvirtd waits for it: the answer goes out first,
 * whatever follows (libvirt calls included) happens afterwards.
 */
static void
handle_hook_event (Request *req, JsonObject *args)
{
    g_autoptr (VmrEngine) engine = g_object_ref (req->server->engine);
    g_autofree gchar *domain = g_strdup (arg_string (args, "domain"));
    g_autofree gchar *op = g_strdup (arg_string (args, "op"));
    g_autofree gchar *subop = g_strdup (arg_string (args, "subop"));
    g_autofree gchar *uuid = g_strdup (arg_string (args, "uuid"));

    request_return_object (req, json_object_new ());
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
    { NULL },
};
static const ArgSpec evacuate_args[] = {
    { "from", ARG_STRING, TRUE },
    { "to", ARG_STRING, TRUE },
    { "domains", ARG_STRING, FALSE },
    { "format", ARG_STRING, FALSE },
    { "speed", ARG_UINT, FALSE },
    { "dry-run", ARG_BOOL, FALSE },
    { NULL },
};

static const struct {
    const gchar *name;
    const ArgSpec *args;
    void (*handler) (Request *req, JsonObject *args);
} commands[] = {
    { "qmp_capabilities", NULL, handle_capabilities },
    { "query-version", no_args, handle_query_version },
    { "attach", attach_args, handle_attach },
    { "detach", name_args, handle_detach },
    { "query-domains", no_args, handle_query_domains },
    { "migrate", migrate_args, handle_migrate },
    { "evacuate", evacuate_args, handle_evacuate },
    { "query-jobs", no_args, handle_query_jobs },
    { "query-job", id_args, handle_query_job },
    { "job-pause", id_args, handle_job_pause },
    { "job-resume", id_args, handle_job_resume },
    { "job-cancel", id_args, handle_job_cancel },
    { "job-pivot", id_args, handle_job_pivot },
    { "job-set-speed", speed_args, handle_job_set_speed },
    { "job-set-copy-mode", copy_mode_args, handle_job_set_copy_mode },
    { "reload", no_args, handle_reload },
    { "query-policy", policy_args, handle_query_policy },
    { "hook-event", hook_args, handle_hook_event },
};

static void
dispatch (VmrControlServer *self, VmrQmpStream *stream, JsonObject *msg)
{
    Request *req = g_new0 (Request, 1);
    JsonNode *execute = json_object_get_member (msg, "execute");
    JsonNode *args_node = json_object_get_member (msg, "arguments");
    g_autoptr (JsonObject) args = NULL;
    g_autoptr (GError) error = NULL;

    req->server = g_object_ref (self);
    req->stream = g_object_ref (stream);
    if (json_object_has_member (msg, "id"))
        req->id = json_node_copy (json_object_get_member (msg, "id"));
    if (execute == NULL || json_node_get_value_type (execute) != G_TYPE_STRING) {
        req->command = g_strdup ("(none)");
        error = g_error_new_literal (VMR_ERROR, VMR_ERROR_GENERIC,
                                     "expected a member 'execute' naming a command");
        request_error (req, error);
        return;
    }
    req->command = g_strdup (json_node_get_string (execute));
    if (args_node != NULL && !JSON_NODE_HOLDS_OBJECT (args_node)
        && !JSON_NODE_HOLDS_NULL (args_node)) {
        error = g_error_new_literal (VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                     "'arguments' must be an object");
        request_error (req, error);
        return;
    }
    args = args_node != NULL && JSON_NODE_HOLDS_OBJECT (args_node)
               ? json_object_ref (json_node_get_object (args_node))
               : json_object_new ();
    for (gsize i = 0; i < G_N_ELEMENTS (commands); i++) {
        if (g_strcmp0 (commands[i].name, req->command) != 0)
            continue;
        if (commands[i].args != NULL && !check_args (args, commands[i].args, &error)) {
            g_prefix_error (&error, "%s: ", req->command);
            request_error (req, error);
            return;
        }
        g_debug ("command %s", req->command);
        commands[i].handler (req, args);
        return;
    }
    error = g_error_new (VMR_ERROR, VMR_ERROR_COMMAND_NOT_FOUND,
                         "the command %s has not been found", req->command);
    request_error (req, error);
}

/* ---- connections ---- */

static void
stream_message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    dispatch (VMR_CONTROL_SERVER (user_data), stream, msg);
}

static void
stream_malformed_cb (VmrQmpStream *stream, const gchar *line, const gchar *reason,
                     gpointer user_data)
{
    g_autoptr (JsonObject) msg = json_object_new ();
    JsonObject *err = json_object_new ();

    json_object_set_string_member (err, "class", vmr_error_class_name (VMR_ERROR_GENERIC));
    json_object_set_string_member (err, "desc", reason);
    json_object_set_object_member (msg, "error", err);
    vmr_qmp_stream_send (stream, msg);
}

static void
stream_closed_cb (VmrQmpStream *stream, GError *error, gpointer user_data)
{
    VmrControlServer *self = user_data;

    g_signal_handlers_disconnect_by_data (stream, self);
    g_ptr_array_remove (self->connections, stream);
}

static gboolean
incoming_cb (GSocketService *service, GSocketConnection *connection, GObject *source_object,
             gpointer user_data)
{
    VmrControlServer *self = user_data;
    g_autoptr (VmrQmpStream) stream = vmr_qmp_stream_new (G_IO_STREAM (connection));
    g_autoptr (JsonObject) greeting = json_object_new ();
    JsonObject *qmp = json_object_new ();
    JsonObject *version = json_object_new ();

    json_object_set_string_member (version, "virt-mirror", VMR_VERSION);
    json_object_set_object_member (qmp, "version", version);
    json_object_set_array_member (qmp, "capabilities", json_array_new ());
    json_object_set_object_member (greeting, "QMP", qmp);

    g_signal_connect (stream, "message", G_CALLBACK (stream_message_cb), self);
    g_signal_connect (stream, "malformed", G_CALLBACK (stream_malformed_cb), self);
    g_signal_connect (stream, "closed", G_CALLBACK (stream_closed_cb), self);
    g_ptr_array_add (self->connections, g_object_ref (stream));
    vmr_qmp_stream_send (stream, greeting);
    vmr_qmp_stream_start (stream);
    return TRUE;
}

static void
job_changed_cb (VmrEngine *engine, gpointer job_ptr, gint previous, gpointer user_data)
{
    VmrControlServer *self = user_data;
    VmrJob *job = job_ptr;
    g_autoptr (JsonObject) msg = json_object_new ();
    JsonObject *data = json_object_new ();
    JsonObject *timestamp = json_object_new ();
    gint64 now = g_get_real_time ();

    json_object_set_string_member (data, "id", job->id);
    json_object_set_string_member (data, "domain", job->domain);
    json_object_set_string_member (data, "disk", job->disk);
    json_object_set_string_member (data, "state", vmr_job_state_to_string (job->state));
    json_object_set_string_member (data, "previous",
                                   vmr_job_state_to_string ((VmrJobState) previous));
    if (job->reason != NULL && vmr_job_state_is_final (job->state))
        json_object_set_string_member (data, "reason", job->reason);
    else
        json_object_set_null_member (data, "reason");
    json_object_set_int_member (timestamp, "seconds", now / G_USEC_PER_SEC);
    json_object_set_int_member (timestamp, "microseconds", now % G_USEC_PER_SEC);
    json_object_set_string_member (msg, "event", "JOB_STATE_CHANGED");
    json_object_set_object_member (msg, "data", data);
    json_object_set_object_member (msg, "timestamp", timestamp);
    for (guint i = 0; i < self->connections->len; i++)
        vmr_qmp_stream_send (g_ptr_array_index (self->connections, i), msg);
}

static gboolean
socket_is_served (const gchar *path)
{
    g_autoptr (GSocketClient) client = g_socket_client_new ();
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (path);
    g_autoptr (GSocketConnection) conn = NULL;

    conn = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (address), NULL, NULL);
    return conn != NULL;
}

gboolean
vmr_control_server_listen (VmrControlServer *self, const gchar *path, GError **error)
{
    g_autofree gchar *dir = g_path_get_dirname (path);
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (GError) local_error = NULL;
    mode_t old_umask;
    gboolean ok;

    if (g_mkdir_with_parents (dir, 0755) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot create %s: %s", dir,
                     g_strerror (errno));
        return FALSE;
    }
    if (g_file_test (path, G_FILE_TEST_EXISTS)) {
        if (socket_is_served (path)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                         "another virt-mirrord is listening on %s", path);
            return FALSE;
        }
        g_debug ("removing the stale socket %s", path);
        g_unlink (path);
    }
    address = g_unix_socket_address_new (path);
    /* the socket is born with mode 0600: only root may drive the daemon */
    old_umask = umask (0177);
    ok = g_socket_listener_add_address (G_SOCKET_LISTENER (self->service), address,
                                        G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, NULL, NULL,
                                        &local_error);
    umask (old_umask);
    if (!ok) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot listen on %s: %s", path,
                     local_error->message);
        return FALSE;
    }
    self->path = g_strdup (path);
    g_socket_service_start (self->service);
    return TRUE;
}

void
vmr_control_server_stop (VmrControlServer *self)
{
    g_autoptr (GPtrArray) connections = NULL;

    g_socket_service_stop (self->service);
    g_socket_listener_close (G_SOCKET_LISTENER (self->service));
    connections = g_steal_pointer (&self->connections);
    self->connections = g_ptr_array_new_with_free_func (g_object_unref);
    for (guint i = 0; i < connections->len; i++) {
        VmrQmpStream *stream = g_ptr_array_index (connections, i);

        g_signal_handlers_disconnect_by_data (stream, self);
        vmr_qmp_stream_close (stream);
    }
    if (self->path != NULL) {
        g_unlink (self->path);
        g_clear_pointer (&self->path, g_free);
    }
}

VmrControlServer *
vmr_control_server_new (VmrEngine *engine)
{
    VmrControlServer *self = g_object_new (VMR_TYPE_CONTROL_SERVER, NULL);

    self->engine = g_object_ref (engine);
    self->job_changed_id
        = g_signal_connect (engine, "job-changed", G_CALLBACK (job_changed_cb), self);
    return self;
}

static void
vmr_control_server_finalize (GObject *object)
{
    VmrControlServer *self = VMR_CONTROL_SERVER (object);

    g_clear_signal_handler (&self->job_changed_id, self->engine);
    g_clear_object (&self->engine);
    g_clear_object (&self->service);
    g_ptr_array_unref (self->connections);
    g_free (self->path);
    G_OBJECT_CLASS (vmr_control_server_parent_class)->finalize (object);
}

static void
vmr_control_server_init (VmrControlServer *self)
{
    self->service = g_socket_service_new ();
    self->connections = g_ptr_array_new_with_free_func (g_object_unref);
    g_signal_connect (self->service, "incoming", G_CALLBACK (incoming_cb), self);
}

static void
vmr_control_server_class_init (VmrControlServerClass *klass)
{
    G_OBJECT_CLASS (klass)->finalize = vmr_control_server_finalize;
}
