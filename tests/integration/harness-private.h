/*
 * What the harness's own files share: the child processes it starts and
 * the timeouts it applies. Tests use harness.h only.
 */
#pragma once

#include <sys/types.h>

#include "harness.h"

/* a CLI run that takes longer than this is hung */
#define VMR_HARNESS_CLI_TIMEOUT_S 120
/* how long the daemon and QEMU get to start and to stop */
#define VMR_HARNESS_START_TIMEOUT_MS 30000
#define VMR_HARNESS_STOP_TIMEOUT_MS  20000
/* how often a job's state is read while waiting for it */
#define VMR_HARNESS_POLL_INTERVAL_US (100 * 1000)
/* images are written and compared in pieces of this size */
#define VMR_HARNESS_CHUNK_SIZE (1024 * 1024)

/*
 * Spawns @argv in the test's directory; its stdout goes to our stderr unless
 * piped (our stdout is TAP). The pid is kept for the crash handler until
 * vmr_harness_untrack_pid(). Asserts on failure.
 */
/* as vmr_harness_spawn(), with stdout and stderr appended to @log_path (NULL: stderr) */
GSubprocess *vmr_harness_spawn_logged (VmrHarness *h, const gchar *const *argv,
                                       GSubprocessFlags flags, const gchar *log_path,
                                       pid_t *out_pid);
GSubprocess *vmr_harness_spawn (VmrHarness *h, const gchar *const *argv, GSubprocessFlags flags,
                                pid_t *out_pid);

/* forgets @pid once its process has been reaped */
void vmr_harness_untrack_pid (pid_t pid);

/* waits at most @timeout_ms for @proc to exit; FALSE on timeout */
gboolean vmr_harness_wait_exit (GSubprocess *proc, guint timeout_ms);

/* "exit status 1", "killed by signal 9"; free with g_free() */
gchar *vmr_harness_describe_exit (GSubprocess *proc);

/* SIGKILLs *@proc by its @pid, reaps it and clears *@proc */
void vmr_harness_kill_process (GSubprocess **proc, pid_t pid);

/*
 * Adds the two monitors to @argv (QEMU's command line, not NULL-terminated,
 * of g_strdup()ed strings), starts QEMU with @flags and connects h->mon.
 * Asserts on failure.
 */
void vmr_harness_launch_qemu (VmrHarness *h, GPtrArray *argv, GSubprocessFlags flags);

/* @object as one line of JSON, for -blockdev; free with g_free() */
gchar *vmr_harness_json_arg (JsonObject *object);

/* stops the guest's console reader and forgets the guest (teardown) */
void vmr_harness_guest_clear (VmrHarness *h);

/* @text escaped onto one line, for test messages; free with g_free() */
gchar *vmr_harness_one_line (const gchar *text);
