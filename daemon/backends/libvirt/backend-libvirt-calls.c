#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The libvirt backend's thread side: the bodies of the GTask threads that
 * call into libvirt (and QMP passthrough) for backend-libvirt.c. Each works
 * only on its Call, never on the backend's own state, and returns its
 * answer through the task.
 */

#include "backend-libvirt-private.h"

#include "destination.h"
#include "libvirt-domain.h"
#include "libvirt-verify.h"
#include "libvirt-xml.h"
#include "qmp-client.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* ---- disks ---- */

void
vmr_backend_libvirt_query_disks_thread (GTask *task, gpointer source, gpointer task_data,
                                        GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    GPtrArray *disks = dom != NULL ? vmr_libvirt_domain_read_disks (dom, &error) : NULL;

    if (disks == NULL)
        g_task_return_error (task, g_steal_pointer (&error));
    else
        g_task_return_pointer (task, disks, (GDestroyNotify) g_ptr_array_unref);
}

/* ---- the end of a copy ---- */

void
vmr_backend_libvirt_persist_thread (GTask *task, gpointer source, gpointer task_data,
                                    GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);

    if (dom != NULL)
        vmr_libvirt_domain_persist_disk (dom, call->job_id, call->target, call->source,
                                         call->destination);
    else
        g_message ("%s: not checking the persistent definition: %s", call->job_id, error->message);
    g_task_return_boolean (task, TRUE);
}

/* ---- starting a copy ---- */

/*
 * virDomainBlockCopy() of @call's disk to @dest_xml. libvirt opens (and
 * labels) the destination by its path: just before the call, and just
 * after, that path must lead to the file the daemon opened, or the copy is
 * not started, or aborted again. -1 with @error.
 */
static int
block_copy_checked (virDomain *dom, Call *call, const gchar *dest_xml, virTypedParameterPtr params,
                    int n_params, unsigned int flags, GError **error)
{
    g_autoptr (GError) moved = NULL;

    if (call->handle != NULL && !vmr_destination_handle_check_named (call->handle, error))
        return -1;
    if (virDomainBlockCopy (dom, call->target, dest_xml, params, n_params, flags) < 0) {
        vmr_libvirt_set_error (error, "libvirt refused to copy %s to %s", call->target,
                               call->destination->location);
        return -1;
    }
    if (call->handle == NULL || vmr_destination_handle_check_named (call->handle, &moved))
        return 0;
    /* libvirt may have opened what was swapped in: that copy goes at once */
    if (virDomainBlockJobAbort (dom, call->target, 0) < 0)
        g_warning ("%s: cannot abort the copy of %s: %s", call->job_id, call->target,
                   virGetLastErrorMessage ());
    g_propagate_error (error, g_steal_pointer (&moved));
    return -1;
}

void
vmr_backend_libvirt_start_copy_thread (GTask *task, gpointer source, gpointer task_data,
                                       GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree gchar *dest_xml = NULL;
    g_autofree gchar *discard = NULL;
    virTypedParameterPtr params = NULL;
    int n_params = 0;
    int max_params = 0;
    /*
     * a persistent domain needs TRANSIENT_JOB: the copy does not survive a
     * restart of QEMU. REUSE_EXT: the daemon made the file itself (libvirt
     * would make it by its path), or it existed
     */
    unsigned int flags = VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB | VIR_DOMAIN_BLOCK_COPY_REUSE_EXT;
    int rc;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (call->speed > 0
        && virTypedParamsAddULLong (&params, &n_params, &max_params,
                                    VIR_DOMAIN_BLOCK_COPY_BANDWIDTH, call->speed)
               < 0) {
        vmr_libvirt_set_error (&error, "cannot set the copy bandwidth");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (call->granularity > 0
        && virTypedParamsAddUInt (&params, &n_params, &max_params,
                                  VIR_DOMAIN_BLOCK_COPY_GRANULARITY,
                                  (unsigned int) call->granularity)
               < 0) {
        virTypedParamsFree (params, n_params);
        vmr_libvirt_set_error (&error, "cannot set the copy granularity");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    if (call->buf_size > 0
        && virTypedParamsAddULLong (&params, &n_params, &max_params, VIR_DOMAIN_BLOCK_COPY_BUF_SIZE,
                                    call->buf_size)
               < 0) {
        virTypedParamsFree (params, n_params);
        vmr_libvirt_set_error (&error, "cannot set the copy buffer size");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /*
     * libvirt 11.3 opens the copy with the discard and detect-zeroes of the
     * disk it copies, and ignores those of the destination's <driver>:
     * without discard=unmap, QEMU's mirror writes the holes of a thin source
     * as zeroes that a file or an export may allocate
     */
    discard = vmr_libvirt_domain_disk_discard (dom, call->target);
    if (discard != NULL && g_strcmp0 (discard, "unmap") != 0)
        g_message ("job %s (%s): libvirt copies with the disk's discard mode (%s): the holes of "
                   "the source may take space on %s; <driver discard='unmap'/> on the disk keeps "
                   "a thin copy thin",
                   call->job_id, call->target, discard, call->destination->location);
    dest_xml = vmr_destination_to_libvirt_xml (call->destination);
    g_debug ("%s: virDomainBlockCopy %s %s flags 0x%x", call->job_id, call->target, dest_xml,
             flags);
    rc = block_copy_checked (dom, call, dest_xml, params, n_params, flags, &error);
    virTypedParamsFree (params, n_params);
    if (rc < 0) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

/* ---- commands on a running copy ---- */

void
vmr_backend_libvirt_job_command_thread (GTask *task, gpointer source, gpointer task_data,
                                        GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree gchar *qemu_job = NULL;
    g_autoptr (VmrQmpCmd) change = NULL;
    g_autoptr (JsonNode) reply = NULL;
    const unsigned int bytes = VIR_DOMAIN_BLOCK_JOB_SPEED_BANDWIDTH_BYTES;
    const gchar *what = "";
    int rc = 0;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    switch (call->command) {
        case VMR_BACKEND_COMMAND_PAUSE:
        case VMR_BACKEND_COMMAND_RESUME:
            /* libvirt has no API for this: QMP on libvirt's own job */
            qemu_job = vmr_libvirt_domain_find_copy_job (dom, call->target, &error);
            if (qemu_job != NULL)
                reply = vmr_libvirt_domain_run (dom,
                                                call->command == VMR_BACKEND_COMMAND_PAUSE
                                                    ? vmr_qmp_cmd_block_job_pause (qemu_job)
                                                    : vmr_qmp_cmd_block_job_resume (qemu_job),
                                                &error);
            if (reply == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
            }
            break;
        case VMR_BACKEND_COMMAND_SET_COPY_MODE_ACTIVE:
            /* libvirt has no API for this either; the schema says whether QEMU can */
            reply = vmr_libvirt_domain_run (dom, vmr_qmp_cmd_query_qmp_schema (), &error);
            if (reply != NULL)
                qemu_job = vmr_libvirt_domain_find_copy_job (dom, call->target, &error);
            if (qemu_job != NULL)
                change = vmr_qmp_cmd_block_job_change_copy_mode (reply, qemu_job, &error);
            g_clear_pointer (&reply, json_node_unref);
            if (change != NULL)
                reply = vmr_libvirt_domain_run (dom, g_steal_pointer (&change), &error);
            if (reply == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                return;
            }
            break;
        case VMR_BACKEND_COMMAND_CANCEL:
            what = "cancel";
            rc = virDomainBlockJobAbort (dom, call->target, 0);
            break;
        case VMR_BACKEND_COMMAND_PIVOT:
            what = "pivot";
            /* from the switch on, every guest write is in it */
            if (call->mark_pivot)
                vmr_libvirt_verify_mark_pivot (dom, call->job_id, call->destination);
            /* a rate-limited copy sleeps between chunks: lift the limit first */
            if (call->old_speed > 0 && virDomainBlockJobSetSpeed (dom, call->target, 0, bytes) < 0)
                g_debug ("%s: unthrottling: %s", call->job_id, virGetLastErrorMessage ());
            rc = virDomainBlockJobAbort (dom, call->target, VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT);
            break;
        case VMR_BACKEND_COMMAND_SET_SPEED:
            what = "set the speed of";
            rc = virDomainBlockJobSetSpeed (dom, call->target, call->speed, bytes);
            break;
        default:
            g_assert_not_reached ();
    }
    if (rc < 0) {
        vmr_libvirt_set_error (&error, "libvirt refused to %s the copy of %s", what, call->target);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_boolean (task, TRUE);
}

/* ---- progress ---- */

void
vmr_backend_libvirt_query_progress_thread (GTask *task, gpointer source, gpointer task_data,
                                           GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom = NULL;
    g_autoptr (GPtrArray) result
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_progress_free);

    if (call->tracks->len > 0)
        dom = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    if (call->tracks->len > 0 && dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    for (guint i = 0; i < call->tracks->len; i++) {
        CopyTrack *track = g_ptr_array_index (call->tracks, i);
        virDomainBlockJobInfo info = { 0 };
        VmrBackendProgress *progress;

        if (virDomainGetBlockJobInfo (dom, track->target, &info,
                                      VIR_DOMAIN_BLOCK_JOB_INFO_BANDWIDTH_BYTES)
            != 1)
            continue;
        progress = g_new0 (VmrBackendProgress, 1);
        progress->job_id = g_strdup (track->job_id);
        progress->total_bytes = info.end;
        progress->done_bytes = info.cur;
        progress->speed = info.bandwidth;
        progress->ready = track->ready;
        g_ptr_array_add (result, progress);
    }
    g_task_return_pointer (task, g_steal_pointer (&result), (GDestroyNotify) g_ptr_array_unref);
}

/* ---- guest load ---- */

void
vmr_backend_libvirt_query_load_thread (GTask *task, gpointer source, gpointer task_data,
                                       GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    GHashTable *load = dom != NULL ? vmr_libvirt_domain_read_load (dom, &error) : NULL;

    if (load == NULL)
        g_task_return_error (task, g_steal_pointer (&error));
    else
        g_task_return_pointer (task, load, (GDestroyNotify) g_hash_table_unref);
}

/* ---- where a copy stands ---- */

void
vmr_backend_libvirt_copy_probe_free (CopyProbe *probe)
{
    g_free (probe->job_id);
    g_free (probe->disk_path);
    g_clear_error (&probe->error);
    g_free (probe);
}

/*
 * Where the copy @job_id of @target to @destination stands in @dom, whose
 * live definition has @disks. A copy job of the disk to another destination
 * is someone else's: ours is not running then.
 */
static CopyProbe *
probe_copy (virDomain *dom, GPtrArray *disks, const gchar *job_id, const gchar *target,
            const VmrDestination *destination)
{
    VmrLibvirtDisk *disk = vmr_libvirt_xml_find_disk (disks, target);
    virDomainBlockJobInfo info = { 0 };
    CopyProbe *probe = g_new0 (CopyProbe, 1);
    int rc;

    probe->job_id = g_strdup (job_id);
    probe->disk_path = g_strdup (disk != NULL ? disk->path : NULL);
    /* a disk that is gone has no copy either */
    if (disk == NULL)
        return probe;
    rc = virDomainGetBlockJobInfo (dom, target, &info, VIR_DOMAIN_BLOCK_JOB_INFO_BANDWIDTH_BYTES);
    if (rc < 0)
        vmr_libvirt_set_error (&probe->error, "cannot read the block job of %s", target);
    probe->running = rc == 1 && info.type == VIR_DOMAIN_BLOCK_JOB_TYPE_COPY
                     && (disk->mirror_path == NULL || *disk->mirror_path == '\0'
                         || vmr_destination_same_target (destination, disk->mirror_path));
    if (rc == 1 && !probe->running)
        g_message ("%s: libvirt runs another block job (type %d) on %s", job_id, info.type, target);
    if (probe->running) {
        probe->ready = disk->mirror_ready;
        probe->total_bytes = info.end;
        probe->done_bytes = info.cur;
        probe->speed = info.bandwidth;
    }
    return probe;
}

/* ---- after libvirt came back ---- */

/* events may have been lost while libvirtd was away: ask where each copy is */
void
vmr_backend_libvirt_resync_thread (GTask *task, gpointer source, gpointer task_data,
                                   GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autoptr (GPtrArray) results
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_backend_libvirt_copy_probe_free);
    g_autofree gchar *xml = NULL;
    g_autoptr (GPtrArray) disks = NULL;

    /* a domain that stopped meanwhile is the tracker's business */
    if (dom == NULL || (xml = vmr_libvirt_domain_get_xml (dom, 0, NULL)) == NULL
        || (disks = vmr_libvirt_xml_parse_disks (xml, NULL)) == NULL) {
        g_task_return_pointer (task, g_steal_pointer (&results),
                               (GDestroyNotify) g_ptr_array_unref);
        return;
    }
    for (guint i = 0; i < call->tracks->len; i++) {
        CopyTrack *track = g_ptr_array_index (call->tracks, i);

        g_ptr_array_add (results,
                         probe_copy (dom, disks, track->job_id, track->target, track->destination));
    }
    g_task_return_pointer (task, g_steal_pointer (&results), (GDestroyNotify) g_ptr_array_unref);
}

/* ---- a copy that an earlier run of the daemon started ---- */

/* TRUE when a disk of @dom, live or in its persistent definition, leads to @destination */
static gboolean
path_in_use (virDomain *dom, GPtrArray *live_disks, const VmrDestination *destination)
{
    g_autofree gchar *inactive_xml = NULL;
    g_autoptr (GPtrArray) inactive_disks = NULL;
    GPtrArray *lists[2] = { live_disks, NULL };

    if (virDomainIsPersistent (dom) == 1) {
        inactive_xml = vmr_libvirt_domain_get_xml (dom, VIR_DOMAIN_XML_INACTIVE, NULL);
        /* a definition we cannot read may name it: keep the file then */
        if (inactive_xml == NULL
            || (inactive_disks = vmr_libvirt_xml_parse_disks (inactive_xml, NULL)) == NULL)
            return TRUE;
        lists[1] = inactive_disks;
    }
    for (guint l = 0; l < G_N_ELEMENTS (lists) && lists[l] != NULL; l++) {
        for (guint i = 0; i < lists[l]->len; i++) {
            VmrLibvirtDisk *disk = g_ptr_array_index (lists[l], i);

            if (vmr_destination_same_target (destination, disk->path)
                || vmr_destination_same_target (destination, disk->mirror_path))
                return TRUE;
        }
    }
    return FALSE;
}

void
vmr_backend_libvirt_adopt_copy_thread (GTask *task, gpointer source, gpointer task_data,
                                       GCancellable *cancellable)
{
    Call *call = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) dom
        = vmr_libvirt_connection_lookup (call->connection, call->uuid, &error);
    g_autofree VmrBackendAdoption *adoption = g_new0 (VmrBackendAdoption, 1);
    g_autofree gchar *xml = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    g_autoptr (CopyProbe) probe = NULL;

    if (dom == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    xml = vmr_libvirt_domain_get_xml (dom, 0, &error);
    disks = xml != NULL ? vmr_libvirt_xml_parse_disks (xml, &error) : NULL;
    if (disks == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    probe = probe_copy (dom, disks, call->job_id, call->target, call->destination);
    if (probe->error != NULL) {
        g_task_return_error (task, g_steal_pointer (&probe->error));
        return;
    }
    if (probe->running) {
        adoption->outcome = VMR_BACKEND_ADOPT_RUNNING;
        adoption->ready = probe->ready;
        adoption->speed = probe->speed;
        adoption->total_bytes = probe->total_bytes;
        adoption->done_bytes = probe->done_bytes;
        if (call->query_paused) {
            g_autoptr (GError) qemu_error = NULL;
            g_autoptr (JsonObject) qemu_job
                = vmr_libvirt_domain_query_copy_job (dom, call->target, &qemu_error);

            if (qemu_job != NULL)
                adoption->paused = vmr_json_bool_or (qemu_job, "paused", FALSE);
            else
                g_message ("%s: cannot tell whether the copy is paused: %s", call->job_id,
                           qemu_error->message);
        }
        g_debug ("%s: libvirt still copies %s to %s (%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                 ", %s%s)",
                 call->job_id, call->target, call->destination->location, probe->done_bytes,
                 probe->total_bytes, probe->ready ? "ready" : "not ready",
                 adoption->paused ? ", paused" : "");
    } else if (vmr_destination_same_target (call->destination, probe->disk_path)) {
        adoption->outcome = VMR_BACKEND_ADOPT_ON_DESTINATION;
        /* as after a pivot we saw: the definition must not send it back at the next boot */
        vmr_libvirt_domain_persist_disk (dom, call->job_id, call->target, call->source,
                                         call->destination);
    } else {
        adoption->outcome = VMR_BACKEND_ADOPT_GONE;
        if (g_strcmp0 (probe->disk_path, call->source) != 0)
            g_message ("%s: %s of %s runs on %s, neither source nor destination", call->job_id,
                       call->target, virDomainGetName (dom),
                       probe->disk_path != NULL ? probe->disk_path : "nothing");
        /* the engine removes a file it made, unless the domain's definition names it */
        adoption->destination_in_use = path_in_use (dom, disks, call->destination);
    }
    g_task_return_pointer (task, g_steal_pointer (&adoption), g_free);
}
