/*
 * The integration test harness: a fresh temporary directory per test, the
 * real virt-mirrord and virt-mirror, a real QEMU with two QMP monitors (one
 * for the daemon, one for the test's own checks) and images filled with a
 * deterministic pattern whose bytes are checked after every migration; for
 * tests that need real guest I/O, the test guest of tests/guest booted in
 * QEMU, its console read line by line (vmr_harness_start_guest()).
 *
 * Tests use the fixture with g_test_add() through VMR_HARNESS_ADD(), and
 * start with `if (vmr_harness_skipped (h)) return;` because GTest runs the
 * test body even when the setup skipped.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "guest-console.h"
#include "qmp-client.h"
#include "vmr-json.h"

G_BEGIN_DECLS

/* generous: TCG QEMU on a loaded two-core machine */
#define VMR_HARNESS_JOB_TIMEOUT_S 60

/* copies run at this rate when a test needs them to still be running */
#define VMR_HARNESS_SLOW_SPEED "1M"

/* one guest disk of a QEMU started by vmr_harness_start_qemu() */
typedef struct {
    const gchar *id;       /* qdev id of the virtio-blk device, e.g. "disk0" */
    const gchar *path;     /* absolute path of the image */
    const gchar *format;   /* "raw" or "qcow2" */
    const gchar *iothread; /* iothread serving the device, NULL for the main loop */
    /* with iothread NULL: the iothreads of a per-queue mapping, NULL-terminated, or NULL */
    const gchar *const *vq_iothreads;
    /* file.locking=off: another QEMU may open the same image */
    gboolean no_locking;
    /*
     * a scsi-hd on a virtio-scsi controller instead of a virtio-blk: a device
     * that owns its block backend, so that a VmrHarnessWriter can write
     * through it as the guest does. Its controller runs on its iothread, or
     * on its vq_iothreads, see vmr_harness_scsi_controller().
     */
    gboolean scsi;
    /* the file node opened with cache.direct=on (the image must take O_DIRECT) */
    gboolean cache_direct;
    /*
     * a blkdebug rules file: the format node reaches its file through QEMU's
     * blkdebug driver with these rules, for injected I/O errors
     * (vmr_harness_start_guest() only); NULL for none
     */
    const gchar *blkdebug;
} VmrHarnessDisk;

/*
 * the id of the virtio-scsi controller of a scsi-hd @disk: one for the
 * main loop (scsi0), one per I/O thread, one per disk with vq_iothreads (its
 * controller's queues on those threads); free with g_free()
 */
gchar *vmr_harness_scsi_controller (const VmrHarnessDisk *disk);

/* the test guest QEMU boots, see vmr_harness_start_guest() */
typedef struct _VmrHarnessGuest VmrHarnessGuest;

typedef struct {
    gchar *dir;          /* fresh temporary directory, removed in teardown */
    gchar *socket;       /* the daemon's control socket */
    gchar *state_dir;    /* the daemon's state dir */
    gchar *qemu_monitor; /* QMP socket handed to the daemon */
    gchar *test_monitor; /* QMP socket for the test's own checks */
    GSubprocess *daemon; /* NULL when not running */
    GSubprocess *qemu;   /* NULL when not running */
    GPid daemon_pid;     /* kept after the process is reaped */
    GPid qemu_pid;
    VmrQmpClient *mon;        /* connection to test_monitor */
    VmrQmpClient *control;    /* connection to the daemon, for polling jobs */
    GSocket *silent_listener; /* a listener that never answers, see below */
    gchar *immutable_dir;     /* a directory with the immutable flag, undone in teardown */
    gboolean skipped;         /* a prerequisite is missing: the test body returns */
    gchar *skip_reason;       /* the first missing prerequisite, when skipped */
    VmrHarnessGuest *guest;   /* the guest QEMU boots, NULL for a guest-less QEMU */
    gchar *tmpfs_dir;         /* a tmpfs mounted by the test, unmounted in teardown */
    gchar *daemon_log;        /* set before the daemon starts: its output goes (appended) to
                               * this file instead of the test's stderr; freed in teardown */
} VmrHarness;

/* fails the test with a printf-style message, like a failed assertion */
#define vmr_fail(...) vmr_fail_at (__FILE__, __LINE__, G_STRFUNC, __VA_ARGS__)
G_GNUC_NORETURN G_GNUC_PRINTF (4, 5) void vmr_fail_at (const char *file, int line, const char *func,
                                                       const char *format, ...);

/* the result of one CLI run */
typedef struct {
    gchar *cmdline; /* for messages */
    gint status;    /* exit status, or -signal when killed */
    gchar *out;     /* stdout */
    gchar *err;     /* stderr */
} VmrCliResult;

void vmr_cli_result_free (VmrCliResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliResult, vmr_cli_result_free)

/*
 * Fixture functions. The setup makes the directory and starts the daemon;
 * the _qemu_only variant starts no daemon (for the harness's own tests).
 * The user data is the test's own.
 */
void vmr_harness_setup (VmrHarness *h, gconstpointer user_data);
void vmr_harness_setup_qemu_only (VmrHarness *h, gconstpointer user_data);
void vmr_harness_teardown (VmrHarness *h, gconstpointer user_data);

/*
 * As vmr_harness_setup(), but the test starts the daemon itself with
 * vmr_harness_start_daemon() (to give it options such as --policy).
 */
void vmr_harness_setup_no_daemon (VmrHarness *h, gconstpointer user_data);

typedef void (*VmrHarnessFunc) (VmrHarness *h, gconstpointer user_data);

/*
 * Adds the case @path: @set_up, then @func with @user_data unless the setup
 * skipped the case (a missing QEMU, say: a failure under
 * REQUIRE_INTEGRATION=1), then the teardown. A case's body need not ask
 * vmr_harness_skipped() first.
 */
void vmr_harness_add (const gchar *path, gconstpointer user_data, VmrHarnessFunc set_up,
                      VmrHarnessFunc func);

#define VMR_HARNESS_ADD(path, data, func)                                                          \
    vmr_harness_add ((path), (data), vmr_harness_setup, (func))
#define VMR_HARNESS_ADD_NO_DAEMON(path, data, func)                                                \
    vmr_harness_add ((path), (data), vmr_harness_setup_no_daemon, (func))

/*
 * Calls g_test_init() and sets what every integration test program needs.
 * Environment: VMR_TEST_VERBOSE=1 for QMP transcripts and a verbose daemon,
 * VMR_TEST_KEEP_DIR=1 to keep each test's directory.
 */
void vmr_harness_init (int *argc, char ***argv);

/* TRUE when the setup skipped the test (the body must return at once) */
gboolean vmr_harness_skipped (VmrHarness *h);

/*
 * Skips the test with @reason, or fails it when REQUIRE_INTEGRATION=1.
 * Sets h->skipped (and keeps the first reason).
 */
void vmr_harness_skip (VmrHarness *h, const gchar *reason);

/*
 * g_test_run() for a program that sets @h up once, before it, for all its
 * cases (a skip or failure outside any case is lost: GLib resets the result
 * when the first case starts). When that setup skipped and
 * REQUIRE_INTEGRATION=1, runs no case: prints one line naming what is
 * missing and returns 1. Otherwise the cases run (and skip through
 * vmr_harness_skip() when the setup did).
 */
gint vmr_harness_run_shared (VmrHarness *h);

/*
 * Checks that every program named (NULL-terminated) is in PATH; skips (or
 * fails, see vmr_harness_skip()) naming the first missing one. Returns FALSE
 * when one is missing.
 */
gboolean vmr_harness_require (VmrHarness *h, const gchar *first_program,
                              ...) G_GNUC_NULL_TERMINATED;

/* the absolute path of @name in the test's directory; free with g_free() */
gchar *vmr_harness_path (VmrHarness *h, const gchar *name);

/*
 * Creates the image @name (in the test's directory) of @size bytes filled
 * with the pattern of @seed, in @format ("raw" or "qcow2"), and its pristine
 * raw copy, see vmr_harness_expected_path(). Returns the image's absolute
 * path; free with g_free().
 */
gchar *vmr_harness_create_image (VmrHarness *h, const gchar *name, const gchar *format, gsize size,
                                 guint64 seed);

/* the pristine raw copy of an image made by vmr_harness_create_image() */
gchar *vmr_harness_expected_path (const gchar *image_path);

/*
 * Creates the sparse raw image @name of @size bytes with @extents extents
 * of @extent_size bytes of pseudo-random data (from @seed), extent i in the
 * middle of the i-th @extents-th of the image, the rest holes, and its
 * pristine copy, see vmr_harness_expected_path(). Returns the image's
 * absolute path; free with g_free().
 */
gchar *vmr_harness_create_thin_image (VmrHarness *h, const gchar *name, gsize size, guint extents,
                                      gsize extent_size, guint32 seed);

/* creates @name of @size bytes, all a hole; returns its absolute path */
gchar *vmr_harness_create_sparse_file (VmrHarness *h, const gchar *name, gsize size);

/*
 * Asserts that @what, which takes @alloc bytes, holds at least its @data
 * bytes of data, and at most 1.1 times them and what @writes writes of a
 * VmrHarnessWriter may add: each its length and the mirror's 64 KiB chunk
 * on both sides (a write into a hole makes the copy write whole chunks).
 */
void vmr_harness_assert_thin (const gchar *what, guint64 alloc, guint64 data, guint writes);

/* the bytes @path takes on its file system (st_blocks) */
guint64 vmr_harness_allocated (const gchar *path);

/*
 * Every entry below @dir but those named @skip_name (may be NULL), one a
 * line with its type, size and modification time (ns): two snapshots are
 * equal when nothing was made, removed or written there. Free with g_free().
 */
gchar *vmr_harness_snapshot (const gchar *dir, const gchar *skip_name);

/* creates @name with @size bytes of @fill; returns its absolute path */
gchar *vmr_harness_create_file (VmrHarness *h, const gchar *name, gsize size, guchar fill);

/* what a writer other than root may still use on the file system of @dir, in bytes */
guint64 vmr_harness_free_bytes (const gchar *dir);

/*
 * Makes DIR/filler take all but @leave bytes of the free space of @dir
 * (posix_fallocate); returns its path, free with g_free(). Asserts.
 */
gchar *vmr_harness_fill_leaving (const gchar *dir, guint64 leave);

/*
 * Whether the reply of the QMP command @command with the one string argument
 * @arg = @value (qom-list with "path", device-list-properties with
 * "typename") lists a property named @name
 */
gboolean vmr_harness_lists_property (VmrHarness *h, const gchar *command, const gchar *arg,
                                     const gchar *value, const gchar *name);

/* the QEMU the tests start: $VMR_QEMU, or qemu-system-x86_64 from PATH */
const gchar *vmr_harness_qemu_program (void);

/* says once per program, in the TAP log, which QEMU the tests run (its --version) */
void vmr_harness_report_qemu (void);

/* runs qemu-img with the NULL-terminated arguments and asserts success */
void vmr_harness_qemu_img (const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/*
 * Starts QEMU paused (-S) with @disks, both monitors, and connects h->mon.
 * Asserts on failure.
 */
void vmr_harness_start_qemu (VmrHarness *h, const VmrHarnessDisk *disks, guint n_disks);

/*
 * Starts the daemon with the harness's socket and state dir and the
 * NULL-terminated extra arguments, and waits until it answers on its
 * socket. Asserts on failure.
 */
void vmr_harness_start_daemon (VmrHarness *h, const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/*
 * Runs the daemon as vmr_harness_start_daemon() would, for a test that
 * expects it to refuse to start: waits for its exit (asserting it comes
 * within the start timeout) and returns its status, stdout and stderr.
 */
VmrCliResult *vmr_harness_run_daemon (VmrHarness *h, const gchar *first_arg,
                                      ...) G_GNUC_NULL_TERMINATED;

/*
 * Writes @text as policy.conf in the test's directory, replacing it in one
 * step. Returns its absolute path; free with g_free().
 */
gchar *vmr_harness_write_policy (VmrHarness *h, const gchar *text);

/*
 * The daemon's command line: its own socket and state dir, libvirt at
 * @libvirt_uri (NULL: --no-libvirt), --verbose when @verbose or
 * VMR_TEST_VERBOSE is set, then @extra; NULL-terminated, free with
 * g_ptr_array_unref()
 */
GPtrArray *vmr_harness_daemon_argv (VmrHarness *h, const gchar *libvirt_uri, gboolean verbose,
                                    const gchar *const *extra);

/* the peak resident memory (VmHWM) of the process @pid, in KiB; asserts it can be read */
guint64 vmr_harness_peak_kib (GPid pid);

/* SIGTERMs the daemon and asserts exit status 0 and its socket removed */
void vmr_harness_stop_daemon (VmrHarness *h);

/*
 * SIGKILLs the daemon by its pid and reaps it, as a crash would: its socket
 * file and its job records stay behind. Asserts it died of that signal.
 * vmr_harness_restart_daemon() starts it again on the same socket and state dir.
 */
void vmr_harness_kill_daemon (VmrHarness *h);

/*
 * Starts the daemon, or starts it again after vmr_harness_kill_daemon() or
 * vmr_harness_stop_daemon(), on the same socket and state dir, with the
 * extra arguments @extra (NULL-terminated, or NULL for none), and waits until
 * it answers. Asserts on failure.
 */
void vmr_harness_restart_daemon (VmrHarness *h, const gchar *const *extra);

/* SIGKILLs QEMU by its pid and reaps it */
void vmr_harness_kill_qemu (VmrHarness *h);

/* "quit" over the test monitor, waits for QEMU to exit and asserts status 0 */
void vmr_harness_quit_qemu (VmrHarness *h);

/* runs a QMP command on the test monitor and asserts it succeeded */
JsonNode *vmr_harness_qmp (VmrHarness *h, const gchar *command, JsonObject *arguments);

/* a CLI run in the background */
typedef struct _VmrCliRun VmrCliRun;

/*
 * Starts the CLI with `-c SOCKET` and @args (NULL-terminated) without
 * waiting; vmr_harness_cli_wait() collects it and frees @run.
 */
VmrCliRun *vmr_harness_cli_spawnv (VmrHarness *h, const gchar *const *args);
VmrCliRun *vmr_harness_cli_spawn (VmrHarness *h, const gchar *first_arg,
                                  ...) G_GNUC_NULL_TERMINATED;
VmrCliResult *vmr_harness_cli_wait (VmrCliRun *run);

/*
 * Whether @job, an entry of QEMU's query-block-jobs, copies in bulk: created,
 * running or paused before it was ever ready. A job told to complete is no
 * longer ready ("waiting", "pending", "concluded") but copies nothing more.
 */
gboolean vmr_harness_is_bulk_copy (JsonObject *job);

/* whether @run has exited and its output is in, without waiting */
gboolean vmr_harness_cli_run_exited (VmrCliRun *run);

/* sends @signum to a CLI run in the background, as Ctrl-C (SIGINT) would */
void vmr_harness_cli_signal (VmrCliRun *run, gint signum);

/* runs the CLI with `-c SOCKET` and the NULL-terminated arguments */
VmrCliResult *vmr_harness_cli (VmrHarness *h, const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;
VmrCliResult *vmr_harness_cliv (VmrHarness *h, const gchar *const *args);

/* as vmr_harness_cli() with --json; asserts exit 0 and returns the parsed stdout */
JsonNode *vmr_harness_cli_json (VmrHarness *h, const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/* asserts exit status 0 */
void vmr_cli_result_assert_ok (VmrCliResult *result);

/*
 * Asserts exit status @status and exactly one line on stderr, starting with
 * "virt-mirror: error: ".
 */
void vmr_cli_result_assert_error (VmrCliResult *result, gint status);

/* parses stdout as JSON; asserts it parses */
JsonNode *vmr_cli_result_parse_json (VmrCliResult *result);

/* `attach NAME --qmp QEMU_MONITOR` through the CLI; asserts success */
void vmr_harness_attach (VmrHarness *h, const gchar *name);

/*
 * `migrate DOMAIN DISK DEST --json [extra...]` through the CLI; asserts
 * success and returns the job's id. @extra is NULL-terminated.
 */
gchar *vmr_harness_migrate (VmrHarness *h, const gchar *domain, const gchar *disk,
                            const gchar *dest, ...) G_GNUC_NULL_TERMINATED;
gchar *vmr_harness_migratev (VmrHarness *h, const gchar *domain, const gchar *disk,
                             const gchar *dest, const gchar *const *extra);

/* ---- guest writes during copies ---- */

/*
 * Writes random extents (random offsets, 4 KiB to 256 KiB, a random byte
 * pattern each) through the device @qdev_id's own block backend, as the
 * guest's writes go (the device must be a scsi-hd, VmrHarnessDisk.scsi), and
 * applies each one to @expected, the raw copy of what the guest must see,
 * so that a whole destination (or source) can be compared with it. @seed
 * makes the extents repeatable; failures name it.
 */
typedef struct _VmrHarnessWriter VmrHarnessWriter;

VmrHarnessWriter *vmr_harness_writer_new (VmrHarness *h, const gchar *qdev_id,
                                          const gchar *expected, guint64 seed);

/*
 * runs a human monitor command line in the QEMU that has the device, and
 * returns its reply text (free with g_free()); fails the test when the
 * command cannot be sent at all
 */
typedef gchar *(*VmrHarnessHmpFunc) (const gchar *command_line, gpointer user_data);

/* as vmr_harness_writer_new(), for a QEMU reached another way (libvirt's) */
VmrHarnessWriter *vmr_harness_writer_new_hmp (const gchar *qdev_id, const gchar *expected,
                                              guint64 seed, VmrHarnessHmpFunc hmp,
                                              gpointer hmp_data);
void vmr_harness_writer_free (VmrHarnessWriter *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrHarnessWriter, vmr_harness_writer_free)

/* writes @count extents; fails the test when QEMU does not confirm one */
void vmr_harness_writer_write (VmrHarnessWriter *w, guint count);

/*
 * Writes one extent; FALSE, with QEMU's answer in @error_text, when QEMU
 * did not write it (the expected image is then left as it was)
 */
gboolean vmr_harness_writer_try_one (VmrHarnessWriter *w, gchar **error_text);

/* the extents written so far */
guint vmr_harness_writer_count (VmrHarnessWriter *w);

/* a VM "vm" with one raw disk "disk0", see vmr_harness_start_vm() */
typedef struct {
    gchar *source;            /* the disk's image, source.raw in the test's directory */
    gchar *expected;          /* what the guest must see, see vmr_harness_expected_path() */
    gchar *dest;              /* dest.raw in the test's directory, not created */
    VmrHarnessWriter *writer; /* writes through disk0, applied to expected */
} VmrHarnessVm;

void vmr_harness_vm_clear (VmrHarnessVm *vm);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VmrHarnessVm, vmr_harness_vm_clear)

/*
 * Creates source.raw of @size bytes with the pattern of @seed, starts QEMU
 * with it as the raw disk "disk0" (a scsi-hd, with vm->writer for guest
 * writes) and attaches it to the daemon as "vm". Fills @vm; clear it with
 * vmr_harness_vm_clear(). Asserts on failure.
 */
void vmr_harness_start_vm (VmrHarness *h, VmrHarnessVm *vm, gsize size, guint64 seed);

/*
 * Migrates disk0 of "vm" to vm->dest at VMR_HARNESS_SLOW_SPEED, with the
 * one extra option @extra (or NULL), and waits until the job copies.
 * Returns the job's id; free with g_free().
 */
gchar *vmr_harness_start_slow_migration (VmrHarness *h, VmrHarnessVm *vm, const gchar *extra);

/* the job object @id, read over the daemon's control socket */
JsonObject *vmr_harness_get_job (VmrHarness *h, const gchar *id);

/*
 * Waits until the daemon took @n more samples of the job @id than it had when called: @n
 * more points of its query-job-series, each after a decision on the job (the domain's
 * sample-interval apart), for at most VMR_HARNESS_JOB_TIMEOUT_S. What a test waits for
 * to see that something does not happen by itself. Returns the @n newest points, oldest
 * first.
 */
JsonArray *vmr_harness_wait_job_samples (VmrHarness *h, const gchar *id, guint n);

/* the points of the job @id's query-job-series, oldest first (a new reference) */
JsonArray *vmr_harness_job_series_points (VmrHarness *h, const gchar *id);

/* asserts that the job was in @state at each of @points (query-job-series points) */
void vmr_harness_assert_samples_state (JsonArray *points, const gchar *state);

/* whether the job @id has a verification that is no longer running */
gboolean vmr_harness_verification_ended (VmrHarness *h, const gchar *id);

/*
 * Asserts that the job @id completed and that its verification failed with
 * one differing range, @offset+@length (bytes).
 */
void vmr_harness_assert_verify_failed_at (VmrHarness *h, const gchar *id, gint64 offset,
                                          gint64 length);

/*
 * Polls the job until it is in @state, for at most @timeout_s seconds.
 * Fails at once when the job ends in another state, or moved past @state.
 * Returns the job object.
 */
JsonObject *vmr_harness_wait_job (VmrHarness *h, const gchar *id, const gchar *state,
                                  guint timeout_s);

/* the only entry of query-block-jobs on the test monitor; asserts there is one */
JsonObject *vmr_harness_get_block_job (VmrHarness *h);

/*
 * QEMU's block job named @id (the daemon names them after its jobs) on the
 * test monitor, a new reference, or NULL when there is none
 */
JsonObject *vmr_harness_find_block_job (VmrHarness *h, const gchar *id);

/* asserts that query-block-jobs is empty */
void vmr_harness_assert_no_block_jobs (VmrHarness *h);

/*
 * The file a block node's @file names: the path of the file the daemon
 * passed in the fd set "/dev/fdset/N" (QEMU's query-fdsets, the opaque the
 * daemon gave it), else @file as it is. Fails the test for a fd set that
 * passes no file of the daemon. Free with g_free().
 */
gchar *vmr_harness_node_file (VmrHarness *h, const gchar *file);

/*
 * The fd sets in which the daemon passed a file to QEMU (query-fdsets, the
 * opaque "virt-mirror PATH" it gives them): fd set id (a gint64 *) -> PATH
 */
GHashTable *vmr_harness_daemon_fdsets (VmrHarness *h);

/* asserts that QEMU holds no fd set in which the daemon passed @path */
void vmr_harness_assert_no_fdset (VmrHarness *h, const gchar *path);

/*
 * A directory (in the test's directory, a new string) with a qemu-img that,
 * each time it runs, moves @dest away to "@dest.moved" when it exists and
 * puts a symbolic link to @victim in its place, then runs the real
 * qemu-img with its arguments: a daemon that finds it first in its PATH
 * meets a destination swapped at the moment it formats it
 */
gchar *vmr_harness_swapping_qemu_img (VmrHarness *h, const gchar *dest, const gchar *victim);

/*
 * Waits until the job @id has failed, and asserts that its reason is one
 * line that says @reason and that its record says failed
 */
void vmr_harness_assert_failed_with (VmrHarness *h, const gchar *id, const gchar *reason);

/* asserts that the device @qdev_id reads and writes @path (query-block) */
void vmr_harness_assert_disk_on (VmrHarness *h, const gchar *qdev_id, const gchar *path);

/* every block node of QEMU, query-named-block-nodes with flat=true (an array) */
JsonNode *vmr_harness_query_nodes (VmrHarness *h);

/* asserts that no block node has @path open (query-named-block-nodes) */
void vmr_harness_assert_node_released (VmrHarness *h, const gchar *path);

/* TRUE when the guest-visible bytes of @path in @format equal @expected */
gboolean vmr_harness_image_equals (const gchar *path, const gchar *format, const gchar *expected,
                                   GError **error);

/* asserts that the guest-visible bytes of @path in @format equal @expected */
void vmr_harness_assert_image_equals (const gchar *path, const gchar *format,
                                      const gchar *expected);

/*
 * Where the guest's byte @offset of the image @path in @format lies in the
 * file: the same for raw; for qcow2, through its L1 and L2 tables (QEMU must
 * have flushed them, as a mirror does when it reaches sync). Asserts that
 * the cluster is allocated.
 */
goffset vmr_harness_host_offset (const gchar *path, const gchar *format, goffset offset);

/*
 * Writes the bitwise complement of @expected's bytes [@offset, +@length)
 * into @path at @host_offset, behind QEMU's back, and syncs it. Asserts.
 */
void vmr_harness_flip_bytes (const gchar *path, const gchar *expected, goffset offset,
                             goffset host_offset, gsize length);

/* asserts that bytes @offset to @offset + @length of the raw files @path and @expected are equal */
void vmr_harness_assert_range_equals (const gchar *path, const gchar *expected, guint64 offset,
                                      guint64 length);

/* asserts that the job record of @id in the state dir says @state */
void vmr_harness_assert_job_record (VmrHarness *h, const gchar *id, const gchar *state);

/*
 * After a completed migration: the device uses @dest, the old source node
 * is released, the job record says completed; then quits QEMU and checks
 * that @dest (in @dest_format) holds the bytes of @expected.
 */
void vmr_harness_assert_migrated (VmrHarness *h, const gchar *job_id, const gchar *qdev_id,
                                  const gchar *source, const gchar *dest, const gchar *dest_format,
                                  const gchar *expected);

/*
 * The VM stayed on its source: the device uses @source, no block job is
 * left; then quits QEMU and checks that @source still holds @expected.
 */
void vmr_harness_assert_stays_on_source (VmrHarness *h, const gchar *qdev_id, const gchar *source,
                                         const gchar *source_format, const gchar *expected);

/*
 * Runs a job command (pause, resume, set-speed, pivot, ...) as
 * `COMMAND ID [ARG] --json` (@arg may be NULL); asserts it succeeds and
 * prints the job @id, and returns that job object.
 */
JsonObject *vmr_harness_job_command (VmrHarness *h, const gchar *command, const gchar *id,
                                     const gchar *arg);

/*
 * Polls the job until the daemon adopted it (no longer orphaned, see
 * vmr_json_job_orphaned()) once its domain is back, for at most
 * VMR_HARNESS_JOB_TIMEOUT_S. Returns the job object.
 */
JsonObject *vmr_harness_wait_adopted (VmrHarness *h, const gchar *id);

/* asserts that `version` and `jobs` still succeed */
void vmr_harness_assert_daemon_serving (VmrHarness *h);

/* the number of jobs the daemon knows (`jobs --json`) */
guint vmr_harness_count_jobs (VmrHarness *h);

/*
 * polls until the daemon knows at least @n jobs (a CLI in the background
 * submitted them), for at most VMR_HARNESS_JOB_TIMEOUT_S
 */
void vmr_harness_wait_job_count (VmrHarness *h, guint n);

/* the lines of @text that have @needle */
guint vmr_harness_count_lines (const gchar *text, const gchar *needle);

/* a client's connection to the UNIX socket @path, with 30 s timeouts; asserts */
GSocket *vmr_harness_connect_unix (const gchar *path);

/*
 * The next line @socket brings, without its newline; @buf keeps what came
 * after it for the next call. NULL at the end of the stream (or after 30 s).
 */
gchar *vmr_harness_socket_line (GSocket *socket, GString *buf);

/*
 * A UNIX socket in the test's directory that accepts connections (kernel
 * backlog) but never sends anything. Returns its path.
 */
gchar *vmr_harness_silent_listener (VmrHarness *h);

/*
 * A directory that root cannot create files in; NULL (and the test skipped)
 * when this machine offers none. Free with g_free().
 */
gchar *vmr_harness_unwritable_dir (VmrHarness *h);

/*
 * Mounts a tmpfs of @size bytes on the new directory @name in the test's
 * directory (one per test); teardown, or the crash handler, unmounts it.
 * Returns its absolute path, or NULL with the test skipped (a failure under
 * REQUIRE_INTEGRATION=1) when this machine does not let us mount.
 */
gchar *vmr_harness_mount_tmpfs (VmrHarness *h, const gchar *name, gsize size);

/* unmounts the tmpfs of vmr_harness_mount_tmpfs() before teardown; asserts success */
void vmr_harness_unmount_tmpfs (VmrHarness *h);

/*
 * Another QEMU beside the fixture's own, for tests of several domains: a
 * VmrHarness that shares @h's directory and daemon socket and has its own
 * two monitors, named after @name. Start its QEMU with
 * vmr_harness_start_qemu(), attach it with vmr_harness_attach() and check it
 * with the functions that use the test monitor. It has no daemon or control
 * connection of its own: query jobs through @h. vmr_harness_peer_free()
 * kills a QEMU still running; the crash handler kills it on a failed test.
 */
VmrHarness *vmr_harness_peer_new (VmrHarness *h, const gchar *name);
void vmr_harness_peer_free (VmrHarness *peer);

/* ---- the test guest (tests/guest) ---- */

/* what the guest runs: the vmr.* options of its kernel command line */
typedef struct {
    const gchar *job;  /* "load", "verify" or "idle" */
    guint iops;        /* vmr.iops: the rate fio aims at, 0 = unlimited */
    guint runtime_s;   /* vmr.runtime: seconds of I/O */
    const gchar *rw;   /* vmr.rw for "load", NULL for the guest's default (randrw) */
    const gchar *size; /* vmr.size, NULL for the whole disk */
    const gchar *then; /* vmr.then: "idle" keeps the guest up after its job, NULL powers it off */
} VmrHarnessGuestJob;

/* boot, from QEMU's start to VMR-READY, on a loaded host */
#define VMR_HARNESS_GUEST_BOOT_TIMEOUT_S 90

/*
 * Finds the guest's kernel and initramfs: runs VMR_GUEST_BUILD --out
 * VMR_GUEST_DIR (once per test program; quick when the guest is up to
 * date), or uses VMR_GUEST_DIR as it is when VMR_GUEST_BUILD is not set.
 * Skips the test (a failure under REQUIRE_INTEGRATION=1) and returns FALSE
 * when there is no guest, with the build's last line of stderr as the
 * reason.
 */
gboolean vmr_harness_require_guest (VmrHarness *h);

/*
 * Starts QEMU (q35, TCG, 256 MiB) booting the guest with @job on @disk as
 * /dev/vda: the disk on its iothread when it names one, with
 * cache.direct=on,aio=native when the image's file system takes O_DIRECT;
 * both monitors as vmr_harness_start_qemu(); the serial console on a pipe
 * read by a thread that stamps every line (h->guest). QEMU is started with
 * -no-shutdown: when the guest powers off after its job, the VM stops and
 * QEMU stays, so that a migration can go on (a guest older than vmr.then
 * powers off whatever @job says). Call
 * vmr_harness_require_guest() first. Asserts on failure.
 */
void vmr_harness_start_guest (VmrHarness *h, const VmrHarnessDisk *disk,
                              const VmrHarnessGuestJob *job);

/*
 * The first console line (since boot) that contains @needle, waiting at
 * most @timeout_s for it. Fails the test, with the end of the console,
 * when it does not come or QEMU closed the console. Free the result with
 * vmr_console_line_free().
 */
VmrConsoleLine *vmr_harness_guest_wait_line (VmrHarness *h, const gchar *needle, guint timeout_s);

/* TRUE when a console line so far contains @needle; does not wait */
gboolean vmr_harness_guest_has_line (VmrHarness *h, const gchar *needle);

/*
 * Waits until the guest printed @count VMR-IOPS lines whose read + write
 * IOPS are at least @min_iops; fails the test after @timeout_s. Returns
 * every VMR-IOPS line so far (an array of VmrGuestIops).
 */
GArray *vmr_harness_guest_wait_iops (VmrHarness *h, guint count, gdouble min_iops, guint timeout_s);

/* every VMR-IOPS line so far, an array of VmrGuestIops */
GArray *vmr_harness_guest_get_iops (VmrHarness *h);

/* the last @n console lines, for messages; free with g_free() */
gchar *vmr_harness_guest_tail (VmrHarness *h, guint n);

/*
 * Members that must be there: as vmr_json_get_*(), but a member that is
 * missing or of another type fails the test
 */
const gchar *vmr_harness_json_string (JsonObject *object, const gchar *member);
gint64 vmr_harness_json_int (JsonObject *object, const gchar *member);
gboolean vmr_harness_json_bool (JsonObject *object, const gchar *member);
JsonObject *vmr_harness_json_object (JsonObject *object, const gchar *member);
JsonArray *vmr_harness_json_array (JsonObject *object, const gchar *member);

/* the member @member is there, and null */
gboolean vmr_harness_json_is_null (JsonObject *object, const gchar *member);

/* element @index of @array, which must be an object */
JsonObject *vmr_harness_json_element (JsonArray *array, guint index);

/* @node's object or array, which it must hold */
JsonObject *vmr_harness_json_node_object (JsonNode *node);
JsonArray *vmr_harness_json_node_array (JsonNode *node);

/* job objects (`jobs --json`, query-job): members that assert their type */

/* the job's state */
const gchar *vmr_json_job_state (JsonObject *job);

/* the job's reason, NULL when it has none (missing or null) */
const gchar *vmr_json_job_reason (JsonObject *job);

/* "orphaned" is there, and true, only while the job waits for its domain */
gboolean vmr_json_job_orphaned (JsonObject *job);

/*
 * The time (microseconds since the epoch) of the first transition of @job
 * to @state in its history; fails the test when there is none
 */
gint64 vmr_json_job_time_of (JsonObject *job, const gchar *state);

/* as vmr_json_job_time_of(), but 0 when there is none (or no history) */
gint64 vmr_json_job_first_time (JsonObject *job, const gchar *state);

G_END_DECLS
