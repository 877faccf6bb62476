#define G_LOG_DOMAIN "vmr-daemon"

/*
 * Evacuation: every disk of every known domain whose image lies under one
 * directory moves to the same relative path under another, or to the export
 * of that name (after the URI's own export name and a '/') of an NBD server.
 * The plan is
 * checked as a whole (collisions, destinations that exist or are in use)
 * before anything is submitted; each domain's disks go as one group.
 */

#include "engine-private.h"

#include <errno.h>
#include <string.h>

#include "destination-guard.h"
#include "destination.h"
#include "nbd-uri.h"
#include "vmr-error.h"

typedef struct {
    gchar *domain;
    gchar *disk;
    gchar *source;
    gchar *destination;
    gchar *format;
    guint64 size;
    gchar *job;     /* an unfinished job of the disk, or the new one */
    gchar *group;   /* of the new job */
    gchar *skipped; /* why it is not planned, or NULL */
    gchar *error;   /* its domain's submission failed */
} PlanEntry;

static void
plan_entry_free (PlanEntry *e)
{
    g_free (e->domain);
    g_free (e->disk);
    g_free (e->source);
    g_free (e->destination);
    g_free (e->format);
    g_free (e->job);
    g_free (e->group);
    g_free (e->skipped);
    g_free (e->error);
    g_free (e);
}

typedef struct {
    gchar *from;
    gchar *to;
    VmrNbdUri *to_nbd; /* --to is an NBD server, NULL for a directory */
    gchar *domains;
    gchar *format;
    guint64 speed;
    gboolean speed_given;
    gboolean dry_run;

    GPtrArray *names;   /* the domains whose disks are read, sorted */
    guint pending;      /* disk lists on their way */
    GPtrArray *plan;    /* of PlanEntry * */
    GPtrArray *submit;  /* the domains to submit, in plan order (names borrowed from @plan) */
    guint next;         /* the next of @submit */
    GError *list_error; /* the first domain whose disks could not be read */
} EvacuateData;

static void
evacuate_data_free (EvacuateData *data)
{
    g_free (data->from);
    g_free (data->to);
    g_clear_pointer (&data->to_nbd, vmr_nbd_uri_free);
    g_free (data->domains);
    g_free (data->format);
    g_ptr_array_unref (data->names);
    g_ptr_array_unref (data->submit);
    g_ptr_array_unref (data->plan);
    g_clear_error (&data->list_error);
    g_free (data);
}

/* @path relative to the directory @dir ("a/b.raw"), or NULL if it is not under it */
static const gchar *
relative_to (const gchar *path, const gchar *dir)
{
    gsize len = strlen (dir);

    if (path == NULL || !g_str_has_prefix (path, dir))
        return NULL;
    /* "/" is the one directory that ends in a slash */
    if (len > 0 && dir[len - 1] == '/')
        return path[len] != '\0' ? path + len : NULL;
    return path[len] == '/' && path[len + 1] != '\0' ? path + len + 1 : NULL;
}

/*
 * A disk's path as the planning compares it: every link, ".", ".." and
 * double slash of the part that exists resolved, as a backend may report a
 * path any of those ways; NULL for what is no path (an NBD URI)
 */
static gchar *
resolved_path (const gchar *path)
{
    return path != NULL && g_path_is_absolute (path) ? vmr_destination_resolve_path (path) : NULL;
}

/* the domain and disk that use @path, or the job that writes it; NULL if none */
static gchar *
path_user (VmrEngine *self, const gchar *path)
{
    g_autofree gchar *resolved = resolved_path (path);
    GHashTableIter iter;
    DomainEntry *entry;
    VmrJob *job;

    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
            VmrDisk *disk = g_ptr_array_index (entry->disks, i);
            g_autofree gchar *used = resolved_path (disk->path);

            if (g_strcmp0 (disk->path, path) == 0
                || (resolved != NULL && g_strcmp0 (used, resolved) == 0))
                return g_strdup_printf ("%s of %s", disk->id, entry->name);
        }
    }
    job = vmr_job_table_active_for_destination (self->jobs, path);
    return job != NULL ? g_strdup_printf ("job %s", job->id) : NULL;
}

static JsonObject *
plan_to_json (EvacuateData *data)
{
    JsonObject *obj = json_object_new ();
    JsonArray *disks = json_array_new ();
    guint64 total = 0;

    json_object_set_string_member (obj, "from", data->from);
    json_object_set_string_member (obj, "to", data->to);
    json_object_set_boolean_member (obj, "dry-run", data->dry_run);
    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);
        JsonObject *d = json_object_new ();

        json_object_set_string_member (d, "domain", e->domain);
        json_object_set_string_member (d, "disk", e->disk);
        json_object_set_string_member (d, "source", e->source);
        json_object_set_string_member (d, "destination", e->destination);
        json_object_set_string_member (d, "format", e->format);
        json_object_set_int_member (d, "size", (gint64) e->size);
        if (e->job != NULL)
            json_object_set_string_member (d, "job", e->job);
        if (e->group != NULL)
            json_object_set_string_member (d, "group", e->group);
        if (e->skipped != NULL)
            json_object_set_string_member (d, "skipped", e->skipped);
        if (e->error != NULL)
            json_object_set_string_member (d, "error", e->error);
        if (e->skipped == NULL)
            total += e->size;
        json_array_add_object_element (disks, d);
    }
    json_object_set_array_member (obj, "disks", disks);
    json_object_set_int_member (obj, "total-bytes", (gint64) total);
    return obj;
}

/* ---- submitting ---- */

static void submit_next (GTask *task);

static void
submitted_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    EvacuateData *data = g_task_get_task_data (task);
    const gchar *domain = g_ptr_array_index (data->submit, data->next - 1);
    g_autoptr (GError) error = NULL;
    /* the facade defines the type: a part below it takes the engine from its task */
    g_autoptr (GPtrArray) jobs
        = vmr_engine_migrate_finish (g_task_get_source_object (task), res, &error);

    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);

        if (e->skipped != NULL || g_strcmp0 (e->domain, domain) != 0)
            continue;
        if (jobs == NULL) {
            e->error = g_strdup (error->message);
            continue;
        }
        for (guint j = 0; j < jobs->len; j++) {
            VmrJob *job = g_ptr_array_index (jobs, j);

            if (g_strcmp0 (job->disk, e->disk) == 0) {
                e->job = g_strdup (job->id);
                e->group = g_strdup (job->group);
            }
        }
    }
    if (jobs == NULL)
        g_message ("evacuate: %s: %s", domain, error->message);
    submit_next (g_steal_pointer (&task));
}

/*
 * Submits the next domain of the plan, or returns the plan when all are.
 * One at a time, in the plan's order: the job ids and the admission queue
 * then follow the plan. @task is consumed.
 */
static void
submit_next (GTask *task)
{
    VmrEngine *self = g_task_get_source_object (task);
    EvacuateData *data = g_task_get_task_data (task);
    g_autoptr (GArray) targets = g_array_new (FALSE, TRUE, sizeof (VmrMigrateTarget));
    VmrMigrateRequest request = { 0 };
    const gchar *domain;

    if (data->next == data->submit->len) {
        g_task_return_pointer (task, plan_to_json (data), (GDestroyNotify) json_object_unref);
        g_object_unref (task);
        return;
    }
    domain = g_ptr_array_index (data->submit, data->next++);
    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);
        VmrMigrateTarget target = { e->disk, e->destination, e->format };

        if (e->skipped == NULL && g_strcmp0 (e->domain, domain) == 0)
            g_array_append_val (targets, target);
    }
    /* one disk makes a job of its own, several a group */
    request.domain = domain;
    request.targets = (const VmrMigrateTarget *) targets->data;
    request.n_targets = targets->len;
    request.speed = data->speed;
    request.speed_given = data->speed_given;
    vmr_engine_migrate_async (self, &request, NULL, submitted_cb, task);
}

static void
submit_plan (GTask *task)
{
    EvacuateData *data = g_task_get_task_data (task);

    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);

        if (e->skipped == NULL
            && !g_ptr_array_find_with_equal_func (data->submit, e->domain, g_str_equal, NULL))
            g_ptr_array_add (data->submit, e->domain);
    }
    if (data->submit->len > 0)
        g_message ("evacuate %s -> %s: %u domains", data->from, data->to, data->submit->len);
    submit_next (g_object_ref (task));
}

/* ---- planning ---- */

/* where the disk at @rel under --from goes */
static gchar *
plan_destination (EvacuateData *data, const gchar *rel)
{
    g_autofree gchar *export_name = NULL;
    g_autoptr (VmrNbdUri) uri = NULL;

    if (data->to_nbd == NULL)
        return g_build_filename (data->to, rel, NULL);
    export_name = *data->to_nbd->export_name != '\0'
                      ? g_strdup_printf ("%s/%s", data->to_nbd->export_name, rel)
                      : g_strdup (rel);
    uri = vmr_nbd_uri_with_export (data->to_nbd, export_name);
    return g_strdup (uri->canonical);
}

/* the refusals that hold whatever the request says, before a directory is made for @e */
static gboolean
guard_entry (VmrEngine *self, const PlanEntry *e, GError **error)
{
    g_autoptr (VmrDestination) destination
        = vmr_destination_new (e->destination, e->format, TRUE, error);

    if (destination == NULL || !vmr_engine_guard_destination (self, destination, error)) {
        g_prefix_error (error, "%s of %s: ", e->disk, e->domain);
        return FALSE;
    }
    return TRUE;
}

static gboolean
make_plan (VmrEngine *self, EvacuateData *data, GError **error)
{
    g_autoptr (GHashTable) destinations = g_hash_table_new (g_str_hash, g_str_equal);

    for (guint n = 0; n < data->names->len; n++) {
        DomainEntry *entry
            = g_hash_table_lookup (self->domains, g_ptr_array_index (data->names, n));

        if (entry == NULL || entry->disks == NULL)
            continue;
        for (guint i = 0; i < entry->disks->len; i++) {
            VmrDisk *disk = g_ptr_array_index (entry->disks, i);
            g_autofree gchar *source = resolved_path (disk->path);
            const gchar *rel = relative_to (source, data->from);
            VmrJob *busy;
            PlanEntry *e;
            PlanEntry *other;

            if (rel == NULL)
                continue;
            e = g_new0 (PlanEntry, 1);
            e->domain = g_strdup (entry->name);
            e->disk = g_strdup (disk->id);
            e->source = g_strdup (disk->path);
            e->destination = plan_destination (data, rel);
            /* an export holds the raw disk, whatever the source's format */
            e->format = g_strdup (data->format != NULL   ? data->format
                                  : data->to_nbd != NULL ? "raw"
                                                         : disk->format);
            e->size = disk->size;
            g_ptr_array_add (data->plan, e);

            busy = vmr_job_table_active_for_disk (self->jobs, entry->name, disk->id);
            if (busy != NULL) {
                e->job = g_strdup (busy->id);
                e->group = g_strdup (busy->group);
                e->skipped = g_strdup ("already migrating");
                continue;
            }
            if (disk->read_only) {
                e->skipped = g_strdup ("read-only: move it while the domain is shut off");
                continue;
            }
            if (!vmr_destination_format_is_valid (e->format)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "%s of %s is in format %s; give --format raw or qcow2", disk->id,
                             entry->name, e->format);
                return FALSE;
            }
            other = g_hash_table_lookup (destinations, e->destination);
            if (other != NULL) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "collision: %s of %s and %s of %s would both move to %s", other->disk,
                             other->domain, e->disk, e->domain, e->destination);
                return FALSE;
            }
            g_hash_table_insert (destinations, e->destination, e);
        }
    }
    /* the destinations against what exists and what is in use */
    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);
        g_autofree gchar *user = NULL;

        if (e->skipped != NULL)
            continue;
        user = path_user (self, e->destination);
        if (user != NULL) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_BUSY,
                         "destination %s of %s %s is in use by %s", e->destination, e->domain,
                         e->disk, user);
            return FALSE;
        }
        if (!guard_entry (self, e, error))
            return FALSE;
        /* an export exists by nature: its preflight checks it */
        if (data->to_nbd == NULL && g_file_test (e->destination, G_FILE_TEST_EXISTS)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s of %s %s exists already", e->destination, e->domain,
                         e->disk);
            return FALSE;
        }
    }
    return TRUE;
}

/* the sub-directories the plan needs under @to */
static gboolean
make_directories (EvacuateData *data, GError **error)
{
    for (guint i = 0; i < data->plan->len; i++) {
        PlanEntry *e = g_ptr_array_index (data->plan, i);
        g_autofree gchar *dir = NULL;

        if (e->skipped != NULL || data->to_nbd != NULL)
            continue;
        dir = g_path_get_dirname (e->destination);
        if (g_mkdir_with_parents (dir, 0755) != 0) {
            gint saved = errno;

            g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved),
                         "cannot create directory %s: %s", dir, g_strerror (saved));
            return FALSE;
        }
    }
    return TRUE;
}

static void
plan_ready (GTask *task)
{
    VmrEngine *self = g_task_get_source_object (task);
    EvacuateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;

    if (data->list_error != NULL) {
        g_task_return_error (task, g_steal_pointer (&data->list_error));
        return;
    }
    if (!make_plan (self, data, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (data->dry_run) {
        g_task_return_pointer (task, plan_to_json (data), (GDestroyNotify) json_object_unref);
        return;
    }
    if (!make_directories (data, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    submit_plan (task);
}

typedef struct {
    GTask *task;
    gchar *domain;
} ListData;

static void
disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ListData *list = user_data;
    g_autoptr (GTask) task = list->task;
    VmrEngine *self = g_task_get_source_object (task);
    EvacuateData *data = g_task_get_task_data (task);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks
        = vmr_backend_query_disks_finish (VMR_BACKEND (source), res, &error);
    DomainEntry *entry = g_hash_table_lookup (self->domains, list->domain);

    if (disks == NULL) {
        if (data->list_error == NULL)
            data->list_error
                = g_error_new (VMR_ERROR, VMR_ERROR_FAILED, "cannot list the disks of %s: %s",
                               list->domain, error->message);
    } else if (entry != NULL && entry->backend == VMR_BACKEND (source)) {
        g_ptr_array_unref (entry->disks);
        entry->disks = g_steal_pointer (&disks);
    }
    g_free (list->domain);
    g_free (list);
    if (--data->pending == 0)
        plan_ready (task);
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

static gboolean
check_directory (const gchar *what, const gchar *path, GError **error)
{
    if (path == NULL || !g_path_is_absolute (path)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "the %s directory must be an absolute path, not '%s'", what,
                     path != NULL ? path : "");
        return FALSE;
    }
    if (!g_file_test (path, G_FILE_TEST_IS_DIR)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "the %s directory %s does not exist",
                     what, path);
        return FALSE;
    }
    return TRUE;
}

void
vmr_engine_evacuate_async (VmrEngine *self, const VmrEvacuateRequest *request,
                           GCancellable *cancellable, GAsyncReadyCallback callback,
                           gpointer user_data)
{
    g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
    EvacuateData *data = g_new0 (EvacuateData, 1);
    g_autoptr (GError) error = NULL;
    GHashTableIter iter;
    DomainEntry *entry;

    data->names = g_ptr_array_new_with_free_func (g_free);
    data->plan = g_ptr_array_new_with_free_func ((GDestroyNotify) plan_entry_free);
    data->submit = g_ptr_array_new ();
    g_task_set_task_data (task, data, (GDestroyNotify) evacuate_data_free);
    if (vmr_nbd_uri_is_uri (request->to)) {
        data->to_nbd = vmr_nbd_uri_parse (request->to, &error);
        if (data->to_nbd == NULL) {
            g_task_return_error (task, g_steal_pointer (&error));
            return;
        }
    }
    if (data->to_nbd != NULL && request->format != NULL
        && g_strcmp0 (request->format, "raw") != 0) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "an NBD export is a raw disk: format '%s' is not supported for %s",
                                 request->format, data->to_nbd->canonical);
        return;
    }
    if (!check_directory ("source", request->from, &error)
        || (data->to_nbd == NULL && !check_directory ("destination", request->to, &error))) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* both exist: compared resolved, as the disks' paths are */
    data->from = vmr_destination_resolve_path (request->from);
    data->to = data->to_nbd != NULL ? g_strdup (data->to_nbd->canonical)
                                    : vmr_destination_resolve_path (request->to);
    if (g_strcmp0 (data->from, data->to) == 0) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "the destination directory is the source directory %s",
                                 data->from);
        return;
    }
    if (relative_to (data->to, data->from) != NULL) {
        g_task_return_new_error (task, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                                 "the destination directory %s lies inside the source "
                                 "directory %s",
                                 data->to, data->from);
        return;
    }
    if (request->format != NULL && !vmr_destination_check_format (request->format, &error)) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    data->domains = g_strdup (request->domains);
    data->format = g_strdup (request->format);
    data->speed = request->speed;
    data->speed_given = request->speed_given;
    data->dry_run = request->dry_run;

    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        if (!entry->connected)
            continue;
        if (data->domains != NULL && !g_pattern_match_simple (data->domains, entry->name))
            continue;
        g_ptr_array_add (data->names, g_strdup (entry->name));
    }
    g_ptr_array_sort (data->names, compare_names);
    if (data->names->len == 0) {
        plan_ready (task);
        return;
    }
    /* the disk lists may have changed since the last look: read them again */
    data->pending = data->names->len;
    for (guint i = 0; i < data->names->len; i++) {
        ListData *list = g_new0 (ListData, 1);

        entry = g_hash_table_lookup (self->domains, g_ptr_array_index (data->names, i));
        list->task = g_object_ref (task);
        list->domain = g_strdup (entry->name);
        vmr_backend_query_disks_async (entry->backend, cancellable, disks_cb, list);
    }
}

JsonObject *
vmr_engine_evacuate_finish (VmrEngine *self, GAsyncResult *res, GError **error)
{
    return g_task_propagate_pointer (G_TASK (res), error);
}
