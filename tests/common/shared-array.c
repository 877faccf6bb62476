/*
 * The shared-array storage (see shared-array.h).
 */
#define G_LOG_DOMAIN "vmr-test"

#include "shared-array.h"

gchar **
vmr_shared_array_argv (const gchar *socket, const gchar *image_dir, guint budget_mb,
                       gdouble delay_ms)
{
    GPtrArray *argv = g_ptr_array_new ();
    /* the rate filter outermost: a request waits for the budget, then the delay */
    const gchar *fixed[]
        = { "nbdkit",         "-f",  "--exit-with-parent", "-U", socket, "--filter=rate",
            "--filter=delay", "file" };

    for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
        g_ptr_array_add (argv, g_strdup (fixed[i]));
    g_ptr_array_add (argv, g_strdup_printf ("dir=%s", image_dir));
    /* the rate filter counts bits */
    g_ptr_array_add (
        argv, g_strdup_printf ("rate=%" G_GUINT64_FORMAT, (guint64) budget_mb * 8 * 1000 * 1000));
    /*
     * the bucket holds VMR_SHARED_ARRAY_BURST_S of the budget: nbdkit's
     * default of 2 s let a copy of 512 MiB after an idle spell go at
     * 300 MiB/s of a 200 MB/s budget
     */
    g_ptr_array_add (argv, g_strdup_printf ("burstiness=%g", VMR_SHARED_ARRAY_BURST_S));
    g_ptr_array_add (argv, g_strdup_printf ("delay-read=%gms", delay_ms));
    g_ptr_array_add (argv, g_strdup_printf ("delay-write=%gms", delay_ms));
    g_ptr_array_add (argv, NULL);
    return (gchar **) g_ptr_array_free (argv, FALSE);
}

gchar *
vmr_shared_array_uri (const gchar *socket, const gchar *path)
{
    g_autofree gchar *name = g_path_get_basename (path);

    return g_strdup_printf ("nbd+unix:///%s?socket=%s", name, socket);
}

gchar *
vmr_shared_array_describe (const gchar *image_dir, guint budget_mb, gdouble delay_ms)
{
    return g_strdup_printf ("shared-array: images in %s served by nbdkit's file plugin behind "
                            "its rate filter (%u MB/s, reads and writes together, a bucket of "
                            "%g s) and delay filter (%.2f ms a request)",
                            image_dir, budget_mb, VMR_SHARED_ARRAY_BURST_S, delay_ms);
}
