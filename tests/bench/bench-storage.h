/*
 * Where a benchmark's guest keeps its disk: a storage profile.
 *   shared-array  the disk is an export of nbdkit's file plugin behind its
 *                 rate and delay filters: the guest and the copy's reads
 *                 share one budget with a base latency, as on an array that
 *                 also serves the guest. Two such servers, each with its own
 *                 budget, serve the same directory: a copy goes from the one
 *                 that serves the guest's disk to the other.
 *   local-file    a file on the local disk.
 *   memory        a file in tmpfs (/dev/shm).
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
    VMR_BENCH_STORAGE_SHARED_ARRAY,
    VMR_BENCH_STORAGE_LOCAL_FILE,
    VMR_BENCH_STORAGE_MEMORY,
} VmrBenchStorageKind;

typedef struct {
    VmrBenchStorageKind kind;
    guint budget_mb;  /* shared-array: each server's bytes/s, MB (10^6) */
    gdouble delay_ms; /* shared-array: added to each read and write */
    GSubprocess *servers[2];
    gchar *sockets[2];
} VmrBenchStorage;

/* the profile named @name in *@out; FALSE for an unknown name */
gboolean vmr_bench_storage_parse (const gchar *name, VmrBenchStorageKind *out);

/* "shared-array", "local-file" or "memory" */
const gchar *vmr_bench_storage_name (VmrBenchStorageKind kind);

/* the parent of the images' directory: @dir_opt when set, else tmpfs for memory, NULL (the default)
 */
const gchar *vmr_bench_storage_image_parent (VmrBenchStorageKind kind, const gchar *dir_opt);

/*
 * Starts what the profile needs: for shared-array, the two nbdkit servers
 * of @image_dir with their sockets in @run_dir, waited on for @timeout_s.
 */
gboolean vmr_bench_storage_start (VmrBenchStorage *self, const gchar *run_dir,
                                  const gchar *image_dir, guint timeout_s, GError **error);

/* stops the servers */
void vmr_bench_storage_stop (VmrBenchStorage *self);

/*
 * What the guest and the daemon open for the image @path, the @number-th
 * of the run: for shared-array, its export on server @number % 2
 * ("nbd+unix:///NAME?socket=PATH"); NULL for the file profiles (the path
 * itself). Free with g_free().
 */
gchar *vmr_bench_storage_uri (const VmrBenchStorage *self, const gchar *path, guint number);

/* one line on the profile for the report; free with g_free() */
gchar *vmr_bench_storage_describe (const VmrBenchStorage *self, const gchar *image_dir);

G_END_DECLS
