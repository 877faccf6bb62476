/*
 * Raw images for the benchmarks: a source full of data, an empty
 * destination made the way the daemon makes one, and the byte check.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the unit of the source's data and of the byte check */
#define VMR_BENCH_BLOCK_SIZE (1024 * 1024)

/*
 * Creates @path (which must not exist) with @size bytes of pseudo-random
 * data, then fdatasync()ed. Every MiB has a sequence of its own, drawn
 * from @seed and the MiB's index: no two MiB of an image, nor of two
 * images of different seeds, are alike, so a misplaced block fails the
 * byte check.
 */
gboolean vmr_bench_image_create_source (const gchar *path, guint64 size, guint32 seed,
                                        GError **error);

/* creates @path (which must not exist) empty and sparse, @size bytes long */
gboolean vmr_bench_image_create_destination (const gchar *path, guint64 size, GError **error);

/* TRUE when the first @size bytes of @dest equal those of @source */
gboolean vmr_bench_image_compare (const gchar *source, const gchar *dest, guint64 size,
                                  GError **error);

G_END_DECLS
