#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Evacuations across the cluster (cluster-evacuation.h): the command's
 * daemon checks the request on its own host (a dry run of its plan) and
 * puts it for every daemon; each daemon, this one too, runs its own
 * evacuation of it under the cluster's limits and reports under its lease
 * how its jobs go, at each of their transitions, until they have all ended.
 */

#include "engine-private.h"

#include "cluster-evacuation.h"
#include "cluster.h"
#include "nbd-uri.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* this host's part of an evacuation */
typedef struct {
    gchar *id;
    gchar *from;
    JsonObject *plan;    /* the local evacuation's, NULL until it is made */
    gchar *error;        /* why this host could not evacuate, or NULL */
    gboolean planned;    /* the local evacuation answered */
    JsonObject *request; /* the request, while its plan waits for the domains */
    guint wait_source;   /* ... until this fires */
} HostEvacuation;

/*
 * A daemon that knows no domain yet (it has just started: libvirt lists them,
 * or they are attached) plans its part once they have come in: no domain
 * added for DOMAINS_SETTLE_MS, or DOMAINS_WAIT_S at the most.
 */
#define DOMAINS_SETTLE_MS 1000
#define DOMAINS_WAIT_S    10

static void
host_evacuation_free (HostEvacuation *evacuation)
{
    g_clear_handle_id (&evacuation->wait_source, g_source_remove);
    g_clear_pointer (&evacuation->request, json_object_unref);
    g_free (evacuation->id);
    g_free (evacuation->from);
    g_clear_pointer (&evacuation->plan, json_object_unref);
    g_free (evacuation->error);
    g_free (evacuation);
}

/* the request's members as a VmrEvacuateRequest; the strings belong to @object */
static VmrEvacuateRequest
request_of (JsonObject *object)
{
    VmrEvacuateRequest request = {
        .from = vmr_json_get_string (object, "from"),
        .to = vmr_json_get_string (object, "to"),
        .domains = vmr_json_get_string (object, "domains"),
        .format = vmr_json_get_string (object, "format"),
    };

    request.speed_given = vmr_json_get_uint (object, "speed", &request.speed);
    return request;
}

/*
 * Whether this host lets the request @object (whoever could write to the
 * cluster's prefix put it) send its disks where it says, before anything
 * is planned: only within the policy's allowed-destinations, which must be
 * set, outside the daemon's own directories, to an NBD server only with
 * [cluster] evacuate-to-nbd = allow. Each planned destination is checked
 * again, as any evacuation's are.
 */
static gboolean
check_request (VmrEngine *self, JsonObject *object, GError **error)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, NULL, NULL);
    const gchar *to = vmr_json_get_string (object, "to");

    if (rule->allowed_destinations == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_PERMISSION_DENIED,
                             "this host's policy sets no allowed-destinations: it takes part in a "
                             "cluster evacuation only to the destinations that key allows");
        return FALSE;
    }
    if (to == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "the request names no destination");
        return FALSE;
    }
    if (vmr_nbd_uri_is_uri (to)) {
        if (self->cluster != NULL && vmr_cluster_get_config (self->cluster)->evacuate_to_nbd)
            return TRUE;
        g_set_error (error, VMR_ERROR, VMR_ERROR_PERMISSION_DENIED,
                     "the destination %s is an NBD server: this host's policy needs [cluster] "
                     "evacuate-to-nbd = allow to send its disks to one in a cluster evacuation",
                     to);
        return FALSE;
    }
    if (!g_path_is_absolute (to)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "the destination directory must be an absolute path, not '%s'", to);
        return FALSE;
    }
    return vmr_engine_guard_directory (self, to, error);
}

/* what this host publishes of @evacuation: each disk with its job's state */
static JsonObject *
host_report (VmrEngine *self, HostEvacuation *evacuation)
{
    JsonObject *report = json_object_new ();
    JsonArray *disks = json_array_new ();
    JsonArray *planned
        = evacuation->plan != NULL ? vmr_json_get_array (evacuation->plan, "disks") : NULL;
    gboolean ended = evacuation->planned;

    json_object_set_string_member (report, "from", evacuation->from);
    if (evacuation->error != NULL)
        json_object_set_string_member (report, "error", evacuation->error);
    for (guint i = 0; planned != NULL && i < json_array_get_length (planned); i++) {
        JsonObject *entry = json_array_get_object_element (planned, i);
        const gchar *id = vmr_json_get_string (entry, "job");
        VmrJob *job = id != NULL ? vmr_job_table_lookup_or_load (self->jobs, id) : NULL;
        JsonObject *disk = json_object_new ();

        json_object_set_string_member (disk, "domain", vmr_json_get_string (entry, "domain"));
        json_object_set_string_member (disk, "disk", vmr_json_get_string (entry, "disk"));
        if (id != NULL)
            json_object_set_string_member (disk, "job", id);
        if (job != NULL) {
            json_object_set_string_member (disk, "state", vmr_job_state_to_string (job->state));
            if (job->reason != NULL)
                json_object_set_string_member (disk, "error", job->reason);
            ended = ended && vmr_job_state_is_final (job->state);
        } else {
            /* skipped, or refused at submission */
            json_object_set_string_member (
                disk, "state",
                vmr_json_get_string (entry, "skipped") != NULL ? "skipped" : "failed");
            if (vmr_json_get_string (entry, "error") != NULL)
                json_object_set_string_member (disk, "error", vmr_json_get_string (entry, "error"));
        }
        json_array_add_object_element (disks, disk);
    }
    json_object_set_array_member (report, "disks", disks);
    json_object_set_string_member (report, "state",
                                   ended                 ? "ended"
                                   : evacuation->planned ? "running"
                                                         : "planning");
    return report;
}

static void
report (VmrEngine *self, HostEvacuation *evacuation)
{
    g_autoptr (JsonObject) object = host_report (self, evacuation);

    /* an ended part is kept, and reported again after a reconnection, until its request goes */
    if (self->evacuations != NULL)
        vmr_cluster_evacuations_report (self->evacuations, evacuation->id, object);
    /* ... which it did already while the part ran: nothing is kept of it */
    if (g_str_equal (vmr_json_get_string (object, "state"), "ended")
        && !g_hash_table_contains (self->cluster_taken_part, evacuation->id)) {
        if (self->evacuations != NULL)
            vmr_cluster_evacuations_forget (self->evacuations, evacuation->id);
        g_hash_table_remove (self->cluster_evacuations, evacuation->id);
    }
}

typedef struct {
    VmrEngine *self; /* a reference */
    gchar *id;
} Planning;

static void
local_evacuate_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    Planning *planning = user_data;
    VmrEngine *self = planning->self;
    HostEvacuation *evacuation = g_hash_table_lookup (self->cluster_evacuations, planning->id);
    g_autoptr (GError) error = NULL;
    JsonObject *plan = vmr_engine_evacuate_finish (self, result, &error);

    if (evacuation != NULL)
        evacuation->planned = TRUE;
    if (evacuation == NULL) {
        g_clear_pointer (&plan, json_object_unref);
    } else if (plan != NULL) {
        evacuation->plan = plan;
    } else if (!g_error_matches (error, VMR_ERROR, VMR_ERROR_NOT_FOUND)
               || g_file_test (evacuation->from, G_FILE_TEST_IS_DIR)) {
        /* no such directory here is nothing to move; anything else is this host's failure */
        g_warning ("cluster evacuation %s: %s", planning->id, error->message);
        evacuation->error = g_strdup (error->message);
    }
    if (evacuation != NULL)
        report (self, evacuation);
    g_object_unref (planning->self);
    g_free (planning->id);
    g_free (planning);
}

/* the file of the state directory that lists, one a line, the evacuations this host took part in */
static gchar *
taken_part_path (VmrEngine *self)
{
    return g_build_filename (self->state_dir, "cluster-evacuations", NULL);
}

/*
 * The ids this host took part in, kept in the file in the order taken: at
 * most TAKEN_PART_MAX, the oldest forgotten first; an id whose request has
 * gone from etcd is forgotten at once (it cannot come again).
 */
#define TAKEN_PART_MAX 512

static gint
compare_taken (gconstpointer a, gconstpointer b, gpointer user_data)
{
    gsize first = GPOINTER_TO_SIZE (g_hash_table_lookup (user_data, *(gpointer const *) a));
    gsize second = GPOINTER_TO_SIZE (g_hash_table_lookup (user_data, *(gpointer const *) b));

    return first < second ? -1 : first > second ? 1 : 0;
}

static void
save_taken_part (VmrEngine *self)
{
    g_autofree gchar *path = taken_part_path (self);
    g_autoptr (GString) text = g_string_new (NULL);
    g_autoptr (GError) error = NULL;
    guint n = 0;
    g_autofree gpointer *ids = g_hash_table_get_keys_as_array (self->cluster_taken_part, &n);

    g_qsort_with_data (ids, (gint) n, sizeof (gpointer), compare_taken, self->cluster_taken_part);
    for (guint i = 0; i < n; i++)
        g_string_append_printf (text, "%s\n", (const gchar *) ids[i]);
    if (!g_file_set_contents (path, text->str, (gssize) text->len, &error))
        g_warning ("cluster evacuations: %s: a restart could take part again", error->message);
}

/* @id taken part in, the newest; the oldest forgotten beyond TAKEN_PART_MAX */
static void
add_taken_part (VmrEngine *self, const gchar *id)
{
    GHashTableIter iter;
    gpointer key, value;
    gpointer oldest = NULL;
    gsize oldest_seq = G_MAXSIZE;

    g_hash_table_insert (self->cluster_taken_part, g_strdup (id),
                         GSIZE_TO_POINTER (++self->cluster_taken_seq));
    if (g_hash_table_size (self->cluster_taken_part) <= TAKEN_PART_MAX)
        return;
    g_hash_table_iter_init (&iter, self->cluster_taken_part);
    while (g_hash_table_iter_next (&iter, &key, &value)) {
        if (GPOINTER_TO_SIZE (value) < oldest_seq) {
            oldest_seq = GPOINTER_TO_SIZE (value);
            oldest = key;
        }
    }
    g_hash_table_remove (self->cluster_taken_part, oldest);
}

static void
load_taken_part (VmrEngine *self)
{
    g_autofree gchar *path = taken_part_path (self);
    g_autofree gchar *text = NULL;
    g_auto (GStrv) ids = NULL;

    self->cluster_taken_part = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    if (!g_file_get_contents (path, &text, NULL, NULL))
        return;
    ids = g_strsplit (text, "\n", -1);
    for (guint i = 0; ids[i] != NULL; i++) {
        if (ids[i][0] != '\0')
            add_taken_part (self, ids[i]);
    }
}

/*
 * Whether this host took part in evacuation @id already; if not, it is
 * written down, in the state directory, before it does: a request is seen
 * again each time the watch opens, and after a restart.
 */
static gboolean
take_part (VmrEngine *self, const gchar *id)
{
    if (g_hash_table_contains (self->cluster_taken_part, id))
        return FALSE;
    add_taken_part (self, id);
    save_taken_part (self);
    return TRUE;
}

/* the request of @id went from etcd: this host forgets it, its part, and its report */
static void
forget_part (VmrEngine *self, const gchar *id)
{
    gboolean known = g_hash_table_remove (self->cluster_taken_part, id);
    HostEvacuation *evacuation = g_hash_table_lookup (self->cluster_evacuations, id);
    g_autoptr (JsonObject) last = evacuation != NULL ? host_report (self, evacuation) : NULL;

    /* a part whose jobs run on reports until they end: its report goes with the lease */
    if (last != NULL && g_str_equal (vmr_json_get_string (last, "state"), "ended")) {
        g_hash_table_remove (self->cluster_evacuations, id);
        if (self->evacuations != NULL)
            vmr_cluster_evacuations_forget (self->evacuations, id);
    }
    if (known)
        save_taken_part (self);
}

static void
gone_cb (VmrClusterEvacuations *evacuations, const gchar *id, gpointer user_data)
{
    forget_part (user_data, id);
}

static void
open_cb (VmrClusterEvacuations *evacuations, GHashTable *open, gpointer user_data)
{
    VmrEngine *self = user_data;
    g_autoptr (GPtrArray) gone = g_ptr_array_new_with_free_func (g_free);
    GHashTableIter iter;
    const gchar *id;

    g_hash_table_iter_init (&iter, self->cluster_taken_part);
    while (g_hash_table_iter_next (&iter, (gpointer *) &id, NULL)) {
        if (!g_hash_table_contains (open, id))
            g_ptr_array_add (gone, g_strdup (id));
    }
    for (guint i = 0; i < gone->len; i++)
        forget_part (self, g_ptr_array_index (gone, i));
}

/* plans this host's part of @evacuation, @object its request */
static void
plan_part (VmrEngine *self, HostEvacuation *evacuation, JsonObject *object)
{
    VmrEvacuateRequest request = request_of (object);
    Planning *planning = g_new0 (Planning, 1);

    planning->self = g_object_ref (self);
    planning->id = g_strdup (evacuation->id);
    vmr_engine_evacuate_async (self, &request, NULL, local_evacuate_cb, planning);
}

/* a part whose plan waits for the domains: the engine (not a reference) and the id */
static Planning *
waiting_new (VmrEngine *self, HostEvacuation *evacuation)
{
    Planning *waiting = g_new0 (Planning, 1);

    waiting->self = self;
    waiting->id = g_strdup (evacuation->id);
    return waiting;
}

static void
waiting_free (Planning *waiting)
{
    g_free (waiting->id);
    g_free (waiting);
}

static gboolean
domains_waited_cb (gpointer user_data)
{
    Planning *waiting = user_data;
    HostEvacuation *evacuation
        = g_hash_table_lookup (waiting->self->cluster_evacuations, waiting->id);
    g_autoptr (JsonObject) request = NULL;

    if (evacuation == NULL)
        return G_SOURCE_REMOVE;
    evacuation->wait_source = 0;
    request = g_steal_pointer (&evacuation->request);
    plan_part (waiting->self, evacuation, request);
    return G_SOURCE_REMOVE;
}

static void
request_cb (VmrClusterEvacuations *evacuations, JsonObject *object, gpointer user_data)
{
    VmrEngine *self = user_data;
    HostEvacuation *evacuation;
    g_autoptr (GError) error = NULL;

    if (!take_part (self, vmr_json_get_string (object, "id"))) {
        g_debug ("cluster evacuation %s: this host took part already",
                 vmr_json_get_string (object, "id"));
        return;
    }
    g_message ("cluster evacuation %s: %s to %s, asked by %s: taking part",
               vmr_json_get_string (object, "id"), vmr_json_get_string (object, "from"),
               vmr_json_get_string (object, "to"), vmr_json_get_string (object, "host"));
    evacuation = g_new0 (HostEvacuation, 1);
    evacuation->id = g_strdup (vmr_json_get_string (object, "id"));
    evacuation->from = g_strdup (vmr_json_get_string (object, "from"));
    g_hash_table_replace (self->cluster_evacuations, evacuation->id, evacuation);
    if (!check_request (self, object, &error)) {
        g_warning ("cluster evacuation %s: refused: %s", evacuation->id, error->message);
        evacuation->error = g_strdup_printf ("refused: %s", error->message);
        evacuation->planned = TRUE;
        report (self, evacuation);
        return;
    }
    report (self, evacuation);
    if (g_hash_table_size (self->domains) > 0) {
        plan_part (self, evacuation, object);
        return;
    }
    g_message ("cluster evacuation %s: no domain known yet: planning once they are in",
               evacuation->id);
    evacuation->request = json_object_ref (object);
    evacuation->wait_source = g_timeout_add_seconds_full (
        G_PRIORITY_DEFAULT, DOMAINS_WAIT_S, domains_waited_cb, waiting_new (self, evacuation),
        (GDestroyNotify) waiting_free);
}

void
vmr_engine_evacuations_domain_added (VmrEngine *self, DomainEntry *entry)
{
    GHashTableIter iter;
    HostEvacuation *evacuation;

    if (self->cluster_evacuations == NULL)
        return;
    g_hash_table_iter_init (&iter, self->cluster_evacuations);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &evacuation)) {
        if (evacuation->request == NULL)
            continue;
        /* another may follow: the plan waits until none has for a while */
        g_clear_handle_id (&evacuation->wait_source, g_source_remove);
        evacuation->wait_source
            = g_timeout_add_full (G_PRIORITY_DEFAULT, DOMAINS_SETTLE_MS, domains_waited_cb,
                                  waiting_new (self, evacuation), (GDestroyNotify) waiting_free);
    }
}

static void job_changed_cb (VmrEngine *self, VmrJob *job, gint previous, gpointer user_data);

void
vmr_engine_evacuations_cluster_joined (VmrEngine *self)
{
    g_autoptr (GList) parts = NULL;

    if (!self->follows_evacuations)
        return;
    if (self->cluster_evacuations == NULL)
        self->cluster_evacuations = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                           (GDestroyNotify) host_evacuation_free);
    if (self->cluster_taken_part == NULL)
        load_taken_part (self);
    self->evacuations = vmr_cluster_evacuations_new (self->cluster);
    g_signal_connect (self->evacuations, "request", G_CALLBACK (request_cb), self);
    g_signal_connect (self->evacuations, "gone", G_CALLBACK (gone_cb), self);
    g_signal_connect (self->evacuations, "open", G_CALLBACK (open_cb), self);
    g_signal_connect (self, "job-changed", G_CALLBACK (job_changed_cb), NULL);
    /* joined again (the policy named another etcd): the parts under way report again */
    parts = g_hash_table_get_values (self->cluster_evacuations);
    for (GList *l = parts; l != NULL; l = l->next)
        report (self, l->data);
}

/* the parts under way are kept: a cluster joined again reports them */
void
vmr_engine_evacuations_cluster_leaving (VmrEngine *self)
{
    g_signal_handlers_disconnect_by_func (self, job_changed_cb, NULL);
    if (self->evacuations != NULL)
        g_signal_handlers_disconnect_by_data (self->evacuations, self);
    g_clear_object (&self->evacuations);
}

/* a job changed: the evacuation it belongs to reports again */
static void
job_changed_cb (VmrEngine *self, VmrJob *job, gint previous, gpointer user_data)
{
    GHashTableIter iter;
    HostEvacuation *evacuation;
    g_autoptr (GPtrArray) changed = g_ptr_array_new ();

    if (self->cluster_evacuations == NULL)
        return;
    g_hash_table_iter_init (&iter, self->cluster_evacuations);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &evacuation)) {
        JsonArray *planned
            = evacuation->plan != NULL ? vmr_json_get_array (evacuation->plan, "disks") : NULL;

        for (guint i = 0; planned != NULL && i < json_array_get_length (planned); i++) {
            if (g_strcmp0 (vmr_json_get_string (json_array_get_object_element (planned, i), "job"),
                           job->id)
                == 0) {
                g_ptr_array_add (changed, evacuation);
                break;
            }
        }
    }
    for (guint i = 0; i < changed->len; i++)
        report (self, g_ptr_array_index (changed, i));
}

void
vmr_engine_follow_cluster_evacuations (VmrEngine *self)
{
    self->follows_evacuations = TRUE;
    if (self->cluster != NULL && self->evacuations == NULL)
        vmr_engine_evacuations_cluster_joined (self);
}

/* ---- the command's side ---- */

static gboolean
check_cluster (VmrEngine *self, GTask *task)
{
    if (self->evacuations != NULL)
        return TRUE;
    g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                             self->cluster_error != NULL
                                 ? "the daemon could not join its cluster: %s"
                                 : "the policy has no [cluster] section%s",
                             self->cluster_error != NULL ? self->cluster_error : "");
    return FALSE;
}

static void
submitted_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VmrEngine *self = g_task_get_source_object (task);
    GError *error = NULL;
    g_autofree gchar *id
        = vmr_cluster_evacuations_submit_finish (VMR_CLUSTER_EVACUATIONS (source), result, &error);
    JsonObject *answer;

    if (id == NULL) {
        g_task_return_error (task, error);
        return;
    }
    answer = json_object_new ();
    json_object_set_string_member (answer, "id", id);
    json_object_set_string_member (answer, "cluster", vmr_cluster_get_config (self->cluster)->name);
    g_task_return_pointer (task, answer, (GDestroyNotify) json_object_unref);
}

/* this host's dry run said the request is sound: every daemon gets it */
static void
checked_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    /* the facade defines the type: a part below it takes the engine from its task */
    VmrEngine *self = g_task_get_source_object (task);
    GError *error = NULL;
    g_autoptr (JsonObject) plan = vmr_engine_evacuate_finish (self, result, &error);

    if (plan == NULL) {
        g_task_return_error (task, error);
        g_object_unref (task);
        return;
    }
    if (self->evacuations == NULL) {
        check_cluster (self, task);
        g_object_unref (task);
        return;
    }
    vmr_cluster_evacuations_submit_async (
        self->evacuations, json_object_ref (g_task_get_task_data (task)), submitted_cb, task);
}

void
vmr_engine_cluster_evacuate_async (VmrEngine *self, JsonObject *request, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    VmrEvacuateRequest dry_run = request_of (request);
    GError *error = NULL;

    if (!check_cluster (self, task)) {
        g_object_unref (task);
        return;
    }
    /* what every host will check: refused here first, nothing put */
    if (!check_request (self, request, &error)) {
        g_task_return_error (task, error);
        g_object_unref (task);
        return;
    }
    g_task_set_task_data (task, json_object_ref (request), (GDestroyNotify) json_object_unref);
    dry_run.dry_run = TRUE;
    vmr_engine_evacuate_async (self, &dry_run, cancellable, checked_cb, task);
}

JsonObject *
vmr_engine_cluster_evacuate_finish (VmrEngine *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}

static void
queried_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    GError *error = NULL;
    JsonObject *answer
        = vmr_cluster_evacuations_query_finish (VMR_CLUSTER_EVACUATIONS (source), result, &error);

    if (answer == NULL)
        g_task_return_error (task, error);
    else
        g_task_return_pointer (task, answer, (GDestroyNotify) json_object_unref);
}

void
vmr_engine_query_cluster_evacuation_async (VmrEngine *self, const gchar *id, gint64 after,
                                           GCancellable *cancellable, GAsyncReadyCallback callback,
                                           gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);

    if (!check_cluster (self, task)) {
        g_object_unref (task);
        return;
    }
    vmr_cluster_evacuations_query_async (self->evacuations, id, after, cancellable, queried_cb,
                                         task);
}

JsonObject *
vmr_engine_query_cluster_evacuation_finish (VmrEngine *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}
