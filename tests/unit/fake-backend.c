#define G_LOG_DOMAIN "vmr-test"

#include "fake-backend.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "vmr-error.h"

/* plain values all through: a test's paths are short */
typedef struct {
    gchar id[32];
    gchar path[1024];
    guint64 size;       /* bytes */
    gchar iothread[64]; /* "": the main loop; "io0,io1": several */
} DiskSpec;

typedef struct {
    FakeReplyMode mode;
    gchar error_message[256];
} ReplyRule;

/* what a call in flight is about, kept as its task data */
typedef struct {
    FakeCall call;
    VmrJob *job; /* NULL for the calls about the whole domain */
} CallData;

/* a guest that reads at @per_second from @since_us on */
typedef struct {
    gdouble per_second;
    gint64 since_us;
} ReadRate;

struct _FakeBackend {
    VmrBackend parent_instance;

    gchar *kind;
    gboolean follows_domain;
    gboolean auto_finish;
    gboolean disconnected;
    gboolean closed;
    gboolean crashed;       /* nothing is cleaned up any more */
    GArray *disks;          /* of DiskSpec */
    GHashTable *replies;    /* call name -> ReplyRule * */
    GPtrArray *held;        /* of GTask *, oldest first */
    GPtrArray *log;         /* of FakeCall * */
    guint log_taken;        /* the first call fake_backend_take_log() has not returned */
    GHashTable *progress;   /* job id -> VmrBackendProgress * */
    GHashTable *load;       /* disk id -> VmrIoCounters * */
    GHashTable *read_rate;  /* disk id -> ReadRate *, reads added by the clock */
    gboolean speed_as_set;  /* progress reports the speed a job was last given */
    GHashTable *adoptions;  /* job id -> VmrBackendAdoption * */
    FakeLoadFunc load_func; /* brings the load up to date before each query_load, or NULL */
    gpointer load_data;
};

G_DEFINE_TYPE (FakeBackend, fake_backend, VMR_TYPE_BACKEND)

static void
call_data_free (CallData *data)
{
    g_clear_pointer (&data->job, vmr_job_unref);
    g_free (data);
}

/* in the order of VmrBackendCommand */
static const gchar *const command_names[]
    = { "pause", "resume", "cancel", "pivot", "set_speed", "set_copy_mode_active" };
G_STATIC_ASSERT (G_N_ELEMENTS (command_names) == VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE + 1);

const gchar *
fake_backend_command_name (VmrBackendCommand command)
{
    g_assert_cmpuint (command, <, G_N_ELEMENTS (command_names));
    return command_names[command];
}

VmrBackendCommand
fake_backend_command_from_name (const gchar *name)
{
    for (guint i = 0; i < G_N_ELEMENTS (command_names); i++) {
        if (g_str_equal (command_names[i], name))
            return (VmrBackendCommand) i;
    }
    g_error ("no command is called %s", name);
}

/* ---- the scripted side ---- */

FakeBackend *
fake_backend_new (const gchar *kind)
{
    FakeBackend *self = g_object_new (FAKE_TYPE_BACKEND, NULL);

    self->kind = g_strdup (kind != NULL ? kind : "fake");
    return self;
}

void
fake_backend_add_disk (FakeBackend *self, const gchar *id, const gchar *path, guint64 size,
                       const gchar *iothread)
{
    DiskSpec spec = { .size = size };

    g_strlcpy (spec.id, id, sizeof spec.id);
    g_assert_cmpuint (g_strlcpy (spec.path, path, sizeof spec.path), <, sizeof spec.path);
    g_strlcpy (spec.iothread, iothread != NULL ? iothread : "", sizeof spec.iothread);
    g_array_append_val (self->disks, spec);
}

void
fake_backend_set_follows_domain (FakeBackend *self, gboolean follows)
{
    self->follows_domain = follows;
}

void
fake_backend_set_reply (FakeBackend *self, const gchar *name, FakeReplyMode mode,
                        const gchar *error_message)
{
    ReplyRule *rule = g_new0 (ReplyRule, 1);

    rule->mode = mode;
    g_strlcpy (rule->error_message, error_message != NULL ? error_message : "scripted failure",
               sizeof rule->error_message);
    g_hash_table_insert (self->replies, g_strdup (name), rule);
}

void
fake_backend_set_auto_finish (FakeBackend *self, gboolean auto_finish)
{
    self->auto_finish = auto_finish;
}

void
fake_backend_set_progress (FakeBackend *self, const VmrBackendProgress *progress)
{
    VmrBackendProgress *copy = g_memdup2 (progress, sizeof *progress);

    copy->job_id = g_strdup (progress->job_id);
    g_hash_table_insert (self->progress, g_strdup (progress->job_id), copy);
}

void
fake_backend_set_load (FakeBackend *self, const gchar *disk_id, const VmrIoCounters *counters)
{
    g_hash_table_insert (self->load, g_strdup (disk_id), g_memdup2 (counters, sizeof *counters));
}

void
fake_backend_set_load_func (FakeBackend *self, FakeLoadFunc func, gpointer user_data)
{
    self->load_func = func;
    self->load_data = user_data;
}

void
fake_backend_set_read_rate (FakeBackend *self, const gchar *disk_id, gdouble per_second)
{
    ReadRate *rate = g_new0 (ReadRate, 1);

    rate->per_second = per_second;
    rate->since_us = g_get_monotonic_time ();
    g_hash_table_insert (self->read_rate, g_strdup (disk_id), rate);
}

void
fake_backend_report_speed_as_set (FakeBackend *self)
{
    self->speed_as_set = TRUE;
}

void
fake_backend_set_adoption (FakeBackend *self, const gchar *job_id,
                           const VmrBackendAdoption *adoption)
{
    g_hash_table_insert (self->adoptions, g_strdup (job_id),
                         g_memdup2 (adoption, sizeof *adoption));
}

GPtrArray *
fake_backend_get_log (FakeBackend *self)
{
    return self->log;
}

gchar *
fake_backend_take_log (FakeBackend *self, gboolean with_queries)
{
    g_autoptr (GString) text = g_string_new (NULL);

    for (; self->log_taken < self->log->len; self->log_taken++) {
        FakeCall *call = g_ptr_array_index (self->log, self->log_taken);

        if (!with_queries && g_str_has_prefix (call->name, "query_"))
            continue;
        if (text->len > 0)
            g_string_append (text, "; ");
        g_string_append (text, call->name);
        if (*call->job_id != '\0')
            g_string_append_printf (text, " %s", call->job_id);
        if (g_strcmp0 (call->name, "start_copy") == 0 || g_strcmp0 (call->name, "set_speed") == 0)
            g_string_append_printf (text, " %" G_GUINT64_FORMAT, call->speed);
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

void
fake_backend_crash (FakeBackend *self)
{
    self->crashed = TRUE;
}

gboolean
fake_backend_is_closed (FakeBackend *self)
{
    return self->closed;
}

guint
fake_backend_count_held (FakeBackend *self)
{
    return self->held->len;
}

/* ---- events ---- */

void
fake_backend_ready (FakeBackend *self, const gchar *job_id)
{
    vmr_backend_emit_job_ready (VMR_BACKEND (self), job_id);
}

void
fake_backend_finish (FakeBackend *self, const gchar *job_id, VmrBackendOutcome outcome,
                     const gchar *reason)
{
    /* the destination is closed again: the engine removes a file it made */
    vmr_backend_emit_job_finished (VMR_BACKEND (self), job_id, outcome, reason);
}

void
fake_backend_disconnect (FakeBackend *self, const gchar *message)
{
    g_autoptr (GError) error = g_error_new_literal (VMR_ERROR, VMR_ERROR_DISCONNECTED, message);

    self->disconnected = TRUE;
    vmr_backend_emit_disconnected (VMR_BACKEND (self), error);
}

typedef struct {
    FakeBackend *self;
    gchar *job_id;
    VmrBackendOutcome outcome;
} AutoFinish;

static gboolean
auto_finish_cb (gpointer user_data)
{
    AutoFinish *finish = user_data;

    /* a closed connection tells nothing any more */
    if (!finish->self->closed && !finish->self->disconnected)
        fake_backend_finish (finish->self, finish->job_id, finish->outcome,
                             finish->outcome == VMR_BACKEND_OUTCOME_CANCELLED ? "cancelled" : NULL);
    g_object_unref (finish->self);
    g_free (finish->job_id);
    g_free (finish);
    return G_SOURCE_REMOVE;
}

/* after the reply, as QEMU sends BLOCK_JOB_COMPLETED or _CANCELLED after its return */
static void
schedule_finish (FakeBackend *self, const gchar *job_id, VmrBackendOutcome outcome)
{
    AutoFinish *finish = g_new0 (AutoFinish, 1);

    finish->self = g_object_ref (self);
    finish->job_id = g_strdup (job_id);
    finish->outcome = outcome;
    g_idle_add (auto_finish_cb, finish);
}

/* ---- answering calls ---- */

static GPtrArray *
make_disks (FakeBackend *self)
{
    GPtrArray *disks = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_disk_free);

    for (guint i = 0; i < self->disks->len; i++) {
        DiskSpec *spec = &g_array_index (self->disks, DiskSpec, i);
        VmrDisk *disk = vmr_disk_new ();

        disk->id = g_strdup (spec->id);
        disk->node = g_strdup_printf ("%s-node", spec->id);
        disk->format = g_strdup ("raw");
        disk->path = g_strdup (spec->path);
        disk->size = spec->size;
        if (*spec->iothread != '\0') {
            disk->iothread = g_strdup (spec->iothread);
            disk->iothreads = g_strsplit (spec->iothread, ",", -1);
        }
        g_ptr_array_add (disks, disk);
    }
    return disks;
}

static GPtrArray *
make_progress (FakeBackend *self)
{
    g_autoptr (GList) scripted = g_hash_table_get_values (self->progress);
    GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_progress_free);

    for (GList *l = scripted; l != NULL; l = l->next) {
        VmrBackendProgress *copy = g_memdup2 (l->data, sizeof (VmrBackendProgress));

        copy->job_id = g_strdup (copy->job_id);
        for (guint i = self->log->len; self->speed_as_set && i > 0; i--) {
            const FakeCall *call = g_ptr_array_index (self->log, i - 1);

            if (g_str_equal (call->job_id, copy->job_id)
                && (g_str_equal (call->name, "start_copy")
                    || g_str_equal (call->name, "set_speed"))) {
                copy->speed = call->speed;
                break;
            }
        }
        g_ptr_array_add (list, copy);
    }
    return list;
}

static GHashTable *
make_load (FakeBackend *self)
{
    GHashTable *load = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    GHashTableIter iter;
    const gchar *disk_id;
    VmrIoCounters *counters;
    const ReadRate *rate;

    if (self->load_func != NULL)
        self->load_func (self, self->load_data);
    g_hash_table_iter_init (&iter, self->load);
    while (g_hash_table_iter_next (&iter, (gpointer *) &disk_id, (gpointer *) &counters))
        g_hash_table_insert (load, g_strdup (disk_id), g_memdup2 (counters, sizeof *counters));
    g_hash_table_iter_init (&iter, self->read_rate);
    while (g_hash_table_iter_next (&iter, (gpointer *) &disk_id, (gpointer *) &rate)) {
        gint64 elapsed_us = g_get_monotonic_time () - rate->since_us;

        counters = g_hash_table_lookup (load, disk_id);
        if (counters == NULL) {
            counters = g_new0 (VmrIoCounters, 1);
            g_hash_table_insert (load, g_strdup (disk_id), counters);
        }
        counters->read_ops += (guint64) (rate->per_second * (gdouble) elapsed_us / G_USEC_PER_SEC);
    }
    return load;
}

static VmrBackendAdoption *
make_adoption (FakeBackend *self, VmrJob *job)
{
    VmrBackendAdoption *found = g_hash_table_lookup (self->adoptions, job->id);
    VmrBackendAdoption *adoption = g_new0 (VmrBackendAdoption, 1);

    /* whatever the copy had set up in the hypervisor is gone, unless the test says */
    adoption->outcome = VMR_BACKEND_ADOPT_GONE;
    if (found != NULL)
        *adoption = *found;
    return adoption;
}

/* ends the call of @task (consumed) with success, or with @error */
static void
complete_call (FakeBackend *self, GTask *task, const GError *error)
{
    CallData *data = g_task_get_task_data (task);
    gpointer tag = g_task_get_source_tag (task);

    if (error != NULL) {
        g_task_return_error (task, g_error_copy (error));
    } else if (tag == vmr_backend_query_disks_async) {
        g_task_return_pointer (task, make_disks (self), (GDestroyNotify) g_ptr_array_unref);
    } else if (tag == vmr_backend_query_progress_async) {
        g_task_return_pointer (task, make_progress (self), (GDestroyNotify) g_ptr_array_unref);
    } else if (tag == vmr_backend_query_load_async) {
        g_task_return_pointer (task, make_load (self), (GDestroyNotify) g_hash_table_unref);
    } else if (tag == vmr_backend_adopt_copy_async) {
        g_task_return_pointer (task, make_adoption (self, data->job), g_free);
    } else {
        if (self->auto_finish && g_str_equal (data->call.name, "cancel"))
            schedule_finish (self, data->call.job_id, VMR_BACKEND_OUTCOME_CANCELLED);
        else if (self->auto_finish && g_str_equal (data->call.name, "pivot"))
            schedule_finish (self, data->call.job_id, VMR_BACKEND_OUTCOME_COMPLETED);
        g_task_return_boolean (task, TRUE);
    }
    g_object_unref (task);
}

/* logs the call and answers it as the script says; @task is consumed */
static void
begin_call (FakeBackend *self, GTask *task, const gchar *name, VmrJob *job, guint64 speed)
{
    CallData *data = g_new0 (CallData, 1);
    ReplyRule *rule = g_hash_table_lookup (self->replies, name);
    g_autoptr (GError) error = NULL;

    g_strlcpy (data->call.name, name, sizeof data->call.name);
    if (job != NULL)
        g_strlcpy (data->call.job_id, job->id, sizeof data->call.job_id);
    data->call.speed = speed;
    data->job = job != NULL ? vmr_job_ref (job) : NULL;
    g_ptr_array_add (self->log, g_memdup2 (&data->call, sizeof data->call));
    g_task_set_task_data (task, data, (GDestroyNotify) call_data_free);

    if (self->closed || self->disconnected) {
        error = g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED, "the fake monitor is gone");
        complete_call (self, task, error);
        return;
    }
    if (rule != NULL && rule->mode == FAKE_REPLY_FAIL) {
        error = g_error_new_literal (VMR_ERROR, VMR_ERROR_GENERIC, rule->error_message);
        complete_call (self, task, error);
        return;
    }
    if (rule != NULL && rule->mode == FAKE_REPLY_HOLD) {
        g_ptr_array_add (self->held, task);
        return;
    }
    complete_call (self, task, NULL);
}

static GTask *
take_held (FakeBackend *self, const gchar *name, const gchar *job_id)
{
    for (guint i = 0; i < self->held->len; i++) {
        GTask *task = g_ptr_array_index (self->held, i);
        CallData *data = g_task_get_task_data (task);

        if (g_str_equal (data->call.name, name)
            && (job_id == NULL || g_str_equal (data->call.job_id, job_id)))
            return g_ptr_array_steal_index (self->held, i);
    }
    return NULL;
}

gboolean
fake_backend_release (FakeBackend *self, const gchar *name, const gchar *job_id)
{
    GTask *task = take_held (self, name, job_id);

    if (task == NULL)
        return FALSE;
    complete_call (self, task, NULL);
    return TRUE;
}

gboolean
fake_backend_fail (FakeBackend *self, const gchar *name, const gchar *job_id, const GError *error)
{
    GTask *task = take_held (self, name, job_id);

    if (task == NULL)
        return FALSE;
    complete_call (self, task, error);
    return TRUE;
}

/* ---- the backend interface ---- */

static const gchar *
fake_backend_get_kind (VmrBackend *backend)
{
    return FAKE_BACKEND (backend)->kind;
}

static gboolean
fake_backend_follows_domain (VmrBackend *backend)
{
    return FAKE_BACKEND (backend)->follows_domain;
}

static JsonObject *
fake_backend_describe (VmrBackend *backend)
{
    return json_object_new ();
}

/* the calls about the whole domain: an async that logs and answers, and its finish */
#define FAKE_DEFINE_QUERY(query, Result)                                                           \
    static void fake_backend_##query##_async (VmrBackend *backend, GCancellable *cancellable,      \
                                              GAsyncReadyCallback callback, gpointer user_data)    \
    {                                                                                              \
        GTask *task = g_task_new (backend, cancellable, callback, user_data);                      \
                                                                                                   \
        g_task_set_source_tag (task, vmr_backend_##query##_async);                                 \
        begin_call (FAKE_BACKEND (backend), task, #query, NULL, 0);                                \
    }                                                                                              \
    static Result fake_backend_##query##_finish (VmrBackend *backend, GAsyncResult *res,           \
                                                 GError **error)                                   \
    {                                                                                              \
        return g_task_propagate_pointer (G_TASK (res), error);                                     \
    }

FAKE_DEFINE_QUERY (query_disks, GPtrArray *)
FAKE_DEFINE_QUERY (query_progress, GPtrArray *)
FAKE_DEFINE_QUERY (query_load, GHashTable *)

static void
fake_backend_start_copy_async (VmrBackend *backend, VmrJob *job, const VmrDisk *disk,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data)
{
    GTask *task = g_task_new (backend, cancellable, callback, user_data);

    g_task_set_source_tag (task, vmr_backend_start_copy_async);
    /* the engine opened the file or device, as a real backend is handed it */
    g_assert_true ((job->dest->kind == VMR_DESTINATION_NBD) == (job->dest_handle == NULL));
    begin_call (FAKE_BACKEND (backend), task, "start_copy", job, job->speed);
}

static gboolean
fake_backend_start_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

static void
fake_backend_job_command_async (VmrBackend *backend, VmrJob *job, VmrBackendCommand command,
                                guint64 speed, GCancellable *cancellable,
                                GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (backend, cancellable, callback, user_data);

    g_task_set_source_tag (task, vmr_backend_job_command_async);
    begin_call (FAKE_BACKEND (backend), task, fake_backend_command_name (command), job, speed);
}

static gboolean
fake_backend_job_command_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}

static void
fake_backend_adopt_copy_async (VmrBackend *backend, VmrJob *job, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new (backend, cancellable, callback, user_data);

    g_task_set_source_tag (task, vmr_backend_adopt_copy_async);
    /* the outcome is worked out from the job's record when the answer goes */
    begin_call (FAKE_BACKEND (backend), task, "adopt_copy", job, 0);
}

static VmrBackendAdoption *
fake_backend_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}

static void
fake_backend_close (VmrBackend *backend)
{
    FakeBackend *self = FAKE_BACKEND (backend);
    g_autoptr (GError) error
        = g_error_new (VMR_ERROR, VMR_ERROR_DISCONNECTED, "the fake backend was closed");
    FakeCall call = { .name = "close" };

    g_ptr_array_add (self->log, g_memdup2 (&call, sizeof call));
    self->closed = TRUE;
    /* what was on its way fails, as the calls of a closed monitor do */
    while (self->held->len > 0)
        complete_call (self, g_ptr_array_steal_index (self->held, 0), error);
}

static void
fake_backend_finalize (GObject *object)
{
    FakeBackend *self = FAKE_BACKEND (object);

    /* a call held to the end would never have been answered */
    g_assert_cmpuint (self->held->len, ==, 0);
    g_ptr_array_unref (self->held);
    g_clear_pointer (&self->replies, g_hash_table_unref);
    g_ptr_array_unref (self->log);
    g_array_unref (self->disks);
    g_clear_pointer (&self->progress, g_hash_table_unref);
    g_free (self->kind);
    g_clear_pointer (&self->load, g_hash_table_unref);
    g_clear_pointer (&self->read_rate, g_hash_table_unref);
    g_clear_pointer (&self->adoptions, g_hash_table_unref);
    G_OBJECT_CLASS (fake_backend_parent_class)->finalize (object);
}

static void
fake_backend_init (FakeBackend *self)
{
    self->auto_finish = TRUE;
    self->disks = g_array_new (FALSE, TRUE, sizeof (DiskSpec));
    self->replies = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->held = g_ptr_array_new ();
    self->log = g_ptr_array_new_with_free_func (g_free);
    self->progress = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify) vmr_backend_progress_free);
    self->load = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->read_rate = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->adoptions = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

static void
fake_backend_class_init (FakeBackendClass *klass)
{
    VmrBackendClass *backend_class = VMR_BACKEND_CLASS (klass);

    *backend_class = (VmrBackendClass){
        .parent_class = backend_class->parent_class,
        .get_kind = fake_backend_get_kind,
        .follows_domain = fake_backend_follows_domain,
        .describe = fake_backend_describe,
        .query_disks_async = fake_backend_query_disks_async,
        .query_disks_finish = fake_backend_query_disks_finish,
        .start_copy_async = fake_backend_start_copy_async,
        .start_copy_finish = fake_backend_start_copy_finish,
        .job_command_async = fake_backend_job_command_async,
        .job_command_finish = fake_backend_job_command_finish,
        .query_progress_async = fake_backend_query_progress_async,
        .query_progress_finish = fake_backend_query_progress_finish,
        .query_load_async = fake_backend_query_load_async,
        .query_load_finish = fake_backend_query_load_finish,
        .adopt_copy_async = fake_backend_adopt_copy_async,
        .adopt_copy_finish = fake_backend_adopt_copy_finish,
        .close = fake_backend_close,
    };
    G_OBJECT_CLASS (klass)->finalize = fake_backend_finalize;
}
