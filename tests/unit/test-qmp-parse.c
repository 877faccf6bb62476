#define G_LOG_DOMAIN "vmr-test"

/*
 * The QMP backend's readings of QEMU, on the transcripts of a real QEMU 10.0
 * in tests/data/qmp (see its README for the VM they describe), and on
 * malformed variants of them, which must read as errors or absent values
 * and never raise a critical.
 */

#include "qmp-parse-malformed.h"
#include "qmp-parse.h"
#include "qmp-peer.h"
#include "vmr-error.h"
#include "vmr-json.h"

#define MiB (G_GUINT64_CONSTANT (1024) * 1024)

/* the message in tests/data/qmp/@name */
static JsonNode *
load_message (const gchar *name)
{
    g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "..", "data", "qmp", name, NULL);
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    json_parser_load_from_file (parser, path, &error);
    g_assert_no_error (error);
    return json_node_copy (json_parser_get_root (parser));
}

/* what a client hands on of the reply in @name: its "return", NULL for none */
static JsonNode *
load_return (const gchar *name)
{
    g_autoptr (JsonNode) message = load_message (name);
    JsonObject *obj = vmr_json_node_object (message);
    JsonNode *ret = obj != NULL ? json_object_get_member (obj, "return") : NULL;

    return ret != NULL ? json_node_copy (ret) : NULL;
}

/* the "data" of the event in @name */
static JsonObject *
load_event (const gchar *name, gchar **event_name)
{
    g_autoptr (JsonNode) message = load_message (name);
    JsonObject *obj = vmr_json_node_object (message);

    *event_name = g_strdup (vmr_json_get_string (obj, "event"));
    return json_object_ref (vmr_json_get_object (obj, "data"));
}

JsonNode *
qmp_parse_test_text (const gchar *text)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    if (text == NULL)
        return NULL;
    json_parser_load_from_data (parser, text, -1, &error);
    g_assert_no_error (error);
    return json_node_copy (json_parser_get_root (parser));
}

/* ---- disks ---- */

typedef struct {
    const gchar *id;
    const gchar *node;
    const gchar *format;
    const gchar *path;
    guint64 size;
    guint64 allocated;
    gboolean read_only;
    const gchar *qdev;
    const gchar *file_node;
    gboolean file_cache_direct;
} DiskCase;

/* what the capture set up; cd0 has no medium and is no disk. disk0's image
 * QEMU names "json:{...}" (its backing is given by node), its plain file
 * name is read out of that */
static const DiskCase captured_disks[] = {
    /* disk0's allocation is its own and its backing image's */
    { "disk0", "disk0-fmt", "qcow2", "/images/disk0.qcow2", 64 * MiB, 8654848 + 4 * MiB, FALSE,
      "/machine/peripheral/disk0/virtio-backend", "disk0-file", TRUE },
    { "disk1", "disk1-fmt", "raw", "/images/disk1.raw", 32 * MiB, 32 * MiB, FALSE, "disk1",
      "disk1-file", FALSE },
    { "disk2", "disk2-fmt", "raw", "/images/disk2.raw", 16 * MiB, 16 * MiB, TRUE,
      "/machine/peripheral/disk2/virtio-backend", "disk2-file", FALSE },
};

/* the disks as query-block and then query-named-block-nodes (@nodes_file) give them */
static GPtrArray *
captured_disk_list (const gchar *block_file, const gchar *nodes_file, GPtrArray **qdev_paths)
{
    g_autoptr (JsonNode) block = load_return (block_file);
    g_autoptr (JsonNode) nodes = load_return (nodes_file);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = vmr_qmp_parse_block (block, qdev_paths, &error);

    g_assert_no_error (error);
    g_assert_nonnull (disks);
    g_assert_true (vmr_qmp_parse_file_nodes (nodes, disks, &error));
    g_assert_no_error (error);
    return g_steal_pointer (&disks);
}

static void
check_disks (const gchar *nodes_file)
{
    g_autoptr (GPtrArray) qdev_paths = NULL;
    g_autoptr (GPtrArray) disks = captured_disk_list ("query-block.json", nodes_file, &qdev_paths);

    g_assert_cmpuint (disks->len, ==, G_N_ELEMENTS (captured_disks));
    g_assert_cmpuint (qdev_paths->len, ==, disks->len);
    for (guint i = 0; i < disks->len; i++) {
        const VmrDisk *disk = g_ptr_array_index (disks, i);
        const DiskCase *c = &captured_disks[i];

        g_test_message ("disk %s", c->id);
        g_assert_cmpstr (disk->id, ==, c->id);
        g_assert_cmpstr (disk->node, ==, c->node);
        g_assert_cmpstr (disk->format, ==, c->format);
        g_assert_cmpstr (disk->path, ==, c->path);
        g_assert_cmpuint (disk->size, ==, c->size);
        g_assert_cmpuint (disk->allocated, ==, c->allocated);
        g_assert_cmpint (disk->read_only, ==, c->read_only);
        g_assert_cmpstr (g_ptr_array_index (qdev_paths, i), ==, c->qdev);
        g_assert_cmpstr (disk->file_node, ==, c->file_node);
        g_assert_cmpint (disk->file_cache_direct, ==, c->file_cache_direct);
        g_assert_false (disk->file_cache_no_flush);
        /* cache.direct was set on the file node only */
        g_assert_false (disk->cache_direct);
        g_assert_false (disk->cache_no_flush);
        /* the I/O threads come from qom-get, later */
        g_assert_null (disk->iothread);
        g_assert_null (disk->iothreads);
    }
}

static void
test_disks_flat (void)
{
    g_autoptr (JsonNode) block = load_return ("query-block.json");
    JsonObject *inserted
        = vmr_json_get_object (vmr_json_array_object (vmr_json_node_array (block), 0), "inserted");

    /* the capture is what the comment above says */
    g_assert_true (g_str_has_prefix (vmr_json_get_string (inserted, "file"), "json:{"));
    check_disks ("query-named-block-nodes-flat.json");
}

static void
test_disks_tree (void)
{
    check_disks ("query-named-block-nodes.json");
}

static void
test_disks_mirroring (void)
{
    g_autoptr (GPtrArray) disks = captured_disk_list ("query-block-mirroring.json",
                                                      "query-named-block-nodes-flat.json", NULL);
    const VmrDisk *disk1 = vmr_disk_lookup (disks, "disk1");

    /* while copying, the mirror's filter is the device's top node */
    g_assert_nonnull (disk1);
    g_assert_cmpstr (disk1->node, ==, "job1-mirror");
    g_assert_cmpstr (disk1->format, ==, "mirror_top");
    g_assert_cmpstr (disk1->path, ==, "/images/disk1.raw");
    g_assert_cmpuint (disk1->size, ==, 32 * MiB);
}

static void
test_node_size (void)
{
    g_autoptr (JsonNode) reply = load_return ("query-named-block-nodes-flat.json");
    JsonArray *nodes = vmr_json_node_array (reply);
    guint64 size = 0;

    g_assert_true (vmr_qmp_parse_node_size (nodes, "disk0-fmt", &size));
    g_assert_cmpuint (size, ==, 64 * MiB);
    g_assert_true (vmr_qmp_parse_node_size (nodes, "disk1-file", &size));
    g_assert_cmpuint (size, ==, 32 * MiB);
    g_assert_true (vmr_qmp_parse_node_size (nodes, "disk2-fmt", &size));
    g_assert_cmpuint (size, ==, 16 * MiB);
    g_assert_true (vmr_qmp_parse_node_size (nodes, "disk0-base-fmt", &size));
    g_assert_cmpuint (size, ==, 4 * MiB);
    g_assert_false (vmr_qmp_parse_node_size (nodes, "job1-dst", &size));
    g_assert_false (vmr_qmp_parse_node_size (NULL, "disk0-fmt", &size));
}

static void
test_block_uses (void)
{
    static const struct {
        const gchar *file;
        gboolean node_used;
        gboolean path_used;
    } cases[] = {
        { "query-block.json", FALSE, FALSE },
        { "query-block-mirroring.json", FALSE, FALSE },
        { "query-block-pivoted.json", TRUE, TRUE },
    };

    /* a destination that does not exist here: compared by its canonical path */
    g_autoptr (VmrDestination) dest
        = vmr_destination_new ("/images/job1-dst.raw", "raw", FALSE, NULL);

    g_assert_nonnull (dest);
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autoptr (JsonNode) reply = load_return (cases[i].file);
        g_autoptr (GError) error = NULL;
        gboolean node_used = TRUE;
        gboolean path_used = TRUE;

        g_test_message ("%s", cases[i].file);
        g_assert_true (vmr_qmp_parse_block_uses (reply, NULL, "job1-dst", dest, &node_used,
                                                 &path_used, &error));
        g_assert_no_error (error);
        g_assert_cmpint (node_used, ==, cases[i].node_used);
        g_assert_cmpint (path_used, ==, cases[i].path_used);
    }
}

/*
 * a file passed by descriptor (job4): QEMU names it /dev/fdset/0, the fd
 * set's opaque names the file; the disk is read by that name, the set is
 * known in use while a node was opened from it, and a destination of that
 * path is found on the disk
 */
static void
test_passed_file (void)
{
    g_autoptr (JsonNode) sets = load_return ("query-fdsets-passed.json");
    g_autoptr (JsonNode) blocks = load_return ("query-block-passed.json");
    g_autoptr (JsonNode) nodes = load_return ("query-named-block-nodes-passed.json");
    g_autoptr (JsonNode) before = load_return ("query-named-block-nodes-flat.json");
    g_autoptr (GHashTable) fdsets = vmr_qmp_parse_fdsets (sets);
    g_autoptr (GHashTable) in_use = vmr_qmp_parse_fdsets_in_use (nodes);
    g_autoptr (GHashTable) none_in_use = vmr_qmp_parse_fdsets_in_use (before);
    g_autoptr (GHashTable) no_sets = vmr_qmp_parse_fdsets (blocks);
    g_autoptr (GPtrArray) disks = vmr_qmp_parse_block (blocks, NULL, NULL);
    g_autoptr (VmrDestination) dest
        = vmr_destination_new ("/images/job4-dst.raw", "raw", FALSE, NULL);
    g_autofree gchar *opaque = vmr_qmp_parse_fdset_opaque ("/images/job4-dst.raw");
    gint64 set = 0;
    gboolean node_used = FALSE;
    gboolean path_used = FALSE;
    VmrDisk *disk1;

    g_assert_cmpstr (opaque, ==, "virt-mirror /images/job4-dst.raw");
    g_assert_cmpuint (g_hash_table_size (fdsets), ==, 1);
    g_assert_cmpstr (g_hash_table_lookup (fdsets, &set), ==, "/images/job4-dst.raw");
    g_assert_cmpint (vmr_qmp_parse_fdset_id ("/dev/fdset/0"), ==, 0);
    g_assert_cmpint (vmr_qmp_parse_fdset_id ("/dev/fdset/x"), ==, -1);
    g_assert_cmpint (vmr_qmp_parse_fdset_id ("/images/job4-dst.raw"), ==, -1);
    /* a reply of another shape holds no set */
    g_assert_cmpuint (g_hash_table_size (no_sets), ==, 0);

    g_assert_nonnull (disks);
    disk1 = vmr_disk_lookup (disks, "disk1");
    g_assert_nonnull (disk1);
    g_assert_cmpstr (disk1->path, ==, "/dev/fdset/0");
    {
        g_autofree gchar *real = vmr_qmp_parse_real_path (fdsets, disk1->path);
        g_autofree gchar *other = vmr_qmp_parse_real_path (fdsets, "/images/disk2.raw");
        g_autofree gchar *unknown = vmr_qmp_parse_real_path (fdsets, "/dev/fdset/7");

        g_assert_cmpstr (real, ==, "/images/job4-dst.raw");
        g_assert_cmpstr (other, ==, "/images/disk2.raw");
        g_assert_cmpstr (unknown, ==, "/dev/fdset/7");
    }
    g_assert_true (g_hash_table_contains (in_use, &set));
    g_assert_cmpuint (g_hash_table_size (none_in_use), ==, 0);

    g_assert_true (
        vmr_qmp_parse_block_uses (blocks, fdsets, "job4-dst", dest, &node_used, &path_used, NULL));
    g_assert_true (node_used);
    g_assert_true (path_used);
    g_assert_true (
        vmr_qmp_parse_block_uses (blocks, NULL, "job1-dst", dest, &node_used, &path_used, NULL));
    g_assert_false (node_used);
    g_assert_false (path_used);
}

/* ---- I/O threads ---- */

static void
test_iothreads (void)
{
    g_autoptr (JsonNode) reply = load_return ("query-iothreads.json");
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) threads = vmr_qmp_parse_iothreads (reply, &error);
    const VmrQmpIothread *thread;

    g_assert_no_error (error);
    g_assert_cmpuint (threads->len, ==, 2);
    thread = g_ptr_array_index (threads, 0);
    g_assert_cmpstr (thread->id, ==, "iothread0");
    g_assert_cmpint (thread->thread_id, ==, 4101);
    thread = g_ptr_array_index (threads, 1);
    g_assert_cmpstr (thread->id, ==, "iothread1");
    g_assert_cmpint (thread->thread_id, ==, 4102);
}

/* the look-up the backend does, on the captured qom-get replies */
static void
test_iothread_lookup (void)
{
    g_autoptr (GPtrArray) disks
        = captured_disk_list ("query-block.json", "query-named-block-nodes-flat.json", NULL);
    g_autoptr (JsonNode) disk0_thread = load_return ("qom-get-iothread.json");
    g_autoptr (JsonNode) disk0_mapping = load_return ("qom-get-iothread-vq-mapping-none.json");
    g_autoptr (JsonNode) disk1_bus = load_return ("qom-get-parent-bus.json");
    g_autoptr (JsonNode) scsi_thread = load_return ("qom-get-scsi-iothread.json");
    g_autoptr (JsonNode) disk2_mapping = load_return ("qom-get-iothread-vq-mapping.json");
    g_autoptr (JsonNode) no_property = load_return ("error-qom-get-no-property.json");
    g_autofree gchar *controller = vmr_qmp_parse_bus_controller (disk1_bus);
    VmrDisk *disk0 = g_ptr_array_index (disks, 0);
    VmrDisk *disk1 = g_ptr_array_index (disks, 1);
    VmrDisk *disk2 = g_ptr_array_index (disks, 2);

    /* an error reply hands on no "return" */
    g_assert_null (no_property);
    g_assert_null (vmr_qmp_parse_iothread (no_property));
    g_assert_null (vmr_qmp_parse_vq_mapping (no_property));
    g_assert_null (vmr_qmp_parse_bus_controller (no_property));

    disk0->iothread = vmr_qmp_parse_iothread (disk0_thread);
    disk0->iothreads = vmr_qmp_parse_vq_mapping (disk0_mapping);
    g_assert_cmpstr (disk0->iothread, ==, "iothread0");
    g_assert_null (disk0->iothreads);

    /* the scsi-hd's thread is its controller's */
    g_assert_cmpstr (controller, ==, "/machine/peripheral/scsi0/virtio-backend");
    disk1->iothread = vmr_qmp_parse_iothread (scsi_thread);
    g_assert_cmpstr (disk1->iothread, ==, "iothread1");

    disk2->iothreads = vmr_qmp_parse_vq_mapping (disk2_mapping);
    g_assert_nonnull (disk2->iothreads);
    g_assert_cmpuint (g_strv_length (disk2->iothreads), ==, 2);
    g_assert_cmpstr (disk2->iothreads[0], ==, "iothread0");
    g_assert_cmpstr (disk2->iothreads[1], ==, "iothread1");

    vmr_qmp_parse_settle_iothreads (disks);
    g_assert_cmpuint (g_strv_length (disk0->iothreads), ==, 1);
    g_assert_cmpstr (disk0->iothreads[0], ==, "iothread0");
    g_assert_cmpuint (g_strv_length (disk1->iothreads), ==, 1);
    g_assert_cmpstr (disk1->iothreads[0], ==, "iothread1");
    g_assert_cmpstr (disk2->iothread, ==, "iothread0");
}

static void
test_proc (void)
{
    static const struct {
        const gchar *what;
        const gchar *stat;
        gboolean ok;
        guint64 ticks;
    } stats[] = {
        { "plain", "4101 (IO iothread0) S 1 4000 4000 0 -1 4194368 0 0 0 0 7 5 0 0 20 0", TRUE,
          12 },
        { "parentheses in the name", "4101 (a) b (c)) R 1 2 3 4 5 6 7 8 9 10 11 12 13", TRUE, 23 },
        { "large", "9 (q) S 0 0 0 0 0 0 0 0 0 0 4294967296 4294967296 0", TRUE, 8589934592 },
        { "short", "4101 (q) S 1 2 3 4 5 6 7 8 9 10", FALSE, 0 },
        { "no name", "4101 q S 1 2 3 4 5 6 7 8 9 10 11 12 13", FALSE, 0 },
        { "empty", "", FALSE, 0 },
        { "none", NULL, FALSE, 0 },
    };
    static const struct {
        const gchar *what;
        const gchar *status;
        gboolean ok;
        gint64 tgid;
    } statuses[] = {
        { "plain", "Name:\tqemu\nTgid:\t4000\nPid:\t4101\n", TRUE, 4000 },
        { "no Tgid", "Name:\tqemu\nPid:\t4101\n", FALSE, 0 },
        { "Tgid first, no line before", "Tgid:\t4000\n", FALSE, 0 },
        { "not a number", "Name:\tq\nTgid:\tabc\n", FALSE, 0 },
        { "zero", "Name:\tq\nTgid:\t0\n", FALSE, 0 },
        { "none", NULL, FALSE, 0 },
    };
    g_autofree gchar *status_path = g_test_build_filename (G_TEST_DIST, "..", "data", "qmp",
                                                           "proc-iothread-status.txt", NULL);
    g_autofree gchar *stat_path
        = g_test_build_filename (G_TEST_DIST, "..", "data", "qmp", "proc-iothread-stat.txt", NULL);
    g_autofree gchar *status = NULL;
    g_autofree gchar *stat = NULL;
    g_auto (GStrv) fields = NULL;
    gint64 tgid = 0;
    guint64 ticks = 1;

    /* the captured files: utime and stime are fields 14 and 15 */
    g_assert_true (g_file_get_contents (status_path, &status, NULL, NULL));
    g_assert_true (vmr_qmp_parse_proc_tgid (status, &tgid));
    g_assert_cmpint (tgid, ==, 4000);
    g_assert_true (g_file_get_contents (stat_path, &stat, NULL, NULL));
    g_assert_true (vmr_qmp_parse_proc_ticks (stat, &ticks));
    fields = g_strsplit (stat, " ", -1);
    g_assert_cmpuint (g_strv_length (fields), >, 15);
    g_assert_cmpuint (ticks, ==,
                      g_ascii_strtoull (fields[13], NULL, 10)
                          + g_ascii_strtoull (fields[14], NULL, 10));

    for (guint i = 0; i < G_N_ELEMENTS (stats); i++) {
        guint64 got = 0;

        g_test_message ("stat: %s", stats[i].what);
        g_assert_cmpint (vmr_qmp_parse_proc_ticks (stats[i].stat, &got), ==, stats[i].ok);
        g_assert_cmpuint (got, ==, stats[i].ticks);
    }
    for (guint i = 0; i < G_N_ELEMENTS (statuses); i++) {
        gint64 got = 0;

        g_test_message ("status: %s", statuses[i].what);
        g_assert_cmpint (vmr_qmp_parse_proc_tgid (statuses[i].status, &got), ==, statuses[i].ok);
        g_assert_cmpint (got, ==, statuses[i].tgid);
    }
}

/* ---- load ---- */

static void
test_blockstats (void)
{
    g_autoptr (JsonNode) reply = load_return ("query-blockstats.json");
    g_autoptr (GError) error = NULL;
    g_autoptr (GHashTable) load = vmr_qmp_parse_blockstats (reply, &error);
    const VmrIoCounters *counters;

    g_assert_no_error (error);
    /* keyed by device, the empty drive included */
    g_assert_cmpuint (g_hash_table_size (load), ==, 4);
    /* the firmware read the boot disk's first sector and looked at the CD drive */
    counters = g_hash_table_lookup (load, "disk1");
    g_assert_nonnull (counters);
    g_assert_cmpuint (counters->read_ops, ==, 1);
    g_assert_cmpuint (counters->read_time_ns, >, 0);
    g_assert_cmpuint (counters->write_ops, ==, 0);
    g_assert_cmpuint (counters->write_time_ns, ==, 0);
    counters = g_hash_table_lookup (load, "cd0");
    g_assert_nonnull (counters);
    g_assert_cmpuint (counters->read_ops, >, 0);
    g_assert_cmpuint (counters->write_ops, ==, 0);
    for (guint i = 0; i < 2; i++) {
        counters = g_hash_table_lookup (load, i == 0 ? "disk0" : "disk2");
        g_assert_nonnull (counters);
        g_assert_cmpuint (counters->read_ops, ==, 0);
        g_assert_cmpuint (counters->write_ops, ==, 0);
        g_assert_cmpuint (counters->read_time_ns, ==, 0);
        g_assert_cmpuint (counters->write_time_ns, ==, 0);
    }
}

/* ---- jobs ---- */

typedef struct {
    const gchar *file;
    const gchar *id;
    const gchar *status;
    const gchar *error;
    guint64 total_bytes;
    guint64 done_bytes;
    guint64 speed;
    gboolean paused;
    gboolean ready;
} JobCase;

static const JobCase job_cases[] = {
    /* at 1 byte/s one 16 MiB buffer goes, then the job sleeps */
    { "query-block-jobs-running.json", "job1", "running", NULL, 32 * MiB, 16 * MiB, 1, FALSE,
      FALSE },
    { "query-block-jobs-paused.json", "job1", "paused", NULL, 32 * MiB, 16 * MiB, 1, TRUE, FALSE },
    { "query-block-jobs-ready.json", "job1", "ready", NULL, 32 * MiB, 32 * MiB, 0, FALSE, TRUE },
    { "query-block-jobs-standby.json", "job1", "standby", NULL, 32 * MiB, 32 * MiB, 0, TRUE, TRUE },
    /* after the pivot: no error, and no longer "ready" */
    { "query-block-jobs-concluded.json", "job1", "concluded", NULL, 32 * MiB, 32 * MiB, 0, FALSE,
      FALSE },
    /* disk0 with its backing file, cancelled once in sync */
    { "query-block-jobs-cancelled.json", "job2", "concluded", "Operation canceled", 64 * MiB,
      64 * MiB, 0, FALSE, FALSE },
    { "query-block-jobs-failed.json", "job3", "concluded", "Input/output error", 16 * MiB, 0, 0,
      FALSE, FALSE },
};

static void
test_block_jobs (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (job_cases); i++) {
        const JobCase *c = &job_cases[i];
        g_autoptr (JsonNode) reply = load_return (c->file);
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) jobs = vmr_qmp_parse_block_jobs (reply, &error);
        g_autoptr (VmrBackendProgress) progress = NULL;
        const VmrQmpBlockJob *job;

        g_test_message ("%s", c->file);
        g_assert_no_error (error);
        g_assert_cmpuint (jobs->len, ==, 1);
        job = vmr_qmp_block_jobs_find (jobs, c->id);
        g_assert_true (job == g_ptr_array_index (jobs, 0));
        g_assert_null (vmr_qmp_block_jobs_find (jobs, "job9"));
        g_assert_cmpstr (job->id, ==, c->id);
        g_assert_cmpstr (job->status, ==, c->status);
        g_assert_cmpstr (job->error, ==, c->error);
        g_assert_cmpuint (job->total_bytes, ==, c->total_bytes);
        g_assert_cmpuint (job->done_bytes, ==, c->done_bytes);
        g_assert_cmpuint (job->speed, ==, c->speed);
        g_assert_cmpint (job->paused, ==, c->paused);
        g_assert_cmpint (job->ready, ==, c->ready);

        progress = vmr_qmp_block_job_to_progress (job);
        g_assert_cmpstr (progress->job_id, ==, c->id);
        g_assert_cmpuint (progress->total_bytes, ==, c->total_bytes);
        g_assert_cmpuint (progress->done_bytes, ==, c->done_bytes);
        g_assert_cmpuint (progress->speed, ==, c->speed);
        g_assert_cmpint (progress->paused, ==, c->paused);
        g_assert_cmpint (progress->ready, ==, c->ready);
    }
}

static void
test_block_jobs_empty (void)
{
    g_autoptr (JsonNode) reply = load_return ("query-block-jobs-empty.json");
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) jobs = vmr_qmp_parse_block_jobs (reply, &error);

    g_assert_no_error (error);
    g_assert_cmpuint (jobs->len, ==, 0);
    g_assert_null (vmr_qmp_block_jobs_find (jobs, "job1"));
}

typedef struct {
    const gchar *file;
    VmrQmpJobEventKind kind;
    const gchar *job_id;
    const gchar *error;
    const gchar *operation;
} EventCase;

static const EventCase event_cases[] = {
    { "event-block-job-ready.json", VMR_QMP_JOB_EVENT_READY, "job1", NULL, NULL },
    { "event-block-job-completed.json", VMR_QMP_JOB_EVENT_COMPLETED, "job1", NULL, NULL },
    { "event-block-job-completed-error.json", VMR_QMP_JOB_EVENT_FAILED, "job3",
      "Input/output error", NULL },
    { "event-block-job-cancelled.json", VMR_QMP_JOB_EVENT_CANCELLED, "job2", NULL, NULL },
    { "event-block-job-error.json", VMR_QMP_JOB_EVENT_IO_ERROR, "job3", NULL, "write" },
    { "event-job-status-change-ready.json", VMR_QMP_JOB_EVENT_READY, "job1", NULL, NULL },
    { "event-job-status-change-concluded.json", VMR_QMP_JOB_EVENT_CONCLUDED, "job1", NULL, NULL },
    /* the other states are the job's, nothing the backend acts on */
    { "event-job-status-change-created.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-running.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-paused.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-standby.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-waiting.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-pending.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
    { "event-job-status-change-aborting.json", VMR_QMP_JOB_EVENT_NONE, "job2", NULL, NULL },
    { "event-job-status-change-null.json", VMR_QMP_JOB_EVENT_NONE, "job1", NULL, NULL },
};

static void
test_events (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (event_cases); i++) {
        const EventCase *c = &event_cases[i];
        g_autofree gchar *name = NULL;
        g_autoptr (JsonObject) data = load_event (c->file, &name);
        VmrQmpJobEvent event;

        g_test_message ("%s", c->file);
        g_assert_true (vmr_qmp_parse_job_event (name, data, &event));
        g_assert_cmpint (event.kind, ==, c->kind);
        g_assert_cmpstr (event.job_id, ==, c->job_id);
        g_assert_cmpstr (event.error, ==, c->error);
        g_assert_cmpstr (event.operation, ==, c->operation);
    }
}

/* a mirror reads its source and writes its destination: BLOCK_JOB_ERROR's operation names the side
 */
static void
test_mirror_request (void)
{
    g_assert_cmpstr (vmr_qmp_parse_mirror_request ("read"), ==, "a read from the source");
    g_assert_cmpstr (vmr_qmp_parse_mirror_request ("write"), ==, "a write to the destination");
    g_assert_cmpstr (vmr_qmp_parse_mirror_request (NULL), ==, "a request of the copy");
}

/* ---- the greeting and error replies ---- */

static void
test_greeting (void)
{
    static const gchar *const not_qemu[]
        = { "{}", "{\"version\": 3}", "{\"version\": {}}", "{\"version\": {\"qemu\": \"10\"}}" };
    g_autoptr (JsonNode) greeting = load_message ("greeting.json");

    g_assert_true (vmr_qmp_parse_greeting_is_qemu (
        vmr_json_get_object (vmr_json_node_object (greeting), "QMP")));
    g_assert_false (vmr_qmp_parse_greeting_is_qemu (NULL));
    for (guint i = 0; i < G_N_ELEMENTS (not_qemu); i++) {
        g_autoptr (JsonNode) node = qmp_parse_test_text (not_qemu[i]);

        g_assert_false (vmr_qmp_parse_greeting_is_qemu (vmr_json_node_object (node)));
    }
}

/* the captured error replies, through the real client: QEMU's class and desc come out */
static void
test_error_replies (QmpPeerFixture *fx, gconstpointer user_data)
{
    static const struct {
        const gchar *file;
        const gchar *command;
        VmrErrorCode code;
        const gchar *desc;
    } cases[] = {
        { "error-command-not-found.json", "no-such-command", VMR_ERROR_COMMAND_NOT_FOUND,
          "The command no-such-command has not been found" },
        { "error-blockdev-mirror-no-device.json", "blockdev-mirror", VMR_ERROR_GENERIC,
          "Cannot find device='no-such-node' nor node-name='no-such-node'" },
        { "error-qom-get-no-property.json", "qom-get", VMR_ERROR_GENERIC,
          "Property 'scsi-hd.iothread' not found" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autoptr (JsonNode) message = load_message (cases[i].file);
        g_autofree gchar *text = json_to_string (message, FALSE);
        g_autoptr (GError) error = NULL;
        g_autoptr (JsonNode) reply = NULL;

        g_test_message ("%s", cases[i].file);
        fx->answer_all = text;
        reply = vmr_qmp_client_execute_sync (fx->client, cases[i].command, NULL, 0, &error);
        fx->answer_all = NULL;
        g_assert_null (reply);
        g_assert_error (error, VMR_ERROR, (gint) cases[i].code);
        g_assert_cmpstr (error->message, ==, cases[i].desc);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);

    g_test_add_func ("/qmp-parse/disks/flat", test_disks_flat);
    g_test_add_func ("/qmp-parse/disks/tree", test_disks_tree);
    g_test_add_func ("/qmp-parse/disks/mirroring", test_disks_mirroring);
    g_test_add_func ("/qmp-parse/disks/node-size", test_node_size);
    g_test_add_func ("/qmp-parse/disks/uses", test_block_uses);
    g_test_add_func ("/qmp-parse/disks/passed-file", test_passed_file);
    g_test_add_func ("/qmp-parse/iothreads/list", test_iothreads);
    g_test_add_func ("/qmp-parse/iothreads/lookup", test_iothread_lookup);
    g_test_add_func ("/qmp-parse/iothreads/proc", test_proc);
    g_test_add_func ("/qmp-parse/load/blockstats", test_blockstats);
    g_test_add_func ("/qmp-parse/jobs/states", test_block_jobs);
    g_test_add_func ("/qmp-parse/jobs/empty", test_block_jobs_empty);
    g_test_add_func ("/qmp-parse/events/captured", test_events);
    g_test_add_func ("/qmp-parse/events/mirror-request", test_mirror_request);
    g_test_add_func ("/qmp-parse/greeting", test_greeting);
    g_test_add ("/qmp-parse/error-replies", QmpPeerFixture, NULL, qmp_peer_setup_connected,
                test_error_replies, qmp_peer_teardown);
    qmp_parse_malformed_add_tests ();
    return g_test_run ();
}
