/*
 * Lists of byte ranges, and the arithmetic a comparison of two disks needs:
 * what block status says holds data, minus what the guest wrote, cut into
 * chunks to read. Pure: no libnbd calls, no I/O.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    guint64 offset; /* bytes */
    guint64 length; /* bytes, > 0 */
} VmrRange;

/*
 * A sorted list of ranges that neither overlap nor touch: ranges added
 * that do are merged. A GArray of VmrRange; free with g_array_unref().
 */
typedef GArray VmrRangeList;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrRangeList, g_array_unref)

VmrRangeList *vmr_range_list_new (void);

/* adds [@offset, @offset + @length); @length 0 adds nothing */
void vmr_range_list_add (VmrRangeList *self, guint64 offset, guint64 length);

/* the @i-th range */
static inline const VmrRange *
vmr_range_list_get (const VmrRangeList *self, guint i)
{
    return &g_array_index (self, VmrRange, i);
}

/* the sum of the lengths */
guint64 vmr_range_list_total (const VmrRangeList *self);

/* the ranges of @self that are not in @other (a new list) */
VmrRangeList *vmr_range_list_subtract (const VmrRangeList *self, const VmrRangeList *other);

/* the ranges of @self that are also in @other (a new list) */
VmrRangeList *vmr_range_list_intersect (const VmrRangeList *self, const VmrRangeList *other);

/* whether [@offset, @offset + @length) overlaps any range of @self */
gboolean vmr_range_list_overlaps (const VmrRangeList *self, guint64 offset, guint64 length);

/*
 * The chunks to read for @self: each range cut at every multiple of
 * @chunk_size (> 0), so that no chunk is longer than @chunk_size and
 * chunks of a long range are aligned to it. A GArray of VmrRange.
 */
GArray *vmr_range_list_plan_chunks (const VmrRangeList *self, guint64 chunk_size);

/*
 * Adds to @mismatches the granules of @granularity bytes (> 0; counted
 * from offset 0 of the disk) in which @a and @b, @length bytes read at disk
 * offset @offset, differ. Returns the number of differing bytes.
 */
guint64 vmr_range_list_add_differences (VmrRangeList *mismatches, guint64 offset, const guint8 *a,
                                        const guint8 *b, gsize length, guint64 granularity);

/* "1048576+4096, 3145728+8192" (offset+length, bytes) of the first @max ranges, then " (N more)" */
gchar *vmr_range_list_describe (const VmrRangeList *self, guint max);

G_END_DECLS
