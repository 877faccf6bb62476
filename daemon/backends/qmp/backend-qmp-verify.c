#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The QMP backend: verifying a copy after its pivot. At the pivot an
 * enabled dirty bitmap on the destination node starts recording the
 * guest's writes. To verify, the old source image is opened again
 * read-only, and QEMU's own NBD server exports it and the destination on a
 * private UNIX socket; the comparer reads both in a thread. QEMU exports
 * only a frozen bitmap read-only, so each time the comparer asks, a
 * disabled copy of the pivot's bitmap is made and exported on its own.
 * Whatever the verification set up is removed again on every path; the
 * pivot's bitmap stays, so that the copy can be verified again later.
 */

#include "backend-qmp-private.h"
#include "job-log.h"

#include <glib/gstdio.h>

#include "nbd-compare.h"
#include "qmp-client.h"
#include "qmp-export.h"
#include "qmp-parse.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* how often the figures of a running comparison reach the job */
#define PROGRESS_INTERVAL_MS 250
/* how long QEMU may take to drop the exports once their clients are gone */
#define EXPORTS_GONE_TRIES   50
#define EXPORTS_GONE_WAIT_MS 20

gchar *
vmr_backend_qmp_pivot_bitmap (const gchar *job_id)
{
    return g_strdup_printf ("%s-pivot", job_id);
}

void
vmr_backend_qmp_mark_pivot (VmrBackendQmp *self, VmrJob *job)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autofree gchar *node = g_strdup_printf ("%s-dst", job->id);
    g_autofree gchar *bitmap = vmr_backend_qmp_pivot_bitmap (job->id);

    /* sent before job-complete: from the switch on, every guest write is in it */
    json_object_set_string_member (args, "node", node);
    json_object_set_string_member (args, "name", bitmap);
    vmr_qmp_client_execute_async (
        self->client, "block-dirty-bitmap-add", args, 0, NULL, vmr_backend_qmp_best_effort_cb,
        g_strdup_printf ("recording the writes after the pivot of %s", job->id));
}

/* the setup, in order; what is done is undone in teardown */
typedef enum {
    SETUP_SERVER,     /* nbd-server-start */
    SETUP_OLD_NODE,   /* blockdev-add of the old source, read-only */
    SETUP_OLD_EXPORT, /* block-export-add of it */
    SETUP_NEW_EXPORT, /* block-export-add of the destination */
    SETUP_LAST,
} SetupStep;

/* the comparison's thread waits for a snapshot of the bitmap made on the main loop */
typedef struct {
    GMutex lock;
    GCond cond;
    gboolean done;
    guint round;
    gchar *export_name;
    gchar *context;
    GError *error;
} SnapshotRequest;

typedef struct {
    VmrBackendQmp *self;
    GTask *task;
    VmrJob *job;
    VmrVerification *verification; /* the caller's */
    gchar *socket;
    gchar *old_node;
    gchar *old_export;
    gchar *new_export;
    gchar *dest_node;
    gchar *bitmap;               /* the pivot's, enabled */
    SetupStep step;              /* the next one */
    gboolean done[SETUP_LAST];   /* what is set up */
    GPtrArray *snapshot_exports; /* of gchar *, the snapshots' exports */
    GPtrArray *snapshot_bitmaps; /* of gchar *, the disabled copies */
    SnapshotRequest *snapshot;   /* the request on its way, NULL when none */
    VmrNbdCompare *compare;
    guint progress_source;
    guint export_tries;
    GError *error; /* the first failure */
} VerifyRun;

static void run_next (VmrBackendQmp *self);

static void
verify_run_free (VerifyRun *run)
{
    g_clear_handle_id (&run->progress_source, g_source_remove);
    g_object_unref (run->self);
    g_clear_object (&run->task);
    vmr_job_unref (run->job);
    g_free (run->socket);
    g_free (run->old_node);
    g_free (run->old_export);
    g_free (run->new_export);
    g_free (run->dest_node);
    g_free (run->bitmap);
    g_ptr_array_unref (run->snapshot_exports);
    g_ptr_array_unref (run->snapshot_bitmaps);
    g_clear_pointer (&run->compare, vmr_nbd_compare_free);
    g_clear_error (&run->error);
    g_free (run);
}

static void
copy_figures (VerifyRun *run)
{
    if (run->compare != NULL)
        vmr_verification_take_figures (run->verification, run->compare);
}

/* ---- the end: every export, then the bitmaps, the old node and the server ---- */

static void
finish_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    VmrBackendQmp *self = run->self;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    if (source != NULL) {
        reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
        if (reply == NULL)
            vmr_job_message (run->job,
                             "job %s: stopping QEMU's NBD server after the verification: %s",
                             run->job->id, error->message);
    }
    g_unlink (run->socket);
    if (run->error != NULL)
        g_task_return_error (run->task, g_steal_pointer (&run->error));
    else
        g_task_return_boolean (run->task, TRUE);
    self->verify_running = FALSE;
    verify_run_free (run);
    run_next (self);
}

/* QMP runs commands in order: only the last one's reply is waited for */
static void
release_the_rest (VerifyRun *run)
{
    VmrQmpClient *client = run->self->client;

    for (guint i = 0; i < run->snapshot_bitmaps->len; i++) {
        g_autoptr (JsonObject) args = json_object_new ();

        json_object_set_string_member (args, "node", run->dest_node);
        json_object_set_string_member (args, "name", g_ptr_array_index (run->snapshot_bitmaps, i));
        vmr_qmp_client_execute_async (
            client, "block-dirty-bitmap-remove", args, 0, NULL, vmr_backend_qmp_best_effort_cb,
            g_strdup_printf ("removing the bitmap %s",
                             (gchar *) g_ptr_array_index (run->snapshot_bitmaps, i)));
    }
    if (run->done[SETUP_OLD_NODE]) {
        g_autoptr (JsonObject) args = vmr_backend_qmp_args_device ("node-name", run->old_node);

        vmr_qmp_client_execute_async (client, "blockdev-del", args, 0, NULL,
                                      vmr_backend_qmp_best_effort_cb,
                                      g_strdup_printf ("closing %s", run->job->source));
    }
    if (run->done[SETUP_SERVER])
        vmr_qmp_client_execute_async (client, "nbd-server-stop", NULL, 0, NULL, finish_cb, run);
    else
        finish_cb (NULL, NULL, run);
}

static gboolean exports_poll_cb (gpointer user_data);

/* whether @id is one of the exports this run made */
static gboolean
is_ours (VerifyRun *run, const gchar *id)
{
    if (g_strcmp0 (id, run->old_export) == 0 || g_strcmp0 (id, run->new_export) == 0)
        return TRUE;
    for (guint i = 0; i < run->snapshot_exports->len; i++) {
        if (g_strcmp0 (id, g_ptr_array_index (run->snapshot_exports, i)) == 0)
            return TRUE;
    }
    return FALSE;
}

/* a node or a bitmap may only go once no export holds it */
static void
exports_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *exports;
    gboolean listed = FALSE;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    exports
        = reply != NULL ? vmr_qmp_parse_reply_array (reply, "query-block-exports", &error) : NULL;
    for (guint i = 0; exports != NULL && i < json_array_get_length (exports); i++)
        listed = listed
                 || is_ours (run, vmr_json_get_string (vmr_json_array_object (exports, i), "id"));
    if (listed && ++run->export_tries < EXPORTS_GONE_TRIES) {
        g_timeout_add (EXPORTS_GONE_WAIT_MS, exports_poll_cb, run);
        return;
    }
    if (listed)
        vmr_job_message (run->job, "job %s: QEMU still lists an export of the verification",
                         run->job->id);
    release_the_rest (run);
}

static gboolean
exports_poll_cb (gpointer user_data)
{
    VerifyRun *run = user_data;

    vmr_qmp_client_execute_async (run->self->client, "query-block-exports", NULL, 0, NULL,
                                  exports_cb, run);
    return G_SOURCE_REMOVE;
}

static void
delete_export (VerifyRun *run, const gchar *id)
{
    g_autoptr (JsonObject) args = vmr_backend_qmp_args_device ("id", id);

    /* hard: our own connections are closed, a stray one must not keep it */
    json_object_set_string_member (args, "mode", "hard");
    vmr_qmp_client_execute_async (run->self->client, "block-export-del", args, 0, NULL,
                                  vmr_backend_qmp_best_effort_cb,
                                  g_strdup_printf ("removing the export %s", id));
}

static void
teardown (VerifyRun *run)
{
    gboolean any = run->snapshot_exports->len > 0;

    for (guint i = 0; i < run->snapshot_exports->len; i++)
        delete_export (run, g_ptr_array_index (run->snapshot_exports, i));
    if (run->done[SETUP_NEW_EXPORT])
        delete_export (run, run->new_export);
    if (run->done[SETUP_OLD_EXPORT])
        delete_export (run, run->old_export);
    any = any || run->done[SETUP_NEW_EXPORT] || run->done[SETUP_OLD_EXPORT];
    run->export_tries = 0;
    if (any)
        exports_poll_cb (run);
    else
        release_the_rest (run);
}

/* ---- snapshots of the pivot's bitmap, for the comparison's thread ---- */

static void
snapshot_done (VerifyRun *run, GError *error)
{
    SnapshotRequest *req = run->snapshot;

    run->snapshot = NULL;
    g_mutex_lock (&req->lock);
    if (error != NULL) {
        req->error = error;
    } else {
        req->export_name
            = g_strdup (g_ptr_array_index (run->snapshot_exports, run->snapshot_exports->len - 1));
        req->context = g_strdup_printf (
            "qemu:dirty-bitmap:%s",
            (gchar *) g_ptr_array_index (run->snapshot_bitmaps, run->snapshot_bitmaps->len - 1));
    }
    req->done = TRUE;
    g_cond_signal (&req->cond);
    g_mutex_unlock (&req->lock);
}

static void
snapshot_exported_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *name = g_strdup_printf ("%s-written-%u", run->job->id, run->snapshot->round);

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error, "QEMU cannot export the guest's writes since the pivot: ");
        snapshot_done (run, g_steal_pointer (&error));
        return;
    }
    g_ptr_array_add (run->snapshot_exports, g_steal_pointer (&name));
    snapshot_done (run, NULL);
}

static void
snapshot_merged_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;
    g_autofree gchar *name = g_strdup_printf ("%s-written-%u", run->job->id, run->snapshot->round);
    g_autoptr (JsonObject) args = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        g_prefix_error (&error,
                        "QEMU has no record of the guest's writes since the pivot (bitmap %s "
                        "on node %s; QEMU restarted, or the disk moved again?): ",
                        run->bitmap, run->dest_node);
        snapshot_done (run, g_steal_pointer (&error));
        return;
    }
    args = vmr_qmp_nbd_export_args (
        name, run->dest_node,
        g_ptr_array_index (run->snapshot_bitmaps, run->snapshot_bitmaps->len - 1));
    vmr_qmp_client_execute_async (run->self->client, "block-export-add", args, 0, NULL,
                                  snapshot_exported_cb, run);
}

/* a disabled copy of the pivot's bitmap, made in one transaction; then its export */
static gboolean
snapshot_start_cb (gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autofree gchar *name = g_strdup_printf ("%s-verify-%u", run->job->id, run->snapshot->round);
    g_autoptr (JsonObject) args = vmr_qmp_bitmap_copy_args (run->dest_node, run->bitmap, name);

    /* a transaction leaves no half-made copy; teardown removes it, made or not */
    g_ptr_array_add (run->snapshot_bitmaps, g_steal_pointer (&name));
    vmr_qmp_client_execute_async (run->self->client, "transaction", args, 0, NULL,
                                  snapshot_merged_cb, run);
    return G_SOURCE_REMOVE;
}

/* VmrNbdDirtySnapshotFunc: in the comparison's thread */
static gboolean
request_snapshot (gpointer user_data, guint round, gchar **export_name, gchar **context,
                  GError **error)
{
    VerifyRun *run = user_data;
    SnapshotRequest req = { .round = round };
    gboolean ok;

    g_mutex_init (&req.lock);
    g_cond_init (&req.cond);
    run->snapshot = &req;
    g_main_context_invoke (NULL, snapshot_start_cb, run);
    g_mutex_lock (&req.lock);
    while (!req.done)
        g_cond_wait (&req.cond, &req.lock);
    g_mutex_unlock (&req.lock);
    ok = req.error == NULL;
    if (ok) {
        *export_name = req.export_name;
        *context = req.context;
    } else {
        g_propagate_error (error, req.error);
    }
    g_mutex_clear (&req.lock);
    g_cond_clear (&req.cond);
    return ok;
}

/* ---- the comparison, in a thread ---- */

static void
compare_thread (GTask *task, gpointer source_object, gpointer task_data, GCancellable *cancellable)
{
    GError *error = NULL;

    if (!vmr_nbd_compare_run (task_data, cancellable, &error))
        g_task_return_error (task, error);
    else
        g_task_return_boolean (task, TRUE);
}

static gboolean
progress_cb (gpointer user_data)
{
    copy_figures (user_data);
    return G_SOURCE_CONTINUE;
}

static void
compared_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autoptr (GError) error = NULL;

    g_clear_handle_id (&run->progress_source, g_source_remove);
    if (!g_task_propagate_boolean (G_TASK (res), &error)) {
        copy_figures (run);
        g_prefix_error (&error, "comparing %s with %s: ", run->job->source,
                        run->job->dest->location);
        run->error = g_steal_pointer (&error);
    } else {
        vmr_verification_take_result (run->verification, run->compare);
    }
    /* our connections go before the exports do */
    g_clear_pointer (&run->compare, vmr_nbd_compare_free);
    teardown (run);
}

/*
 * A raw image is read with pread(), as qemu-img reads it: the bytes the
 * guest sees through QEMU's raw driver, without QEMU's NBD server in the
 * way (the page cache keeps buffered reads coherent with QEMU's writes,
 * O_DIRECT ones included). Other formats are read through the export.
 */
static const gchar *
raw_image (const gchar *path, const gchar *format)
{
    return path != NULL && g_strcmp0 (format, "raw") == 0 ? path : NULL;
}

static void
start_compare (VerifyRun *run)
{
    VmrNbdCompareSpec spec = {
        .source
        = { run->socket, run->old_export, raw_image (run->job->source, run->job->source_format) },
        .dest = { run->socket, run->new_export, vmr_destination_raw_path (run->job->dest) },
        .dirty_snapshot = request_snapshot,
        .dirty_snapshot_data = run,
    };
    g_autoptr (GTask) thread_task = NULL;

    run->compare = vmr_nbd_compare_new (&spec);
    /* the run, and with it the comparison, lives until the thread has ended */
    thread_task = g_task_new (NULL, NULL, compared_cb, run);
    g_task_set_task_data (thread_task, run->compare, NULL);
    run->progress_source = g_timeout_add (PROGRESS_INTERVAL_MS, progress_cb, run);
    g_task_run_in_thread (thread_task, compare_thread);
}

/* ---- the setup ---- */

static void setup_next (VerifyRun *run);

static void
setup_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);
    if (reply == NULL) {
        switch (run->step) {
            case SETUP_SERVER:
                g_prefix_error (&error, "QEMU cannot start its NBD server on %s: ", run->socket);
                break;
            case SETUP_OLD_NODE:
                g_prefix_error (&error,
                                "QEMU cannot open the old source %s read-only: ", run->job->source);
                break;
            case SETUP_OLD_EXPORT:
                g_prefix_error (&error, "QEMU cannot export the old source: ");
                break;
            case SETUP_NEW_EXPORT:
            default:
                g_prefix_error (&error,
                                "QEMU cannot export %s (node %s): ", run->job->dest->location,
                                run->dest_node);
                break;
        }
        run->error = g_steal_pointer (&error);
        teardown (run);
        return;
    }
    run->done[run->step++] = TRUE;
    setup_next (run);
}

static JsonObject *
old_node_args (VerifyRun *run)
{
    JsonObject *args = json_object_new ();
    JsonObject *file = json_object_new ();
    gboolean device = !g_file_test (run->job->source, G_FILE_TEST_IS_REGULAR);

    json_object_set_string_member (file, "driver", device ? "host_device" : "file");
    json_object_set_string_member (file, "filename", run->job->source);
    json_object_set_boolean_member (file, "read-only", TRUE);
    json_object_set_string_member (
        args, "driver", run->job->source_format != NULL ? run->job->source_format : "raw");
    json_object_set_string_member (args, "node-name", run->old_node);
    json_object_set_boolean_member (args, "read-only", TRUE);
    json_object_set_object_member (args, "file", file);
    return args;
}

static void
setup_next (VerifyRun *run)
{
    g_autoptr (JsonObject) args = NULL;
    const gchar *command = "block-export-add";

    switch (run->step) {
        case SETUP_SERVER:
            g_unlink (run->socket);
            args = vmr_qmp_nbd_server_args ("unix", run->socket);
            command = "nbd-server-start";
            break;
        case SETUP_OLD_NODE:
            args = old_node_args (run);
            command = "blockdev-add";
            break;
        case SETUP_OLD_EXPORT:
            args = vmr_qmp_nbd_export_args (run->old_export, run->old_node, NULL);
            break;
        case SETUP_NEW_EXPORT:
            args = vmr_qmp_nbd_export_args (run->new_export, run->dest_node, NULL);
            break;
        case SETUP_LAST:
        default:
            start_compare (run);
            return;
    }
    vmr_qmp_client_execute_async (run->self->client, command, args, 0, NULL, setup_cb, run);
}

/* ---- one verification at a time per QEMU: it has one NBD server ---- */

static void
run_next (VmrBackendQmp *self)
{
    VerifyRun *run;

    if (self->verify_running || (run = g_queue_pop_head (self->verify_queue)) == NULL)
        return;
    self->verify_running = TRUE;
    g_debug ("job %s: verifying through %s", run->job->id, run->socket);
    setup_next (run);
}

/* the verification goes on only for a disk this QEMU can export safely */

static guint
qemu_major (VmrBackendQmp *self)
{
    return vmr_qmp_parse_greeting_major (vmr_qmp_client_get_greeting (self->client));
}

static void
verify_disks_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VerifyRun *run = user_data;
    VmrBackendQmp *self = run->self;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GError) error = NULL;

    disks = vmr_backend_qmp_query_disks_finish (VMR_BACKEND (self), res, &error);
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = disks->pdata[i];

        if (g_strcmp0 (disk->id, run->job->disk) == 0
            && !vmr_verification_qemu_can_verify (disk, qemu_major (self), &error)) {
            g_task_return_error (run->task, g_steal_pointer (&error));
            verify_run_free (run);
            return;
        }
    }
    g_queue_push_tail (self->verify_queue, run);
    run_next (self);
}

void
vmr_backend_qmp_verify_copy_async (VmrBackend *backend, VmrJob *job, VmrVerification *verification,
                                   const gchar *work_dir, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    VmrBackendQmp *self = vmr_backend_qmp_of (backend);
    VerifyRun *run = g_new0 (VerifyRun, 1);
    g_autofree gchar *socket_name = g_strdup_printf ("%s.sock", job->id);

    run->self = g_object_ref (self);
    run->task = g_task_new (self, cancellable, callback, user_data);
    run->job = vmr_job_ref (job);
    run->verification = verification;
    run->socket = g_build_filename (work_dir, socket_name, NULL);
    run->old_node = g_strdup_printf ("%s-old", job->id);
    run->old_export = g_strdup_printf ("%s-old", job->id);
    run->new_export = g_strdup_printf ("%s-new", job->id);
    run->dest_node = g_strdup_printf ("%s-dst", job->id);
    run->bitmap = vmr_backend_qmp_pivot_bitmap (job->id);
    run->snapshot_exports = g_ptr_array_new_with_free_func (g_free);
    run->snapshot_bitmaps = g_ptr_array_new_with_free_func (g_free);
    /* the disk as it is now: whether this QEMU can export it safely */
    vmr_backend_qmp_query_disks_async (backend, NULL, verify_disks_cb, run);
}

gboolean
vmr_backend_qmp_verify_copy_finish (VmrBackend *backend, GAsyncResult *res, GError **error)
{
    return g_task_propagate_boolean (G_TASK (res), error);
}
