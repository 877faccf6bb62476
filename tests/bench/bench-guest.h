/*
 * The test guest (tests/guest) for the benchmarks: found or built, booted
 * under TCG with its disk on an iothread and its load on the kernel command
 * line, its console read with arrival times, waited on while the main loop
 * carries the QMP traffic; and a migration of its disk through virt-mirrord
 * with a pivot by hand and the byte check of the destination.
 */
#pragma once

#include <gio/gio.h>

#include "bench-blockstats.h"
#include "bench-process.h"
#include "guest-console.h"
#include "qmp-client.h"
#include "vmr-json.h"

G_BEGIN_DECLS

/* the guest's load goes on until the bench quits QEMU */
#define VMR_BENCH_GUEST_RUNTIME_S 3600
/* a QMP query of the bench's own, or a stop or cont after a guest went silent, at most this long */
#define VMR_BENCH_QUERY_TIMEOUT_MS 10000

typedef struct {
    /* set by the bench */
    const gchar *qemu_path;
    const gboolean *interrupted;
    guint start_timeout_s;
    guint stop_timeout_s;
    guint job_timeout_s;
    /* set by vmr_bench_guest_make_dirs () */
    gchar *run_dir;                 /* sockets, logs, the daemon's states; QEMU's working dir */
    gchar *image_dir;               /* the images */
    gchar *control_socket;          /* the daemon's */
    gchar *qemu_monitor;            /* the daemon's QMP socket of the guest */
    gchar *bench_monitor;           /* the bench's own QMP socket of the guest */
    VmrBenchDaemonSpec daemon_spec; /* borrows the paths above */
    /* set by vmr_bench_guest_find () */
    gchar *kernel;
    gchar *initrd;
    /* the running guest */
    GSubprocess *qemu;
    VmrQmpClient *qemu_watch;
    VmrGuestConsole *console;
    gchar *qemu_version;            /* of the first guest */
    gboolean direct;                /* its disk opened with O_DIRECT */
    VmrBenchBlockstats *blockstats; /* QEMU's view of its disk, sampled each second */
    /* the running job, from the daemon's events (vmr_bench_guest_watch_jobs ()) */
    gchar *job_id;
    gint64 job_synced_mono; /* when it reached `synced`, 0 = not yet */
    gint64 job_end_mono;    /* when its final state arrived, 0 = not yet */
    gchar *job_final;       /* that state */
} VmrBenchGuest;

/*
 * Makes the bench's directories (vmr_bench_make_dirs ()) and the paths in
 * them, and the spec of a daemon @daemon_path that answers within
 * @timeout_s.
 */
gboolean vmr_bench_guest_make_dirs (VmrBenchGuest *self, const gchar *daemon_path,
                                    const gchar *image_parent, guint timeout_s, GError **error);

/*
 * Stops the guest, removes the directories (kept, and named on stderr, when
 * VMR_BENCH_KEEP_DIR is set) and frees what the struct owns; the struct
 * itself is the caller's.
 */
void vmr_bench_guest_clear (VmrBenchGuest *self);

/*
 * Finds the test guest: in @guest_opt, else $VMR_GUEST_DIR, else the
 * build's; (re)builds it there first when the build script is there
 * ($VMR_GUEST_BUILD, else the source tree's). Sets the kernel and initrd;
 * FALSE with @error set when there is no guest.
 */
gboolean vmr_bench_guest_find (VmrBenchGuest *self, const gchar *guest_opt, GError **error);

/* the --guest option of the benches that boot the test guest */
#define VMR_BENCH_OPTION_GUEST(guest_opt)                                                          \
    {                                                                                              \
        "guest", 'g', 0, G_OPTION_ARG_FILENAME, (guest_opt),                                       \
            "The test guest's directory (env VMR_GUEST_DIR; built there if needed)", "DIR"         \
    }

/* the line on QEMU and the host under the figures: @load_at_start, and the load now */
void vmr_bench_guest_print_host (const VmrBenchGuest *self, const gchar *load_at_start);

/*
 * Boots the guest on @image (a file, or an export "nbd+unix:///EXPORT?socket=PATH") with
 * "vmr.job=load ... @load_args" (e.g. "vmr.iops=1400") on its command line, logs named after
 * @run_number, and connects the bench's monitor.
 */
gboolean vmr_bench_guest_start (VmrBenchGuest *self, const gchar *image, const gchar *load_args,
                                guint run_number, GError **error);

/*
 * Attaches the running guest to the daemon on @control as domain "bench",
 * waits for its boot and, when @wait_load, for its first VMR-IOPS line, then
 * lets the load settle for @settle_s seconds (fio's first seconds are not
 * steady).
 */
gboolean vmr_bench_guest_attach_settle (VmrBenchGuest *self, VmrQmpClient *control,
                                        gboolean wait_load, guint settle_s, GError **error);

/* quits QEMU (killed when it does not exit) and drops its console */
void vmr_bench_guest_stop (VmrBenchGuest *self);

/*
 * Iterates the main loop until a console line at @from or later holds
 * @needle, or @deadline_mono. Returns the line's index, -1 with @error set
 * otherwise.
 */
gint vmr_bench_guest_wait_line (VmrBenchGuest *self, const gchar *needle, guint from,
                                gint64 deadline_mono, GError **error);

/* iterates the main loop for @seconds, or until the guest stops; FALSE then */
gboolean vmr_bench_guest_sleep (VmrBenchGuest *self, gdouble seconds, GError **error);

/* follows the job states the daemon announces on @control (connected with @self as data) */
void vmr_bench_guest_watch_jobs (VmrBenchGuest *self, VmrQmpClient *control);

/* forgets the last job, before the next `migrate` */
void vmr_bench_guest_forget_job (VmrBenchGuest *self);

/* the times of one migration, monotonic microseconds */
typedef struct {
    gint64 start_mono;   /* `migrate` sent */
    gint64 synced_mono;  /* `synced` arrived: the end of the copy with the guest running */
    gdouble migration_s; /* `migrate` to `synced`, plus `job-pivot` to `completed` */
    gdouble paused_s;    /* the guest paused: the pivot and the byte check */
} VmrBenchMigration;

/*
 * What QEMU says of a guest that reported nothing, for an error message:
 * its run state, and whether its disks did any I/O over 2 s (a guest
 * whose I/O goes on but whose reports stopped, or one whose I/O stopped)
 */
gchar *vmr_bench_guest_describe (VmrBenchGuest *self);

/*
 * QMP stop and cont once more, each given VMR_BENCH_QUERY_TIMEOUT_MS: a stop that
 * does not return is QEMU draining an I/O that never completes
 */
gboolean vmr_bench_guest_stop_cont (VmrBenchGuest *self, GError **error);

/*
 * A busy guest that went silent: describes it (QEMU's view, the console's
 * last lines) in *@out_what, tries a second stop and cont, and sets
 * *@out_resumed when its I/O resumed in the next 3 s. FALSE with @error
 * only when the main loop could not run.
 */
gboolean vmr_bench_guest_revive (VmrBenchGuest *self, gboolean *out_resumed, gchar **out_what,
                                 GError **error);

/*
 * Migrates disk0 of domain "bench" to @dest (the daemon is handed @dest_uri
 * instead when it is not NULL: the export that serves @dest) with a pivot by hand: the copy
 * while the guest runs, then, at `synced`, the guest paused, the pivot, the
 * byte check of @dest against @source (@disk_size bytes) while both are at
 * rest, and the guest resumed. Leaves the job's record in *@out_job (also
 * when the job failed, when it could be read). A copy that reached no
 * `synced` within job_timeout_s is left running, with VMR_ERROR_TIMEOUT.
 */
gboolean vmr_bench_guest_migrate (VmrBenchGuest *self, VmrQmpClient *control, const gchar *source,
                                  const gchar *dest, const gchar *dest_uri, guint64 disk_size,
                                  VmrBenchMigration *out, JsonObject **out_job, GError **error);

G_END_DECLS
