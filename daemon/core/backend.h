/*
 * The interface between the daemon's core and one domain's hypervisor
 * connection. The QMP backend talks to a QEMU monitor socket; the libvirt
 * backend talks to libvirtd. The core never sees either protocol.
 */
#pragma once

#include <gio/gio.h>

#include "disk.h"
#include "job.h"
#include "load-history.h"

G_BEGIN_DECLS

#define VMR_TYPE_BACKEND (vmr_backend_get_type ())
G_DECLARE_DERIVABLE_TYPE (VmrBackend, vmr_backend, VMR, BACKEND, GObject)

typedef enum {
    VMR_BACKEND_OUTCOME_COMPLETED, /* pivoted: the VM runs on the destination */
    VMR_BACKEND_OUTCOME_CANCELLED, /* stopped on request: the VM runs on the source */
    VMR_BACKEND_OUTCOME_FAILED,    /* stopped by an error: the VM runs on the source */
} VmrBackendOutcome;

typedef enum {
    VMR_BACKEND_COMMAND_PAUSE,
    VMR_BACKEND_COMMAND_RESUME,
    VMR_BACKEND_COMMAND_CANCEL,
    VMR_BACKEND_COMMAND_PIVOT,
    VMR_BACKEND_COMMAND_SET_SPEED,
    /* background -> write-blocking; QEMU cannot switch back */
    VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE,
} VmrBackendCommand;

/* one copy job as the hypervisor reports it */
typedef struct {
    gchar *job_id;
    guint64 total_bytes;
    guint64 done_bytes;
    guint64 speed;
    gboolean paused;
    gboolean ready;
    gboolean no_space; /* the hypervisor stopped the copy: its destination has no space left */
} VmrBackendProgress;

void vmr_backend_progress_free (VmrBackendProgress *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrBackendProgress, vmr_backend_progress_free)

/* one I/O thread of a domain and the CPU time its host thread has used */
typedef struct {
    gchar *id;           /* the hypervisor's name of the thread, e.g. "iothread1" */
    gint64 thread_id;    /* the host thread, 0 when unknown */
    gboolean has_cpu;    /* FALSE: the thread's CPU time could not be read */
    gdouble cpu_seconds; /* user + system time since the thread started */
} VmrIothreadUsage;

void vmr_iothread_usage_free (VmrIothreadUsage *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrIothreadUsage, vmr_iothread_usage_free)

/* what became of a copy that a previous run of the daemon had started */
typedef enum {
    /* the copy still runs (or waits, in sync) in the hypervisor; the backend
     * follows it again: its events, commands and progress work as for a copy
     * it started itself */
    VMR_BACKEND_ADOPT_RUNNING,
    /* the copy ended while nobody watched; the backend cleans up and emits
     * "job-finished" for it soon, as for a copy it started itself */
    VMR_BACKEND_ADOPT_ENDING,
    /* there is no copy and the disk runs on the destination: it pivoted */
    VMR_BACKEND_ADOPT_ON_DESTINATION,
    /* there is no copy and the disk runs on its source; whatever the copy
     * had set up in the hypervisor is gone (a destination node closed): the
     * engine removes a file it made for the copy */
    VMR_BACKEND_ADOPT_GONE,
} VmrBackendAdoptOutcome;

typedef struct {
    VmrBackendAdoptOutcome outcome;
    /* for VMR_BACKEND_ADOPT_RUNNING */
    gboolean ready;  /* in sync (QEMU READY) */
    gboolean paused; /* paused by a user of the hypervisor's job */
    guint64 speed;   /* bytes/s, 0 = unlimited */
    guint64 total_bytes;
    guint64 done_bytes;
    /* for VMR_BACKEND_ADOPT_GONE: the domain's definition still names the destination,
     * which stays where it is */
    gboolean destination_in_use;
} VmrBackendAdoption;

/*
 * Signals:
 *   "job-ready"    (const gchar *job_id)   the copy is in sync (QEMU READY)
 *   "job-finished" (const gchar *job_id, VmrBackendOutcome outcome, const gchar *reason)
 *                  the job is over and cleaned up in the hypervisor: for
 *                  completed the old source is released, otherwise the
 *                  destination is closed again
 *   "disconnected" (GError *error)          the hypervisor connection is gone
 */
struct _VmrBackendClass {
    GObjectClass parent_class;

    const gchar *(*get_kind) (VmrBackend *self);
    /* TRUE when the backend found the domain itself and follows its life
     * (libvirt): it leaves when the domain stops, never by hand */
    gboolean (*follows_domain) (VmrBackend *self);
    JsonObject *(*describe) (VmrBackend *self);

    void (*query_disks_async) (VmrBackend *self, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
    GPtrArray *(*query_disks_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /* starts the copy of @disk described by @job into its destination: a
     * file or device the engine opened (or made) is job->dest_handle, whose
     * descriptor the hypervisor gets where it can, and whose name is
     * checked (vmr_destination_handle_check_named()) once the hypervisor
     * has it; an export is opened by its URI. On failure the backend has
     * let go of the destination when it answers; it never removes it */
    void (*start_copy_async) (VmrBackend *self, VmrJob *job, const VmrDisk *disk,
                              GCancellable *cancellable, GAsyncReadyCallback callback,
                              gpointer user_data);
    gboolean (*start_copy_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    void (*job_command_async) (VmrBackend *self, VmrJob *job, VmrBackendCommand command,
                               guint64 speed, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
    gboolean (*job_command_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /* a GPtrArray of VmrBackendProgress for the jobs the hypervisor runs */
    void (*query_progress_async) (VmrBackend *self, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data);
    GPtrArray *(*query_progress_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /* guest I/O counters per disk: a GHashTable of disk id -> VmrIoCounters * */
    void (*query_load_async) (VmrBackend *self, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data);
    GHashTable *(*query_load_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /*
     * optional: the domain's I/O threads with their cumulative CPU time, a
     * GPtrArray of VmrIothreadUsage *; NULL when the backend has no typed
     * reading of them
     */
    void (*query_iothreads_async) (VmrBackend *self, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
    GPtrArray *(*query_iothreads_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /*
     * Finds the copy of @job, started by a previous run of the daemon (its
     * record: id, disk, source, destination, format, created_destination,
     * source_node, source_file_node), and follows it again or cleans up
     * after it. Returns a VmrBackendAdoption (free with g_free()).
     */
    void (*adopt_copy_async) (VmrBackend *self, VmrJob *job, GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data);
    VmrBackendAdoption *(*adopt_copy_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    /*
     * Compares the old source of the completed @job (job->source, still on
     * disk) with the disk the guest runs on now, leaving out what the guest
     * wrote after the pivot, and fills in @verification (owned by the
     * caller, alive until the callback) as it goes, on the main loop: the
     * figures while it runs, then the differing ranges. Leaves nothing
     * behind in the hypervisor, on every path. Fails when the comparison
     * cannot be made or finished; differences are no failure. @work_dir is
     * the daemon's own directory for the sockets it needs. NULL: the
     * backend cannot verify (VMR_ERROR_FAILED, saying so).
     */
    void (*verify_copy_async) (VmrBackend *self, VmrJob *job, VmrVerification *verification,
                               const gchar *work_dir, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
    gboolean (*verify_copy_finish) (VmrBackend *self, GAsyncResult *res, GError **error);

    void (*close) (VmrBackend *self);
};

const gchar *vmr_backend_get_kind (VmrBackend *self);
gboolean vmr_backend_follows_domain (VmrBackend *self);
JsonObject *vmr_backend_describe (VmrBackend *self);

void vmr_backend_query_disks_async (VmrBackend *self, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *vmr_backend_query_disks_finish (VmrBackend *self, GAsyncResult *res, GError **error);

void vmr_backend_start_copy_async (VmrBackend *self, VmrJob *job, const VmrDisk *disk,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean vmr_backend_start_copy_finish (VmrBackend *self, GAsyncResult *res, GError **error);

void vmr_backend_job_command_async (VmrBackend *self, VmrJob *job, VmrBackendCommand command,
                                    guint64 speed, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data);
gboolean vmr_backend_job_command_finish (VmrBackend *self, GAsyncResult *res, GError **error);

void vmr_backend_query_progress_async (VmrBackend *self, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *vmr_backend_query_progress_finish (VmrBackend *self, GAsyncResult *res, GError **error);

/*
 * The guest's own I/O counters of each disk, keyed by disk id. They count
 * what the guest device submits, never the copy's traffic.
 */
void vmr_backend_query_load_async (VmrBackend *self, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
GHashTable *vmr_backend_query_load_finish (VmrBackend *self, GAsyncResult *res, GError **error);

/* whether the backend reads its I/O threads' CPU time (it implements query_iothreads) */
gboolean vmr_backend_can_query_iothreads (VmrBackend *self);

/*
 * The domain's I/O threads, each with the CPU time its host thread used
 * since it started: a GPtrArray of VmrIothreadUsage *. Fails with
 * VMR_ERROR_FAILED when the backend cannot read them.
 */
void vmr_backend_query_iothreads_async (VmrBackend *self, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *vmr_backend_query_iothreads_finish (VmrBackend *self, GAsyncResult *res, GError **error);

void vmr_backend_adopt_copy_async (VmrBackend *self, VmrJob *job, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
VmrBackendAdoption *vmr_backend_adopt_copy_finish (VmrBackend *self, GAsyncResult *res,
                                                   GError **error);

/* whether the backend can verify a copy after its pivot (it implements verify_copy) */
gboolean vmr_backend_can_verify (VmrBackend *self);

void vmr_backend_verify_copy_async (VmrBackend *self, VmrJob *job, VmrVerification *verification,
                                    const gchar *work_dir, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data);
gboolean vmr_backend_verify_copy_finish (VmrBackend *self, GAsyncResult *res, GError **error);

void vmr_backend_close (VmrBackend *self);

/* for implementations */
void vmr_backend_emit_job_ready (VmrBackend *self, const gchar *job_id);
void vmr_backend_emit_job_finished (VmrBackend *self, const gchar *job_id,
                                    VmrBackendOutcome outcome, const gchar *reason);
void vmr_backend_emit_disconnected (VmrBackend *self, const GError *error);

G_END_DECLS
