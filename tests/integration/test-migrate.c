#define G_LOG_DOMAIN "vmr-test"

/*
 * Migrations that must succeed: every pair of formats, a disk served by an
 * iothread, an existing destination (--reuse), a disk named by its node,
 * one disk of two, a disk whose queues two iothreads serve, and a disk moved
 * twice (the second time from the file the first passed by descriptor). Each
 * proves the guest uses the destination, the old image is released, the
 * job record is final and the destination holds the source's bytes. The
 * single disks are scsi-hds (on a controller on the iothread, for that
 * case) the guest writes through while the copy runs (held back by a speed
 * limit, then let go) and after the pivot, and the destination must hold
 * every write.
 */

#include "harness.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
/* guest writes in each phase */
#define WRITES 40
/* slow enough that the copy still runs while the guest writes */
#define WRITE_PHASE_SPEED "4M"

typedef struct {
    const gchar *source_format; /* "raw" or "qcow2" */
    const gchar *dest_format;   /* "raw" or "qcow2" */
    const gchar *iothread;      /* NULL: the main loop serves the disk */
    gboolean reuse;             /* the destination exists beforehand */
    gboolean wait;              /* migrate --wait rather than polling */
    gboolean by_node;           /* name the disk by its node name, not its qdev id */
} MigrateCase;

static const MigrateCase raw_to_raw = { "raw", "raw", NULL, FALSE, TRUE };
static const MigrateCase qcow2_to_raw = { "qcow2", "raw", NULL, FALSE, FALSE };
static const MigrateCase raw_to_qcow2 = { "raw", "qcow2", NULL, FALSE, FALSE };
static const MigrateCase qcow2_to_qcow2 = { "qcow2", "qcow2", NULL, FALSE, TRUE };
static const MigrateCase iothread = { "raw", "raw", "io0", FALSE, FALSE };
static const MigrateCase reuse_raw = { "raw", "raw", NULL, TRUE, FALSE };
static const MigrateCase reuse_qcow2 = { "raw", "qcow2", NULL, TRUE, TRUE };
static const MigrateCase by_node = { "raw", "raw", NULL, FALSE, FALSE, TRUE };

/* the disk @disk_id of @domain in `domains --json` */
static JsonObject *
find_domain_disk (VmrHarness *h, const gchar *domain, const gchar *disk_id)
{
    g_autoptr (JsonNode) domains = vmr_harness_cli_json (h, "domains", NULL);
    JsonArray *array = vmr_harness_json_node_array (domains);

    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *entry = vmr_harness_json_element (array, i);
        JsonArray *disks;

        if (g_strcmp0 (vmr_harness_json_string (entry, "name"), domain) != 0)
            continue;
        disks = vmr_harness_json_array (entry, "disks");
        g_assert_nonnull (disks);
        for (guint j = 0; j < json_array_get_length (disks); j++) {
            JsonObject *disk = vmr_harness_json_element (disks, j);

            if (g_strcmp0 (vmr_harness_json_string (disk, "id"), disk_id) == 0)
                return json_object_ref (disk);
        }
    }
    vmr_fail ("`domains` has no disk %s in %s", disk_id, domain);
}

/* what the daemon reports for a disk matches what QEMU was started with */
static void
assert_domain_disk (VmrHarness *h, const gchar *disk_id, const gchar *path, const gchar *format,
                    const gchar *iothread_id)
{
    g_autoptr (JsonObject) disk = find_domain_disk (h, "vm", disk_id);

    g_assert_cmpstr (vmr_harness_json_string (disk, "path"), ==, path);
    g_assert_cmpstr (vmr_harness_json_string (disk, "format"), ==, format);
    g_assert_cmpint (vmr_harness_json_int (disk, "size"), ==, IMAGE_SIZE);
    if (iothread_id == NULL)
        g_assert_true (vmr_harness_json_is_null (disk, "iothread"));
    else
        g_assert_cmpstr (vmr_harness_json_string (disk, "iothread"), ==, iothread_id);
}

/* the id of the iothread a qom-get reply names: "/objects/io0" -> "io0" */
static const gchar *
iothread_id (const gchar *path)
{
    const gchar *slash = path != NULL ? strrchr (path, '/') : NULL;

    return slash != NULL ? slash + 1 : path;
}

/*
 * After the pivot, checked on the test monitor: the device keeps its iothread
 * (@single) or its per-queue mapping (@vq), and its node is a node of @dest.
 * QEMU has no query for the AioContext of a node; a node the device uses runs
 * in the device's context, so these two facts together are what can be checked.
 */
static void
assert_device_threads (VmrHarness *h, const VmrHarnessDisk *disk, const gchar *single,
                       const gchar *const *vq, const gchar *dest)
{
    g_autofree gchar *controller = disk->scsi ? vmr_harness_scsi_controller (disk) : NULL;
    /* a scsi-hd's threads are its controller's */
    g_autofree gchar *holder
        = disk->scsi ? g_strdup_printf ("/machine/peripheral/%s/virtio-backend", controller)
                     : g_strdup ("/machine/peripheral/disk0");
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonObject) flat = json_object_new ();
    g_autoptr (JsonNode) io = NULL;
    g_autoptr (JsonNode) mapping = NULL;
    g_autoptr (JsonNode) blocks = NULL;
    g_autoptr (JsonNode) nodes = NULL;
    const gchar *device_node = NULL;
    gboolean found = FALSE;

    json_object_set_string_member (args, "path", holder);
    json_object_set_string_member (args, "property", "iothread");
    io = vmr_harness_qmp (h, "qom-get", args);
    if (single == NULL)
        g_assert_cmpstr (vmr_json_node_string (io), ==, "");
    else
        g_assert_cmpstr (iothread_id (vmr_json_node_string (io)), ==, single);
    /* a QEMU before 9.0 (virtio-scsi: 10.0) has no per-queue mapping to ask */
    if (vq != NULL
        || vmr_harness_lists_property (h, "qom-list", "path", holder, "iothread-vq-mapping")) {
        json_object_set_string_member (args, "property", "iothread-vq-mapping");
        mapping = vmr_harness_qmp (h, "qom-get", args);
        g_assert_true (JSON_NODE_HOLDS_ARRAY (mapping));
        g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (mapping)), ==,
                          vq != NULL ? g_strv_length ((gchar **) vq) : 0);
    }
    for (guint i = 0; vq != NULL && vq[i] != NULL; i++) {
        JsonObject *entry = vmr_harness_json_element (vmr_harness_json_node_array (mapping), i);

        g_assert_cmpstr (vmr_harness_json_string (entry, "iothread"), ==, vq[i]);
    }

    blocks = vmr_harness_qmp (h, "query-block", NULL);
    for (guint i = 0; i < json_array_get_length (vmr_harness_json_node_array (blocks)); i++) {
        JsonObject *dev = vmr_harness_json_element (vmr_harness_json_node_array (blocks), i);

        const gchar *qdev = vmr_harness_json_string (dev, "qdev");

        if (g_strcmp0 (qdev, "disk0") == 0 || g_str_has_prefix (qdev, "/machine/peripheral/disk0/"))
            device_node
                = vmr_harness_json_string (vmr_harness_json_object (dev, "inserted"), "node-name");
    }
    g_assert_nonnull (device_node);
    json_object_set_boolean_member (flat, "flat", TRUE);
    nodes = vmr_harness_qmp (h, "query-named-block-nodes", flat);
    for (guint i = 0; i < json_array_get_length (vmr_harness_json_node_array (nodes)); i++) {
        JsonObject *node = vmr_harness_json_element (vmr_harness_json_node_array (nodes), i);

        if (g_strcmp0 (vmr_harness_json_string (node, "node-name"), device_node) == 0) {
            g_autofree gchar *file
                = vmr_harness_node_file (h, vmr_harness_json_string (node, "file"));

            g_assert_cmpstr (file, ==, dest);
            found = TRUE;
        }
    }
    if (!found)
        vmr_fail ("query-named-block-nodes has no node %s of disk0", device_node);
}

/* the job went copying -> synced -> pivoting -> completed, in that order */
static void
assert_history (JsonObject *job)
{
    static const gchar *const wanted[] = { "copying", "synced", "pivoting", "completed" };
    JsonArray *history = vmr_harness_json_array (job, "history");
    guint next = 0;

    g_assert_nonnull (history);
    for (guint i = 0; i < json_array_get_length (history) && next < G_N_ELEMENTS (wanted); i++) {
        JsonObject *entry = vmr_harness_json_element (history, i);

        if (g_strcmp0 (vmr_harness_json_string (entry, "state"), wanted[next]) == 0)
            next++;
    }
    if (next != G_N_ELEMENTS (wanted)) {
        g_autoptr (JsonNode) node = json_node_init_array (json_node_alloc (), history);
        g_autofree gchar *text = json_to_string (node, FALSE);

        vmr_fail ("history lacks '%s' in order: %s", wanted[next], text);
    }
}

/* `job ID --json` after the end: the CLI shows the final, complete record */
static void
assert_completed_job (VmrHarness *h, const gchar *id, const MigrateCase *c, const gchar *source)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "job", id, NULL);
    JsonObject *job = vmr_harness_json_node_object (node);
    JsonObject *progress;
    const gchar *disk;

    g_assert_nonnull (job);
    g_assert_cmpstr (vmr_harness_json_string (job, "id"), ==, id);
    g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "completed");
    disk = vmr_harness_json_string (job, "disk");
    /* a disk named by its node may be reported by either name */
    if (g_strcmp0 (disk, "disk0") != 0 && !(c->by_node && g_strcmp0 (disk, "test-fmt0") == 0))
        vmr_fail ("job %s is for disk '%s', expected disk0", id, disk);
    g_assert_cmpstr (vmr_harness_json_string (job, "source"), ==, source);
    g_assert_cmpstr (vmr_harness_json_string (job, "source-format"), ==, c->source_format);
    g_assert_cmpstr (vmr_harness_json_string (job, "format"), ==, c->dest_format);
    g_assert_cmpint (vmr_harness_json_bool (job, "created-destination"), ==, !c->reuse);
    /* QEMU's figures: the disk, and what the guest wrote again while it copied */
    progress = vmr_harness_json_object (job, "progress");
    g_assert_cmpint (vmr_harness_json_int (progress, "total"), >=, IMAGE_SIZE);
    g_assert_cmpint (vmr_harness_json_int (progress, "done"), ==,
                     vmr_harness_json_int (progress, "total"));
    g_assert_cmpint (vmr_harness_json_int (progress, "backlog"), ==, 0);
    assert_history (job);
}

static void
test_migrate (VmrHarness *h, gconstpointer user_data)
{
    const MigrateCase *c = user_data;
    g_autofree gchar *source_name = NULL;
    g_autofree gchar *dest_name = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) disk = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (GPtrArray) extra = g_ptr_array_new ();
    g_autoptr (VmrHarnessWriter) writer = NULL;
    VmrHarnessDisk vm_disk = { "disk0", NULL, c->source_format, c->iothread };
    /* a scsi-hd takes guest writes; on an I/O thread, its controller runs there */
    gboolean writes = TRUE;
    VmrCliRun *waiting = NULL;

    source_name = g_strdup_printf ("source.%s", c->source_format);
    dest_name = g_strdup_printf ("dest.%s", c->dest_format);
    source = vmr_harness_create_image (h, source_name, c->source_format, IMAGE_SIZE, 0x5eed);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, dest_name);
    if (c->reuse && g_strcmp0 (c->dest_format, "raw") == 0) {
        g_free (vmr_harness_create_file (h, dest_name, IMAGE_SIZE, 0));
    } else if (c->reuse) {
        g_autofree gchar *size = g_strdup_printf ("%d", IMAGE_SIZE);

        vmr_harness_qemu_img ("create", "-q", "-f", c->dest_format, dest, size, NULL);
    }
    vm_disk.path = source;
    vm_disk.scsi = writes;
    vmr_harness_start_qemu (h, &vm_disk, 1);
    if (writes)
        writer = vmr_harness_writer_new (h, "disk0", expected, 0x3117e);
    vmr_harness_attach (h, "vm");
    assert_domain_disk (h, "disk0", source, c->source_format, c->iothread);

    g_ptr_array_add (extra, "--format");
    g_ptr_array_add (extra, (gpointer) c->dest_format);
    if (c->reuse)
        g_ptr_array_add (extra, "--reuse");
    if (writes) {
        g_ptr_array_add (extra, "--speed");
        g_ptr_array_add (extra, WRITE_PHASE_SPEED);
    }
    if (c->wait) {
        g_autoptr (GPtrArray) args = g_ptr_array_new ();

        /* --wait follows the job to its end while the guest writes */
        g_ptr_array_add (args, "migrate");
        g_ptr_array_add (args, "vm");
        g_ptr_array_add (args, c->by_node ? "test-fmt0" : "disk0");
        g_ptr_array_add (args, dest);
        for (guint i = 0; i < extra->len; i++)
            g_ptr_array_add (args, g_ptr_array_index (extra, i));
        g_ptr_array_add (args, "--wait");
        g_ptr_array_add (args, NULL);
        waiting = vmr_harness_cli_spawnv (h, (const gchar *const *) args->pdata);
        /* the job shows up while that CLI waits */
        vmr_harness_wait_job_count (h, 1);
        id = g_strdup ("vmr-1");
        job = vmr_harness_wait_job (h, id, writes ? "copying" : "completed",
                                    VMR_HARNESS_JOB_TIMEOUT_S);
    } else {
        g_ptr_array_add (extra, NULL);
        /* the harness names the format node of the first disk test-fmt0 */
        id = vmr_harness_migratev (h, "vm", c->by_node ? "test-fmt0" : "disk0", dest,
                                   (const gchar *const *) extra->pdata);
    }
    if (writes) {
        g_autoptr (JsonObject) unlimited = NULL;

        vmr_harness_writer_write (writer, WRITES);
        unlimited = vmr_harness_job_command (h, "set-speed", id, "0");
    }
    if (waiting != NULL) {
        g_autoptr (VmrCliResult) waited = vmr_harness_cli_wait (waiting);

        /* exit status 0 means the job is completed already */
        vmr_cli_result_assert_ok (waited);
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_get_job (h, id);
    } else {
        g_clear_pointer (&job, json_object_unref);
        job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    }
    g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "completed");
    assert_completed_job (h, id, c, source);
    /* the daemon's view follows the pivot, and the disk is free again */
    assert_domain_disk (h, "disk0", dest, c->dest_format, c->iothread);
    disk = find_domain_disk (h, "vm", "disk0");
    g_assert_true (!json_object_has_member (disk, "job") || vmr_harness_json_is_null (disk, "job"));

    assert_device_threads (h, &vm_disk, c->iothread, NULL, dest);
    if (writes)
        vmr_harness_writer_write (writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, c->dest_format, expected);
    /* the source is left as it was at the pivot, for the operator to remove */
    if (!writes)
        vmr_harness_assert_image_equals (source, c->source_format, expected);
}

/* the disk's "iothreads" in `domains --json` are @wanted, in order */
static void
assert_disk_iothreads (VmrHarness *h, const gchar *path, const gchar *const *wanted)
{
    g_autoptr (JsonObject) disk = find_domain_disk (h, "vm", "disk0");
    JsonArray *ids = vmr_harness_json_array (disk, "iothreads");

    g_assert_cmpstr (vmr_harness_json_string (disk, "path"), ==, path);
    g_assert_cmpstr (vmr_harness_json_string (disk, "iothread"), ==, wanted[0]);
    g_assert_nonnull (ids);
    g_assert_cmpuint (json_array_get_length (ids), ==, g_strv_length ((gchar **) wanted));
    for (guint i = 0; wanted[i] != NULL; i++)
        g_assert_cmpstr (vmr_json_array_string (ids, i), ==, wanted[i]);
}

/* the domain's "iothreads": each of @wanted with its thread id and a CPU figure */
static void
assert_domain_iothreads (VmrHarness *h, const gchar *const *wanted)
{
    g_autoptr (JsonNode) domains = vmr_harness_cli_json (h, "domains", NULL);
    JsonObject *domain = vmr_harness_json_element (vmr_harness_json_node_array (domains), 0);
    JsonArray *threads = vmr_harness_json_array (domain, "iothreads");

    g_assert_nonnull (threads);
    g_assert_cmpuint (json_array_get_length (threads), ==, g_strv_length ((gchar **) wanted));
    for (guint i = 0; wanted[i] != NULL; i++) {
        JsonObject *thread = NULL;
        gdouble cpu = -1;

        for (guint j = 0; j < json_array_get_length (threads); j++) {
            JsonObject *candidate = vmr_harness_json_element (threads, j);

            if (g_strcmp0 (vmr_harness_json_string (candidate, "id"), wanted[i]) == 0)
                thread = candidate;
        }
        if (thread == NULL)
            vmr_fail ("the domain's iothreads lack %s", wanted[i]);
        g_assert_cmpint (vmr_harness_json_int (thread, "thread-id"), >, 0);
        g_assert_true (vmr_json_get_double (thread, "cpu", &cpu));
        g_assert_cmpfloat (cpu, >=, 0.0);
    }
}

/*
 * a disk whose queues io0 and io1 serve (iothread-vq-mapping): the daemon
 * lists both threads for it and for the domain, with the threads' CPU use;
 * the copy keeps the mapping
 */
static void
test_vq_mapping (VmrHarness *h, gconstpointer user_data)
{
    static const gchar *const threads[] = { "io0", "io1", NULL };
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrCliResult) text = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    VmrHarnessDisk vm_disk = { "disk0", NULL, "raw", NULL, threads, .scsi = TRUE };

    source = vmr_harness_create_image (h, "source.raw", "raw", IMAGE_SIZE, 0x7a);
    expected = vmr_harness_expected_path (source);
    dest = vmr_harness_path (h, "dest.raw");
    vm_disk.path = source;
    vmr_harness_start_qemu (h, &vm_disk, 1);
    writer = vmr_harness_writer_new (h, "disk0", expected, 0x7a);
    vmr_harness_attach (h, "vm");
    assert_disk_iothreads (h, source, threads);
    /* a CPU figure needs two readings: the attach took one, each query another */
    assert_domain_iothreads (h, threads);
    text = vmr_harness_cli (h, "domains", NULL);
    vmr_cli_result_assert_ok (text);
    g_test_message ("%s", text->out);
    if (strstr (text->out, "  iothreads: io") == NULL || strstr (text->out, "% (tid ") == NULL)
        vmr_fail ("`domains` shows no iothread line: %s", text->out);

    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--speed", WRITE_PHASE_SPEED, NULL);
    vmr_harness_writer_write (writer, WRITES);
    g_clear_pointer (&text, vmr_cli_result_free);
    text = vmr_harness_cli (h, "set-speed", id, "0", NULL);
    vmr_cli_result_assert_ok (text);
    json_object_unref (vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    assert_disk_iothreads (h, dest, threads);
    assert_device_threads (h, &vm_disk, NULL, threads, dest);
    vmr_harness_writer_write (writer, WRITES);
    vmr_harness_assert_migrated (h, id, "disk0", source, dest, "raw", expected);
}

/* of two disks, only the one named moves; the other is not touched */
static void
test_second_disk (VmrHarness *h, gconstpointer user_data)
{
    g_autofree gchar *source0 = NULL;
    g_autofree gchar *source1 = NULL;
    g_autofree gchar *expected0 = NULL;
    g_autofree gchar *expected1 = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrHarnessWriter) writer0 = NULL;
    g_autoptr (VmrHarnessWriter) writer1 = NULL;
    VmrHarnessDisk disks[] = {
        { "disk0", NULL, "raw", "io0", .scsi = TRUE },
        { "disk1", NULL, "qcow2", "io0", .scsi = TRUE },
    };

    source0 = vmr_harness_create_image (h, "source0.raw", "raw", IMAGE_SIZE, 100);
    source1 = vmr_harness_create_image (h, "source1.qcow2", "qcow2", IMAGE_SIZE, 101);
    expected0 = vmr_harness_expected_path (source0);
    expected1 = vmr_harness_expected_path (source1);
    dest = vmr_harness_path (h, "dest1.raw");
    disks[0].path = source0;
    disks[1].path = source1;
    vmr_harness_start_qemu (h, disks, G_N_ELEMENTS (disks));
    writer0 = vmr_harness_writer_new (h, "disk0", expected0, 100);
    writer1 = vmr_harness_writer_new (h, "disk1", expected1, 101);
    vmr_harness_attach (h, "vm");

    id = vmr_harness_migrate (h, "vm", "disk1", dest, "--speed", WRITE_PHASE_SPEED, NULL);
    vmr_harness_writer_write (writer0, WRITES);
    vmr_harness_writer_write (writer1, WRITES);
    json_object_unref (vmr_harness_job_command (h, "set-speed", id, "0"));
    json_object_unref (vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    g_clear_pointer (&id, g_free);
    {
        g_autoptr (JsonNode) jobs = vmr_harness_cli_json (h, "jobs", NULL);
        JsonObject *job = vmr_harness_json_element (vmr_harness_json_node_array (jobs), 0);

        g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (jobs)), ==, 1);
        g_assert_cmpstr (vmr_harness_json_string (job, "disk"), ==, "disk1");
        g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "completed");
        id = g_strdup (vmr_harness_json_string (job, "id"));
    }
    vmr_harness_assert_disk_on (h, "disk0", source0);
    /* each takes the guest's writes where it runs now */
    vmr_harness_writer_write (writer0, WRITES);
    vmr_harness_writer_write (writer1, WRITES);
    vmr_harness_assert_migrated (h, id, "disk1", source1, dest, "raw", expected1);
    vmr_harness_assert_image_equals (source0, "raw", expected0);
}

/*
 * a disk moved twice: the second copy's source is the file the first one
 * passed by descriptor (QEMU names it /dev/fdset/N), which the daemon knows
 * by its path; once the disk moved on, that fd set is gone from QEMU
 */
static void
test_moved_twice (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *second = NULL;
    g_autofree gchar *first_id = NULL;
    g_autofree gchar *second_id = NULL;
    g_autoptr (JsonObject) first = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) disk = NULL;

    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 102);
    vmr_harness_writer_write (vm.writer, WRITES);
    first_id = vmr_harness_migrate (h, "vm", "disk0", vm.dest, NULL);
    first = vmr_harness_wait_job (h, first_id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_disk_on (h, "disk0", vm.dest);
    /* the daemon names the disk by the file's path */
    disk = find_domain_disk (h, "vm", "disk0");
    g_assert_cmpstr (vmr_harness_json_string (disk, "path"), ==, vm.dest);
    vmr_harness_writer_write (vm.writer, WRITES);

    second = vmr_harness_path (h, "second.raw");
    second_id = vmr_harness_migrate (h, "vm", "disk0", second, NULL);
    job = vmr_harness_wait_job (h, second_id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (job, "source"), ==, vm.dest);
    vmr_harness_writer_write (vm.writer, WRITES);
    /* the first destination is released, its fd set with it */
    vmr_harness_assert_migrated (h, second_id, "disk0", vm.dest, second, "raw", vm.expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/migrate/raw-to-raw", &raw_to_raw, test_migrate);
    VMR_HARNESS_ADD ("/migrate/qcow2-to-raw", &qcow2_to_raw, test_migrate);
    VMR_HARNESS_ADD ("/migrate/raw-to-qcow2", &raw_to_qcow2, test_migrate);
    VMR_HARNESS_ADD ("/migrate/qcow2-to-qcow2", &qcow2_to_qcow2, test_migrate);
    VMR_HARNESS_ADD ("/migrate/iothread", &iothread, test_migrate);
    VMR_HARNESS_ADD ("/migrate/reuse-raw", &reuse_raw, test_migrate);
    VMR_HARNESS_ADD ("/migrate/reuse-qcow2", &reuse_qcow2, test_migrate);
    VMR_HARNESS_ADD ("/migrate/by-node-name", &by_node, test_migrate);
    VMR_HARNESS_ADD ("/migrate/second-disk", NULL, test_second_disk);
    VMR_HARNESS_ADD ("/migrate/iothread-vq-mapping", NULL, test_vq_mapping);
    VMR_HARNESS_ADD ("/migrate/moved-twice", NULL, test_moved_twice);
    return g_test_run ();
}
