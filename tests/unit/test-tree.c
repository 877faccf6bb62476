#define G_LOG_DOMAIN "vmr-test"

#include "test-tree.h"

#include <glib/gstdio.h>

void
test_tree_remove (const gchar *dir)
{
    g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
    const gchar *name;

    while (d != NULL && (name = g_dir_read_name (d)) != NULL) {
        g_autofree gchar *path = g_build_filename (dir, name, NULL);

        if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
            test_tree_remove (path);
        else
            g_assert_cmpint (g_unlink (path), ==, 0);
    }
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}
