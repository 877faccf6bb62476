#define G_LOG_DOMAIN "vmr-test"

/*
 * The test guest of tests/guest: found or built once per test program,
 * booted by a QEMU like the harness's others, its console read line by line.
 */

#include "harness-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gio/gunixinputstream.h>

#include "guest-disk.h"

struct _VmrHarnessGuest {
    VmrGuestConsole *console;
};

/* the guest's files, worked out once per test program */
static gchar *guest_kernel;
static gchar *guest_initrd;
static gchar *guest_problem; /* why there is no guest; NULL while not looked for */
static gboolean guest_looked_for;

/* the last non-empty line of @text, for a skip reason */
static gchar *
last_line (const gchar *text)
{
    g_auto (GStrv) lines = g_strsplit (text != NULL ? text : "", "\n", -1);

    for (guint i = g_strv_length (lines); i > 0; i--) {
        g_strstrip (lines[i - 1]);
        if (*lines[i - 1] != '\0')
            return g_strdup (lines[i - 1]);
    }
    return g_strdup ("no output");
}

static void
find_guest (void)
{
    const gchar *build = g_getenv ("VMR_GUEST_BUILD");
    const gchar *dir = g_getenv ("VMR_GUEST_DIR");
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *initrd = NULL;

    guest_looked_for = TRUE;
    if (dir == NULL || *dir == '\0') {
        guest_problem = g_strdup ("VMR_GUEST_DIR not set: run through meson test");
        return;
    }
    if (build != NULL && *build != '\0') {
        const gchar *argv[] = { build, "--out", dir, NULL };
        g_autofree gchar *err = NULL;
        g_autoptr (GError) error = NULL;
        gint64 start = g_get_monotonic_time ();
        gint status = 0;

        /* up to date, this takes half a second; a first build a minute or so */
        if (!g_spawn_sync (NULL, (gchar **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                           NULL, &err, &status, &error)) {
            guest_problem = g_strdup_printf ("cannot run %s: %s", build, error->message);
            return;
        }
        if (!g_spawn_check_wait_status (status, NULL)) {
            g_autofree gchar *why = last_line (err);

            guest_problem = g_strdup_printf ("the test guest cannot be built: %s", why);
            return;
        }
        g_test_message ("guest ready in %s (%.1f s)", dir,
                        (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    }
    kernel = g_build_filename (dir, "vmlinuz", NULL);
    initrd = g_build_filename (dir, "initramfs.cpio.gz", NULL);
    if (!g_file_test (kernel, G_FILE_TEST_IS_REGULAR)
        || !g_file_test (initrd, G_FILE_TEST_IS_REGULAR)) {
        guest_problem
            = g_strdup_printf ("no test guest in %s (VMR_GUEST_BUILD not set to build it)", dir);
        return;
    }
    guest_kernel = g_steal_pointer (&kernel);
    guest_initrd = g_steal_pointer (&initrd);
}

gboolean
vmr_harness_require_guest (VmrHarness *h)
{
    if (!guest_looked_for)
        find_guest ();
    if (guest_problem == NULL)
        return TRUE;
    vmr_harness_skip (h, guest_problem);
    return FALSE;
}

/* the kernel command line for @job */
static gchar *
guest_append (const VmrHarnessGuestJob *job)
{
    GString *append = g_string_new ("console=ttyS0 quiet edd=off");

    g_string_append_printf (append, " vmr.job=%s vmr.iops=%u vmr.runtime=%u", job->job, job->iops,
                            MAX (job->runtime_s, 1));
    if (job->rw != NULL)
        g_string_append_printf (append, " vmr.rw=%s", job->rw);
    if (job->size != NULL)
        g_string_append_printf (append, " vmr.size=%s", job->size);
    if (job->then != NULL)
        g_string_append_printf (append, " vmr.then=%s", job->then);
    return g_string_free (append, FALSE);
}

void
vmr_harness_start_guest (VmrHarness *h, const VmrHarnessDisk *disk, const VmrHarnessGuestJob *job)
{
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (JsonObject) file = json_object_new ();
    g_autoptr (JsonObject) fmt = json_object_new ();
    g_autofree gchar *device = NULL;
    g_autofree gchar *log = vmr_harness_path (h, "console.log");
    gboolean direct = vmr_guest_disk_takes_o_direct (disk->path);
    const gchar *fixed[]
        = { "-machine",    "q35",      "-accel", "tcg",          "-m",      "256",
            "-nodefaults", "-display", "none",   "-no-shutdown", "-serial", "stdio" };
    GInputStream *console;

    g_assert_nonnull (guest_kernel);
    g_assert_null (h->guest);
    g_assert_true (g_path_is_absolute (disk->path));
    g_ptr_array_add (argv, g_strdup (vmr_harness_qemu_program ()));
    for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
        g_ptr_array_add (argv, g_strdup (fixed[i]));
    g_ptr_array_add (argv, g_strdup ("-kernel"));
    g_ptr_array_add (argv, g_strdup (guest_kernel));
    g_ptr_array_add (argv, g_strdup ("-initrd"));
    g_ptr_array_add (argv, g_strdup (guest_initrd));
    g_ptr_array_add (argv, g_strdup ("-append"));
    g_ptr_array_add (argv, guest_append (job));
    if (disk->iothread != NULL) {
        g_ptr_array_add (argv, g_strdup ("-object"));
        g_ptr_array_add (argv, g_strdup_printf ("iothread,id=%s", disk->iothread));
    }
    json_object_set_string_member (file, "driver", "file");
    json_object_set_string_member (file, "filename", disk->path);
    json_object_set_string_member (file, "node-name", "test-file0");
    /* the guest writes with O_DIRECT: with the host's cache off too, as in production */
    if (direct) {
        JsonObject *cache = json_object_new ();

        json_object_set_boolean_member (cache, "direct", TRUE);
        json_object_set_object_member (file, "cache", cache);
        json_object_set_string_member (file, "aio", "native");
    }
    json_object_set_string_member (fmt, "driver", disk->format);
    json_object_set_string_member (fmt, "file",
                                   disk->blkdebug != NULL ? "test-debug0" : "test-file0");
    json_object_set_string_member (fmt, "node-name", "test-fmt0");
    device = g_strdup_printf ("virtio-blk-pci,drive=test-fmt0,id=%s", disk->id);
    if (disk->iothread != NULL) {
        g_autofree gchar *plain = g_steal_pointer (&device);

        device = g_strdup_printf ("%s,iothread=%s", plain, disk->iothread);
    }
    g_ptr_array_add (argv, g_strdup ("-blockdev"));
    g_ptr_array_add (argv, vmr_harness_json_arg (file));
    if (disk->blkdebug != NULL) {
        g_autoptr (JsonObject) debug = json_object_new ();

        json_object_set_string_member (debug, "driver", "blkdebug");
        json_object_set_string_member (debug, "config", disk->blkdebug);
        json_object_set_string_member (debug, "image", "test-file0");
        json_object_set_string_member (debug, "node-name", "test-debug0");
        g_ptr_array_add (argv, g_strdup ("-blockdev"));
        g_ptr_array_add (argv, vmr_harness_json_arg (debug));
    }
    g_ptr_array_add (argv, g_strdup ("-blockdev"));
    g_ptr_array_add (argv, vmr_harness_json_arg (fmt));
    g_ptr_array_add (argv, g_strdup ("-device"));
    g_ptr_array_add (argv, g_steal_pointer (&device));
    /* not what production does: a skip, and a failure under REQUIRE_INTEGRATION=1 */
    if (!direct) {
        g_autofree gchar *reason = g_strdup_printf (
            "%s does not take O_DIRECT: the guest's disk would use the host's cache", disk->path);

        vmr_harness_skip (h, reason);
    }

    vmr_harness_launch_qemu (h, argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE);
    h->guest = g_new0 (VmrHarnessGuest, 1);
    /* the reader has a descriptor of its own: QEMU's object keeps the other */
    console = g_subprocess_get_stdout_pipe (h->qemu);
    h->guest->console = vmr_guest_console_new (
        dup (g_unix_input_stream_get_fd (G_UNIX_INPUT_STREAM (console))), log);
}

void
vmr_harness_guest_clear (VmrHarness *h)
{
    if (h->guest == NULL)
        return;
    g_clear_pointer (&h->guest->console, vmr_guest_console_free);
    g_clear_pointer (&h->guest, g_free);
}

static VmrGuestConsole *
console_of (VmrHarness *h)
{
    g_assert_nonnull (h->guest);
    return h->guest->console;
}

gchar *
vmr_harness_guest_tail (VmrHarness *h, guint n)
{
    return vmr_guest_console_tail (console_of (h), n);
}

G_GNUC_NORETURN static void
guest_fail (VmrHarness *h, const gchar *what)
{
    g_autofree gchar *tail = vmr_harness_guest_tail (h, 12);
    g_autofree gchar *tail_line = vmr_harness_one_line (tail);
    const gchar *how = vmr_guest_console_ended (console_of (h)) ? " (QEMU closed the console)" : "";

    vmr_fail ("%s%s; the guest's console ends with: %s", what, how, tail_line);
}

VmrConsoleLine *
vmr_harness_guest_wait_line (VmrHarness *h, const gchar *needle, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
    VmrConsoleLine *line = NULL;

    if (vmr_guest_console_wait (console_of (h), needle, 0, deadline, &line) < 0) {
        g_autofree gchar *what
            = g_strdup_printf ("no console line with '%s' within %u s", needle, timeout_s);

        guest_fail (h, what);
    }
    return line;
}

gboolean
vmr_harness_guest_has_line (VmrHarness *h, const gchar *needle)
{
    return vmr_guest_console_wait (console_of (h), needle, 0, 0, NULL) >= 0;
}

GArray *
vmr_harness_guest_get_iops (VmrHarness *h)
{
    return vmr_guest_console_get_iops (console_of (h));
}

GArray *
vmr_harness_guest_wait_iops (VmrHarness *h, guint count, gdouble min_iops, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
    guint from = 0;

    while (TRUE) {
        g_autoptr (GArray) iops = vmr_harness_guest_get_iops (h);
        guint busy = 0;
        gint found;

        for (guint i = 0; i < iops->len; i++) {
            const VmrGuestIops *sample = &g_array_index (iops, VmrGuestIops, i);

            if (sample->read_iops + sample->write_iops >= min_iops)
                busy++;
        }
        if (busy >= count)
            return g_steal_pointer (&iops);
        /* the next VMR-IOPS line after those seen */
        found = vmr_guest_console_wait (console_of (h), "VMR-IOPS", from, deadline, NULL);
        if (found < 0) {
            g_autofree gchar *what
                = g_strdup_printf ("fewer than %u VMR-IOPS lines of %.0f IOPS or more within %u s",
                                   count, min_iops, timeout_s);

            guest_fail (h, what);
        }
        from = (guint) found + 1;
    }
}
