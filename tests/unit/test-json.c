#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "cli-job.h"
#include "job.h"
#include "qmp-client.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* one object with a member of every JSON type, as a peer could send it */
static const gchar peer_object[] = "{"
                                   "  \"string\": \"vda\","
                                   "  \"empty\": \"\","
                                   "  \"int\": 42,"
                                   "  \"zero\": 0,"
                                   "  \"negative\": -7,"
                                   "  \"fraction\": 2.5,"
                                   "  \"whole\": 3.0,"
                                   "  \"true\": true,"
                                   "  \"false\": false,"
                                   "  \"null\": null,"
                                   "  \"object\": {\"id\": \"io0\"},"
                                   "  \"array\": [\"io0\", 1, {\"id\": \"io1\"}, null, []],"
                                   "  \"int64-max\": 9223372036854775807,"
                                   "  \"int64-min\": -9223372036854775808,"
                                   "  \"past-uint64\": 18446744073709551615,"
                                   "  \"big-double\": 9.0e18,"
                                   "  \"huge-double\": 1e19,"
                                   "  \"tiny-double\": -1e19,"
                                   "  \"exact-double\": 9007199254740992.0"
                                   "}";

static JsonObject *
parse_object (const gchar *text)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    g_assert_true (json_parser_load_from_data (parser, text, -1, &error));
    g_assert_no_error (error);
    g_assert_true (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
    return json_object_ref (json_node_get_object (json_parser_get_root (parser)));
}

/* what each getter makes of one member; a getter not marked finds it absent */
typedef struct {
    const gchar *member;
    const gchar *string; /* NULL: not a string */
    gboolean object;
    gboolean array;
    gboolean has_int;
    gint64 int_value;
    gboolean has_uint;
    guint64 uint_value;
    gboolean has_double;
    gdouble double_value;
    gboolean has_bool;
    gboolean bool_value;
} MemberCase;

static const MemberCase member_cases[] = {
    { "string", "vda" },
    { "empty", "" },
    { "int", NULL, FALSE, FALSE, TRUE, 42, TRUE, 42, TRUE, 42.0 },
    { "zero", NULL, FALSE, FALSE, TRUE, 0, TRUE, 0, TRUE, 0.0 },
    { "negative", NULL, FALSE, FALSE, TRUE, -7, FALSE, 0, TRUE, -7.0 },
    /* a number with a fraction is no integer; a whole one is */
    { "fraction", NULL, FALSE, FALSE, FALSE, 0, FALSE, 0, TRUE, 2.5 },
    { "whole", NULL, FALSE, FALSE, TRUE, 3, TRUE, 3, TRUE, 3.0 },
    { "true", .has_bool = TRUE, .bool_value = TRUE },
    { "false", .has_bool = TRUE, .bool_value = FALSE },
    /* null is absent for every getter */
    { "null" },
    { "object", .object = TRUE },
    { "array", .array = TRUE },
    { "missing" },
    /* the edges of 64 bits */
    { "int64-max", NULL, FALSE, FALSE, TRUE, G_MAXINT64, TRUE, G_MAXINT64, TRUE,
      9223372036854775807.0 },
    { "int64-min", NULL, FALSE, FALSE, TRUE, G_MININT64, FALSE, 0, TRUE, -9223372036854775808.0 },
    /* json-glib wraps what does not fit in 64 bits: never read as a huge unsigned */
    { "past-uint64", NULL, FALSE, FALSE, TRUE, -1, FALSE, 0, TRUE, -1.0 },
    /* a large integer written as a double is taken while it fits */
    { "big-double", NULL, FALSE, FALSE, TRUE, 9000000000000000000, TRUE, 9000000000000000000, TRUE,
      9.0e18 },
    { "huge-double", NULL, FALSE, FALSE, FALSE, 0, FALSE, 0, TRUE, 1e19 },
    { "tiny-double", NULL, FALSE, FALSE, FALSE, 0, FALSE, 0, TRUE, -1e19 },
    { "exact-double", NULL, FALSE, FALSE, TRUE, 9007199254740992, TRUE, 9007199254740992, TRUE,
      9007199254740992.0 },
};

static void
test_json_members (void)
{
    g_autoptr (JsonObject) obj = parse_object (peer_object);

    for (gsize i = 0; i < G_N_ELEMENTS (member_cases); i++) {
        const MemberCase *c = &member_cases[i];
        gint64 int_value = -12345;
        guint64 uint_value = 12345;
        gdouble double_value = -0.5;
        gboolean bool_value = 99;

        g_test_message ("member %s", c->member);
        g_assert_cmpstr (vmr_json_get_string (obj, c->member), ==, c->string);
        g_assert_true ((vmr_json_get_object (obj, c->member) != NULL) == c->object);
        g_assert_true ((vmr_json_get_array (obj, c->member) != NULL) == c->array);

        g_assert_cmpint (vmr_json_get_int (obj, c->member, &int_value), ==, c->has_int);
        /* what is absent leaves *out alone */
        g_assert_cmpint (int_value, ==, c->has_int ? c->int_value : -12345);
        g_assert_cmpint (vmr_json_int_or (obj, c->member, -1), ==, c->has_int ? c->int_value : -1);

        g_assert_cmpint (vmr_json_get_uint (obj, c->member, &uint_value), ==, c->has_uint);
        g_assert_cmpuint (uint_value, ==, c->has_uint ? c->uint_value : 12345);
        g_assert_cmpuint (vmr_json_uint_or (obj, c->member, 77), ==,
                          c->has_uint ? c->uint_value : 77);

        g_assert_cmpint (vmr_json_get_double (obj, c->member, &double_value), ==, c->has_double);
        g_assert_cmpfloat (double_value, ==, c->has_double ? c->double_value : -0.5);
        g_assert_cmpfloat (vmr_json_double_or (obj, c->member, 0.25), ==,
                           c->has_double ? c->double_value : 0.25);

        g_assert_cmpint (vmr_json_get_bool (obj, c->member, &bool_value), ==, c->has_bool);
        g_assert_cmpint (bool_value, ==, c->has_bool ? c->bool_value : 99);
        g_assert_cmpint (vmr_json_bool_or (obj, c->member, TRUE), ==,
                         c->has_bool ? c->bool_value : TRUE);
        g_assert_cmpint (vmr_json_bool_or (obj, c->member, FALSE), ==,
                         c->has_bool ? c->bool_value : FALSE);
    }
}

/* a NULL object (a member that was absent one level up) and a NULL name read as absent */
static void
test_json_null_object (void)
{
    g_autoptr (JsonObject) obj = parse_object (peer_object);
    JsonObject *objects[] = { NULL, obj };
    const gchar *names[] = { "int", NULL };

    for (gsize i = 0; i < G_N_ELEMENTS (objects); i++) {
        JsonObject *o = objects[i];
        const gchar *name = names[i];
        gint64 int_value = 5;
        guint64 uint_value = 5;
        gdouble double_value = 5;
        gboolean bool_value = 5;

        g_assert_null (vmr_json_get_string (o, name));
        g_assert_null (vmr_json_get_object (o, name));
        g_assert_null (vmr_json_get_array (o, name));
        g_assert_false (vmr_json_get_int (o, name, &int_value));
        g_assert_false (vmr_json_get_uint (o, name, &uint_value));
        g_assert_false (vmr_json_get_double (o, name, &double_value));
        g_assert_false (vmr_json_get_bool (o, name, &bool_value));
        g_assert_cmpint (int_value + (gint64) uint_value + (gint64) double_value + bool_value, ==,
                         20);
        g_assert_cmpint (vmr_json_int_or (o, name, -3), ==, -3);
        g_assert_cmpuint (vmr_json_uint_or (o, name, 3), ==, 3);
        g_assert_cmpfloat (vmr_json_double_or (o, name, 1.5), ==, 1.5);
        g_assert_true (vmr_json_bool_or (o, name, TRUE));
        g_assert_false (vmr_json_bool_or (o, name, FALSE));
    }
}

/* a nested read through a member of another type */
static void
test_json_nested (void)
{
    g_autoptr (JsonObject) obj = parse_object (peer_object);

    g_assert_cmpstr (vmr_json_get_string (vmr_json_get_object (obj, "object"), "id"), ==, "io0");
    g_assert_null (vmr_json_get_string (vmr_json_get_object (obj, "string"), "id"));
    g_assert_null (vmr_json_get_string (vmr_json_get_object (obj, "array"), "id"));
    g_assert_null (vmr_json_get_string (vmr_json_get_object (obj, "missing"), "id"));
    g_assert_cmpint (vmr_json_int_or (vmr_json_get_object (obj, "null"), "id", 8), ==, 8);
}

/* element @index of the "array" member: what each element getter makes of it */
typedef struct {
    guint index;
    const gchar *string;
    const gchar *object_id; /* the "id" of an object element, NULL: not an object */
} ElementCase;

static const ElementCase element_cases[] = {
    { 0, "io0", NULL },        { 1, NULL, NULL }, { 2, NULL, "io1" },
    { 3, NULL, NULL },         { 4, NULL, NULL }, { 5, NULL, NULL }, /* past the end */
    { G_MAXUINT, NULL, NULL },
};

static void
test_json_elements (void)
{
    g_autoptr (JsonObject) obj = parse_object (peer_object);
    JsonArray *array = vmr_json_get_array (obj, "array");

    g_assert_nonnull (array);
    for (gsize i = 0; i < G_N_ELEMENTS (element_cases); i++) {
        const ElementCase *c = &element_cases[i];
        JsonObject *element = vmr_json_array_object (array, c->index);

        g_test_message ("element %u", c->index);
        g_assert_cmpstr (vmr_json_array_string (array, c->index), ==, c->string);
        g_assert_true ((element != NULL) == (c->object_id != NULL));
        g_assert_cmpstr (vmr_json_get_string (element, "id"), ==, c->object_id);
        /* no array at all */
        g_assert_null (vmr_json_array_string (NULL, c->index));
        g_assert_null (vmr_json_array_object (NULL, c->index));
    }
}

/* what each node getter makes of a node of each kind */
typedef struct {
    const gchar *text;
    gboolean object;
    gboolean array;
    const gchar *string;
} NodeCase;

static const NodeCase node_cases[] = {
    { "{\"a\": 1}", TRUE, FALSE, NULL },  { "[1, 2]", FALSE, TRUE, NULL },
    { "\"text\"", FALSE, FALSE, "text" }, { "12", FALSE, FALSE, NULL },
    { "1.5", FALSE, FALSE, NULL },        { "true", FALSE, FALSE, NULL },
    { "null", FALSE, FALSE, NULL },
};

static void
test_json_nodes (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (node_cases); i++) {
        const NodeCase *c = &node_cases[i];
        g_autoptr (JsonParser) parser = json_parser_new ();
        JsonNode *node;

        g_test_message ("node %s", c->text);
        g_assert_true (json_parser_load_from_data (parser, c->text, -1, NULL));
        node = json_parser_get_root (parser);
        g_assert_true ((vmr_json_node_object (node) != NULL) == c->object);
        g_assert_true ((vmr_json_node_array (node) != NULL) == c->array);
        g_assert_cmpstr (vmr_json_node_string (node), ==, c->string);
    }
    g_assert_null (vmr_json_node_object (NULL));
    g_assert_null (vmr_json_node_array (NULL));
    g_assert_null (vmr_json_node_string (NULL));
}

/* ---- parsers that read with vmr-json ---- */

static gchar *
write_records (const gchar *const *records, gsize n_records)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-json-XXXXXX", NULL);
    g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);

    g_assert_nonnull (dir);
    g_assert_cmpint (g_mkdir (jobs_dir, 0700), ==, 0);
    for (gsize i = 0; i < n_records; i++) {
        g_autofree gchar *name = g_strdup_printf ("vmr-%zu.json", i + 1);
        g_autofree gchar *path = g_build_filename (jobs_dir, name, NULL);

        g_assert_true (g_file_set_contents (path, records[i], -1, NULL));
    }
    return g_steal_pointer (&dir);
}

/* removes what write_records() wrote */
static void
remove_records (const gchar *dir, gsize n_records)
{
    g_autofree gchar *jobs_dir = g_build_filename (dir, "jobs", NULL);

    for (gsize i = 0; i < n_records; i++) {
        g_autofree gchar *name = g_strdup_printf ("vmr-%zu.json", i + 1);
        g_autofree gchar *path = g_build_filename (jobs_dir, name, NULL);

        g_assert_cmpint (g_unlink (path), ==, 0);
    }
    g_assert_cmpint (g_rmdir (jobs_dir), ==, 0);
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* records that are no job: each refused with a warning that says why */
static const struct {
    const gchar *record;
    const gchar *warning;
} refused_records[] = {
    /* an id of another type */
    { "{\"id\": {\"n\": 3}, \"domain\": \"web01\", \"disk\": \"vdc\", \"state\": \"copying\","
      " \"destination\": \"/new/c.raw\"}",
      "cannot read job record *vmr-1.json: not a job record*" },
    /* ids that are not vmr-N: the records are sorted by N (one shorter than "vmr-" was read
     * past its end) */
    { "{\"id\": \"v\", \"domain\": \"web01\", \"disk\": \"vdc\", \"state\": \"copying\","
      " \"destination\": \"/new/c.raw\"}",
      "cannot read job record *vmr-1.json: not a job record*" },
    { "{\"id\": \"vmr-\", \"domain\": \"web01\", \"disk\": \"vdc\", \"state\": \"copying\","
      " \"destination\": \"/new/c.raw\"}",
      "cannot read job record *vmr-1.json: not a job record*" },
    { "{\"id\": \"vmr-1/../x\", \"domain\": \"web01\", \"disk\": \"vdc\", \"state\": \"copying\","
      " \"destination\": \"/new/c.raw\"}",
      "cannot read job record *vmr-1.json: not a job record*" },
    /* a state that is not a string */
    { "{\"id\": \"vmr-1\", \"domain\": \"web01\", \"disk\": \"vdd\", \"state\": 2,"
      " \"destination\": \"/new/d.raw\"}",
      "cannot read job record *vmr-1.json: not a job record*" },
    /* a destination that is an object */
    { "{\"id\": \"vmr-1\", \"domain\": \"web01\", \"disk\": \"vdd\", \"state\": \"queued\","
      " \"destination\": {\"path\": \"/new/d.raw\"}}",
      "cannot read job record *vmr-1.json: not a job record*" },
    /* not an object at all */
    { "[\"vmr-1\"]", "cannot read job record *vmr-1.json: not a JSON object" },
    { "null", "cannot read job record *vmr-1.json: not a JSON object" },
};

static void
test_json_job_records_refused (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (refused_records); i++) {
        g_autofree gchar *dir = write_records (&refused_records[i].record, 1);
        g_autoptr (GPtrArray) loaded = NULL;

        g_test_message ("record %s", refused_records[i].record);
        g_test_expect_message ("vmr-daemon", G_LOG_LEVEL_WARNING, refused_records[i].warning);
        loaded = vmr_job_load_records (dir);
        g_test_assert_expected_messages ();
        g_assert_cmpuint (loaded->len, ==, 0);
        remove_records (dir, 1);
    }
}

/*
 * Job records with what a job needs, and every other member of the wrong
 * type: those read as absent, without a critical (criticals are fatal here)
 */
static void
test_json_job_records (void)
{
    static const gchar *const records[] = {
        /* vmr-1: top-level members of the wrong type */
        "{\"id\": \"vmr-1\", \"domain\": \"web01\", \"disk\": \"vda\", \"state\": \"copying\","
        " \"destination\": \"/new/web01.raw\", \"source\": 7, \"source-format\": [\"raw\"],"
        " \"source-node\": {\"n\": 1}, \"source-file-node\": true, \"format\": null,"
        " \"created\": \"yesterday\", \"updated\": 1.5, \"speed\": -65536,"
        " \"created-destination\": \"yes\", \"manual-pivot\": 1, \"group\": {},"
        " \"copy-mode\": false, \"progress\": [1000, 400], \"resume\": \"ready\","
        " \"history\": {\"state\": \"queued\"}}",
        /* vmr-2: sub-objects of the right type with members of the wrong one */
        "{\"id\": \"vmr-2\", \"domain\": \"web01\", \"disk\": \"vdb\", \"state\": \"paused\","
        " \"destination\": \"/new/web01-b.raw\", \"created\": 5, \"speed\": 4096.0,"
        " \"progress\": {\"total\": \"1000\", \"done\": {}},"
        " \"resume\": {\"base-speed\": [1], \"ready\": \"true\", \"user-paused\": true},"
        " \"history\": [\"queued\", 3, null, {\"state\": 4}, {\"state\": \"copying\", \"time\": "
        "\"6\"}, {\"state\": \"paused\", \"time\": 7}]}",
    };
    g_autofree gchar *dir = write_records (records, G_N_ELEMENTS (records));
    g_autoptr (GPtrArray) loaded = vmr_job_load_records (dir);
    VmrJob *job;

    g_assert_cmpuint (loaded->len, ==, 2);
    job = g_ptr_array_index (loaded, 0);
    g_assert_cmpstr (job->id, ==, "vmr-1");
    g_assert_cmpint (job->state, ==, VMR_JOB_STATE_COPYING);
    g_assert_null (job->source);
    g_assert_null (job->source_format);
    g_assert_null (job->source_node);
    g_assert_null (job->source_file_node);
    g_assert_null (job->group);
    g_assert_cmpstr (job->dest->location, ==, "/new/web01.raw");
    g_assert_cmpstr (job->dest->format, ==, "raw");
    g_assert_cmpint (job->created_us, ==, 0);
    g_assert_cmpint (job->updated_us, ==, 0);
    g_assert_cmpuint (job->speed, ==, 0);
    g_assert_false (job->dest->created);
    g_assert_false (job->manual_pivot);
    g_assert_false (job->write_blocking);
    g_assert_cmpuint (job->total_bytes, ==, 0);
    g_assert_cmpuint (job->done_bytes, ==, 0);
    g_assert_false (job->ready);
    g_assert_cmpuint (job->history->len, ==, 0);
    g_assert_true (job->orphaned);

    job = g_ptr_array_index (loaded, 1);
    g_assert_cmpstr (job->id, ==, "vmr-2");
    g_assert_cmpint (job->state, ==, VMR_JOB_STATE_PAUSED);
    g_assert_cmpint (job->created_us, ==, 5);
    /* a whole number written as a double is still the number */
    g_assert_cmpuint (job->speed, ==, 4096);
    g_assert_cmpuint (job->total_bytes, ==, 0);
    g_assert_cmpuint (job->done_bytes, ==, 0);
    g_assert_cmpuint (job->base_speed, ==, 0);
    g_assert_false (job->ready);
    g_assert_true (job->user_paused);
    /* only the entries that are objects with a string state */
    g_assert_cmpuint (job->history->len, ==, 2);
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 0).state, ==,
                     VMR_JOB_STATE_COPYING);
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 0).time_us, ==, 0);
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 1).state, ==,
                     VMR_JOB_STATE_PAUSED);
    g_assert_cmpint (g_array_index (job->history, VmrJobTransition, 1).time_us, ==, 7);
    remove_records (dir, G_N_ELEMENTS (records));
}

/* replies the CLI reads as no job: each refused with a protocol error that says why */
static const struct {
    const gchar *reply;
    const gchar *message;
} refused_cli_jobs[] = {
    { "[{\"id\": \"vmr-1\", \"state\": \"copying\"}]", "not an object" },
    { "\"vmr-1\"", "not an object" },
    { "null", "not an object" },
    { "{\"id\": 1, \"state\": \"copying\"}", "a job without id or state" },
    { "{\"id\": \"vmr-1\", \"state\": {\"name\": \"copying\"}}", "a job without id or state" },
    { "{\"id\": null, \"state\": \"copying\"}", "a job without id or state" },
};

static VmrCliJob *
parse_cli_job (const gchar *reply, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new ();

    g_assert_true (json_parser_load_from_data (parser, reply, -1, NULL));
    return vmr_cli_job_new (json_parser_get_root (parser), "query-job", error);
}

static void
test_json_cli_job_refused (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (refused_cli_jobs); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrCliJob) job = parse_cli_job (refused_cli_jobs[i].reply, &error);

        g_test_message ("reply %s", refused_cli_jobs[i].reply);
        g_assert_null (job);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL);
        g_assert_nonnull (strstr (error->message, refused_cli_jobs[i].message));
    }
}

/* the CLI's reading of a job whose members, but for id and state, have the wrong types */
static void
test_json_cli_job (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrCliJob) job = parse_cli_job (
        "{\"id\": \"vmr-1\", \"state\": \"copying\", \"domain\": 7, \"disk\": [\"vda\"],"
        " \"reason\": {}, \"waiting-for\": true, \"orphaned\": \"yes\", \"source\": null,"
        " \"destination\": 1.5, \"created-destination\": 1, \"manual-pivot\": \"true\","
        " \"speed\": \"fast\", \"progress\": [1, 2], \"created\": \"today\", \"updated\": {},"
        " \"policy\": {\"decision\": 3, \"reason\": [], \"held\": \"long\","
        " \"base-speed\": -1, \"user-paused\": null, \"guest-iops\": [5, {}, [], null, 7],"
        " \"guest-latency-us\": \"slow\"}, \"convergence\": {\"state\": 1, \"by\": 2}}",
        &error);

    g_assert_no_error (error);
    g_assert_nonnull (job);
    g_assert_cmpstr (job->id, ==, "vmr-1");
    g_assert_cmpstr (job->state, ==, "copying");
    g_assert_null (job->domain);
    g_assert_null (job->disk);
    g_assert_null (job->reason);
    g_assert_null (job->waiting_for);
    g_assert_false (job->orphaned);
    g_assert_null (job->source);
    g_assert_null (job->destination);
    g_assert_false (job->created_destination);
    g_assert_false (job->manual_pivot);
    g_assert_cmpuint (job->speed, ==, 0);
    g_assert_false (job->has_progress);
    g_assert_cmpint (job->created, ==, 0);
    g_assert_cmpint (job->updated, ==, 0);
    g_assert_true (job->has_policy);
    g_assert_null (job->decision);
    g_assert_null (job->decision_reason);
    g_assert_cmpfloat (job->held, ==, 0);
    g_assert_false (job->has_base_speed);
    g_assert_false (job->user_paused);
    /* the values among the samples; containers and null are passed over */
    g_assert_cmpuint (job->guest_iops->len, ==, 2);
    g_assert_cmpint (g_array_index (job->guest_iops, gint64, 0), ==, 5);
    g_assert_cmpint (g_array_index (job->guest_iops, gint64, 1), ==, 7);
    g_assert_cmpfloat (job->guest_latency_us, <, 0);
    g_assert_null (job->convergence_state);
    g_assert_null (vmr_cli_job_format_convergence (job));
}

/* a job as the daemon sends it */
static const gchar valid_cli_job[]
    = "{\"id\": \"vmr-1\", \"state\": \"copying\", \"domain\": \"web01\", \"orphaned\": true,"
      " \"destination\": \"/new/web01.raw\", \"reason\": null, \"speed\": 65536,"
      " \"progress\": {\"total\": 1000, \"done\": 400, \"rate\": 100, \"eta\": 6.0},"
      " \"created\": 1700000000000000, \"policy\": {\"decision\": \"throttle\", \"held\": 2.5,"
      " \"base-speed\": 1048576, \"guest-iops\": [120, 340], \"guest-latency-us\": 250},"
      " \"convergence\": {\"state\": \"converging\", \"by\": \"write-blocking\","
      " \"since\": 1700000000000000, \"reason\": \"backlog 812 MiB not shrinking over 1m\"}}";

/* ... is read as it was before the CLI used vmr-json */
static void
test_json_cli_job_valid (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrCliJob) job = parse_cli_job (valid_cli_job, &error);
    g_autofree gchar *convergence = NULL;

    g_assert_no_error (error);
    g_assert_cmpstr (job->domain, ==, "web01");
    g_assert_null (job->reason);
    g_assert_true (job->orphaned);
    g_assert_cmpstr (job->destination, ==, "/new/web01.raw");
    g_assert_cmpuint (job->speed, ==, 65536);
    g_assert_true (job->has_progress);
    g_assert_cmpuint (job->total, ==, 1000);
    g_assert_cmpuint (job->done, ==, 400);
    g_assert_cmpuint (job->backlog, ==, 600);
    g_assert_cmpuint (job->rate, ==, 100);
    g_assert_cmpfloat (job->eta, ==, 6.0);
    g_assert_cmpint (job->created, ==, 1700000000000000);
    g_assert_cmpstr (job->decision, ==, "throttle");
    g_assert_cmpfloat (job->held, ==, 2.5);
    g_assert_true (job->has_base_speed);
    g_assert_cmpuint (job->base_speed, ==, 1048576);
    g_assert_cmpuint (job->guest_iops->len, ==, 2);
    g_assert_cmpint (g_array_index (job->guest_iops, gint64, 1), ==, 340);
    g_assert_cmpfloat (job->guest_latency_us, ==, 250);
    g_assert_cmpstr (job->convergence_state, ==, "converging");
    g_assert_cmpstr (job->converged_by, ==, "write-blocking");
    g_assert_cmpint (job->converged_since, ==, 1700000000000000);
    convergence = vmr_cli_job_format_convergence (job);
    g_assert_true (g_str_has_prefix (convergence, "converging by write-blocking since "));
    g_assert_true (g_str_has_suffix (convergence, ": backlog 812 MiB not shrinking over 1m"));
}

/* a QMP schema from a peer: entries of the wrong shape are passed over */
static void
test_json_qmp_schema (void)
{
    static const struct {
        const gchar *schema;
        gboolean has_command;
    } cases[] = {
        { "[{\"name\": \"block-job-change\", \"meta-type\": \"command\"}]", TRUE },
        { "[1, \"block-job-change\", null, [], {\"name\": {\"x\": 1}, \"meta-type\": \"command\"},"
          " {\"name\": \"block-job-change\", \"meta-type\": [\"command\"]},"
          " {\"name\": \"block-job-change\", \"meta-type\": \"command\"}]",
          TRUE },
        { "[{\"name\": [\"block-job-change\"], \"meta-type\": \"command\"},"
          " {\"name\": \"block-job-change\", \"meta-type\": {}},"
          " {\"name\": \"block-job-change\", \"meta-type\": 1},"
          " {\"name\": null, \"meta-type\": \"command\"}]",
          FALSE },
        { "{\"name\": \"block-job-change\", \"meta-type\": \"command\"}", FALSE },
        { "\"block-job-change\"", FALSE },
        { "null", FALSE },
    };

    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autoptr (JsonParser) parser = json_parser_new ();

        g_test_message ("schema %s", cases[i].schema);
        g_assert_true (json_parser_load_from_data (parser, cases[i].schema, -1, NULL));
        g_assert_cmpint (
            vmr_qmp_schema_has_command (json_parser_get_root (parser), "block-job-change"), ==,
            cases[i].has_command);
    }
    g_assert_false (vmr_qmp_schema_has_command (NULL, "block-job-change"));
}

/* ---- the nesting check before json-glib ---- */

/* a text: @before, @open @count times, @middle, @close @count times, @after */
typedef struct {
    const gchar *what;
    const gchar *before;
    const gchar *open;
    guint count;
    const gchar *middle;
    const gchar *close;
    const gchar *after;
    const gchar *refused; /* part of the error, NULL: accepted */
} DepthCase;

#define TOO_DEEP "nested deeper than 64 levels"
#define BAD_UNIT "not four hex digits, or half a surrogate pair"
#define LIMIT    VMR_JSON_MAX_DEPTH
#define OVER     (VMR_JSON_MAX_DEPTH + 1)
#define MEGABYTE (1024 * 1024)

/* clang-format off */
static const DepthCase depth_cases[] = {
    { "nothing", "", "", 0, "", "", "", NULL },
    { "arrays at the limit", "", "[", LIMIT, "1", "]", "", NULL },
    { "arrays one over", "", "[", OVER, "1", "]", "", TOO_DEEP },
    { "objects at the limit", "", "{\"a\": ", LIMIT, "1", "}", "", NULL },
    { "objects one over", "", "{\"a\": ", OVER, "1", "}", "", TOO_DEEP },
    { "both at the limit", "", "{\"a\": [", LIMIT / 2, "1", "]}", "", NULL },
    { "both one over", "[", "{\"a\": [", LIMIT / 2, "1", "]}", "]", TOO_DEEP },
    { "a megabyte of [", "", "[", MEGABYTE, "", "", "", TOO_DEEP },
    { "never closed, at the limit", "", "[", LIMIT, "", "", "", NULL },
    { "closers first earn nothing", "]]]]}}}}", "[", OVER, "", "]", "", TOO_DEEP },
    { "brackets in a string", "{\"path\": \"", "[{", MEGABYTE, "", "", "\"}", NULL },
    { "after an escaped quote", "[\"\\\"", "[", 100, "", "", "\"]", NULL },
    { "after an escaped backslash", "[\"\\\\\", ", "[", OVER, "", "]", "]", TOO_DEEP },
    { "after other escapes", "[\"\\n\\t\\/\\b", "[", 100, "", "", "\"]", NULL },
    { "in a single-quoted string", "['", "[", 100, "", "", "']", NULL },
    { "a backslash ends nothing in one", "['\\', ", "[", OVER, "", "]", "]", TOO_DEEP },
    { "a double quote in single quotes", "['\"', ", "[", OVER, "", "]", "]", TOO_DEEP },
    { "a single quote in double quotes", "[\"'\", ", "[", OVER, "", "]", "]", TOO_DEEP },
    { "in a C comment", "[1 /* ", "[", 100, "", "", " */]", NULL },
    { "after a C comment", "[/* x */ ", "[", OVER, "", "]", "]", TOO_DEEP },
    { "between two slashes", "[/ ", "[", 100, "", "", " / 1]", NULL },
    { "a unicode escape", "[\"\\u0041", "[", 100, "", "", "\"]", NULL },
    { "a surrogate pair", "[\"\\uD83D\\uDE00", "[", 100, "", "", "\"]", NULL },
    { "a low surrogate alone", "[\"\\uDE00", "[", 100, "", "", "\"]", NULL },
    { "\\u and two digits", "[\"\\u00\", ", "[", 2, "", "]", "]", BAD_UNIT },
    { "\\u and no digit", "[\"\\u\", ", "[", 2, "", "]", "]", BAD_UNIT },
    { "a high surrogate alone", "[\"\\uD800\", ", "[", 2, "", "]", "]", BAD_UNIT },
    { "a high surrogate, no low one", "[\"\\uD800\\u0041\"", "", 0, "", "", "]", BAD_UNIT },
    { "a high surrogate at the end", "[\"\\uDBFF", "", 0, "", "", "", BAD_UNIT },
};
/* clang-format on */

static gchar *
depth_case_text (const DepthCase *c)
{
    GString *text = g_string_new (c->before);

    for (guint i = 0; i < c->count; i++)
        g_string_append (text, c->open);
    g_string_append (text, c->middle);
    for (guint i = 0; i < c->count; i++)
        g_string_append (text, c->close);
    g_string_append (text, c->after);
    return g_string_free (text, FALSE);
}

static void
test_json_depth (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (depth_cases); i++) {
        const DepthCase *c = &depth_cases[i];
        g_autofree gchar *text = depth_case_text (c);
        g_autoptr (GError) error = NULL;
        gboolean accepted = vmr_json_check_depth (text, -1, VMR_JSON_MAX_DEPTH, &error);

        g_test_message ("%s", c->what);
        if (c->refused == NULL) {
            g_assert_no_error (error);
            g_assert_true (accepted);
            continue;
        }
        g_assert_false (accepted);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL);
        g_assert_nonnull (strstr (error->message, c->refused));
        g_assert_null (strchr (error->message, '\n'));
    }
}

/* what is not in the length given is not read: a NUL, or bytes past the end */
static void
test_json_depth_length (void)
{
    g_autofree gchar *deep = g_strnfill (OVER, '[');
    g_autofree gchar *hidden = g_strnfill (OVER + 1, '[');

    g_assert_false (vmr_json_check_depth (deep, -1, VMR_JSON_MAX_DEPTH, NULL));
    g_assert_true (vmr_json_check_depth (deep, LIMIT, VMR_JSON_MAX_DEPTH, NULL));
    hidden[0] = '\0';
    g_assert_true (vmr_json_check_depth (hidden, -1, VMR_JSON_MAX_DEPTH, NULL));
    /* with a length, a NUL is one more byte: what follows it counts */
    g_assert_false (vmr_json_check_depth (hidden, OVER + 1, VMR_JSON_MAX_DEPTH, NULL));
    /* another limit */
    g_assert_true (vmr_json_check_depth ("[[1]]", -1, 2, NULL));
    g_assert_false (vmr_json_check_depth ("[[[1]]]", -1, 2, NULL));
}

/* many siblings at the limit are not one deep nesting */
static void
test_json_depth_siblings (void)
{
    GString *text = g_string_new ("[");
    g_autofree gchar *opens = g_strnfill (LIMIT - 1, '[');
    g_autofree gchar *closes = g_strnfill (LIMIT - 1, ']');
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GError) error = NULL;

    for (guint i = 0; i < 1000; i++)
        g_string_append_printf (text, "%s%u%s, ", opens, i, closes);
    g_string_append (text, "1]");
    g_assert_true (vmr_json_parser_load (parser, text->str, -1, &error));
    g_assert_no_error (error);
    g_assert_cmpuint (json_array_get_length (vmr_json_node_array (json_parser_get_root (parser))),
                      ==, 1001);
    g_string_free (text, TRUE);
}

/*
 * vmr_json_parser_load() refuses what the check refuses before json-glib
 * sees it, and takes what json-glib takes otherwise, with the same result
 */
static void
test_json_parser_load (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (depth_cases); i++) {
        const DepthCase *c = &depth_cases[i];
        g_autofree gchar *text = depth_case_text (c);
        g_autoptr (JsonParser) checked = json_parser_new ();
        g_autoptr (JsonParser) plain = json_parser_new ();
        g_autoptr (GError) error = NULL;
        gboolean loaded = vmr_json_parser_load (checked, text, -1, &error);

        g_test_message ("%s", c->what);
        if (c->refused != NULL) {
            g_assert_false (loaded);
            g_assert_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL);
            g_assert_null (json_parser_get_root (checked));
            continue;
        }
        g_assert_cmpint (loaded, ==, json_parser_load_from_data (plain, text, -1, NULL));
        if (loaded)
            g_assert_true (
                json_node_equal (json_parser_get_root (checked), json_parser_get_root (plain)));
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/json/members", test_json_members);
    g_test_add_func ("/json/null-object", test_json_null_object);
    g_test_add_func ("/json/nested", test_json_nested);
    g_test_add_func ("/json/elements", test_json_elements);
    g_test_add_func ("/json/nodes", test_json_nodes);
    g_test_add_func ("/json/job-records", test_json_job_records);
    g_test_add_func ("/json/job-records-refused", test_json_job_records_refused);
    g_test_add_func ("/json/cli-job", test_json_cli_job);
    g_test_add_func ("/json/cli-job-valid", test_json_cli_job_valid);
    g_test_add_func ("/json/cli-job-refused", test_json_cli_job_refused);
    g_test_add_func ("/json/qmp-schema", test_json_qmp_schema);
    g_test_add_func ("/json/depth", test_json_depth);
    g_test_add_func ("/json/depth-length", test_json_depth_length);
    g_test_add_func ("/json/depth-siblings", test_json_depth_siblings);
    g_test_add_func ("/json/parser-load", test_json_parser_load);
    return g_test_run ();
}
