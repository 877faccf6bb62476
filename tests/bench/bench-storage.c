/*
 * The storage profiles of the benchmarks (see bench-storage.h).
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-storage.h"

#include <glib/gstdio.h>

#include "bench-process.h"
#include "shared-array.h"
#include "vmr-error.h"

#define MEMORY_PARENT "/dev/shm"

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
    gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;

    if (self->kind != VMR_BENCH_STORAGE_SHARED_ARRAY)
        return TRUE;
    for (guint i = 0; i < G_N_ELEMENTS (self->servers); i++) {
        g_autofree gchar *log = g_strdup_printf ("%s/nbdkit-%u.log", run_dir, i);
        g_auto (GStrv) argv = NULL;

        self->sockets[i] = g_strdup_printf ("%s/array-%u.sock", run_dir, i);
        argv = vmr_shared_array_argv (self->sockets[i], image_dir, self->budget_mb, self->delay_ms);
        self->servers[i] = vmr_bench_spawn ((const gchar *const *) argv, run_dir, log, error);
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
    if (self->kind != VMR_BENCH_STORAGE_SHARED_ARRAY)
        return NULL;
    return vmr_shared_array_uri (self->sockets[number % 2], path);
}

gchar *
vmr_bench_storage_describe (const VmrBenchStorage *self, const gchar *image_dir)
{
    if (self->kind == VMR_BENCH_STORAGE_SHARED_ARRAY) {
        g_autofree gchar *array
            = vmr_shared_array_describe (image_dir, self->budget_mb, self->delay_ms);

        return g_strdup_printf ("%s; the copy reads from the server of the guest's disk and "
                                "writes to a second one of its own budget",
                                array);
    }
    return g_strdup_printf ("%s: images in %s", vmr_bench_storage_name (self->kind), image_dir);
}
