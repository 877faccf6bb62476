#define G_LOG_DOMAIN "vmr-test"

/*
 * `meson install --destdir` puts the hook where libvirt looks for it
 * (libvirt's hooks/qemu.d), next to the daemon and the CLI, and the
 * installed hook works.
 */

#include <string.h>

#include "harness-e2e.h"

static gchar *
required_env (VmrE2e *e, const gchar *name)
{
    const gchar *value = g_getenv (name);

    if (value == NULL || *value == '\0') {
        g_autofree gchar *reason = g_strdup_printf ("%s not set: run through meson test", name);

        vmr_harness_skip (&e->h, reason);
        return NULL;
    }
    return g_strdup (value);
}

static void
test_install (VmrE2e *e, gconstpointer data)
{
    g_autofree gchar *meson = NULL;
    g_autofree gchar *build_root = NULL;
    g_autofree gchar *hook_dir = NULL;
    g_autofree gchar *prefix = NULL;
    g_autofree gchar *libvirt_prefix = NULL;
    g_autofree gchar *destdir = NULL;
    g_autofree gchar *hook = NULL;
    g_autofree gchar *daemon = NULL;
    g_autofree gchar *cli = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autofree gchar *missing = NULL;
    g_autoptr (GError) error = NULL;
    const gchar *hook_argv[] = { NULL, "web01", "started", "begin", "-", NULL };
    gint status = 0;

    if (vmr_harness_skipped (&e->h))
        return;
    meson = required_env (e, "VMR_MESON");
    build_root = required_env (e, "VMR_BUILD_ROOT");
    hook_dir = required_env (e, "VMR_HOOK_DIR");
    prefix = required_env (e, "VMR_PREFIX");
    if (meson == NULL || build_root == NULL || hook_dir == NULL || prefix == NULL)
        return;
    libvirt_prefix = g_strdup (g_getenv ("VMR_LIBVIRT_PREFIX"));
    destdir = vmr_harness_path (&e->h, "destdir");
    {
        const gchar *argv[] = { meson,   "install",      "-C",      build_root, "--destdir",
                                destdir, "--no-rebuild", "--quiet", NULL };

        g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                      &error);
        g_assert_no_error (error);
        if (!g_spawn_check_wait_status (status, NULL))
            vmr_fail ("meson install failed:\n%s\n%s", out, err);
    }

    /*
     * the hook goes where libvirt looks: its own sysconfdir, /etc for a
     * libvirt in /usr. A libvirt elsewhere leaves that unchecked: a skip,
     * and a failure under REQUIRE_INTEGRATION=1, not a quieter test
     */
    if (g_strcmp0 (libvirt_prefix, "/usr") == 0) {
        g_assert_cmpstr (hook_dir, ==, "/etc/libvirt/hooks/qemu.d");
    } else {
        g_autofree gchar *reason = g_strdup_printf (
            "libvirt's prefix is '%s', not /usr: where its hooks go is not checked",
            libvirt_prefix != NULL ? libvirt_prefix : "");

        vmr_harness_skip (&e->h, reason);
    }
    hook = g_build_filename (destdir, hook_dir, "virt-mirror", NULL);
    daemon = g_build_filename (destdir, prefix, "sbin", "virt-mirrord", NULL);
    cli = g_build_filename (destdir, prefix, "bin", "virt-mirror", NULL);
    g_assert_true (g_file_test (hook, G_FILE_TEST_IS_EXECUTABLE));
    g_assert_true (g_file_test (daemon, G_FILE_TEST_IS_EXECUTABLE));
    g_assert_true (g_file_test (cli, G_FILE_TEST_IS_EXECUTABLE));

    /* the installed hook is the hook: told of a daemon that is not there, it still succeeds */
    missing = vmr_harness_path (&e->h, "missing.sock");
    hook_argv[0] = hook;
    g_clear_pointer (&out, g_free);
    g_clear_pointer (&err, g_free);
    {
        g_autofree gchar *env_socket = g_strdup_printf ("VIRT_MIRROR_SOCKET=%s", missing);
        const gchar *envp[] = { env_socket, "PATH=/usr/bin:/bin", NULL };

        g_spawn_sync (NULL, (gchar **) hook_argv, (gchar **) envp, G_SPAWN_STDIN_FROM_DEV_NULL,
                      NULL, NULL, &out, &err, &status, &error);
        g_assert_no_error (error);
        g_assert_true (g_spawn_check_wait_status (status, NULL));
    }
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    VMR_E2E_ADD ("/e2e/install/hook", NULL, test_install);
    return vmr_e2e_run (FALSE);
}
