#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The verification of a copy after its pivot, over a backend's transport:
 * see verifier.h. A run sets up in order (the NBD server, the old source
 * and its export, the destination's export), compares in its thread, and
 * tears down what it set up in the reverse order: our connections, every
 * export (once QEMU no longer lists them, a node or a bitmap may go), the
 * copies of the bitmap, the old source, the server.
 */

#include "verifier.h"

#include <glib/gstdio.h>

#include "nbd-compare.h"
#include "vmr-json.h"

/* how often the figures of a running comparison reach the job */
#define PROGRESS_INTERVAL_MS 250
/* how long QEMU may take to drop the exports once their clients are gone */
#define EXPORTS_GONE_TRIES   50
#define EXPORTS_GONE_WAIT_US (20 * 1000)

struct _VmrVerifier {
    GQueue *waiting; /* of GTask *, whose data is a VerifyRun */
    gboolean running;
};

typedef struct {
    VmrVerifier *verifier; /* not owned: the task's source object keeps it */
    const VmrVerifyTransportOps *ops;
    gpointer transport; /* owned */
    gchar *job_id;
    gchar *source; /* the old source image */
    VmrDestination *destination;
    VmrVerification *verification; /* the caller's */
    gchar *socket;                 /* QEMU's NBD server listens here */
    gchar *bitmap;                 /* the pivot's, enabled */
    gchar *old_node;               /* QEMU's node of the old source, when QEMU reads it */
    gchar *old_export;
    gchar *new_export;
    gchar **qemu_nbd; /* the command that serves the old source when QEMU does not */
    VmrNbdCompare *compare;
    guint progress_source;

    /* in the run's thread */
    gchar *dest_node;     /* the node that holds the bitmap */
    gchar *listen_value;  /* the address listen() gave, until a server takes it */
    gboolean serving;     /* nbd-server-start succeeded */
    gboolean old_open;    /* open_old() succeeded */
    GPtrArray *exports;   /* of gchar *, the exports made */
    GPtrArray *snapshots; /* of gchar *, the disabled copies of the bitmap made */
} VerifyRun;

gchar *
vmr_verifier_pivot_bitmap (const gchar *job_id)
{
    return g_strdup_printf ("%s-pivot", job_id);
}

VmrQmpCmd *
vmr_verifier_mark_pivot_cmd (const gchar *job_id, const gchar *node)
{
    g_autofree gchar *bitmap = vmr_verifier_pivot_bitmap (job_id);

    return vmr_qmp_cmd_block_dirty_bitmap_add (node, bitmap);
}

/* ---- QEMU's side, in the run's thread ---- */

/* runs @cmd (consumed); a failure is logged only (for the cleanup) */
static void
best_effort (VerifyRun *run, VmrQmpCmd *cmd, const gchar *what)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = run->ops->execute (run->transport, cmd, &error);

    if (reply == NULL)
        g_message ("job %s: %s after the verification: %s", run->job_id, what, error->message);
}

static gboolean
add_export (VerifyRun *run, const gchar *id, const gchar *node, const gchar *bitmap, GError **error)
{
    g_autoptr (JsonNode) reply = run->ops->execute (
        run->transport, vmr_qmp_cmd_block_export_add (id, node, bitmap), error);

    if (reply == NULL)
        return FALSE;
    g_ptr_array_add (run->exports, g_strdup (id));
    return TRUE;
}

static gboolean
start_server (VerifyRun *run, GError **error)
{
    g_autofree gchar *type = NULL;
    g_autoptr (JsonNode) reply = NULL;

    g_unlink (run->socket);
    if (run->ops->listen (run->transport, run->socket, &type, &run->listen_value, error))
        reply = run->ops->execute (run->transport,
                                   vmr_qmp_cmd_nbd_server_start (type, run->listen_value), error);
    run->serving = reply != NULL;
    if (reply == NULL)
        g_prefix_error (error,
                        "QEMU cannot start its NBD server on %s (does a migration or a backup "
                        "use it?): ",
                        run->socket);
    return reply != NULL;
}

/* the old source, exported by QEMU when the transport opens it there */
static gboolean
export_old_source (VerifyRun *run, GError **error)
{
    if (run->ops->open_old == NULL)
        return TRUE;
    if (!run->ops->open_old (run->transport, run->old_node, error)) {
        g_prefix_error (error, "QEMU cannot open the old source %s read-only: ", run->source);
        return FALSE;
    }
    run->old_open = TRUE;
    if (!add_export (run, run->old_export, run->old_node, NULL, error)) {
        g_prefix_error (error, "QEMU cannot export the old source: ");
        return FALSE;
    }
    return TRUE;
}

/* whether QEMU still lists one of our exports */
static gboolean
exports_listed (VerifyRun *run)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = run->ops->execute (run->transport, vmr_qmp_cmd_query_block_exports (), &error);
    JsonArray *exports = reply != NULL ? vmr_json_node_array (reply) : NULL;

    for (guint i = 0; exports != NULL && i < json_array_get_length (exports); i++) {
        const gchar *id = vmr_json_get_string (vmr_json_array_object (exports, i), "id");

        for (guint e = 0; e < run->exports->len; e++) {
            if (g_strcmp0 (id, g_ptr_array_index (run->exports, e)) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

/* every export, and the wait until QEMU no longer lists them */
static void
remove_exports (VerifyRun *run)
{
    guint tries = 0;

    for (guint i = 0; i < run->exports->len; i++) {
        const gchar *id = g_ptr_array_index (run->exports, i);
        g_autofree gchar *what = g_strdup_printf ("removing the export %s", id);

        /* hard: our own connections are closed, a stray one must not keep it */
        best_effort (run, vmr_qmp_cmd_block_export_del (id), what);
    }
    while (run->exports->len > 0 && exports_listed (run) && ++tries < EXPORTS_GONE_TRIES)
        g_usleep (EXPORTS_GONE_WAIT_US);
    if (tries == EXPORTS_GONE_TRIES)
        g_message ("job %s: QEMU still lists an export of the verification", run->job_id);
    g_ptr_array_set_size (run->exports, 0);
}

/* every export, then the bitmap copies and the old node (once no export holds them), the server */
static void
teardown (VerifyRun *run)
{
    /* our connections go before the exports do; qemu-nbd ends with its client */
    vmr_nbd_compare_disconnect (run->compare);
    remove_exports (run);
    for (guint i = 0; i < run->snapshots->len; i++) {
        const gchar *name = g_ptr_array_index (run->snapshots, i);
        g_autofree gchar *what = g_strdup_printf ("removing the bitmap %s", name);

        best_effort (run, vmr_qmp_cmd_block_dirty_bitmap_remove (run->dest_node, name), what);
    }
    g_ptr_array_set_size (run->snapshots, 0);
    if (run->old_open)
        run->ops->close_old (run->transport, run->old_node);
    if (run->serving)
        best_effort (run, vmr_qmp_cmd_nbd_server_stop (), "stopping QEMU's NBD server");
    else if (run->listen_value != NULL && run->ops->unlisten != NULL)
        run->ops->unlisten (run->transport, run->listen_value);
    g_clear_pointer (&run->listen_value, g_free);
    g_unlink (run->socket);
    run->old_open = FALSE;
    run->serving = FALSE;
}

/*
 * VmrNbdDirtySnapshotFunc, in the run's thread: a disabled copy of the
 * pivot's bitmap made in one transaction (QEMU exports only a frozen bitmap
 * read-only; a transaction leaves no half-made copy), then its export
 */
static gboolean
snapshot_cb (gpointer user_data, guint round, gchar **export_name, gchar **context, GError **error)
{
    VerifyRun *run = user_data;
    g_autofree gchar *name = g_strdup_printf ("%s-verify-%u", run->job_id, round);
    g_autofree gchar *export_id = g_strdup_printf ("%s-written-%u", run->job_id, round);
    g_autoptr (JsonNode) reply = run->ops->execute (
        run->transport, vmr_qmp_cmd_bitmap_copy (run->dest_node, run->bitmap, name), error);

    if (reply == NULL) {
        g_prefix_error (error,
                        "QEMU has no record of the guest's writes since the pivot (bitmap %s "
                        "on node %s; QEMU restarted, or the disk moved again?): ",
                        run->bitmap, run->dest_node);
        return FALSE;
    }
    g_ptr_array_add (run->snapshots, g_strdup (name));
    if (!add_export (run, export_id, run->dest_node, name, error)) {
        g_prefix_error (error, "QEMU cannot export the guest's writes since the pivot: ");
        return FALSE;
    }
    *export_name = g_steal_pointer (&export_id);
    *context = g_strdup_printf ("qemu:dirty-bitmap:%s", name);
    return TRUE;
}

/* the setup, the comparison and the teardown, blocking */
static gboolean
run_blocking (VerifyRun *run, GCancellable *cancellable, GError **error)
{
    gboolean ok = run->ops->open (run->transport, error);

    if (!ok)
        return FALSE;
    run->dest_node = run->ops->find_node (run->transport, run->bitmap, error);
    ok = run->dest_node != NULL && start_server (run, error) && export_old_source (run, error);
    if (ok && !add_export (run, run->new_export, run->dest_node, NULL, error)) {
        g_prefix_error (error, "QEMU cannot export %s (node %s): ", run->destination->location,
                        run->dest_node);
        ok = FALSE;
    }
    if (ok) {
        ok = vmr_nbd_compare_run (run->compare, cancellable, error);
        if (!ok)
            g_prefix_error (error, "comparing %s with %s: ", run->source,
                            run->destination->location);
    }
    teardown (run);
    return ok;
}

static void
run_thread (GTask *task, gpointer source_object, gpointer task_data, GCancellable *cancellable)
{
    GError *error = NULL;

    if (!run_blocking (task_data, cancellable, &error))
        g_task_return_error (task, error);
    else
        g_task_return_boolean (task, TRUE);
}

/* ---- the run, on the main loop ---- */

static void
run_free (VerifyRun *run)
{
    g_clear_handle_id (&run->progress_source, g_source_remove);
    run->ops->free (run->transport);
    g_free (run->job_id);
    g_free (run->source);
    vmr_destination_unref (run->destination);
    g_free (run->socket);
    g_free (run->bitmap);
    g_free (run->old_node);
    g_free (run->old_export);
    g_free (run->new_export);
    g_strfreev (run->qemu_nbd);
    vmr_nbd_compare_free (run->compare);
    g_free (run->dest_node);
    g_free (run->listen_value);
    g_ptr_array_unref (run->exports);
    g_ptr_array_unref (run->snapshots);
    g_free (run);
}

/* the comparison of @run's two sides; the old source through QEMU or qemu-nbd */
static VmrNbdCompare *
new_compare (VerifyRun *run, const gchar *format)
{
    VmrNbdCompareSpec spec = {
        /* a raw image is read with pread(), as qemu-img reads it: the bytes the
         * guest sees through QEMU's raw driver (the page cache keeps buffered
         * reads coherent with QEMU's writes, O_DIRECT ones included) */
        .source = { .export_name = run->old_export,
                    .raw_path = g_str_equal (format, "raw") ? run->source : NULL },
        .dest = { run->socket, run->new_export, vmr_destination_raw_path (run->destination) },
        .dirty_snapshot = snapshot_cb,
        .dirty_snapshot_data = run,
    };

    if (run->ops->open_old != NULL) {
        spec.source.socket = run->socket;
    } else {
        const gchar *const qemu_nbd[] = {
            "qemu-nbd",      "--read-only",   "--format",  format,
            "--export-name", run->old_export, run->source, NULL,
        };

        run->qemu_nbd = g_strdupv ((gchar **) qemu_nbd);
        spec.source.command = (const gchar *const *) run->qemu_nbd;
    }
    return vmr_nbd_compare_new (&spec);
}

static VerifyRun *
run_new (VmrVerifier *verifier, const VmrVerifyTransportOps *ops, gpointer transport, VmrJob *job,
         VmrVerification *verification, const gchar *work_dir)
{
    VerifyRun *run = g_new0 (VerifyRun, 1);
    g_autofree gchar *socket_name = g_strdup_printf ("%s.sock", job->id);

    run->verifier = verifier;
    run->ops = ops;
    run->transport = transport;
    run->job_id = g_strdup (job->id);
    run->source = g_strdup (job->source);
    run->destination = vmr_destination_ref (job->dest);
    run->verification = verification;
    run->socket = g_build_filename (work_dir, socket_name, NULL);
    run->bitmap = vmr_verifier_pivot_bitmap (job->id);
    run->old_node = g_strdup_printf ("%s-old", job->id);
    run->old_export = g_strdup_printf ("%s-old", job->id);
    run->new_export = g_strdup_printf ("%s-new", job->id);
    run->exports = g_ptr_array_new_with_free_func (g_free);
    run->snapshots = g_ptr_array_new_with_free_func (g_free);
    run->compare = new_compare (run, job->source_format != NULL ? job->source_format : "raw");
    return run;
}

static gboolean
progress_cb (gpointer user_data)
{
    VerifyRun *run = user_data;

    vmr_verification_take_figures (run->verification, run->compare);
    return G_SOURCE_CONTINUE;
}

static void run_next (VmrVerifier *self);

static void
run_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    g_autoptr (GTask) task = user_data;
    VerifyRun *run = g_task_get_task_data (task);
    VmrVerifier *self = run->verifier;
    g_autoptr (GError) error = NULL;

    g_clear_handle_id (&run->progress_source, g_source_remove);
    if (!g_task_propagate_boolean (G_TASK (res), &error)) {
        vmr_verification_take_figures (run->verification, run->compare);
        g_task_return_error (task, g_steal_pointer (&error));
    } else {
        vmr_verification_take_result (run->verification, run->compare);
        g_task_return_boolean (task, TRUE);
    }
    self->running = FALSE;
    run_next (self);
}

static void
run_next (VmrVerifier *self)
{
    g_autoptr (GTask) thread_task = NULL;
    GTask *task;
    VerifyRun *run;

    if (self->running || (task = g_queue_pop_head (self->waiting)) == NULL)
        return;
    self->running = TRUE;
    run = g_task_get_task_data (task);
    g_debug ("job %s: verifying through %s", run->job_id, run->socket);
    run->progress_source = g_timeout_add (PROGRESS_INTERVAL_MS, progress_cb, run);
    /* the run lives in @task until the thread has ended */
    thread_task = g_task_new (g_task_get_source_object (task), g_task_get_cancellable (task),
                              run_done_cb, task);
    g_task_set_task_data (thread_task, run, NULL);
    g_task_run_in_thread (thread_task, run_thread);
}

/* ---- the queue ---- */

VmrVerifier *
vmr_verifier_new (void)
{
    VmrVerifier *self = g_new0 (VmrVerifier, 1);

    self->waiting = g_queue_new ();
    return self;
}

void
vmr_verifier_free (VmrVerifier *self)
{
    g_queue_free_full (self->waiting, g_object_unref);
    g_free (self);
}

void
vmr_verifier_verify_async (VmrVerifier *self, gpointer source_object,
                           const VmrVerifyTransportOps *ops, gpointer transport, VmrJob *job,
                           VmrVerification *verification, const gchar *work_dir,
                           GCancellable *cancellable, GAsyncReadyCallback callback,
                           gpointer user_data)
{
    GTask *task;

    g_return_if_fail (self != NULL && ops != NULL && job != NULL && verification != NULL);
    task = g_task_new (source_object, cancellable, callback, user_data);
    g_task_set_source_tag (task, vmr_verifier_verify_async);
    g_task_set_task_data (task, run_new (self, ops, transport, job, verification, work_dir),
                          (GDestroyNotify) run_free);
    g_queue_push_tail (self->waiting, task);
    run_next (self);
}

gboolean
vmr_verifier_verify_finish (GAsyncResult *res, GError **error)
{
    g_return_val_if_fail (G_IS_TASK (res), FALSE);
    return g_task_propagate_boolean (G_TASK (res), error);
}
