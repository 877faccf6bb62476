#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The verification of a libvirt domain's copy after its pivot, in a worker
 * thread: see libvirt-verify.h. The daemon makes the NBD server's listening
 * socket itself and hands QEMU its file descriptor (getfd), so that QEMU,
 * running as libvirt's user and confined by libvirt, creates no file of its
 * own. Whatever the run sets up in QEMU is removed again on every path; the
 * pivot's bitmap stays, so that the copy can be verified again later.
 */

#include "libvirt-verify.h"

#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>

#include "libvirt-domain.h"
#include "qmp-export.h"
#include "verification.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* how long QEMU may take to drop the exports once their clients are gone */
#define EXPORTS_GONE_TRIES   50
#define EXPORTS_GONE_WAIT_US (20 * 1000)

struct _VmrLibvirtVerify {
    gchar *job_id;
    gchar *disk;   /* the job's target */
    gchar *source; /* the old source image */
    gchar *source_format;
    VmrDestination *destination;
    gchar *socket;     /* QEMU's NBD server listens here, on our socket */
    gchar *fd_name;    /* QEMU's name of that socket's descriptor */
    gchar *bitmap;     /* the pivot's, enabled */
    gchar *new_export; /* of the destination */
    gchar *old_export; /* of the old source, by qemu-nbd */
    gchar **qemu_nbd;  /* its command */
    VmrNbdCompare *compare;

    /* while it runs */
    virDomain *dom;       /* not owned */
    gchar *dest_node;     /* the node that holds the bitmap */
    gboolean fd_passed;   /* QEMU has the descriptor */
    gboolean serving;     /* nbd-server-start succeeded */
    GPtrArray *exports;   /* of gchar *, the exports made */
    GPtrArray *snapshots; /* of gchar *, the disabled copies of the bitmap made */
};

static gchar *
pivot_bitmap (const gchar *job_id)
{
    return g_strdup_printf ("%s-pivot", job_id);
}

/* whether QEMU's node @node holds the dirty bitmap @bitmap */
static gboolean
has_bitmap (JsonObject *node, const gchar *bitmap)
{
    JsonArray *bitmaps = vmr_json_get_array (node, "dirty-bitmaps");

    for (guint i = 0; bitmaps != NULL && i < json_array_get_length (bitmaps); i++) {
        if (g_strcmp0 (vmr_json_get_string (vmr_json_array_object (bitmaps, i), "name"), bitmap)
            == 0)
            return TRUE;
    }
    return FALSE;
}

/*
 * The name of QEMU's node of @destination that holds @bitmap; with a NULL
 * @bitmap, its top node (the format node, when libvirt made one, rather
 * than the protocol node under it). NULL with @error when there is none.
 */
static gchar *
find_node (virDomain *dom, const VmrDestination *destination, const gchar *bitmap, GError **error)
{
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    JsonArray *nodes;
    const gchar *found = NULL;
    gboolean found_format = FALSE;

    json_object_set_boolean_member (args, "flat", TRUE);
    reply = vmr_libvirt_domain_qemu_command (dom, "query-named-block-nodes", args, error);
    if (reply == NULL)
        return NULL;
    nodes = vmr_json_node_array (reply);
    for (guint i = 0; nodes != NULL && i < json_array_get_length (nodes); i++) {
        JsonObject *node = vmr_json_array_object (nodes, i);
        const gchar *name = vmr_json_get_string (node, "node-name");
        gboolean is_format;

        if (name == NULL
            || !vmr_destination_same_target (destination, vmr_json_get_string (node, "file")))
            continue;
        if (bitmap != NULL) {
            if (has_bitmap (node, bitmap))
                return g_strdup (name);
            continue;
        }
        is_format = g_strcmp0 (vmr_json_get_string (node, "drv"), destination->format) == 0;
        if (found == NULL || (is_format && !found_format)) {
            found = name;
            found_format = is_format;
        }
    }
    if (found != NULL)
        return g_strdup (found);
    if (bitmap != NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND,
                     "QEMU has no record of the guest's writes since the pivot (no bitmap %s on "
                     "a node of %s: the copy was made without --verify, QEMU restarted, or the "
                     "disk moved again)",
                     bitmap, destination->location);
    else
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "QEMU has no node of %s",
                     destination->location);
    return NULL;
}

void
vmr_libvirt_verify_mark_pivot (virDomain *dom, const gchar *job_id,
                               const VmrDestination *destination)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *node = find_node (dom, destination, NULL, &error);
    g_autofree gchar *bitmap = pivot_bitmap (job_id);
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;

    if (node != NULL) {
        json_object_set_string_member (args, "node", node);
        json_object_set_string_member (args, "name", bitmap);
        reply = vmr_libvirt_domain_qemu_command (dom, "block-dirty-bitmap-add", args, &error);
    }
    if (reply == NULL)
        g_message ("job %s: cannot record the writes after the pivot: %s", job_id, error->message);
    else
        g_debug ("job %s: bitmap %s on node %s records the writes after the pivot", job_id, bitmap,
                 node);
}

/* ---- the object ---- */

static gboolean snapshot_cb (gpointer user_data, guint round, gchar **export_name, gchar **context,
                             GError **error);

VmrLibvirtVerify *
vmr_libvirt_verify_new (VmrJob *job, const gchar *work_dir)
{
    VmrLibvirtVerify *self = g_new0 (VmrLibvirtVerify, 1);
    g_autofree gchar *socket_name = g_strdup_printf ("%s.sock", job->id);
    const gchar *format = job->source_format != NULL ? job->source_format : "raw";
    VmrNbdCompareSpec spec = { 0 };

    self->job_id = g_strdup (job->id);
    self->disk = g_strdup (job->disk);
    self->source = g_strdup (job->source);
    self->source_format = g_strdup (format);
    self->destination = vmr_destination_ref (job->dest);
    self->socket = g_build_filename (work_dir, socket_name, NULL);
    self->fd_name = g_strdup_printf ("%s-nbd", job->id);
    self->bitmap = pivot_bitmap (job->id);
    self->new_export = g_strdup_printf ("%s-new", job->id);
    self->old_export = g_strdup_printf ("%s-old", job->id);
    {
        const gchar *const qemu_nbd[] = {
            "qemu-nbd",      "--read-only",    "--format",  format,
            "--export-name", self->old_export, job->source, NULL,
        };

        self->qemu_nbd = g_strdupv ((gchar **) qemu_nbd);
    }
    self->exports = g_ptr_array_new_with_free_func (g_free);
    self->snapshots = g_ptr_array_new_with_free_func (g_free);

    spec.source.export_name = self->old_export;
    spec.source.command = (const gchar *const *) self->qemu_nbd;
    /* a raw image is read with pread(), as qemu-img reads it */
    spec.source.raw_path = g_str_equal (format, "raw") ? self->source : NULL;
    spec.dest.socket = self->socket;
    spec.dest.export_name = self->new_export;
    spec.dest.raw_path = vmr_destination_raw_path (self->destination);
    spec.dirty_snapshot = snapshot_cb;
    spec.dirty_snapshot_data = self;
    self->compare = vmr_nbd_compare_new (&spec);
    return self;
}

void
vmr_libvirt_verify_free (VmrLibvirtVerify *self)
{
    g_free (self->job_id);
    g_free (self->disk);
    g_free (self->source);
    g_free (self->source_format);
    vmr_destination_unref (self->destination);
    g_free (self->socket);
    g_free (self->fd_name);
    g_free (self->bitmap);
    g_free (self->new_export);
    g_free (self->old_export);
    g_strfreev (self->qemu_nbd);
    vmr_nbd_compare_free (self->compare);
    g_free (self->dest_node);
    g_ptr_array_unref (self->exports);
    g_ptr_array_unref (self->snapshots);
    g_free (self);
}

VmrNbdCompare *
vmr_libvirt_verify_get_compare (VmrLibvirtVerify *self)
{
    return self->compare;
}

/* ---- QEMU's side ---- */

/* runs @command; a failure is logged only (for the cleanup) */
static void
best_effort (VmrLibvirtVerify *self, const gchar *command, JsonObject *args, const gchar *what)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply = vmr_libvirt_domain_qemu_command (self->dom, command, args, &error);

    if (reply == NULL)
        g_message ("job %s: %s after the verification: %s", self->job_id, what, error->message);
}

static gboolean
add_export (VmrLibvirtVerify *self, const gchar *id, const gchar *bitmap, GError **error)
{
    g_autoptr (JsonObject) args = vmr_qmp_nbd_export_args (id, self->dest_node, bitmap);
    g_autoptr (JsonNode) reply
        = vmr_libvirt_domain_qemu_command (self->dom, "block-export-add", args, error);

    if (reply == NULL)
        return FALSE;
    g_ptr_array_add (self->exports, g_strdup (id));
    return TRUE;
}

/* the daemon's listening socket, handed to QEMU, and QEMU's NBD server on it */
static gboolean
start_server (VmrLibvirtVerify *self, GError **error)
{
    g_autoptr (GSocket) listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM,
                                                 G_SOCKET_PROTOCOL_DEFAULT, error);
    g_autoptr (GSocketAddress) address = g_unix_socket_address_new (self->socket);
    g_autoptr (JsonObject) fd_args = json_object_new ();
    g_autoptr (JsonObject) args = vmr_qmp_nbd_server_args ("fd", self->fd_name);
    g_autoptr (JsonNode) passed = NULL;
    g_autoptr (JsonNode) started = NULL;

    g_unlink (self->socket);
    if (listener == NULL || !g_socket_bind (listener, address, FALSE, error)
        || !g_socket_listen (listener, error)) {
        g_prefix_error (error, "cannot listen on %s: ", self->socket);
        return FALSE;
    }
    json_object_set_string_member (fd_args, "fdname", self->fd_name);
    passed = vmr_libvirt_domain_qemu_command_with_fd (self->dom, "getfd", fd_args,
                                                      g_socket_get_fd (listener), error);
    self->fd_passed = passed != NULL;
    if (passed != NULL)
        started = vmr_libvirt_domain_qemu_command (self->dom, "nbd-server-start", args, error);
    self->serving = started != NULL;
    if (started == NULL)
        g_prefix_error (error, "QEMU cannot start its NBD server (does libvirt use it for a "
                               "migration or a backup?): ");
    return started != NULL;
}

/* whether QEMU still lists one of our exports */
static gboolean
exports_listed (VmrLibvirtVerify *self)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_libvirt_domain_qemu_command (self->dom, "query-block-exports", NULL, &error);
    JsonArray *exports = reply != NULL ? vmr_json_node_array (reply) : NULL;

    for (guint i = 0; exports != NULL && i < json_array_get_length (exports); i++) {
        const gchar *id = vmr_json_get_string (vmr_json_array_object (exports, i), "id");

        for (guint e = 0; e < self->exports->len; e++) {
            if (g_strcmp0 (id, g_ptr_array_index (self->exports, e)) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

/* every export, then the bitmap copies (once no export holds them), then the server */
static void
teardown (VmrLibvirtVerify *self)
{
    guint tries = 0;

    /* our connections go before the exports do; qemu-nbd ends with its client */
    vmr_nbd_compare_disconnect (self->compare);
    for (guint i = 0; i < self->exports->len; i++) {
        g_autoptr (JsonObject) args = json_object_new ();
        g_autofree gchar *what = g_strdup_printf (
            "removing the export %s", (const gchar *) g_ptr_array_index (self->exports, i));

        json_object_set_string_member (args, "id", g_ptr_array_index (self->exports, i));
        /* hard: a stray client must not keep it */
        json_object_set_string_member (args, "mode", "hard");
        best_effort (self, "block-export-del", args, what);
    }
    while (self->exports->len > 0 && exports_listed (self) && ++tries < EXPORTS_GONE_TRIES)
        g_usleep (EXPORTS_GONE_WAIT_US);
    if (tries == EXPORTS_GONE_TRIES)
        g_message ("job %s: QEMU still lists an export of the verification", self->job_id);
    for (guint i = 0; i < self->snapshots->len; i++) {
        g_autoptr (JsonObject) args = json_object_new ();
        g_autofree gchar *what = g_strdup_printf (
            "removing the bitmap %s", (const gchar *) g_ptr_array_index (self->snapshots, i));

        json_object_set_string_member (args, "node", self->dest_node);
        json_object_set_string_member (args, "name", g_ptr_array_index (self->snapshots, i));
        best_effort (self, "block-dirty-bitmap-remove", args, what);
    }
    if (self->serving) {
        best_effort (self, "nbd-server-stop", NULL, "stopping QEMU's NBD server");
    } else if (self->fd_passed) {
        g_autoptr (JsonObject) args = json_object_new ();

        json_object_set_string_member (args, "fdname", self->fd_name);
        best_effort (self, "closefd", args, "closing the NBD server's socket");
    }
    g_unlink (self->socket);
    g_ptr_array_set_size (self->exports, 0);
    g_ptr_array_set_size (self->snapshots, 0);
    self->serving = FALSE;
    self->fd_passed = FALSE;
}

/*
 * VmrNbdDirtySnapshotFunc, in this same thread: a disabled copy of the
 * pivot's bitmap made in one transaction (QEMU exports only a frozen bitmap
 * read-only), then its export
 */
static gboolean
snapshot_cb (gpointer user_data, guint round, gchar **export_name, gchar **context, GError **error)
{
    VmrLibvirtVerify *self = user_data;
    g_autofree gchar *name = g_strdup_printf ("%s-verify-%u", self->job_id, round);
    g_autofree gchar *export_id = g_strdup_printf ("%s-written-%u", self->job_id, round);
    g_autoptr (JsonObject) args = vmr_qmp_bitmap_copy_args (self->dest_node, self->bitmap, name);
    g_autoptr (JsonNode) reply = NULL;

    reply = vmr_libvirt_domain_qemu_command (self->dom, "transaction", args, error);
    if (reply == NULL) {
        g_prefix_error (error, "QEMU cannot copy the record of the guest's writes: ");
        return FALSE;
    }
    g_ptr_array_add (self->snapshots, g_strdup (name));
    if (!add_export (self, export_id, name, error)) {
        g_prefix_error (error, "QEMU cannot export the guest's writes since the pivot: ");
        return FALSE;
    }
    *export_name = g_steal_pointer (&export_id);
    *context = g_strdup_printf ("qemu:dirty-bitmap:%s", name);
    return TRUE;
}

/* whether the domain's QEMU can export the job's disk safely, see verification.h */
static gboolean
qemu_can_verify (VmrLibvirtVerify *self, virDomain *dom, GError **error)
{
    g_autoptr (GPtrArray) disks = NULL;
    unsigned long version = 0;

    /* the QEMU driver's version is QEMU's, 1000000 * major + 1000 * minor + micro */
    if (virConnectGetVersion (virDomainGetConnect (dom), &version) < 0) {
        g_debug ("job %s: no QEMU version: %s", self->job_id, virGetLastErrorMessage ());
        return TRUE;
    }
    disks = vmr_libvirt_domain_read_disks (dom, NULL);
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrDisk *disk = disks->pdata[i];

        if (g_strcmp0 (disk->id, self->disk) == 0)
            return vmr_verification_qemu_can_verify (disk, (guint) (version / 1000000), error);
    }
    return TRUE;
}

gboolean
vmr_libvirt_verify_run (VmrLibvirtVerify *self, virDomain *dom, GCancellable *cancellable,
                        GError **error)
{
    gboolean ok;

    if (!qemu_can_verify (self, dom, error))
        return FALSE;
    self->dom = dom;
    g_clear_pointer (&self->dest_node, g_free);
    self->dest_node = find_node (dom, self->destination, self->bitmap, error);
    ok = self->dest_node != NULL && start_server (self, error);
    if (ok && !add_export (self, self->new_export, NULL, error)) {
        g_prefix_error (error, "QEMU cannot export %s (node %s): ", self->destination->location,
                        self->dest_node);
        ok = FALSE;
    }
    if (ok) {
        ok = vmr_nbd_compare_run (self->compare, cancellable, error);
        if (!ok)
            g_prefix_error (error, "comparing %s with %s: ", self->source,
                            self->destination->location);
    }
    teardown (self);
    self->dom = NULL;
    return ok;
}
