/*
 * A backend with no hypervisor behind it, for the engine's unit tests. The
 * test sets the domain's disks, says how each kind of call is answered (at
 * once, held until the test lets it go, or failed) and emits the events
 * itself, so that orders a real QEMU cannot be made to show on demand can be
 * forced: READY before the reply that started the copy, a job that fails
 * while a pause is on its way, a connection lost mid-copy. Every call the
 * engine makes is kept in a log the test reads.
 *
 * Like a real backend it creates the destination of a copy that asks for
 * it, and removes that file again when the start fails, when a copy ends
 * other than completed, and when an adopted copy turns out to be gone.
 */
#pragma once

#include "backend.h"

G_BEGIN_DECLS

#define FAKE_TYPE_BACKEND (fake_backend_get_type ())
G_DECLARE_FINAL_TYPE (FakeBackend, fake_backend, FAKE, BACKEND, VmrBackend)

/* one call the engine made */
typedef struct {
    /* "query_disks", "start_copy", "query_progress", "query_load", "adopt_copy",
     * "close", or a command: "pause", "resume", "cancel", "pivot", "set_speed",
     * "set_copy_mode_active" */
    gchar name[32];
    gchar job_id[32]; /* "" for the calls about the whole domain */
    guint64 speed;    /* start_copy: the job's speed; set_speed: the new one */
} FakeCall;

typedef enum {
    FAKE_REPLY_AT_ONCE, /* succeeds, in the next main-loop iteration */
    FAKE_REPLY_HOLD,    /* waits for fake_backend_release() or fake_backend_fail() */
    FAKE_REPLY_FAIL,    /* fails at once with the message given */
} FakeReplyMode;

/* the name of @command in the log: "set_speed" */
const gchar *fake_backend_command_name (VmrBackendCommand command);

/* the command called @name in the log; aborts on a name that is none */
VmrBackendCommand fake_backend_command_from_name (const gchar *name);

/* a backend of kind @kind ("fake" when NULL) with no disks */
FakeBackend *fake_backend_new (const gchar *kind);

/* adds a disk: qdev id @id, node "@id-node", image @path of @size bytes, raw */
void fake_backend_add_disk (FakeBackend *self, const gchar *id, const gchar *path, guint64 size,
                            const gchar *iothread);

/* whether the backend says it follows its domain's life, as libvirt does */
void fake_backend_set_follows_domain (FakeBackend *self, gboolean follows);

/*
 * How the calls named @name are answered from now on; @error_message is
 * the message of FAKE_REPLY_FAIL (VMR_ERROR_GENERIC, as QEMU's errors).
 */
void fake_backend_set_reply (FakeBackend *self, const gchar *name, FakeReplyMode mode,
                             const gchar *error_message);

/*
 * Whether a successful cancel or pivot is followed by the "job-finished"
 * QEMU would send (cancelled, completed), as it is by default.
 */
void fake_backend_set_auto_finish (FakeBackend *self, gboolean auto_finish);

/*
 * Completes the oldest held call named @name (of job @job_id, or any job
 * when NULL) with success, or with @error. FALSE when no such call is held.
 */
gboolean fake_backend_release (FakeBackend *self, const gchar *name, const gchar *job_id);
gboolean fake_backend_fail (FakeBackend *self, const gchar *name, const gchar *job_id,
                            const GError *error);

/* how many calls are held */
guint fake_backend_count_held (FakeBackend *self);

/* emits "job-ready" */
void fake_backend_ready (FakeBackend *self, const gchar *job_id);

/*
 * Emits "job-finished", having cleaned up first as a real backend does: a
 * destination the copy created is removed unless it completed. A job the
 * backend never started is emitted all the same.
 */
void fake_backend_finish (FakeBackend *self, const gchar *job_id, VmrBackendOutcome outcome,
                          const gchar *reason);

/* emits "disconnected" with VMR_ERROR_DISCONNECTED and @message; later calls fail */
void fake_backend_disconnect (FakeBackend *self, const gchar *message);

/* what query_progress reports for @job_id from now on */
void fake_backend_set_progress (FakeBackend *self, const VmrBackendProgress *progress);

/* what query_load reports for the disk @disk_id from now on */
void fake_backend_set_load (FakeBackend *self, const gchar *disk_id, const VmrIoCounters *counters);

/* called at each query_load, before the load is read: a guest simulated to the moment QEMU is asked
 */
typedef void (*FakeLoadFunc) (FakeBackend *self, gpointer user_data);
void fake_backend_set_load_func (FakeBackend *self, FakeLoadFunc func, gpointer user_data);

/*
 * and on top of it, reads at @per_second from now on, counted by the clock
 * at each query: a guest that stays busy however seldom the test looks
 */
void fake_backend_set_read_rate (FakeBackend *self, const gchar *disk_id, gdouble per_second);

/*
 * progress reports each job's speed as the last start_copy or set_speed
 * gave it, as QEMU does, whatever fake_backend_set_progress() said
 */
void fake_backend_report_speed_as_set (FakeBackend *self);

/* what adopt_copy finds of @job_id; a job without one is gone */
void fake_backend_set_adoption (FakeBackend *self, const gchar *job_id,
                                const VmrBackendAdoption *adoption);

/* every call so far, oldest first (of FakeCall *, owned by @self) */
GPtrArray *fake_backend_get_log (FakeBackend *self);

/*
 * The calls since the last take, as "start_copy vmr-1 0; pause vmr-1"
 * (a speed follows the job of start_copy and set_speed), leaving the
 * queries out unless @with_queries; "" when there were none.
 */
gchar *fake_backend_take_log (FakeBackend *self, gboolean with_queries);

/*
 * The daemon is killed: from now on nothing the backend does cleans up
 * after a copy (its calls still end, for the engine to be finalized)
 */
void fake_backend_crash (FakeBackend *self);

/* whether close was called */
gboolean fake_backend_is_closed (FakeBackend *self);

G_END_DECLS
