#define G_LOG_DOMAIN "vmr-nbd"

#include "nbd-ranges.h"

#include <string.h>

VmrRangeList *
vmr_range_list_new (void)
{
    return g_array_new (FALSE, FALSE, sizeof (VmrRange));
}

/* the index of the first range that ends at or after @offset */
static guint
first_ending_at_or_after (const VmrRangeList *self, guint64 offset)
{
    guint low = 0;
    guint high = self->len;

    while (low < high) {
        guint mid = low + (high - low) / 2;
        const VmrRange *r = vmr_range_list_get (self, mid);

        if (r->offset + r->length < offset)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

void
vmr_range_list_add (VmrRangeList *self, guint64 offset, guint64 length)
{
    guint64 end = offset + length;
    guint first;
    guint last;

    if (length == 0)
        return;
    /* every range from first to last - 1 overlaps or touches the new one */
    first = first_ending_at_or_after (self, offset);
    last = first;
    while (last < self->len && vmr_range_list_get (self, last)->offset <= end) {
        const VmrRange *r = vmr_range_list_get (self, last);

        offset = MIN (offset, r->offset);
        end = MAX (end, r->offset + r->length);
        last++;
    }
    if (last > first)
        g_array_remove_range (self, first, last - first);
    g_array_insert_val (self, first, ((VmrRange){ offset, end - offset }));
}

guint64
vmr_range_list_total (const VmrRangeList *self)
{
    guint64 total = 0;

    for (guint i = 0; i < self->len; i++)
        total += vmr_range_list_get (self, i)->length;
    return total;
}

/* @keep: the pieces of @self inside @other (intersect) or outside it (subtract) */
static VmrRangeList *
combine (const VmrRangeList *self, const VmrRangeList *other, gboolean keep_inside)
{
    VmrRangeList *result = vmr_range_list_new ();
    guint j = 0;

    for (guint i = 0; i < self->len; i++) {
        const VmrRange *r = vmr_range_list_get (self, i);
        guint64 pos = r->offset;
        guint64 end = r->offset + r->length;

        /* ranges of @other that end before this one starts matter no more */
        while (j < other->len
               && vmr_range_list_get (other, j)->offset + vmr_range_list_get (other, j)->length
                      <= pos)
            j++;
        for (guint k = j; k < other->len && pos < end; k++) {
            const VmrRange *o = vmr_range_list_get (other, k);
            guint64 o_end = o->offset + o->length;

            if (o->offset >= end)
                break;
            if (o->offset > pos && !keep_inside)
                vmr_range_list_add (result, pos, o->offset - pos);
            if (keep_inside)
                vmr_range_list_add (result, MAX (pos, o->offset),
                                    MIN (end, o_end) - MAX (pos, o->offset));
            pos = MAX (pos, MIN (end, o_end));
        }
        if (pos < end && !keep_inside)
            vmr_range_list_add (result, pos, end - pos);
    }
    return result;
}

VmrRangeList *
vmr_range_list_subtract (const VmrRangeList *self, const VmrRangeList *other)
{
    return combine (self, other, FALSE);
}

VmrRangeList *
vmr_range_list_intersect (const VmrRangeList *self, const VmrRangeList *other)
{
    return combine (self, other, TRUE);
}

gboolean
vmr_range_list_overlaps (const VmrRangeList *self, guint64 offset, guint64 length)
{
    /* a range that ends exactly at @offset touches it without overlapping */
    guint i = first_ending_at_or_after (self, offset + 1);

    return length > 0 && i < self->len && vmr_range_list_get (self, i)->offset < offset + length;
}

GArray *
vmr_range_list_plan_chunks (const VmrRangeList *self, guint64 chunk_size)
{
    GArray *chunks = g_array_new (FALSE, FALSE, sizeof (VmrRange));

    g_return_val_if_fail (chunk_size > 0, chunks);
    for (guint i = 0; i < self->len; i++) {
        const VmrRange *r = vmr_range_list_get (self, i);
        guint64 pos = r->offset;
        guint64 end = r->offset + r->length;

        while (pos < end) {
            guint64 boundary = (pos / chunk_size + 1) * chunk_size;
            VmrRange chunk = { pos, MIN (end, boundary) - pos };

            g_array_append_val (chunks, chunk);
            pos += chunk.length;
        }
    }
    return chunks;
}

guint64
vmr_range_list_add_differences (VmrRangeList *mismatches, guint64 offset, const guint8 *a,
                                const guint8 *b, gsize length, guint64 granularity)
{
    guint64 differing = 0;
    gsize pos = 0;

    g_return_val_if_fail (granularity > 0, 0);
    while (pos < length) {
        /* one granule of the disk, or the part of it inside the buffers */
        guint64 granule_end = ((offset + pos) / granularity + 1) * granularity - offset;
        gsize n = (gsize) MIN ((guint64) length, granule_end) - pos;

        if (memcmp (a + pos, b + pos, n) != 0) {
            for (gsize k = 0; k < n; k++)
                differing += a[pos + k] != b[pos + k];
            vmr_range_list_add (mismatches, offset + pos, n);
        }
        pos += n;
    }
    return differing;
}

gchar *
vmr_range_list_describe (const VmrRangeList *self, guint max)
{
    GString *text = g_string_new (NULL);

    for (guint i = 0; i < self->len && i < max; i++) {
        const VmrRange *r = vmr_range_list_get (self, i);

        g_string_append_printf (text, "%s%" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT,
                                i > 0 ? ", " : "", r->offset, r->length);
    }
    if (self->len > max)
        g_string_append_printf (text, " (%u more)", self->len - max);
    return g_string_free (text, FALSE);
}
