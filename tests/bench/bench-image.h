/*
 * Raw images for the benchmarks: a source full of data, an empty
 * destination made the way the daemon makes one, and the byte check.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the block the source repeats, and the unit of the byte check */
#define VMR_BENCH_BLOCK_SIZE (1024 * 1024)

/*
 * Creates @path (which must not exist) with @size bytes: one random block
 * of @seed repeated, then fdatasync()ed.
 */
gboolean vmr_bench_image_create_source (const gchar *path, guint64 size, guint32 seed,
                                        GError **error);

/* creates @path (which must not exist) empty and sparse, @size bytes long */
gboolean vmr_bench_image_create_destination (const gchar *path, guint64 size, GError **error);

/* TRUE when the first @size bytes of @dest equal those of @source */
gboolean vmr_bench_image_compare (const gchar *source, const gchar *dest, guint64 size,
                                  GError **error);

G_END_DECLS
