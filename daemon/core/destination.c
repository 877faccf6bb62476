#define G_LOG_DOMAIN "vmr-daemon"

#include "destination-private.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qmp-vocab.h"
#include "units.h"
#include "vmr-error.h"

/* the formats a destination may have */
static const struct {
    const gchar *name;
    gboolean has_virtual_size; /* the image records its size; FALSE: the file's size is it */
} formats[] = {
    { "raw", FALSE },
    { "qcow2", TRUE },
};

static gint
format_index (const gchar *format)
{
    for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
        if (g_strcmp0 (formats[i].name, format) == 0)
            return (gint) i;
    }
    return -1;
}

gboolean
vmr_destination_format_is_valid (const gchar *format)
{
    return format_index (format) >= 0;
}

gboolean
vmr_destination_check_format (const gchar *format, GError **error)
{
    if (vmr_destination_format_is_valid (format))
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                 "unsupported destination format '%s' (use raw or qcow2)", format);
    return FALSE;
}

gboolean
vmr_destination_has_virtual_size (const VmrDestination *self)
{
    gint i = format_index (self->format);

    return i >= 0 && formats[i].has_virtual_size;
}

/* ---- the object ---- */

VmrDestinationKind
vmr_destination_kind_of (const GStatBuf *st)
{
    return st != NULL && S_ISBLK (st->st_mode) ? VMR_DESTINATION_BLOCK : VMR_DESTINATION_FILE;
}

VmrDestination *
vmr_destination_new_of_kind (VmrDestinationKind kind, const gchar *location, const gchar *format,
                             gboolean created)
{
    VmrDestination *self = g_atomic_rc_box_new0 (VmrDestination);

    self->kind = kind;
    self->location = g_strdup (location);
    self->format = g_strdup (format);
    self->created = created;
    switch (kind) {
        case VMR_DESTINATION_FILE:
            /* files share the bandwidth of their directory's file system */
            self->admission_key = g_path_get_dirname (location);
            break;
        case VMR_DESTINATION_BLOCK:
            /* a block device is a destination of its own */
            self->admission_key = g_strdup (location);
            break;
        case VMR_DESTINATION_NBD:
            /* the exports of one server share its bandwidth */
            self->nbd = vmr_nbd_uri_parse (location, NULL);
            g_assert (self->nbd != NULL);
            self->admission_key = vmr_nbd_uri_server (self->nbd);
            break;
    }
    return self;
}

/* vmr_destination_new_full() of an NBD URI: raw, never made by the copy */
static VmrDestination *
new_nbd (const gchar *location, const gchar *format, const VmrDestinationNbdOptions *options,
         GError **error)
{
    g_autoptr (VmrNbdUri) uri = vmr_nbd_uri_parse (location, error);
    VmrDestination *self;

    if (uri == NULL)
        return NULL;
    if (g_strcmp0 (format, "raw") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "an NBD export is a raw disk: format '%s' is not supported for %s", format,
                     uri->canonical);
        return NULL;
    }
    self = vmr_destination_new_of_kind (VMR_DESTINATION_NBD, uri->canonical, format, FALSE);
    if (options != NULL) {
        self->tls_creds = uri->tls ? g_strdup (options->tls_creds) : NULL;
        self->reconnect_delay_s = options->reconnect_delay_s;
    }
    return self;
}

VmrDestination *
vmr_destination_new (const gchar *location, const gchar *format, gboolean created, GError **error)
{
    return vmr_destination_new_full (location, format, created, NULL, error);
}

VmrDestination *
vmr_destination_new_full (const gchar *location, const gchar *format, gboolean created,
                          const VmrDestinationNbdOptions *nbd, GError **error)
{
    GStatBuf st;

    if (format == NULL)
        format = "raw";
    if (vmr_nbd_uri_is_uri (location))
        return new_nbd (location, format, nbd, error);
    if (location == NULL || !g_path_is_absolute (location)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination '%s' is not an absolute path", location ? location : "");
        return NULL;
    }
    if (!vmr_destination_check_format (format, error))
        return NULL;
    return vmr_destination_new_of_kind (
        vmr_destination_kind_of (g_stat (location, &st) == 0 ? &st : NULL), location, format,
        created);
}

VmrDestination *
vmr_destination_ref (VmrDestination *self)
{
    return g_atomic_rc_box_acquire (self);
}

static void
destination_clear (VmrDestination *self)
{
    g_free (self->location);
    g_free (self->format);
    g_free (self->admission_key);
    g_clear_pointer (&self->nbd, vmr_nbd_uri_free);
    g_free (self->tls_creds);
}

void
vmr_destination_unref (VmrDestination *self)
{
    g_atomic_rc_box_release_full (self, (GDestroyNotify) destination_clear);
}

/* ---- a file or block device on this host ---- */

/* TRUE when @a and @b are the same file, or the same canonical path when either is missing */
static gboolean
same_file (const gchar *a, const gchar *b)
{
    GStatBuf sa, sb;
    g_autofree gchar *ca = NULL;
    g_autofree gchar *cb = NULL;

    if (g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    ca = g_canonicalize_filename (a, "/");
    cb = g_canonicalize_filename (b, "/");
    return g_strcmp0 (ca, cb) == 0;
}

const gchar *
vmr_destination_raw_path (const VmrDestination *self)
{
    switch (self->kind) {
        case VMR_DESTINATION_FILE:
        case VMR_DESTINATION_BLOCK:
            return g_strcmp0 (self->format, "raw") == 0 ? self->location : NULL;
        case VMR_DESTINATION_NBD:
            return NULL;
    }
    g_assert_not_reached ();
}

gboolean
vmr_destination_same_target (const VmrDestination *self, const gchar *location)
{
    if (location == NULL)
        return FALSE;
    switch (self->kind) {
        case VMR_DESTINATION_FILE:
        case VMR_DESTINATION_BLOCK:
            return !vmr_nbd_uri_is_uri (location) && same_file (self->location, location);
        case VMR_DESTINATION_NBD:
            return vmr_destination_nbd_same_target (self, location);
    }
    g_assert_not_reached ();
}

static gboolean
file_size (const gchar *path, const GStatBuf *st, guint64 *out_size, GError **error)
{
    if (S_ISBLK (st->st_mode)) {
        guint64 bytes = 0;
        int fd = open (path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || ioctl (fd, BLKGETSIZE64, &bytes) < 0) {
            int saved = errno;

            if (fd >= 0)
                close (fd);
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "cannot read the size of %s: %s", path, g_strerror (saved));
            return FALSE;
        }
        close (fd);
        *out_size = bytes;
        return TRUE;
    }
    *out_size = (guint64) st->st_size;
    return TRUE;
}

/* the size in bytes of the file or block device @path */
static gboolean
get_size (const gchar *path, guint64 *out_size, GError **error)
{
    GStatBuf st;

    if (g_stat (path, &st) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot use %s: %s", path,
                     g_strerror (errno));
        return FALSE;
    }
    return file_size (path, &st, out_size, error);
}

/* vmr_destination_check() of a file or block device */
static gboolean
check_local (const VmrDestination *self, guint64 source_size, const gchar *const *in_use,
             guint64 *out_size, GError **error)
{
    const gchar *path = self->location;
    gboolean reuse = !self->created;
    g_autofree gchar *dir = NULL;
    GStatBuf st;
    gboolean exists;

    for (guint i = 0; in_use != NULL && in_use[i] != NULL; i++) {
        if (vmr_destination_same_target (self, in_use[i])) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s is a disk of the domain already", path);
            return FALSE;
        }
    }
    dir = g_path_get_dirname (path);
    if (!g_file_test (dir, G_FILE_TEST_IS_DIR)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination directory %s does not exist", dir);
        return FALSE;
    }
    exists = g_stat (path, &st) == 0;
    if (!exists && errno != ENOENT) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "cannot use destination %s: %s",
                     path, g_strerror (errno));
        return FALSE;
    }
    /* qemu-img would create the file a dangling link points to, wherever that is */
    if (!exists && g_lstat (path, &st) == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is a symbolic link to nothing", path);
        return FALSE;
    }
    if (!exists) {
        if (reuse) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination %s does not exist (--reuse needs an existing file)", path);
            return FALSE;
        }
        /* access() also reports a read-only or immutable directory for root */
        if (access (dir, W_OK | X_OK) < 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "destination directory %s is not writable: %s", dir, g_strerror (errno));
            return FALSE;
        }
        return TRUE;
    }
    if (!reuse) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s exists; pass --reuse to copy onto it", path);
        return FALSE;
    }
    if (S_ISDIR (st.st_mode)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "destination %s is a directory",
                     path);
        return FALSE;
    }
    if (!S_ISREG (st.st_mode) && !S_ISBLK (st.st_mode)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is neither a file nor a block device", path);
        return FALSE;
    }
    if (access (path, R_OK | W_OK) < 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is not writable: %s", path, g_strerror (errno));
        return FALSE;
    }
    if (!file_size (path, &st, out_size, error))
        return FALSE;
    /* a qcow2 file's virtual size is checked once QEMU has opened it */
    if (!vmr_destination_has_virtual_size (self) && *out_size < source_size) {
        g_autofree gchar *have = vmr_units_format_bytes (*out_size);
        g_autofree gchar *need = vmr_units_format_bytes (source_size);

        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "destination %s is smaller than the source (%s < %s)", path, have, need);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_destination_check (const VmrDestination *self, guint64 source_size, const gchar *const *in_use,
                       guint64 *out_size, GError **error)
{
    guint64 existing_size = 0;
    gboolean ok = FALSE;

    switch (self->kind) {
        case VMR_DESTINATION_FILE:
        case VMR_DESTINATION_BLOCK:
            ok = check_local (self, source_size, in_use, &existing_size, error);
            break;
        case VMR_DESTINATION_NBD:
            ok = vmr_destination_nbd_check (self, in_use, error);
            break;
    }
    if (out_size != NULL)
        *out_size = ok ? existing_size : 0;
    return ok;
}

/* ---- how the backends name it ---- */

/* the size of the node, 0 for all of its file: a larger raw file, device or export is used for
 * its first bytes only */
static guint64
node_size (const VmrDestination *self, const VmrDisk *source)
{
    guint64 dest_size = 0;

    if (self->kind == VMR_DESTINATION_NBD)
        return source->size;
    if (!vmr_destination_has_virtual_size (self) && !self->created
        && get_size (self->location, &dest_size, NULL) && dest_size > source->size)
        return source->size;
    return 0;
}

JsonObject *
vmr_destination_to_blockdev_add (const VmrDestination *self, const gchar *node_name,
                                 const VmrDisk *source, const VmrNbdExportFacts *facts)
{
    g_autoptr (JsonObject) file = NULL;
    g_autofree gchar *file_node = g_strdup_printf ("%s-file", node_name);
    VmrQmpBlockdevArgs args = {
        .driver = self->format,
        .node_name = node_name,
        .cache_direct = source->cache_direct,
        .cache_no_flush = source->cache_no_flush,
        .size = node_size (self, source),
    };

    switch (self->kind) {
        case VMR_DESTINATION_FILE:
        case VMR_DESTINATION_BLOCK:
            file = vmr_qmp_blockdev_local (
                self->kind == VMR_DESTINATION_FILE ? "file" : "host_device", self->location,
                file_node, source->file_cache_direct, source->file_cache_no_flush);
            break;
        case VMR_DESTINATION_NBD:
            file = vmr_destination_nbd_blockdev_file (self, node_name);
            json_object_set_string_member (file, "node-name", file_node);
            args.detect_zeroes = vmr_destination_nbd_detect_zeroes (facts);
            break;
    }
    args.file = file;
    return vmr_qmp_blockdev_format (&args);
}

gchar *
vmr_destination_to_libvirt_xml (const VmrDestination *self)
{
    switch (self->kind) {
        case VMR_DESTINATION_FILE:
            return g_markup_printf_escaped (
                "<disk type='file'><source file='%s'/><driver type='%s'/></disk>", self->location,
                self->format);
        case VMR_DESTINATION_BLOCK:
            return g_markup_printf_escaped (
                "<disk type='block'><source dev='%s'/><driver type='%s'/></disk>", self->location,
                self->format);
        case VMR_DESTINATION_NBD:
            return vmr_destination_nbd_to_libvirt_xml (self);
    }
    g_assert_not_reached ();
}
