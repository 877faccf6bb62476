#define G_LOG_DOMAIN "vmr-daemon"

#include "libvirt-xml.h"

#include <gio/gio.h>
#include <string.h>

void
vmr_libvirt_disk_free (VmrLibvirtDisk *self)
{
    if (self == NULL)
        return;
    g_free (self->target);
    g_free (self->device);
    g_free (self->type);
    g_free (self->path);
    g_free (self->format);
    g_free (self->discard);
    g_free (self->alias);
    g_free (self->iothread);
    g_strfreev (self->iothreads);
    g_free (self->mirror_path);
    g_free (self);
}

static const gchar *
attr (const gchar **names, const gchar **values, const gchar *name)
{
    for (guint i = 0; names[i] != NULL; i++) {
        if (g_strcmp0 (names[i], name) == 0)
            return values[i];
    }
    return NULL;
}

/* the element names from the root down to the current element */
static const gchar *
stack_at (GPtrArray *stack, guint i)
{
    return i < stack->len ? g_ptr_array_index (stack, i) : NULL;
}

/* TRUE when an element @name opening at @stack is a disk of the domain */
static gboolean
is_domain_disk (GPtrArray *stack, const gchar *name)
{
    return stack->len == 2 && g_strcmp0 (name, "disk") == 0
           && g_strcmp0 (stack_at (stack, 0), "domain") == 0
           && g_strcmp0 (stack_at (stack, 1), "devices") == 0;
}

/* ---- reading the disks ---- */

typedef struct {
    GPtrArray *stack;           /* element names, owned */
    GPtrArray *disks;           /* of VmrLibvirtDisk *, the result */
    VmrLibvirtDisk *disk;       /* the disk being read, NULL outside one */
    guint disk_depth;           /* stack length inside that disk element */
    GPtrArray *queue_iothreads; /* I/O threads of a per-queue mapping, owned strings */
    GArray *on_scsi;            /* of gint per disk: its SCSI controller's index, or -1 */
    GHashTable *scsi_iothreads; /* SCSI controller index -> its I/O thread, owned */
    gint scsi_controller;       /* the <controller type='scsi'> being read, or -1 */
    gint disk_scsi;             /* the disk being read is on SCSI: 0, else -1 */
    gint disk_controller;       /* its <address controller>, 0 when it has none */
    gchar **nbd_into;           /* an NBD <source> read: where its URI goes once its <host> is */
    gchar *nbd_export;          /* ... its name, owned */
    gboolean nbd_tls;           /* ... and tls='yes' */
} ParseState;

/*
 * <source protocol='nbd' name='EXPORT' tls='yes'> of the disk or of its
 * <mirror>: the URI is made when its <host> comes
 */
static gboolean
read_nbd_source (ParseState *state, gchar **into, const gchar **names, const gchar **values)
{
    if (g_strcmp0 (attr (names, values, "protocol"), "nbd") != 0)
        return FALSE;
    g_free (state->nbd_export);
    state->nbd_export = g_strdup (attr (names, values, "name"));
    state->nbd_tls = g_strcmp0 (attr (names, values, "tls"), "yes") == 0;
    state->nbd_into = into;
    return TRUE;
}

/* the URI of an NBD <source>, from its <host name port> or <host transport='unix' socket> */
static void
read_nbd_host (ParseState *state, const gchar **names, const gchar **values)
{
    g_autofree gchar *export_part
        = g_uri_escape_string (state->nbd_export != NULL ? state->nbd_export : "", "/", FALSE);
    const gchar *socket = attr (names, values, "socket");
    const gchar *host = attr (names, values, "name");
    const gchar *port = attr (names, values, "port");
    gchar *uri = NULL;

    if (g_strcmp0 (attr (names, values, "transport"), "unix") == 0 && socket != NULL) {
        g_autofree gchar *socket_part = g_uri_escape_string (socket, "/", FALSE);

        uri = g_strdup_printf ("%s:///%s?socket=%s", state->nbd_tls ? "nbds+unix" : "nbd+unix",
                               export_part, socket_part);
    } else if (host != NULL) {
        gboolean v6 = strchr (host, ':') != NULL;

        uri = g_strdup_printf ("%s://%s%s%s:%s/%s", state->nbd_tls ? "nbds" : "nbd", v6 ? "[" : "",
                               host, v6 ? "]" : "", port != NULL ? port : "10809", export_part);
    }
    if (uri != NULL) {
        g_free (*state->nbd_into);
        *state->nbd_into = uri;
    }
    state->nbd_into = NULL;
}

/* TRUE when an element @name opening at @stack is a controller of the domain */
static gboolean
is_domain_controller (GPtrArray *stack, const gchar *name)
{
    return stack->len == 2 && g_strcmp0 (name, "controller") == 0
           && g_strcmp0 (stack_at (stack, 0), "domain") == 0
           && g_strcmp0 (stack_at (stack, 1), "devices") == 0;
}

/*
 * <controller type='scsi' index='N'> and its <driver iothread='M'>: a disk
 * on that controller runs on the controller's I/O thread
 */
static void
read_controller (ParseState *state, const gchar *name, const gchar **names, const gchar **values)
{
    const gchar *value;

    if (is_domain_controller (state->stack, name)) {
        value = attr (names, values, "index");
        state->scsi_controller
            = g_strcmp0 (attr (names, values, "type"), "scsi") == 0
                  ? (gint) g_ascii_strtoll (value != NULL ? value : "0", NULL, 10)
                  : -1;
    } else if (state->scsi_controller >= 0 && state->stack->len == 3
               && g_strcmp0 (stack_at (state->stack, 2), "controller") == 0
               && g_strcmp0 (name, "driver") == 0
               && (value = attr (names, values, "iothread")) != NULL) {
        g_hash_table_insert (state->scsi_iothreads, GINT_TO_POINTER (state->scsi_controller),
                             g_strconcat ("iothread", value, NULL));
    }
}

static void
add_queue_iothread (ParseState *state, const gchar *id)
{
    g_autofree gchar *name = g_strconcat ("iothread", id, NULL);

    for (guint i = 0; i < state->queue_iothreads->len; i++) {
        if (g_strcmp0 (g_ptr_array_index (state->queue_iothreads, i), name) == 0)
            return;
    }
    g_ptr_array_add (state->queue_iothreads, g_steal_pointer (&name));
}

static void
read_disk_child (ParseState *state, const gchar *name, const gchar **names, const gchar **values)
{
    VmrLibvirtDisk *disk = state->disk;
    guint rel = state->stack->len - state->disk_depth; /* 0: a direct child of <disk> */
    const gchar *parent = stack_at (state->stack, state->stack->len - 1);
    const gchar *value;

    if (rel == 0 && g_strcmp0 (name, "driver") == 0) {
        g_free (disk->format);
        disk->format = g_strdup (attr (names, values, "type"));
        g_free (disk->discard);
        disk->discard = g_strdup (attr (names, values, "discard"));
        value = attr (names, values, "iothread");
        if (value != NULL) {
            g_free (disk->iothread);
            disk->iothread = g_strconcat ("iothread", value, NULL);
        }
    } else if (rel == 0 && g_strcmp0 (name, "source") == 0) {
        if (read_nbd_source (state, &disk->path, names, values))
            return;
        value = attr (names, values, "file");
        if (value == NULL)
            value = attr (names, values, "dev");
        g_free (disk->path);
        disk->path = g_strdup (value);
    } else if (rel == 0 && g_strcmp0 (name, "target") == 0) {
        g_free (disk->target);
        disk->target = g_strdup (attr (names, values, "dev"));
        /* on controller 0 unless its <address> says otherwise */
        if (g_strcmp0 (attr (names, values, "bus"), "scsi") == 0 && state->disk_scsi < 0)
            state->disk_scsi = 0;
    } else if (rel == 0 && g_strcmp0 (name, "address") == 0
               && g_strcmp0 (attr (names, values, "type"), "drive") == 0) {
        value = attr (names, values, "controller");
        state->disk_controller = (gint) g_ascii_strtoll (value != NULL ? value : "0", NULL, 10);
    } else if (rel == 0 && g_strcmp0 (name, "readonly") == 0) {
        disk->read_only = TRUE;
    } else if (rel == 0 && g_strcmp0 (name, "alias") == 0) {
        g_free (disk->alias);
        disk->alias = g_strdup (attr (names, values, "name"));
    } else if (rel == 0 && g_strcmp0 (name, "mirror") == 0) {
        g_free (disk->mirror_path);
        disk->mirror_path = g_strdup (attr (names, values, "file"));
        disk->mirror_ready = g_strcmp0 (attr (names, values, "ready"), "yes") == 0;
        /* a mirror without a file of its own still is a copy in progress */
        if (disk->mirror_path == NULL)
            disk->mirror_path = g_strdup ("");
    } else if (g_strcmp0 (name, "host") == 0 && g_strcmp0 (parent, "source") == 0
               && state->nbd_into != NULL) {
        read_nbd_host (state, names, values);
    } else if (rel == 1 && g_strcmp0 (parent, "mirror") == 0 && g_strcmp0 (name, "source") == 0) {
        if (read_nbd_source (state, &disk->mirror_path, names, values))
            return;
        value = attr (names, values, "file");
        if (value == NULL)
            value = attr (names, values, "dev");
        if (value != NULL) {
            g_free (disk->mirror_path);
            disk->mirror_path = g_strdup (value);
        }
    } else if (rel == 2 && g_strcmp0 (name, "iothread") == 0 && g_strcmp0 (parent, "iothreads") == 0
               && g_strcmp0 (stack_at (state->stack, state->disk_depth), "driver") == 0) {
        value = attr (names, values, "id");
        if (value != NULL)
            add_queue_iothread (state, value);
    }
}

static void
parse_start_cb (GMarkupParseContext *context, const gchar *name, const gchar **names,
                const gchar **values, gpointer user_data, GError **error)
{
    ParseState *state = user_data;

    if (state->disk == NULL && is_domain_disk (state->stack, name)) {
        state->disk = g_new0 (VmrLibvirtDisk, 1);
        state->disk->type = g_strdup (attr (names, values, "type"));
        state->disk->device = g_strdup (attr (names, values, "device"));
        if (state->disk->device == NULL)
            state->disk->device = g_strdup ("disk");
        state->disk_depth = state->stack->len + 1;
        state->disk_scsi = -1;
        state->disk_controller = 0;
        state->nbd_into = NULL;
        g_ptr_array_set_size (state->queue_iothreads, 0);
    } else if (state->disk != NULL) {
        read_disk_child (state, name, names, values);
    } else {
        read_controller (state, name, names, values);
    }
    g_ptr_array_add (state->stack, g_strdup (name));
}

static void
parse_end_cb (GMarkupParseContext *context, const gchar *name, gpointer user_data, GError **error)
{
    ParseState *state = user_data;

    g_ptr_array_remove_index (state->stack, state->stack->len - 1);
    if (state->disk == NULL && state->stack->len == 2 && g_strcmp0 (name, "controller") == 0)
        state->scsi_controller = -1;
    if (state->disk == NULL || state->stack->len != state->disk_depth - 1)
        return;
    if (state->disk->iothread == NULL && state->queue_iothreads->len > 0) {
        g_ptr_array_add (state->queue_iothreads, NULL);
        state->disk->iothreads = g_strdupv ((gchar **) state->queue_iothreads->pdata);
        g_ptr_array_remove_index (state->queue_iothreads, state->queue_iothreads->len - 1);
        state->disk->iothread = g_strdup (state->disk->iothreads[0]);
    }
    {
        gint controller = state->disk_scsi < 0 ? -1 : state->disk_controller;

        g_array_append_val (state->on_scsi, controller);
    }
    g_ptr_array_add (state->disks, g_steal_pointer (&state->disk));
}

/* a SCSI disk without an I/O thread of its own takes its controller's (they come after the disks)
 */
static void
take_controller_iothreads (ParseState *state)
{
    for (guint i = 0; i < state->disks->len; i++) {
        VmrLibvirtDisk *disk = g_ptr_array_index (state->disks, i);
        gint controller = g_array_index (state->on_scsi, gint, i);
        const gchar *iothread;

        if (controller < 0 || disk->iothread != NULL)
            continue;
        iothread = g_hash_table_lookup (state->scsi_iothreads, GINT_TO_POINTER (controller));
        disk->iothread = g_strdup (iothread);
    }
}

/* a disk on one I/O thread lists just that one */
static void
list_single_iothreads (ParseState *state)
{
    for (guint i = 0; i < state->disks->len; i++) {
        VmrLibvirtDisk *disk = g_ptr_array_index (state->disks, i);
        const gchar *one[] = { disk->iothread, NULL };

        if (disk->iothread != NULL && disk->iothreads == NULL)
            disk->iothreads = g_strdupv ((gchar **) one);
    }
}

GPtrArray *
vmr_libvirt_xml_parse_disks (const gchar *xml, GError **error)
{
    const GMarkupParser parser = { parse_start_cb, parse_end_cb, NULL, NULL, NULL };
    g_autoptr (GPtrArray) stack = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GPtrArray) disks
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_libvirt_disk_free);
    g_autoptr (GPtrArray) queue_iothreads = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GArray) on_scsi = g_array_new (FALSE, FALSE, sizeof (gint));
    g_autoptr (GHashTable) scsi_iothreads = g_hash_table_new_full (NULL, NULL, NULL, g_free);
    ParseState state
        = { stack, disks, NULL, 0, queue_iothreads, on_scsi, scsi_iothreads, -1, -1, 0 };
    g_autoptr (GMarkupParseContext) context = NULL;
    gboolean ok;

    context = g_markup_parse_context_new (&parser, 0, &state, NULL);
    ok = g_markup_parse_context_parse (context, xml, -1, error)
         && g_markup_parse_context_end_parse (context, error);
    g_clear_pointer (&state.disk, vmr_libvirt_disk_free);
    g_free (state.nbd_export);
    if (!ok) {
        g_prefix_error (error, "invalid domain XML: ");
        return NULL;
    }
    take_controller_iothreads (&state);
    list_single_iothreads (&state);
    return g_steal_pointer (&disks);
}

VmrLibvirtDisk *
vmr_libvirt_xml_find_disk (GPtrArray *disks, const gchar *target)
{
    for (guint i = 0; disks != NULL && i < disks->len; i++) {
        VmrLibvirtDisk *disk = g_ptr_array_index (disks, i);

        if (g_strcmp0 (disk->target, target) == 0)
            return disk;
    }
    return NULL;
}

/* ---- rewriting a disk's source ---- */

typedef struct {
    GString *out;
    GPtrArray *stack;  /* element names, owned */
    guint disk_index;  /* the disk to rewrite, counted among the domain's disks */
    guint disks_seen;  /* domain disks opened so far */
    guint disk_depth;  /* stack length inside the disk being rewritten, 0 outside */
    guint skip_depth;  /* > 0 inside an element that is dropped */
    gboolean tag_open; /* "<name attrs" written, '>' or "/>" not yet */
    gboolean rewrote_source;
    const gchar *path;
    gboolean block;
    const gchar *network_source; /* the <source> element of a network disk, or NULL */
    const gchar *format;
} RewriteState;

static void
close_open_tag (RewriteState *state)
{
    if (state->tag_open)
        g_string_append_c (state->out, '>');
    state->tag_open = FALSE;
}

static void
write_attr (GString *out, const gchar *name, const gchar *value)
{
    g_autofree gchar *escaped = g_markup_escape_text (value, -1);

    g_string_append_printf (out, " %s='%s'", name, escaped);
}

static void
rewrite_start_cb (GMarkupParseContext *context, const gchar *name, const gchar **names,
                  const gchar **values, gpointer user_data, GError **error)
{
    RewriteState *state = user_data;
    gboolean opens_disk = FALSE;
    guint rel = state->disk_depth > 0 ? state->stack->len - state->disk_depth : G_MAXUINT;

    if (state->skip_depth > 0) {
        state->skip_depth++;
        g_ptr_array_add (state->stack, g_strdup (name));
        return;
    }
    if (is_domain_disk (state->stack, name))
        opens_disk = state->disks_seen++ == state->disk_index;
    /* a full copy has no backing chain */
    if (rel == 0 && g_strcmp0 (name, "backingStore") == 0) {
        state->skip_depth = 1;
        g_ptr_array_add (state->stack, g_strdup (name));
        return;
    }
    close_open_tag (state);
    /* a network disk's <source> is written whole: nothing of a file's fits it */
    if (rel == 0 && g_strcmp0 (name, "source") == 0 && state->network_source != NULL) {
        g_string_append (state->out, state->network_source);
        state->rewrote_source = TRUE;
        state->skip_depth = 1;
        g_ptr_array_add (state->stack, g_strdup (name));
        return;
    }
    g_string_append_printf (state->out, "<%s", name);
    if (rel == 0 && g_strcmp0 (name, "source") == 0) {
        write_attr (state->out, state->block ? "dev" : "file", state->path);
        state->rewrote_source = TRUE;
    }
    if (rel == 0 && g_strcmp0 (name, "driver") == 0 && attr (names, values, "type") == NULL)
        write_attr (state->out, "type", state->format);
    for (guint i = 0; names[i] != NULL; i++) {
        const gchar *value = values[i];

        if (opens_disk && g_strcmp0 (names[i], "type") == 0)
            value = state->network_source != NULL ? "network" : state->block ? "block" : "file";
        if (rel == 0 && g_strcmp0 (name, "source") == 0
            && (g_strcmp0 (names[i], "file") == 0 || g_strcmp0 (names[i], "dev") == 0
                || g_strcmp0 (names[i], "index") == 0))
            continue;
        if (rel == 0 && g_strcmp0 (name, "driver") == 0 && g_strcmp0 (names[i], "type") == 0)
            value = state->format;
        write_attr (state->out, names[i], value);
    }
    state->tag_open = TRUE;
    g_ptr_array_add (state->stack, g_strdup (name));
    if (opens_disk)
        state->disk_depth = state->stack->len;
}

static void
rewrite_end_cb (GMarkupParseContext *context, const gchar *name, gpointer user_data, GError **error)
{
    RewriteState *state = user_data;

    if (state->disk_depth > 0 && state->stack->len == state->disk_depth)
        state->disk_depth = 0;
    g_ptr_array_remove_index (state->stack, state->stack->len - 1);
    if (state->skip_depth > 0) {
        state->skip_depth--;
        return;
    }
    if (state->tag_open)
        g_string_append (state->out, "/>");
    else
        g_string_append_printf (state->out, "</%s>", name);
    state->tag_open = FALSE;
}

static void
rewrite_text_cb (GMarkupParseContext *context, const gchar *text, gsize len, gpointer user_data,
                 GError **error)
{
    RewriteState *state = user_data;
    g_autofree gchar *escaped = NULL;

    if (state->skip_depth > 0 || len == 0)
        return;
    close_open_tag (state);
    escaped = g_markup_escape_text (text, (gssize) len);
    g_string_append (state->out, escaped);
}

static void
rewrite_passthrough_cb (GMarkupParseContext *context, const gchar *text, gsize len,
                        gpointer user_data, GError **error)
{
    RewriteState *state = user_data;

    if (state->skip_depth > 0)
        return;
    close_open_tag (state);
    g_string_append_len (state->out, text, (gssize) len);
}

static gchar *
rewrite_disk (const gchar *xml, const gchar *target, RewriteState *state, GError **error)
{
    const GMarkupParser parser
        = { rewrite_start_cb, rewrite_end_cb, rewrite_text_cb, rewrite_passthrough_cb, NULL };
    g_autoptr (GPtrArray) disks = vmr_libvirt_xml_parse_disks (xml, error);
    g_autoptr (GPtrArray) stack = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GString) out = g_string_new (NULL);
    g_autoptr (GMarkupParseContext) context = NULL;
    guint index = 0;

    if (disks == NULL)
        return NULL;
    while (index < disks->len
           && g_strcmp0 (((VmrLibvirtDisk *) g_ptr_array_index (disks, index))->target, target)
                  != 0)
        index++;
    if (index == disks->len) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "the definition has no disk %s",
                     target);
        return NULL;
    }
    state->out = out;
    state->stack = stack;
    state->disk_index = index;
    context = g_markup_parse_context_new (&parser, 0, state, NULL);
    if (!g_markup_parse_context_parse (context, xml, -1, error)
        || !g_markup_parse_context_end_parse (context, error)) {
        g_prefix_error (error, "invalid domain XML: ");
        return NULL;
    }
    if (!state->rewrote_source) {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "disk %s has no source to change",
                     target);
        return NULL;
    }
    /* GMarkup reports nothing after the root element */
    g_string_append_c (out, '\n');
    return g_string_free (g_steal_pointer (&out), FALSE);
}

gchar *
vmr_libvirt_xml_set_disk_source (const gchar *xml, const gchar *target, const gchar *path,
                                 gboolean block, const gchar *format, GError **error)
{
    RewriteState state
        = { .path = path, .block = block, .format = format != NULL ? format : "raw" };

    return rewrite_disk (xml, target, &state, error);
}

gchar *
vmr_libvirt_xml_set_disk_network_source (const gchar *xml, const gchar *target, const gchar *source,
                                         const gchar *format, GError **error)
{
    RewriteState state = { .network_source = source, .format = format != NULL ? format : "raw" };

    return rewrite_disk (xml, target, &state, error);
}
