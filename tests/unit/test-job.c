#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>

#include "job.h"
#include "vmr-json.h"

#define S(x) VMR_JOB_STATE_##x

typedef struct {
    VmrJobState from;
    VmrJobState to;
    gboolean allowed;
} TransitionCase;

static const TransitionCase transition_cases[] = {
    /* the normal path */
    { S (QUEUED), S (COPYING), TRUE },
    { S (COPYING), S (SYNCED), TRUE },
    { S (SYNCED), S (PIVOTING), TRUE },
    { S (PIVOTING), S (COMPLETED), TRUE },
    /* pause and resume, before and after READY */
    { S (COPYING), S (PAUSED), TRUE },
    { S (PAUSED), S (COPYING), TRUE },
    { S (PAUSED), S (SYNCED), TRUE },
    { S (SYNCED), S (PAUSED), TRUE },
    /* a refused pivot leaves the job in sync */
    { S (PIVOTING), S (SYNCED), TRUE },
    /* every state before completed may fail or be cancelled */
    { S (QUEUED), S (FAILED), TRUE },
    { S (QUEUED), S (CANCELLED), TRUE },
    { S (COPYING), S (FAILED), TRUE },
    { S (COPYING), S (CANCELLED), TRUE },
    { S (PAUSED), S (CANCELLED), TRUE },
    { S (SYNCED), S (CANCELLED), TRUE },
    { S (PIVOTING), S (FAILED), TRUE },
    /* the policy's states */
    { S (QUEUED), S (DELAYED), TRUE },
    { S (DELAYED), S (COPYING), TRUE },
    { S (DELAYED), S (THROTTLED), TRUE },
    { S (DELAYED), S (CANCELLED), TRUE },
    { S (QUEUED), S (THROTTLED), TRUE },
    { S (COPYING), S (THROTTLED), TRUE },
    { S (THROTTLED), S (COPYING), TRUE },
    { S (THROTTLED), S (PAUSED), TRUE },
    { S (PAUSED), S (THROTTLED), TRUE },
    { S (THROTTLED), S (SYNCED), TRUE },
    { S (THROTTLED), S (FAILED), TRUE },
    { S (DELAYED), S (PAUSED), FALSE },
    { S (DELAYED), S (SYNCED), FALSE },
    { S (DELAYED), S (QUEUED), FALSE },
    { S (SYNCED), S (THROTTLED), FALSE },
    { S (THROTTLED), S (PIVOTING), FALSE },
    /* READY never goes back */
    { S (SYNCED), S (COPYING), FALSE },
    /* no shortcuts to the end */
    { S (QUEUED), S (SYNCED), FALSE },
    { S (QUEUED), S (COMPLETED), FALSE },
    { S (COPYING), S (COMPLETED), FALSE },
    { S (SYNCED), S (COMPLETED), FALSE },
    { S (COPYING), S (PIVOTING), FALSE },
    { S (PAUSED), S (PIVOTING), FALSE },
    /* final states are final */
    { S (COMPLETED), S (FAILED), FALSE },
    { S (COMPLETED), S (COPYING), FALSE },
    { S (FAILED), S (COPYING), FALSE },
    { S (FAILED), S (CANCELLED), FALSE },
    { S (CANCELLED), S (QUEUED), FALSE },
    /* staying put is not a transition */
    { S (COPYING), S (COPYING), FALSE },
    { S (PAUSED), S (PAUSED), FALSE },
};

static void
test_job_transitions (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (transition_cases); i++) {
        const TransitionCase *c = &transition_cases[i];

        g_test_message ("%s -> %s", vmr_job_state_to_string (c->from),
                        vmr_job_state_to_string (c->to));
        g_assert_cmpint (vmr_job_state_can_transition (c->from, c->to), ==, c->allowed);
    }
}

static void
test_job_state_names (void)
{
    for (guint state = 0; state < VMR_JOB_STATE_LAST; state++) {
        const gchar *name = vmr_job_state_to_string (state);

        g_assert_nonnull (name);
        g_assert_cmpint (vmr_job_state_from_string (name), ==, state);
    }
    g_assert_cmpint (vmr_job_state_from_string ("bogus"), ==, VMR_JOB_STATE_LAST);
    g_assert_true (vmr_job_state_is_final (S (COMPLETED)));
    g_assert_true (vmr_job_state_is_final (S (FAILED)));
    g_assert_true (vmr_job_state_is_final (S (CANCELLED)));
    g_assert_false (vmr_job_state_is_final (S (SYNCED)));
}

static void
test_job_set_state_history (void)
{
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-1", "web01", "disk0", 1000);

    g_assert_cmpint (job->state, ==, S (QUEUED));
    g_assert_true (vmr_job_set_state (job, S (COPYING), NULL, 2000));
    /* a refused transition changes nothing */
    g_assert_false (vmr_job_set_state (job, S (COMPLETED), NULL, 3000));
    g_assert_cmpint (job->state, ==, S (COPYING));
    g_assert_cmpint (job->updated_us, ==, 2000);
    /* only an ended job keeps a reason */
    g_assert_true (vmr_job_set_state (job, S (THROTTLED), "guest busy", 3500));
    g_assert_null (job->reason);
    g_assert_true (vmr_job_set_state (job, S (FAILED), "disk full", 4000));
    g_assert_cmpstr (job->reason, ==, "disk full");
    g_assert_cmpuint (job->history->len, ==, 4);
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 3).state, ==, S (FAILED));
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 3).time_us, ==, 4000);
}

static void
test_job_progress (void)
{
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-2", "web01", "disk0", 0);
    g_autoptr (JsonObject) obj = NULL;
    JsonObject *progress;

    vmr_job_set_state (job, S (COPYING), NULL, 1);
    vmr_job_update_progress (job, 1000, 0, 1 * G_USEC_PER_SEC);
    g_assert_cmpfloat (job->rate, ==, 0);
    vmr_job_update_progress (job, 1000, 100, 2 * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (job->rate, 100.0, 0.001);
    vmr_job_update_progress (job, 1000, 400, 3 * G_USEC_PER_SEC);
    /* smoothed: half the old rate and half the new sample */
    g_assert_cmpfloat_with_epsilon (job->rate, 200.0, 0.001);
    g_assert_cmpfloat (job->dirty_rate, ==, 0);

    obj = vmr_job_to_json (job);
    progress = vmr_json_get_object (obj, "progress");
    g_assert_cmpint (vmr_json_int_or (progress, "total", -1), ==, 1000);
    g_assert_cmpint (vmr_json_int_or (progress, "done", -1), ==, 400);
    g_assert_cmpint (vmr_json_int_or (progress, "backlog", -1), ==, 600);
    g_assert_cmpfloat_with_epsilon (vmr_json_double_or (progress, "eta", -1), 3.0, 0.001);
    g_assert_cmpstr (vmr_json_get_string (obj, "state"), ==, "copying");
    g_assert_cmpint (vmr_json_int_or (progress, "dirty-rate", -1), ==, 0);
}

/* a mirror still counting its disk reports len 0: the disk's size known at the start stays */
static void
test_job_progress_counting (void)
{
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-3", "web01", "disk0", 0);
    g_autoptr (JsonObject) obj = NULL;
    JsonObject *progress;

    vmr_job_set_state (job, S (COPYING), NULL, 1);
    vmr_job_update_progress (job, 1000, 0, 1 * G_USEC_PER_SEC);
    vmr_job_update_progress (job, 0, 0, 2 * G_USEC_PER_SEC);
    obj = vmr_job_to_json (job);
    progress = vmr_json_get_object (obj, "progress");
    g_assert_cmpint (vmr_json_int_or (progress, "total", -1), ==, 1000);
    g_assert_cmpint (vmr_json_int_or (progress, "backlog", -1), ==, 1000);
    g_assert_cmpfloat (job->dirty_rate, ==, 0);
}

/* the growth of QEMU's len between the readings at which it grew: what the guest dirties */
static void
test_job_dirty_rate (void)
{
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-2", "web01", "disk0", 0);
    const guint64 disk = G_GUINT64_CONSTANT (1) << 30, mib = 1 << 20;

    vmr_job_set_state (job, S (COPYING), NULL, 1);
    /* a mirror still counting its disk reports len 0: its first len is no guest's writes */
    vmr_job_update_progress (job, 0, 0, 1 * G_USEC_PER_SEC);
    vmr_job_update_progress (job, disk, 0, 2 * G_USEC_PER_SEC);
    g_assert_cmpfloat (job->dirty_rate, ==, 0);
    /* 10 MiB more in a second */
    vmr_job_update_progress (job, disk + 10 * mib, 100 * mib, 3 * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (job->dirty_rate, 10.0 * mib, 1);
    /* a capped mirror between its rounds: len stands still, then catches up */
    vmr_job_update_progress (job, disk + 10 * mib, 100 * mib, 4 * G_USEC_PER_SEC);
    vmr_job_update_progress (job, disk + 10 * mib, 100 * mib, 5 * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (job->dirty_rate, 10.0 * mib, 1);
    vmr_job_update_progress (job, disk + 40 * mib, 200 * mib, 6 * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (job->dirty_rate, 10.0 * mib, 1);
    /* over the last 10 s: 40 MiB from 6 s to 16 s */
    vmr_job_update_progress (job, disk + 80 * mib, 300 * mib, 16 * G_USEC_PER_SEC);
    vmr_job_update_progress (job, disk + 90 * mib, 300 * mib, 17 * G_USEC_PER_SEC);
    g_assert_cmpfloat_with_epsilon (job->dirty_rate, 50.0 * mib / 11, 1);
    /* no growth for three windows: the guest dirties nothing any more */
    vmr_job_update_progress (job, disk + 90 * mib, 400 * mib, 40 * G_USEC_PER_SEC);
    g_assert_cmpfloat (job->dirty_rate, >, 0);
    vmr_job_update_progress (job, disk + 90 * mib, 400 * mib, 48 * G_USEC_PER_SEC);
    g_assert_cmpfloat (job->dirty_rate, ==, 0);
    /* a len that went down is a new count, no rate */
    vmr_job_update_progress (job, disk + 100 * mib, 400 * mib, 49 * G_USEC_PER_SEC);
    vmr_job_update_progress (job, 1 * mib, 0, 50 * G_USEC_PER_SEC);
    g_assert_cmpfloat (job->dirty_rate, ==, 0);
}

static void
test_job_save (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-job-XXXXXX", NULL);
    g_autoptr (VmrJob) job = vmr_job_new ("vmr-41", "web01", "disk0", 5);
    g_autoptr (GError) error = NULL;
    g_autofree gchar *path = g_build_filename (dir, "jobs", "vmr-41.json", NULL);
    g_autofree gchar *text = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    JsonObject *obj;

    g_assert_nonnull (dir);
    g_assert_cmpuint (vmr_job_scan_last_number (dir), ==, 0);
    job->dest = vmr_destination_new ("/new/web01.raw", "raw", TRUE, &error);
    g_assert_true (vmr_job_save (job, dir, &error));
    g_assert_no_error (error);
    g_assert_true (vmr_job_set_state (job, S (COPYING), NULL, 6));
    g_assert_true (vmr_job_save (job, dir, &error));

    g_assert_true (g_file_get_contents (path, &text, NULL, &error));
    g_assert_true (json_parser_load_from_data (parser, text, -1, &error));
    obj = vmr_json_node_object (json_parser_get_root (parser));
    g_assert_cmpstr (vmr_json_get_string (obj, "state"), ==, "copying");
    g_assert_cmpstr (vmr_json_get_string (obj, "destination"), ==, "/new/web01.raw");
    g_assert_cmpstr (vmr_json_get_string (obj, "format"), ==, "raw");
    g_assert_true (vmr_json_bool_or (obj, "created-destination", FALSE));
    g_assert_cmpuint (vmr_job_scan_last_number (dir), ==, 41);

    g_assert_cmpint (g_unlink (path), ==, 0);
    g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);
    g_assert_cmpint (g_rmdir (jobs_dir), ==, 0);
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* @running, a paused copy in sync with every member a record keeps set */
static void
fill_running_job (VmrJob *running)
{
    g_autoptr (GError) error = NULL;

    running->source = g_strdup ("/old/web01.raw");
    running->source_format = g_strdup ("raw");
    running->source_node = g_strdup ("drive0");
    running->source_file_node = g_strdup ("file0");
    running->dest = vmr_destination_new ("/new/web01.qcow2", "qcow2", TRUE, &error);
    g_assert_no_error (error);
    running->manual_pivot = TRUE;
    running->group = g_strdup ("vmr-11");
    running->base_speed = 1048576;
    running->speed = 65536;
    running->speed_from_user = TRUE;
    running->user_paused = TRUE;
    running->ready = TRUE;
    running->total_bytes = 1000;
    running->done_bytes = 400;
    running->converged_by = "speed";
    running->converged_us = 5;
    running->convergence_reason = g_strdup ("backlog 600 B not shrinking over 1m");
    g_assert_true (vmr_job_set_state (running, S (COPYING), NULL, 6));
    g_assert_true (vmr_job_set_state (running, S (SYNCED), NULL, 7));
    g_assert_true (vmr_job_set_state (running, S (PAUSED), NULL, 8));
}

/* @a as fill_running_job () left it, read back from its record */
static void
assert_running_job_loaded (VmrJob *a)
{
    g_assert_cmpstr (a->id, ==, "vmr-12");
    g_assert_cmpstr (a->domain, ==, "web01");
    g_assert_cmpstr (a->disk, ==, "vda");
    g_assert_cmpstr (a->source, ==, "/old/web01.raw");
    g_assert_cmpstr (a->source_node, ==, "drive0");
    g_assert_cmpstr (a->source_file_node, ==, "file0");
    g_assert_cmpint (a->dest->kind, ==, VMR_DESTINATION_FILE);
    g_assert_cmpstr (a->dest->location, ==, "/new/web01.qcow2");
    g_assert_cmpstr (a->dest->format, ==, "qcow2");
    g_assert_true (a->dest->created);
    g_assert_cmpstr (a->dest->admission_key, ==, "/new");
    g_assert_null (a->nbd);
    g_assert_true (a->manual_pivot);
    g_assert_cmpstr (a->group, ==, "vmr-11");
    g_assert_cmpuint (a->base_speed, ==, 1048576);
    g_assert_cmpuint (a->speed, ==, 65536);
    g_assert_true (a->speed_from_user);
    g_assert_true (a->user_paused);
    g_assert_true (a->ready);
    g_assert_cmpuint (a->total_bytes, ==, 1000);
    g_assert_cmpuint (a->done_bytes, ==, 400);
    /* a copy set to full speed to converge stays so after a restart */
    g_assert_cmpstr (a->converged_by, ==, "speed");
    g_assert_cmpint (a->converged_us, ==, 5);
    g_assert_cmpstr (a->convergence_reason, ==, "backlog 600 B not shrinking over 1m");
    g_assert_true (vmr_job_converges_at_full_speed (a));
    g_assert_cmpint (a->state, ==, S (PAUSED));
    g_assert_cmpuint (a->history->len, ==, 4);
    g_assert_cmpint (g_array_index (a->history, VmrJobTransition, 3).time_us, ==, 8);
}

/* a saved job comes back as it was; ended jobs and broken records do not */
static void
test_job_load_unfinished (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-job-XXXXXX", NULL);
    g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);
    g_autofree gchar *broken = g_build_filename (jobs_dir, "vmr-9.json", NULL);
    g_autoptr (VmrJob) running = vmr_job_new ("vmr-12", "web01", "vda", 5);
    g_autoptr (VmrJob) queued = vmr_job_new ("vmr-3", "db01", "vdb", 4);
    g_autoptr (VmrJob) ended = vmr_job_new ("vmr-7", "web01", "vdb", 3);
    g_autoptr (GPtrArray) loaded = NULL;
    g_autoptr (GError) error = NULL;
    VmrJob *a;
    VmrJob *b;
    const VmrDestinationNbdOptions nbd_options = { "/etc/pki/vmr", 12 };
    const VmrNbdExportFacts facts = { 1 << 20, TRUE, TRUE, TRUE, FALSE, TRUE, TRUE, 65536 };

    fill_running_job (running);
    /* an NBD export, with its options and what its preflight found */
    queued->dest
        = vmr_destination_new_full ("nbds://store/db01", NULL, FALSE, &nbd_options, &error);
    queued->nbd = g_memdup2 (&facts, sizeof facts);
    ended->dest = vmr_destination_new ("/new/web01-b.raw", "raw", TRUE, &error);
    g_assert_true (vmr_job_set_state (ended, S (FAILED), "no space", 9));
    g_assert_true (vmr_job_save (running, dir, &error));
    g_assert_true (vmr_job_save (queued, dir, &error));
    g_assert_true (vmr_job_save (ended, dir, &error));
    g_assert_true (g_file_set_contents (broken, "{\"id\": ", -1, &error));

    g_test_expect_message ("vmr-daemon", G_LOG_LEVEL_WARNING,
                           "cannot read job record *vmr-9.json*");
    loaded = vmr_job_load_records (dir);
    g_test_assert_expected_messages ();
    g_assert_cmpuint (loaded->len, ==, 3);
    /* by number, not by name: vmr-3 before vmr-7 before vmr-12 */
    b = g_ptr_array_index (loaded, 0);
    g_assert_cmpstr (((VmrJob *) g_ptr_array_index (loaded, 1))->id, ==, "vmr-7");
    g_assert_cmpint (((VmrJob *) g_ptr_array_index (loaded, 1))->state, ==, S (FAILED));
    a = g_ptr_array_index (loaded, 2);
    g_assert_cmpstr (b->id, ==, "vmr-3");
    g_assert_cmpint (b->state, ==, S (QUEUED));
    g_assert_true (b->orphaned);
    g_assert_cmpstr (b->dest->format, ==, "raw");
    g_assert_false (b->dest->created);
    g_assert_cmpint (b->dest->kind, ==, VMR_DESTINATION_NBD);
    g_assert_cmpstr (b->dest->location, ==, "nbds://store:10809/db01");
    g_assert_cmpstr (b->dest->tls_creds, ==, "/etc/pki/vmr");
    g_assert_cmpuint (b->dest->reconnect_delay_s, ==, 12);
    g_assert_nonnull (b->nbd);
    g_assert_cmpmem (b->nbd, sizeof *b->nbd, &facts, sizeof facts);
    assert_running_job_loaded (a);
    g_assert_null (b->converged_by);
    g_assert_true (a->orphaned);
    g_assert_cmpuint (vmr_job_scan_last_number (dir), ==, 12);

    {
        g_autoptr (GDir) d = g_dir_open (jobs_dir, 0, NULL);
        const gchar *name;

        while ((name = g_dir_read_name (d)) != NULL) {
            g_autofree gchar *path = g_build_filename (jobs_dir, name, NULL);

            g_assert_cmpint (g_unlink (path), ==, 0);
        }
    }
    g_assert_cmpint (g_rmdir (jobs_dir), ==, 0);
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* records as earlier versions wrote them: the destination's members as they were */
typedef struct {
    const gchar *members; /* of the record, besides id, domain, disk and state */
    const gchar *location;
    const gchar *format;
    gboolean created;
} RecordCase;

static const RecordCase record_cases[] = {
    { "\"destination\": \"/new/a.qcow2\", \"format\": \"qcow2\", \"created-destination\": true",
      "/new/a.qcow2", "qcow2", TRUE },
    /* a record without a format is raw */
    { "\"destination\": \"/new/b.raw\"", "/new/b.raw", "raw", FALSE },
    /* one naming no usable destination is not loaded */
    { "\"destination\": \"new/c.raw\"", NULL, NULL, FALSE },
};

static void
test_job_load_record (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (record_cases); i++) {
        const RecordCase *c = &record_cases[i];
        g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-job-XXXXXX", NULL);
        g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);
        g_autofree gchar *path = g_build_filename (jobs_dir, "vmr-5.json", NULL);
        g_autofree gchar *text = g_strdup_printf (
            "{\"id\": \"vmr-5\", \"domain\": \"web01\", \"disk\": \"vda\", %s, \"state\": "
            "\"copying\"}",
            c->members);
        g_autoptr (GPtrArray) loaded = NULL;
        g_autoptr (JsonObject) obj = NULL;
        VmrJob *job;

        g_test_message ("record: %s", text);
        g_assert_cmpint (g_mkdir (jobs_dir, 0700), ==, 0);
        g_assert_true (g_file_set_contents (path, text, -1, NULL));
        if (c->location == NULL)
            g_test_expect_message ("vmr-daemon", G_LOG_LEVEL_WARNING,
                                   "cannot read job record *not an absolute path*");
        loaded = vmr_job_load_records (dir);
        g_test_assert_expected_messages ();
        g_assert_cmpuint (loaded->len, ==, c->location != NULL ? 1 : 0);
        if (c->location != NULL) {
            job = g_ptr_array_index (loaded, 0);
            g_assert_cmpstr (job->dest->location, ==, c->location);
            g_assert_cmpstr (job->dest->format, ==, c->format);
            g_assert_cmpint (job->dest->created, ==, c->created);
            /* and the job object names it as before */
            obj = vmr_job_to_json (job);
            g_assert_cmpstr (vmr_json_get_string (obj, "destination"), ==, c->location);
            g_assert_cmpstr (vmr_json_get_string (obj, "format"), ==, c->format);
            g_assert_cmpint (vmr_json_bool_or (obj, "created-destination", !c->created), ==,
                             c->created);
        }
        g_assert_cmpint (g_unlink (path), ==, 0);
        g_assert_cmpint (g_rmdir (jobs_dir), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/job/transitions", test_job_transitions);
    g_test_add_func ("/job/state-names", test_job_state_names);
    g_test_add_func ("/job/set-state-history", test_job_set_state_history);
    g_test_add_func ("/job/progress", test_job_progress);
    g_test_add_func ("/job/progress-counting", test_job_progress_counting);
    g_test_add_func ("/job/dirty-rate", test_job_dirty_rate);
    g_test_add_func ("/job/save", test_job_save);
    g_test_add_func ("/job/load-unfinished", test_job_load_unfinished);
    g_test_add_func ("/job/load-record", test_job_load_record);
    return g_test_run ();
}
