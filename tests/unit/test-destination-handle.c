#define G_LOG_DOMAIN "vmr-test"

/*
 * A destination opened by descriptor (destination-handle.c): its directory
 * resolved once, the file made with O_EXCL and given its owner and mode
 * through the descriptor, its name checked against it, and the removal of
 * a file the daemon made only while the name leads to it.
 */

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "destination-handle.h"
#include "test-require.h"
#include "test-tree.h"
#include "vmr-error.h"

#define MiB (1024 * 1024)

typedef struct {
    gchar *dir;
} Fixture;

static gchar *
at (Fixture *f, const gchar *name)
{
    return g_build_filename (f->dir, name, NULL);
}

static void
fixture_setup (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-handle-XXXXXX", NULL);

    g_assert_nonnull (dir);
    /* the directory as the kernel names it: the handle compares with that */
    f->dir = realpath (dir, NULL);
}

static void
fixture_teardown (Fixture *f, gconstpointer user_data)
{
    test_tree_remove (f->dir);
    free (f->dir);
}

static void
write_file (const gchar *path, const gchar *text)
{
    g_assert_true (g_file_set_contents (path, text, -1, NULL));
}

static gchar *
read_file (const gchar *path)
{
    gchar *text = NULL;

    g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
    return text;
}

static void
create_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GAsyncResult **out = user_data;

    *out = g_object_ref (res);
}

/* the handle of a new @format file @name, made for @size bytes like @like (may be NULL) */
static VmrDestinationHandle *
create (Fixture *f, const gchar *name, const gchar *format, guint64 size, const gchar *like,
        GError **error)
{
    g_autofree gchar *path = at (f, name);
    g_autoptr (VmrDestination) dest = vmr_destination_new (path, format, TRUE, NULL);
    g_autoptr (VmrDestinationHandle) handle = vmr_destination_handle_open_dir (dest, TRUE, error);
    g_autoptr (GAsyncResult) res = NULL;

    if (handle == NULL)
        return NULL;
    vmr_destination_handle_create_async (handle, size, like, NULL, create_cb, &res);
    while (res == NULL)
        g_main_context_iteration (NULL, TRUE);
    if (!vmr_destination_handle_create_finish (res, error))
        return NULL;
    return g_steal_pointer (&handle);
}

static void
assert_identity (const VmrDestinationMade *made, const gchar *path)
{
    g_autofree gchar *dir = g_path_get_dirname (path);
    struct stat st, dir_st;

    g_assert_nonnull (made);
    g_assert_cmpint (lstat (path, &st), ==, 0);
    g_assert_cmpint (stat (dir, &dir_st), ==, 0);
    g_assert_cmpuint (made->dev, ==, (guint64) st.st_dev);
    g_assert_cmpuint (made->ino, ==, (guint64) st.st_ino);
    g_assert_cmpuint (made->dir_dev, ==, (guint64) dir_st.st_dev);
    g_assert_cmpuint (made->dir_ino, ==, (guint64) dir_st.st_ino);
}

/* ---- making a file ---- */

/* sparse, zero, the owner and the permission bits of the source, never its set-id bits */
static void
test_handle_create_raw (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *like = at (f, "like.raw");
    g_autofree gchar *path = at (f, "new.raw");
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = NULL;
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    struct stat st;
    gboolean root = geteuid () == 0;

    write_file (like, "the source");
    g_assert_cmpint (chmod (like, 06750), ==, 0);
    if (root)
        g_assert_cmpint (chown (like, 4321, 4322), ==, 0);
    handle = create (f, "new.raw", "raw", 3 * MiB, like, &error);
    g_assert_no_error (error);
    g_assert_cmpint (lstat (path, &st), ==, 0);
    g_assert_true (S_ISREG (st.st_mode));
    g_assert_cmpint (st.st_size, ==, 3 * MiB);
    g_assert_cmpint (st.st_mode & 07777, ==, 0750);
    if (root) {
        g_assert_cmpint (st.st_uid, ==, 4321);
        g_assert_cmpint (st.st_gid, ==, 4322);
    }
    g_assert_cmpint (st.st_blocks, <, 3 * MiB / 512);
    g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
    g_assert_cmpuint (length, ==, 3 * MiB);
    for (gsize i = 0; i < length; i++)
        g_assert_cmpint (contents[i], ==, 0);
    assert_identity (vmr_destination_handle_get_made (handle), path);
    g_assert_true (vmr_destination_handle_check_named (handle, &error));
    g_assert_no_error (error);
}

/* the name taken, by a file or a link to nothing: it stays as it was, nothing is made through it */
static void
test_handle_create_exists (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *path = at (f, "taken.raw");
    g_autofree gchar *link = at (f, "link.raw");
    g_autofree gchar *target = at (f, "elsewhere.raw");
    g_autofree gchar *message = NULL;
    g_autofree gchar *kept = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = NULL;

    write_file (path, "the user's data");
    handle = create (f, "taken.raw", "raw", MiB, NULL, &error);
    g_assert_null (handle);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    message = g_strdup_printf ("destination %s exists (it was made by someone else after the "
                               "request); it is left as it is",
                               path);
    g_assert_cmpstr (error->message, ==, message);
    kept = read_file (path);
    g_assert_cmpstr (kept, ==, "the user's data");
    g_clear_error (&error);

    g_assert_cmpint (symlink (target, link), ==, 0);
    handle = create (f, "link.raw", "raw", MiB, NULL, &error);
    g_assert_null (handle);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
}

/* qcow2 is written by qemu-img into the descriptor, never by the name */
static void
test_handle_create_qcow2 (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *program = g_find_program_in_path ("qemu-img");
    g_autofree gchar *path = at (f, "new.qcow2");
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = NULL;
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    guint64 virtual_size = 0;

    if (program == NULL) {
        /* scripts/install-deps installs it: CI never lacks it */
        test_require_unavailable ("qemu-img not found");
        return;
    }
    handle = create (f, "new.qcow2", "qcow2", 5 * MiB, NULL, &error);
    g_assert_no_error (error);
    /* a qcow2 header: magic, version, then the virtual size at byte 24, big-endian */
    g_assert_true (g_file_get_contents (path, &contents, &length, NULL));
    g_assert_cmpuint (length, >=, 32);
    g_assert_cmpmem (contents, 4, "QFI\xfb", 4);
    memcpy (&virtual_size, contents + 24, sizeof virtual_size);
    g_assert_cmpuint (GUINT64_FROM_BE (virtual_size), ==, 5 * MiB);
    assert_identity (vmr_destination_handle_get_made (handle), path);
}

/* ---- the directory, resolved once ---- */

/* a link on the way is refused when the policy refuses them, followed once when it allows them */
static void
test_handle_symlink_dir (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *real = at (f, "real");
    g_autofree gchar *link = at (f, "link");
    g_autofree gchar *path = g_build_filename (link, "new.raw", NULL);
    g_autoptr (VmrDestination) dest = vmr_destination_new (path, "raw", TRUE, NULL);
    g_autoptr (VmrDestinationHandle) refused = NULL;
    g_autoptr (VmrDestinationHandle) allowed = NULL;
    g_autoptr (GError) error = NULL;
    g_autofree gchar *opened = NULL;
    g_autofree gchar *message = NULL;

    g_assert_cmpint (g_mkdir (real, 0700), ==, 0);
    g_assert_cmpint (symlink (real, link), ==, 0);
    refused = vmr_destination_handle_open_dir (dest, TRUE, &error);
    g_assert_null (refused);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    message = g_strdup_printf ("destination %s: a directory on its way is a symbolic link, which "
                               "the policy's destination-symlinks = refuse does not allow",
                               path);
    g_assert_cmpstr (error->message, ==, message);
    g_clear_error (&error);

    allowed = vmr_destination_handle_open_dir (dest, FALSE, &error);
    g_assert_no_error (error);
    opened = vmr_destination_handle_dir_path (allowed);
    g_assert_cmpstr (opened, ==, real);
    /* the link changed after the directory was opened: the file goes where the handle is */
    g_assert_cmpint (g_unlink (link), ==, 0);
    g_assert_cmpint (g_mkdir (link, 0700), ==, 0);
    {
        g_autoptr (GAsyncResult) res = NULL;
        g_autofree gchar *made = g_build_filename (real, "new.raw", NULL);

        vmr_destination_handle_create_async (allowed, MiB, NULL, NULL, create_cb, &res);
        while (res == NULL)
            g_main_context_iteration (NULL, TRUE);
        g_assert_true (vmr_destination_handle_create_finish (res, &error));
        g_assert_true (g_file_test (made, G_FILE_TEST_IS_REGULAR));
        g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
        /* its path, as the request gives it, leads elsewhere now */
        g_assert_false (vmr_destination_handle_check_named (allowed, &error));
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    }
}

/* the name moved away, or another file put in its place: no longer the file the copy writes */
static void
test_handle_check_named (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *path = at (f, "new.raw");
    g_autofree gchar *moved = at (f, "moved.raw");
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = create (f, "new.raw", "raw", MiB, NULL, &error);
    g_autofree gchar *message = NULL;

    g_assert_no_error (error);
    g_assert_true (vmr_destination_handle_check_named (handle, &error));
    g_assert_cmpint (g_rename (path, moved), ==, 0);
    g_assert_false (vmr_destination_handle_check_named (handle, &error));
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    message = g_strdup_printf ("destination %s no longer leads to the file the copy writes (it "
                               "was moved, removed or replaced after the daemon opened it)",
                               path);
    g_assert_cmpstr (error->message, ==, message);
    g_clear_error (&error);
    g_assert_cmpint (symlink (moved, path), ==, 0);
    g_assert_false (vmr_destination_handle_check_named (handle, &error));
    g_clear_error (&error);
    /* without the handle, by the identity of a record */
    g_assert_false (vmr_destination_check_made (vmr_destination_handle_get_destination (handle),
                                                vmr_destination_handle_get_made (handle), &error));
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_clear_error (&error);
    g_assert_cmpint (g_unlink (path), ==, 0);
    g_assert_cmpint (g_rename (moved, path), ==, 0);
    g_assert_true (vmr_destination_handle_check_named (handle, &error));
    g_assert_true (vmr_destination_check_made (vmr_destination_handle_get_destination (handle),
                                               vmr_destination_handle_get_made (handle), &error));
    g_assert_no_error (error);
}

/* ---- removing what it made, and nothing else ---- */

static void
test_handle_remove_made (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *path = at (f, "new.raw");
    g_autofree gchar *aside = at (f, "aside.raw");
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = create (f, "new.raw", "raw", MiB, NULL, &error);
    VmrDestination *dest = vmr_destination_handle_get_destination (handle);
    VmrDestinationMade made = *vmr_destination_handle_get_made (handle);
    g_autofree gchar *kept = NULL;

    g_assert_no_error (error);
    /* another file in its place stays, byte for byte */
    g_assert_cmpint (g_rename (path, aside), ==, 0);
    write_file (path, "the user's data");
    g_assert_false (vmr_destination_remove_made (dest, &made, handle, &error));
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_clear_error (&error);
    g_assert_false (vmr_destination_remove_made (dest, &made, NULL, &error));
    g_clear_error (&error);
    kept = read_file (path);
    g_assert_cmpstr (kept, ==, "the user's data");

    /* the file it made goes, with the held directory or without */
    g_assert_cmpint (g_rename (aside, path), ==, 0);
    g_assert_true (vmr_destination_remove_made (dest, &made, handle, &error));
    g_assert_no_error (error);
    g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
    /* gone already: nothing to do */
    g_assert_true (vmr_destination_remove_made (dest, &made, NULL, &error));
    g_assert_no_error (error);
}

/* after a restart: the directory is proven by its identity too */
static void
test_handle_remove_other_dir (Fixture *f, gconstpointer user_data)
{
    g_autofree gchar *sub = at (f, "sub");
    g_autofree gchar *old = at (f, "sub.old");
    g_autofree gchar *path = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrDestinationHandle) handle = NULL;
    VmrDestinationMade made;

    g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);
    handle = create (f, "sub/new.raw", "raw", MiB, NULL, &error);
    g_assert_no_error (error);
    made = *vmr_destination_handle_get_made (handle);
    path = g_build_filename (sub, "new.raw", NULL);
    /* the directory replaced by another, where a hard link to the file was put */
    g_assert_cmpint (g_rename (sub, old), ==, 0);
    g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);
    {
        g_autofree gchar *original = g_build_filename (old, "new.raw", NULL);

        g_assert_cmpint (link (original, path), ==, 0);
    }
    g_assert_false (vmr_destination_remove_made (vmr_destination_handle_get_destination (handle),
                                                 &made, NULL, &error));
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
}

/* the identity a record holds, whatever the size of the numbers */
static void
test_handle_made_json (void)
{
    VmrDestinationMade made = { G_MAXUINT64, G_MAXUINT64 - 1, 1, 0 };
    g_autoptr (JsonObject) obj = vmr_destination_made_to_json (&made);
    g_autofree VmrDestinationMade *back = vmr_destination_made_from_json (obj);
    g_autoptr (JsonObject) partial = json_object_new ();

    g_assert_nonnull (back);
    g_assert_cmpmem (back, sizeof *back, &made, sizeof made);
    g_assert_null (vmr_destination_made_from_json (NULL));
    json_object_set_string_member (partial, "dev", "1");
    json_object_set_int_member (partial, "ino", 2);
    g_assert_null (vmr_destination_made_from_json (partial));
}

int
main (int argc, char **argv)
{
    static const struct {
        const gchar *path;
        void (*func) (Fixture *f, gconstpointer user_data);
    } tests[] = {
        { "/destination-handle/create-raw", test_handle_create_raw },
        { "/destination-handle/create-exists", test_handle_create_exists },
        { "/destination-handle/create-qcow2", test_handle_create_qcow2 },
        { "/destination-handle/symlink-dir", test_handle_symlink_dir },
        { "/destination-handle/check-named", test_handle_check_named },
        { "/destination-handle/remove-made", test_handle_remove_made },
        { "/destination-handle/remove-other-dir", test_handle_remove_other_dir },
    };

    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/destination-handle/made-json", test_handle_made_json);
    for (gsize i = 0; i < G_N_ELEMENTS (tests); i++)
        g_test_add (tests[i].path, Fixture, NULL, fixture_setup, tests[i].func, fixture_teardown);
    return g_test_run ();
}
