/*
 * The storage profiles of the benchmarks (see bench-storage.h).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-storage.h"

#include <glib/gstdio.h>

#include "bench-process.h"
#include "vmr-error.h"

#define MEMORY_PARENT "/dev/shm"
/* the rate filter's bucket, seconds of the budget */
#define BURST_S 0.5

static const gchar *const names[] = { "shared-array", "local-file", "memory" };

gboolean
vmr_bench_storage_parse (const gchar *name, VmrBenchStorageKind *out)
{
    for (guint i = 0; i < G_N_ELEMENTS (names); i++)
        if (g_strcmp0 (name, names[i]) == 0) {
            *out = (VmrBenchStorageKind) i;
            return TRUE;
        }
    return FALSE;
}

const gchar *
vmr_bench_storage_name (VmrBenchStorageKind kind)
{
    g_return_val_if_fail (kind < G_N_ELEMENTS (names), "?");
    return names[kind];
}

const gchar *
vmr_bench_storage_image_parent (VmrBenchStorageKind kind, const gchar *dir_opt)
{
    if (dir_opt != NULL)
        return dir_opt;
    return kind == VMR_BENCH_STORAGE_MEMORY ? MEMORY_PARENT : NULL;
}

gboolean
vmr_bench_storage_start (VmrBenchStorage *self, const gchar *run_dir, const gchar *image_dir,
                         guint timeout_s, GError **error)
{
    g_autofree gchar *dir_arg = g_strdup_printf ("dir=%s", image_dir);
    /* the rate filter counts bits */
    g_autofree gchar *rate_arg
        = g_strdup_printf ("rate=%" G_GUINT64_FORMAT, (guint64) self->budget_mb * 8 * 1000 * 1000);
    g_autofree gchar *read_arg = g_strdup_printf ("delay-read=%gms", self->delay_ms);
    g_autofree gchar *write_arg = g_strdup_printf ("delay-write=%gms", self->delay_ms);
    /*
     * the bucket holds BURST_S of the budget: nbdkit's default of 2 s let a
     * copy of 512 MiB after an idle spell go at 300 MiB/s of a 200 MB/s budget
     */
    g_autofree gchar *burst_arg = g_strdup_printf ("burstiness=%g", BURST_S);
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

    if (self->kind != VMR_BENCH_STORAGE_SHARED_ARRAY)
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS (self->servers); i++) {
        g_autofree gchar *log = g_strdup_printf ("%s/nbdkit-%u.log", run_dir, i);

        self->sockets[i] = g_strdup_printf ("%s/array-%u.sock", run_dir, i);
        {
            /* the rate filter outermost: a request waits for the budget, then the delay */
            const gchar *argv[] = { "nbdkit",
                                    "-f",
                                    "--exit-with-parent",
                                    "-U",
                                    self->sockets[i],
                                    "--filter=rate",
                                    "--filter=delay",
                                    "file",
                                    dir_arg,
                                    rate_arg,
                                    burst_arg,
                                    read_arg,
                                    write_arg,
                                    NULL };

            self->servers[i] = vmr_bench_spawn (argv, run_dir, log, error);
        }
        if (self->servers[i] == NULL) {
            g_prefix_error (error, "cannot start nbdkit: ");
            return FALSE;
        }
        if (!vmr_bench_wait_listening (self->servers[i], self->sockets[i], log, deadline, error))
            return FALSE;
    }
    return TRUE;
}

void
vmr_bench_storage_stop (VmrBenchStorage *self)
{
    for (guint i = 0; i < G_N_ELEMENTS (self->servers); i++) {
        vmr_bench_kill (&self->servers[i]);
        g_clear_pointer (&self->sockets[i], g_free);
    }
}

gchar *
vmr_bench_storage_uri (const VmrBenchStorage *self, const gchar *path, guint number)
{
    g_autofree gchar *name = g_path_get_basename (path);

    if (self->kind != VMR_BENCH_STORAGE_SHARED_ARRAY)
        return NULL;
    return g_strdup_printf ("nbd+unix:///%s?socket=%s", name, self->sockets[number % 2]);
}

gchar *
vmr_bench_storage_describe (const VmrBenchStorage *self, const gchar *image_dir)
{
    if (self->kind == VMR_BENCH_STORAGE_SHARED_ARRAY)
        return g_strdup_printf (
            "shared-array: images in %s served by nbdkit's file plugin behind "
            "its rate filter (%u MB/s, reads and writes together, a bucket of %g s) "
            "and delay "
            "filter (%.2f ms a request); the copy reads from the server of "
            "the guest's disk and writes to a second one of its own budget",
            image_dir, self->budget_mb, BURST_S, self->delay_ms);
    return g_strdup_printf ("%s: images in %s", vmr_bench_storage_name (self->kind), image_dir);
}
