/*
 * Child processes for the benchmarks: each one dies with the bench
 * (PR_SET_PDEATHSIG), is killed by its own pid, and is waited for while the
 * main loop keeps carrying the QMP traffic.
 */
#pragma once

#include <gio/gio.h>

#include "qmp-client.h"
#include "vmr-json.h"

G_BEGIN_DECLS

/* the virt-mirrord a bench runs unless told otherwise: meson passes the one built with it */
#ifndef VMR_BENCH_DAEMON
#define VMR_BENCH_DAEMON "virt-mirrord"
#endif

/* how often a wait wakes up to look at its deadline */
#define VMR_BENCH_TICK_MS 50

/*
 * A timer on the default main context that fires every VMR_BENCH_TICK_MS,
 * so that a blocking g_main_context_iteration() returns in time to check a
 * deadline. Freeing it removes the timer.
 */
typedef struct _VmrBenchTick VmrBenchTick;

VmrBenchTick *vmr_bench_tick_new (void);
void vmr_bench_tick_free (VmrBenchTick *tick);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrBenchTick, vmr_bench_tick_free)

/*
 * Starts @argv in @cwd with stdout and stderr appended to @log_path.
 * Returns the process, or NULL with @error set.
 */
GSubprocess *vmr_bench_spawn (const gchar *const *argv, const gchar *cwd, const gchar *log_path,
                              GError **error);

/*
 * Waits until the server @proc (nbdkit) has created its UNIX socket
 * @socket, iterating the main loop, until @deadline_mono; FALSE with
 * @error (the last lines of @log_path in it) when it exited or did not.
 */
gboolean vmr_bench_wait_listening (GSubprocess *proc, const gchar *socket, const gchar *log_path,
                                   gint64 deadline_mono, GError **error);

/* TRUE while @proc has not exited */
gboolean vmr_bench_is_running (GSubprocess *proc);

/* iterates the default main context until @proc exited; FALSE after @timeout_s */
gboolean vmr_bench_wait_exit (GSubprocess *proc, guint timeout_s);

/*
 * Iterates the default main context until @proc exits, at most @timeout_s
 * or until *@interrupted; then kills it. Sets *@end_mono (may be NULL) to
 * when the exit was seen. TRUE when it exited with status 0; @what names
 * it in errors.
 */
gboolean vmr_bench_wait_process (GSubprocess *proc, guint timeout_s, const gboolean *interrupted,
                                 const gchar *what, gint64 *end_mono, GError **error);

/*
 * Iterates the default main context until *@stamp is set (by a callback),
 * for at most @timeout_s, while @qemu (nullable) runs and *@interrupted is
 * FALSE. @what names the wait in errors.
 */
gboolean vmr_bench_wait_stamp (const gint64 *stamp, GSubprocess *qemu, const gboolean *interrupted,
                               guint timeout_s, const gchar *what, GError **error);

/* the last @lines lines of @path, for an error message */
gchar *vmr_bench_log_tail (const gchar *path, guint lines);

/* adds what a process printed, @output, to the message of @error */
void vmr_bench_append_output (GError **error, const gchar *output);

/*
 * The process's user + system CPU time in ms, -1 when it cannot be read:
 * its CPU-time clock (nanoseconds, every thread), or else utime + stime of
 * /proc/PID/stat, which come in clock ticks (10 ms).
 */
gdouble vmr_bench_cpu_ms (GSubprocess *proc);

/* the process's resident size in MiB, 0 when it cannot be read */
gdouble vmr_bench_rss_mib (GSubprocess *proc);

/* SIGKILL by pid, reap, and clear *@proc; nothing when it is NULL */
void vmr_bench_kill (GSubprocess **proc);

/*
 * Connects to the QMP socket @path once @proc listens on it, for at most
 * @timeout_s. @what names @proc in errors. Returns a ready client.
 */
VmrQmpClient *vmr_bench_connect (GSubprocess *proc, const gchar *path, const gchar *what,
                                 guint timeout_s, GError **error);

/* how a bench starts virt-mirrord, run after run: never with libvirt */
typedef struct {
    const gchar *daemon_path;    /* the virt-mirrord to run */
    const gchar *run_dir;        /* its working directory, and where its state goes */
    const gchar *control_socket; /* --socket */
    const gchar *log_path;       /* its stdout and stderr; NULL: in run_dir */
    gboolean verbose;            /* --verbose */
    guint timeout_s;             /* how long it may take to answer */
} VmrBenchDaemonSpec;

/*
 * Starts virt-mirrord as @spec says, with the policy file @policy_path
 * (nullable), for run @run_number of the bench (0: the only one): its state
 * in run_dir/state-N ("state"), its output, unless @spec names a log, in
 * run_dir/virt-mirrord-N.log ("virt-mirrord.log"). Waits until it answers
 * query-version on its control socket. Returns the process; *@out_control
 * (may be NULL: then it is closed) gets the control connection, *@out_version
 * (may be NULL) the daemon's version or NULL. NULL with @error set, naming the
 * log, when it did not start or answer; a process that started is killed then.
 */
GSubprocess *vmr_bench_start_daemon (const VmrBenchDaemonSpec *spec, const gchar *policy_path,
                                     guint run_number, VmrQmpClient **out_control,
                                     gchar **out_version, GError **error);

/*
 * SIGTERM to *@daemon, so that it removes its socket, then SIGKILL when it
 * has not exited within @timeout_s; clears *@daemon. Nothing when it is NULL.
 */
void vmr_bench_stop_daemon (GSubprocess **daemon, guint timeout_s);

/* the end of the daemon's job on one domain, as its JOB_STATE_CHANGED events tell */
typedef struct {
    gchar *domain;     /* the domain followed, NULL: none */
    gint64 final_mono; /* when the job's final state arrived, 0 = not yet */
    gchar *error;      /* why it did not complete, NULL when it did or has not ended */
} VmrBenchJobEnd;

/*
 * The daemon of a bench that copies disks: vmr_bench_start_daemon() without
 * a policy, with --verbose and its output in @log_path when that is set
 * (else in @run_dir), and the end of each of its jobs followed into
 * @job_end (vmr_bench_job_end_watch()).
 */
GSubprocess *vmr_bench_start_copy_daemon (const gchar *daemon_path, const gchar *run_dir,
                                          const gchar *control_socket, const gchar *log_path,
                                          guint timeout_s, VmrBenchJobEnd *job_end,
                                          VmrQmpClient **out_control, gchar **out_version,
                                          GError **error);

/*
 * @command with @args (nullable) on the daemon's control socket: the
 * reply's object, or NULL with @error set (prefixed with @command).
 */
JsonObject *vmr_bench_control_call (VmrQmpClient *control, const gchar *command, JsonObject *args,
                                    GError **error);

/* follows the events of @control into @self (connected with @self as data) */
void vmr_bench_job_end_watch (VmrBenchJobEnd *self, VmrQmpClient *control);

/* forgets the last job, and follows the next one on @domain (nullable) */
void vmr_bench_job_end_follow (VmrBenchJobEnd *self, const gchar *domain);

/*
 * Iterates the default main context until the followed job ended, as
 * vmr_bench_wait_stamp() does; FALSE with @error set also when it did not
 * complete.
 */
gboolean vmr_bench_job_end_wait (VmrBenchJobEnd *self, GSubprocess *qemu,
                                 const gboolean *interrupted, guint timeout_s, GError **error);

/*
 * Starts a paused QEMU (@qemu_path, TCG, -nodefaults) with the raw image
 * @image as the virtio-blk disk "disk0" (node "d0" on "f0"), a QMP monitor
 * on each of @monitors (NULL-terminated), in @run_dir, its output in
 * @log_path. NULL with @error set.
 */
GSubprocess *vmr_bench_start_paused_qemu (const gchar *qemu_path, const gchar *run_dir,
                                          const gchar *log_path, const gchar *image,
                                          const gchar *const *monitors, GError **error);

/*
 * "quit" on *@watch, so that QEMU flushes and closes its images, and waits
 * up to @timeout_s for it to exit with status 0; clears both (the handlers
 * connected with @handler_data dropped). FALSE with @error set otherwise.
 */
gboolean vmr_bench_quit_qemu (GSubprocess **qemu, VmrQmpClient **watch, gpointer handler_data,
                              guint timeout_s, GError **error);

/* QEMU's version from the greeting of @client, "MAJOR.MINOR.MICRO", or NULL */
gchar *vmr_bench_qemu_version (VmrQmpClient *client);

/* drops the handlers connected with @handler_data, closes and clears *@client */
void vmr_bench_close (VmrQmpClient **client, gpointer handler_data);

/* removes @path and everything below it; warns about what stays */
void vmr_bench_remove_tree (const gchar *path);

/* the 1-minute load average, or "?"; other work on the machine skews the figures */
gchar *vmr_bench_load_average (void);

/*
 * A program or file: option, then environment (@env_name may be NULL), then
 * the built-in default. The children run in the bench's directory, so a
 * relative path is made absolute; a bare name is looked up in PATH.
 */
gchar *vmr_bench_pick_program (const gchar *option, const gchar *env_name, const gchar *fallback);

/*
 * From now on SIGINT, SIGTERM and SIGHUP set *@interrupted (the bench's flag,
 * which must outlive the main loop) instead of ending the bench, so that it
 * can stop its processes and remove its directories.
 */
void vmr_bench_catch_signals (gboolean *interrupted);

/*
 * The options most benches take: where each one's value goes, NULL for an
 * option the bench does not take. --dir (the images' parent directory),
 * --daemon (virt-mirrord), --daemon-log (a verbose daemon's log) and --qemu
 * (the QEMU binary).
 */
typedef struct {
    gchar **dir;
    gchar **daemon;
    gchar **daemon_log;
    gchar **qemu;
} VmrBenchCommonOptions;

/*
 * Parses the command line of the bench @name: its own @entries (up to their
 * NULL entry), then the options of @common; @params and @summary (may be
 * NULL) are for --help. FALSE after one line on stderr.
 */
gboolean vmr_bench_parse_options (const gchar *name, const gchar *params, const gchar *summary,
                                  const GOptionEntry *entries, const VmrBenchCommonOptions *common,
                                  gint *argc, gchar ***argv);

/*
 * Makes the bench's directories: a fresh one in the temporary directory
 * for the sockets (UNIX socket names are limited to 107 bytes), returned in
 * *@out_run_dir, and one for the images, in *@out_image_dir: a fresh one
 * in @image_parent (made absolute), or the run directory itself when
 * @image_parent is NULL. Returns FALSE with @error set, and *@out_run_dir
 * set when only the image directory failed. Free both with g_free().
 */
gboolean vmr_bench_make_dirs (const gchar *image_parent, gchar **out_run_dir, gchar **out_image_dir,
                              GError **error);

/*
 * Removes @image_dir (when it is not @run_dir) and @run_dir, see
 * vmr_bench_remove_tree(); with @keep, says on stderr where they are instead.
 */
void vmr_bench_remove_dirs (const gchar *run_dir, const gchar *image_dir, gboolean keep);

G_END_DECLS
