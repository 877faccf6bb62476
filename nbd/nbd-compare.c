#define G_LOG_DOMAIN "vmr-nbd"

#include "nbd-compare.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "nbd-handle.h"
#include "vmr-error.h"

/* block status is asked for this much of the disk at a time */
#define STATUS_WINDOW (1ull << 30)
/* chunk pairs read ahead while one is compared */
#define READ_DEPTH 4
/* the dirty bitmap's own flag in its meta context */
#define DIRTY_FLAG 1u

struct _VmrNbdCompare {
    gchar *source_socket;
    gchar **source_command; /* NULL: connect to source_socket */
    gchar *source_export;
    gchar *dest_socket;
    gchar *dest_export;
    gchar *source_raw_path; /* NULL: read through the export */
    gchar *dest_raw_path;
    gint source_fd; /* of the raw path, -1 = none */
    gint dest_fd;
    VmrNbdDirtySnapshotFunc dirty_snapshot; /* NULL: no record of writes */
    gpointer dirty_snapshot_data;
    guint64 chunk_size;
    guint recheck_delay_ms[2];

    VmrNbdHandle *source;
    VmrNbdHandle *dest;
    VmrNbdHandle *dirty;        /* the newest snapshot's export, NULL before the first */
    gchar *dirty_context;       /* its meta context */
    gboolean source_has_status; /* base:allocation negotiated */
    gboolean dest_has_status;

    GMutex lock; /* guards figures */
    VmrNbdCompareFigures figures;
    VmrRangeList *mismatches;
};

VmrNbdCompare *
vmr_nbd_compare_new (const VmrNbdCompareSpec *spec)
{
    VmrNbdCompare *self = g_new0 (VmrNbdCompare, 1);

    self->source_socket = g_strdup (spec->source.socket);
    self->source_command = g_strdupv ((gchar **) spec->source.command);
    self->source_export = g_strdup (spec->source.export_name);
    self->dest_socket = g_strdup (spec->dest.socket);
    self->dest_export = g_strdup (spec->dest.export_name);
    self->source_raw_path = g_strdup (spec->source.raw_path);
    self->dest_raw_path = g_strdup (spec->dest.raw_path);
    self->source_fd = -1;
    self->dest_fd = -1;
    self->dirty_snapshot = spec->dirty_snapshot;
    self->dirty_snapshot_data = spec->dirty_snapshot_data;
    /* reads from the page cache compare best in chunks that stay in the CPU's cache;
     * NBD reads best in large ones */
    if (spec->chunk_size > 0)
        self->chunk_size = spec->chunk_size;
    else if (spec->source.raw_path != NULL && spec->dest.raw_path != NULL)
        self->chunk_size = VMR_NBD_COMPARE_FILE_CHUNK;
    else
        self->chunk_size = VMR_NBD_COMPARE_CHUNK;
    if (spec->recheck_delay_ms[0] == 0 && spec->recheck_delay_ms[1] == 0) {
        self->recheck_delay_ms[0] = 200;
        self->recheck_delay_ms[1] = 1000;
    } else {
        self->recheck_delay_ms[0] = spec->recheck_delay_ms[0];
        self->recheck_delay_ms[1] = spec->recheck_delay_ms[1];
    }
    g_mutex_init (&self->lock);
    self->mismatches = vmr_range_list_new ();
    return self;
}

void
vmr_nbd_compare_disconnect (VmrNbdCompare *self)
{
    g_clear_pointer (&self->source, nbd_close);
    g_clear_pointer (&self->dest, nbd_close);
    g_clear_pointer (&self->dirty, nbd_close);
    if (self->source_fd >= 0)
        close (self->source_fd);
    if (self->dest_fd >= 0)
        close (self->dest_fd);
    self->source_fd = -1;
    self->dest_fd = -1;
}

void
vmr_nbd_compare_free (VmrNbdCompare *self)
{
    vmr_nbd_compare_disconnect (self);
    g_free (self->source_socket);
    g_strfreev (self->source_command);
    g_free (self->source_export);
    g_free (self->dest_socket);
    g_free (self->dest_export);
    g_free (self->source_raw_path);
    g_free (self->dest_raw_path);
    g_free (self->dirty_context);
    g_mutex_clear (&self->lock);
    g_array_unref (self->mismatches);
    g_free (self);
}

VmrNbdCompareFigures
vmr_nbd_compare_get_figures (VmrNbdCompare *self)
{
    VmrNbdCompareFigures figures;

    g_mutex_lock (&self->lock);
    figures = self->figures;
    g_mutex_unlock (&self->lock);
    return figures;
}

const VmrRangeList *
vmr_nbd_compare_get_mismatches (VmrNbdCompare *self)
{
    return self->mismatches;
}

/* ---- connecting ---- */

/* connects to @socket, or runs @command (see VmrNbdExport) */
static VmrNbdHandle *
connect_export (const gchar *socket, gchar **command, const gchar *export_name,
                const gchar *dirty_context, gboolean *has_status, GError **error)
{
    g_autoptr (VmrNbdHandle) nbd = vmr_nbd_handle_new (export_name, error);
    g_autofree gchar *what = NULL;

    if (nbd == NULL)
        return NULL;
    if (nbd_set_export_name (nbd, export_name) == -1
        || nbd_add_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1
        || (dirty_context != NULL && nbd_add_meta_context (nbd, dirty_context) == -1)) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot set up the NBD handle");
        return NULL;
    }
    if ((command != NULL ? nbd_connect_systemd_socket_activation (nbd, command)
                         : nbd_connect_unix (nbd, socket))
        == -1) {
        what = command != NULL
                   ? g_strdup_printf ("cannot run %s for the export %s", command[0], export_name)
                   : g_strdup_printf ("cannot connect to the export %s", export_name);
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, what);
        return NULL;
    }
    *has_status = nbd_can_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
    if (dirty_context != NULL && nbd_can_meta_context (nbd, dirty_context) != 1) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "the export %s does not offer %s: the guest's writes cannot be told apart",
                     export_name, dirty_context);
        return NULL;
    }
    return g_steal_pointer (&nbd);
}

/* the snapshot of the guest's writes for @round, replacing the one before */
static gboolean
open_dirty (VmrNbdCompare *self, guint round, GError **error)
{
    g_autofree gchar *export_name = NULL;
    g_autofree gchar *context = NULL;
    gboolean has_status;

    if (self->dirty_snapshot == NULL)
        return TRUE;
    g_clear_pointer (&self->dirty, nbd_close);
    g_clear_pointer (&self->dirty_context, g_free);
    if (!self->dirty_snapshot (self->dirty_snapshot_data, round, &export_name, &context, error))
        return FALSE;
    self->dirty
        = connect_export (self->dest_socket, NULL, export_name, context, &has_status, error);
    if (self->dirty == NULL)
        return FALSE;
    self->dirty_context = g_steal_pointer (&context);
    return TRUE;
}

/* ---- block status ---- */

/* what one block status request found about [offset, offset + window) */
typedef struct {
    guint64 offset;
    guint64 window;
    const gchar *dirty_context;
    VmrRangeList *data;     /* not zero */
    VmrRangeList *dirty;    /* written by the guest */
    guint64 allocation_end; /* how far base:allocation went */
    guint64 dirty_end;      /* how far the bitmap went */
} StatusReply;

static int
extent_cb (void *user_data, const char *metacontext, uint64_t offset, uint32_t *entries,
           size_t nr_entries, int *error)
{
    StatusReply *reply = user_data;
    gboolean is_dirty = g_strcmp0 (metacontext, reply->dirty_context) == 0;
    guint64 end = reply->offset + reply->window;
    guint64 pos = offset;

    if (!is_dirty && g_strcmp0 (metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0)
        return 0;
    for (size_t i = 0; i + 1 < nr_entries && pos < end; i += 2) {
        guint64 length = MIN ((guint64) entries[i], end - pos);
        guint32 flags = entries[i + 1];

        if (is_dirty && (flags & DIRTY_FLAG) != 0 && reply->dirty != NULL)
            vmr_range_list_add (reply->dirty, pos, length);
        else if (!is_dirty && (flags & LIBNBD_STATE_ZERO) == 0 && reply->data != NULL)
            vmr_range_list_add (reply->data, pos, length);
        pos += length;
    }
    if (is_dirty)
        reply->dirty_end = MAX (reply->dirty_end, pos);
    else
        reply->allocation_end = MAX (reply->allocation_end, pos);
    return 0;
}

/*
 * Block status of @nbd from @offset for at most @window bytes: the ranges
 * with data into @data and the ranges the bitmap marks into @dirty (either
 * may be NULL). Returns how many bytes from @offset the answer covers (at
 * least one granule; the server may answer for less than was asked), 0 on
 * error.
 */
static guint64
query_status (VmrNbdHandle *nbd, gboolean has_status, const gchar *dirty_context, guint64 offset,
              guint64 window, VmrRangeList *data, VmrRangeList *dirty, GError **error)
{
    StatusReply reply = { offset, window, dirty_context, data, dirty, offset, offset };
    nbd_extent_callback callback = { .callback = extent_cb, .user_data = &reply };
    guint64 covered = window;

    if (!has_status && dirty_context == NULL) {
        /* nothing to tell zeros apart: everything is data */
        if (data != NULL)
            vmr_range_list_add (data, offset, window);
        return window;
    }
    if (nbd_block_status (nbd, window, offset, callback, 0) == -1) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "block status failed");
        return 0;
    }
    if (!has_status && data != NULL)
        vmr_range_list_add (data, offset, window);
    if (has_status)
        covered = MIN (covered, reply.allocation_end - offset);
    if (dirty_context != NULL)
        covered = MIN (covered, reply.dirty_end - offset);
    if (covered == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "block status of %s at %" G_GUINT64_FORMAT " answered for no bytes (%s)",
                     nbd_get_export_name (nbd), offset,
                     has_status && reply.allocation_end == offset ? LIBNBD_CONTEXT_BASE_ALLOCATION
                                                                  : dirty_context);
        return 0;
    }
    return covered;
}

/* the ranges of [@offset, @offset + @length) the destination's bitmap marks, into @dirty */
static gboolean
query_dirty (VmrNbdCompare *self, guint64 offset, guint64 length, VmrRangeList *dirty,
             GError **error)
{
    guint64 end = offset + length;

    while (offset < end) {
        guint64 covered = query_status (self->dirty, FALSE, self->dirty_context, offset,
                                        MIN (end - offset, STATUS_WINDOW), NULL, dirty, error);

        if (covered == 0)
            return FALSE;
        offset += covered;
    }
    return TRUE;
}

/* ---- reading and comparing ---- */

typedef struct {
    VmrRange chunk;
    guint8 *source_buf;
    guint8 *dest_buf;
    gint64 source_cookie;
    gint64 dest_cookie;
} ReadSlot;

/* @length bytes at @offset of a raw image, in full */
static gboolean
pread_all (gint fd, guint8 *buf, gsize length, guint64 offset, const gchar *what, GError **error)
{
    gsize done = 0;

    while (done < length) {
        gssize n = pread (fd, buf + done, length - done, (off_t) (offset + done));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                         "cannot read %s at %" G_GUINT64_FORMAT ": %s", what, offset + done,
                         n < 0 ? g_strerror (errno) : "end of file");
            return FALSE;
        }
        done += (gsize) n;
    }
    return TRUE;
}

/* waits for the read @cookie of @nbd, or reads from @fd when it is not -1 */
static gboolean
finish_read (VmrNbdHandle *nbd, gint fd, gint64 cookie, guint8 *buf, const VmrRange *chunk,
             const gchar *what, GError **error)
{
    gint done;

    if (fd >= 0)
        return pread_all (fd, buf, chunk->length, chunk->offset, what, error);
    while ((done = nbd_aio_command_completed (nbd, (guint64) cookie)) == 0) {
        if (nbd_poll (nbd, -1) == -1)
            break;
    }
    if (done != 1) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "read failed");
        return FALSE;
    }
    return TRUE;
}

/* sends the reads of the sides read through their exports */
static gboolean
start_read (VmrNbdCompare *self, ReadSlot *slot, const VmrRange *chunk, GError **error)
{
    slot->chunk = *chunk;
    if (self->source_fd < 0) {
        slot->source_cookie = nbd_aio_pread (self->source, slot->source_buf, chunk->length,
                                             chunk->offset, NBD_NULL_COMPLETION, 0);
        if (slot->source_cookie == -1) {
            vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot read the source");
            return FALSE;
        }
    }
    if (self->dest_fd < 0) {
        slot->dest_cookie = nbd_aio_pread (self->dest, slot->dest_buf, chunk->length, chunk->offset,
                                           NBD_NULL_COMPLETION, 0);
        if (slot->dest_cookie == -1) {
            vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot read the destination");
            return FALSE;
        }
    }
    return TRUE;
}

/* both sides of @slot, read */
static gboolean
finish_slot (VmrNbdCompare *self, ReadSlot *slot, GError **error)
{
    return finish_read (self->source, self->source_fd, slot->source_cookie, slot->source_buf,
                        &slot->chunk, "the source", error)
           && finish_read (self->dest, self->dest_fd, slot->dest_cookie, slot->dest_buf,
                           &slot->chunk, "the destination", error);
}

/*
 * Reads the ranges of @ranges on both sides, READ_DEPTH chunks ahead, and
 * adds the granules that differ to @differences. @compared counts the bytes.
 */
static gboolean
compare_ranges (VmrNbdCompare *self, const VmrRangeList *ranges, VmrRangeList *differences,
                guint64 *compared, GCancellable *cancellable, GError **error)
{
    g_autoptr (GArray) chunks = vmr_range_list_plan_chunks (ranges, self->chunk_size);
    ReadSlot slots[READ_DEPTH] = { 0 };
    guint next = 0; /* the next chunk to start */
    guint done = 0; /* the next chunk to compare */
    gboolean ok = TRUE;

    for (guint i = 0; i < READ_DEPTH; i++) {
        slots[i].source_buf = g_malloc (self->chunk_size);
        slots[i].dest_buf = g_malloc (self->chunk_size);
    }
    for (; ok && next < chunks->len && next < READ_DEPTH; next++)
        ok = start_read (self, &slots[next % READ_DEPTH], &g_array_index (chunks, VmrRange, next),
                         error);
    while (ok && done < next) {
        ReadSlot *slot = &slots[done % READ_DEPTH];

        ok = finish_slot (self, slot, error);
        if (!ok)
            break;
        vmr_range_list_add_differences (differences, slot->chunk.offset, slot->source_buf,
                                        slot->dest_buf, slot->chunk.length,
                                        VMR_NBD_COMPARE_GRANULE);
        *compared += slot->chunk.length;
        done++;
        if (g_cancellable_set_error_if_cancelled (cancellable, error))
            ok = FALSE;
        else if (next < chunks->len)
            ok = start_read (self, slot, &g_array_index (chunks, VmrRange, next++), error);
    }
    for (guint i = 0; i < READ_DEPTH; i++) {
        g_free (slots[i].source_buf);
        g_free (slots[i].dest_buf);
    }
    /* a failed handle may still hold reads into the buffers: it is closed with the comparison */
    if (!ok) {
        g_clear_pointer (&self->source, nbd_close);
        g_clear_pointer (&self->dest, nbd_close);
    }
    return ok;
}

/* one window of the first pass: block status of both sides, then the reads */
static guint64
compare_window (VmrNbdCompare *self, guint64 offset, VmrRangeList *candidates,
                GCancellable *cancellable, GError **error)
{
    guint64 window = MIN (self->figures.size - offset, STATUS_WINDOW);
    g_autoptr (VmrRangeList) data = vmr_range_list_new ();
    g_autoptr (VmrRangeList) dirty = vmr_range_list_new ();
    g_autoptr (VmrRangeList) to_compare = NULL;
    guint64 covered;
    guint64 compared = 0;
    guint64 written;

    covered = query_status (self->source, self->source_has_status, NULL, offset, window, data, NULL,
                            error);
    if (covered == 0)
        return 0;
    covered = query_status (self->dest, self->dest_has_status, NULL, offset, covered, data, NULL,
                            error);
    if (covered == 0)
        return 0;
    if (self->dirty != NULL) {
        covered = query_status (self->dirty, FALSE, self->dirty_context, offset, covered, NULL,
                                dirty, error);
        if (covered == 0)
            return 0;
    }
    /* the answers may reach past what both sides covered */
    {
        g_autoptr (VmrRangeList) span = vmr_range_list_new ();
        g_autoptr (VmrRangeList) data_in = NULL;
        g_autoptr (VmrRangeList) dirty_in = NULL;

        vmr_range_list_add (span, offset, covered);
        data_in = vmr_range_list_intersect (data, span);
        dirty_in = vmr_range_list_intersect (dirty, span);
        to_compare = vmr_range_list_subtract (data_in, dirty_in);
        written = vmr_range_list_total (dirty_in);
    }
    if (!compare_ranges (self, to_compare, candidates, &compared, cancellable, error))
        return 0;
    g_mutex_lock (&self->lock);
    self->figures.covered_bytes += covered;
    self->figures.compared_bytes += compared;
    self->figures.written_bytes += written;
    self->figures.zero_bytes += covered - compared - written;
    g_mutex_unlock (&self->lock);
    return covered;
}

/*
 * After a wait, drops from @candidates what the bitmap now marks written
 * and what reads the same again; returns the ranges still different.
 */
static VmrRangeList *
recheck (VmrNbdCompare *self, const VmrRangeList *candidates, guint round, guint delay_ms,
         GCancellable *cancellable, GError **error)
{
    g_autoptr (VmrRangeList) dirty = vmr_range_list_new ();
    g_autoptr (VmrRangeList) unwritten = NULL;
    g_autoptr (VmrRangeList) still = vmr_range_list_new ();
    guint64 compared = 0;
    guint64 moved;

    g_usleep ((gulong) delay_ms * 1000);
    if (!open_dirty (self, round, error))
        return NULL;
    for (guint i = 0; self->dirty != NULL && i < candidates->len; i++) {
        const VmrRange *r = vmr_range_list_get (candidates, i);

        if (!query_dirty (self, r->offset, r->length, dirty, error))
            return NULL;
    }
    unwritten = vmr_range_list_subtract (candidates, dirty);
    if (!compare_ranges (self, unwritten, still, &compared, cancellable, error))
        return NULL;
    /* what the guest wrote meanwhile counts as written, not as compared */
    g_mutex_lock (&self->lock);
    moved = vmr_range_list_total (candidates) - vmr_range_list_total (unwritten);
    self->figures.written_bytes += moved;
    self->figures.compared_bytes -= MIN (moved, self->figures.compared_bytes);
    g_mutex_unlock (&self->lock);
    return g_steal_pointer (&still);
}

/* the bytes that differ in the confirmed ranges, read once more */
static gboolean
count_mismatched (VmrNbdCompare *self, GError **error)
{
    g_autoptr (GArray) chunks = vmr_range_list_plan_chunks (self->mismatches, self->chunk_size);
    g_autofree guint8 *a = g_malloc (self->chunk_size);
    g_autofree guint8 *b = g_malloc (self->chunk_size);
    g_autoptr (VmrRangeList) scratch = vmr_range_list_new ();
    guint64 differing = 0;

    for (guint i = 0; i < chunks->len; i++) {
        const VmrRange *c = &g_array_index (chunks, VmrRange, i);
        ReadSlot slot = { .source_buf = a, .dest_buf = b };

        if (!start_read (self, &slot, c, error) || !finish_slot (self, &slot, error))
            return FALSE;
        differing += vmr_range_list_add_differences (scratch, c->offset, a, b, c->length,
                                                     VMR_NBD_COMPARE_GRANULE);
    }
    g_mutex_lock (&self->lock);
    self->figures.mismatched_bytes = differing;
    g_mutex_unlock (&self->lock);
    return TRUE;
}

gboolean
vmr_nbd_compare_run (VmrNbdCompare *self, GCancellable *cancellable, GError **error)
{
    g_autoptr (VmrRangeList) candidates = vmr_range_list_new ();
    gint64 source_size;
    gint64 dest_size;
    guint64 offset = 0;

    self->source = connect_export (self->source_socket, self->source_command, self->source_export,
                                   NULL, &self->source_has_status, error);
    if (self->source == NULL)
        return FALSE;
    self->dest = connect_export (self->dest_socket, NULL, self->dest_export, NULL,
                                 &self->dest_has_status, error);
    if (self->dest == NULL || !open_dirty (self, 0, error))
        return FALSE;
    if ((self->source_raw_path != NULL
         && (self->source_fd = open (self->source_raw_path, O_RDONLY | O_CLOEXEC)) < 0)
        || (self->dest_raw_path != NULL
            && (self->dest_fd = open (self->dest_raw_path, O_RDONLY | O_CLOEXEC)) < 0)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "cannot open %s: %s",
                     self->source_fd < 0 && self->source_raw_path != NULL ? self->source_raw_path
                                                                          : self->dest_raw_path,
                     g_strerror (errno));
        return FALSE;
    }
    source_size = nbd_get_size (self->source);
    dest_size = nbd_get_size (self->dest);
    if (source_size < 0 || dest_size < 0) {
        vmr_nbd_set_error (error, VMR_ERROR_FAILED, "cannot read the size of the exports");
        return FALSE;
    }
    if (source_size != dest_size) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                     "the source has %" G_GINT64_FORMAT " bytes, the destination %" G_GINT64_FORMAT,
                     source_size, dest_size);
        return FALSE;
    }
    g_mutex_lock (&self->lock);
    self->figures.size = (guint64) source_size;
    g_mutex_unlock (&self->lock);

    while (offset < self->figures.size) {
        guint64 covered = compare_window (self, offset, candidates, cancellable, error);

        if (covered == 0)
            return FALSE;
        offset += covered;
    }
    for (guint pass = 0; pass < G_N_ELEMENTS (self->recheck_delay_ms) && candidates->len > 0;
         pass++) {
        g_autoptr (VmrRangeList) still = recheck (self, candidates, pass + 1,
                                                  self->recheck_delay_ms[pass], cancellable, error);

        if (still == NULL)
            return FALSE;
        g_array_unref (candidates);
        candidates = g_steal_pointer (&still);
    }
    g_array_set_size (self->mismatches, 0);
    g_array_append_vals (self->mismatches, candidates->data, candidates->len);
    return count_mismatched (self, error);
}
