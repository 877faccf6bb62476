#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The policy file: loading it, reloading it (an invalid file keeps the
 * policy in force) and showing the values in force for a disk.
 */

#include "engine-private.h"

#include "vmr-error.h"

gboolean
vmr_engine_load_policy (VmrEngine *self, const gchar *path, gboolean required, GError **error)
{
    VmrPolicy *policy;

    if (path != NULL && !required && !g_file_test (path, G_FILE_TEST_EXISTS)) {
        g_message ("no policy file at %s: using the built-in values", path);
        g_free (self->policy_path);
        self->policy_path = g_strdup (path);
        return TRUE;
    }
    policy = path != NULL ? vmr_policy_load (path, error) : vmr_policy_new_default ();
    if (policy == NULL)
        return FALSE;
    g_clear_pointer (&self->policy, vmr_policy_unref);
    self->policy = policy;
    self->policy_loaded = g_get_real_time ();
    self->policy_refused = 0;
    g_clear_pointer (&self->policy_refusal, g_free);
    if (path != self->policy_path) {
        g_free (self->policy_path);
        self->policy_path = g_strdup (path);
    }
    g_message ("policy loaded from %s", vmr_policy_get_source (policy));
    vmr_engine_apply_retention (self);
    vmr_engine_cluster_update (self);
    return TRUE;
}

/* a refused reload, for query-policy: a reload by a signal has nobody to tell */
static gboolean
refuse_reload (VmrEngine *self, GError **error)
{
    self->policy_refused = g_get_real_time ();
    g_free (self->policy_refusal);
    self->policy_refusal = g_strdup ((*error)->message);
    return FALSE;
}

gboolean
vmr_engine_reload_policy (VmrEngine *self, GError **error)
{
    g_autoptr (GError) local_error = NULL;
    GHashTableIter iter;
    DomainEntry *entry;

    if (self->policy_path == NULL) {
        g_message ("reload: no policy file configured; keeping the built-in values");
        return TRUE;
    }
    if (!g_file_test (self->policy_path, G_FILE_TEST_EXISTS)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "policy file %s does not exist; keeping the current policy",
                     self->policy_path);
        return refuse_reload (self, error);
    }
    if (!vmr_engine_load_policy (self, self->policy_path, TRUE, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "%s\nthe policy is unchanged",
                     local_error->message);
        return refuse_reload (self, error);
    }
    /* the sampling interval may have changed */
    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry))
        vmr_engine_sampling_schedule (self, entry);
    /* the guards may refuse a queued job's destination now */
    vmr_engine_recheck_queued (self);
    /* the limits and the budgets may have changed */
    vmr_engine_admission_schedule (self);
    vmr_engine_budget_policy_changed (self);
    return TRUE;
}

/* the disks of the running domains that lie in @storage */
static JsonArray *
storage_disks (VmrEngine *self, const VmrStorage *storage)
{
    JsonArray *disks = json_array_new ();
    GHashTableIter iter;
    DomainEntry *entry;

    g_hash_table_iter_init (&iter, self->domains);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &entry)) {
        for (guint i = 0; entry->disks != NULL && i < entry->disks->len; i++) {
            VmrDisk *disk = g_ptr_array_index (entry->disks, i);
            JsonObject *obj;

            if (disk->path == NULL || !vmr_storage_contains (storage, disk->path))
                continue;
            obj = json_object_new ();
            json_object_set_string_member (obj, "domain", entry->name);
            json_object_set_string_member (obj, "disk", disk->id);
            json_object_set_string_member (obj, "path", disk->path);
            json_array_add_object_element (disks, obj);
        }
    }
    return disks;
}

/* the [storage NAME] sections: name, paths, budget (bytes/s, 0 = none) and the disks in each */
static JsonArray *
storages_to_json (VmrEngine *self)
{
    GPtrArray *storages = vmr_policy_get_storages (self->policy);
    JsonArray *array = json_array_new ();

    for (guint i = 0; i < storages->len; i++) {
        const VmrStorage *storage = g_ptr_array_index (storages, i);
        JsonObject *obj = json_object_new ();
        JsonArray *paths = json_array_new ();

        for (guint p = 0; storage->paths[p] != NULL; p++)
            json_array_add_string_element (paths, storage->paths[p]);
        json_object_set_string_member (obj, "name", storage->name);
        json_object_set_array_member (obj, "paths", paths);
        json_object_set_int_member (obj, "budget", (gint64) storage->budget);
        json_object_set_array_member (obj, "disks", storage_disks (self, storage));
        json_array_add_object_element (array, obj);
    }
    return array;
}

JsonObject *
vmr_engine_show_policy (VmrEngine *self, const gchar *domain, const gchar *disk, GError **error)
{
    g_autoptr (VmrPolicyRule) rule = NULL;
    JsonObject *obj = json_object_new ();
    JsonArray *values = json_array_new ();

    if (disk != NULL && domain == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "a disk needs a domain");
        json_object_unref (obj);
        json_array_unref (values);
        return NULL;
    }
    rule = vmr_policy_lookup (self->policy, domain, disk);
    json_object_set_string_member (obj, "source", vmr_policy_get_source (self->policy));
    if (self->policy_loaded != 0)
        json_object_set_int_member (obj, "loaded", self->policy_loaded);
    if (self->policy_refused != 0) {
        JsonObject *refused = json_object_new ();

        json_object_set_int_member (refused, "time", self->policy_refused);
        json_object_set_string_member (refused, "error", self->policy_refusal);
        json_object_set_object_member (obj, "refused", refused);
    }
    if (domain != NULL)
        json_object_set_string_member (obj, "domain", domain);
    if (disk != NULL)
        json_object_set_string_member (obj, "disk", disk);
    for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++) {
        JsonObject *value = json_object_new ();
        g_autofree gchar *text = vmr_policy_rule_format_value (rule, k);

        json_object_set_string_member (value, "key", vmr_policy_key_name (k));
        json_object_set_string_member (value, "value", text);
        json_object_set_string_member (value, "from", rule->origin[k]);
        json_array_add_object_element (values, value);
    }
    json_object_set_array_member (obj, "values", values);
    json_object_set_array_member (obj, "storages", storages_to_json (self));
    return obj;
}

void
vmr_engine_apply_retention (VmrEngine *self)
{
    g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (self->policy, NULL, NULL);

    vmr_job_table_set_retention (self->jobs, rule->keep_finished_us, rule->keep_finished);
}
