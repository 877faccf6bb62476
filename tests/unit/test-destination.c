#define G_LOG_DOMAIN "vmr-test"

#include <errno.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "destination-private.h"
#include "libvirt-xml.h"
#include "test-require.h"
#include "test-tree.h"
#include "vmr-error.h"

#define MiB (1024 * 1024)

/* ---- helpers ---- */

/* a fresh directory for each test, removed with all in it at the end */
typedef struct {
    gchar *dir;
    GPtrArray *paths; /* the paths at() handed out, owned */
    gchar *device;    /* the block tests' loop device over "backing.raw", or NULL */
} Fixture;

/* @name in the test's directory; the fixture owns the string */
static const gchar *
at (Fixture *f, const gchar *name)
{
    gchar *path = g_build_filename (f->dir, name, NULL);

    g_ptr_array_add (f->paths, path);
    return path;
}

/* a sparse file of @size bytes; returns its path, as at() */
static const gchar *
make_file (Fixture *f, const gchar *name, gsize size)
{
    const gchar *path = at (f, name);
    FILE *file = g_fopen (path, "w");

    g_assert_nonnull (file);
    g_assert_cmpint (ftruncate (fileno (file), (off_t) size), ==, 0);
    fclose (file);
    return path;
}

static void
fixture_setup (Fixture *f, gconstpointer user_data)
{
    f->dir = g_dir_make_tmp ("vmr-test-dest-XXXXXX", NULL);
    g_assert_nonnull (f->dir);
    f->paths = g_ptr_array_new_with_free_func (g_free);
}

static void
fixture_teardown (Fixture *f, gconstpointer user_data)
{
    test_tree_remove (f->dir);
    g_free (f->dir);
    g_ptr_array_unref (f->paths);
}

/* @text with each '@' replaced by @dir */
static gchar *
expand (const gchar *text, const gchar *dir)
{
    g_auto (GStrv) parts = g_strsplit (text, "@", -1);

    return g_strjoinv (dir, parts);
}

/*
 * A loop device over @backing, made with losetup: a real block device of a
 * known size. NULL where that cannot be done here (a skip, or a failure under
 * REQUIRE_INTEGRATION=1: CI runs as root, with losetup).
 */
static gchar *
make_loop_device (const gchar *backing)
{
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *argv[] = { "losetup", "--find", "--show", backing, NULL };
    g_autofree gchar *program = g_find_program_in_path ("losetup");
    gint status = 0;

    if (program == NULL) {
        test_require_unavailable ("losetup not found");
        return NULL;
    }
    if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                       &status, &error)
        || !g_spawn_check_wait_status (status, NULL)) {
        g_autofree gchar *reason = g_strdup_printf (
            "cannot make a loop device: %s", error != NULL ? error->message : g_strstrip (err));

        test_require_unavailable (reason);
        return NULL;
    }
    return g_strdup (g_strstrip (out));
}

static void
remove_loop_device (const gchar *device)
{
    const gchar *argv[] = { "losetup", "--detach", device, NULL };
    gint status = 0;

    g_assert_true (g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL,
                                 NULL, &status, NULL));
    g_assert_true (g_spawn_check_wait_status (status, NULL));
}

/* the first block device under /dev, or NULL */
static gchar *
find_block_device (void)
{
    g_autoptr (GDir) dev = g_dir_open ("/dev", 0, NULL);
    const gchar *name;

    while (dev != NULL && (name = g_dir_read_name (dev)) != NULL) {
        g_autofree gchar *path = g_build_filename ("/dev", name, NULL);
        GStatBuf st;

        if (g_lstat (path, &st) == 0 && S_ISBLK (st.st_mode))
            return g_steal_pointer (&path);
    }
    return NULL;
}

/* the fixture with a loop device over an 8 MiB "backing.raw" (the test is skipped without) */
static void
loop_setup (Fixture *f, gconstpointer user_data)
{
    fixture_setup (f, user_data);
    f->device = make_loop_device (make_file (f, "backing.raw", 8 * MiB));
}

static void
loop_teardown (Fixture *f, gconstpointer user_data)
{
    if (f->device != NULL)
        remove_loop_device (f->device);
    g_free (f->device);
    fixture_teardown (f, user_data);
}

/* ---- kinds ---- */

typedef struct {
    const gchar *name;
    gboolean exists;
    mode_t mode;
    VmrDestinationKind kind;
} KindCase;

static const KindCase kind_cases[] = {
    { "missing", FALSE, 0, VMR_DESTINATION_FILE },
    { "regular file", TRUE, S_IFREG | 0600, VMR_DESTINATION_FILE },
    { "block device", TRUE, S_IFBLK | 0660, VMR_DESTINATION_BLOCK },
    /* what check() refuses is a file here: it names the problem */
    { "character device", TRUE, S_IFCHR | 0666, VMR_DESTINATION_FILE },
    { "directory", TRUE, S_IFDIR | 0700, VMR_DESTINATION_FILE },
};

static void
test_destination_kind (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *block = find_block_device ();
    const struct {
        const gchar *path;
        VmrDestinationKind kind;
    } real[] = {
        { make_file (f, "a.raw", MiB), VMR_DESTINATION_FILE },
        { at (f, "missing.raw"), VMR_DESTINATION_FILE },
        { "/dev/null", VMR_DESTINATION_FILE },
        { block, VMR_DESTINATION_BLOCK },
    };

    for (gsize i = 0; i < G_N_ELEMENTS (kind_cases); i++) {
        const KindCase *c = &kind_cases[i];
        GStatBuf st = { 0 };

        g_test_message ("case: %s", c->name);
        st.st_mode = c->mode;
        g_assert_cmpint (vmr_destination_kind_of (c->exists ? &st : NULL), ==, c->kind);
    }
    if (block == NULL)
        g_test_message ("no block device under /dev: its kind is tested by mode only");
    for (gsize i = 0; i < G_N_ELEMENTS (real); i++) {
        g_autoptr (VmrDestination) dest = NULL;
        g_autoptr (GError) error = NULL;

        if (real[i].path == NULL)
            continue;
        g_test_message ("path: %s", real[i].path);
        dest = vmr_destination_new (real[i].path, "raw", FALSE, &error);
        g_assert_no_error (error);
        g_assert_cmpint (dest->kind, ==, real[i].kind);
        g_assert_cmpstr (dest->location, ==, real[i].path);
    }
}

/* ---- formats ---- */

typedef struct {
    const gchar *format;
    gboolean valid;
    gboolean has_virtual_size;
} FormatCase;

static const FormatCase format_cases[] = {
    { "raw", TRUE, FALSE },  { "qcow2", TRUE, TRUE }, { "vmdk", FALSE, FALSE },
    { "RAW", FALSE, FALSE }, { "", FALSE, FALSE },    { NULL, FALSE, FALSE },
};

static void
test_destination_format (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (format_cases); i++) {
        const FormatCase *c = &format_cases[i];
        g_autoptr (GError) error = NULL;

        g_test_message ("format: %s", c->format != NULL ? c->format : "(null)");
        g_assert_cmpint (vmr_destination_format_is_valid (c->format), ==, c->valid);
        g_assert_cmpint (vmr_destination_check_format (c->format, &error), ==, c->valid);
        if (c->valid) {
            g_autoptr (VmrDestination) dest
                = vmr_destination_new ("/srv/a.img", c->format, TRUE, NULL);

            g_assert_no_error (error);
            g_assert_cmpint (vmr_destination_has_virtual_size (dest), ==, c->has_virtual_size);
        } else if (c->format != NULL) {
            g_autofree gchar *expected = g_strdup_printf (
                "unsupported destination format '%s' (use raw or qcow2)", c->format);

            g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
            g_assert_cmpstr (error->message, ==, expected);
        }
    }
    /* no format is raw */
    {
        g_autoptr (VmrDestination) dest = vmr_destination_new ("/srv/a.img", NULL, TRUE, NULL);

        g_assert_cmpstr (dest->format, ==, "raw");
    }
}

/* ---- check ---- */

/*
 * The test dir holds: source.raw (8 MiB, the disk in use), other.raw (8 MiB,
 * another disk), small.raw (4 MiB), big.raw (16 MiB), same-size.raw (8 MiB),
 * a directory sub/, a symlink alias.raw -> source.raw and a hard link
 * hard.raw of source.raw. The source has 8 MiB. In paths and messages '@'
 * stands for the test dir, '%' for the destination.
 */
#define SOURCE_SIZE (8 * MiB)

typedef struct {
    const gchar *path;
    const gchar *format;
    gboolean reuse;
    guint64 existing_size; /* what check() says is there */
} AcceptedCase;

static const AcceptedCase accepted_cases[] = {
    { "@/new.raw", "raw", FALSE, 0 },
    { "@/new.qcow2", "qcow2", FALSE, 0 },
    /* a qcow2 file's virtual size is QEMU's to check */
    { "@/small.raw", "qcow2", TRUE, 4 * MiB },
    { "@/big.raw", "raw", TRUE, 16 * MiB },
    { "@/same-size.raw", "raw", TRUE, 8 * MiB },
};

typedef struct {
    const gchar *path;
    const gchar *format;
    gboolean reuse;
    const gchar *message; /* all of it, word for word */
} RefusedCase;

static const RefusedCase refused_cases[] = {
    { "relative.raw", "raw", FALSE, "destination '%' is not an absolute path" },
    { "@/new.vmdk", "vmdk", FALSE, "unsupported destination format 'vmdk' (use raw or qcow2)" },
    { "@/big.raw", "raw", FALSE, "destination % exists; pass --reuse to copy onto it" },
    { "@/missing.raw", "raw", TRUE,
      "destination % does not exist (--reuse needs an existing file)" },
    { "@/small.raw", "raw", TRUE, "destination % is smaller than the source (4 MiB < 8 MiB)" },
    { "@/nowhere/new.raw", "raw", FALSE, "destination directory @/nowhere does not exist" },
    { "@/sub", "raw", TRUE, "destination % is a directory" },
    { "/dev/null", "raw", TRUE, "destination % is neither a file nor a block device" },
};

/* a disk of the domain by any name, reused or not */
static const gchar *const in_use_cases[]
    = { "@/source.raw", "@/other.raw", "@/alias.raw", "@/hard.raw" };

/* new() then check(), as the engine does; NULL or the error message */
static gchar *
new_and_check (const gchar *path, const gchar *format, gboolean reuse, guint64 source_size,
               const gchar *const *in_use, guint64 *out_size)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestination) dest = vmr_destination_new (path, format, !reuse, &error);

    if (dest != NULL && vmr_destination_check (dest, source_size, in_use, out_size, &error))
        return NULL;
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    /* one line for the user */
    g_assert_null (strchr (error->message, '\n'));
    return g_strdup (error->message);
}

/* @text with '%' replaced by @path and '@' by @dir */
static gchar *
expand_message (const gchar *text, const gchar *path, const gchar *dir)
{
    g_auto (GStrv) parts = g_strsplit (text, "%", -1);
    g_autofree gchar *with_path = g_strjoinv (path, parts);

    return expand (with_path, dir);
}

static void
test_destination_check (Fixture *f, gconstpointer user_data)
{
    const gchar *in_use[]
        = { make_file (f, "source.raw", 8 * MiB), make_file (f, "other.raw", 8 * MiB), NULL };

    make_file (f, "same-size.raw", 8 * MiB);
    make_file (f, "small.raw", 4 * MiB);
    make_file (f, "big.raw", 16 * MiB);
    g_assert_cmpint (symlink (in_use[0], at (f, "alias.raw")), ==, 0);
    g_assert_cmpint (link (in_use[0], at (f, "hard.raw")), ==, 0);
    g_assert_cmpint (g_mkdir (at (f, "sub"), 0700), ==, 0);

    for (gsize i = 0; i < G_N_ELEMENTS (accepted_cases); i++) {
        const AcceptedCase *c = &accepted_cases[i];
        g_autofree gchar *path = expand (c->path, f->dir);
        guint64 size = 1;

        g_test_message ("accepted: %s (%s)", path, c->format);
        g_assert_null (new_and_check (path, c->format, c->reuse, SOURCE_SIZE, in_use, &size));
        g_assert_cmpuint (size, ==, c->existing_size);
    }
    for (gsize i = 0; i < G_N_ELEMENTS (refused_cases); i++) {
        const RefusedCase *c = &refused_cases[i];
        g_autofree gchar *path = expand (c->path, f->dir);
        g_autofree gchar *expected = expand_message (c->message, path, f->dir);
        g_autofree gchar *message
            = new_and_check (path, c->format, c->reuse, SOURCE_SIZE, in_use, NULL);

        g_assert_cmpstr (message, ==, expected);
    }
    for (gsize i = 0; i < G_N_ELEMENTS (in_use_cases) * 2; i++) {
        g_autofree gchar *path = expand (in_use_cases[i / 2], f->dir);
        g_autofree gchar *expected
            = g_strdup_printf ("destination %s is a disk of the domain already", path);
        g_autofree gchar *message
            = new_and_check (path, "raw", i % 2 == 0, SOURCE_SIZE, in_use, NULL);

        g_assert_cmpstr (message, ==, expected);
    }
    /* the check changed nothing */
    g_assert_false (g_file_test (at (f, "new.raw"), G_FILE_TEST_EXISTS));
}

/* the overflow user: owns nothing of the machine */
#define NOBODY 65534

/*
 * Root writes to any directory: as root, runs the test again in a subprocess
 * that becomes nobody, asserts that it passed and returns TRUE (the caller
 * returns). In that subprocess, or when not root, returns FALSE: the test
 * goes on as an unprivileged user, owning the fixture's directory.
 */
static gboolean
rerun_unprivileged (Fixture *f)
{
    if (geteuid () != 0)
        return FALSE;
    if (!g_test_subprocess ()) {
        g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
        g_test_trap_assert_passed ();
        return TRUE;
    }
    g_assert_cmpint (chown (f->dir, NOBODY, NOBODY), ==, 0);
    g_assert_cmpint (setgroups (0, NULL), ==, 0);
    g_assert_cmpint (setgid (NOBODY), ==, 0);
    g_assert_cmpint (setuid (NOBODY), ==, 0);
    return FALSE;
}

static void
test_destination_check_not_writable (Fixture *f, gconstpointer user_data)
{
    const gchar *locked = at (f, "locked");
    g_autofree gchar *path = g_build_filename (locked, "new.raw", NULL);
    g_autofree gchar *expected = NULL;
    g_autofree gchar *message = NULL;

    if (rerun_unprivileged (f))
        return;
    g_assert_cmpint (g_mkdir (locked, 0500), ==, 0);
    expected = g_strdup_printf ("destination directory %s is not writable: %s", locked,
                                g_strerror (EACCES));
    message = new_and_check (path, "raw", FALSE, MiB, NULL, NULL);
    g_assert_cmpstr (message, ==, expected);
    g_assert_cmpint (g_chmod (locked, 0700), ==, 0);
}

/* ---- a block device ---- */

static void
test_destination_block (Fixture *f, gconstpointer user_data)
{
    g_autoptr (VmrDestination) dest = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *message = NULL;
    g_autofree gchar *expected = NULL;
    const gchar *in_use[] = { at (f, "backing.raw"), NULL };
    g_autoptr (VmrDisk) source = vmr_disk_new ();
    g_autoptr (JsonObject) args = NULL;
    JsonObject *file;
    guint64 size = 0;

    if (f->device == NULL)
        return;
    dest = vmr_destination_new (f->device, "raw", FALSE, &error);
    g_assert_no_error (error);
    g_assert_cmpint (dest->kind, ==, VMR_DESTINATION_BLOCK);
    /* a block device is a group of its own */
    g_assert_cmpstr (dest->admission_key, ==, f->device);

    g_assert_true (vmr_destination_check (dest, 8 * MiB, NULL, &size, &error));
    g_assert_cmpuint (size, ==, 8 * MiB);
    g_assert_true (vmr_destination_check (dest, 4 * MiB, NULL, NULL, &error));
    g_assert_no_error (error);

    message = new_and_check (f->device, "raw", TRUE, 16 * MiB, NULL, NULL);
    expected
        = g_strdup_printf ("destination %s is smaller than the source (8 MiB < 16 MiB)", f->device);
    g_assert_cmpstr (message, ==, expected);
    g_clear_pointer (&message, g_free);
    g_clear_pointer (&expected, g_free);

    message = new_and_check (f->device, "raw", FALSE, 8 * MiB, NULL, NULL);
    expected = g_strdup_printf ("destination %s exists; pass --reuse to copy onto it", f->device);
    g_assert_cmpstr (message, ==, expected);

    /* the device is not the file it reads from: no inode in common */
    g_assert_true (vmr_destination_check (dest, 8 * MiB, in_use, NULL, &error));
    g_assert_true (vmr_destination_same_target (dest, f->device));
    g_assert_false (vmr_destination_same_target (dest, in_use[0]));

    /* QEMU opens it as a host device, for the source's size when it is larger */
    source->size = 4 * MiB;
    args = vmr_destination_to_blockdev_add (dest, "vmr-4-dst", source, NULL);
    file = json_object_get_object_member (args, "file");
    g_assert_cmpstr (json_object_get_string_member (file, "driver"), ==, "host_device");
    g_assert_cmpstr (json_object_get_string_member (file, "filename"), ==, f->device);
    g_assert_cmpint (json_object_get_int_member (args, "size"), ==, 4 * MiB);
}

/* ---- admission key ---- */

typedef struct {
    VmrDestinationKind kind;
    const gchar *location;
    const gchar *key;
} KeyCase;

static const KeyCase key_cases[] = {
    { VMR_DESTINATION_FILE, "/srv/fast/web01.raw", "/srv/fast" },
    { VMR_DESTINATION_FILE, "/srv/fast/sub/web01.qcow2", "/srv/fast/sub" },
    { VMR_DESTINATION_FILE, "/web01.raw", "/" },
    { VMR_DESTINATION_BLOCK, "/dev/vg0/web01", "/dev/vg0/web01" },
};

static void
test_destination_admission_key (Fixture *f, gconstpointer user_data)
{
    g_autoptr (VmrDestination) dest = vmr_destination_new (at (f, "a.raw"), "raw", TRUE, NULL);

    for (gsize i = 0; i < G_N_ELEMENTS (key_cases); i++) {
        const KeyCase *c = &key_cases[i];
        g_autoptr (VmrDestination) keyed
            = vmr_destination_new_of_kind (c->kind, c->location, "raw", FALSE);

        g_assert_cmpstr (keyed->admission_key, ==, c->key);
    }
    /* made once with the destination: it does not follow the file */
    g_assert_cmpstr (dest->admission_key, ==, f->dir);
    make_file (f, "a.raw", MiB);
    g_assert_cmpstr (dest->admission_key, ==, f->dir);
}

/* ---- same target ---- */

static void
test_destination_same_target (Fixture *f, gconstpointer user_data)
{
    const gchar *file = make_file (f, "a.raw", MiB);
    const gchar *missing = at (f, "missing.raw");
    g_autoptr (VmrDestination) dest = vmr_destination_new (file, "raw", FALSE, NULL);
    g_autoptr (VmrDestination) not_yet = vmr_destination_new (missing, "raw", TRUE, NULL);

    g_assert_cmpint (link (file, at (f, "hard.raw")), ==, 0);
    g_assert_cmpint (symlink (file, at (f, "sym.raw")), ==, 0);
    g_assert_true (vmr_destination_same_target (dest, file));
    g_assert_true (vmr_destination_same_target (dest, at (f, "hard.raw")));
    g_assert_true (vmr_destination_same_target (dest, at (f, "sym.raw")));
    g_assert_true (vmr_destination_same_target (dest, at (f, "./a.raw")));
    g_assert_false (vmr_destination_same_target (dest, make_file (f, "b.raw", MiB)));
    g_assert_false (vmr_destination_same_target (dest, missing));
    g_assert_false (vmr_destination_same_target (dest, NULL));
    /* a file that is not there yet is its path */
    g_assert_true (vmr_destination_same_target (not_yet, missing));
    g_assert_true (vmr_destination_same_target (not_yet, at (f, "sub/../missing.raw")));
    g_assert_false (vmr_destination_same_target (not_yet, at (f, "missing-b.raw")));
    g_assert_false (vmr_destination_same_target (not_yet, file));
}

/* ---- how the backends name it ---- */

static gchar *
json_text (JsonObject *obj)
{
    g_autoptr (JsonNode) node = json_node_new (JSON_NODE_OBJECT);

    json_node_set_object (node, obj);
    return json_to_string (node, FALSE);
}

/* what blockdev-add gets for the source of test_destination_blockdev_add() */
static const gchar blockdev_template[]
    = "{\"driver\":\"%s\",\"node-name\":\"vmr-3-dst\",\"file\":{\"driver\":\"%s\","
      "\"filename\":\"%s\",\"node-name\":\"vmr-3-dst-file\",\"cache\":{\"direct\":false,"
      "\"no-flush\":true}},\"cache\":{\"direct\":true,\"no-flush\":false},"
      "\"discard\":\"unmap\"%s}";

typedef struct {
    VmrDestinationKind kind;
    const gchar *location; /* '@' for the test dir */
    const gchar *format;
    gboolean created;
    const gchar *protocol; /* the driver of the file node */
    const gchar *size;     /* the size member, "" for none */
} BlockdevCase;

static const BlockdevCase blockdev_cases[] = {
    { VMR_DESTINATION_FILE, "/srv/b.qcow2", "qcow2", TRUE, "file", "" },
    /* a larger raw file is opened for the source's size */
    { VMR_DESTINATION_FILE, "@/big.raw", "raw", FALSE, "file", ",\"size\":8388608" },
    { VMR_DESTINATION_FILE, "@/same.raw", "raw", FALSE, "file", "" },
    { VMR_DESTINATION_BLOCK, "/dev/vg0/b", "raw", FALSE, "host_device", "" },
};

static void
test_destination_blockdev_add (Fixture *f, gconstpointer user_data)
{
    g_autoptr (VmrDisk) source = vmr_disk_new ();

    make_file (f, "big.raw", 16 * MiB);
    make_file (f, "same.raw", 8 * MiB);
    source->size = 8 * MiB;
    source->cache_direct = TRUE;
    source->cache_no_flush = FALSE;
    source->file_cache_direct = FALSE;
    source->file_cache_no_flush = TRUE;
    for (gsize i = 0; i < G_N_ELEMENTS (blockdev_cases); i++) {
        const BlockdevCase *c = &blockdev_cases[i];
        g_autofree gchar *location = expand (c->location, f->dir);
        g_autofree gchar *expected
            = g_strdup_printf (blockdev_template, c->format, c->protocol, location, c->size);
        g_autoptr (VmrDestination) dest
            = vmr_destination_new_of_kind (c->kind, location, c->format, c->created);
        g_autoptr (JsonObject) args
            = vmr_destination_to_blockdev_add (dest, "vmr-3-dst", source, NULL);
        g_autofree gchar *text = json_text (args);

        g_test_message ("case: %s", location);
        g_assert_cmpstr (text, ==, expected);
    }
}

static void
test_destination_libvirt_xml (void)
{
    g_autoptr (VmrDestination) file
        = vmr_destination_new_of_kind (VMR_DESTINATION_FILE, "/srv/a'b&c.raw", "raw", TRUE);
    g_autoptr (VmrDestination) block
        = vmr_destination_new_of_kind (VMR_DESTINATION_BLOCK, "/dev/vg0/x", "qcow2", FALSE);
    g_autofree gchar *file_xml = vmr_destination_to_libvirt_xml (file);
    g_autofree gchar *block_xml = vmr_destination_to_libvirt_xml (block);
    g_autoptr (GPtrArray) disks = NULL;
    g_autofree gchar *wrapped = NULL;
    VmrLibvirtDisk *disk;

    g_assert_cmpstr (file_xml, ==,
                     "<disk type='file'><source file='/srv/a&apos;b&amp;c.raw'/>"
                     "<driver type='raw'/></disk>");
    g_assert_cmpstr (block_xml, ==,
                     "<disk type='block'><source dev='/dev/vg0/x'/><driver type='qcow2'/></disk>");
    /* they read back as the disks they describe */
    wrapped = g_strdup_printf ("<domain><devices>%s%s</devices></domain>", file_xml, block_xml);
    disks = vmr_libvirt_xml_parse_disks (wrapped, NULL);
    g_assert_nonnull (disks);
    g_assert_cmpuint (disks->len, ==, 2);
    disk = g_ptr_array_index (disks, 0);
    g_assert_cmpstr (disk->type, ==, "file");
    g_assert_cmpstr (disk->path, ==, "/srv/a'b&c.raw");
    g_assert_cmpstr (disk->format, ==, "raw");
    disk = g_ptr_array_index (disks, 1);
    g_assert_cmpstr (disk->type, ==, "block");
    g_assert_cmpstr (disk->path, ==, "/dev/vg0/x");
    g_assert_cmpstr (disk->format, ==, "qcow2");
}

/* one reference per holder; the last one frees it */
static void
test_destination_ref (void)
{
    VmrDestination *dest = vmr_destination_new ("/srv/a.raw", "raw", TRUE, NULL);

    g_assert_true (vmr_destination_ref (dest) == dest);
    vmr_destination_unref (dest);
    /* still there for the other holder */
    g_assert_cmpstr (dest->location, ==, "/srv/a.raw");
    vmr_destination_unref (dest);
}

static const struct {
    const gchar *path;
    void (*func) (Fixture *f, gconstpointer user_data);
    gboolean loop_device;
} fixture_tests[] = {
    { "/destination/kind", test_destination_kind, FALSE },
    { "/destination/check", test_destination_check, FALSE },
    { "/destination/check-not-writable", test_destination_check_not_writable, FALSE },
    { "/destination/block-device", test_destination_block, TRUE },
    { "/destination/admission-key", test_destination_admission_key, FALSE },
    { "/destination/same-target", test_destination_same_target, FALSE },
    { "/destination/blockdev-add", test_destination_blockdev_add, FALSE },
};

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/destination/format", test_destination_format);
    g_test_add_func ("/destination/libvirt-xml", test_destination_libvirt_xml);
    g_test_add_func ("/destination/ref", test_destination_ref);
    for (gsize i = 0; i < G_N_ELEMENTS (fixture_tests); i++) {
        gboolean loop = fixture_tests[i].loop_device;

        g_test_add (fixture_tests[i].path, Fixture, NULL, loop ? loop_setup : fixture_setup,
                    fixture_tests[i].func, loop ? loop_teardown : fixture_teardown);
    }
    return g_test_run ();
}
