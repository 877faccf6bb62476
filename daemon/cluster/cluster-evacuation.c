#define G_LOG_DOMAIN "vmr-cluster"

#include "cluster-evacuation.h"

#include <string.h>

#include "cluster-private.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* a watch that ended is opened again at once, or this long after the last opening */
#define REWATCH_DELAY_S 1
/* a query that waits for a change is answered after this long anyway: within a client's timeout */
#define QUERY_WAIT_MAX_S 10

struct _VmrClusterEvacuations {
    GObject parent_instance;

    VmrCluster *cluster; /* a reference */
    gchar *prefix;       /* /virt-mirror/NAME/evacuations/ */
    VmrEtcdWatch *watch;
    guint rewatch_source;
    gboolean reading;   /* the read that opens the watch is on its way */
    gint64 opened;      /* when that read was sent, monotonic µs */
    gint64 revision;    /* etcd's revision at the last message of the watch */
    GPtrArray *queries; /* of Query *: those that wait for a change */
    GHashTable *asked;  /* id -> its deletion's source (0: not yet over): this daemon's requests */
};

G_DEFINE_FINAL_TYPE (VmrClusterEvacuations, vmr_cluster_evacuations, G_TYPE_OBJECT)

enum {
    SIGNAL_REQUEST,
    SIGNAL_GONE,
    SIGNAL_OPEN,
    N_SIGNALS,
};

/*
 * A request this daemon put is deleted this long after every member
 * reported it ended: whoever follows it has read the end by then
 */
#define ENDED_KEEP_S 10

static guint signals[N_SIGNALS];

/* a query waiting for a change of its evacuation's keys past @after */
typedef struct {
    GTask *task;
    gchar *id;
    gint64 after;
    guint timeout_source;
} Query;

static void
query_free (Query *query)
{
    g_clear_handle_id (&query->timeout_source, g_source_remove);
    g_clear_object (&query->task);
    g_free (query->id);
    g_free (query);
}

static void open_watch (VmrClusterEvacuations *self);

static void
remove_source (gpointer source)
{
    if (GPOINTER_TO_UINT (source) != 0)
        g_source_remove (GPOINTER_TO_UINT (source));
}

static void
vmr_cluster_evacuations_dispose (GObject *object)
{
    VmrClusterEvacuations *self = VMR_CLUSTER_EVACUATIONS (object);

    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    g_clear_handle_id (&self->rewatch_source, g_source_remove);
    for (guint i = 0; i < self->queries->len; i++) {
        Query *query = g_ptr_array_index (self->queries, i);

        g_task_return_new_error (query->task, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                 "the daemon is stopping");
    }
    g_ptr_array_set_size (self->queries, 0);
    g_hash_table_remove_all (self->asked);
    g_clear_object (&self->cluster);
    G_OBJECT_CLASS (vmr_cluster_evacuations_parent_class)->dispose (object);
}

static void
vmr_cluster_evacuations_finalize (GObject *object)
{
    VmrClusterEvacuations *self = VMR_CLUSTER_EVACUATIONS (object);

    g_free (self->prefix);
    g_ptr_array_unref (self->queries);
    g_hash_table_unref (self->asked);
    G_OBJECT_CLASS (vmr_cluster_evacuations_parent_class)->finalize (object);
}

static void
vmr_cluster_evacuations_class_init (VmrClusterEvacuationsClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS (klass);

    object_class->dispose = vmr_cluster_evacuations_dispose;
    object_class->finalize = vmr_cluster_evacuations_finalize;
    signals[SIGNAL_REQUEST] = g_signal_new ("request", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
    signals[SIGNAL_GONE] = g_signal_new ("gone", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                         NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
    signals[SIGNAL_OPEN] = g_signal_new ("open", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                         NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}

static void
vmr_cluster_evacuations_init (VmrClusterEvacuations *self)
{
    self->queries = g_ptr_array_new_with_free_func ((GDestroyNotify) query_free);
    self->asked = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, remove_source);
}

/* the evacuation a key of the prefix belongs to, and what follows its id */
static gchar *
evacuation_of (VmrClusterEvacuations *self, const gchar *key, const gchar **out_rest)
{
    const gchar *id;
    const gchar *slash;

    if (key == NULL || !g_str_has_prefix (key, self->prefix))
        return NULL;
    id = key + strlen (self->prefix);
    slash = strchr (id, '/');
    if (slash == NULL || slash == id)
        return NULL;
    *out_rest = slash;
    return g_strndup (id, (gsize) (slash - id));
}

/* ---- reading an evacuation ---- */

typedef struct {
    gchar *id;
    JsonObject *answer; /* what it has read so far */
} Reading;

static void
reading_free (Reading *reading)
{
    g_free (reading->id);
    g_clear_pointer (&reading->answer, json_object_unref);
    g_free (reading);
}

static JsonObject *
range_request (const gchar *prefix)
{
    JsonObject *range = json_object_new ();
    g_autofree gchar *key = vmr_etcd_encode (prefix);
    g_autofree gchar *end = vmr_etcd_prefix_end (prefix);

    json_object_set_string_member (range, "key", key);
    json_object_set_string_member (range, "range_end", end);
    return range;
}

static void
members_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    Reading *reading = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) reply
        = vmr_etcd_client_call_finish (VMR_ETCD_CLIENT (source), result, &error);
    JsonArray *kvs;
    JsonArray *members = json_array_new ();

    json_object_set_array_member (reading->answer, "members", members);
    if (reply == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    kvs = vmr_json_get_array (reply, "kvs");
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++) {
        g_autoptr (JsonObject) member = vmr_etcd_kv_object (json_array_get_object_element (kvs, i));

        if (member != NULL && vmr_json_get_string (member, "host") != NULL)
            json_array_add_string_element (members, vmr_json_get_string (member, "host"));
    }
    g_task_return_pointer (task, json_object_ref (reading->answer),
                           (GDestroyNotify) json_object_unref);
}

static void
keys_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    VmrClusterEvacuations *self = g_task_get_source_object (task);
    Reading *reading = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) reply
        = vmr_etcd_client_call_finish (VMR_ETCD_CLIENT (source), result, &error);
    g_autofree gchar *members = g_strdup_printf ("/virt-mirror/%s/members/",
                                                 vmr_cluster_get_config (self->cluster)->name);
    JsonArray *hosts = json_array_new ();
    JsonArray *kvs;

    reading->answer = json_object_new ();
    json_object_set_string_member (reading->answer, "id", reading->id);
    json_object_set_null_member (reading->answer, "request");
    json_object_set_array_member (reading->answer, "hosts", hosts);
    if (reply == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        g_object_unref (task);
        return;
    }
    json_object_set_int_member (reading->answer, "revision", vmr_etcd_json_revision (reply));
    kvs = vmr_json_get_array (reply, "kvs");
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++) {
        JsonObject *kv = json_array_get_object_element (kvs, i);
        g_autofree gchar *key = vmr_etcd_decode (vmr_json_get_string (kv, "key"));
        const gchar *rest = NULL;
        g_autofree gchar *id = evacuation_of (self, key, &rest);
        JsonObject *value = vmr_etcd_kv_object (kv);

        if (value == NULL || g_strcmp0 (id, reading->id) != 0) {
            g_clear_pointer (&value, json_object_unref);
            continue;
        }
        if (g_str_equal (rest, "/request"))
            json_object_set_object_member (reading->answer, "request", value);
        else
            json_array_add_object_element (hosts, value);
    }
    vmr_etcd_client_call_async (vmr_cluster_get_client (self->cluster), "kv/range",
                                range_request (members), NULL, members_done_cb, task);
}

static void
read_evacuation (VmrClusterEvacuations *self, GTask *task)
{
    Reading *reading = g_task_get_task_data (task);
    g_autofree gchar *prefix = g_strdup_printf ("%s%s/", self->prefix, reading->id);

    vmr_etcd_client_call_async (vmr_cluster_get_client (self->cluster), "kv/range",
                                range_request (prefix), NULL, keys_done_cb, task);
}

/* nothing changed for a while: the query is answered with what is there */
static gboolean
query_timeout_cb (gpointer user_data)
{
    Query *query = user_data;
    GTask *task = g_steal_pointer (&query->task);
    VmrClusterEvacuations *self = g_task_get_source_object (task);

    query->timeout_source = 0;
    g_ptr_array_remove (self->queries, query);
    read_evacuation (self, task);
    return G_SOURCE_REMOVE;
}

void
vmr_cluster_evacuations_query_async (VmrClusterEvacuations *self, const gchar *id, gint64 after,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data)
{
    GTask *task = g_task_new (self, cancellable, callback, user_data);
    Reading *reading = g_new0 (Reading, 1);
    Query *query;

    reading->id = g_strdup (id);
    g_task_set_task_data (task, reading, (GDestroyNotify) reading_free);
    if (after <= 0 || self->revision > after) {
        read_evacuation (self, task);
        return;
    }
    query = g_new0 (Query, 1);
    query->task = task;
    query->id = g_strdup (id);
    query->after = after;
    query->timeout_source = g_timeout_add_seconds (QUERY_WAIT_MAX_S, query_timeout_cb, query);
    g_ptr_array_add (self->queries, query);
}

JsonObject *
vmr_cluster_evacuations_query_finish (VmrClusterEvacuations *self, GAsyncResult *result,
                                      GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- the watch ---- */

/* the queries of @id are answered: a key of their evacuation changed */
static void
answer_queries (VmrClusterEvacuations *self, const gchar *id)
{
    for (guint i = self->queries->len; i-- > 0;) {
        Query *query = g_ptr_array_index (self->queries, i);

        if (!g_str_equal (query->id, id) || self->revision <= query->after)
            continue;
        read_evacuation (self, g_steal_pointer (&query->task));
        g_ptr_array_remove_index (self->queries, i);
    }
}

/* @kv, the key of a request of evacuation @id: every daemon is told of it */
static void
announce_request (VmrClusterEvacuations *self, const gchar *id, JsonObject *kv)
{
    g_autoptr (JsonObject) request = vmr_etcd_kv_object (kv);

    if (request == NULL || g_strcmp0 (vmr_json_get_string (request, "id"), id) != 0)
        return;
    g_debug ("cluster evacuation %s: %s to %s, asked by %s", id,
             vmr_json_get_string (request, "from"), vmr_json_get_string (request, "to"),
             vmr_json_get_string (request, "host"));
    g_signal_emit (self, signals[SIGNAL_REQUEST], 0, request);
}

/* ---- the end of a request this daemon put ---- */

/* whether every member of @answer (read_evacuation()'s) has reported the evacuation ended */
static gboolean
ended_everywhere (JsonObject *answer)
{
    JsonArray *hosts = vmr_json_get_array (answer, "hosts");
    JsonArray *members = vmr_json_get_array (answer, "members");
    g_autoptr (GHashTable) ended = g_hash_table_new (g_str_hash, g_str_equal);

    for (guint i = 0; hosts != NULL && i < json_array_get_length (hosts); i++) {
        JsonObject *report = json_array_get_object_element (hosts, i);

        if (g_strcmp0 (vmr_json_get_string (report, "state"), "ended") == 0
            && vmr_json_get_string (report, "host") != NULL)
            g_hash_table_add (ended, (gpointer) vmr_json_get_string (report, "host"));
    }
    for (guint i = 0; members != NULL && i < json_array_get_length (members); i++) {
        if (!g_hash_table_contains (ended, json_array_get_string_element (members, i)))
            return FALSE;
    }
    return members != NULL && json_array_get_length (members) > 0;
}

typedef struct {
    VmrClusterEvacuations *self; /* a reference */
    gchar *id;
} Ending;

static void
ending_free (Ending *ending)
{
    g_object_unref (ending->self);
    g_free (ending->id);
    g_free (ending);
}

static void
request_deleted_cb (VmrCluster *cluster, JsonObject *reply, const GError *error, gpointer user_data)
{
    if (reply == NULL)
        g_debug ("cluster evacuations: a request was not deleted: %s", error->message);
}

static gboolean
delete_request_cb (gpointer user_data)
{
    Ending *ending = user_data;
    g_autofree gchar *key = g_strdup_printf ("%s%s/request", ending->self->prefix, ending->id);
    g_autofree gchar *asked_id = NULL;

    /* stolen, not removed: the source that runs is the entry's value, which removal would remove */
    g_hash_table_steal_extended (ending->self->asked, ending->id, (gpointer *) &asked_id, NULL);
    g_debug ("cluster evacuation %s: ended on every host: its request goes", ending->id);
    vmr_cluster_delete_key (ending->self->cluster, key, request_deleted_cb);
    return G_SOURCE_REMOVE;
}

static void
ended_read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
    VmrClusterEvacuations *self = VMR_CLUSTER_EVACUATIONS (source);
    g_autoptr (JsonObject) answer = g_task_propagate_pointer (G_TASK (result), NULL);
    Ending *ending;

    if (answer == NULL || self->cluster == NULL)
        return;
    ending = g_new0 (Ending, 1);
    ending->self = g_object_ref (self);
    ending->id = g_strdup (vmr_json_get_string (answer, "id"));
    if (!ended_everywhere (answer) || !g_hash_table_contains (self->asked, ending->id)
        || GPOINTER_TO_UINT (g_hash_table_lookup (self->asked, ending->id)) != 0) {
        ending_free (ending);
        return;
    }
    g_hash_table_replace (self->asked, g_strdup (ending->id),
                          GUINT_TO_POINTER (g_timeout_add_seconds_full (
                              G_PRIORITY_DEFAULT, ENDED_KEEP_S, delete_request_cb, ending,
                              (GDestroyNotify) ending_free)));
}

/* a report of a request this daemon put changed: is it over everywhere? */
static void
check_ended (VmrClusterEvacuations *self, const gchar *id)
{
    GTask *task = g_task_new (self, NULL, ended_read_cb, NULL);
    Reading *reading = g_new0 (Reading, 1);

    reading->id = g_strdup (id);
    g_task_set_task_data (task, reading, (GDestroyNotify) reading_free);
    read_evacuation (self, task);
}

static void
event_cb (VmrClusterEvacuations *self, JsonObject *event)
{
    JsonObject *kv = vmr_json_get_object (event, "kv");
    g_autofree gchar *key = kv != NULL ? vmr_etcd_decode (vmr_json_get_string (kv, "key")) : NULL;
    const gchar *rest = NULL;
    g_autofree gchar *id = evacuation_of (self, key, &rest);

    if (id == NULL)
        return;
    if (g_str_equal (rest, "/request")
        && g_strcmp0 (vmr_json_get_string (event, "type"), "DELETE") == 0) {
        g_hash_table_remove (self->asked, id);
        g_signal_emit (self, signals[SIGNAL_GONE], 0, id);
    } else if (g_str_equal (rest, "/request")
               && vmr_etcd_json_int64 (kv, "create_revision")
                      == vmr_etcd_json_int64 (kv, "mod_revision"))
        announce_request (self, id, kv);
    else if (g_hash_table_contains (self->asked, id))
        check_ended (self, id);
    answer_queries (self, id);
}

static void
watch_result_cb (JsonObject *result, gpointer user_data)
{
    VmrClusterEvacuations *self = user_data;
    JsonArray *events = vmr_json_get_array (result, "events");
    gint64 revision = vmr_etcd_json_revision (result);

    if (revision > self->revision)
        self->revision = revision;
    for (guint i = 0; events != NULL && i < json_array_get_length (events); i++) {
        JsonNode *node = json_array_get_element (events, i);

        if (JSON_NODE_HOLDS_OBJECT (node))
            event_cb (self, json_node_get_object (node));
    }
}

static gboolean
rewatch_cb (gpointer user_data)
{
    VmrClusterEvacuations *self = user_data;

    self->rewatch_source = 0;
    open_watch (self);
    return G_SOURCE_REMOVE;
}

/* at once, unless the last opening was less than REWATCH_DELAY_S ago */
static void
rewatch_later (VmrClusterEvacuations *self)
{
    if (self->rewatch_source != 0)
        return;
    if (g_get_monotonic_time () - self->opened >= REWATCH_DELAY_S * G_USEC_PER_SEC)
        open_watch (self);
    else
        self->rewatch_source = g_timeout_add_seconds (REWATCH_DELAY_S, rewatch_cb, self);
}

static void
watch_closed_cb (const GError *error, gpointer user_data)
{
    VmrClusterEvacuations *self = user_data;

    /* the watch frees itself after this; the read that opens the next one sees what it missed */
    self->watch = NULL;
    g_debug ("cluster evacuations: the watch ended: %s", error != NULL ? error->message : "");
    rewatch_later (self);
}

/*
 * The prefix as it stands, read before the watch opens: each request that
 * has no report of this host yet is announced (a daemon that started, or
 * whose watch was down, when it was put), and the watch starts at the next
 * revision, so that no change falls between the read and the watch.
 */
static void
requests_read_cb (VmrCluster *cluster, JsonObject *reply, const GError *error, gpointer user_data)
{
    VmrClusterEvacuations *self = user_data;
    g_autofree gchar *own = g_strdup_printf ("/hosts/%s", vmr_cluster_get_config (cluster)->host);
    g_autoptr (GHashTable) requests = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr (GHashTable) open = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    JsonArray *kvs = reply != NULL ? vmr_json_get_array (reply, "kvs") : NULL;
    GHashTableIter iter;
    const gchar *id;
    JsonObject *kv;
    JsonObject *create;
    g_autofree gchar *start = NULL;

    if (self->cluster == NULL)
        return; /* disposed meanwhile */
    self->reading = FALSE;
    if (reply == NULL) {
        g_debug ("cluster evacuations: cannot read the requests: %s", error->message);
        rewatch_later (self);
        return;
    }
    self->revision = MAX (self->revision, vmr_etcd_json_revision (reply));
    for (guint i = 0; kvs != NULL && i < json_array_get_length (kvs); i++) {
        g_autofree gchar *key = NULL;
        g_autofree gchar *key_id = NULL;
        const gchar *rest = NULL;

        kv = json_array_get_object_element (kvs, i);
        key = vmr_etcd_decode (vmr_json_get_string (kv, "key"));
        key_id = evacuation_of (self, key, &rest);
        if (key_id == NULL)
            continue;
        if (g_str_equal (rest, "/request"))
            g_hash_table_add (open, g_strdup (key_id));
        if (g_str_equal (rest, "/request") && !g_hash_table_contains (requests, key_id))
            g_hash_table_insert (requests, g_steal_pointer (&key_id), kv);
        else if (g_str_equal (rest, own))
            /* this host has its part already: NULL marks it */
            g_hash_table_replace (requests, g_steal_pointer (&key_id), NULL);
    }
    g_hash_table_iter_init (&iter, requests);
    while (g_hash_table_iter_next (&iter, (gpointer *) &id, (gpointer *) &kv)) {
        if (kv != NULL)
            announce_request (self, id, kv);
    }
    /* what is not open any more went while the watch was down */
    g_signal_emit (self, signals[SIGNAL_OPEN], 0, open);
    /* what waits for a change may have missed one */
    for (guint i = self->queries->len; i-- > 0;) {
        Query *query = g_ptr_array_index (self->queries, i);

        answer_queries (self, query->id);
    }
    create = range_request (self->prefix);
    start = g_strdup_printf ("%" G_GINT64_FORMAT, vmr_etcd_json_revision (reply) + 1);
    json_object_set_string_member (create, "start_revision", start);
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    self->watch = vmr_etcd_client_watch (vmr_cluster_get_client (self->cluster), create,
                                         watch_result_cb, watch_closed_cb, self);
}

static void
open_watch (VmrClusterEvacuations *self)
{
    /* a daemon that has not joined (etcd lost, its host's name another's) takes part in nothing */
    if (self->reading || !vmr_cluster_is_available (self->cluster))
        return;
    self->reading = TRUE;
    self->opened = g_get_monotonic_time ();
    g_clear_pointer (&self->watch, vmr_etcd_watch_free);
    vmr_cluster_call (self->cluster, "kv/range", range_request (self->prefix), requests_read_cb,
                      g_object_ref (self), g_object_unref);
}

/* the cluster joined, or joined again: the watch opens if it is not open */
static void
cluster_changed_cb (VmrCluster *cluster, gpointer user_data)
{
    VmrClusterEvacuations *self = user_data;

    if (self->cluster != NULL && self->watch == NULL && self->rewatch_source == 0)
        open_watch (self);
}

VmrClusterEvacuations *
vmr_cluster_evacuations_new (VmrCluster *cluster)
{
    VmrClusterEvacuations *self = g_object_new (VMR_TYPE_CLUSTER_EVACUATIONS, NULL);

    self->cluster = g_object_ref (cluster);
    self->prefix
        = g_strdup_printf ("/virt-mirror/%s/evacuations/", vmr_cluster_get_config (cluster)->name);
    g_signal_connect_object (cluster, "changed", G_CALLBACK (cluster_changed_cb), self, 0);
    open_watch (self);
    return self;
}

/* ---- requests and reports ---- */

static void
submit_done_cb (VmrCluster *cluster, JsonObject *reply, const GError *error, gpointer user_data)
{
    GTask *task = user_data;

    VmrClusterEvacuations *self = g_task_get_source_object (task);

    if (reply == NULL) {
        g_task_return_error (task, g_error_copy (error));
    } else {
        /* deleted once every host has reported it ended */
        g_hash_table_insert (self->asked, g_strdup (g_task_get_task_data (task)), NULL);
        g_task_return_pointer (task, g_strdup (g_task_get_task_data (task)), g_free);
    }
    g_object_unref (task);
}

void
vmr_cluster_evacuations_submit_async (VmrClusterEvacuations *self, JsonObject *request,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (self, NULL, callback, user_data);
    const VmrClusterConfig *config = vmr_cluster_get_config (self->cluster);
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), request);
    g_autofree gchar *key = NULL;
    g_autofree gchar *value = NULL;
    gchar *id;

    /* a request put while the watch is down is read when it opens again */
    if (!vmr_cluster_is_available (self->cluster)) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_DISCONNECTED,
                                 "cluster %s: %s: nothing was submitted", config->name,
                                 VMR_CLUSTER_UNAVAILABLE);
        g_object_unref (task);
        return;
    }
    id = g_strdup_printf ("%s-%" G_GINT64_FORMAT, config->host, g_get_real_time () / 1000);
    g_task_set_task_data (task, id, g_free);
    json_object_set_string_member (request, "id", id);
    json_object_set_string_member (request, "host", config->host);
    key = g_strdup_printf ("%s%s/request", self->prefix, id);
    value = json_to_string (node, FALSE);
    vmr_cluster_call (self->cluster, "kv/put", vmr_cluster_put_text (self->cluster, key, value),
                      submit_done_cb, task, NULL);
}

gchar *
vmr_cluster_evacuations_submit_finish (VmrClusterEvacuations *self, GAsyncResult *result,
                                       GError **error)
{
    g_return_val_if_fail (g_task_is_valid (result, self), NULL);
    return g_task_propagate_pointer (G_TASK (result), error);
}

void
vmr_cluster_evacuations_forget (VmrClusterEvacuations *self, const gchar *id)
{
    const VmrClusterConfig *config = vmr_cluster_get_config (self->cluster);
    g_autofree gchar *key = g_strdup_printf ("%s%s/hosts/%s", self->prefix, id, config->host);

    vmr_cluster_forget_key (self->cluster, key);
}

void
vmr_cluster_evacuations_report (VmrClusterEvacuations *self, const gchar *id, JsonObject *report)
{
    const VmrClusterConfig *config = vmr_cluster_get_config (self->cluster);
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), report);
    g_autofree gchar *key = g_strdup_printf ("%s%s/hosts/%s", self->prefix, id, config->host);
    g_autofree gchar *value = NULL;

    json_object_set_string_member (report, "host", config->host);
    value = json_to_string (node, FALSE);
    /* one put after the other, the latest last */
    vmr_cluster_keep_key (self->cluster, key, value);
}
