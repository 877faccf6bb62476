/*
 * libFuzzer harness: what QEMU sends on a QMP monitor. The input is the
 * byte stream (a greeting, replies and events, one JSON object a line),
 * framed by VmrQmpStream as the daemon frames it; every message is read by
 * each reading the QMP backend makes of a greeting, a reply or an event
 * (qmp-parse.c, the fd sets of files passed by descriptor among them, and
 * the schema's of qmp-client.c).
 */
#include "fuzz-common.h"
#include "qmp-client.h"
#include "qmp-parse.h"
#include "qmp-stream.h"
#include "vmr-json.h"

static void
read_disks (JsonNode *reply)
{
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (GPtrArray) qdev_paths = NULL;
    g_autoptr (VmrDestination) dest = vmr_destination_new ("/srv/new/disk0.raw", NULL, FALSE, NULL);
    gboolean node_used = FALSE;
    gboolean path_used = FALSE;

    disks = vmr_qmp_parse_block (reply, &qdev_paths, NULL);
    if (disks != NULL) {
        (void) vmr_qmp_parse_file_nodes (reply, disks, NULL);
        vmr_qmp_parse_settle_iothreads (disks);
        for (guint i = 0; i < qdev_paths->len; i++) {
            const gchar *qdev = g_ptr_array_index (qdev_paths, i);

            g_free (vmr_qmp_parse_qdev_id (qdev, NULL, "node"));
        }
    }
    (void) vmr_qmp_parse_block_uses (reply, NULL, "disk0", dest, &node_used, &path_used, NULL);
}

/* the fd sets a reply names, as query-fdsets and query-named-block-nodes give them */
static void
read_fdsets (JsonNode *reply)
{
    g_autoptr (GHashTable) fdsets = vmr_qmp_parse_fdsets (reply);
    g_autoptr (GHashTable) in_use = vmr_qmp_parse_fdsets_in_use (reply);
    g_autoptr (VmrDestination) dest = vmr_destination_new ("/srv/new/disk0.raw", NULL, FALSE, NULL);
    gboolean node_used = FALSE;
    gboolean path_used = FALSE;
    GHashTableIter iter;
    gint64 *id;

    g_free (vmr_qmp_parse_real_path (fdsets, "/dev/fdset/0"));
    /* every set the nodes name, looked up as the fd set cleanup reads it */
    g_hash_table_iter_init (&iter, in_use);
    while (g_hash_table_iter_next (&iter, (gpointer *) &id, NULL)) {
        g_autofree gchar *name = g_strdup_printf ("/dev/fdset/%" G_GINT64_FORMAT, *id);

        g_free (vmr_qmp_parse_real_path (fdsets, name));
    }
    (void) vmr_qmp_parse_block_uses (reply, fdsets, "disk0", dest, &node_used, &path_used, NULL);
}

static void
read_jobs (JsonNode *reply)
{
    g_autoptr (GPtrArray) jobs = vmr_qmp_parse_block_jobs (reply, NULL);

    for (guint i = 0; jobs != NULL && i < jobs->len; i++) {
        VmrQmpBlockJob *job = g_ptr_array_index (jobs, i);
        g_autoptr (VmrBackendProgress) progress = NULL;

        (void) vmr_qmp_block_jobs_find (jobs, job->id);
        progress = vmr_qmp_block_job_to_progress (job);
    }
}

static void
read_reply (JsonNode *reply)
{
    JsonArray *nodes = vmr_qmp_parse_reply_array (reply, "query-named-block-nodes", NULL);
    JsonObject *copy_mode = vmr_qmp_schema_copy_mode_args (reply, "vmr-1", NULL);
    GPtrArray *iothreads = vmr_qmp_parse_iothreads (reply, NULL);
    GHashTable *stats = vmr_qmp_parse_blockstats (reply, NULL);
    guint64 size = 0;

    g_clear_pointer (&copy_mode, json_object_unref);
    g_clear_pointer (&iothreads, g_ptr_array_unref);
    g_clear_pointer (&stats, g_hash_table_unref);
    g_strfreev (vmr_qmp_parse_vq_mapping (reply));
    g_free (vmr_qmp_parse_iothread (reply));
    g_free (vmr_qmp_parse_bus_controller (reply));
    (void) vmr_qmp_schema_has_command (reply, "block-job-change");
    if (nodes != NULL)
        (void) vmr_qmp_parse_node_size (nodes, "disk0", &size);
    read_disks (reply);
    read_jobs (reply);
    read_fdsets (reply);
}

static void
message_cb (VmrQmpStream *stream, JsonObject *msg, gpointer user_data)
{
    JsonNode *reply = json_object_get_member (msg, "return");
    const gchar *event = vmr_json_get_string (msg, "event");
    JsonObject *greeting = vmr_json_get_object (msg, "QMP");

    if (reply != NULL)
        read_reply (reply);
    if (event != NULL) {
        VmrQmpJobEvent job_event;

        (void) vmr_qmp_parse_job_event (event, vmr_json_get_object (msg, "data"), &job_event);
    }
    if (greeting != NULL)
        (void) vmr_qmp_parse_greeting_is_qemu (greeting);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    g_autoptr (GIOStream) io = vmr_fuzz_stream_new (data, size);
    VmrQmpStream *stream = vmr_qmp_stream_new (io);
    g_autofree gchar *text = g_strndup ((const gchar *) data, size);
    gint64 tgid = 0;
    guint64 ticks = 0;

    g_signal_connect (stream, "message", G_CALLBACK (message_cb), NULL);
    vmr_qmp_stream_start (stream);
    while (!vmr_qmp_stream_is_closed (stream))
        g_main_context_iteration (NULL, TRUE);
    vmr_fuzz_run_until_finalized (stream);
    /* the I/O threads' /proc files, read beside the monitor */
    (void) vmr_qmp_parse_proc_tgid (text, &tgid);
    (void) vmr_qmp_parse_proc_ticks (text, &ticks);
    return 0;
}
