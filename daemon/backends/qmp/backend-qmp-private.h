/*
 * What the files of the QMP backend share: the backend's instance, the
 * mirror jobs it tracks in QEMU, and the helpers they all use. The files,
 * each calling only those after it:
 *   backend-qmp.c          the object, the connection, QEMU's events, starting a copy
 *   backend-qmp-disks.c    disks, I/O threads, guest load
 *   backend-qmp-commands.c commands on a running copy, progress
 *   backend-qmp-verify.c   the bitmap of a pivot, the verification's transport
 *   backend-qmp-adopt.c    picking up a copy of an earlier run
 *   backend-qmp-track.c    a tracked job and its end in QEMU, the shared helpers
 *   backend-qmp-fdset.c    a destination passed to QEMU by descriptor, fd sets no node uses
 *   qmp-parse.c            what QEMU's replies and events say, no monitor behind
 */
#pragma once

#include "backend-qmp.h"

#include <json-glib/json-glib.h>

#include "destination-handle.h"
#include "qmp-client.h"
#include "qmp-vocab.h"
#include "verifier.h"

G_BEGIN_DECLS
/* what we track of a mirror job of ours inside QEMU */
typedef struct {
    gchar *job_id;
    gchar *dest_node;            /* format node of the destination */
    VmrDestination *destination; /* owned */
    gchar *source_node;          /* released after a pivot */
    gchar *source_file_node;     /* likewise, NULL if none */
    gboolean ready;
    gboolean pivot_requested;
    gboolean cancel_requested;
    gboolean cancelled; /* BLOCK_JOB_CANCELLED seen */
    /* the first BLOCK_JOB_ERROR's request, e.g. "a write to the destination"; NULL before */
    const gchar *io_error;
    gboolean completed; /* BLOCK_JOB_COMPLETED without error seen */
    gchar *error;       /* BLOCK_JOB_COMPLETED's error */
    gboolean finishing;
} MirrorTrack;

struct _VmrBackendQmp {
    VmrBackend parent_instance;

    gchar *monitor_path;
    VmrQmpClient *client;
    GHashTable *tracks;       /* job id -> MirrorTrack *, owned */
    JsonArray *iothreads;     /* the domain's I/O threads as last queried, NULL before */
    GHashTable *iothread_cpu; /* I/O thread id -> IothreadReading *, owned */
    VmrVerifier *verifier;    /* the verifications, one at a time: QEMU has one NBD server */
    /* fd set ids QEMU kept after remove-fd, while its guest was stopped */
    GHashTable *kept_fdsets;
};

/* CPU time of one I/O thread at one moment, for the next reading's difference */
typedef struct {
    gint64 thread_id;
    guint64 ticks;        /* utime + stime, clock ticks */
    gint64 time_us;       /* monotonic */
    gdouble percent;      /* of one CPU since the reading before, when has_percent */
    gboolean has_percent; /* FALSE for a first reading */
} IothreadReading;

/*
 * @backend as the QMP backend, for the methods that live in the files below
 * backend-qmp.c: they are installed on its class only, and VMR_BACKEND_QMP()
 * would call up into backend-qmp.c for its check of the type.
 */
static inline VmrBackendQmp *
vmr_backend_qmp_of (VmrBackend *backend)
{
    return (VmrBackendQmp *) backend;
}

/* ---- backend-qmp-verify.c ---- */

/* starts recording the writes to @job's destination node: called just before job-complete */
void vmr_backend_qmp_mark_pivot (VmrBackendQmp *self, VmrJob *job);

void vmr_backend_qmp_verify_copy_async (VmrBackend *backend, VmrJob *job,
                                        VmrVerification *verification, const gchar *work_dir,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);

gboolean vmr_backend_qmp_verify_copy_finish (VmrBackend *backend, GAsyncResult *res,
                                             GError **error);

/* ---- backend-qmp-track.c ---- */

/* the track of @job's mirror of the node @source_node (and @source_file_node, may be NULL) */
MirrorTrack *vmr_backend_qmp_track_new (VmrJob *job, const gchar *source_node,
                                        const gchar *source_file_node);

void vmr_backend_qmp_track_free (MirrorTrack *track);

/* the callback of a command whose failure only matters for the log; @user_data: what it does, freed
 */
void vmr_backend_qmp_best_effort_cb (GObject *source, GAsyncResult *res, gpointer user_data);

/* blockdev-del of @node, if it exists; never fails */
void vmr_backend_qmp_release_node_async (VmrBackendQmp *self, const gchar *node,
                                         GAsyncReadyCallback callback, gpointer user_data);

/*
 * Closes the destination @dest opened as @node (blockdev-del when
 * @node_added), then deletes the TLS object an NBD export over TLS had and
 * the fd set a file was passed in; never fails. The callback comes once
 * QEMU has answered.
 */
void vmr_backend_qmp_release_destination_async (VmrBackendQmp *self, const VmrDestination *dest,
                                                const gchar *node, gboolean node_added,
                                                GAsyncReadyCallback callback, gpointer user_data);

/* once a tracked mirror has ended in QEMU: dismiss it, release the nodes, report the end */
void vmr_backend_qmp_finish_track (VmrBackendQmp *self, MirrorTrack *track);

/* ---- backend-qmp-fdset.c ---- */

/*
 * Passes the opened destination @handle to QEMU: add-fd of a descriptor of
 * it (O_DIRECT when @direct, as the node that opens it asks) into a new fd
 * set named after the file. The result is the name blockdev-add opens,
 * "/dev/fdset/N" (a new string).
 */
void vmr_backend_qmp_pass_destination_async (VmrBackendQmp *self, VmrDestinationHandle *handle,
                                             gboolean direct, GCancellable *cancellable,
                                             GAsyncReadyCallback callback, gpointer user_data);
gchar *vmr_backend_qmp_pass_destination_finish (GAsyncResult *res, GError **error);

/*
 * Removes the fd sets the daemon passed that no block node was opened from
 * any more (remove-fd); never fails. The callback comes once they are on
 * their way: later commands run after them.
 */
void vmr_backend_qmp_prune_fdsets_async (VmrBackendQmp *self, GAsyncReadyCallback callback,
                                         gpointer user_data);

/*
 * An older QEMU (7.2, Debian 12's; not 10.0) closes the descriptors of a
 * removed fd set only while its guest runs, and only when asked: when an fd set was
 * kept, the removal is sent again once the guest resumes (QMP's RESUME).
 */
void vmr_backend_qmp_fdsets_guest_resumed (VmrBackendQmp *self);

/* ---- the VmrBackend methods that live in the other files ---- */

void vmr_backend_qmp_query_disks_async (VmrBackend *backend, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data);

GPtrArray *vmr_backend_qmp_query_disks_finish (VmrBackend *backend, GAsyncResult *res,
                                               GError **error);

void vmr_backend_qmp_job_command_async (VmrBackend *backend, VmrJob *job, VmrBackendCommand command,
                                        guint64 speed, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data);

gboolean vmr_backend_qmp_job_command_finish (VmrBackend *backend, GAsyncResult *res,
                                             GError **error);

void vmr_backend_qmp_query_progress_async (VmrBackend *backend, GCancellable *cancellable,
                                           GAsyncReadyCallback callback, gpointer user_data);

GPtrArray *vmr_backend_qmp_query_progress_finish (VmrBackend *backend, GAsyncResult *res,
                                                  GError **error);

void vmr_backend_qmp_query_load_async (VmrBackend *backend, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);

GHashTable *vmr_backend_qmp_query_load_finish (VmrBackend *backend, GAsyncResult *res,
                                               GError **error);

void vmr_backend_qmp_query_iothreads_async (VmrBackend *backend, GCancellable *cancellable,
                                            GAsyncReadyCallback callback, gpointer user_data);

GPtrArray *vmr_backend_qmp_query_iothreads_finish (VmrBackend *backend, GAsyncResult *res,
                                                   GError **error);

void vmr_backend_qmp_adopt_copy_async (VmrBackend *backend, VmrJob *job, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);

VmrBackendAdoption *vmr_backend_qmp_adopt_copy_finish (VmrBackend *backend, GAsyncResult *res,
                                                       GError **error);

G_END_DECLS
