#define G_LOG_DOMAIN "vmr-test"

#include "engine-fixture.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "vmr-error.h"

/* a loop that never quiets down is a bug of the engine or of the case */
#define MAX_ITERATIONS 10000

/* the engine's warnings since the last step */
static GString *engine_warnings;

/* the engine's messages since engine_fixture_keep_messages(), or NULL */
static GString *engine_messages;

/*
 * One of the engine's messages: a warning is kept for the steps to check,
 * the others become TAP comments, kept in the log and shown for a failed
 * test
 */
static void
keep_engine_message (GLogLevelFlags level, const gchar *message)
{
    if ((level & G_LOG_LEVEL_WARNING) != 0) {
        g_string_append_printf (engine_warnings, "%s%s", engine_warnings->len > 0 ? "; " : "",
                                message);
        return;
    }
    if ((level & G_LOG_LEVEL_MESSAGE) != 0 && engine_messages != NULL)
        g_string_append_printf (engine_messages, "%s\n", message);
    g_test_message ("vmr-daemon: %s", message);
}

/* the engine's g_message(), g_warning(), ... */
static void
engine_log_cb (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer user_data)
{
    keep_engine_message (level, message);
}

/* the field @key of a log entry, or NULL */
static const gchar *
log_field (const GLogField *fields, gsize n_fields, const gchar *key)
{
    for (gsize i = 0; i < n_fields; i++) {
        if (g_str_equal (fields[i].key, key) && fields[i].length < 0)
            return fields[i].value;
    }
    return NULL;
}

/*
 * The engine's job messages, which go through g_log_structured() (they
 * carry journal fields) and so past every g_log_set_handler(); messages
 * of other domains go their usual way
 */
static GLogWriterOutput
engine_log_writer_cb (GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                      gpointer user_data)
{
    if (g_strcmp0 (log_field (fields, n_fields, "GLIB_DOMAIN"), "vmr-daemon") != 0)
        return g_log_writer_default (level, fields, n_fields, user_data);
    keep_engine_message (level, log_field (fields, n_fields, "MESSAGE"));
    return G_LOG_WRITER_HANDLED;
}

void
engine_fixture_keep_messages (GString *messages)
{
    engine_messages = messages;
}

static gboolean
fatal_cb (const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer user_data)
{
    /* the steps check the engine's warnings */
    return g_strcmp0 (domain, "vmr-daemon") != 0 || (level & G_LOG_LEVEL_WARNING) == 0;
}

void
engine_fixture_init_logging (void)
{
    engine_warnings = g_string_new (NULL);
    g_log_set_handler ("vmr-daemon",
                       G_LOG_LEVEL_WARNING | G_LOG_FLAG_FATAL | G_LOG_LEVEL_MESSAGE
                           | G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG,
                       engine_log_cb, NULL);
    g_log_set_writer_func (engine_log_writer_cb, NULL, NULL);
}

void
engine_fixture_iterate (void)
{
    guint n = 0;

    while (g_main_context_iteration (NULL, FALSE))
        g_assert_cmpuint (++n, <, MAX_ITERATIONS);
}

static gboolean
wake_cb (gpointer user_data)
{
    return G_SOURCE_CONTINUE;
}

gboolean
engine_fixture_wait_for (gboolean (*cond) (EngineFixture *f), EngineFixture *f, guint limit_ms)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) limit_ms * 1000;
    guint wake = g_timeout_add (10, wake_cb, NULL);
    gboolean met;

    while (!(met = cond (f)) && g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
    g_source_remove (wake);
    return met;
}

FakeBackend *
engine_fixture_backend (EngineFixture *f, const gchar *domain)
{
    FakeBackend *backend = g_hash_table_lookup (f->backends, domain);

    g_assert_nonnull (backend);
    return backend;
}

/* ---- what is checked ---- */

gchar *
engine_fixture_describe_jobs (EngineFixture *f)
{
    g_autoptr (JsonArray) jobs = vmr_engine_list_jobs (f->engine);
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        JsonObject *job = json_array_get_object_element (jobs, i);
        const gchar *waiting
            = json_object_get_string_member_with_default (job, "waiting-for", NULL);

        g_string_append_printf (text, "%s%s %s", i > 0 ? ", " : "",
                                json_object_get_string_member (job, "id"),
                                json_object_get_string_member (job, "state"));
        if (waiting != NULL)
            g_string_append_printf (text, " (%s)", waiting);
        if (json_object_get_boolean_member_with_default (job, "orphaned", FALSE))
            g_string_append (text, " orphaned");
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

static gchar *
list_files (const gchar *dir)
{
    g_autoptr (GDir) handle = g_dir_open (dir, 0, NULL);
    g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
    const gchar *name;

    g_assert_nonnull (handle);
    while ((name = g_dir_read_name (handle)) != NULL)
        g_ptr_array_add (names, g_strdup (name));
    g_ptr_array_sort (names, compare_names);
    g_ptr_array_add (names, NULL);
    return g_strjoinv (" ", (gchar **) names->pdata);
}

/* the images directory, then the files of "new" */
static gchar *
list_images (EngineFixture *f)
{
    g_autofree gchar *images = list_files (f->dir);
    g_autofree gchar *moved = f->new_dir != NULL ? list_files (f->new_dir) : g_strdup ("");
    g_auto (GStrv) names = g_strsplit (moved, " ", -1);
    GString *text = g_string_new (images);

    for (guint i = 0; names[i] != NULL && *names[i] != '\0'; i++)
        g_string_append_printf (text, " new/%s", names[i]);
    return g_string_free (text, FALSE);
}

/* "vmr-1=*lost* | vmr-2=cancelled*": each job's reason against its glob */
static gchar *
match_reasons (EngineFixture *f, const gchar *expected)
{
    g_auto (GStrv) items = g_strsplit (expected, " | ", -1);

    for (guint i = 0; items[i] != NULL; i++) {
        g_auto (GStrv) pair = g_strsplit (items[i], "=", 2);
        VmrJob *job = vmr_engine_lookup_job (f->engine, pair[0], NULL);
        const gchar *reason = job != NULL && job->reason != NULL ? job->reason : "(none)";

        g_assert_nonnull (pair[1]);
        if (!g_pattern_match_simple (pair[1], reason))
            return g_strdup_printf ("%s=%s", pair[0], reason);
    }
    return g_strdup (expected);
}

/* whether @actual is @expected (a glob when @glob); NULL expects anything */
static gboolean
check (EngineFixture *f, guint index, const gchar *what, const gchar *expected, const gchar *actual,
       gboolean glob)
{
    gboolean ok;

    if (expected == NULL)
        return TRUE;
    ok = glob ? g_pattern_match_simple (expected, actual) : g_str_equal (expected, actual);
    if (ok)
        return TRUE;
    /* the checks at the end come after the last step */
    g_test_message ("%s, step %u: %s: expected \"%s\", got \"%s\"", f->tc->name,
                    MIN (index + 1, ENGINE_MAX_STEPS + 1), what, expected, actual);
    g_assert_cmpstr (actual, ==, expected);
    return FALSE;
}

/* ---- the engine and its domains ---- */

static void
job_changed_cb (VmrEngine *engine, gpointer job_pointer, gint previous, gpointer user_data)
{
    EngineFixture *f = user_data;
    VmrJob *job = job_pointer;

    g_string_append_printf (f->changes, "%s%s %s", f->changes->len > 0 ? ", " : "", job->id,
                            vmr_job_state_to_string (job->state));
}

static void
add_reply (EngineFixture *f, const gchar *label, const gchar *outcome, const GError *error)
{
    g_assert_cmpuint (f->pending_replies, >, 0);
    f->pending_replies--;
    if (f->replies->len > 0)
        g_string_append (f->replies, "; ");
    if (error != NULL)
        g_string_append_printf (f->replies, "%s error: %s", label, error->message);
    else
        g_string_append_printf (f->replies, "%s ok%s%s", label, outcome != NULL ? " " : "",
                                outcome != NULL ? outcome : "");
}

/* a user's call on its way: what its reply is filed under */
typedef struct {
    EngineFixture *f;
    gchar label[64]; /* "pause vmr-1" */
} ReplyData;

static ReplyData *
reply_data_new (EngineFixture *f, const gchar *what, const gchar *object)
{
    ReplyData *data = g_new0 (ReplyData, 1);

    data->f = f;
    g_snprintf (data->label, sizeof data->label, "%s%s%s", what, object != NULL ? " " : "",
                object != NULL ? object : "");
    f->pending_replies++;
    return data;
}

static void
attach_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ReplyData *data = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) domain = vmr_engine_add_domain_finish (VMR_ENGINE (source), res, &error);

    add_reply (data->f, data->label, NULL, error);
    g_free (data);
}

static void
attach (EngineFixture *f, const gchar *name)
{
    vmr_engine_add_domain_async (f->engine, name, VMR_BACKEND (engine_fixture_backend (f, name)),
                                 NULL, attach_cb, reply_data_new (f, "attach", name));
}

/* a new fake backend for every domain of the case, with its disks */
static void
make_backends (EngineFixture *f)
{
    const gchar *spec = f->tc->domains != NULL ? f->tc->domains : "web01=disk0";
    g_auto (GStrv) domains = g_strsplit (spec, " ", -1);

    g_hash_table_remove_all (f->backends);
    g_ptr_array_set_size (f->domain_names, 0);
    for (guint i = 0; domains[i] != NULL; i++) {
        g_auto (GStrv) parts = g_strsplit (domains[i], "=", 2);
        g_auto (GStrv) disks = g_strsplit (parts[1], ",", -1);
        FakeBackend *backend = fake_backend_new (NULL);

        fake_backend_set_auto_finish (backend, !f->tc->manual_finish);
        fake_backend_set_follows_domain (backend, f->tc->follows);
        for (guint d = 0; disks[d] != NULL; d++) {
            g_auto (GStrv) disk = g_strsplit (disks[d], "@", 2);
            g_autofree gchar *name = g_strdup_printf ("%s-%s.img", parts[0], disk[0]);
            g_autofree gchar *path = g_build_filename (f->dir, name, NULL);
            g_autofree gchar *contents = g_strdup_printf ("source of %s %s\n", parts[0], disk[0]);

            if (!g_hash_table_contains (f->sources, path)) {
                g_assert_true (g_file_set_contents (path, contents, -1, NULL));
                g_hash_table_insert (f->sources, g_strdup (path), g_steal_pointer (&contents));
            }
            fake_backend_add_disk (backend, disk[0], path, ENGINE_DISK_SIZE, disk[1]);
        }
        g_ptr_array_add (f->domain_names, g_strdup (parts[0]));
        g_hash_table_insert (f->backends, g_strdup (parts[0]), backend);
    }
}

static void
start_engine (EngineFixture *f)
{
    g_autoptr (GError) error = NULL;

    f->engine = vmr_engine_new (f->state_dir);
    g_assert_true (vmr_engine_load_policy (f->engine, f->policy_path, TRUE, &error));
    g_assert_no_error (error);
    g_signal_connect (f->engine, "job-changed", G_CALLBACK (job_changed_cb), f);
}

/* shuts the engine down; what it had on its way to the backends fails */
static void
stop_engine (EngineFixture *f)
{
    g_autoptr (GPtrArray) attached = g_ptr_array_new ();
    GHashTableIter iter;
    const gchar *name;
    FakeBackend *backend;

    g_hash_table_iter_init (&iter, f->backends);
    while (g_hash_table_iter_next (&iter, (gpointer *) &name, (gpointer *) &backend)) {
        if (vmr_engine_has_domain (f->engine, name))
            g_ptr_array_add (attached, backend);
    }
    vmr_engine_shutdown (f->engine);
    engine_fixture_iterate ();
    g_object_add_weak_pointer (G_OBJECT (f->engine), (gpointer *) &f->engine);
    g_object_unref (f->engine);
    /* nothing may keep a stopped engine alive, and nothing was left on its way */
    g_assert_null (f->engine);
    for (guint i = 0; i < attached->len; i++)
        g_assert_true (fake_backend_is_closed (g_ptr_array_index (attached, i)));
    g_hash_table_iter_init (&iter, f->backends);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &backend))
        g_assert_cmpuint (fake_backend_count_held (backend), ==, 0);
}

static void
take_logs (EngineFixture *f)
{
    for (guint i = 0; i < f->domain_names->len; i++) {
        g_autofree gchar *calls = fake_backend_take_log (
            engine_fixture_backend (f, g_ptr_array_index (f->domain_names, i)), TRUE);
    }
    g_string_truncate (f->changes, 0);
    g_string_truncate (f->replies, 0);
}

void
engine_fixture_setup (EngineFixture *f, const EngineCase *tc)
{
    g_autoptr (GError) error = NULL;

    memset (f, 0, sizeof *f);
    f->tc = tc;
    g_string_truncate (engine_warnings, 0);
    /* GLib resets it at the start of every test */
    g_test_log_set_fatal_handler (fatal_cb, NULL);
    f->dir = g_dir_make_tmp ("vmr-engine-images-XXXXXX", &error);
    g_assert_no_error (error);
    f->state_dir = g_dir_make_tmp ("vmr-engine-state-XXXXXX", &error);
    g_assert_no_error (error);
    f->policy_path = g_build_filename (f->state_dir, "policy.conf", NULL);
    g_assert_true (g_file_set_contents (
        f->policy_path, tc->policy != NULL ? tc->policy : ENGINE_TEST_POLICY, -1, NULL));
    f->domain_names = g_ptr_array_new_with_free_func (g_free);
    f->backends = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
    f->sources = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    f->changes = g_string_new (NULL);
    f->replies = g_string_new (NULL);
    make_backends (f);
    start_engine (f);
    for (guint i = 0; i < f->domain_names->len; i++)
        attach (f, g_ptr_array_index (f->domain_names, i));
    engine_fixture_iterate ();
    g_assert_cmpuint (f->pending_replies, ==, 0);
    g_assert_null (strstr (f->replies->str, "error"));
    g_assert_cmpstr (engine_warnings->str, ==, "");
    take_logs (f);
}

/* the directories of a case are flat but for the job records */
static void
remove_tree (const gchar *path)
{
    g_autofree gchar *names = list_files (path);
    g_auto (GStrv) children = g_strsplit (names, " ", -1);

    for (guint i = 0; children[i] != NULL && *children[i] != '\0'; i++) {
        g_autofree gchar *child = g_build_filename (path, children[i], NULL);

        if (g_file_test (child, G_FILE_TEST_IS_DIR))
            remove_tree (child);
        else
            g_unlink (child);
    }
    g_rmdir (path);
}

void
engine_fixture_teardown (EngineFixture *f)
{
    g_autofree gchar *files = NULL;
    g_autofree gchar *expected = NULL;
    g_autoptr (GPtrArray) sources = g_ptr_array_new_with_free_func (g_free);
    GHashTableIter iter;
    const gchar *path;
    const gchar *contents;

    g_assert_cmpuint (f->pending_replies, ==, 0);
    g_string_truncate (engine_warnings, 0);
    stop_engine (f);
    /* the sources are never touched; a destination is left only where the case says */
    g_hash_table_iter_init (&iter, f->sources);
    while (g_hash_table_iter_next (&iter, (gpointer *) &path, (gpointer *) &contents)) {
        g_autofree gchar *now = NULL;

        g_assert_true (g_file_get_contents (path, &now, NULL, NULL));
        g_assert_cmpstr (now, ==, contents);
        g_ptr_array_add (sources, g_path_get_basename (path));
    }
    g_ptr_array_sort (sources, compare_names);
    g_ptr_array_add (sources, NULL);
    expected = f->tc->files != NULL ? g_strdup (f->tc->files)
                                    : g_strjoinv (" ", (gchar **) sources->pdata);
    files = list_images (f);
    check (f, ENGINE_MAX_STEPS, "files at the end", expected, files, FALSE);
    check (f, ENGINE_MAX_STEPS, "warnings at the end", "", engine_warnings->str, FALSE);
    remove_tree (f->dir);
    remove_tree (f->state_dir);
    if (f->new_dir != NULL)
        remove_tree (f->new_dir);
    g_free (f->new_dir);
    g_free (f->dir);
    g_free (f->state_dir);
    g_free (f->policy_path);
    g_ptr_array_unref (f->domain_names);
    g_hash_table_unref (f->backends);
    g_hash_table_unref (f->sources);
    g_string_free (f->changes, TRUE);
    g_string_free (f->replies, TRUE);
}

/* ---- the steps ---- */

static const gchar *
step_domain (EngineFixture *f, const EngineStep *step)
{
    VmrJob *job;

    if (step->domain != NULL)
        return step->domain;
    job = vmr_engine_lookup_job (f->engine, step->job != NULL ? step->job : "vmr-1", NULL);
    if (job != NULL)
        return job->domain;
    return g_ptr_array_index (f->domain_names, 0);
}

static void
migrate_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ReplyData *data = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) jobs = vmr_engine_migrate_finish (VMR_ENGINE (source), res, &error);
    g_autoptr (GString) ids = g_string_new (NULL);

    for (guint i = 0; jobs != NULL && i < jobs->len; i++)
        g_string_append_printf (ids, "%s%s", i > 0 ? " " : "",
                                ((VmrJob *) g_ptr_array_index (jobs, i))->id);
    add_reply (data->f, data->label, ids->str, error);
    g_free (data);
}

static void
migrate (EngineFixture *f, const EngineStep *step)
{
    const gchar *domain = step_domain (f, step);
    g_auto (GStrv) disks = g_strsplit (step->arg != NULL ? step->arg : "disk0", ",", -1);
    guint n = g_strv_length (disks);
    g_autofree VmrMigrateTarget *targets = g_new0 (VmrMigrateTarget, n);
    g_autoptr (GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);
    VmrMigrateRequest request = { 0 };

    for (guint i = 0; i < n; i++) {
        g_autofree gchar *name = g_strdup_printf ("%s-%s-dst.img", domain, disks[i]);
        gchar *path = g_build_filename (f->dir, name, NULL);

        /* a reused raw file is at least as large as its source */
        if (step->flags & MIGRATE_REUSE) {
            g_assert_true (g_file_set_contents (path, "reused\n", -1, NULL));
            g_assert_cmpint (truncate (path, (off_t) ENGINE_DISK_SIZE), ==, 0);
        }
        g_ptr_array_add (paths, path);
        targets[i].disk = disks[i];
        targets[i].destination = path;
    }
    request.domain = domain;
    /* one disk goes as the plain form of the request */
    if (n == 1) {
        request.disk = disks[0];
        request.destination = g_ptr_array_index (paths, 0);
    } else {
        request.targets = targets;
        request.n_targets = n;
    }
    request.reuse = (step->flags & MIGRATE_REUSE) != 0;
    request.manual_pivot = (step->flags & MIGRATE_MANUAL_PIVOT) != 0;
    request.speed = step->value;
    request.speed_given = step->value != 0;
    vmr_engine_migrate_async (f->engine, &request, NULL, migrate_cb,
                              reply_data_new (f, "migrate", NULL));
}

static void
command_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ReplyData *data = user_data;
    g_autoptr (GError) error = NULL;
    VmrJob *job = vmr_engine_job_command_finish (VMR_ENGINE (source), res, &error);

    add_reply (data->f, data->label, job != NULL ? vmr_job_state_to_string (job->state) : NULL,
               error);
    g_clear_pointer (&job, vmr_job_unref);
    g_free (data);
}

static VmrBackendOutcome
outcome_from_name (const gchar *name)
{
    if (g_strcmp0 (name, "completed") == 0)
        return VMR_BACKEND_OUTCOME_COMPLETED;
    if (g_strcmp0 (name, "cancelled") == 0)
        return VMR_BACKEND_OUTCOME_CANCELLED;
    g_assert_cmpstr (name, ==, "failed");
    return VMR_BACKEND_OUTCOME_FAILED;
}

/* "web01 disk0 vmr-1, web01 disk1 skipped: already migrating" */
static gchar *
describe_plan (JsonObject *plan)
{
    JsonArray *disks = json_object_get_array_member (plan, "disks");
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint i = 0; i < json_array_get_length (disks); i++) {
        JsonObject *disk = json_array_get_object_element (disks, i);
        const gchar *skipped = json_object_get_string_member_with_default (disk, "skipped", NULL);

        g_string_append_printf (text, "%s%s %s ", i > 0 ? ", " : "",
                                json_object_get_string_member (disk, "domain"),
                                json_object_get_string_member (disk, "disk"));
        if (skipped != NULL)
            g_string_append_printf (text, "skipped: %s", skipped);
        else
            g_string_append (text, json_object_get_string_member_with_default (disk, "job", "-"));
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
evacuate_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    ReplyData *data = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) plan = vmr_engine_evacuate_finish (VMR_ENGINE (source), res, &error);
    g_autofree gchar *planned = plan != NULL ? describe_plan (plan) : NULL;

    add_reply (data->f, data->label, planned, error);
    g_free (data);
}

static void
evacuate (EngineFixture *f, const EngineStep *step)
{
    VmrEvacuateRequest request = { 0 };

    if (f->new_dir == NULL)
        f->new_dir = g_dir_make_tmp ("vmr-engine-new-XXXXXX", NULL);
    g_assert_nonnull (f->new_dir);
    request.from = f->dir;
    request.to = f->new_dir;
    request.dry_run = g_strcmp0 (step->arg, "dry-run") == 0;
    vmr_engine_evacuate_async (f->engine, &request, NULL, evacuate_cb,
                               reply_data_new (f, "evacuate", NULL));
}

/* the job records: path -> contents */
static GHashTable *
read_records (EngineFixture *f)
{
    g_autofree gchar *dir = g_build_filename (f->state_dir, "jobs", NULL);
    g_autofree gchar *names = list_files (dir);
    g_auto (GStrv) records = g_strsplit (names, " ", -1);
    GHashTable *contents = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

    for (guint i = 0; records[i] != NULL && *records[i] != '\0'; i++) {
        g_autofree gchar *path = g_build_filename (dir, records[i], NULL);
        gchar *text = NULL;

        g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
        g_hash_table_insert (contents, g_steal_pointer (&path), text);
    }
    return contents;
}

/*
 * Links (the same inodes) to the images in @from, made in @to, or put back
 * from @to where @from lost them
 */
static void
link_images (const gchar *from, const gchar *to)
{
    g_autofree gchar *names = list_files (from);
    g_auto (GStrv) files = g_strsplit (names, " ", -1);

    for (guint i = 0; files[i] != NULL && *files[i] != '\0'; i++) {
        g_autofree gchar *source = g_build_filename (from, files[i], NULL);
        g_autofree gchar *target = g_build_filename (to, files[i], NULL);

        if (!g_file_test (target, G_FILE_TEST_EXISTS))
            g_assert_cmpint (link (source, target), ==, 0);
    }
}

/* a new engine; after a crash the old one had no time to write or clean up anything */
static void
restart (EngineFixture *f, gboolean crash)
{
    g_autoptr (GHashTable) records = crash ? read_records (f) : NULL;
    g_autofree gchar *stash = crash ? g_dir_make_tmp ("vmr-engine-stash-XXXXXX", NULL) : NULL;
    GHashTableIter iter;
    gpointer backend;
    gpointer path;
    gpointer text;

    g_hash_table_iter_init (&iter, f->backends);
    while (crash && g_hash_table_iter_next (&iter, NULL, &backend))
        fake_backend_crash (backend);
    if (crash)
        link_images (f->dir, stash);
    stop_engine (f);
    if (crash) {
        g_hash_table_iter_init (&iter, records);
        while (g_hash_table_iter_next (&iter, &path, &text))
            g_assert_true (g_file_set_contents (path, text, -1, NULL));
        /* the files as they were, the same inodes: a file the daemon made stays its */
        link_images (stash, f->dir);
        remove_tree (stash);
    }
    /* the next run talks to the same domains through new connections */
    make_backends (f);
    start_engine (f);
}

/* the job a command or an event is about */
static const gchar *
step_job (const EngineStep *step)
{
    return step->job != NULL ? step->job : "vmr-1";
}

/* a user's command by the name the backend's log gives its step */
static VmrJobCommand
job_command_from_name (const gchar *name)
{
    static const struct {
        const gchar *name;
        VmrJobCommand command;
    } commands[] = {
        { "pause", VMR_JOB_COMMAND_PAUSE },
        { "resume", VMR_JOB_COMMAND_RESUME },
        { "cancel", VMR_JOB_COMMAND_CANCEL },
        { "pivot", VMR_JOB_COMMAND_PIVOT },
        { "set_speed", VMR_JOB_COMMAND_SET_SPEED },
        { "set_copy_mode_active", VMR_JOB_COMMAND_SET_COPY_MODE_ACTIVE },
    };

    for (guint i = 0; i < G_N_ELEMENTS (commands); i++) {
        if (g_str_equal (commands[i].name, name))
            return commands[i].command;
    }
    g_error ("no command is called %s", name);
}

/* someone else's file in place of @name of the images: a new inode holding @text */
static void
write_image (EngineFixture *f, const gchar *name, const gchar *text)
{
    g_autofree gchar *path = g_build_filename (f->dir, name, NULL);
    g_autofree gchar *tmp = g_strconcat (path, ".tmp", NULL);

    g_assert_true (g_file_set_contents_full (tmp, text, -1, G_FILE_SET_CONTENTS_NONE, 0600, NULL));
    g_assert_cmpint (g_rename (tmp, path), ==, 0);
}

static void
read_image (EngineFixture *f, const gchar *name, const gchar *expected)
{
    g_autofree gchar *path = g_build_filename (f->dir, name, NULL);
    g_autofree gchar *text = NULL;

    g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
    g_assert_cmpstr (text, ==, expected);
}

/* a domain @domain that does not run, with the disk vda on the image @name */
static void
define_domain (EngineFixture *f, const gchar *domain, const gchar *name)
{
    g_autoptr (GPtrArray) disks
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_engine_defined_disk_free);
    VmrEngineDefinedDisk *disk = g_new0 (VmrEngineDefinedDisk, 1);

    disk->domain = g_strdup (domain);
    disk->disk = g_strdup ("vda");
    disk->path = g_build_filename (f->dir, name, NULL);
    g_ptr_array_add (disks, disk);
    vmr_engine_set_defined_disks (f->engine, disks);
}

static void
do_step (EngineFixture *f, const EngineStep *step)
{
    FakeBackend *backend = engine_fixture_backend (f, step_domain (f, step));
    g_autoptr (GError) error = NULL;
    VmrBackendAdoption adoption = { 0 };

    switch (step->kind) {
        case STEP_MIGRATE:
            migrate (f, step);
            break;
        case STEP_COMMAND:
            vmr_engine_job_command_async (
                f->engine, step_job (step), job_command_from_name (step->arg), step->value, NULL,
                command_cb, reply_data_new (f, step->arg, step_job (step)));
            break;
        case STEP_DETACH:
            vmr_engine_detach (f->engine, step_domain (f, step), &error);
            f->pending_replies++;
            add_reply (f, "detach", NULL, error);
            break;
        case STEP_RELOAD:
            g_assert_true (g_file_set_contents (f->policy_path, step->text, -1, NULL));
            vmr_engine_reload_policy (f->engine, &error);
            f->pending_replies++;
            add_reply (f, "reload", NULL, error);
            break;
        case STEP_READY:
            fake_backend_ready (backend, step_job (step));
            break;
        case STEP_FINISHED:
            fake_backend_finish (backend, step_job (step), outcome_from_name (step->arg),
                                 step->text);
            break;
        case STEP_REPLY:
            fake_backend_set_reply (backend, step->arg, (FakeReplyMode) step->value, step->text);
            break;
        case STEP_RELEASE:
            g_assert_true (fake_backend_release (backend, step->arg, step->job));
            break;
        case STEP_FAIL:
            error = g_error_new_literal (VMR_ERROR, VMR_ERROR_GENERIC, step->text);
            g_assert_true (fake_backend_fail (backend, step->arg, step->job, error));
            break;
        case STEP_DISCONNECT:
            fake_backend_disconnect (backend, step->text != NULL ? step->text : "reset by peer");
            break;
        case STEP_REMOVE_DOMAIN:
            vmr_engine_remove_domain (f->engine, step_domain (f, step),
                                      step->text != NULL ? step->text : "the domain stopped");
            break;
        case STEP_RESTART:
        case STEP_CRASH:
            restart (f, step->kind == STEP_CRASH);
            break;
        case STEP_ADOPTION:
            adoption.outcome = (VmrBackendAdoptOutcome) step->value;
            adoption.ready = (step->flags & ADOPT_READY) != 0;
            adoption.paused = (step->flags & ADOPT_PAUSED) != 0;
            adoption.destination_in_use = (step->flags & ADOPT_IN_USE) != 0;
            adoption.speed = step->speed;
            adoption.total_bytes = ENGINE_DISK_SIZE;
            adoption.done_bytes = adoption.ready ? ENGINE_DISK_SIZE : ENGINE_DISK_SIZE / 2;
            fake_backend_set_adoption (backend, step_job (step), &adoption);
            break;
        case STEP_ATTACH:
            attach (f, step_domain (f, step));
            break;
        case STEP_EVACUATE:
            evacuate (f, step);
            break;
        case STEP_WRITE:
            write_image (f, step->arg, step->text);
            break;
        case STEP_READ:
            read_image (f, step->arg, step->text);
            break;
        case STEP_DEFINE:
            define_domain (f, step->text, step->arg);
            break;
        case STEP_END:
        default:
            g_assert_not_reached ();
    }
}

/* the backend calls of the step, every domain's, in the order of the domains */
static gchar *
take_calls (EngineFixture *f)
{
    g_autoptr (GString) calls = g_string_new (NULL);

    for (guint i = 0; i < f->domain_names->len; i++) {
        g_autofree gchar *one = fake_backend_take_log (
            engine_fixture_backend (f, g_ptr_array_index (f->domain_names, i)), FALSE);

        if (*one != '\0')
            g_string_append_printf (calls, "%s%s", calls->len > 0 ? "; " : "", one);
    }
    return g_string_free (g_steal_pointer (&calls), FALSE);
}

gboolean
engine_fixture_run_step (EngineFixture *f, guint index, const EngineStep *step)
{
    g_autofree gchar *states = NULL;
    g_autofree gchar *calls = NULL;
    g_autofree gchar *files = NULL;
    g_autofree gchar *reasons = NULL;
    gboolean ok;

    g_string_truncate (engine_warnings, 0);
    do_step (f, step);
    engine_fixture_iterate ();
    states = engine_fixture_describe_jobs (f);
    calls = take_calls (f);
    files = list_images (f);
    reasons = step->reasons != NULL ? match_reasons (f, step->reasons) : NULL;
    ok = check (f, index, "states", step->states, states, FALSE)
         && check (f, index, "changes", step->changes, f->changes->str, FALSE)
         && check (f, index, "calls", step->calls, calls, TRUE)
         && check (f, index, "replies", step->replies, f->replies->str, TRUE)
         && check (f, index, "reasons", step->reasons, reasons, FALSE)
         && check (f, index, "files", step->files, files, FALSE)
         && check (f, index, "warnings", step->warning != NULL ? step->warning : "",
                   engine_warnings->str, TRUE);
    g_string_truncate (f->changes, 0);
    g_string_truncate (f->replies, 0);
    return ok;
}

void
engine_case_run (gconstpointer data)
{
    const EngineCase *tc = data;
    EngineFixture f;

    engine_fixture_setup (&f, tc);
    for (guint i = 0; i < ENGINE_MAX_STEPS && tc->steps[i].kind != STEP_END; i++) {
        if (!engine_fixture_run_step (&f, i, &tc->steps[i]))
            break;
    }
    engine_fixture_teardown (&f);
}

void
engine_cases_add (const EngineCase *cases, guint n_cases)
{
    for (guint i = 0; i < n_cases; i++)
        g_test_add_data_func (cases[i].name, &cases[i], engine_case_run);
}
