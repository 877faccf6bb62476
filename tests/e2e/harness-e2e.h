/*
 * The e2e test harness: the integration harness (a fresh directory per
 * test, the real daemon and CLI, images checked byte by byte) plus a real
 * libvirtd with the hook under test installed.
 *
 * Per test program, vmr_e2e_run() makes libvirt ready before the first test
 * and puts everything back after the last: it starts virtlogd and libvirtd
 * when they are not running, installs a small wrapper in libvirt's
 * hooks/qemu.d/ that runs the built hook (pointed at the running test's
 * daemon through a config file, and timed), and restarts libvirtd when it
 * was running without it (libvirtd reads its hooks when it starts). At the
 * end the wrapper goes, and libvirtd and virtlogd are stopped when the
 * harness started them, or restarted without the hook when they ran before.
 *
 * Test domains are TCG (type='qemu'), 64 MiB, with no bootable disk: they
 * sit in the firmware. Each is named vmr-e2e-PID-N, destroyed and undefined
 * in teardown, and by a crash handler when an assertion aborts the test.
 */
#pragma once

#include "harness.h"

G_BEGIN_DECLS

#define VMR_E2E_URI "qemu:///system"

typedef struct {
    VmrHarness h;       /* the integration fixture: directory, daemon, CLI */
    GPtrArray *domains; /* names of the domains this test defined, owned */
    gchar *daemon_log;  /* the daemon's stderr, shown when the test fails */
} VmrE2e;

/* calls vmr_harness_init() and installs the crash cleanup */
void vmr_e2e_init (int *argc, char ***argv);

/*
 * Runs the tests. With @libvirt, libvirt is made ready first and put back
 * afterwards (see above); a machine where that fails skips every test that
 * needs it (a failure under REQUIRE_INTEGRATION=1).
 */
int vmr_e2e_run (gboolean libvirt);

/*
 * Fixture: the integration harness's setup without a daemon, the test's
 * directory readable by libvirt's QEMU user, and the hook pointed at the
 * test's daemon socket.
 */
void vmr_e2e_setup (VmrE2e *e, gconstpointer user_data);
void vmr_e2e_teardown (VmrE2e *e, gconstpointer user_data);

#define VMR_E2E_ADD(path, data, func)                                                              \
    g_test_add ((path), VmrE2e, (data), vmr_e2e_setup, (func), vmr_e2e_teardown)

/*
 * Starts the daemon with the test's socket and state dir, --verbose, its
 * stderr in the test's directory, and libvirt at VMR_E2E_URI (or
 * --no-libvirt without @libvirt); waits until it answers. Asserts.
 */
void vmr_e2e_start_daemon (VmrE2e *e, gboolean libvirt);

/*
 * SIGKILLs the daemon (no cleanup of its own: its socket and job records
 * stay) and reaps it; vmr_e2e_start_daemon() starts it again on the same
 * socket, state dir and log. Asserts.
 */
void vmr_e2e_kill_daemon (VmrE2e *e);

/* TRUE when the daemon's log so far has a line containing @needle */
gboolean vmr_e2e_daemon_log_has (VmrE2e *e, const gchar *needle);

/*
 * one disk of a test domain, always vda: a scsi-hd on a virtio-scsi
 * controller on QEMU's main loop or on I/O thread 1 (libvirt's alias, and
 * QEMU's device id: VMR_E2E_SCSI_DEVICE), a device that
 * vmr_e2e_writer_new() can write through as the guest does; or, with a
 * queue on each of two I/O threads, a virtio-blk
 */
typedef struct {
    const gchar *path;   /* absolute path of the image */
    const gchar *format; /* "raw" or "qcow2" */
    guint iothreads;     /* 0: QEMU's main loop; 1: I/O thread 1 (its controller's); 2:
                          * two queues, one on I/O thread 1 and one on I/O thread 2 */
    const gchar *driver; /* more attributes of <driver>, e.g. "discard='unmap'"; NULL: none */
} VmrE2eDisk;

#define VMR_E2E_SCSI_DEVICE "scsi0-0-0-0"

/*
 * Guest writes to vda of the running @domain (defined with iothreads 0 or 1),
 * through libvirt (`virsh qemu-monitor-command --hmp`), applied to
 * @expected; see VmrHarnessWriter. Free with vmr_harness_writer_free().
 */
VmrHarnessWriter *vmr_e2e_writer_new (const gchar *domain, const gchar *expected, guint64 seed);

/*
 * Defines a persistent domain with @disk and returns its name (free with
 * g_free()); it is destroyed and undefined in teardown.
 */
gchar *vmr_e2e_define_domain (VmrE2e *e, const VmrE2eDisk *disk);

/* `virsh start NAME`; asserts success and returns how long it took, in µs */
gint64 vmr_e2e_start_domain (VmrE2e *e, const gchar *name);

/* `virsh destroy NAME`; asserts success */
void vmr_e2e_destroy_domain (VmrE2e *e, const gchar *name);

/* runs `virsh -c VMR_E2E_URI` with the NULL-terminated arguments */
VmrCliResult *vmr_e2e_virsh (const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/* as vmr_e2e_virsh(), asserting exit status 0; returns stdout (free with g_free()) */
gchar *vmr_e2e_virsh_ok (const gchar *first_arg, ...) G_GNUC_NULL_TERMINATED;

/* the source `virsh domblklist` names for @target, live or (@inactive) persistent */
gchar *vmr_e2e_domblk_source (const gchar *domain, const gchar *target, gboolean inactive);

/* one run of the hook, as the wrapper recorded it */
typedef struct {
    gchar *domain;
    gchar *op;
    gchar *subop;
    gint status;       /* the hook's exit status */
    gint64 start_us;   /* wall clock when libvirtd ran it */
    gint64 elapsed_us; /* how long it ran */
} VmrE2eHookRun;

void vmr_e2e_hook_run_free (VmrE2eHookRun *run);

/* the hook runs for @domain so far (an array of VmrE2eHookRun *, oldest first) */
GPtrArray *vmr_e2e_hook_runs (const gchar *domain);

/*
 * What starting and reaping a process that does nothing costs on this
 * machine now, in µs: the median of three runs of the hook with no
 * arguments (a usage line, exit 0), measured once per test program. Time
 * limits on the hook add it to the hook's own budget, so that they hold on a
 * loaded machine.
 */
gint64 vmr_e2e_hook_spawn_cost (void);

/* points the installed hook at @socket (a path that need not exist) */
void vmr_e2e_point_hook (const gchar *socket);

/* stops libvirtd and starts it again (its domains keep running); asserts */
void vmr_e2e_restart_libvirtd (void);

/* stops libvirtd, or starts it and waits until it answers; assert */
void vmr_e2e_stop_libvirtd (void);
void vmr_e2e_start_libvirtd (void);

/*
 * The domain @name in the daemon's query-domains, or NULL; waits for it to
 * appear (@present) or to go for at most @timeout_ms. Returns the domain
 * object when present.
 */
JsonObject *vmr_e2e_wait_domain (VmrE2e *e, const gchar *name, gboolean present, guint timeout_ms);

G_END_DECLS
