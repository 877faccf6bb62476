#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>
#include <unistd.h>

#include "destination.h"
#include "vmr-error.h"

#define MiB (1024 * 1024)

typedef struct {
    const gchar *name;
    const gchar *path; /* relative to the test dir, or absolute when it starts with '/' */
    const gchar *format;
    gboolean reuse;
    guint64 source_size;
    gboolean ok;
    const gchar *message_part; /* expected in the error message */
} CheckCase;

/* the test dir holds: source.raw (8 MiB, the disk in use), other.raw (8 MiB,
 * another disk), small.raw (4 MiB), big.raw (16 MiB), a directory sub/ and a
 * symlink alias.raw -> source.raw */
static const CheckCase check_cases[] = {
    { "new file", "new.raw", "raw", FALSE, 8 * MiB, TRUE, NULL },
    { "new qcow2", "new.qcow2", "qcow2", FALSE, 8 * MiB, TRUE, NULL },
    { "relative", "relative.raw", "raw", FALSE, 8 * MiB, FALSE, "not an absolute path" },
    { "bad format", "new.vmdk", "vmdk", FALSE, 8 * MiB, FALSE, "unsupported destination format" },
    { "exists", "big.raw", "raw", FALSE, 8 * MiB, FALSE, "pass --reuse" },
    { "reuse missing", "missing.raw", "raw", TRUE, 8 * MiB, FALSE, "does not exist" },
    { "reuse smaller", "small.raw", "raw", TRUE, 8 * MiB, FALSE, "smaller than the source" },
    { "reuse bigger", "big.raw", "raw", TRUE, 8 * MiB, TRUE, NULL },
    { "reuse same size", "other-size.raw", "raw", TRUE, 8 * MiB, TRUE, NULL },
    { "is the source", "source.raw", "raw", TRUE, 8 * MiB, FALSE, "a disk of the domain" },
    { "another disk", "other.raw", "raw", TRUE, 8 * MiB, FALSE, "a disk of the domain" },
    { "source via symlink", "alias.raw", "raw", TRUE, 8 * MiB, FALSE, "a disk of the domain" },
    { "source without reuse", "source.raw", "raw", FALSE, 8 * MiB, FALSE, "a disk of the domain" },
    { "no directory", "nowhere/new.raw", "raw", FALSE, 8 * MiB, FALSE, "does not exist" },
    { "a directory", "sub", "raw", TRUE, 8 * MiB, FALSE, "is a directory" },
    { "not a file", "/dev/null", "raw", TRUE, 0, FALSE, "neither a file nor a block device" },
};

static void
make_file (const gchar *dir, const gchar *name, gsize size)
{
    g_autofree gchar *path = g_build_filename (dir, name, NULL);
    FILE *f = g_fopen (path, "w");

    g_assert_nonnull (f);
    g_assert_cmpint (ftruncate (fileno (f), (off_t) size), ==, 0);
    fclose (f);
}

static void
test_destination_check (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-dest-XXXXXX", NULL);
    g_autofree gchar *source = g_build_filename (dir, "source.raw", NULL);
    g_autofree gchar *other = g_build_filename (dir, "other.raw", NULL);
    g_autofree gchar *alias = g_build_filename (dir, "alias.raw", NULL);
    g_autofree gchar *sub = g_build_filename (dir, "sub", NULL);
    const gchar *in_use[] = { source, other, NULL };
    const gchar *names[] = { "source.raw",     "other.raw", "small.raw", "big.raw",
                             "other-size.raw", "alias.raw", "sub" };

    make_file (dir, "source.raw", 8 * MiB);
    make_file (dir, "other.raw", 8 * MiB);
    make_file (dir, "other-size.raw", 8 * MiB);
    make_file (dir, "small.raw", 4 * MiB);
    make_file (dir, "big.raw", 16 * MiB);
    g_assert_cmpint (symlink (source, alias), ==, 0);
    g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);

    for (gsize i = 0; i < G_N_ELEMENTS (check_cases); i++) {
        const CheckCase *c = &check_cases[i];
        g_autofree gchar *path = NULL;
        g_autoptr (GError) error = NULL;
        VmrDestinationCheck check = { 0 };
        guint64 size = 0;
        gboolean ok;

        g_test_message ("case: %s", c->name);
        if (c->path[0] == '/')
            path = g_strdup (c->path);
        else if (g_str_equal (c->name, "relative"))
            path = g_strdup (c->path);
        else
            path = g_build_filename (dir, c->path, NULL);
        check.path = path;
        check.format = c->format;
        check.reuse = c->reuse;
        check.source_size = c->source_size;
        check.in_use = in_use;
        ok = vmr_destination_check (&check, &size, &error);
        if (c->ok) {
            g_assert_no_error (error);
            g_assert_true (ok);
        } else {
            g_assert_false (ok);
            g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
            g_assert_nonnull (strstr (error->message, c->message_part));
            /* one line for the user */
            g_assert_null (strchr (error->message, '\n'));
        }
    }
    /* the check changed nothing */
    {
        g_autofree gchar *new_path = g_build_filename (dir, "new.raw", NULL);

        g_assert_false (g_file_test (new_path, G_FILE_TEST_EXISTS));
    }

    for (gsize i = 0; i < G_N_ELEMENTS (names); i++) {
        g_autofree gchar *path = g_build_filename (dir, names[i], NULL);

        g_assert_cmpint (g_remove (path), ==, 0);
    }
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

static void
create_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    GAsyncResult **out = user_data;

    *out = g_object_ref (res);
}

static void
test_destination_create_raw (void)
{
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-test-dest-XXXXXX", NULL);
    g_autofree gchar *path = g_build_filename (dir, "new.raw", NULL);
    g_autoptr (GAsyncResult) res = NULL;
    g_autoptr (GAsyncResult) res2 = NULL;
    g_autoptr (GError) error = NULL;
    GStatBuf st;

    vmr_destination_create_async (path, "raw", 3 * MiB, NULL, NULL, create_cb, &res);
    while (res == NULL)
        g_main_context_iteration (NULL, TRUE);
    g_assert_true (vmr_destination_create_finish (res, &error));
    g_assert_no_error (error);
    g_assert_cmpint (g_stat (path, &st), ==, 0);
    g_assert_cmpint (st.st_size, ==, 3 * MiB);

    /* never over an existing file */
    vmr_destination_create_async (path, "raw", 3 * MiB, NULL, NULL, create_cb, &res2);
    while (res2 == NULL)
        g_main_context_iteration (NULL, TRUE);
    g_assert_false (vmr_destination_create_finish (res2, &error));
    g_assert_nonnull (error);

    vmr_destination_remove (path);
    g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/destination/check", test_destination_check);
    g_test_add_func ("/destination/create-raw", test_destination_create_raw);
    return g_test_run ();
}
