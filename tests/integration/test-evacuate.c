#define G_LOG_DOMAIN "vmr-test"

/*
 * `virt-mirror evacuate --from DIR --to DIR`: every disk of every attached
 * domain whose image lies under FROM moves to the same relative path under
 * TO, the disks of one domain as one group. Several guest-less QEMUs, each
 * attached as a domain. A dry run plans and creates nothing; a run moves
 * exactly the planned disks, whose destinations then hold their bytes,
 * and leaves every other disk alone. A plan that cannot work (a
 * destination that exists, two disks bound for one destination, TO under
 * FROM, no FROM) is refused as a whole before anything is submitted.
 */

#include "evacuate-fixture.h"

#include <string.h>
#include <unistd.h>

/* the plan entry for disk @i of @d in an evacuate reply; NULL when there is none */
static JsonObject *
find_entry (JsonArray *disks, Domain *d, guint i)
{
    JsonObject *found = NULL;

    for (guint j = 0; j < json_array_get_length (disks); j++) {
        JsonObject *entry = vmr_harness_json_element (disks, j);

        if (g_strcmp0 (vmr_harness_json_string (entry, "domain"), d->name) != 0
            || g_strcmp0 (vmr_harness_json_string (entry, "disk"), d->ids[i]) != 0)
            continue;
        if (found != NULL)
            vmr_fail ("the plan has %s %s twice", d->name, d->ids[i]);
        found = entry;
    }
    return found;
}

/*
 * The reply of evacuate --json (@dry_run or not): exactly the disks under
 * FROM of the domains @glob matches, each with its destination under TO,
 * its format and size
 */
static void
assert_plan (Evac *e, JsonNode *reply, const gchar *glob, gboolean dry_run)
{
    JsonObject *object;
    JsonArray *disks;
    guint n_domains = 0;
    guint64 bytes = 0;
    guint planned = evac_count_planned (e, glob, &n_domains, &bytes);

    g_assert_true (JSON_NODE_HOLDS_OBJECT (reply));
    object = vmr_harness_json_node_object (reply);
    g_assert_cmpstr (vmr_harness_json_string (object, "from"), ==, e->from);
    g_assert_cmpstr (vmr_harness_json_string (object, "to"), ==, e->to);
    g_assert_cmpint (vmr_harness_json_bool (object, "dry-run"), ==, dry_run);
    g_assert_cmpint (vmr_harness_json_int (object, "total-bytes"), ==, (gint64) bytes);
    disks = vmr_harness_json_array (object, "disks");
    g_assert_nonnull (disks);
    g_assert_cmpuint (json_array_get_length (disks), ==, planned);
    for (guint k = 0; k < e->domains->len; k++) {
        Domain *d = evac_domain_at (e, k);
        gboolean selected = glob == NULL || g_pattern_match_simple (glob, d->name);
        g_autoptr (GPtrArray) job_ids = g_ptr_array_new ();
        const gchar *group = NULL;

        for (guint i = 0; i < d->n; i++) {
            JsonObject *entry = find_entry (disks, d, i);

            if (!selected || d->dests[i] == NULL) {
                if (entry != NULL)
                    vmr_fail ("the plan has %s %s (%s), which it must not move", d->name, d->ids[i],
                              d->sources[i]);
                continue;
            }
            if (entry == NULL)
                vmr_fail ("the plan lacks %s %s (%s)", d->name, d->ids[i], d->sources[i]);
            g_assert_cmpstr (vmr_harness_json_string (entry, "source"), ==, d->sources[i]);
            g_assert_cmpstr (vmr_harness_json_string (entry, "destination"), ==, d->dests[i]);
            g_assert_cmpstr (vmr_harness_json_string (entry, "format"), ==, d->formats[i]);
            g_assert_cmpint (vmr_harness_json_int (entry, "size"), ==, (gint64) d->sizes[i]);
            g_assert_false (json_object_has_member (entry, "skipped"));
            g_assert_false (json_object_has_member (entry, "error"));
            if (dry_run) {
                g_assert_false (json_object_has_member (entry, "job"));
                g_assert_false (json_object_has_member (entry, "group"));
                continue;
            }
            g_ptr_array_add (job_ids, (gpointer) vmr_harness_json_string (entry, "job"));
            if (json_object_has_member (entry, "group") && group == NULL)
                group = vmr_harness_json_string (entry, "group");
            else if (group != NULL)
                g_assert_cmpstr (vmr_harness_json_string (entry, "group"), ==, group);
        }
        /* a domain's disks went as one group, named after one of its jobs; one disk, no group */
        if (job_ids->len > 1) {
            gboolean named = FALSE;

            if (group == NULL)
                vmr_fail ("the disks of %s were submitted without a group", d->name);
            for (guint i = 0; i < job_ids->len; i++)
                named = named || g_strcmp0 (g_ptr_array_index (job_ids, i), group) == 0;
            g_assert_true (named);
        } else {
            g_assert_null (group);
        }
    }
}

/* the ids of the jobs in a reply of evacuate --json, NULL-terminated */
static GStrv
reply_jobs (JsonNode *reply)
{
    JsonArray *disks = vmr_harness_json_array (vmr_harness_json_node_object (reply), "disks");
    g_autoptr (GStrvBuilder) ids = g_strv_builder_new ();

    for (guint j = 0; j < json_array_get_length (disks); j++)
        g_strv_builder_add (ids,
                            vmr_harness_json_string (vmr_harness_json_element (disks, j), "job"));
    return g_strv_builder_end (ids);
}

/*
 * After an evacuation of the domains @glob matches: each planned disk was
 * moved by a completed job (the disks of one domain in one group), its
 * domain runs it from its destination; every other disk has no job and
 * stays where it was; @output, evacuate's, names every job. Then every QEMU quits and the bytes are
 * checked: the destinations hold what the guests must see, the sources that
 * were not moved too, and so do those that were, unless the guest wrote to
 * them (a moved source keeps what it had at the pivot).
 */
static void
assert_evacuated (Evac *e, const gchar *glob, const gchar *output)
{
    g_autoptr (JsonNode) jobs = vmr_harness_cli_json (e->h, "jobs", NULL);
    guint n_domains = 0;
    guint64 bytes = 0;

    g_assert_cmpuint (json_array_get_length (vmr_harness_json_node_array (jobs)), ==,
                      evac_count_planned (e, glob, &n_domains, &bytes));
    for (guint k = 0; k < e->domains->len; k++) {
        Domain *d = evac_domain_at (e, k);
        gboolean selected = glob == NULL || g_pattern_match_simple (glob, d->name);
        const gchar *group = NULL;
        guint moved = 0;

        for (guint i = 0; i < d->n; i++)
            moved += selected && d->dests[i] != NULL ? 1 : 0;
        for (guint i = 0; i < d->n; i++) {
            JsonObject *job = evac_find_job (jobs, d, i);

            if (!selected || d->dests[i] == NULL) {
                if (job != NULL)
                    vmr_fail ("%s %s has a job, but it is not to move", d->name, d->ids[i]);
                vmr_harness_assert_disk_on (d->vm, d->ids[i], d->sources[i]);
                continue;
            }
            if (job == NULL)
                vmr_fail ("%s %s has no job", d->name, d->ids[i]);
            g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "completed");
            /* evacuate's table names the job */
            if (output != NULL)
                g_assert_nonnull (strstr (output, vmr_harness_json_string (job, "id")));
            g_assert_cmpstr (vmr_harness_json_string (job, "source"), ==, d->sources[i]);
            g_assert_cmpstr (vmr_harness_json_string (job, "destination"), ==, d->dests[i]);
            /* a domain with several disks to move moves them as one group */
            if (moved > 1 && group == NULL)
                group = vmr_harness_json_string (job, "group");
            else if (moved > 1)
                g_assert_cmpstr (vmr_harness_json_string (job, "group"), ==, group);
            else
                g_assert_false (json_object_has_member (job, "group"));
            vmr_harness_assert_disk_on (d->vm, d->ids[i], d->dests[i]);
            vmr_harness_assert_node_released (d->vm, d->sources[i]);
            vmr_harness_assert_job_record (e->h, vmr_harness_json_string (job, "id"), "completed");
        }
        vmr_harness_assert_no_block_jobs (d->vm);
    }
    for (guint k = 0; k < e->domains->len; k++) {
        Domain *d = evac_domain_at (e, k);
        gboolean selected = glob == NULL || g_pattern_match_simple (glob, d->name);

        vmr_harness_quit_qemu (d->vm);
        for (guint i = 0; i < d->n; i++) {
            gboolean moved = selected && d->dests[i] != NULL;

            if (moved)
                vmr_harness_assert_image_equals (d->dests[i], d->formats[i], d->expected[i]);
            if (!moved || d->writers[i] == NULL || vmr_harness_writer_count (d->writers[i]) == 0)
                vmr_harness_assert_image_equals (d->sources[i], d->formats[i], d->expected[i]);
        }
    }
}

/*
 * three domains: alpha with two disks under FROM, beta with one in a
 * sub-directory of FROM, gamma with its disk elsewhere. The dry run lists
 * alpha's and beta's disks and creates nothing; the run moves them.
 */
static void
test_evacuate (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec alpha[] = {
        { "from/alpha-0.raw", "raw", 16 * MIB },
        { "from/alpha-1.qcow2", "qcow2", 24 * MIB },
    };
    static const DiskSpec beta[] = { { "from/sub/beta.raw", "raw", 16 * MIB } };
    static const DiskSpec gamma[] = { { "elsewhere/gamma.raw", "raw", 16 * MIB } };
    const gchar *const dry_run[] = { "--dry-run", NULL };
    const gchar *const json_dry_run[] = { "--dry-run", "--json", NULL };
    const gchar *const wait[] = { "--wait", "--speed", EVAC_WRITE_SPEED, NULL };
    VmrCliRun *running = NULL;
    g_autoptr (VmrCliResult) planned = NULL;
    g_autoptr (VmrCliResult) planned_json = NULL;
    g_autoptr (VmrCliResult) run = NULL;
    g_autoptr (JsonNode) plan = NULL;
    g_autofree gchar *summary = NULL;
    g_autofree gchar *progress = NULL;
    g_autofree gchar *to_tree = NULL;
    guint n_domains = 0;
    guint64 bytes = 0;
    guint n_disks;

    evac_init (&e, h);
    evac_add_domain (&e, "alpha", alpha, G_N_ELEMENTS (alpha));
    evac_add_domain (&e, "beta", beta, G_N_ELEMENTS (beta));
    evac_add_domain (&e, "gamma", gamma, G_N_ELEMENTS (gamma));
    n_disks = evac_count_planned (&e, NULL, &n_domains, &bytes);
    g_assert_cmpuint (n_disks, ==, 3);

    /* the plan, as JSON */
    planned_json = evac_run (&e, json_dry_run);
    vmr_cli_result_assert_ok (planned_json);
    plan = vmr_cli_result_parse_json (planned_json);
    assert_plan (&e, plan, NULL, TRUE);

    /* the plan, as a table: every disk, no job, and the summary */
    planned = evac_run (&e, dry_run);
    vmr_cli_result_assert_ok (planned);
    g_test_message ("%s", planned->out);
    for (guint k = 0; k < e.domains->len; k++) {
        Domain *d = evac_domain_at (&e, k);

        for (guint i = 0; i < d->n; i++) {
            if (d->dests[i] != NULL) {
                g_assert_nonnull (strstr (planned->out, d->sources[i]));
                g_assert_nonnull (strstr (planned->out, d->dests[i]));
            } else {
                g_assert_null (strstr (planned->out, d->sources[i]));
            }
        }
    }
    summary = g_strdup_printf ("%u disks of %u domains", n_disks, n_domains);
    g_assert_nonnull (strstr (planned->out, summary));

    /* a dry run submits nothing and creates nothing */
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    to_tree = evac_describe_tree (e.to);
    g_assert_cmpstr (to_tree, ==, "");
    for (guint k = 0; k < e.domains->len; k++)
        vmr_harness_assert_no_block_jobs (evac_domain_at (&e, k)->vm);

    /* the real thing, slowed down while the guests write, then let go */
    running = evac_spawn (&e, wait);
    evac_guests_write (&e, n_disks);
    run = vmr_harness_cli_wait (running);
    vmr_cli_result_assert_ok (run);
    /* on their destinations now, and the guests write on */
    for (guint k = 0; k < e.domains->len; k++)
        for (guint i = 0; i < evac_domain_at (&e, k)->n; i++)
            if (evac_domain_at (&e, k)->writers[i] != NULL)
                vmr_harness_writer_write (evac_domain_at (&e, k)->writers[i], EVAC_WRITES);
    g_test_message ("%s", run->out);
    progress = g_strdup_printf ("evacuate: %u/%u disks done", n_disks, n_disks);
    g_assert_nonnull (strstr (run->out, progress));
    g_assert_nonnull (strstr (run->out, summary));
    assert_evacuated (&e, NULL, run->out);
}

/*
 * disks whose paths, as QEMU reports them, reach FROM through a double
 * slash, a "..", or a symbolic link to FROM: each is planned under TO by
 * where it really lies, and moved there
 */
static void
test_odd_paths (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec doubled[] = { { "from//doubled.raw", "raw", 16 * MIB } };
    static const DiskSpec dotted[] = { { "from/sub/../dotted.raw", "raw", 16 * MIB } };
    static const DiskSpec linked[] = { { "link/linked.raw", "raw", 16 * MIB } };
    static const gchar *const names[] = { "doubled.raw", "dotted.raw", "linked.raw" };
    const gchar *const json_dry_run[] = { "--dry-run", "--json", NULL };
    const gchar *const wait[] = { "--wait", "--speed", EVAC_WRITE_SPEED, NULL };
    g_autoptr (VmrCliResult) planned = NULL;
    g_autoptr (VmrCliResult) run = NULL;
    g_autoptr (JsonNode) plan = NULL;
    g_autofree gchar *link = NULL;
    VmrCliRun *running;

    evac_init (&e, h);
    link = vmr_harness_path (h, "link");
    g_assert_cmpint (symlink (e.from, link), ==, 0);
    evac_add_domain (&e, "doubled", doubled, 1);
    evac_add_domain (&e, "dotted", dotted, 1);
    evac_add_domain (&e, "linked", linked, 1);
    /* where each lies under FROM, whatever path QEMU opened it by */
    for (guint k = 0; k < G_N_ELEMENTS (names); k++) {
        Domain *d = evac_domain_at (&e, k);

        g_free (d->dests[0]);
        d->dests[0] = g_build_filename (e.to, names[k], NULL);
    }
    planned = evac_run (&e, json_dry_run);
    vmr_cli_result_assert_ok (planned);
    plan = vmr_cli_result_parse_json (planned);
    assert_plan (&e, plan, NULL, TRUE);

    running = evac_spawn (&e, wait);
    evac_guests_write (&e, G_N_ELEMENTS (names));
    run = vmr_harness_cli_wait (running);
    vmr_cli_result_assert_ok (run);
    assert_evacuated (&e, NULL, run->out);
}

/*
 * --domains GLOB: only the matching domains' disks move; the reply of a
 * run (--json) names each disk's job and the group of a domain's disks
 */
static void
test_domains_glob (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec web1[] = {
        { "from/web-1.raw", "raw", 16 * MIB },
        { "from/data/web-1.qcow2", "qcow2", 16 * MIB },
    };
    static const DiskSpec web2[] = { { "from/web-2.qcow2", "qcow2", 16 * MIB } };
    static const DiskSpec db1[] = { { "from/db-1.raw", "raw", 16 * MIB } };
    const gchar *const json_dry_run[] = { "--domains", "web-*", "--dry-run", "--json", NULL };
    const gchar *const json_run[] = { "--domains", "web-*", "--json", NULL };
    g_autoptr (VmrCliResult) planned = NULL;
    g_autoptr (VmrCliResult) run = NULL;
    g_autoptr (JsonNode) plan = NULL;
    g_autoptr (JsonNode) submitted = NULL;
    g_auto (GStrv) ids = NULL;
    g_autofree gchar *to_tree = NULL;

    evac_init (&e, h);
    evac_add_domain (&e, "web-1", web1, G_N_ELEMENTS (web1));
    evac_add_domain (&e, "db-1", db1, G_N_ELEMENTS (db1));
    evac_add_domain (&e, "web-2", web2, G_N_ELEMENTS (web2));

    planned = evac_run (&e, json_dry_run);
    vmr_cli_result_assert_ok (planned);
    plan = vmr_cli_result_parse_json (planned);
    assert_plan (&e, plan, "web-*", TRUE);

    run = evac_run (&e, json_run);
    vmr_cli_result_assert_ok (run);
    submitted = vmr_cli_result_parse_json (run);
    assert_plan (&e, submitted, "web-*", FALSE);
    ids = reply_jobs (submitted);
    for (guint i = 0; ids[i] != NULL; i++) {
        g_autoptr (JsonObject) job
            = vmr_harness_wait_job (h, ids[i], "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    }
    /* db-1 was not selected: nothing of it under TO */
    to_tree = evac_describe_tree (e.to);
    g_assert_cmpstr (to_tree, ==, "data/ data/web-1.qcow2 web-1.raw web-2.qcow2");
    assert_evacuated (&e, "web-*", run->out);
}

/* the entry of disk @i of @d in the reply @reply; fails when there is none */
static JsonObject *
get_entry (JsonNode *reply, Domain *d, guint i)
{
    JsonArray *disks = vmr_harness_json_array (vmr_harness_json_node_object (reply), "disks");
    JsonObject *entry;

    g_assert_nonnull (disks);
    entry = find_entry (disks, d, i);
    if (entry == NULL)
        vmr_fail ("the plan lacks %s %s", d->name, d->ids[i]);
    return entry;
}

/*
 * a disk under FROM that already has an unfinished job is listed with that
 * job and "already migrating", and not planned again; the domain's other
 * disk moves
 */
static void
test_skips_migrating (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec alpha[] = {
        { "from/alpha-0.raw", "raw", 32 * MIB },
        { "from/alpha-1.raw", "raw", 16 * MIB },
    };
    const gchar *const dry_run[] = { "--dry-run", NULL };
    const gchar *const json_dry_run[] = { "--dry-run", "--json", NULL };
    const gchar *const json_run[] = { "--json", NULL };
    g_autoptr (VmrCliResult) planned = NULL;
    g_autoptr (VmrCliResult) planned_json = NULL;
    g_autoptr (VmrCliResult) run = NULL;
    g_autoptr (VmrCliResult) cancel = NULL;
    g_autoptr (JsonNode) plan = NULL;
    g_autoptr (JsonNode) submitted = NULL;
    g_autoptr (JsonObject) copying = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    g_autoptr (JsonObject) completed = NULL;
    g_autofree gchar *elsewhere = NULL;
    g_autofree gchar *busy = NULL;
    g_autofree gchar *to_tree = NULL;
    g_autofree gchar *moved = NULL;
    JsonObject *entry;
    Domain *d;

    evac_init (&e, h);
    d = evac_add_domain (&e, "alpha", alpha, G_N_ELEMENTS (alpha));
    g_free (evac_make_dir (h, "elsewhere"));
    elsewhere = vmr_harness_path (h, "elsewhere/alpha-0.raw");
    busy = vmr_harness_migrate (d->vm, "alpha", "disk0", elsewhere, "--speed",
                                VMR_HARNESS_SLOW_SPEED, NULL);
    copying = vmr_harness_wait_job (h, busy, "copying", VMR_HARNESS_JOB_TIMEOUT_S);

    planned_json = evac_run (&e, json_dry_run);
    vmr_cli_result_assert_ok (planned_json);
    plan = vmr_cli_result_parse_json (planned_json);
    g_assert_cmpuint (json_array_get_length (
                          vmr_harness_json_array (vmr_harness_json_node_object (plan), "disks")),
                      ==, 2);
    entry = get_entry (plan, d, 0);
    g_assert_cmpstr (vmr_harness_json_string (entry, "job"), ==, busy);
    g_assert_cmpstr (vmr_harness_json_string (entry, "skipped"), ==, "already migrating");
    entry = get_entry (plan, d, 1);
    g_assert_cmpstr (vmr_harness_json_string (entry, "destination"), ==, d->dests[1]);
    g_assert_false (json_object_has_member (entry, "job"));
    g_assert_false (json_object_has_member (entry, "skipped"));
    planned = evac_run (&e, dry_run);
    vmr_cli_result_assert_ok (planned);
    g_assert_nonnull (strstr (planned->out, "already migrating"));
    g_assert_nonnull (strstr (planned->out, d->dests[1]));
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 1);

    /* the run submits the other disk only */
    run = evac_run (&e, json_run);
    vmr_cli_result_assert_ok (run);
    submitted = vmr_cli_result_parse_json (run);
    g_assert_cmpstr (vmr_harness_json_string (get_entry (submitted, d, 0), "job"), ==, busy);
    entry = get_entry (submitted, d, 1);
    g_assert_false (json_object_has_member (entry, "skipped"));
    moved = g_strdup (vmr_harness_json_string (entry, "job"));
    g_assert_cmpstr (moved, !=, busy);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 2);

    /*
     * the first job was left alone: it still copies, until cancelled (the
     * new one may wait for it: both disks share the main loop)
     */
    g_clear_pointer (&copying, json_object_unref);
    copying = vmr_harness_get_job (h, busy);
    g_assert_cmpstr (vmr_harness_json_string (copying, "state"), ==, "copying");
    g_assert_cmpstr (vmr_harness_json_string (copying, "destination"), ==, elsewhere);
    cancel = vmr_harness_cli (h, "cancel", busy, NULL);
    vmr_cli_result_assert_ok (cancel);
    cancelled = vmr_harness_wait_job (h, busy, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    completed = vmr_harness_wait_job (h, moved, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    g_assert_cmpstr (vmr_harness_json_string (completed, "destination"), ==, d->dests[1]);
    to_tree = evac_describe_tree (e.to);
    g_assert_cmpstr (to_tree, ==, "alpha-1.raw");
    vmr_harness_assert_disk_on (d->vm, "disk0", d->sources[0]);
    vmr_harness_assert_disk_on (d->vm, "disk1", d->dests[1]);
    vmr_harness_assert_node_released (d->vm, d->sources[1]);
    vmr_harness_assert_no_block_jobs (d->vm);
    vmr_harness_quit_qemu (d->vm);
    vmr_harness_assert_image_equals (d->dests[1], "raw", d->expected[1]);
    for (guint i = 0; i < d->n; i++)
        vmr_harness_assert_image_equals (d->sources[i], "raw", d->expected[i]);
}

typedef enum {
    REFUSE_DEST_EXISTS,
    REFUSE_COLLISION,
    REFUSE_TO_UNDER_FROM,
    REFUSE_TO_IS_FROM,
    REFUSE_NO_FROM,
} Refusal;

static const Refusal dest_exists = REFUSE_DEST_EXISTS;
static const Refusal collision = REFUSE_COLLISION;
static const Refusal to_under_from = REFUSE_TO_UNDER_FROM;
static const Refusal to_is_from = REFUSE_TO_IS_FROM;
static const Refusal no_from = REFUSE_NO_FROM;

/*
 * a plan that cannot work is refused with one error line, exit status 1;
 * nothing is submitted, nothing created, no disk moves
 */
static void
test_refused (VmrHarness *h, gconstpointer user_data)
{
    const Refusal refusal = *(const Refusal *) user_data;
    g_auto (Evac) e = { 0 };
    static const DiskSpec alpha[] = {
        { "from/alpha-0.raw", "raw", 16 * MIB },
        { "from/alpha-1.raw", "raw", 16 * MIB },
    };
    static const DiskSpec shared[] = { { "from/shared.raw", "raw", 16 * MIB, TRUE } };
    g_autoptr (VmrCliResult) refused = NULL;
    g_autofree gchar *existing = NULL;
    g_autofree gchar *from_before = NULL;
    g_autofree gchar *from_after = NULL;
    g_autofree gchar *to_before = NULL;
    g_autofree gchar *to_after = NULL;
    const gchar *named = NULL; /* a path the error must name */

    evac_init (&e, h);
    evac_add_domain (&e, "alpha", alpha, G_N_ELEMENTS (alpha));
    switch (refusal) {
        case REFUSE_DEST_EXISTS:
            /* the second disk's destination is taken */
            existing = vmr_harness_create_file (h, "to/alpha-1.raw", MIB, 0xe5);
            g_assert_cmpstr (existing, ==, evac_domain_at (&e, 0)->dests[1]);
            named = existing;
            break;
        case REFUSE_COLLISION:
            /* one image, two domains: both disks would go to one destination */
            evac_add_domain (&e, "shared-1", shared, 1);
            evac_add_domain (&e, "shared-2", shared, 1);
            break;
        case REFUSE_TO_UNDER_FROM:
            g_free (e.to);
            e.to = evac_make_dir (h, "from/inner");
            break;
        case REFUSE_TO_IS_FROM:
            g_free (e.to);
            e.to = g_strdup (e.from);
            break;
        case REFUSE_NO_FROM:
            g_free (e.from);
            e.from = vmr_harness_path (h, "no-such-dir");
            named = e.from;
            break;
    }
    from_before = g_file_test (e.from, G_FILE_TEST_IS_DIR) ? evac_describe_tree (e.from) : NULL;
    to_before = evac_describe_tree (e.to);

    refused = evac_run (&e, NULL);
    vmr_cli_result_assert_error (refused, 1);
    if (named != NULL)
        g_assert_nonnull (strstr (refused->err, named));

    /* nothing submitted, nothing created */
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    to_after = evac_describe_tree (e.to);
    g_assert_cmpstr (to_after, ==, to_before);
    from_after = g_file_test (e.from, G_FILE_TEST_IS_DIR) ? evac_describe_tree (e.from) : NULL;
    g_assert_cmpstr (from_after, ==, from_before);
    if (existing != NULL) {
        g_autofree gchar *made = vmr_harness_create_file (h, "expected-existing", MIB, 0xe5);

        vmr_harness_assert_image_equals (existing, "raw", made);
    }
    vmr_harness_assert_daemon_serving (h);
    for (guint k = 0; k < e.domains->len; k++) {
        Domain *d = evac_domain_at (&e, k);

        vmr_harness_assert_no_block_jobs (d->vm);
        for (guint i = 0; i < d->n; i++) {
            vmr_harness_assert_disk_on (d->vm, d->ids[i], d->sources[i]);
            if (d->dests[i] != NULL && d->dests[i] != existing)
                vmr_harness_assert_node_released (d->vm, d->dests[i]);
        }
        vmr_harness_quit_qemu (d->vm);
        for (guint i = 0; i < d->n; i++)
            vmr_harness_assert_image_equals (d->sources[i], d->formats[i], d->expected[i]);
    }
}

/* no disk of a known domain under FROM: a success that does nothing */
static void
test_empty_plan (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec gamma[] = { { "elsewhere/gamma.raw", "raw", 16 * MIB } };
    const gchar *const json[] = { "--json", NULL };
    const gchar *const wait[] = { "--wait", NULL };
    g_autoptr (VmrCliResult) empty = NULL;
    g_autoptr (VmrCliResult) empty_json = NULL;
    g_autoptr (JsonNode) plan = NULL;
    g_autofree gchar *stray = NULL;
    g_autofree gchar *to_tree = NULL;

    evac_init (&e, h);
    evac_add_domain (&e, "gamma", gamma, 1);
    /* a file under FROM that is no domain's disk does not count */
    stray = vmr_harness_create_file (h, "from/stray.raw", MIB, 0x11);

    empty = evac_run (&e, wait);
    vmr_cli_result_assert_ok (empty);
    g_assert_nonnull (strstr (empty->out, "nothing to evacuate"));
    g_assert_nonnull (strstr (empty->out, e.from));
    g_assert_cmpstr (empty->err, ==, "");

    empty_json = evac_run (&e, json);
    vmr_cli_result_assert_ok (empty_json);
    plan = vmr_cli_result_parse_json (empty_json);
    assert_plan (&e, plan, NULL, FALSE);
    g_assert_cmpuint (json_array_get_length (
                          vmr_harness_json_array (vmr_harness_json_node_object (plan), "disks")),
                      ==, 0);

    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    to_tree = evac_describe_tree (e.to);
    g_assert_cmpstr (to_tree, ==, "");
    assert_evacuated (&e, NULL, NULL);
}

/*
 * A partial failure: alpha's disks are bound for a file system too small
 * for them, beta's is not. alpha's group fails (one member out of space,
 * the other cancelled with it) and stays on its sources, whose bytes hold
 * every write; beta moves; `evacuate --wait` exits 1 naming each job that
 * did not complete.
 */
static void
test_partial_failure (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Evac) e = { 0 };
    static const DiskSpec alpha[] = {
        { "from/small/alpha-0.raw", "raw", 16 * MIB },
        { "from/small/alpha-1.raw", "raw", 24 * MIB },
    };
    static const DiskSpec beta[] = { { "from/beta.raw", "raw", 16 * MIB } };
    const gchar *const wait[] = { "--wait", "--speed", EVAC_WRITE_SPEED, NULL };
    g_autoptr (VmrCliResult) run = NULL;
    g_autoptr (JsonNode) jobs = NULL;
    g_autofree gchar *small = NULL;
    g_autofree gchar *policy = NULL;
    Domain *a, *b;
    VmrCliRun *running;
    guint not_completed = 0;

    /* the copies fail when the file system fills, rather than being refused or paused */
    policy = vmr_harness_write_policy (h, "[defaults]\nspace-check = off\n");
    vmr_harness_start_daemon (h, "--policy", policy, NULL);
    evac_init (&e, h);
    small = vmr_harness_mount_tmpfs (h, "to/small", 8 * MIB);
    if (small == NULL)
        return;
    a = evac_add_domain (&e, "alpha", alpha, G_N_ELEMENTS (alpha));
    b = evac_add_domain (&e, "beta", beta, G_N_ELEMENTS (beta));

    running = evac_spawn (&e, wait);
    evac_guests_write (&e, 3);
    run = vmr_harness_cli_wait (running);
    g_test_message ("%s%s", run->out, run->err);
    g_assert_cmpint (run->status, ==, 1);
    if (strstr (run->err, "evacuate: 2 of 3 disks not moved:") == NULL)
        vmr_fail ("evacuate does not say which disks did not move: %s", run->err);

    jobs = vmr_harness_cli_json (h, "jobs", NULL);
    for (guint i = 0; i < a->n; i++) {
        JsonObject *job = evac_find_job (jobs, a, i);
        g_autofree gchar *line = NULL;

        g_assert_nonnull (job);
        g_assert_cmpstr (vmr_harness_json_string (job, "state"), !=, "completed");
        not_completed++;
        /* one line per job: ID (DOMAIN DISK): STATE: REASON */
        line = g_strdup_printf ("%s (alpha %s): %s: ", vmr_harness_json_string (job, "id"),
                                a->ids[i], vmr_harness_json_string (job, "state"));
        if (strstr (run->err, line) == NULL)
            vmr_fail ("evacuate's error has no line '%s': %s", line, run->err);
        vmr_harness_assert_disk_on (a->vm, a->ids[i], a->sources[i]);
    }
    g_assert_cmpuint (not_completed, ==, 2);
    g_assert_cmpstr (vmr_harness_json_string (evac_find_job (jobs, b, 0), "state"), ==,
                     "completed");
    vmr_harness_assert_disk_on (b->vm, b->ids[0], b->dests[0]);
    vmr_harness_assert_no_block_jobs (a->vm);
    vmr_harness_assert_no_block_jobs (b->vm);
    vmr_harness_assert_daemon_serving (h);

    /* the guests write on, each to where it runs */
    for (guint i = 0; i < a->n; i++)
        vmr_harness_writer_write (a->writers[i], EVAC_WRITES);
    vmr_harness_writer_write (b->writers[0], EVAC_WRITES);
    vmr_harness_quit_qemu (a->vm);
    vmr_harness_quit_qemu (b->vm);
    for (guint i = 0; i < a->n; i++) {
        g_autofree gchar *name = g_path_get_basename (a->sources[i]);
        g_autofree gchar *dest = g_build_filename (small, name, NULL);

        vmr_harness_assert_image_equals (a->sources[i], "raw", a->expected[i]);
        /* the daemon created them: they go with the failed copy */
        g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
    }
    vmr_harness_assert_image_equals (b->dests[0], "raw", b->expected[0]);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/evacuate/plan-and-run", NULL, test_evacuate);
    VMR_HARNESS_ADD ("/evacuate/odd-paths", NULL, test_odd_paths);
    VMR_HARNESS_ADD ("/evacuate/domains-glob", NULL, test_domains_glob);
    VMR_HARNESS_ADD ("/evacuate/skips-migrating", NULL, test_skips_migrating);
    VMR_HARNESS_ADD ("/evacuate/refused/destination-exists", &dest_exists, test_refused);
    VMR_HARNESS_ADD ("/evacuate/refused/collision", &collision, test_refused);
    VMR_HARNESS_ADD ("/evacuate/refused/to-under-from", &to_under_from, test_refused);
    VMR_HARNESS_ADD ("/evacuate/refused/to-is-from", &to_is_from, test_refused);
    VMR_HARNESS_ADD ("/evacuate/refused/no-from", &no_from, test_refused);
    VMR_HARNESS_ADD ("/evacuate/empty-plan", NULL, test_empty_plan);
    VMR_HARNESS_ADD_NO_DAEMON ("/evacuate/partial-failure", NULL, test_partial_failure);
    return g_test_run ();
}
