/*
 * The cluster's queue as a daemon sees it, and the decision of the
 * semaphore recipe on it: keys put and deleted as etcd's JSON spells them
 * (base64, int64 as strings), started copies counted first, the waiting
 * ones by create revision, a storage held by its first in line.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "cluster-queue.h"
#include "etcd-client.h"
#include "test-report.h"

#define PREFIX "/virt-mirror/c/queue/"

/* a queue key of the table: create revision, host/job, storages, started */
typedef struct {
    gint64 revision;
    const gchar *name; /* "HOST/JOB" */
    const gchar *source;
    const gchar *destination;
    gboolean started;
} Key;

typedef struct {
    const gchar *name;
    guint64 max_parallel;
    guint64 per_source;
    guint64 per_destination;
    Key keys[6];
    const gchar *own[2];          /* names of this daemon's started copies not in the view */
    const gchar *asked;           /* the waiting key asked about */
    const gchar *limit;           /* NULL: it may start */
    const gchar *reason_fragment; /* a part of the reason when held */
} QueueCase;

static const QueueCase cases[] = {
    { "an empty cluster lets the first go",
      2,
      0,
      0,
      { { 5, "h1/vmr-1", "/a", "/b", FALSE } },
      { NULL },
      "h1/vmr-1",
      NULL,
      NULL },
    { "first in, first out across hosts",
      1,
      0,
      0,
      { { 7, "h1/vmr-1", "/a", "/b", FALSE }, { 6, "h2/vmr-1", "/a", "/b", FALSE } },
      { NULL },
      "h1/vmr-1",
      "max-parallel",
      "1 copy in cluster c" },
    { "the older one goes",
      1,
      0,
      0,
      { { 7, "h1/vmr-1", "/a", "/b", FALSE }, { 6, "h2/vmr-1", "/a", "/b", FALSE } },
      { NULL },
      "h2/vmr-1",
      NULL,
      NULL },
    { "started copies count whatever their age",
      2,
      0,
      0,
      { { 9, "h1/vmr-1", "/a", "/b", TRUE },
        { 3, "h2/vmr-1", "/a", "/b", FALSE },
        { 8, "h3/vmr-1", "/a", "/b", TRUE } },
      { NULL },
      "h2/vmr-1",
      "max-parallel",
      "2 copies" },
    { "this daemon's own copy counts before the view has it",
      2,
      0,
      0,
      { { 3, "h2/vmr-1", "/a", "/b", TRUE }, { 4, "h2/vmr-2", "/a", "/b", FALSE } },
      { "h1/vmr-9" },
      "h2/vmr-2",
      "max-parallel",
      NULL },
    { "per source",
      0,
      1,
      0,
      { { 3, "h1/vmr-1", "/a", "/b", TRUE }, { 4, "h2/vmr-1", "/a", "/c", FALSE } },
      { NULL },
      "h2/vmr-1",
      "max-parallel-per-source",
      "from /a" },
    { "per destination",
      0,
      0,
      1,
      { { 3, "h1/vmr-1", "/a", "/b", TRUE }, { 4, "h2/vmr-1", "/x", "/b", FALSE } },
      { NULL },
      "h2/vmr-1",
      "max-parallel-per-destination",
      "to /b" },
    { "a storage held by its first in line: the younger wait behind it",
      3,
      1,
      0,
      { { 3, "h1/vmr-1", "/a", "/b", TRUE },
        { 4, "h2/vmr-1", "/a", "/b", FALSE },
        { 5, "h3/vmr-1", "/z", "/b", FALSE },
        { 6, "h3/vmr-2", "/a", "/b", FALSE } },
      { NULL },
      "h3/vmr-2",
      "max-parallel-per-source",
      NULL },
    { "other storages go ahead of a held one",
      3,
      1,
      0,
      { { 3, "h1/vmr-1", "/a", "/b", TRUE },
        { 4, "h2/vmr-1", "/a", "/b", FALSE },
        { 5, "h3/vmr-1", "/z", "/b", FALSE } },
      { NULL },
      "h3/vmr-1",
      NULL,
      NULL },
    { "a held job takes no slot of the cluster",
      2,
      1,
      0,
      { { 3, "h1/vmr-1", "/a", "/b", TRUE },
        { 4, "h2/vmr-1", "/a", "/b", FALSE },
        { 5, "h3/vmr-1", "/z", "/b", FALSE } },
      { NULL },
      "h3/vmr-1",
      NULL,
      NULL },
    { "a key not in the view waits for its place",
      2,
      0,
      0,
      { { 3, "h1/vmr-1", "/a", "/b", FALSE } },
      { NULL },
      "h1/vmr-2",
      "cluster",
      "its place" },
};

/* a KeyValue as etcd's JSON gateway spells it */
static JsonObject *
key_value (const Key *key)
{
    JsonObject *kv = json_object_new ();
    g_autofree gchar *full = g_strconcat (PREFIX, key->name, NULL);
    g_auto (GStrv) parts = g_strsplit (key->name, "/", 2);
    g_autofree gchar *value = g_strdup_printf (
        "{\"host\":\"%s\",\"job\":\"%s\",\"source\":\"%s\",\"destination\":"
        "\"%s\",\"started\":%s}",
        parts[0], parts[1], key->source, key->destination, key->started ? "true" : "false");
    g_autofree gchar *encoded_key = vmr_etcd_encode (full);
    g_autofree gchar *encoded_value = vmr_etcd_encode (value);
    g_autofree gchar *revision = g_strdup_printf ("%" G_GINT64_FORMAT, key->revision);

    json_object_set_string_member (kv, "key", encoded_key);
    json_object_set_string_member (kv, "value", encoded_value);
    json_object_set_string_member (kv, "create_revision", revision);
    json_object_set_string_member (kv, "mod_revision", revision);
    return kv;
}

static void
test_cluster_queue_admits (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        const QueueCase *c = &cases[i];
        g_autoptr (VmrClusterQueue) queue = vmr_cluster_queue_new ();
        VmrClusterConfig config = { .name = (gchar *) "c",
                                    .max_parallel = c->max_parallel,
                                    .max_per_source = c->per_source,
                                    .max_per_destination = c->per_destination };
        VmrQueueCopy own[2];
        g_autofree gchar *asked = g_strconcat (PREFIX, c->asked, NULL);
        g_autofree gchar *reason = NULL;
        g_autofree gchar *own_key = NULL;
        const gchar *limit = NULL;
        guint n_own = 0;
        gboolean admitted;

        g_test_message ("%s", c->name);
        for (guint k = 0; k < G_N_ELEMENTS (c->keys) && c->keys[k].name != NULL; k++) {
            g_autoptr (JsonObject) kv = key_value (&c->keys[k]);

            vmr_cluster_queue_put (queue, kv);
        }
        if (c->own[0] != NULL) {
            own_key = g_strconcat (PREFIX, c->own[0], NULL);
            own[n_own++] = (VmrQueueCopy){ own_key, "/a", "/b" };
        }
        admitted = vmr_cluster_queue_admits (queue, &config, own, n_own, asked, &limit, &reason);
        if (admitted != (c->limit == NULL) || g_strcmp0 (limit, c->limit) != 0
            || (c->reason_fragment != NULL
                && (reason == NULL || strstr (reason, c->reason_fragment) == NULL)))
            vmr_test_report_failure ("%s: admitted %d, limit %s, reason %s", c->name, admitted,
                                     limit != NULL ? limit : "none",
                                     reason != NULL ? reason : "none");
    }
}

/* a watch's events: a PUT (its type left out, as proto3 does), a DELETE, keys not ours */
static void
test_cluster_queue_events (void)
{
    g_autoptr (VmrClusterQueue) queue = vmr_cluster_queue_new ();
    const Key first = { 3, "h1/vmr-1", "/a", "/b", FALSE };
    g_autoptr (JsonObject) put = json_object_new ();
    g_autoptr (JsonObject) delete = json_object_new ();
    g_autoptr (JsonObject) garbage = json_object_new ();
    JsonObject *kv = json_object_new ();
    g_autofree gchar *not_json = vmr_etcd_encode ("not json");
    g_autofree gchar *other_key = vmr_etcd_encode (PREFIX "h9/x");

    json_object_set_object_member (put, "kv", key_value (&first));
    vmr_cluster_queue_apply_event (queue, put);
    g_assert_true (vmr_cluster_queue_contains (queue, PREFIX "h1/vmr-1"));
    json_object_set_string_member (kv, "key", other_key);
    json_object_set_string_member (kv, "value", not_json);
    json_object_set_string_member (kv, "create_revision", "4");
    json_object_set_object_member (garbage, "kv", kv);
    vmr_cluster_queue_apply_event (queue, garbage);
    g_assert_cmpuint (vmr_cluster_queue_size (queue), ==, 1);
    json_object_set_string_member (delete, "type", "DELETE");
    json_object_set_object_member (delete, "kv", key_value (&first));
    vmr_cluster_queue_apply_event (queue, delete);
    g_assert_cmpuint (vmr_cluster_queue_size (queue), ==, 0);
    /* etcd's int64 as strings, or numbers; missing is zero */
    g_assert_cmpint (vmr_etcd_json_int64 (kv, "create_revision"), ==, 4);
    g_assert_cmpint (vmr_etcd_json_int64 (kv, "nothing"), ==, 0);
}

/* base64 keys and the end of a prefix's range */
static void
test_cluster_queue_keys (void)
{
    g_autofree gchar *encoded = vmr_etcd_encode ("/virt-mirror/c/");
    g_autofree gchar *decoded = vmr_etcd_decode (encoded);
    g_autofree gchar *end = vmr_etcd_prefix_end ("/virt-mirror/c/");
    g_autofree gchar *end_text = vmr_etcd_decode (end);
    g_autofree gchar *binary = g_base64_encode ((const guchar *) "a\0b", 3);

    g_assert_cmpstr (decoded, ==, "/virt-mirror/c/");
    g_assert_cmpstr (end_text, ==, "/virt-mirror/c0");
    g_assert_null (vmr_etcd_decode (binary));
    g_assert_null (vmr_etcd_decode (NULL));
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/cluster-queue/admits", test_cluster_queue_admits);
    g_test_add_func ("/cluster-queue/events", test_cluster_queue_events);
    g_test_add_func ("/cluster-queue/keys", test_cluster_queue_keys);
    return g_test_run ();
}
