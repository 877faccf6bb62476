#define G_LOG_DOMAIN "vmr-policy"

#include "policy.h"

#include "policy-private.h"

#include <string.h>

#include "cluster-config.h"
#include "storage.h"
#include "vmr-error.h"

#define BUILT_IN "built-in"

typedef struct {
    gchar *name;        /* as written between the brackets */
    gchar *domain_glob; /* NULL for [defaults] */
    gchar *disk_glob;   /* NULL unless a disk section */
    guint specificity;  /* 0 defaults, 1 domain, 2 domain and disk */
    guint order;        /* position in the file */
    gboolean set[VMR_POLICY_KEY_LAST];
    VmrPolicyRule values; /* only the keys in set[] mean anything */
} PolicySection;

struct _VmrPolicy {
    gint ref_count;
    gchar *source;
    GPtrArray *sections;       /* of PolicySection *, in file order */
    VmrClusterConfig *cluster; /* the [cluster] section, NULL without one */
    GPtrArray *storages;       /* of VmrStorage *, the [storage NAME] sections in file order */
};

static void
rule_clear (VmrPolicyRule *rule)
{
    g_clear_pointer (&rule->windows, g_array_unref);
    g_clear_pointer (&rule->tls_creds, g_free);
    g_clear_pointer (&rule->allowed_destinations, g_strfreev);
    for (guint i = 0; i < VMR_POLICY_KEY_LAST; i++)
        g_clear_pointer (&rule->origin[i], g_free);
}

void
vmr_policy_rule_free (VmrPolicyRule *rule)
{
    if (rule == NULL)
        return;
    rule_clear (rule);
    g_free (rule);
}

static void
section_free (PolicySection *section)
{
    g_free (section->name);
    g_free (section->domain_glob);
    g_free (section->disk_glob);
    rule_clear (&section->values);
    g_free (section);
}

/* ---- the file ---- */

typedef struct {
    guint line; /* 0 when not known */
    gchar *text;
} LoadError;

static void
load_error_free (LoadError *load_error)
{
    g_free (load_error->text);
    g_free (load_error);
}

typedef struct {
    const gchar *name;
    GPtrArray *errors; /* of LoadError *, sorted by line at the end */
    GHashTable *lines; /* "group" or "group\nkey" -> line number */
} Loader;

static guint
line_of (Loader *loader, const gchar *group, const gchar *key)
{
    g_autofree gchar *id = key != NULL ? g_strconcat (group, "\n", key, NULL) : g_strdup (group);

    return GPOINTER_TO_UINT (g_hash_table_lookup (loader->lines, id));
}

G_GNUC_PRINTF (5, 6)
static void
add_error (Loader *loader, const gchar *group, const gchar *key, guint line, const gchar *format,
           ...)
{
    g_autoptr (GString) text = g_string_new (NULL);
    g_autofree gchar *message = NULL;
    LoadError *load_error;
    va_list args;

    va_start (args, format);
    message = g_strdup_vprintf (format, args);
    va_end (args);
    if (line == 0 && group != NULL)
        line = line_of (loader, group, key);
    if (line > 0)
        g_string_append_printf (text, "%s:%u: ", loader->name, line);
    else
        g_string_append_printf (text, "%s: ", loader->name);
    if (group != NULL)
        g_string_append_printf (text, "[%s] ", group);
    if (key != NULL)
        g_string_append_printf (text, "%s: ", key);
    g_string_append (text, message);
    load_error = g_new0 (LoadError, 1);
    load_error->line = line;
    load_error->text = g_string_free (g_steal_pointer (&text), FALSE);
    g_ptr_array_add (loader->errors, load_error);
}

static gint
compare_errors (gconstpointer a, gconstpointer b)
{
    const LoadError *first = *(const LoadError *const *) a;
    const LoadError *second = *(const LoadError *const *) b;

    return first->line < second->line ? -1 : first->line > second->line ? 1 : 0;
}

/* sets @error to every error of @loader, one per line, in the order of the file */
static void
set_load_errors (Loader *loader, GError **error)
{
    g_autoptr (GString) text = g_string_new (NULL);

    /* a stable sort: errors of one line keep the order they were found in */
    g_ptr_array_sort (loader->errors, compare_errors);
    for (guint i = 0; i < loader->errors->len; i++) {
        const LoadError *load_error = g_ptr_array_index (loader->errors, i);

        g_string_append_printf (text, "%s%s", i > 0 ? "\n" : "", load_error->text);
    }
    g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, text->str);
}

/*
 * GKeyFile does the parsing but knows no line numbers, so the text is read
 * once more to find where each group and key stands, and to report lines
 * that are not a group, a key or a comment, repeated sections and keys set
 * twice. Returns the text with the lines in error blanked, so that GKeyFile
 * can read the rest and every other problem is reported in the same pass.
 */
static gchar *
index_lines (Loader *loader, const gchar *text)
{
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
    g_autoptr (GHashTable) keys_here
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    g_autofree gchar *group = NULL;
    gboolean bad_header = FALSE; /* the keys that follow have been reported with it */

    for (guint i = 0; lines[i] != NULL; i++) {
        g_autofree gchar *line = g_strstrip (g_strdup (lines[i]));
        guint number = i + 1;
        gchar *eq;

        if (*line == '\0' || *line == '#')
            continue;
        if (!g_utf8_validate (line, -1, NULL)) {
            /*
             * GKeyFile takes a section name as it comes, and GLib's glob
             * matcher aborts on a selector that is not UTF-8 (found by the
             * fuzzer); a header's keys are skipped with it
             */
            add_error (loader, NULL, NULL, number, "the line is not UTF-8");
            bad_header = *line == '[' ? TRUE : bad_header;
            *lines[i] = '\0';
            continue;
        }
        if (*line == '[') {
            gchar *end = strchr (line, ']');
            guint first;

            if (end == NULL || end[1] != '\0') {
                add_error (loader, NULL, NULL, number, "'%s' is not a section header", line);
                *lines[i] = '\0';
                /* its keys would land in the section before: skip them too */
                bad_header = TRUE;
                continue;
            }
            bad_header = FALSE;
            g_free (group);
            group = g_strndup (line + 1, (gsize) (end - line - 1));
            g_hash_table_remove_all (keys_here);
            first = line_of (loader, group, NULL);
            if (first != 0) {
                /*
                 * GKeyFile would merge the two where the first stands, which
                 * upsets "the later section wins" between equals
                 */
                add_error (loader, group, NULL, number,
                           "section repeated (first at line %u): merge the two", first);
                continue;
            }
            g_hash_table_insert (loader->lines, g_strdup (group), GUINT_TO_POINTER (number));
            continue;
        }
        eq = strchr (line, '=');
        if (eq == NULL) {
            add_error (loader, NULL, NULL, number, "'%s' is not a 'key = value' line", line);
            *lines[i] = '\0';
            continue;
        }
        if (bad_header || group == NULL) {
            if (!bad_header)
                add_error (loader, NULL, NULL, number, "a key before the first section");
            *lines[i] = '\0';
            continue;
        }
        *eq = '\0';
        g_strstrip (line);
        if (*line == '\0') {
            add_error (loader, NULL, NULL, number, "a value without a key");
            *lines[i] = '\0';
            continue;
        }
        if (g_hash_table_contains (keys_here, line)) {
            add_error (loader, group, line, number, "set twice in this section (first at line %u)",
                       line_of (loader, group, line));
            *lines[i] = '\0';
            continue;
        }
        g_hash_table_add (keys_here, g_strdup (line));
        g_hash_table_insert (loader->lines, g_strconcat (group, "\n", line, NULL),
                             GUINT_TO_POINTER (number));
    }
    return g_strjoinv ("\n", lines);
}

static PolicySection *
parse_section_name (Loader *loader, const gchar *group, guint order)
{
    g_auto (GStrv) words = g_strsplit_set (group, " \t", -1);
    g_autoptr (GPtrArray) tokens = g_ptr_array_new ();
    PolicySection *section;

    for (guint i = 0; words[i] != NULL; i++) {
        if (*words[i] != '\0')
            g_ptr_array_add (tokens, words[i]);
    }
    section = g_new0 (PolicySection, 1);
    section->name = g_strdup (group);
    section->order = order;
    vmr_policy_rule_set_built_in (&section->values);
    if (tokens->len == 1 && g_strcmp0 (tokens->pdata[0], "defaults") == 0)
        return section;
    if (tokens->len == 2 && g_strcmp0 (tokens->pdata[0], "domain") == 0) {
        section->domain_glob = g_strdup (tokens->pdata[1]);
        section->specificity = 1;
        return section;
    }
    if (tokens->len == 4 && g_strcmp0 (tokens->pdata[0], "domain") == 0
        && g_strcmp0 (tokens->pdata[2], "disk") == 0) {
        section->domain_glob = g_strdup (tokens->pdata[1]);
        section->disk_glob = g_strdup (tokens->pdata[3]);
        section->specificity = 2;
        return section;
    }
    add_error (loader, group, NULL, 0,
               "unknown section (expected [defaults], [domain GLOB], [domain GLOB disk NAME], "
               "[storage NAME] or [cluster])");
    section_free (section);
    return NULL;
}

/* the name of the first of the keys (up to 3, the last may be repeated) that @section sets */
static const gchar *
first_set (const PolicySection *section, VmrPolicyKey k1, VmrPolicyKey k2, VmrPolicyKey k3)
{
    if (section->set[k1])
        return vmr_policy_key_name (k1);
    if (section->set[k2])
        return vmr_policy_key_name (k2);
    return vmr_policy_key_name (k3);
}

/*
 * The threshold that slows a copy down to throttle-speed, for the checks of
 * throttle-speed: the one @section sets, else the one it inherits,
 * iops-throttle first; VMR_POLICY_KEY_LAST when neither is set.
 */
static VmrPolicyKey
slowing_key (const PolicySection *section, const VmrPolicyRule *rule)
{
    gboolean iops = rule->iops_throttle > 0;
    gboolean latency = rule->latency_throttle_us > 0;

    if (latency && section->set[VMR_POLICY_KEY_LATENCY_THROTTLE]
        && !(iops && section->set[VMR_POLICY_KEY_IOPS_THROTTLE]))
        return VMR_POLICY_KEY_LATENCY_THROTTLE;
    if (iops)
        return VMR_POLICY_KEY_IOPS_THROTTLE;
    if (latency)
        return VMR_POLICY_KEY_LATENCY_THROTTLE;
    return VMR_POLICY_KEY_LAST;
}

/*
 * The thresholds of @section must make sense over what it inherits: the
 * [defaults] section and, for a disk section, the sections of the same
 * domain glob. Which other globs match a domain is only known at lookup,
 * so a problem between, say, [domain web*] and [domain * disk vda] is not
 * seen here; the decision still behaves (the pause wins over the throttle).
 */
static void
check_combination (Loader *loader, GPtrArray *sections, PolicySection *section,
                   PolicySection *defaults)
{
    VmrPolicyRule rule = { 0 };
    g_autoptr (GPtrArray) layers = g_ptr_array_new ();
    gboolean sets_throttle = section->set[VMR_POLICY_KEY_IOPS_THROTTLE];
    gboolean sets_delay = section->set[VMR_POLICY_KEY_IOPS_DELAY];
    gboolean sets_speed = section->set[VMR_POLICY_KEY_SPEED];
    gboolean sets_slow_speed = section->set[VMR_POLICY_KEY_THROTTLE_SPEED];
    VmrPolicyKey slows;

    if (defaults != NULL && defaults != section)
        g_ptr_array_add (layers, defaults);
    for (guint i = 0; section->disk_glob != NULL && i < sections->len; i++) {
        PolicySection *other = g_ptr_array_index (sections, i);

        if (other->specificity == 1 && g_str_equal (other->domain_glob, section->domain_glob))
            g_ptr_array_add (layers, other);
    }
    g_ptr_array_add (layers, section);

    vmr_policy_rule_set_built_in (&rule);
    for (guint l = 0; l < layers->len; l++) {
        PolicySection *layer = g_ptr_array_index (layers, l);

        for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++) {
            if (layer->set[k])
                vmr_policy_rule_copy_value (&rule, &layer->values, k);
        }
    }

    slows = slowing_key (section, &rule);

    /* report at a key this section sets, so that the line points at the culprit */
    if (rule.iops_throttle > 0 && rule.iops_delay > 0 && rule.iops_throttle >= rule.iops_delay
        && (sets_throttle || sets_delay))
        add_error (loader, section->name,
                   first_set (section, VMR_POLICY_KEY_IOPS_THROTTLE, VMR_POLICY_KEY_IOPS_DELAY,
                              VMR_POLICY_KEY_IOPS_DELAY),
                   0,
                   "iops-throttle (%" G_GUINT64_FORMAT ") must be below iops-delay "
                   "(%" G_GUINT64_FORMAT "): a copy slows down before it stops",
                   rule.iops_throttle, rule.iops_delay);
    if (slows != VMR_POLICY_KEY_LAST && rule.throttle_speed == 0
        && (section->set[slows] || sets_slow_speed))
        add_error (loader, section->name,
                   first_set (section, VMR_POLICY_KEY_THROTTLE_SPEED, slows, slows), 0,
                   "throttle-speed must be above 0 when %s is set (0 is unlimited)",
                   vmr_policy_key_name (slows));
    if (slows != VMR_POLICY_KEY_LAST && rule.speed > 0 && rule.throttle_speed >= rule.speed
        && (section->set[slows] || sets_speed || sets_slow_speed)) {
        g_autofree gchar *slow
            = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_THROTTLE_SPEED);
        g_autofree gchar *full = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_SPEED);

        add_error (loader, section->name,
                   first_set (section, VMR_POLICY_KEY_THROTTLE_SPEED, VMR_POLICY_KEY_SPEED, slows),
                   0, "throttle-speed (%s) must be below speed (%s)", slow, full);
    }
    if (rule.latency_throttle_us > 0 && rule.latency_delay_us > 0
        && rule.latency_throttle_us >= rule.latency_delay_us
        && (section->set[VMR_POLICY_KEY_LATENCY_THROTTLE]
            || section->set[VMR_POLICY_KEY_LATENCY_DELAY])) {
        g_autofree gchar *throttle
            = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_LATENCY_THROTTLE);
        g_autofree gchar *delay
            = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_LATENCY_DELAY);

        add_error (loader, section->name,
                   first_set (section, VMR_POLICY_KEY_LATENCY_THROTTLE,
                              VMR_POLICY_KEY_LATENCY_DELAY, VMR_POLICY_KEY_LATENCY_DELAY),
                   0,
                   "latency-throttle (%s) must be below latency-delay (%s): a copy slows down "
                   "before it stops",
                   throttle, delay);
    }
    if (rule.max_speed > 0 && rule.min_speed > rule.max_speed
        && (section->set[VMR_POLICY_KEY_MIN_SPEED] || section->set[VMR_POLICY_KEY_MAX_SPEED])) {
        g_autofree gchar *low = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_MIN_SPEED);
        g_autofree gchar *high = vmr_policy_rule_format_value (&rule, VMR_POLICY_KEY_MAX_SPEED);

        add_error (loader, section->name,
                   first_set (section, VMR_POLICY_KEY_MIN_SPEED, VMR_POLICY_KEY_MAX_SPEED,
                              VMR_POLICY_KEY_MAX_SPEED),
                   0, "min-speed (%s) must not be above max-speed (%s)", low, high);
    }
    rule_clear (&rule);
}

/* the [cluster] section, or NULL when it is in error */
static VmrClusterConfig *
load_cluster (Loader *loader, GKeyFile *keyfile, const gchar *group, GStrv keys)
{
    g_autoptr (VmrClusterConfig) config = vmr_cluster_config_new ();
    g_autoptr (GError) check_error = NULL;
    const gchar *check_key = NULL;
    gboolean valid = TRUE;

    for (guint k = 0; keys != NULL && keys[k] != NULL; k++) {
        g_autofree gchar *value = g_key_file_get_value (keyfile, group, keys[k], NULL);
        g_autoptr (GError) value_error = NULL;

        g_strstrip (value);
        if (!vmr_cluster_config_parse_key (config, keys[k], value, &value_error)) {
            add_error (loader, group, keys[k], 0, "%s", value_error->message);
            valid = FALSE;
        }
    }
    if (valid && !vmr_cluster_config_check (config, &check_key, &check_error)) {
        add_error (loader, group, check_key, 0, "%s", check_error->message);
        valid = FALSE;
    }
    return valid ? g_steal_pointer (&config) : NULL;
}

/* the [storage NAME] section @group, or NULL when it is in error */
static VmrStorage *
load_storage (Loader *loader, GKeyFile *keyfile, const gchar *group, GStrv keys)
{
    g_autofree gchar *name = g_strstrip (g_strdup (group + strlen ("storage ")));
    g_autoptr (VmrStorage) storage = NULL;
    g_autoptr (GError) name_error = NULL;
    gboolean valid = TRUE;

    storage = vmr_storage_new (name, &name_error);
    if (storage == NULL) {
        add_error (loader, group, NULL, 0, "%s", name_error->message);
        return NULL;
    }
    for (guint k = 0; keys != NULL && keys[k] != NULL; k++) {
        g_autofree gchar *value = g_key_file_get_value (keyfile, group, keys[k], NULL);
        g_autoptr (GError) value_error = NULL;

        if (!vmr_storage_parse_key (storage, keys[k], g_strstrip (value), &value_error)) {
            add_error (loader, group, keys[k], 0, "%s", value_error->message);
            valid = FALSE;
        }
    }
    if (valid && storage->paths == NULL) {
        add_error (loader, group, NULL, 0,
                   "paths is missing: the directories, devices or NBD URIs of the storage");
        valid = FALSE;
    }
    return valid ? g_steal_pointer (&storage) : NULL;
}

/*
 * A location lies in one storage at most: a storage whose paths meet an
 * earlier one's is refused at its paths; and the [cluster] section's older
 * storage key names storages too, so it may not stand beside the sections
 */
static void
check_storages (Loader *loader, VmrPolicy *self)
{
    for (guint i = 0; i < self->storages->len; i++) {
        VmrStorage *storage = g_ptr_array_index (self->storages, i);

        for (guint j = 0; j < i; j++) {
            VmrStorage *earlier = g_ptr_array_index (self->storages, j);
            g_autofree gchar *group = g_strconcat ("storage ", storage->name, NULL);
            g_autofree gchar *earlier_group = g_strconcat ("storage ", earlier->name, NULL);
            const gchar *shared = vmr_storage_overlap (storage, earlier);

            if (shared != NULL)
                add_error (loader, group, "paths", 0,
                           "'%s' is also in [storage %s] (line %u): a location belongs to one "
                           "storage",
                           shared, earlier->name, line_of (loader, earlier_group, "paths"));
        }
    }
    if (self->cluster != NULL && self->cluster->storage != NULL && self->storages->len > 0)
        add_error (loader, "cluster", "storage", 0,
                   "set beside [storage NAME] sections: name these directories in a [storage] "
                   "section's paths instead");
}

/* the keys of the selector section @section ([defaults] or [domain ...]) */
static void
load_rule_keys (Loader *loader, GKeyFile *keyfile, const gchar *group, GStrv keys,
                PolicySection *section)
{
    for (guint k = 0; keys != NULL && keys[k] != NULL; k++) {
        g_autofree gchar *value = g_key_file_get_value (keyfile, group, keys[k], NULL);
        g_autoptr (GError) value_error = NULL;
        gint key = -1;

        for (guint i = 0; i < VMR_POLICY_KEY_LAST; i++) {
            if (g_strcmp0 (vmr_policy_key_name ((VmrPolicyKey) i), keys[k]) == 0)
                key = (gint) i;
        }
        if (key < 0) {
            add_error (loader, group, keys[k], 0, "unknown key");
            continue;
        }
        g_strstrip (value);
        if (vmr_policy_key_is_host_wide (key) && section->specificity > 0) {
            add_error (loader, group, keys[k], 0,
                       key == VMR_POLICY_KEY_MAX_PARALLEL
                           ? "counts the copies of the whole host: set it in [defaults]"
                           : "is about the whole host: set it in [defaults]");
            continue;
        }
        if (!vmr_policy_rule_parse_value (&section->values, key, value, &value_error)) {
            add_error (loader, group, keys[k], 0, "%s", value_error->message);
            continue;
        }
        section->set[key] = TRUE;
    }
}

VmrPolicy *
vmr_policy_load_from_data (const gchar *name, const gchar *text, GError **error)
{
    g_autoptr (GKeyFile) keyfile = g_key_file_new ();
    g_autoptr (GError) local_error = NULL;
    g_autoptr (GHashTable) lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr (GPtrArray) errors
        = g_ptr_array_new_with_free_func ((GDestroyNotify) load_error_free);
    g_autofree gchar *readable = NULL;
    g_auto (GStrv) groups = NULL;
    g_autoptr (VmrPolicy) self = NULL;
    Loader loader = { name, errors, lines };
    PolicySection *defaults = NULL;

    readable = index_lines (&loader, text);
    if (!g_key_file_load_from_data (keyfile, readable, (gsize) -1, G_KEY_FILE_NONE, &local_error)) {
        /* what the line check let through and GKeyFile still refuses, e.g. bad UTF-8 */
        add_error (&loader, NULL, NULL, 0, "%s", local_error->message);
        set_load_errors (&loader, error);
        return NULL;
    }

    self = g_new0 (VmrPolicy, 1);
    self->ref_count = 1;
    self->source = g_strdup (name);
    self->sections = g_ptr_array_new_with_free_func ((GDestroyNotify) section_free);
    self->storages = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_storage_free);
    groups = g_key_file_get_groups (keyfile, NULL);
    for (guint g = 0; groups[g] != NULL; g++) {
        g_auto (GStrv) keys = g_key_file_get_keys (keyfile, groups[g], NULL, NULL);
        PolicySection *section = NULL;

        if (g_str_equal (groups[g], "cluster")) {
            self->cluster = load_cluster (&loader, keyfile, groups[g], keys);
            continue;
        }
        if (g_str_has_prefix (groups[g], "storage ")) {
            VmrStorage *storage = load_storage (&loader, keyfile, groups[g], keys);

            if (storage != NULL)
                g_ptr_array_add (self->storages, storage);
            continue;
        }
        section = parse_section_name (&loader, groups[g], g);
        if (section == NULL)
            continue;
        load_rule_keys (&loader, keyfile, groups[g], keys, section);
        if (section->specificity == 0)
            defaults = section;
        g_ptr_array_add (self->sections, section);
    }
    check_storages (&loader, self);
    for (guint i = 0; i < self->sections->len; i++)
        check_combination (&loader, self->sections, g_ptr_array_index (self->sections, i),
                           defaults);
    if (errors->len > 0) {
        set_load_errors (&loader, error);
        return NULL;
    }
    return g_steal_pointer (&self);
}

VmrPolicy *
vmr_policy_load (const gchar *path, GError **error)
{
    g_autofree gchar *text = NULL;
    g_autoptr (GError) local_error = NULL;

    if (!g_file_get_contents (path, &text, NULL, &local_error)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot read policy %s: %s",
                     path, local_error->message);
        return NULL;
    }
    return vmr_policy_load_from_data (path, text, error);
}

VmrPolicy *
vmr_policy_new_default (void)
{
    VmrPolicy *self = g_new0 (VmrPolicy, 1);

    self->ref_count = 1;
    self->source = g_strdup (BUILT_IN);
    self->sections = g_ptr_array_new_with_free_func ((GDestroyNotify) section_free);
    self->storages = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_storage_free);
    return self;
}

VmrPolicy *
vmr_policy_ref (VmrPolicy *self)
{
    g_atomic_int_inc (&self->ref_count);
    return self;
}

void
vmr_policy_unref (VmrPolicy *self)
{
    if (self == NULL || !g_atomic_int_dec_and_test (&self->ref_count))
        return;
    g_ptr_array_unref (self->sections);
    g_ptr_array_unref (self->storages);
    vmr_cluster_config_free (self->cluster);
    g_free (self->source);
    g_free (self);
}

const gchar *
vmr_policy_get_source (VmrPolicy *self)
{
    return self->source;
}

const VmrClusterConfig *
vmr_policy_get_cluster (VmrPolicy *self)
{
    return self->cluster;
}

GPtrArray *
vmr_policy_get_storages (VmrPolicy *self)
{
    return self->storages;
}

const VmrStorage *
vmr_policy_find_storage (VmrPolicy *self, const gchar *location)
{
    for (guint i = 0; location != NULL && i < self->storages->len; i++) {
        const VmrStorage *storage = g_ptr_array_index (self->storages, i);

        if (vmr_storage_contains (storage, location))
            return storage;
    }
    return NULL;
}

gchar *
vmr_policy_storage_key (VmrPolicy *self, const gchar *location, const gchar *fallback)
{
    const VmrStorage *storage = vmr_policy_find_storage (self, location);

    if (storage != NULL)
        return g_strdup (storage->name);
    if (self->cluster != NULL)
        return vmr_cluster_config_storage_key (self->cluster, fallback);
    return g_strdup (fallback);
}

static gboolean
section_matches (const PolicySection *section, const gchar *domain, const gchar *disk)
{
    if (section->domain_glob != NULL
        && (domain == NULL || !g_pattern_match_simple (section->domain_glob, domain)))
        return FALSE;
    if (section->disk_glob != NULL
        && (disk == NULL || !g_pattern_match_simple (section->disk_glob, disk)))
        return FALSE;
    return TRUE;
}

VmrPolicyRule *
vmr_policy_lookup (VmrPolicy *self, const gchar *domain, const gchar *disk)
{
    VmrPolicyRule *rule = g_new0 (VmrPolicyRule, 1);

    vmr_policy_rule_set_built_in (rule);
    for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++) {
        PolicySection *best = NULL;

        for (guint i = 0; i < self->sections->len; i++) {
            PolicySection *section = g_ptr_array_index (self->sections, i);

            if (!section->set[k] || !section_matches (section, domain, disk))
                continue;
            /* more specific wins; among equals the later one */
            if (best == NULL || section->specificity >= best->specificity)
                best = section;
        }
        if (best != NULL)
            vmr_policy_rule_copy_value (rule, &best->values, k);
        rule->origin[k] = g_strdup (best != NULL ? best->name : BUILT_IN);
    }
    return rule;
}
