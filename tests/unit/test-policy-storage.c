/*
 * The policy's [storage NAME] sections: their keys read, the storage of a
 * file, a block device and an NBD export, and the files refused: a location
 * in two storages, with the file and line of both, and [cluster]'s older
 * storage key beside the sections.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "policy.h"
#include "vmr-error.h"

static const gchar storages[]
    = "[defaults]\n"
      "speed = 100M\n"
      "[storage array-a]\n"
      "paths = /srv/array-a, /dev/mapper/array-a-*\n"
      "budget = 60M\n"
      "[storage fast]\n"
      "paths = /srv/fast\n"
      "[storage nbd-pool]\n"
      "paths = nbd://pool.example/**, nbd+unix:///vm-*?socket=/run/p.sock\n"
      "budget = 0\n";

/* the sections read, in the order of the file */
static void
test_storage_keys (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrPolicy) policy = vmr_policy_load_from_data ("s.conf", storages, &error);
    g_autoptr (VmrPolicy) built_in = vmr_policy_new_default ();
    GPtrArray *list;
    const VmrStorage *storage;

    g_assert_no_error (error);
    list = vmr_policy_get_storages (policy);
    g_assert_cmpuint (list->len, ==, 3);
    storage = g_ptr_array_index (list, 0);
    g_assert_cmpstr (storage->name, ==, "array-a");
    g_assert_cmpuint (storage->budget, ==, 60 * 1024 * 1024);
    g_assert_cmpuint (g_strv_length (storage->paths), ==, 2);
    g_assert_cmpstr (storage->paths[1], ==, "/dev/mapper/array-a-*");
    storage = g_ptr_array_index (list, 1);
    g_assert_cmpstr (storage->name, ==, "fast");
    g_assert_cmpuint (storage->budget, ==, 0);
    storage = g_ptr_array_index (list, 2);
    /* a TCP URI pattern gets the default port, as allowed-destinations has it */
    g_assert_cmpstr (storage->paths[0], ==, "nbd://pool.example:10809/**");
    g_assert_cmpuint (vmr_policy_get_storages (built_in)->len, ==, 0);
}

typedef struct {
    const gchar *location;
    const gchar *storage; /* NULL: none */
} MapCase;

static const MapCase map_cases[] = {
    /* a directory: the files in it and below it, and itself */
    { "/srv/array-a/web01.qcow2", "array-a" },
    { "/srv/array-a/deep/db.raw", "array-a" },
    { "/srv/array-a", "array-a" },
    { "/srv/array-ab/web01.qcow2", NULL },
    { "/srv/fast/x.raw", "fast" },
    /* block devices by glob */
    { "/dev/mapper/array-a-lv0", "array-a" },
    { "/dev/mapper/array-b-lv0", NULL },
    /* NBD exports by their canonical URI */
    { "nbd://pool.example:10809/disk1", "nbd-pool" },
    { "nbd://other.example:10809/disk1", NULL },
    { "nbd+unix:///vm-7?socket=/run/p.sock", "nbd-pool" },
    { "nbd+unix:///vm-7?socket=/run/q.sock", NULL },
    { "/var/lib/libvirt/images/a.qcow2", NULL },
};

/* every location to one storage at most */
static void
test_storage_mapping (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrPolicy) policy = vmr_policy_load_from_data ("s.conf", storages, &error);

    g_assert_no_error (error);
    for (gsize i = 0; i < G_N_ELEMENTS (map_cases); i++) {
        const VmrStorage *storage = vmr_policy_find_storage (policy, map_cases[i].location);

        g_test_message ("%s", map_cases[i].location);
        g_assert_cmpstr (storage != NULL ? storage->name : NULL, ==, map_cases[i].storage);
    }
}

/* what the cluster's per-storage limits count: the section's name, else the older prefixes */
static void
test_storage_cluster_key (void)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *text
        = g_strconcat (storages, "[cluster]\nname = c\netcd = http://e:2379\n", NULL);
    g_autoptr (VmrPolicy) policy = vmr_policy_load_from_data ("s.conf", text, &error);
    g_autoptr (VmrPolicy) old = NULL;
    g_autofree gchar *named = NULL;
    g_autofree gchar *unnamed = NULL;
    g_autofree gchar *prefix = NULL;

    g_assert_no_error (error);
    named = vmr_policy_storage_key (policy, "/srv/array-a/a.raw", "/srv/array-a");
    unnamed = vmr_policy_storage_key (policy, "/var/lib/a.raw", "/var/lib");
    g_assert_cmpstr (named, ==, "array-a");
    g_assert_cmpstr (unnamed, ==, "/var/lib");
    /* a policy of before the sections keeps its meaning */
    old = vmr_policy_load_from_data (
        "o.conf", "[cluster]\nname = c\netcd = http://e:2379\nstorage = /srv/array-a\n", &error);
    g_assert_no_error (error);
    prefix = vmr_policy_storage_key (old, "/srv/array-a/x/a.raw", "/srv/array-a/x");
    g_assert_cmpstr (prefix, ==, "/srv/array-a");
}

typedef struct {
    const gchar *name;
    const gchar *text;
    const gchar *message; /* the whole of it */
} RefusedCase;

static const RefusedCase refused_cases[] = {
    { "a directory in two storages",
      "[storage a]\npaths = /srv/array\n[storage b]\nbudget = 1M\npaths = /srv/other, "
      "/srv/array/fast\n",
      "s.conf:5: [storage b] paths: '/srv/array/fast' is also in [storage a] (line 2): a "
      "location belongs to one storage" },
    { "a device glob meeting a device",
      "[storage a]\npaths = /dev/mapper/a-*\n[storage b]\npaths = /dev/mapper/a-lv1\n",
      "s.conf:4: [storage b] paths: '/dev/mapper/a-lv1' is also in [storage a] (line 2): a "
      "location belongs to one storage" },
    { "one NBD server in two storages",
      "[storage a]\npaths = nbd://h/**\n[storage b]\npaths = nbd://h:10809/x\n",
      "s.conf:4: [storage b] paths: 'nbd://h:10809/x' is also in [storage a] (line 2): a "
      "location belongs to one storage" },
    { "no paths", "[storage a]\nbudget = 1M\n",
      "s.conf:1: [storage a] paths is missing: the directories, devices or NBD URIs of the "
      "storage" },
    { "an unknown key", "[storage a]\npaths = /srv\nspeed = 1M\n",
      "s.conf:3: [storage a] speed: unknown key (a [storage] section has paths and budget)" },
    { "a bad budget", "[storage a]\npaths = /srv\nbudget = fast\n",
      "s.conf:3: [storage a] budget: invalid size or rate 'fast'" },
    { "a relative path", "[storage a]\npaths = srv\n",
      "s.conf:2: [storage a] paths: 'srv' is neither an absolute path nor an NBD URI" },
    { "a bad name", "[storage a/b]\npaths = /srv\n",
      "s.conf:1: [storage a/b] 'a/b' is not a storage name (letters, digits, '.', '_' and '-')" },
    { "the older cluster key beside the sections",
      "[storage a]\npaths = /srv/a\n[cluster]\nname = c\netcd = http://e:2379\nstorage = /srv/b\n",
      "s.conf:6: [cluster] storage: set beside [storage NAME] sections: name these directories "
      "in a [storage] section's paths instead" },
};

static void
test_storage_refused (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (refused_cases); i++) {
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrPolicy) policy = NULL;

        g_test_message ("%s", refused_cases[i].name);
        policy = vmr_policy_load_from_data ("s.conf", refused_cases[i].text, &error);
        g_assert_null (policy);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
        g_assert_cmpstr (error->message, ==, refused_cases[i].message);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/policy/storage/keys", test_storage_keys);
    g_test_add_func ("/policy/storage/mapping", test_storage_mapping);
    g_test_add_func ("/policy/storage/cluster-key", test_storage_cluster_key);
    g_test_add_func ("/policy/storage/refused", test_storage_refused);
    return g_test_run ();
}
