#define G_LOG_DOMAIN "vmr-test"

/*
 * QEMU for the tests: started with two monitors, quit or killed, and the
 * checks made over the test's own monitor.
 */

#ifndef _GNU_SOURCE
/* S_ISSOCK under -std=c17 */
#define _GNU_SOURCE
#endif

#include "harness-private.h"

#include <string.h>

#include <signal.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "vmr-error.h"

gchar *
vmr_harness_json_arg (JsonObject *object)
{
    g_autoptr (JsonNode) node = json_node_init_object (json_node_alloc (), object);

    return json_to_string (node, FALSE);
}

gchar *
vmr_harness_scsi_controller (const VmrHarnessDisk *disk)
{
    if (disk->vq_iothreads != NULL)
        return g_strdup_printf ("scsi-%s", disk->id);
    if (disk->iothread != NULL)
        return g_strdup_printf ("scsi-%s", disk->iothread);
    return g_strdup ("scsi0");
}

/* @disk's per-queue I/O threads as a device's iothread-vq-mapping */
static JsonArray *
vq_mapping (const VmrHarnessDisk *disk)
{
    JsonArray *mapping = json_array_new ();

    for (guint j = 0; disk->vq_iothreads[j] != NULL; j++) {
        JsonObject *entry = json_object_new ();

        json_object_set_string_member (entry, "iothread", disk->vq_iothreads[j]);
        json_array_add_object_element (mapping, entry);
    }
    return mapping;
}

/* a device, or a scsi-hd's controller, on its I/O thread or threads */
static void
set_threads (JsonObject *dev, const VmrHarnessDisk *disk)
{
    if (disk->iothread != NULL)
        json_object_set_string_member (dev, "iothread", disk->iothread);
    if (disk->vq_iothreads != NULL)
        json_object_set_array_member (dev, "iothread-vq-mapping", vq_mapping (disk));
}

/* -device arguments in QEMU's JSON syntax (one syntax for all: QEMU mixes them badly) */
static void
add_device (GPtrArray *argv, JsonObject *dev)
{
    g_ptr_array_add (argv, g_strdup ("-device"));
    g_ptr_array_add (argv, vmr_harness_json_arg (dev));
}

const gchar *
vmr_harness_qemu_program (void)
{
    const gchar *qemu = g_getenv ("VMR_QEMU");

    return qemu != NULL && *qemu != '\0' ? qemu : "qemu-system-x86_64";
}

void
vmr_harness_report_qemu (void)
{
    static gboolean reported;
    const gchar *argv[] = { vmr_harness_qemu_program (), "--version", NULL };
    g_autofree gchar *out = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;

    if (reported)
        return;
    reported = TRUE;
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL,
                       G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                       &status, &error)
        || !g_spawn_check_wait_status (status, &error))
        vmr_fail ("%s --version: %s", argv[0], error->message);
    g_strdelimit (out, "\n", '\0');
    g_test_message ("QEMU: %s (%s)", out, argv[0]);
}

void
vmr_harness_start_qemu (VmrHarness *h, const VmrHarnessDisk *disks, guint n_disks)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GHashTable) iothreads = g_hash_table_new (g_str_hash, g_str_equal);
    const gchar *fixed[]
        = { "-machine", "pc", "-accel", "tcg", "-S", "-nodefaults", "-display", "none" };

    g_assert_null (h->qemu);
    g_ptr_array_add (argv, g_strdup (vmr_harness_qemu_program ()));
    for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
        g_ptr_array_add (argv, g_strdup (fixed[i]));
    for (guint i = 0; i < n_disks; i++) {
        const gchar *io = disks[i].iothread;

        if (io != NULL && !g_hash_table_contains (iothreads, io)) {
            g_hash_table_add (iothreads, (gpointer) io);
            g_ptr_array_add (argv, g_strdup ("-object"));
            g_ptr_array_add (argv, g_strdup_printf ("iothread,id=%s", io));
        }
        for (guint j = 0; disks[i].vq_iothreads != NULL && disks[i].vq_iothreads[j] != NULL; j++) {
            const gchar *vq_io = disks[i].vq_iothreads[j];

            if (g_hash_table_contains (iothreads, vq_io))
                continue;
            g_hash_table_add (iothreads, (gpointer) vq_io);
            g_ptr_array_add (argv, g_strdup ("-object"));
            g_ptr_array_add (argv, g_strdup_printf ("iothread,id=%s", vq_io));
        }
    }
    /* a virtio-scsi controller for the scsi-hds of each I/O thread (scsi0 for the main loop) */
    for (guint i = 0; i < n_disks; i++) {
        g_autofree gchar *controller = vmr_harness_scsi_controller (&disks[i]);
        g_autoptr (JsonObject) dev = NULL;
        gboolean seen = FALSE;

        if (!disks[i].scsi)
            continue;
        for (guint j = 0; j < i; j++) {
            g_autofree gchar *other = vmr_harness_scsi_controller (&disks[j]);

            seen = seen || (disks[j].scsi && g_strcmp0 (other, controller) == 0);
        }
        if (seen)
            continue;
        dev = json_object_new ();
        json_object_set_string_member (dev, "driver", "virtio-scsi-pci");
        json_object_set_string_member (dev, "id", controller);
        set_threads (dev, &disks[i]);
        add_device (argv, dev);
    }
    for (guint i = 0; i < n_disks; i++) {
        g_autoptr (JsonObject) file = json_object_new ();
        g_autoptr (JsonObject) fmt = json_object_new ();
        g_autofree gchar *file_node = g_strdup_printf ("test-file%u", i);
        g_autofree gchar *fmt_node = g_strdup_printf ("test-fmt%u", i);
        g_autoptr (JsonObject) dev = NULL;

        /* the daemon and the checks compare paths: they must be absolute */
        g_assert_true (g_path_is_absolute (disks[i].path));
        json_object_set_string_member (file, "driver", "file");
        json_object_set_string_member (file, "filename", disks[i].path);
        json_object_set_string_member (file, "node-name", file_node);
        if (disks[i].no_locking)
            json_object_set_string_member (file, "locking", "off");
        if (disks[i].cache_direct) {
            JsonObject *cache = json_object_new ();

            json_object_set_boolean_member (cache, "direct", TRUE);
            json_object_set_object_member (file, "cache", cache);
        }
        json_object_set_string_member (fmt, "driver", disks[i].format);
        json_object_set_string_member (fmt, "file", file_node);
        json_object_set_string_member (fmt, "node-name", fmt_node);
        dev = json_object_new ();
        if (disks[i].scsi) {
            g_autofree gchar *controller = vmr_harness_scsi_controller (&disks[i]);
            g_autofree gchar *bus = g_strdup_printf ("%s.0", controller);

            json_object_set_string_member (dev, "driver", "scsi-hd");
            json_object_set_string_member (dev, "bus", bus);
        } else {
            json_object_set_string_member (dev, "driver", "virtio-blk-pci");
            set_threads (dev, &disks[i]);
        }
        json_object_set_string_member (dev, "drive", fmt_node);
        json_object_set_string_member (dev, "id", disks[i].id);
        g_ptr_array_add (argv, g_strdup ("-blockdev"));
        g_ptr_array_add (argv, vmr_harness_json_arg (file));
        g_ptr_array_add (argv, g_strdup ("-blockdev"));
        g_ptr_array_add (argv, vmr_harness_json_arg (fmt));
        add_device (argv, dev);
    }
    vmr_harness_launch_qemu (h, argv, G_SUBPROCESS_FLAGS_NONE);
}

VmrHarness *
vmr_harness_peer_new (VmrHarness *h, const gchar *name)
{
    VmrHarness *peer = g_new0 (VmrHarness, 1);
    g_autofree gchar *qmp_name = g_strdup_printf ("%s-qmp.sock", name);
    g_autofree gchar *test_name = g_strdup_printf ("%s-test.sock", name);

    peer->dir = g_strdup (h->dir);
    peer->socket = g_strdup (h->socket);
    peer->state_dir = g_strdup (h->state_dir);
    peer->qemu_monitor = vmr_harness_path (h, qmp_name);
    peer->test_monitor = vmr_harness_path (h, test_name);
    return peer;
}

void
vmr_harness_peer_free (VmrHarness *peer)
{
    if (peer->qemu != NULL)
        vmr_harness_kill_process (&peer->qemu, peer->qemu_pid);
    if (peer->mon != NULL)
        vmr_qmp_client_close (peer->mon);
    g_clear_object (&peer->mon);
    g_free (peer->dir);
    g_free (peer->socket);
    g_free (peer->state_dir);
    g_free (peer->qemu_monitor);
    g_free (peer->test_monitor);
    g_free (peer);
}

void
vmr_harness_launch_qemu (VmrHarness *h, GPtrArray *argv, GSubprocessFlags flags)
{
    gint64 deadline
        = g_get_monotonic_time () + VMR_HARNESS_START_TIMEOUT_MS * G_TIME_SPAN_MILLISECOND;
    GStatBuf st;

    g_assert_null (h->qemu);
    g_ptr_array_add (argv, g_strdup ("-qmp"));
    g_ptr_array_add (argv, g_strdup_printf ("unix:%s,server=on,wait=off", h->qemu_monitor));
    g_ptr_array_add (argv, g_strdup ("-qmp"));
    g_ptr_array_add (argv, g_strdup_printf ("unix:%s,server=on,wait=off", h->test_monitor));
    g_ptr_array_add (argv, NULL);
    h->qemu = vmr_harness_spawn (h, (const gchar *const *) argv->pdata, flags, &h->qemu_pid);

    while (h->mon == NULL) {
        g_autoptr (GError) error = NULL;
        g_autofree gchar *id = g_strdup (g_subprocess_get_identifier (h->qemu));

        if (id == NULL) {
            g_autofree gchar *how = NULL;

            g_subprocess_wait (h->qemu, NULL, NULL);
            how = vmr_harness_describe_exit (h->qemu);
            vmr_harness_untrack_pid (h->qemu_pid);
            g_clear_object (&h->qemu);
            vmr_fail ("QEMU exited at start: %s", how);
        }
        if (g_file_test (h->test_monitor, G_FILE_TEST_EXISTS))
            h->mon = vmr_qmp_client_connect_sync (h->test_monitor, VMR_HARNESS_START_TIMEOUT_MS,
                                                  &error);
        if (h->mon == NULL) {
            g_assert_cmpint (g_get_monotonic_time (), <, deadline);
            g_usleep (20 * 1000);
        }
    }
    /* QEMU opens both listeners before its main loop, so this one is ready too */
    g_assert_cmpint (g_stat (h->qemu_monitor, &st), ==, 0);
    g_assert_true (S_ISSOCK (st.st_mode));
}

void
vmr_harness_kill_qemu (VmrHarness *h)
{
    g_assert_nonnull (h->qemu);
    vmr_harness_kill_process (&h->qemu, h->qemu_pid);
    if (h->mon != NULL)
        vmr_qmp_client_close (h->mon);
    g_clear_object (&h->mon);
}

void
vmr_harness_quit_qemu (VmrHarness *h)
{
    g_autoptr (JsonNode) reply = NULL;
    g_autoptr (GError) error = NULL;
    pid_t pid = h->qemu_pid;

    g_assert_nonnull (h->qemu);
    g_assert_nonnull (h->mon);
    reply = vmr_qmp_client_execute_sync (h->mon, "quit", NULL, 0, &error);
    /* QEMU may close the monitor before its reply arrives */
    if (error != NULL && !g_error_matches (error, VMR_ERROR, VMR_ERROR_DISCONNECTED))
        g_assert_no_error (error);
    vmr_qmp_client_close (h->mon);
    g_clear_object (&h->mon);
    if (!vmr_harness_wait_exit (h->qemu, VMR_HARNESS_STOP_TIMEOUT_MS)) {
        vmr_harness_kill_process (&h->qemu, pid);
        vmr_fail ("QEMU did not exit on quit");
    }
    vmr_harness_untrack_pid (pid);
    g_assert_true (g_subprocess_get_if_exited (h->qemu));
    g_assert_cmpint (g_subprocess_get_exit_status (h->qemu), ==, 0);
    g_clear_object (&h->qemu);
}

JsonNode *
vmr_harness_qmp (VmrHarness *h, const gchar *command, JsonObject *arguments)
{
    g_autoptr (GError) error = NULL;
    JsonNode *reply;

    g_assert_nonnull (h->mon);
    reply = vmr_qmp_client_execute_sync (h->mon, command, arguments, 0, &error);
    if (error != NULL)
        vmr_fail ("QMP %s on the test monitor: %s", command, error->message);
    return reply;
}

/* ---- checks on the test monitor ---- */

gboolean
vmr_harness_lists_property (VmrHarness *h, const gchar *command, const gchar *arg,
                            const gchar *value, const gchar *name)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) props = NULL;
    JsonArray *array;

    json_object_set_string_member (args, arg, value);
    props = vmr_harness_qmp (h, command, args);
    array = vmr_harness_json_node_array (props);
    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++)
        if (g_strcmp0 (vmr_harness_json_string (vmr_harness_json_element (array, i), "name"), name)
            == 0)
            return TRUE;
    return FALSE;
}

JsonObject *
vmr_harness_get_block_job (VmrHarness *h)
{
    g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (jobs);

    g_assert_nonnull (array);
    g_assert_cmpuint (json_array_get_length (array), ==, 1);
    return json_object_ref (vmr_harness_json_element (array, 0));
}

JsonObject *
vmr_harness_find_block_job (VmrHarness *h, const gchar *id)
{
    g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-block-jobs", NULL);
    JsonArray *array = vmr_harness_json_node_array (jobs);

    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *job = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_harness_json_string (job, "device"), id) == 0)
            return json_object_ref (job);
    }
    return NULL;
}

void
vmr_harness_assert_no_block_jobs (VmrHarness *h)
{
    g_autoptr (JsonNode) jobs = vmr_harness_qmp (h, "query-block-jobs", NULL);

    g_assert_true (JSON_NODE_HOLDS_ARRAY (jobs));
    if (json_array_get_length (vmr_harness_json_node_array (jobs)) != 0) {
        g_autofree gchar *text = json_to_string (jobs, FALSE);

        vmr_fail ("block jobs left in QEMU: %s", text);
    }
}

/* the query-block entry of the virtio-blk device @qdev_id */
static JsonObject *
find_block_device (JsonNode *blocks, const gchar *qdev_id)
{
    g_autofree gchar *prefix = g_strdup_printf ("/machine/peripheral/%s/", qdev_id);
    JsonArray *array = vmr_harness_json_node_array (blocks);

    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *entry = vmr_harness_json_element (array, i);
        const gchar *qdev = vmr_json_get_string (entry, "qdev");

        if (qdev != NULL && (g_strcmp0 (qdev, qdev_id) == 0 || g_str_has_prefix (qdev, prefix)))
            return entry;
    }
    return NULL;
}

GHashTable *
vmr_harness_daemon_fdsets (VmrHarness *h)
{
    g_autoptr (JsonNode) sets = vmr_harness_qmp (h, "query-fdsets", NULL);
    JsonArray *array = vmr_harness_json_node_array (sets);
    GHashTable *paths = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *set = vmr_harness_json_element (array, i);
        JsonArray *fds = vmr_harness_json_array (set, "fds");
        gint64 id = vmr_harness_json_int (set, "fdset-id");

        for (guint j = 0; j < json_array_get_length (fds); j++) {
            const gchar *opaque = vmr_json_get_string (vmr_harness_json_element (fds, j), "opaque");

            if (opaque != NULL && g_str_has_prefix (opaque, "virt-mirror "))
                g_hash_table_replace (paths, g_memdup2 (&id, sizeof id),
                                      g_strdup (opaque + strlen ("virt-mirror ")));
        }
    }
    return paths;
}

gchar *
vmr_harness_node_file (VmrHarness *h, const gchar *file)
{
    g_autoptr (GHashTable) sets = NULL;
    guint64 id = 0;
    const gchar *path;

    if (file == NULL || !g_str_has_prefix (file, "/dev/fdset/"))
        return g_strdup (file);
    if (!g_ascii_string_to_unsigned (file + strlen ("/dev/fdset/"), 10, 0, G_MAXINT64, &id, NULL))
        vmr_fail ("QEMU names a file %s", file);
    sets = vmr_harness_daemon_fdsets (h);
    path = g_hash_table_lookup (sets, &(gint64){ (gint64) id });
    if (path == NULL)
        vmr_fail ("QEMU opened %s, a fd set that passes no file of the daemon", file);
    return g_strdup (path);
}

/* the id of the fd set of the daemon that passes @path, or -1 */
static gint64
fdset_of (VmrHarness *h, const gchar *path)
{
    g_autoptr (GHashTable) sets = vmr_harness_daemon_fdsets (h);
    GHashTableIter iter;
    gpointer id, passed;

    g_hash_table_iter_init (&iter, sets);
    while (g_hash_table_iter_next (&iter, &id, &passed))
        if (g_strcmp0 (passed, path) == 0)
            return *(gint64 *) id;
    return -1;
}

static gboolean
guest_running (VmrHarness *h)
{
    g_autoptr (JsonNode) status = vmr_harness_qmp (h, "query-status", NULL);

    return vmr_harness_json_bool (vmr_harness_json_node_object (status), "running");
}

void
vmr_harness_assert_no_fdset (VmrHarness *h, const gchar *path)
{
    g_autoptr (JsonNode) resumed = NULL;
    gint64 id = fdset_of (h, path);
    gint64 deadline = g_get_monotonic_time () + VMR_HARNESS_JOB_TIMEOUT_S * G_TIME_SPAN_SECOND;

    if (id < 0)
        return;
    /*
     * An older QEMU (7.2) keeps a removed fd set while its guest is stopped,
     * as the tests' QEMU is: the daemon removes it again when the guest
     * resumes, which is what is checked then
     */
    if (guest_running (h))
        vmr_fail ("QEMU still holds fd set %" G_GINT64_FORMAT " of %s", id, path);
    g_test_message ("QEMU keeps fd set %" G_GINT64_FORMAT " of %s while stopped: resuming it", id,
                    path);
    resumed = vmr_harness_qmp (h, "cont", NULL);
    while (fdset_of (h, path) >= 0) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("QEMU still holds fd set %" G_GINT64_FORMAT " of %s after the guest resumed",
                      id, path);
        g_usleep (50 * 1000);
    }
}

gchar *
vmr_harness_swapping_qemu_img (VmrHarness *h, const gchar *dest, const gchar *victim)
{
    g_autofree gchar *bin = vmr_harness_path (h, "bin");
    g_autofree gchar *script = g_build_filename (bin, "qemu-img", NULL);
    g_autofree gchar *real = g_find_program_in_path ("qemu-img");
    g_autofree gchar *text = NULL;

    if (real == NULL)
        vmr_fail ("qemu-img not found");
    text = g_strdup_printf ("#!/bin/sh\n"
                            "if [ -e '%s' ]; then mv '%s' '%s.moved'; fi\n"
                            "ln -s '%s' '%s'\n"
                            "exec '%s' \"$@\"\n",
                            dest, dest, dest, victim, dest, real);
    g_assert_cmpint (g_mkdir (bin, 0755), ==, 0);
    g_assert_true (g_file_set_contents (script, text, -1, NULL));
    g_assert_cmpint (g_chmod (script, 0755), ==, 0);
    return g_steal_pointer (&bin);
}

void
vmr_harness_assert_failed_with (VmrHarness *h, const gchar *id, const gchar *reason)
{
    g_autoptr (JsonObject) job = vmr_harness_wait_job (h, id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
    const gchar *text = vmr_json_job_reason (job);

    if (text == NULL || strstr (text, reason) == NULL || strchr (text, '\n') != NULL)
        vmr_fail ("job %s failed, but not with one line that says \"%s\": %s", id, reason, text);
    vmr_harness_assert_job_record (h, id, "failed");
}

void
vmr_harness_assert_disk_on (VmrHarness *h, const gchar *qdev_id, const gchar *path)
{
    g_autoptr (JsonNode) blocks = vmr_harness_qmp (h, "query-block", NULL);
    JsonObject *entry = find_block_device (blocks, qdev_id);
    JsonObject *inserted;
    JsonObject *image;
    g_autofree gchar *file = NULL;
    g_autofree gchar *filename = NULL;

    if (entry == NULL)
        vmr_fail ("query-block has no device %s", qdev_id);
    inserted = vmr_harness_json_object (entry, "inserted");
    file = vmr_harness_node_file (h, vmr_harness_json_string (inserted, "file"));
    g_assert_cmpstr (file, ==, path);
    image = vmr_harness_json_object (inserted, "image");
    filename = vmr_harness_node_file (h, vmr_harness_json_string (image, "filename"));
    g_assert_cmpstr (filename, ==, path);
}

JsonNode *
vmr_harness_query_nodes (VmrHarness *h)
{
    g_autoptr (JsonObject) args = json_object_new ();
    JsonNode *nodes;

    json_object_set_boolean_member (args, "flat", TRUE);
    nodes = vmr_harness_qmp (h, "query-named-block-nodes", args);
    g_assert_true (JSON_NODE_HOLDS_ARRAY (nodes));
    return nodes;
}

void
vmr_harness_assert_node_released (VmrHarness *h, const gchar *path)
{
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    JsonArray *array;

    array = vmr_harness_json_node_array (nodes);
    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *node = vmr_harness_json_element (array, i);
        const gchar *name = vmr_json_get_string (node, "node-name");
        g_autofree gchar *file = vmr_harness_node_file (h, vmr_json_get_string (node, "file"));

        if (g_strcmp0 (file, path) == 0)
            vmr_fail ("block node %s still has %s open", name != NULL ? name : "?", path);
    }
    /* nor is the file still passed to QEMU */
    vmr_harness_assert_no_fdset (h, path);
}

void
vmr_harness_assert_job_record (VmrHarness *h, const gchar *id, const gchar *state)
{
    g_autofree gchar *name = g_strdup_printf ("%s.json", id);
    g_autofree gchar *path = g_build_filename (h->state_dir, "jobs", name, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;
    JsonNode *root;

    if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
        vmr_fail ("no job record %s", path);
    json_parser_load_from_file (parser, path, &error);
    g_assert_no_error (error);
    root = json_parser_get_root (parser);
    g_assert_true (root != NULL && JSON_NODE_HOLDS_OBJECT (root));
    g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_node_object (root), "id"), ==, id);
    g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_node_object (root), "state"), ==,
                     state);
}

void
vmr_harness_assert_migrated (VmrHarness *h, const gchar *job_id, const gchar *qdev_id,
                             const gchar *source, const gchar *dest, const gchar *dest_format,
                             const gchar *expected)
{
    vmr_harness_assert_disk_on (h, qdev_id, dest);
    vmr_harness_assert_node_released (h, source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_job_record (h, job_id, "completed");
    /* quitting flushes everything QEMU wrote to the destination */
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (dest, dest_format, expected);
}

void
vmr_harness_assert_stays_on_source (VmrHarness *h, const gchar *qdev_id, const gchar *source,
                                    const gchar *source_format, const gchar *expected)
{
    vmr_harness_assert_disk_on (h, qdev_id, source);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (source, source_format, expected);
}

gboolean
vmr_harness_is_bulk_copy (JsonObject *job)
{
    const gchar *status = vmr_json_get_string (job, "status");

    if (vmr_json_bool_or (job, "ready", FALSE))
        return FALSE;
    return status == NULL || g_str_equal (status, "created") || g_str_equal (status, "running")
           || g_str_equal (status, "paused");
}
