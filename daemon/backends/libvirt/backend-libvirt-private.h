/*
 * What the two halves of the libvirt backend share, not for use outside
 * them: backend-libvirt.c (the object, its tracks and events, on the main
 * loop) and backend-libvirt-calls.c (the GTask thread bodies that call
 * libvirt). The public API is backend-libvirt.h.
 */
#pragma once

#include "backend-libvirt.h"

#include "destination-handle.h"
#include "destination.h"

G_BEGIN_DECLS

/* what we track of a copy of ours that libvirt runs */
typedef struct {
    gchar *job_id;               /* ours, e.g. "vmr-3"; libvirt names its job after the disk */
    gchar *target;               /* the disk, e.g. "vda" */
    gchar *source;               /* the image before the pivot */
    VmrDestination *destination; /* owned */
    gboolean started;            /* virDomainBlockCopy() succeeded */
    gboolean ready;
    gboolean cancel_requested;
    gboolean finishing;
    gboolean adopting; /* a copy of an earlier run, being looked for: its events wait */
    /* the end event (VIR_DOMAIN_BLOCK_JOB_*) that came while the start or the adoption was
     * not answered yet, handled after the answer; -1 = none */
    gint adopt_event;
} CopyTrack;

/*
 * One call into libvirt, run in a GTask thread. It carries copies of what
 * the thread needs, never the backend's own state.
 */
typedef struct {
    VmrLibvirtConnection *connection;
    gchar *uuid;
    gchar *job_id;
    gchar *target;
    gchar *source;
    VmrDestination *destination;  /* owned, shared with the track */
    VmrDestinationHandle *handle; /* the file or device the engine opened for a start, or NULL */
    gboolean query_paused;        /* ask QEMU whether the copy is paused */
    guint64 speed;
    guint64 old_speed;
    guint64 granularity; /* of the mirror, bytes; 0 = libvirt's default */
    guint64 buf_size;    /* the mirror's in flight, bytes; 0 = libvirt's default */
    VmrBackendCommand command;
    gboolean mark_pivot; /* record the guest's writes from the pivot on, to verify it */
    GPtrArray *tracks;   /* copies of the started tracks, for progress and resync */
} Call;

/* what libvirt says of one copy of ours: after a reconnection and at adoption */
typedef struct {
    gchar *job_id;
    gboolean running; /* libvirt still runs the copy */
    gboolean ready;
    GError *error;       /* libvirt could not say whether it runs; running is FALSE */
    gchar *disk_path;    /* what the live definition names for the disk */
    guint64 total_bytes; /* libvirt's end, while running */
    guint64 done_bytes;  /* libvirt's cur, while running */
    guint64 speed;       /* bytes/s, 0 = unlimited, while running */
} CopyProbe;

/* frees @probe with its error */
void vmr_backend_libvirt_copy_probe_free (CopyProbe *probe);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CopyProbe, vmr_backend_libvirt_copy_probe_free)

/*
 * The GTask thread bodies, run by run_call() in backend-libvirt.c; each
 * takes a Call as its task data.
 */

/* returns the domain's disks, a GPtrArray of VmrDisk * */
void vmr_backend_libvirt_query_disks_thread (GTask *task, gpointer source, gpointer task_data,
                                             GCancellable *cancellable);
/* after a pivot: makes the persistent definition name the destination; returns TRUE */
void vmr_backend_libvirt_persist_thread (GTask *task, gpointer source, gpointer task_data,
                                         GCancellable *cancellable);
/* starts the copy with virDomainBlockCopy(); returns TRUE */
void vmr_backend_libvirt_start_copy_thread (GTask *task, gpointer source, gpointer task_data,
                                            GCancellable *cancellable);
/* runs call->command on the running copy; returns TRUE */
void vmr_backend_libvirt_job_command_thread (GTask *task, gpointer source, gpointer task_data,
                                             GCancellable *cancellable);
/* returns the progress of call->tracks, a GPtrArray of VmrBackendProgress * */
void vmr_backend_libvirt_query_progress_thread (GTask *task, gpointer source, gpointer task_data,
                                                GCancellable *cancellable);
/* returns the guest's I/O counters of each disk: target name -> VmrIoCounters * */
void vmr_backend_libvirt_query_load_thread (GTask *task, gpointer source, gpointer task_data,
                                            GCancellable *cancellable);
/* returns where each of call->tracks stands, a GPtrArray of CopyProbe * */
void vmr_backend_libvirt_resync_thread (GTask *task, gpointer source, gpointer task_data,
                                        GCancellable *cancellable);
/* returns what became of an earlier run's copy, a VmrBackendAdoption * */
void vmr_backend_libvirt_adopt_copy_thread (GTask *task, gpointer source, gpointer task_data,
                                            GCancellable *cancellable);

G_END_DECLS
