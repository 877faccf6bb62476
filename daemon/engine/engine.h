/*
 * The daemon's core: the domains it knows, their backends, and the jobs that
 * move their disks. It knows no transport; the control server calls it.
 */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "backend.h"
#include "job.h"

G_BEGIN_DECLS

#define VMR_TYPE_ENGINE (vmr_engine_get_type ())
G_DECLARE_FINAL_TYPE (VmrEngine, vmr_engine, VMR, ENGINE, GObject)

/* one disk of a migrate request and where it goes */
typedef struct {
    const gchar *disk;        /* qdev id or node name */
    const gchar *destination; /* absolute path or NBD URI */
    const gchar *format;      /* NULL: the request's format */
} VmrMigrateTarget;

typedef struct {
    const gchar *domain;
    const gchar *disk;        /* qdev id or node name; unused when @n_targets > 0 */
    const gchar *destination; /* absolute path or NBD URI; unused when @n_targets > 0 */
    /* the disks to move, or none (then @disk and @destination); two or more move as one group */
    const VmrMigrateTarget *targets;
    guint n_targets;
    const gchar *format; /* "raw" or "qcow2"; NULL = raw */
    gboolean reuse;
    guint64 speed;        /* bytes/s, 0 = unlimited */
    gboolean speed_given; /* FALSE: the policy's speed applies */
    gboolean manual_pivot;
    const gchar *tls_creds; /* nbds destinations: x509 directory; NULL = the policy's */
    gboolean verify;        /* compare the old source with the destination after the pivot */
} VmrMigrateRequest;

/*
 * Signals:
 *   "job-changed" (gpointer job, gint previous_state)   after every transition;
 *                 @job is a VmrJob *, valid during the emission
 *   "job-progress" (gpointer job)   after each reading of a running copy's
 *                 progress and each sample of its guest's load, for every
 *                 job that has not ended; @job as above
 *   "hook-event"  (const gchar *domain, const gchar *op, const gchar *subop,
 *                  const gchar *uuid)   the libvirt hook reported a domain
 *                 event; @subop and @uuid may be NULL
 */
VmrEngine *vmr_engine_new (const gchar *state_dir);

/*
 * Refuses every destination in the directory @dir, or that is @dir, which
 * the refusal calls the daemon's @what (e.g. "socket directory"). The state
 * directory is refused from the start.
 */
void vmr_engine_protect_directory (VmrEngine *self, const gchar *what, const gchar *dir);

/*
 * Loads the policy file @path. When @required is FALSE a missing file means
 * the built-in values. An invalid file is an error naming every problem.
 */
gboolean vmr_engine_load_policy (VmrEngine *self, const gchar *path, gboolean required,
                                 GError **error);

/* loads the policy file again; an invalid file keeps the current policy */
gboolean vmr_engine_reload_policy (VmrEngine *self, GError **error);

/* the effective policy of @domain's @disk (may be NULL), key by key with origins */
JsonObject *vmr_engine_show_policy (VmrEngine *self, const gchar *domain, const gchar *disk,
                                    GError **error);

/* the protocol's job object, with the policy's view of it */
JsonObject *vmr_engine_job_to_json (VmrEngine *self, VmrJob *job);

/* closes every backend; jobs inside QEMU keep running */
void vmr_engine_shutdown (VmrEngine *self);

gboolean vmr_engine_detach (VmrEngine *self, const gchar *name, GError **error);

/*
 * Adds the domain @name served by @backend (a reference is taken), for
 * backends that find domains themselves (libvirt), once its disks are read.
 * Fails when the name is taken or the disks cannot be read.
 */
void vmr_engine_add_domain_async (VmrEngine *self, const gchar *name, VmrBackend *backend,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data);
/* the new domain's protocol object */
JsonObject *vmr_engine_add_domain_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/* whether a domain named @name is known */
gboolean vmr_engine_has_domain (VmrEngine *self, const gchar *name);

/* the backend of the domain @name (transfer none), or NULL */
VmrBackend *vmr_engine_get_backend (VmrEngine *self, const gchar *name);

/*
 * Forgets the domain @name because it is gone (it stopped): each of its
 * unfinished jobs fails with @reason and a destination the daemon made is
 * removed; the source was never changed before the pivot.
 */
void vmr_engine_remove_domain (VmrEngine *self, const gchar *name, const gchar *reason);

/* a disk of a domain that is defined on this host and does not run */
typedef struct {
    gchar *domain;
    gchar *disk; /* its target, e.g. "vda" */
    gchar *path; /* its image, or an NBD URI */
} VmrEngineDefinedDisk;

void vmr_engine_defined_disk_free (VmrEngineDefinedDisk *disk);

/*
 * Tells the engine the disks of every domain defined and not running (a
 * GPtrArray of VmrEngineDefinedDisk *, a reference is taken; NULL for
 * none), as whoever knows them (libvirt's tracker) last read them: no copy
 * is let write to one of them, as to the disk of a running domain.
 */
void vmr_engine_set_defined_disks (VmrEngine *self, GPtrArray *disks);

/* passes news from the libvirt hook on as "hook-event"; never blocks */
void vmr_engine_hook_event (VmrEngine *self, const gchar *domain, const gchar *op,
                            const gchar *subop, const gchar *uuid);

void vmr_engine_query_domains_async (VmrEngine *self, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data);
JsonArray *vmr_engine_query_domains_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/*
 * Validates the request, creates the jobs (a group when it names several
 * disks) and starts the copies the limits let start. Nothing is created
 * unless every disk of the request is valid.
 */
void vmr_engine_migrate_async (VmrEngine *self, const VmrMigrateRequest *request,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data);
/* the new jobs, in the order of the request (of VmrJob *, owned) */
GPtrArray *vmr_engine_migrate_finish (VmrEngine *self, GAsyncResult *res, GError **error);

typedef struct {
    const gchar *from;    /* absolute directory */
    const gchar *to;      /* absolute directory */
    const gchar *domains; /* glob on domain names, NULL = every domain */
    const gchar *format;  /* NULL: each source's own format */
    guint64 speed;
    gboolean speed_given;
    gboolean dry_run;
} VmrEvacuateRequest;

/*
 * Plans the move of every disk of every known domain that lies under
 * @request->from to the same relative path under @request->to and, unless
 * a dry run, submits it: one group per domain. Refuses a plan with
 * collisions or a destination in use, submitting nothing.
 */
void vmr_engine_evacuate_async (VmrEngine *self, const VmrEvacuateRequest *request,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
/* the plan (docs/protocol.md, "evacuate") */
JsonObject *vmr_engine_evacuate_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/*
 * From now on, whenever the policy's [cluster] is joined, this daemon runs
 * its own part of every evacuation asked of the cluster (engine-cluster-evacuate.c).
 */
void vmr_engine_follow_cluster_evacuations (VmrEngine *self);

/*
 * An evacuation across the cluster: @request (as "evacuate" takes it)
 * is checked on this host with a dry run, then put for every daemon of
 * the cluster, each of which evacuates its own domains; _finish returns
 * {"id", "cluster"}. Nothing is submitted anywhere when the check fails.
 */
void vmr_engine_cluster_evacuate_async (VmrEngine *self, JsonObject *request,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);
JsonObject *vmr_engine_cluster_evacuate_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/* evacuation @id across the cluster once it changed past revision @after (docs/protocol.md) */
void vmr_engine_query_cluster_evacuation_async (VmrEngine *self, const gchar *id, gint64 after,
                                                GCancellable *cancellable,
                                                GAsyncReadyCallback callback, gpointer user_data);
JsonObject *vmr_engine_query_cluster_evacuation_finish (VmrEngine *self, GAsyncResult *res,
                                                        GError **error);

/* every job, oldest first */
JsonArray *vmr_engine_list_jobs (VmrEngine *self);

/*
 * The jobs that have not ended: those whose copy has started (copying,
 * throttled, paused, synced, pivoting) in *@out_running, those waiting to
 * start (queued, delayed) in *@out_queued
 */
void vmr_engine_count_jobs (VmrEngine *self, guint *out_running, guint *out_queued);

/* the job @id (transfer none), or NULL with VMR_ERROR_NOT_FOUND */
VmrJob *vmr_engine_lookup_job (VmrEngine *self, const gchar *id, GError **error);

/*
 * The job @id, or a finished job of an earlier run read from its record
 * (transfer full), or NULL with VMR_ERROR_NOT_FOUND; for reading only.
 */
VmrJob *vmr_engine_read_job (VmrEngine *self, const gchar *id, GError **error);

/* what a user may do to a job */
typedef enum {
    VMR_JOB_COMMAND_PAUSE,
    VMR_JOB_COMMAND_RESUME,
    VMR_JOB_COMMAND_CANCEL,
    VMR_JOB_COMMAND_PIVOT,
    VMR_JOB_COMMAND_SET_SPEED,
    /* background -> write-blocking; there is no way back */
    VMR_JOB_COMMAND_SET_COPY_MODE_ACTIVE,
} VmrJobCommand;

/*
 * Pauses, resumes, cancels, pivots or sets the speed of job @id. A cancel
 * finishes when the job has ended; the others when QEMU accepted them.
 */
void vmr_engine_job_command_async (VmrEngine *self, const gchar *id, VmrJobCommand command,
                                   guint64 speed, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data);
VmrJob *vmr_engine_job_command_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/*
 * Compares the old source of the completed job @id with the disk its guest
 * runs on now (see VmrBackend's verify_copy). Completes, with the job, once
 * the comparison has started; its result is the job's verification.
 * Refused for a job that did not complete, whose domain is gone or whose
 * verification still runs.
 */
void vmr_engine_verify_job_async (VmrEngine *self, const gchar *id, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data);
VmrJob *vmr_engine_verify_job_finish (VmrEngine *self, GAsyncResult *res, GError **error);

/*
 * The cluster as etcd holds it: members, the jobs each daemon publishes,
 * the queue and its slots (cluster-status.h). VMR_ERROR_NOT_FOUND without
 * a [cluster] section. Free the object of _finish with json_object_unref().
 */
void vmr_engine_query_cluster_async (VmrEngine *self, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data);
JsonObject *vmr_engine_query_cluster_finish (VmrEngine *self, GAsyncResult *result, GError **error);

G_END_DECLS
