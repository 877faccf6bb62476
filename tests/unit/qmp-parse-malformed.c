#define G_LOG_DOMAIN "vmr-test"

/*
 * The QMP backend's readings of replies and events that a real QEMU does
 * not send: wrong types, missing members, empty and non-array replies. Each
 * must read as an error or an absent value, never raise a critical.
 */

#include "qmp-parse-malformed.h"

#include "qmp-parse.h"
#include "vmr-error.h"
#include "vmr-json.h"

static void
test_events_malformed (void)
{
    static const struct {
        const gchar *name;
        const gchar *data;
        gboolean is_job;
        VmrQmpJobEventKind kind;
    } cases[] = {
        { "STOP", NULL, FALSE, VMR_QMP_JOB_EVENT_NONE },
        { "STOP", "{}", FALSE, VMR_QMP_JOB_EVENT_NONE },
        { NULL, "{\"id\": \"job1\"}", FALSE, VMR_QMP_JOB_EVENT_NONE },
        /* the block job events name the job "device", the others "id" */
        { "BLOCK_JOB_READY", "{\"id\": \"job1\"}", FALSE, VMR_QMP_JOB_EVENT_NONE },
        { "JOB_STATUS_CHANGE", "{\"device\": \"job1\", \"status\": \"ready\"}", FALSE,
          VMR_QMP_JOB_EVENT_NONE },
        { "BLOCK_JOB_READY", "{\"device\": 7}", FALSE, VMR_QMP_JOB_EVENT_NONE },
        { "JOB_STATUS_CHANGE", "{\"id\": \"job1\", \"status\": 3}", TRUE, VMR_QMP_JOB_EVENT_NONE },
        { "JOB_STATUS_CHANGE", "{\"id\": \"job1\"}", TRUE, VMR_QMP_JOB_EVENT_NONE },
        /* an error that is no string is no error */
        { "BLOCK_JOB_COMPLETED", "{\"device\": \"job1\", \"error\": 5}", TRUE,
          VMR_QMP_JOB_EVENT_COMPLETED },
        { "BLOCK_JOB_ERROR", "{\"device\": \"job1\", \"operation\": []}", TRUE,
          VMR_QMP_JOB_EVENT_IO_ERROR },
        { "DEVICE_DELETED", "{\"device\": \"disk0\"}", FALSE, VMR_QMP_JOB_EVENT_NONE },
    };

    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autoptr (JsonNode) node = qmp_parse_test_text (cases[i].data);
        VmrQmpJobEvent event;

        g_test_message ("%s %s", cases[i].name, cases[i].data);
        g_assert_cmpint (
            vmr_qmp_parse_job_event (cases[i].name, vmr_json_node_object (node), &event), ==,
            cases[i].is_job);
        g_assert_cmpint (event.kind, ==, cases[i].kind);
        g_assert_null (event.error);
        g_assert_null (event.operation);
        if (!cases[i].is_job)
            g_assert_null (event.job_id);
    }
}

/* ---- malformed replies ---- */

typedef enum {
    PARSE_BLOCK,
    PARSE_FILE_NODES,
    PARSE_IOTHREADS,
    PARSE_BLOCKSTATS,
    PARSE_BLOCK_JOBS,
    PARSE_BLOCK_USES,
#define PARSE_LAST PARSE_BLOCK_USES
} ParseKind;

typedef struct {
    const gchar *what;
    ParseKind kind;
    const gchar *reply; /* NULL: no "return" at all */
    gboolean fails;
    guint n; /* what came out: disks, threads, entries, jobs; for uses, 1 if any */
} MalformedCase;

static const MalformedCase malformed_cases[] = {
    { "block: no objects", PARSE_BLOCK, "[1, \"x\", null, [], true]", FALSE, 0 },
    { "block: inserted not an object", PARSE_BLOCK, "[{\"inserted\": [\"n\"]}]", FALSE, 0 },
    { "block: node name a number", PARSE_BLOCK, "[{\"inserted\": {\"node-name\": 5}}]", FALSE, 0 },
    { "block: only a node name", PARSE_BLOCK, "[{\"inserted\": {\"node-name\": \"n\"}}]", FALSE,
      1 },
    { "file nodes: no objects", PARSE_FILE_NODES, "[1, [], null]", FALSE, 0 },
    { "file nodes: wrong types", PARSE_FILE_NODES,
      "[{\"node-name\": \"f\", \"drv\": 1, \"file\": \"/images/disk0.qcow2\"},"
      " {\"node-name\": 2, \"drv\": \"file\", \"file\": [\"/images/disk0.qcow2\"]}]",
      FALSE, 0 },
    { "file nodes: no name", PARSE_FILE_NODES,
      "[{\"drv\": \"file\", \"file\": \"/images/disk0.qcow2\", \"cache\": 1}]", FALSE, 0 },
    { "iothreads: wrong types", PARSE_IOTHREADS,
      "[{\"id\": 5}, {\"thread-id\": 3}, \"io0\", {\"id\": \"a\", \"thread-id\": \"x\"}]", FALSE,
      1 },
    { "blockstats: no device", PARSE_BLOCKSTATS,
      "[{\"qdev\": \"\", \"stats\": {}}, {\"stats\": {}}, {\"qdev\": 4, \"stats\": {}}]", FALSE,
      0 },
    /* a QOM path but of no peripheral, and no drive or node name: nothing names the disk (this
     * was a NULL key, found by the fuzzer) */
    { "blockstats: no name", PARSE_BLOCKSTATS,
      "[{\"qdev\": \"/machine/unattached/device[3]\", \"stats\": {}},"
      " {\"qdev\": \"a/b\", \"device\": \"\", \"node-name\": 3, \"stats\": {}}]",
      FALSE, 0 },
    { "blockstats: stats not an object", PARSE_BLOCKSTATS,
      "[{\"qdev\": \"d\", \"stats\": [1]}, {\"qdev\": \"e\"}, 7]", FALSE, 0 },
    { "blockstats: counters of other types", PARSE_BLOCKSTATS,
      "[{\"qdev\": \"d\", \"stats\": {\"rd_operations\": -1, \"wr_operations\": \"3\","
      " \"rd_total_time_ns\": 1.5, \"wr_total_time_ns\": null}}]",
      FALSE, 1 },
    { "block jobs: no id", PARSE_BLOCK_JOBS, "[{\"device\": 3}, {\"id\": \"job1\"}, [], null]",
      FALSE, 0 },
    { "block jobs: members of other types", PARSE_BLOCK_JOBS,
      "[{\"device\": \"j\", \"len\": -5, \"offset\": \"1\", \"speed\": true, \"paused\": 1,"
      " \"ready\": \"true\", \"status\": 4, \"error\": false}]",
      FALSE, 1 },
    { "block uses: wrong types", PARSE_BLOCK_USES,
      "[{\"inserted\": {\"node-name\": [\"job1-dst\"], \"file\": 3}}, {\"inserted\": 1}, 2]", FALSE,
      0 },
};

/* runs @c's parser; what came out must be all zero, NULL or FALSE but for ids */
static void
check_malformed (const MalformedCase *c)
{
    g_autoptr (JsonNode) reply = qmp_parse_test_text (c->reply);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) items = NULL;
    g_autoptr (GHashTable) load = NULL;
    g_autoptr (VmrDisk) disk = vmr_disk_new ();
    guint n = 0;
    gboolean ok = FALSE;

    switch (c->kind) {
        case PARSE_BLOCK:
            items = vmr_qmp_parse_block (reply, NULL, &error);
            ok = items != NULL;
            for (guint i = 0; ok && i < items->len; i++) {
                const VmrDisk *found = g_ptr_array_index (items, i);

                /* named after its node when there is nothing better */
                g_assert_cmpstr (found->id, ==, "n");
                g_assert_null (found->format);
                g_assert_null (found->path);
                g_assert_cmpuint (found->size, ==, 0);
                g_assert_false (found->read_only);
            }
            n = ok ? items->len : 0;
            break;
        case PARSE_FILE_NODES:
            disk->node = g_strdup ("disk0-fmt");
            disk->path = g_strdup ("/images/disk0.qcow2");
            items = g_ptr_array_new ();
            g_ptr_array_add (items, disk);
            ok = vmr_qmp_parse_file_nodes (reply, items, &error);
            g_assert_null (disk->file_node);
            g_assert_false (disk->file_cache_direct);
            break;
        case PARSE_IOTHREADS:
            items = vmr_qmp_parse_iothreads (reply, &error);
            ok = items != NULL;
            for (guint i = 0; ok && i < items->len; i++)
                g_assert_cmpint (((VmrQmpIothread *) g_ptr_array_index (items, i))->thread_id, ==,
                                 0);
            n = ok ? items->len : 0;
            break;
        case PARSE_BLOCKSTATS: {
            GHashTableIter iter;
            const VmrIoCounters *counters;

            load = vmr_qmp_parse_blockstats (reply, &error);
            ok = load != NULL;
            n = ok ? g_hash_table_size (load) : 0;
            if (ok)
                g_hash_table_iter_init (&iter, load);
            while (ok && g_hash_table_iter_next (&iter, NULL, (gpointer *) &counters)) {
                g_assert_cmpuint (counters->read_ops, ==, 0);
                g_assert_cmpuint (counters->write_ops, ==, 0);
                g_assert_cmpuint (counters->read_time_ns, ==, 0);
                g_assert_cmpuint (counters->write_time_ns, ==, 0);
            }
            break;
        }
        case PARSE_BLOCK_JOBS:
            items = vmr_qmp_parse_block_jobs (reply, &error);
            ok = items != NULL;
            for (guint i = 0; ok && i < items->len; i++) {
                const VmrQmpBlockJob *job = g_ptr_array_index (items, i);

                g_assert_null (job->status);
                g_assert_null (job->error);
                g_assert_cmpuint (job->total_bytes + job->done_bytes + job->speed, ==, 0);
                g_assert_false (job->paused || job->ready);
            }
            n = ok ? items->len : 0;
            break;
        case PARSE_BLOCK_USES: {
            g_autoptr (VmrDestination) dest
                = vmr_destination_new ("/images/job1-dst.raw", "raw", FALSE, NULL);
            gboolean node_used = FALSE;
            gboolean path_used = FALSE;

            ok = vmr_qmp_parse_block_uses (reply, NULL, "job1-dst", dest, &node_used, &path_used,
                                           &error);
            n = node_used || path_used ? 1 : 0;
            break;
        }
    }
    if (c->fails) {
        g_assert_false (ok);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL);
        g_assert_true (g_str_has_prefix (error->message, "unexpected reply to '"));
    } else {
        g_assert_no_error (error);
        g_assert_true (ok);
    }
    g_assert_cmpuint (n, ==, c->n);
}

static void
test_malformed (void)
{
    /* no "return", or one that is not an array, or an empty one: for every parser */
    static const gchar *const not_arrays[] = { NULL, "{}", "\"query-block\"", "42", "null" };

    for (ParseKind kind = 0; kind <= PARSE_LAST; kind++) {
        MalformedCase c = { "empty", kind, "[]", FALSE, 0 };

        g_test_message ("parser %d: empty", kind);
        check_malformed (&c);
        for (guint i = 0; i < G_N_ELEMENTS (not_arrays); i++) {
            c.what = not_arrays[i];
            c.reply = not_arrays[i];
            c.fails = TRUE;
            g_test_message ("parser %d: %s", kind, not_arrays[i]);
            check_malformed (&c);
        }
    }
    for (guint i = 0; i < G_N_ELEMENTS (malformed_cases); i++) {
        g_test_message ("%s", malformed_cases[i].what);
        check_malformed (&malformed_cases[i]);
    }
}

static void
test_malformed_properties (void)
{
    static const struct {
        const gchar *reply;
        const gchar *iothread;
        const gchar *controller;
        const gchar *mapping; /* joined by "," */
    } cases[] = {
        { NULL, NULL, NULL, NULL },
        { "5", NULL, NULL, NULL },
        { "\"\"", NULL, NULL, NULL },
        { "{}", NULL, NULL, NULL },
        { "[]", NULL, NULL, NULL },
        { "\"io0\"", "io0", NULL, NULL },
        { "\"scsi0.0\"", "scsi0.0", NULL, NULL },
        { "\"/scsi0.0\"", "scsi0.0", NULL, NULL },
        { "\"/a/b\"", "b", "/a", NULL },
        { "[1, {\"iothread\": 2}, {\"iothread\": \"a\"}, {\"iothread\": \"a\"}, {\"iothread\": "
          "\"b\"}]",
          NULL, NULL, "a,b" },
        { "[{\"vqs\": [0]}]", NULL, NULL, NULL },
    };

    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autoptr (JsonNode) reply = qmp_parse_test_text (cases[i].reply);
        g_autofree gchar *iothread = vmr_qmp_parse_iothread (reply);
        g_autofree gchar *controller = vmr_qmp_parse_bus_controller (reply);
        g_auto (GStrv) mapping = vmr_qmp_parse_vq_mapping (reply);
        g_autofree gchar *joined = mapping != NULL ? g_strjoinv (",", mapping) : NULL;

        g_test_message ("%s", cases[i].reply);
        g_assert_cmpstr (iothread, ==, cases[i].iothread);
        g_assert_cmpstr (controller, ==, cases[i].controller);
        g_assert_cmpstr (joined, ==, cases[i].mapping);
    }
}

static void
test_names (void)
{
    static const struct {
        const gchar *name;
        const gchar *plain;
    } files[] = {
        { "/images/disk0.qcow2", "/images/disk0.qcow2" },
        { "json:{\"driver\": \"raw\", \"file\": {\"driver\": \"file\", \"filename\": "
          "\"/images/a.raw\"}}",
          "/images/a.raw" },
        { "json:{\"driver\": \"raw\", \"file\": {\"driver\": \"blkdebug\", \"image\": {}, "
          "\"file\": {\"filename\": \"/images/b.raw\"}}}",
          "/images/b.raw" },
        { "json:{bad", "json:{bad" },
        { "json:[1]", "json:[1]" },
        { "json:{\"file\": 3}", "json:{\"file\": 3}" },
        { "json:{\"filename\": 3}", "json:{\"filename\": 3}" },
        { NULL, NULL },
    };
    static const struct {
        const gchar *qdev;
        const gchar *device;
        const gchar *node;
        const gchar *id;
    } ids[] = {
        { "/machine/peripheral/disk0/virtio-backend", "", "disk0-fmt", "disk0" },
        { "/machine/peripheral/disk0", NULL, NULL, "disk0" },
        { "disk1", "", "disk1-fmt", "disk1" },
        { "/machine/peripheral-anon/device[0]/virtio-backend", "drive0", "n", "drive0" },
        { "", "", "n", "n" },
        { NULL, NULL, "n", "n" },
        { NULL, NULL, NULL, NULL },
    };
    static const struct {
        const gchar *inserted;
        const gchar *path;
    } inserted[] = {
        { "{\"image\": {\"filename\": \"/images/i.qcow2\"}, \"file\": \"/images/f.qcow2\"}",
          "/images/i.qcow2" },
        { "{\"image\": {\"filename\": 4}, \"file\": \"/images/f.qcow2\"}", "/images/f.qcow2" },
        { "{\"image\": [], \"file\": \"/images/f.qcow2\"}", "/images/f.qcow2" },
        { "{\"file\": [\"/images/f.qcow2\"]}", NULL },
        { "{}", NULL },
        { NULL, NULL },
    };

    for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
        g_autofree gchar *plain = vmr_qmp_parse_plain_filename (files[i].name);

        g_assert_cmpstr (plain, ==, files[i].plain);
    }
    for (guint i = 0; i < G_N_ELEMENTS (ids); i++) {
        g_autofree gchar *id = vmr_qmp_parse_qdev_id (ids[i].qdev, ids[i].device, ids[i].node);

        g_assert_cmpstr (id, ==, ids[i].id);
    }
    for (guint i = 0; i < G_N_ELEMENTS (inserted); i++) {
        g_autoptr (JsonNode) node = qmp_parse_test_text (inserted[i].inserted);
        g_autofree gchar *path = vmr_qmp_parse_inserted_path (vmr_json_node_object (node));

        g_assert_cmpstr (path, ==, inserted[i].path);
    }
}

void
qmp_parse_malformed_add_tests (void)
{
    g_test_add_func ("/qmp-parse/events/malformed", test_events_malformed);
    g_test_add_func ("/qmp-parse/malformed/replies", test_malformed);
    g_test_add_func ("/qmp-parse/malformed/properties", test_malformed_properties);
    g_test_add_func ("/qmp-parse/names", test_names);
}
