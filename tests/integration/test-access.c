#define G_LOG_DOMAIN "vmr-test"

/*
 * The destinations refused whatever a request says: outside the policy's
 * allowed-destinations (also through a symbolic link), inside the daemon's
 * own state and socket directories, a dangling link, an existing file or
 * device without --reuse, a block device another process holds, a path
 * through a symbolic link when the policy asks for that check. Each refusal
 * is one line and exit status 1; nothing in the test's directory changes
 * (every file and directory keeps its size and modification time), no job
 * is recorded, the VM stays on its source and the daemon keeps serving.
 * Where a refusal has an allowed counterpart, that copy runs and its bytes
 * are checked.
 */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "harness.h"

#define IMAGE_SIZE (16 * 1024 * 1024)
/* the daemon's output, which grows with each command: left out of the snapshots */
#define LOG_NAME "daemon.log"

/* the daemon with @policy (NULL: an empty one) and its output in LOG_NAME, then the VM */
static void
start (VmrHarness *h, VmrHarnessVm *vm, const gchar *policy)
{
    g_autofree gchar *path = vmr_harness_write_policy (h, policy != NULL ? policy : "[defaults]\n");

    h->daemon_log = vmr_harness_path (h, LOG_NAME);
    vmr_harness_start_daemon (h, "--policy", path, NULL);
    vmr_harness_start_vm (h, vm, IMAGE_SIZE, 7);
}

/*
 * `@args` is refused with exit status 1 and one line that says @reason;
 * nothing changed in the test's directory (and in @also, when not NULL), no
 * job, the VM on its source, the daemon serving
 */
static void
assert_refused (VmrHarness *h, VmrHarnessVm *vm, const gchar *also, const gchar *reason,
                const gchar *const *args)
{
    g_autofree gchar *before = vmr_harness_snapshot (h->dir, LOG_NAME);
    g_autofree gchar *before_also = also != NULL ? vmr_harness_snapshot (also, NULL) : NULL;
    g_autoptr (VmrCliResult) result = vmr_harness_cliv (h, args);
    g_autofree gchar *after = NULL;
    g_autofree gchar *after_also = NULL;

    vmr_cli_result_assert_error (result, 1);
    if (strstr (result->err, reason) == NULL)
        vmr_fail ("`%s` was refused, but not for \"%s\": %s", result->cmdline, reason, result->err);
    after = vmr_harness_snapshot (h->dir, LOG_NAME);
    g_assert_cmpstr (after, ==, before);
    if (also != NULL) {
        after_also = vmr_harness_snapshot (also, NULL);
        g_assert_cmpstr (after_also, ==, before_also);
    }
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    vmr_harness_assert_no_block_jobs (h);
    vmr_harness_assert_disk_on (h, "disk0", vm->source);
    vmr_harness_assert_daemon_serving (h);
}

#define REFUSED(h, vm, also, reason, ...)                                                          \
    do {                                                                                           \
        const gchar *const refused_args_[] = { __VA_ARGS__, NULL };                                \
        assert_refused ((h), (vm), (also), (reason), refused_args_);                               \
    } while (0)

/* migrates disk0 to @dest (extra options after it), with guest writes before, and checks it */
static void
migrate_and_check (VmrHarness *h, VmrHarnessVm *vm, const gchar *dest, const gchar *extra)
{
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;

    vmr_harness_writer_write (vm->writer, 20);
    id = vmr_harness_migrate (h, "vm", "disk0", dest, extra, NULL);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_migrated (h, id, "disk0", vm->source, dest, "raw", vm->expected);
}

static gchar *
make_dir (VmrHarness *h, const gchar *name)
{
    gchar *path = vmr_harness_path (h, name);

    g_assert_cmpint (g_mkdir (path, 0755), ==, 0);
    return path;
}

/* ---- allowed-destinations ---- */

static void
test_allowed_destinations (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *allowed = NULL;
    g_autofree gchar *elsewhere = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *outside = NULL;
    g_autofree gchar *link = NULL;
    g_autofree gchar *through_link = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *to = NULL;

    allowed = make_dir (h, "allowed");
    elsewhere = make_dir (h, "elsewhere");
    policy = g_strdup_printf ("[defaults]\n"
                              "allowed-destinations = %s/**, nbd://127.0.0.1/allowed-*\n",
                              allowed);
    start (h, &vm, policy);

    outside = g_build_filename (elsewhere, "dest.raw", NULL);
    REFUSED (h, &vm, NULL, "is not in the policy's allowed-destinations", "migrate", "vm", "disk0",
             outside);
    /* a link inside the allowed directory that leads out of it */
    link = g_build_filename (allowed, "link", NULL);
    g_assert_cmpint (symlink (elsewhere, link), ==, 0);
    through_link = g_build_filename (link, "dest.raw", NULL);
    REFUSED (h, &vm, NULL, "which leads to", "migrate", "vm", "disk0", through_link);
    /* an export of another name; refused before any connection (no server listens) */
    REFUSED (h, &vm, NULL, "is not in the policy's allowed-destinations", "migrate", "vm", "disk0",
             "nbd://127.0.0.1/other");
    /* evacuate refuses the plan before it makes a directory */
    to = g_dir_make_tmp ("vmr-access-XXXXXX", NULL);
    g_assert_nonnull (to);
    REFUSED (h, &vm, to, "disk0 of vm: destination", "evacuate", "--from", h->dir, "--to", to);
    g_assert_cmpint (g_rmdir (to), ==, 0);

    dest = g_build_filename (allowed, "dest.raw", NULL);
    migrate_and_check (h, &vm, dest, NULL);
}

/* ---- the daemon's own directories, dangling links ---- */

static void
test_own_directories (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *in_state = NULL;
    g_autofree gchar *socket_dir = NULL;
    g_autofree gchar *in_socket_dir = NULL;
    g_autofree gchar *state_link = NULL;
    g_autofree gchar *through_link = NULL;
    g_autofree gchar *dangling = NULL;
    g_autofree gchar *target = NULL;

    start (h, &vm, NULL);
    in_state = g_build_filename (h->state_dir, "dest.raw", NULL);
    REFUSED (h, &vm, NULL, "lies in the daemon's state directory", "migrate", "vm", "disk0",
             in_state);
    socket_dir = g_path_get_dirname (h->socket);
    in_socket_dir = g_build_filename (socket_dir, "dest.raw", NULL);
    REFUSED (h, &vm, NULL, "lies in the daemon's socket directory", "migrate", "vm", "disk0",
             in_socket_dir);
    state_link = vmr_harness_path (h, "state-link");
    g_assert_cmpint (symlink (h->state_dir, state_link), ==, 0);
    through_link = g_build_filename (state_link, "dest.raw", NULL);
    REFUSED (h, &vm, NULL, "lies in the daemon's state directory", "migrate", "vm", "disk0",
             through_link);
    /* qemu-img would create the file a dangling link names, wherever it is */
    dangling = vmr_harness_path (h, "dangling.qcow2");
    target = vmr_harness_path (h, "target.qcow2");
    g_assert_cmpint (symlink (target, dangling), ==, 0);
    REFUSED (h, &vm, NULL, "is a symbolic link to nothing", "migrate", "vm", "disk0", dangling,
             "--format", "qcow2");
    g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
}

/* ---- existing files and devices ---- */

/*
 * a loop device over the new file @name of @size bytes (its path in
 * *@out_backing), or NULL with the test skipped
 */
static gchar *
attach_loop (VmrHarness *h, const gchar *name, gsize size, gchar **out_backing)
{
    g_autofree gchar *backing = vmr_harness_create_file (h, name, size, 0x5a);
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr (GError) error = NULL;
    gint status = 0;
    const gchar *argv[] = { "losetup", "--find", "--show", backing, NULL };

    if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                       &status, &error)
        || !g_spawn_check_wait_status (status, NULL)) {
        g_autofree gchar *reason = g_strdup_printf (
            "no loop device here: %s", error != NULL ? error->message : g_strstrip (err));

        vmr_harness_skip (h, reason);
        return NULL;
    }
    *out_backing = g_steal_pointer (&backing);
    return g_strdup (g_strstrip (out));
}

static void
detach_loop (const gchar *device)
{
    const gchar *argv[] = { "losetup", "--detach", device, NULL };
    gint status = 0;

    g_assert_true (g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL,
                                 NULL, &status, NULL));
    g_assert_true (g_spawn_check_wait_status (status, NULL));
}

static void
test_existing (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *existing = NULL;
    g_autofree gchar *device = NULL;
    g_autofree gchar *backing = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (JsonObject) job = NULL;
    int held;

    start (h, &vm, NULL);
    existing = vmr_harness_create_file (h, "existing.raw", IMAGE_SIZE, 'x');
    REFUSED (h, &vm, NULL, "exists; pass --reuse", "migrate", "vm", "disk0", existing);

    device = attach_loop (h, "loop.img", IMAGE_SIZE, &backing);
    if (device == NULL)
        return;
    REFUSED (h, &vm, NULL, "exists; pass --reuse", "migrate", "vm", "disk0", device);
    /* another process holds it, as a mount or device-mapper would */
    held = open (device, O_RDONLY | O_EXCL | O_CLOEXEC);
    g_assert_cmpint (held, >=, 0);
    REFUSED (h, &vm, NULL, "is in use by another process", "migrate", "vm", "disk0", device,
             "--reuse");
    close (held);
    /* once it is free, the copy goes onto it: its bytes are its backing file's */
    vmr_harness_writer_write (vm.writer, 20);
    id = vmr_harness_migrate (h, "vm", "disk0", device, "--reuse", NULL);
    job = vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S);
    vmr_harness_assert_disk_on (h, "disk0", device);
    vmr_harness_assert_job_record (h, id, "completed");
    vmr_harness_quit_qemu (h);
    detach_loop (device);
    vmr_harness_assert_image_equals (backing, "raw", vm.expected);
}

/* ---- symbolic links in the path, when the policy asks ---- */

static void
test_symlinked_parent (VmrHarness *h, gconstpointer user_data)
{
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *real = NULL;
    g_autofree gchar *via = NULL;
    g_autofree gchar *dest = NULL;
    g_autofree gchar *expected_reason = NULL;
    g_autofree gchar *policy = NULL;
    g_autofree gchar *written = NULL;
    g_autoptr (VmrCliResult) reloaded = NULL;

    start (h, &vm, "[defaults]\ndestination-symlinks = refuse\n");
    real = make_dir (h, "real");
    via = vmr_harness_path (h, "via");
    g_assert_cmpint (symlink (real, via), ==, 0);
    dest = g_build_filename (via, "dest.raw", NULL);
    expected_reason = g_strdup_printf ("its directory %s is a symbolic link", via);
    REFUSED (h, &vm, NULL, expected_reason, "migrate", "vm", "disk0", dest);

    /* without the check, the same path is a destination like any other */
    policy = vmr_harness_write_policy (h, "[defaults]\n");
    reloaded = vmr_harness_cli (h, "reload", NULL);
    vmr_cli_result_assert_ok (reloaded);
    migrate_and_check (h, &vm, dest, NULL);
    written = g_build_filename (real, "dest.raw", NULL);
    g_assert_true (g_file_test (written, G_FILE_TEST_EXISTS));
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD_NO_DAEMON ("/access/allowed-destinations", NULL, test_allowed_destinations);
    VMR_HARNESS_ADD_NO_DAEMON ("/access/own-directories", NULL, test_own_directories);
    VMR_HARNESS_ADD_NO_DAEMON ("/access/existing", NULL, test_existing);
    VMR_HARNESS_ADD_NO_DAEMON ("/access/symlinked-parent", NULL, test_symlinked_parent);
    return g_test_run ();
}
