#define G_LOG_DOMAIN "vmr-daemon"

#include "libvirt-domain.h"

#include <libvirt/libvirt-qemu.h>

#include "disk.h"
#include "libvirt-reply.h"
#include "libvirt-xml.h"
#include "load-history.h"
#include "vmr-error.h"
#include "vmr-json.h"

gchar *
vmr_libvirt_domain_get_xml (virDomain *dom, guint flags, GError **error)
{
    g_autofree gchar *xml = virDomainGetXMLDesc (dom, flags);

    if (xml == NULL) {
        vmr_libvirt_set_error (error, "cannot read the definition of %s", virDomainGetName (dom));
        return NULL;
    }
    if (!vmr_libvirt_reply_check (xml, "virDomainGetXMLDesc", virDomainGetName (dom), error))
        return NULL;
    return g_steal_pointer (&xml);
}

gchar *
vmr_libvirt_domain_disk_discard (virDomain *dom, const gchar *target)
{
    g_autofree gchar *xml = vmr_libvirt_domain_get_xml (dom, 0, NULL);
    g_autoptr (GPtrArray) disks = xml != NULL ? vmr_libvirt_xml_parse_disks (xml, NULL) : NULL;
    VmrLibvirtDisk *disk = disks != NULL ? vmr_libvirt_xml_find_disk (disks, target) : NULL;

    if (disk == NULL)
        return NULL;
    /* libvirt's default leaves QEMU's, which is ignore */
    return g_strdup (disk->discard != NULL ? disk->discard : "ignore");
}

GPtrArray *
vmr_libvirt_domain_read_disks (virDomain *dom, GError **error)
{
    g_autofree gchar *xml = vmr_libvirt_domain_get_xml (dom, 0, error);
    g_autoptr (GPtrArray) found = NULL;
    g_autoptr (GPtrArray) disks = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_disk_free);

    if (xml == NULL)
        return NULL;
    found = vmr_libvirt_xml_parse_disks (xml, error);
    if (found == NULL)
        return NULL;
    for (guint i = 0; i < found->len; i++) {
        VmrLibvirtDisk *found_disk = g_ptr_array_index (found, i);
        virDomainBlockInfo info = { 0 };
        VmrDisk *disk;

        /* removable media, and network disks other than NBD exports (no path), do not move */
        if (found_disk->target == NULL || found_disk->path == NULL
            || (g_strcmp0 (found_disk->device, "disk") != 0
                && g_strcmp0 (found_disk->device, "lun") != 0))
            continue;
        if (virDomainGetBlockInfo (dom, found_disk->target, &info, 0) < 0)
            g_debug ("no size for %s of %s: %s", found_disk->target, virDomainGetName (dom),
                     virGetLastErrorMessage ());
        disk = vmr_disk_new ();
        disk->id = g_strdup (found_disk->target);
        disk->format = g_strdup (found_disk->format != NULL ? found_disk->format : "raw");
        disk->path = g_strdup (found_disk->path);
        disk->size = info.capacity;
        /* what the image takes on its storage (a file's blocks; a block device: all of it) */
        disk->allocated
            = g_strcmp0 (found_disk->type, "file") == 0 ? info.allocation : info.capacity;
        disk->iothread = g_strdup (found_disk->iothread);
        disk->iothreads = g_strdupv (found_disk->iothreads);
        disk->read_only = found_disk->read_only;
        g_ptr_array_add (disks, disk);
    }
    return g_steal_pointer (&disks);
}

GHashTable *
vmr_libvirt_domain_read_load (virDomain *dom, GError **error)
{
    const gchar *keys[] = { "rd.reqs", "wr.reqs", "rd.times", "wr.times" };
    g_autoptr (GHashTable) result = NULL;
    virDomainStatsRecordPtr *records = NULL;
    virDomainPtr doms[2] = { dom, NULL };
    virTypedParameterPtr params;
    guint count = 0;
    int n_params;

    /* libvirt's block stats are the guest device's, never the copy's */
    if (virDomainListGetStats (doms, VIR_DOMAIN_STATS_BLOCK, &records, 0) < 0
        || records[0] == NULL) {
        vmr_libvirt_set_error (error, "cannot read the block stats of %s", virDomainGetName (dom));
        if (records != NULL)
            virDomainStatsRecordListFree (records);
        return NULL;
    }
    params = records[0]->params;
    n_params = records[0]->nparams;
    result = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    virTypedParamsGetUInt (params, n_params, "block.count", &count);
    for (guint i = 0; i < count; i++) {
        g_autofree gchar *name_key = g_strdup_printf ("block.%u.name", i);
        unsigned long long values[G_N_ELEMENTS (keys)] = { 0 };
        const char *name = NULL;
        VmrIoCounters *counters;

        if (virTypedParamsGetString (params, n_params, name_key, &name) != 1 || name == NULL)
            continue;
        for (guint k = 0; k < G_N_ELEMENTS (keys); k++) {
            g_autofree gchar *key = g_strdup_printf ("block.%u.%s", i, keys[k]);

            virTypedParamsGetULLong (params, n_params, key, &values[k]);
        }
        counters = g_new0 (VmrIoCounters, 1);
        counters->read_ops = values[0];
        counters->write_ops = values[1];
        counters->read_time_ns = values[2];
        counters->write_time_ns = values[3];
        g_hash_table_insert (result, g_strdup (name), counters);
    }
    virDomainStatsRecordListFree (records);
    return g_steal_pointer (&result);
}

/* sends the QMP @text of @command through libvirt; the "return" of its reply */
static JsonNode *
passthrough (virDomain *dom, const gchar *command, const gchar *text, gint fd, GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autofree gchar *result = NULL;
    g_autoptr (GError) parse_error = NULL;
    JsonObject *reply;

    if ((fd >= 0 ? virDomainQemuMonitorCommandWithFiles (dom, text, 1, &fd, NULL, NULL, &result, 0)
                 : virDomainQemuMonitorCommand (dom, text, &result, 0))
        < 0) {
        vmr_libvirt_set_error (error, "QMP passthrough '%s'", command);
        return NULL;
    }
    if (!vmr_libvirt_reply_check (result, "virDomainQemuMonitorCommand", virDomainGetName (dom),
                                  error)) {
        g_prefix_error (error, "QMP passthrough '%s': ", command);
        return NULL;
    }
    g_debug ("libvirt QMP passthrough: %s -> %s", text, result);
    reply = vmr_json_parser_load (parser, result, -1, &parse_error)
                ? vmr_json_node_object (json_parser_get_root (parser))
                : NULL;
    if (reply == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "unexpected reply to '%s'%s%s", command,
                     parse_error != NULL ? ": " : "",
                     parse_error != NULL ? parse_error->message : "");
        return NULL;
    }
    /* libvirt hands QEMU's error over as it came: it is no failure of the call */
    if (json_object_has_member (reply, "error")) {
        const gchar *desc = vmr_json_get_string (vmr_json_get_object (reply, "error"), "desc");

        g_set_error (error, VMR_ERROR, VMR_ERROR_GENERIC, "QEMU refused '%s': %s", command,
                     desc != NULL ? desc : "no reason given");
        return NULL;
    }
    if (!json_object_has_member (reply, "return")) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "no return value for '%s'", command);
        return NULL;
    }
    return json_node_copy (json_object_get_member (reply, "return"));
}

JsonNode *
vmr_libvirt_domain_run_with_fd (virDomain *dom, VmrQmpCmd *cmd, gint fd, GError **error)
{
    g_autoptr (VmrQmpCmd) owned = cmd;
    g_autofree gchar *text = vmr_qmp_cmd_to_string (owned);

    return passthrough (dom, vmr_qmp_cmd_name (owned), text, fd, error);
}

JsonNode *
vmr_libvirt_domain_run (virDomain *dom, VmrQmpCmd *cmd, GError **error)
{
    return vmr_libvirt_domain_run_with_fd (dom, cmd, -1, error);
}

JsonObject *
vmr_libvirt_domain_query_copy_job (virDomain *dom, const gchar *target, GError **error)
{
    g_autoptr (JsonNode) reply
        = vmr_libvirt_domain_run (dom, vmr_qmp_cmd_query_block_jobs (), error);
    g_autofree gchar *prefix = g_strdup_printf ("copy-%s-", target);
    JsonArray *jobs;

    if (reply == NULL)
        return NULL;
    jobs = vmr_json_node_array (reply);
    for (guint i = 0; jobs != NULL && i < json_array_get_length (jobs); i++) {
        JsonObject *job = vmr_json_array_object (jobs, i);
        const gchar *device = vmr_json_get_string (job, "device");

        /* libvirt names it "copy-TARGET-NODE" after the disk and its top node */
        if (device != NULL && g_str_has_prefix (device, prefix))
            return json_object_ref (job);
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "QEMU runs no copy of %s", target);
    return NULL;
}

gchar *
vmr_libvirt_domain_find_copy_job (virDomain *dom, const gchar *target, GError **error)
{
    g_autoptr (JsonObject) job = vmr_libvirt_domain_query_copy_job (dom, target, error);

    if (job == NULL)
        return NULL;
    return g_strdup (vmr_json_get_string (job, "device"));
}

void
vmr_libvirt_domain_persist_disk (virDomain *dom, const gchar *job_id, const gchar *target,
                                 const gchar *source, const VmrDestination *destination)
{
    const gchar *name = virDomainGetName (dom);
    g_autoptr (GError) error = NULL;
    g_autoptr (virDomain) defined = NULL;
    g_autofree gchar *xml = NULL;
    g_autofree gchar *new_xml = NULL;
    g_autofree gchar *network_source = NULL;
    g_autoptr (GPtrArray) disks = NULL;
    VmrLibvirtDisk *disk;

    /* a transient domain has no definition to keep */
    if (virDomainIsPersistent (dom) != 1)
        return;
    xml = vmr_libvirt_domain_get_xml (dom, VIR_DOMAIN_XML_INACTIVE, &error);
    disks = xml != NULL ? vmr_libvirt_xml_parse_disks (xml, NULL) : NULL;
    disk = vmr_libvirt_xml_find_disk (disks, target);
    if (xml == NULL) {
        g_message ("%s: cannot read the persistent definition of %s: %s", job_id, name,
                   error->message);
        return;
    }
    if (disk == NULL) {
        g_message ("%s: the persistent definition of %s has no disk %s", job_id, name, target);
        return;
    }
    if (vmr_destination_same_target (destination, disk->path)) {
        g_debug ("%s: libvirt moved the persistent definition of %s to %s", job_id, name,
                 destination->location);
        return;
    }
    if (g_strcmp0 (disk->path, source) != 0) {
        g_message ("%s: the persistent definition of %s names %s for %s, neither source nor "
                   "destination; leaving it alone",
                   job_id, name, disk->path, target);
        return;
    }
    network_source = vmr_destination_to_libvirt_source (destination);
    if (network_source != NULL)
        new_xml = vmr_libvirt_xml_set_disk_network_source (xml, target, network_source,
                                                           destination->format, &error);
    else
        new_xml = vmr_libvirt_xml_set_disk_source (xml, target, destination->location,
                                                   destination->kind == VMR_DESTINATION_BLOCK,
                                                   destination->format, &error);
    if (new_xml != NULL)
        defined = virDomainDefineXML (virDomainGetConnect (dom), new_xml);
    if (defined == NULL) {
        if (error == NULL)
            vmr_libvirt_set_error (&error, "cannot define %s", name);
        g_warning ("%s: the persistent definition of %s still names %s for %s: %s", job_id, name,
                   source, target, error->message);
        return;
    }
    g_message ("%s: the persistent definition of %s now names %s for %s", job_id, name,
               destination->location, target);
}
