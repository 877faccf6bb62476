#define G_LOG_DOMAIN "vmr-test"

/*
 * Bad input is refused with one line on stderr and exit status 1 (refused)
 * or 2 (bad command line), and changes nothing: the VM stays on its
 * sources with their bytes intact, no destination appears, no job is
 * recorded, and the daemon keeps serving. Each refusal is checked for its
 * reason: the daemon's own, also where QEMU's image locking would refuse
 * anyway.
 */

#include <string.h>
#include <unistd.h>

#include <gio/gunixsocketaddress.h>

#include "harness.h"

#define IMAGE_SIZE (16 * 1024 * 1024)

/* what attach says of a monitor path that leads to no QEMU */
#define REASON_PLAIN_FILE "it is not a socket"
#define REASON_SILENT     "no QMP greeting in time"
#define REASON_MISSING    "does not exist"
#define REASON_NOT_QEMU   "is not a QEMU monitor"

/* a VM "vm" with two raw disks, disk0 and disk1, attached to the daemon */
typedef struct {
    gchar *source0;
    gchar *source1;
    gchar *expected0;
    gchar *expected1;
} Vm;

static void
vm_clear (Vm *vm)
{
    g_clear_pointer (&vm->source0, g_free);
    g_clear_pointer (&vm->source1, g_free);
    g_clear_pointer (&vm->expected0, g_free);
    g_clear_pointer (&vm->expected1, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Vm, vm_clear)

static void
vm_start (VmrHarness *h, Vm *vm)
{
    VmrHarnessDisk disks[] = {
        { "disk0", NULL, "raw", NULL },
        { "disk1", NULL, "raw", NULL },
    };

    vm->source0 = vmr_harness_create_image (h, "source0.raw", "raw", IMAGE_SIZE, 10);
    vm->source1 = vmr_harness_create_image (h, "source1.raw", "raw", IMAGE_SIZE, 11);
    vm->expected0 = vmr_harness_expected_path (vm->source0);
    vm->expected1 = vmr_harness_expected_path (vm->source1);
    disks[0].path = vm->source0;
    disks[1].path = vm->source1;
    vmr_harness_start_qemu (h, disks, G_N_ELEMENTS (disks));
    vmr_harness_attach (h, "vm");
}

/* the names of the domains the daemon knows, sorted, comma-separated */
static gchar *
domain_names (VmrHarness *h)
{
    g_autoptr (JsonNode) domains = vmr_harness_cli_json (h, "domains", NULL);
    JsonArray *array = vmr_harness_json_node_array (domains);
    g_autoptr (GPtrArray) names = g_ptr_array_new ();

    g_assert_nonnull (array);
    for (guint i = 0; i < json_array_get_length (array); i++)
        g_ptr_array_add (names, (gpointer) vmr_harness_json_string (
                                    vmr_harness_json_element (array, i), "name"));
    g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
    g_ptr_array_add (names, NULL);
    return g_strjoinv (",", (gchar **) names->pdata);
}

/*
 * Nothing changed: both disks on their sources, no block job in QEMU,
 * @n_jobs jobs known to the daemon, the daemon serving; then QEMU quits
 * and both sources hold their original bytes.
 */
static void
assert_unchanged (VmrHarness *h, Vm *vm, guint n_jobs)
{
    g_autofree gchar *names = domain_names (h);

    g_assert_cmpstr (names, ==, "vm");
    vmr_harness_assert_disk_on (h, "disk0", vm->source0);
    vmr_harness_assert_disk_on (h, "disk1", vm->source1);
    vmr_harness_assert_no_block_jobs (h);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, n_jobs);
    vmr_harness_assert_daemon_serving (h);
    vmr_harness_quit_qemu (h);
    vmr_harness_assert_image_equals (vm->source0, "raw", vm->expected0);
    vmr_harness_assert_image_equals (vm->source1, "raw", vm->expected1);
}

/* the one error line of @result says @reason */
static void
assert_reason (VmrCliResult *result, const gchar *reason)
{
    if (strstr (result->err, reason) == NULL)
        vmr_fail ("`%s` was refused, but not for \"%s\": %s", result->cmdline, reason, result->err);
}

/*
 * `migrate vm DISK DEST extra...` fails with @status, one line that says
 * @reason, and leaves everything as it was
 */
static void assert_migrate_refused (VmrHarness *h, Vm *vm, gint status, const gchar *reason,
                                    const gchar *domain, const gchar *disk, const gchar *dest,
                                    ...) G_GNUC_NULL_TERMINATED;

static void
assert_migrate_refused (VmrHarness *h, Vm *vm, gint status, const gchar *reason,
                        const gchar *domain, const gchar *disk, const gchar *dest, ...)
{
    g_autoptr (GPtrArray) args = g_ptr_array_new ();
    g_autoptr (VmrCliResult) result = NULL;
    gboolean existed = g_file_test (dest, G_FILE_TEST_EXISTS);
    va_list ap;

    g_ptr_array_add (args, "migrate");
    g_ptr_array_add (args, (gpointer) domain);
    g_ptr_array_add (args, (gpointer) disk);
    g_ptr_array_add (args, (gpointer) dest);
    va_start (ap, dest);
    for (const gchar *arg = va_arg (ap, const gchar *); arg != NULL;
         arg = va_arg (ap, const gchar *))
        g_ptr_array_add (args, (gpointer) arg);
    va_end (ap);
    g_ptr_array_add (args, NULL);
    result = vmr_harness_cliv (h, (const gchar *const *) args->pdata);
    vmr_cli_result_assert_error (result, status);
    assert_reason (result, reason);
    g_assert_cmpint (g_file_test (dest, G_FILE_TEST_EXISTS), ==, existed);
    assert_unchanged (h, vm, 0);
}

static void
test_unknown_domain (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_path (h, "dest.raw");
    assert_migrate_refused (h, &vm, 1, "unknown domain 'nosuch'", "nosuch", "disk0", dest, NULL);
}

static void
test_unknown_disk (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_path (h, "dest.raw");
    assert_migrate_refused (h, &vm, 1, "domain vm has no disk 'nosuch'", "vm", "nosuch", dest,
                            NULL);
}

/* a second migration of a disk that is migrating is refused; the first goes on */
static void
test_already_migrating (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;
    g_autofree gchar *dest2 = NULL;
    g_autofree gchar *id = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (VmrCliResult) cancel = NULL;
    g_autoptr (JsonObject) job = NULL;
    g_autoptr (JsonObject) cancelled = NULL;
    g_autoptr (JsonObject) block_job = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_path (h, "dest.raw");
    dest2 = vmr_harness_path (h, "dest2.raw");
    id = vmr_harness_migrate (h, "vm", "disk0", dest, "--speed", VMR_HARNESS_SLOW_SPEED, NULL);
    job = vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);

    result = vmr_harness_cli (h, "migrate", "vm", "disk0", dest2, NULL);
    vmr_cli_result_assert_error (result, 1);
    assert_reason (result, "disk0 of vm is already migrating");
    g_assert_false (g_file_test (dest2, G_FILE_TEST_EXISTS));
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 1);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_get_job (h, id);
    g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "copying");
    block_job = vmr_harness_get_block_job (h);
    g_assert_cmpstr (vmr_harness_json_string (block_job, "status"), ==, "running");
    vmr_harness_assert_node_released (h, dest2);

    /* end the first one so that the rest can be checked as unchanged */
    cancel = vmr_harness_cli (h, "cancel", id, NULL);
    vmr_cli_result_assert_ok (cancel);
    cancelled = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    assert_unchanged (h, &vm, 1);
}

/* a destination that is a file already: it keeps its bytes */
typedef struct {
    gsize size;           /* of the file, bytes */
    gboolean reuse;       /* migrate --reuse */
    const gchar *refusal; /* a part of the CLI's error */
} ExistingDestCase;

/* an existing file is never overwritten without --reuse */
static const ExistingDestCase dest_exists
    = { IMAGE_SIZE, FALSE, "exists; pass --reuse to copy onto it" };
/* --reuse onto a file smaller than the disk */
static const ExistingDestCase reuse_smaller
    = { IMAGE_SIZE / 2, TRUE, "is smaller than the source" };

static void
test_existing_dest (VmrHarness *h, gconstpointer user_data)
{
    const ExistingDestCase *c = user_data;
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;
    g_autofree gchar *pristine = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_create_file (h, "dest.raw", c->size, 0xaa);
    pristine = vmr_harness_create_file (h, "dest.pristine", c->size, 0xaa);
    assert_migrate_refused (h, &vm, 1, c->refusal, "vm", "disk0", dest, c->reuse ? "--reuse" : NULL,
                            NULL);
    vmr_harness_assert_image_equals (dest, "raw", pristine);
}

/*
 * --reuse of a disk of the same VM: the disk's own source (the size fits,
 * the path must not) or, with user_data TRUE, another disk (copying there
 * would destroy it)
 */
static void
test_dest_is_a_disk (VmrHarness *h, gconstpointer user_data)
{
    gboolean other_disk = GPOINTER_TO_INT (user_data);
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *disk_path = NULL;

    vm_start (h, &vm);
    disk_path = g_strdup (other_disk ? vm.source1 : vm.source0);
    assert_migrate_refused (h, &vm, 1, "is a disk of the domain already", "vm", "disk0", disk_path,
                            "--reuse", NULL);
}

/*
 * --reuse through a symlink to a disk: of the same VM, and of another VM
 * the daemon knows. The other VM opens its image without locking, so QEMU
 * would not stop the copy: the refusal is the daemon's, and the other VM's
 * disk keeps its bytes.
 */
static void
test_reuse_symlink (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *own_link = NULL;
    g_autofree gchar *other_link = NULL;
    g_autofree gchar *other_source = NULL;
    g_autofree gchar *other_expected = NULL;
    VmrHarnessDisk other_disk = { "disk0", NULL, "raw", NULL, .no_locking = TRUE };
    VmrHarness *other = NULL;

    vm_start (h, &vm);
    other_source = vmr_harness_create_image (h, "other.raw", "raw", IMAGE_SIZE, 12);
    other_expected = vmr_harness_expected_path (other_source);
    other_disk.path = other_source;
    other = vmr_harness_peer_new (h, "other");
    vmr_harness_start_qemu (other, &other_disk, 1);
    vmr_harness_attach (other, "other");
    other_link = vmr_harness_path (h, "other-link.raw");
    g_assert_cmpint (symlink (other_source, other_link), ==, 0);
    {
        g_autoptr (VmrCliResult) result
            = vmr_harness_cli (h, "migrate", "vm", "disk0", other_link, "--reuse", NULL);

        vmr_cli_result_assert_error (result, 1);
        assert_reason (result, "is the disk disk0 of domain other");
    }
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    vmr_harness_assert_no_block_jobs (other);
    {
        g_autoptr (VmrCliResult) detached = vmr_harness_cli (h, "detach", "other", NULL);

        vmr_cli_result_assert_ok (detached);
    }
    vmr_harness_quit_qemu (other);
    vmr_harness_peer_free (other);
    vmr_harness_assert_image_equals (other_source, "raw", other_expected);

    own_link = vmr_harness_path (h, "own-link.raw");
    g_assert_cmpint (symlink (vm.source1, own_link), ==, 0);
    assert_migrate_refused (h, &vm, 1, "is a disk of the domain already", "vm", "disk0", own_link,
                            "--reuse", NULL);
}

static void
test_dest_dir_missing (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dir = NULL;
    g_autofree gchar *dest = NULL;

    vm_start (h, &vm);
    dir = vmr_harness_path (h, "nosuch");
    dest = g_build_filename (dir, "dest.raw", NULL);
    assert_migrate_refused (h, &vm, 1, "does not exist", "vm", "disk0", dest, NULL);
    g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS));
}

/* see vmr_harness_unwritable_dir() for a directory that stops root */
static void
test_dest_dir_unwritable (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dir = NULL;
    g_autofree gchar *dest = NULL;

    dir = vmr_harness_unwritable_dir (h);
    if (dir == NULL)
        return;
    vm_start (h, &vm);
    dest = g_build_filename (dir, "dest.raw", NULL);
    assert_migrate_refused (h, &vm, 1, "is not writable", "vm", "disk0", dest, NULL);
}

/*
 * QEMU refuses: --reuse --format qcow2 onto a file that is no qcow2 image.
 * The daemon's checks pass (the file exists and is large enough); QEMU's
 * own words must reach the user. The file is the user's: it stays.
 */
static void
test_qemu_refuses (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;
    g_autofree gchar *pristine = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    g_autoptr (JsonNode) jobs = NULL;
    JsonArray *array;

    vm_start (h, &vm);
    dest = vmr_harness_create_file (h, "dest.qcow2", IMAGE_SIZE, 0);
    pristine = vmr_harness_create_file (h, "dest.pristine", IMAGE_SIZE, 0);
    result
        = vmr_harness_cli (h, "migrate", "vm", "disk0", dest, "--format", "qcow2", "--reuse", NULL);
    vmr_cli_result_assert_error (result, 1);
    /* QEMU's desc: "Image is not in qcow2 format" */
    if (strstr (result->err, "not in qcow2 format") == NULL)
        vmr_fail ("QEMU's reason is missing from: %s", result->err);
    vmr_harness_assert_image_equals (dest, "raw", pristine);
    vmr_harness_assert_node_released (h, dest);

    /* a job may have been recorded as failed; none may be left running */
    jobs = vmr_harness_cli_json (h, "jobs", NULL);
    array = vmr_harness_json_node_array (jobs);
    for (guint i = 0; i < json_array_get_length (array); i++)
        g_assert_cmpstr (vmr_harness_json_string (vmr_harness_json_element (array, i), "state"), ==,
                         "failed");
    assert_unchanged (h, &vm, json_array_get_length (array));
}

/* a plain file, a socket that never greets, a path that does not exist */
static void
assert_attach_refused (VmrHarness *h, Vm *vm, const gchar *qmp_path, const gchar *reason)
{
    g_autoptr (VmrCliResult) result = NULL;
    gint64 started = g_get_monotonic_time ();

    result = vmr_harness_cli (h, "attach", "other", "--qmp", qmp_path, NULL);
    g_test_message ("attach took %.1f s",
                    (gdouble) (g_get_monotonic_time () - started) / G_USEC_PER_SEC);
    vmr_cli_result_assert_error (result, 1);
    assert_reason (result, reason);
    assert_unchanged (h, vm, 0);
}

static void
test_attach_plain_file (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *path = NULL;

    vm_start (h, &vm);
    path = vmr_harness_create_file (h, "not-a-monitor", 4096, 'x');
    assert_attach_refused (h, &vm, path, REASON_PLAIN_FILE);
}

static void
test_attach_silent (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *path = NULL;

    vm_start (h, &vm);
    path = vmr_harness_silent_listener (h);
    assert_attach_refused (h, &vm, path, REASON_SILENT);
}

static void
test_attach_missing (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *path = NULL;

    vm_start (h, &vm);
    path = vmr_harness_path (h, "nosuch.sock");
    assert_attach_refused (h, &vm, path, REASON_MISSING);
}

/* a peer that speaks QMP but is no QEMU: the daemon's own control socket */
static void
test_attach_not_qemu (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };

    vm_start (h, &vm);
    assert_attach_refused (h, &vm, h->socket, REASON_NOT_QEMU);
}

/* a peer that greets as QEMU does and then sends one line that never ends */
typedef struct {
    GSocket *listener;
    guint64 sent; /* bytes of that line the daemon took before it hung up */
} EndlessPeer;

static gpointer
endless_peer_thread (gpointer user_data)
{
    EndlessPeer *peer = user_data;
    static const gchar greeting[] = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, "
                                    "\"minor\": 0, \"major\": 10}, \"package\": \"\"}, "
                                    "\"capabilities\": []}}\n";
    g_autofree gchar *chunk = g_strnfill (64 * 1024, 'x');
    g_autoptr (GSocket) conn = g_socket_accept (peer->listener, NULL, NULL);

    if (conn == NULL || g_socket_send (conn, greeting, strlen (greeting), NULL, NULL) < 0)
        return NULL;
    /* 200 MB at the most: the daemon must hang up long before */
    while (peer->sent < 200 * 1000 * 1000) {
        gssize n = g_socket_send (conn, chunk, strlen (chunk), NULL, NULL);

        if (n <= 0)
            break;
        peer->sent += (guint64) n;
    }
    return NULL;
}

/* the daemon's peak resident memory (VmHWM), in KiB */
static guint64
daemon_peak_kib (VmrHarness *h)
{
    return vmr_harness_peak_kib (h->daemon_pid);
}

/*
 * attach to a "QEMU" that greets, then sends a line without end: the daemon
 * hangs up once the line is longer than any message, attach fails with one
 * line, and the daemon's memory stays flat (it took 388 MB for a 200 MB line
 * when it buffered the whole line first)
 */
static void
test_attach_endless_line (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *path = NULL;
    g_autoptr (GSocketAddress) address = NULL;
    g_autoptr (GError) error = NULL;
    g_autoptr (GThread) thread = NULL;
    EndlessPeer peer = { 0 };
    guint64 before_kib, after_kib;

    vm_start (h, &vm);
    path = vmr_harness_path (h, "endless.sock");
    address = g_unix_socket_address_new (path);
    peer.listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                  G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_no_error (error);
    g_socket_bind (peer.listener, address, FALSE, &error);
    g_assert_no_error (error);
    g_socket_listen (peer.listener, &error);
    g_assert_no_error (error);
    thread = g_thread_new ("endless-peer", endless_peer_thread, &peer);

    before_kib = daemon_peak_kib (h);
    assert_attach_refused (h, &vm, path, "longer than 16 MiB");
    g_thread_join (g_steal_pointer (&thread));
    g_socket_close (peer.listener, NULL);
    g_clear_object (&peer.listener);
    after_kib = daemon_peak_kib (h);
    g_test_message ("the daemon took %" G_GUINT64_FORMAT " MiB of the line; its peak memory went "
                    "from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " MiB",
                    peer.sent / (1024 * 1024), before_kib / 1024, after_kib / 1024);
    g_assert_cmpuint (peer.sent, <, 200 * 1000 * 1000);
    /* the line's limit and a buffer's doubling past it, not the line */
    g_assert_cmpuint (after_kib - before_kib, <, 3 * 16 * 1024);
}

/* the command line itself is wrong: exit status 2, the daemon is not involved */
static void
test_unknown_command (VmrHarness *h, gconstpointer user_data)
{
    g_autoptr (VmrCliResult) result = NULL;

    result = vmr_harness_cli (h, "frobnicate", "vm", NULL);
    vmr_cli_result_assert_error (result, 2);
    g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    vmr_harness_assert_daemon_serving (h);
}

static void
test_unknown_option (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_path (h, "dest.raw");
    assert_migrate_refused (h, &vm, 2, "--frobnicate", "vm", "disk0", dest, "--frobnicate", NULL);
}

static void
test_bad_rate (VmrHarness *h, gconstpointer user_data)
{
    g_auto (Vm) vm = { 0 };
    g_autofree gchar *dest = NULL;

    vm_start (h, &vm);
    dest = vmr_harness_path (h, "dest.raw");
    assert_migrate_refused (h, &vm, 2, "fast", "vm", "disk0", dest, "--speed", "fast", NULL);
}

/* `cluster status`, `cluster jobs` and `evacuate --cluster` of a daemon whose policy has no
 * [cluster] section */
static void
test_no_cluster (VmrHarness *h, gconstpointer user_data)
{
    const gchar *const commands[] = { "status", "jobs" };

    for (guint i = 0; i < G_N_ELEMENTS (commands); i++) {
        g_autoptr (VmrCliResult) result = vmr_harness_cli (h, "cluster", commands[i], NULL);
        g_autoptr (VmrCliResult) extra = vmr_harness_cli (h, "cluster", commands[i], "x", NULL);

        vmr_cli_result_assert_error (result, 1);
        assert_reason (result, "cannot read the cluster: the policy has no [cluster] section");
        /* one line */
        g_assert_true (g_str_has_suffix (result->err, "\n"));
        g_assert_true (strchr (result->err, '\n') == result->err + strlen (result->err) - 1);
        vmr_cli_result_assert_error (extra, 2);
        assert_reason (extra, "unexpected argument 'x'");
    }
    /* evacuate --cluster: refused on one line, and a dry run is of one host */
    {
        g_autofree gchar *to = vmr_harness_path (h, "to");
        g_autoptr (VmrCliResult) result = NULL;
        g_autoptr (VmrCliResult) dry_run = NULL;

        g_assert_cmpint (g_mkdir_with_parents (to, 0755), ==, 0);
        result = vmr_harness_cli (h, "evacuate", "--cluster", "--from", h->dir, "--to", to,
                                  "--wait", NULL);
        vmr_cli_result_assert_error (result, 1);
        assert_reason (result, "the policy has no [cluster] section");
        g_assert_true (strchr (result->err, '\n') == result->err + strlen (result->err) - 1);
        dry_run = vmr_harness_cli (h, "evacuate", "--cluster", "--dry-run", "--from", h->dir,
                                   "--to", to, NULL);
        vmr_cli_result_assert_error (dry_run, 2);
        assert_reason (dry_run, "--dry-run is of one host, not --cluster");
    }
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_HARNESS_ADD ("/bad-input/unknown-domain", NULL, test_unknown_domain);
    VMR_HARNESS_ADD ("/bad-input/no-cluster", NULL, test_no_cluster);
    VMR_HARNESS_ADD ("/bad-input/unknown-disk", NULL, test_unknown_disk);
    VMR_HARNESS_ADD ("/bad-input/already-migrating", NULL, test_already_migrating);
    VMR_HARNESS_ADD ("/bad-input/dest-exists", &dest_exists, test_existing_dest);
    VMR_HARNESS_ADD ("/bad-input/reuse-smaller", &reuse_smaller, test_existing_dest);
    VMR_HARNESS_ADD ("/bad-input/dest-is-source", GINT_TO_POINTER (FALSE), test_dest_is_a_disk);
    VMR_HARNESS_ADD ("/bad-input/dest-is-other-disk", GINT_TO_POINTER (TRUE), test_dest_is_a_disk);
    VMR_HARNESS_ADD ("/bad-input/reuse-symlink", NULL, test_reuse_symlink);
    VMR_HARNESS_ADD ("/bad-input/dest-dir-missing", NULL, test_dest_dir_missing);
    VMR_HARNESS_ADD ("/bad-input/dest-dir-unwritable", NULL, test_dest_dir_unwritable);
    VMR_HARNESS_ADD ("/bad-input/qemu-refuses", NULL, test_qemu_refuses);
    VMR_HARNESS_ADD ("/bad-input/attach-plain-file", NULL, test_attach_plain_file);
    VMR_HARNESS_ADD ("/bad-input/attach-silent", NULL, test_attach_silent);
    VMR_HARNESS_ADD ("/bad-input/attach-missing", NULL, test_attach_missing);
    VMR_HARNESS_ADD ("/bad-input/attach-not-qemu", NULL, test_attach_not_qemu);
    VMR_HARNESS_ADD ("/bad-input/attach-endless-line", NULL, test_attach_endless_line);
    VMR_HARNESS_ADD ("/bad-input/unknown-command", NULL, test_unknown_command);
    VMR_HARNESS_ADD ("/bad-input/unknown-option", NULL, test_unknown_option);
    VMR_HARNESS_ADD ("/bad-input/bad-rate", NULL, test_bad_rate);
    return g_test_run ();
}
