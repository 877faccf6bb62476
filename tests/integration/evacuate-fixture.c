#define G_LOG_DOMAIN "vmr-test"

/* The evacuation tests' fixture: see evacuate-fixture.h */

#include "evacuate-fixture.h"

#include <string.h>

static const gchar *const disk_ids[MAX_DISKS] = { "disk0", "disk1" };

static void
domain_free (Domain *d)
{
    for (guint i = 0; i < MAX_DISKS; i++)
        g_clear_pointer (&d->writers[i], vmr_harness_writer_free);
    if (d->vm != NULL)
        vmr_harness_peer_free (d->vm);
    for (guint i = 0; i < MAX_DISKS; i++) {
        g_free (d->sources[i]);
        g_free (d->expected[i]);
        g_free (d->dests[i]);
    }
    g_free (d->name);
    g_free (d);
}

void
evac_clear (Evac *e)
{
    g_clear_pointer (&e->from, g_free);
    g_clear_pointer (&e->to, g_free);
    g_clear_pointer (&e->domains, g_ptr_array_unref);
}

/* makes the directory @name (and its parents) in the test's directory */
gchar *
evac_make_dir (VmrHarness *h, const gchar *name)
{
    g_autofree gchar *path = vmr_harness_path (h, name);

    g_assert_cmpint (g_mkdir_with_parents (path, 0755), ==, 0);
    return g_steal_pointer (&path);
}

/* FROM and TO, both existing and empty */
void
evac_init (Evac *e, VmrHarness *h)
{
    e->h = h;
    e->from = evac_make_dir (h, "from");
    e->to = evac_make_dir (h, "to");
    e->domains = g_ptr_array_new_with_free_func ((GDestroyNotify) domain_free);
}

/* where evacuate is to put @source: the same path relative to TO; NULL when not under FROM */
gchar *
evac_planned_destination (Evac *e, const gchar *source)
{
    g_autofree gchar *prefix = g_strconcat (e->from, "/", NULL);

    if (!g_str_has_prefix (source, prefix))
        return NULL;
    return g_build_filename (e->to, source + strlen (prefix), NULL);
}

/*
 * A QEMU with @n disks, attached as the domain @name. The images are made
 * with seeded patterns (their directories too), unless @specs says another
 * domain shares an image that exists already.
 */
Domain *
evac_add_domain (Evac *e, const gchar *name, const DiskSpec *specs, guint n)
{
    Domain *d = g_new0 (Domain, 1);
    VmrHarnessDisk disks[MAX_DISKS];

    g_assert_cmpuint (n, <=, MAX_DISKS);
    d->name = g_strdup (name);
    d->n = n;
    for (guint i = 0; i < n; i++) {
        g_autofree gchar *parent = g_path_get_dirname (specs[i].image);
        g_autofree gchar *path = vmr_harness_path (e->h, specs[i].image);

        g_free (evac_make_dir (e->h, parent));
        d->ids[i] = disk_ids[i];
        d->formats[i] = specs[i].format;
        d->sizes[i] = specs[i].size;
        if (g_file_test (path, G_FILE_TEST_EXISTS)) {
            g_assert_true (specs[i].shared);
            d->sources[i] = g_steal_pointer (&path);
        } else {
            d->sources[i]
                = vmr_harness_create_image (e->h, specs[i].image, specs[i].format, specs[i].size,
                                            g_str_hash (name) + 0x100 * i + 1);
        }
        d->expected[i] = vmr_harness_expected_path (d->sources[i]);
        d->dests[i] = evac_planned_destination (e, d->sources[i]);
        disks[i] = (VmrHarnessDisk){ d->ids[i], d->sources[i], d->formats[i], NULL };
        disks[i].no_locking = specs[i].shared;
        disks[i].scsi = TRUE;
    }
    d->vm = vmr_harness_peer_new (e->h, name);
    vmr_harness_start_qemu (d->vm, disks, n);
    for (guint i = 0; i < n; i++)
        if (!specs[i].shared)
            d->writers[i]
                = vmr_harness_writer_new (d->vm, d->ids[i], d->expected[i], g_str_hash (name) + i);
    vmr_harness_attach (d->vm, name);
    g_ptr_array_add (e->domains, d);
    return d;
}

Domain *
evac_domain_at (Evac *e, guint i)
{
    return g_ptr_array_index (e->domains, i);
}

/* the number of disks with a planned destination, of @glob-matching domains */
guint
evac_count_planned (Evac *e, const gchar *glob, guint *out_domains, guint64 *out_bytes)
{
    guint disks = 0;

    *out_domains = 0;
    *out_bytes = 0;
    for (guint k = 0; k < e->domains->len; k++) {
        Domain *d = evac_domain_at (e, k);
        gboolean any = FALSE;

        if (glob != NULL && !g_pattern_match_simple (glob, d->name))
            continue;
        for (guint i = 0; i < d->n; i++) {
            if (d->dests[i] == NULL)
                continue;
            disks++;
            *out_bytes += d->sizes[i];
            any = TRUE;
        }
        *out_domains += any ? 1 : 0;
    }
    return disks;
}

/* the command line `evacuate --from FROM --to TO @extra...`, NULL-terminated */
static GPtrArray *
evac_args (Evac *e, const gchar *const *extra)
{
    GPtrArray *args = g_ptr_array_new ();

    g_ptr_array_add (args, "evacuate");
    g_ptr_array_add (args, "--from");
    g_ptr_array_add (args, e->from);
    g_ptr_array_add (args, "--to");
    g_ptr_array_add (args, e->to);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add (args, (gpointer) extra[i]);
    g_ptr_array_add (args, NULL);
    return args;
}

VmrCliResult *
evac_run (Evac *e, const gchar *const *extra)
{
    g_autoptr (GPtrArray) args = evac_args (e, extra);

    return vmr_harness_cliv (e->h, (const gchar *const *) args->pdata);
}

/* adds what lies under @dir to @names: "sub/", "sub/name", ... */
static void
list_tree (const gchar *dir, const gchar *prefix, GPtrArray *names)
{
    g_autoptr (GDir) handle = g_dir_open (dir, 0, NULL);
    const gchar *name;

    g_assert_nonnull (handle);
    while ((name = g_dir_read_name (handle)) != NULL) {
        g_autofree gchar *path = g_build_filename (dir, name, NULL);
        g_autofree gchar *rel
            = prefix != NULL ? g_strconcat (prefix, "/", name, NULL) : g_strdup (name);

        if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
            g_autofree gchar *slash = g_strconcat (rel, "/", NULL);

            g_ptr_array_add (names, g_steal_pointer (&slash));
            list_tree (path, rel, names);
        } else {
            g_ptr_array_add (names, g_steal_pointer (&rel));
        }
    }
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
    return g_strcmp0 (*(const gchar *const *) a, *(const gchar *const *) b);
}

/* what lies under @dir, sorted, joined with spaces; "" when it is empty */
gchar *
evac_describe_tree (const gchar *dir)
{
    g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);

    list_tree (dir, NULL, names);
    g_ptr_array_sort (names, compare_strings);
    g_ptr_array_add (names, NULL);
    return g_strjoinv (" ", (gchar **) names->pdata);
}

/* the job of disk @i of @d in `jobs --json`, NULL when none */
JsonObject *
evac_find_job (JsonNode *jobs, Domain *d, guint i)
{
    JsonArray *array = vmr_harness_json_node_array (jobs);

    for (guint j = 0; j < json_array_get_length (array); j++) {
        JsonObject *job = vmr_harness_json_element (array, j);

        if (g_strcmp0 (vmr_harness_json_string (job, "domain"), d->name) == 0
            && g_strcmp0 (vmr_harness_json_string (job, "disk"), d->ids[i]) == 0)
            return job;
    }
    return NULL;
}

VmrCliRun *
evac_spawn (Evac *e, const gchar *const *extra)
{
    g_autoptr (GPtrArray) args = evac_args (e, extra);

    return vmr_harness_cli_spawnv (e->h, (const gchar *const *) args->pdata);
}

/*
 * Once the evacuation submitted its @n_jobs jobs: every guest writes to
 * every disk while the copies run slowly, then every copy is let go (a job
 * may be starting, or have ended meanwhile: a member of a group whose other
 * member failed)
 */
void
evac_guests_write (Evac *e, guint n_jobs)
{
    g_autoptr (JsonNode) jobs = NULL;
    JsonArray *array;

    vmr_harness_wait_job_count (e->h, n_jobs);
    for (guint k = 0; k < e->domains->len; k++)
        for (guint i = 0; i < evac_domain_at (e, k)->n; i++)
            if (evac_domain_at (e, k)->writers[i] != NULL)
                vmr_harness_writer_write (evac_domain_at (e, k)->writers[i], EVAC_WRITES);
    jobs = vmr_harness_cli_json (e->h, "jobs", NULL);
    array = vmr_harness_json_node_array (jobs);
    for (guint j = 0; j < json_array_get_length (array); j++) {
        const gchar *id = vmr_harness_json_string (vmr_harness_json_element (array, j), "id");
        g_autoptr (VmrCliResult) unlimited = vmr_harness_cli (e->h, "set-speed", id, "0", NULL);

        /* a copy on its way to QEMU says to try again, as its user would */
        for (guint tries = 0;
             unlimited->status != 0 && strstr (unlimited->err, "try again") != NULL && tries < 100;
             tries++) {
            g_usleep (50 * 1000);
            g_clear_pointer (&unlimited, vmr_cli_result_free);
            unlimited = vmr_harness_cli (e->h, "set-speed", id, "0", NULL);
        }
        if (unlimited->status != 0 && strstr (unlimited->err, " already") == NULL)
            vmr_fail ("set-speed %s: %s", id, unlimited->err);
    }
}
