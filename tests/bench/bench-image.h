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

/*
 * Creates @path (which must not exist) sparse, @size bytes long, with
 * @data_size bytes of the data vmr_bench_image_create_source() would put
 * there, in @n_extents extents of equal length spread over the image: extent
 * i starts in the middle of the i-th @n_extents-th of it, on a MiB boundary.
 * The rest are holes. @data_size must be a multiple of @n_extents MiB and
 * fit. fdatasync()ed.
 */
gboolean vmr_bench_image_create_sparse_source (const gchar *path, guint64 size, guint64 data_size,
                                               guint n_extents, guint32 seed, GError **error);

/*
 * Writes zeroes into every hole of @path (SEEK_HOLE), so that it takes its
 * whole size with the same bytes: a thick copy of a thin image. fdatasync()ed.
 */
gboolean vmr_bench_image_fill_holes (const gchar *path, GError **error);

/* creates @path (which must not exist) empty and sparse, @size bytes long */
gboolean vmr_bench_image_create_destination (const gchar *path, guint64 size, GError **error);

/* TRUE when the first @size bytes of @dest equal those of @source */
gboolean vmr_bench_image_compare (const gchar *source, const gchar *dest, guint64 size,
                                  GError **error);

/*
 * The bytes @path takes on its file system: st_blocks for a file of any
 * format, which is also what qemu-img info reports as a qcow2's disk size
 * ("actual-size"); for a qcow2, that figure is read from qemu-img info so
 * that it is the one users see. FALSE with @error set when neither can be
 * read.
 */
gboolean vmr_bench_image_allocated (const gchar *path, const gchar *format, guint64 *out_bytes,
                                    GError **error);

/*
 * qemu-img compare of @source (@source_format) with @dest (@dest_format; a
 * file or an NBD URI): TRUE when the guest-visible bytes are equal. The
 * images must not be open for writing elsewhere.
 */
gboolean vmr_bench_image_qemu_compare (const gchar *source, const gchar *source_format,
                                       const gchar *dest, const gchar *dest_format, GError **error);

G_END_DECLS
