#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>

#include "job-table.h"

#define S(x) VMR_JOB_STATE_##x

typedef struct {
    gchar *dir;
    VmrJobTable *table;
    GString *log; /* what the observers and the waiters saw, in order */
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
    g_autoptr (GError) error = NULL;

    f->dir = g_dir_make_tmp ("vmr-job-table-XXXXXX", &error);
    g_assert_no_error (error);
    f->table = vmr_job_table_new (f->dir);
    f->log = g_string_new (NULL);
}

static void
remove_tree (const gchar *path)
{
    g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
        g_autofree gchar *child = g_build_filename (path, name, NULL);

        if (g_file_test (child, G_FILE_TEST_IS_DIR))
            remove_tree (child);
        else
            g_unlink (child);
    }
    g_rmdir (path);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
    g_clear_object (&f->table);
    remove_tree (f->dir);
    g_free (f->dir);
    g_string_free (f->log, TRUE);
}

static VmrJob *
add_job (Fixture *f, const gchar *domain, const gchar *disk, const gchar *destination)
{
    g_autofree gchar *id = vmr_job_table_next_id (f->table);
    VmrJob *job = vmr_job_new (id, domain, disk, g_get_real_time ());

    job->dest = vmr_destination_new (destination, "raw", FALSE, NULL);
    g_assert_nonnull (job->dest);
    vmr_job_table_add (f->table, job);
    vmr_job_unref (job);
    return vmr_job_table_lookup (f->table, id);
}

static gboolean
record_exists (Fixture *f, const gchar *id)
{
    g_autofree gchar *name = g_strconcat (id, ".json", NULL);
    g_autofree gchar *path = g_build_filename (f->dir, "jobs", name, NULL);

    return g_file_test (path, G_FILE_TEST_EXISTS);
}

static void
changed_cb (VmrJobTable *table, gpointer job_ptr, gint previous, gpointer user_data)
{
    Fixture *f = user_data;
    VmrJob *job = job_ptr;

    g_string_append_printf (f->log, "%s:%s->%s;", job->id,
                            vmr_job_state_to_string ((VmrJobState) previous),
                            vmr_job_state_to_string (job->state));
}

static void
waiter_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Fixture *f = user_data;
    g_autoptr (VmrJob) job = g_task_propagate_pointer (G_TASK (res), NULL);

    g_string_append_printf (f->log, "waiter %s %s;", job->id, vmr_job_state_to_string (job->state));
}

static void
iterate_until_idle (void)
{
    while (g_main_context_iteration (NULL, FALSE))
        ;
}

/* the active list, the lookups by disk and destination, the order of the events */
static void
test_job_table_states (Fixture *f, gconstpointer data)
{
    VmrJob *a, *b;
    g_autoptr (GPtrArray) all = NULL;

    g_signal_connect (f->table, "job-changed", G_CALLBACK (changed_cb), f);
    a = add_job (f, "web01", "vda", "/new/a.raw");
    b = add_job (f, "web01", "vdb", "/new/b.raw");
    g_assert_cmpstr (a->id, ==, "vmr-1");
    g_assert_cmpstr (b->id, ==, "vmr-2");
    g_assert_true (record_exists (f, "vmr-1"));
    g_assert_cmpuint (vmr_job_table_get_active (f->table)->len, ==, 2);
    g_assert_true (vmr_job_table_active_for_disk (f->table, "web01", "vdb") == b);
    g_assert_null (vmr_job_table_active_for_disk (f->table, "web02", "vdb"));
    g_assert_true (vmr_job_table_active_for_destination (f->table, "/new/a.raw") == a);

    /* a transition the state machine refuses changes nothing and tells nobody */
    g_assert_false (vmr_job_table_set_state (f->table, a, S (COMPLETED), NULL));
    g_assert_true (vmr_job_table_set_state (f->table, a, S (COPYING), NULL));
    vmr_job_table_add_waiter (f->table, a, g_task_new (NULL, NULL, waiter_cb, f));
    g_assert_true (vmr_job_table_set_state (f->table, a, S (FAILED), "no space"));
    iterate_until_idle ();
    /* the observers hear of the end before the waiters complete */
    g_assert_cmpstr (f->log->str, ==,
                     "vmr-1:queued->queued;vmr-2:queued->queued;vmr-1:queued->copying;"
                     "vmr-1:copying->failed;waiter vmr-1 failed;");
    g_assert_cmpuint (vmr_job_table_get_active (f->table)->len, ==, 1);
    g_assert_true (g_ptr_array_index (vmr_job_table_get_active (f->table), 0) == b);
    g_assert_null (vmr_job_table_active_for_destination (f->table, "/new/a.raw"));
    /* a finished job is still listed and looked up */
    all = vmr_job_table_list (f->table);
    g_assert_cmpuint (all->len, ==, 2);
    g_assert_true (g_ptr_array_index (all, 0) == a);
    g_assert_true (vmr_job_table_lookup (f->table, "vmr-1") == a);
    /* a waiter on an ended job completes at once */
    g_string_truncate (f->log, 0);
    vmr_job_table_add_waiter (f->table, a, g_task_new (NULL, NULL, waiter_cb, f));
    iterate_until_idle ();
    g_assert_cmpstr (f->log->str, ==, "waiter vmr-1 failed;");
}

/* at most N finished jobs: the earliest ended go, from memory and from disk */
static void
test_job_table_retention_count (Fixture *f, gconstpointer data)
{
    const gchar *ids[4];

    for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
        ids[i] = add_job (f, "web01", "vda", "/new/a.raw")->id;
    vmr_job_table_set_retention (f->table, 0, 2);
    /* ended in the order 3, 1, 2: 3 goes first */
    g_assert_true (vmr_job_table_set_state (f->table, vmr_job_table_lookup (f->table, ids[2]),
                                            S (CANCELLED), "test"));
    g_usleep (1000);
    g_assert_true (vmr_job_table_set_state (f->table, vmr_job_table_lookup (f->table, ids[0]),
                                            S (CANCELLED), "test"));
    g_usleep (1000);
    g_assert_true (record_exists (f, "vmr-3"));
    g_assert_true (vmr_job_table_set_state (f->table, vmr_job_table_lookup (f->table, "vmr-2"),
                                            S (FAILED), "test"));
    g_assert_null (vmr_job_table_lookup (f->table, "vmr-3"));
    g_assert_false (record_exists (f, "vmr-3"));
    g_assert_nonnull (vmr_job_table_lookup (f->table, "vmr-1"));
    g_assert_nonnull (vmr_job_table_lookup (f->table, "vmr-2"));
    g_assert_nonnull (vmr_job_table_lookup (f->table, "vmr-4"));
    g_assert_true (record_exists (f, "vmr-1"));
    /* active jobs are never dropped */
    g_assert_cmpuint (vmr_job_table_get_active (f->table)->len, ==, 1);
    /* a lower count applies at once */
    vmr_job_table_set_retention (f->table, 0, 1);
    g_assert_null (vmr_job_table_lookup (f->table, "vmr-1"));
    g_assert_false (record_exists (f, "vmr-1"));
    g_assert_nonnull (vmr_job_table_lookup (f->table, "vmr-2"));
}

/* kept for a time: a finished job goes once that time has passed, by itself */
static void
test_job_table_retention_time (Fixture *f, gconstpointer data)
{
    VmrJob *a = add_job (f, "web01", "vda", "/new/a.raw");
    g_autoptr (GPtrArray) list = NULL;
    gint64 deadline;

    vmr_job_table_set_retention (f->table, 200 * 1000, 0);
    g_assert_true (vmr_job_table_set_state (f->table, a, S (CANCELLED), "test"));
    g_assert_nonnull (vmr_job_table_lookup (f->table, "vmr-1"));
    deadline = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;
    while (vmr_job_table_lookup (f->table, "vmr-1") != NULL && g_get_monotonic_time () < deadline)
        g_main_context_iteration (NULL, TRUE);
    g_assert_null (vmr_job_table_lookup (f->table, "vmr-1"));
    g_assert_false (record_exists (f, "vmr-1"));
    list = vmr_job_table_list (f->table);
    g_assert_cmpuint (list->len, ==, 0);
}

/* an earlier run's records: unfinished ones come back orphaned, finished ones
 * obey the rules on disk; job numbers never come back, even once dropped */
static void
test_job_table_restart (Fixture *f, gconstpointer data)
{
    g_autoptr (GPtrArray) loaded = NULL;
    g_autoptr (GPtrArray) list = NULL;
    g_autofree gchar *next = NULL;

    add_job (f, "web01", "vda", "/new/a.raw");
    add_job (f, "web01", "vdb", "/new/b.raw");
    add_job (f, "web01", "vdc", "/new/c.raw");
    vmr_job_table_set_state (f->table, vmr_job_table_lookup (f->table, "vmr-1"), S (FAILED), "x");
    g_usleep (1000);
    vmr_job_table_set_state (f->table, vmr_job_table_lookup (f->table, "vmr-3"), S (FAILED), "x");
    g_clear_object (&f->table);

    f->table = vmr_job_table_new (f->dir);
    vmr_job_table_set_retention (f->table, 0, 1);
    loaded = vmr_job_table_load_unfinished (f->table);
    g_assert_cmpuint (loaded->len, ==, 1);
    g_assert_cmpstr (((VmrJob *) g_ptr_array_index (loaded, 0))->id, ==, "vmr-2");
    g_assert_true (((VmrJob *) g_ptr_array_index (loaded, 0))->orphaned);
    /* finished records are not listed; the earliest ended is over the count */
    list = vmr_job_table_list (f->table);
    g_assert_cmpuint (list->len, ==, 1);
    g_assert_false (record_exists (f, "vmr-1"));
    g_assert_true (record_exists (f, "vmr-3"));
    /* drop vmr-3 too: vmr-2 ends and is the one kept */
    vmr_job_table_set_state (f->table, g_ptr_array_index (loaded, 0), S (CANCELLED), "x");
    g_assert_false (record_exists (f, "vmr-3"));
    g_clear_object (&f->table);
    f->table = vmr_job_table_new (f->dir);
    next = vmr_job_table_next_id (f->table);
    g_assert_cmpstr (next, ==, "vmr-4");
}

/* a finished job of an earlier run is read from its record for a report, and not listed */
static void
test_job_table_read (Fixture *f, gconstpointer data)
{
    VmrJob *job = add_job (f, "web01", "vda", "/new/a.raw");
    VmrJobSeriesPoint point = { .time_us = 5, .processed = 42, .state = (gchar *) "copying" };
    g_autoptr (GPtrArray) loaded = NULL;
    g_autoptr (GPtrArray) list = NULL;
    g_autoptr (VmrJob) read = NULL;
    g_autoptr (VmrJob) active = NULL;

    vmr_job_series_append (job->series, &point);
    vmr_job_table_set_state (f->table, job, S (FAILED), "x");
    g_clear_object (&f->table);

    f->table = vmr_job_table_new (f->dir);
    loaded = vmr_job_table_load_unfinished (f->table);
    g_assert_cmpuint (loaded->len, ==, 0);
    read = vmr_job_table_read (f->table, "vmr-1");
    g_assert_nonnull (read);
    g_assert_false (read->orphaned);
    g_assert_cmpuint (vmr_job_series_get_length (read->series), ==, 1);
    g_assert_cmpuint (vmr_job_series_get (read->series, 0)->processed, ==, 42);
    list = vmr_job_table_list (f->table);
    g_assert_cmpuint (list->len, ==, 0);
    g_assert_null (vmr_job_table_read (f->table, "vmr-7"));
    g_assert_null (vmr_job_table_read (f->table, "../jobs/vmr-1"));
    /* a job of this run: the table's own */
    active = vmr_job_table_read (f->table, add_job (f, "web01", "vdb", "/new/b.raw")->id);
    g_assert_true (active == vmr_job_table_lookup (f->table, "vmr-2"));
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add ("/job-table/states", Fixture, NULL, fixture_set_up, test_job_table_states,
                fixture_tear_down);
    g_test_add ("/job-table/retention-count", Fixture, NULL, fixture_set_up,
                test_job_table_retention_count, fixture_tear_down);
    g_test_add ("/job-table/retention-time", Fixture, NULL, fixture_set_up,
                test_job_table_retention_time, fixture_tear_down);
    g_test_add ("/job-table/restart", Fixture, NULL, fixture_set_up, test_job_table_restart,
                fixture_tear_down);
    g_test_add ("/job-table/read", Fixture, NULL, fixture_set_up, test_job_table_read,
                fixture_tear_down);
    return g_test_run ();
}
