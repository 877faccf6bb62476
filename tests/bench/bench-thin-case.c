/*
 * What both parts of bench-thin share: the sources, QEMU, and the figures
 * of a case with their verdicts.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include "bench-thin.h"

#include <errno.h>
#include <signal.h>

#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "vmr-error.h"
#include "vmr-json.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

guint
vmr_bench_thin_extents (guint64 data_size)
{
    return (guint) MIN (VMR_BENCH_THIN_EXTENTS, data_size / VMR_BENCH_BLOCK_SIZE);
}

gboolean
vmr_bench_thin_sources_create (VmrBenchThin *self, VmrBenchThinSources *sources, const gchar *label,
                               guint64 thin_size, guint64 data_size, guint32 seed, GError **error)
{
    g_autofree gchar *thin_name = g_strdup_printf ("source-%s-thin.raw", label);
    g_autofree gchar *full_name = g_strdup_printf ("source-%s-full.raw", label);
    g_autofree gchar *thin_text = vmr_bench_thin_format_size (thin_size);
    g_autofree gchar *data_text = vmr_bench_thin_format_size (data_size);
    gint64 start = g_get_monotonic_time ();

    sources->thin_size = thin_size;
    sources->data_size = data_size;
    sources->thin_source = g_build_filename (self->image_dir, thin_name, NULL);
    sources->full_source = g_build_filename (self->image_dir, full_name, NULL);
    g_printerr ("writing a %s source with %s of data in %u extents, and a full %s one...",
                thin_text, data_text, vmr_bench_thin_extents (data_size), data_text);
    if (!vmr_bench_image_create_sparse_source (sources->thin_source, thin_size, data_size,
                                               vmr_bench_thin_extents (data_size), seed, error)
        || !vmr_bench_image_create_source (sources->full_source, data_size, seed + 1, error)) {
        g_printerr ("\n");
        return FALSE;
    }
    g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    return TRUE;
}

void
vmr_bench_thin_sources_clear (VmrBenchThinSources *sources)
{
    const gchar *paths[] = { sources->thin_source, sources->full_source };

    for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
        if (paths[i] != NULL && g_unlink (paths[i]) < 0 && errno != ENOENT)
            g_warning ("cannot remove %s: %s", paths[i], g_strerror (errno));
    g_clear_pointer (&sources->thin_source, g_free);
    g_clear_pointer (&sources->full_source, g_free);
}

/* ---- QEMU ---- */

GSubprocess *
vmr_bench_thin_start_qemu (VmrBenchThin *self, const gchar *source, const gchar *const *monitors,
                           VmrQmpClient **out_watch, GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/qemu-%u.log", self->run_dir, self->run_number);
    g_autoptr (GSubprocess) qemu = NULL;
    guint last = 0;

    while (monitors[last + 1] != NULL)
        last++;
    qemu = vmr_bench_start_paused_qemu (self->qemu_path, self->run_dir, log, source, monitors,
                                        error);
    if (qemu == NULL)
        return NULL;
    *out_watch
        = vmr_bench_connect (qemu, monitors[last], "QEMU", VMR_BENCH_THIN_START_TIMEOUT_S, error);
    if (*out_watch == NULL) {
        vmr_bench_kill (&qemu);
        return NULL;
    }
    if (self->qemu_version == NULL)
        self->qemu_version = vmr_bench_qemu_version (*out_watch);
    return g_steal_pointer (&qemu);
}

/* ---- nbdkit ---- */

gboolean
vmr_bench_thin_server_start (VmrBenchThin *self, VmrBenchThinServer *server,
                             const VmrBenchThinExport *export, const gchar *socket, guint64 size,
                             GError **error)
{
    g_autofree gchar *log = g_strdup_printf ("%s/nbdkit-%u.log", self->run_dir, self->run_number);
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    gint64 deadline = g_get_monotonic_time () + VMR_BENCH_THIN_START_TIMEOUT_S * G_USEC_PER_SEC;

    *server = (VmrBenchThinServer){
        .socket = g_strdup (socket),
        .uri = g_strdup_printf ("nbd+unix:///?socket=%s", socket),
    };
    g_ptr_array_add (argv, g_strdup ("nbdkit"));
    g_ptr_array_add (argv, g_strdup ("-f"));
    g_ptr_array_add (argv, g_strdup ("-U"));
    g_ptr_array_add (argv, g_strdup (socket));
    if (export->zeromode != NULL)
        g_ptr_array_add (argv, g_strdup ("--filter=nozero"));
    if (export->memory) {
        g_ptr_array_add (argv, g_strdup ("memory"));
        g_ptr_array_add (argv, g_strdup_printf ("size=%" G_GUINT64_FORMAT, size));
    } else {
        server->file = g_strdup_printf ("%s/export-%u.img", self->image_dir, self->run_number);
        g_ptr_array_add (argv, g_strdup ("file"));
        g_ptr_array_add (argv, g_strdup_printf ("file=%s", server->file));
    }
    if (export->zeromode != NULL)
        g_ptr_array_add (argv, g_strdup_printf ("zeromode=%s", export->zeromode));
    if (export->fastzeromode != NULL)
        g_ptr_array_add (argv, g_strdup_printf ("fastzeromode=%s", export->fastzeromode));
    g_ptr_array_add (argv, NULL);

    if (server->file != NULL && !vmr_bench_image_create_destination (server->file, size, error))
        return FALSE;
    server->process
        = vmr_bench_spawn ((const gchar *const *) argv->pdata, self->run_dir, log, error);
    if (server->process == NULL) {
        g_prefix_error (error, "cannot start nbdkit: ");
        return FALSE;
    }
    return vmr_bench_wait_listening (server->process, socket, log, deadline, error);
}

void
vmr_bench_thin_server_stop (VmrBenchThinServer *server)
{
    const gchar *paths[] = { server->socket, server->file };

    if (server->process != NULL && vmr_bench_is_running (server->process)) {
        g_subprocess_send_signal (server->process, SIGTERM);
        vmr_bench_wait_exit (server->process, VMR_BENCH_THIN_STOP_TIMEOUT_S);
    }
    vmr_bench_kill (&server->process);
    for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
        if (paths[i] != NULL && g_unlink (paths[i]) < 0 && errno != ENOENT)
            g_warning ("cannot remove %s: %s", paths[i], g_strerror (errno));
    g_clear_pointer (&server->socket, g_free);
    g_clear_pointer (&server->uri, g_free);
    g_clear_pointer (&server->file, g_free);
}

/* what `nbdinfo --map` reports as not a hole (type bit 0 clear) on @uri */
static gboolean
map_allocated (const gchar *uri, guint64 *out_bytes, GError **error)
{
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    JsonNode *root;
    JsonArray *extents;

    proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, error,
                             "nbdinfo", "--map", "--json", uri, NULL);
    if (proc == NULL || !g_subprocess_communicate_utf8 (proc, NULL, NULL, &out, &err, error))
        return FALSE;
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "nbdinfo --map %s failed: %s", uri,
                     g_strstrip (err));
        return FALSE;
    }
    if (!json_parser_load_from_data (parser, out, -1, error))
        return FALSE;
    root = json_parser_get_root (parser);
    extents = root != NULL && JSON_NODE_HOLDS_ARRAY (root) ? json_node_get_array (root) : NULL;
    if (extents == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "nbdinfo --map %s: no array", uri);
        return FALSE;
    }
    *out_bytes = 0;
    for (guint i = 0; i < json_array_get_length (extents); i++) {
        JsonObject *extent = vmr_json_array_object (extents, i);
        guint64 length = 0, type = 0;

        if (extent == NULL || !vmr_json_get_uint (extent, "length", &length)
            || !vmr_json_get_uint (extent, "type", &type)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "nbdinfo --map %s: bad extent %u",
                         uri, i);
            return FALSE;
        }
        if ((type & 1) == 0)
            *out_bytes += length;
    }
    return TRUE;
}

gboolean
vmr_bench_thin_server_measure (VmrBenchThinServer *server, guint64 alloc[VMR_BENCH_THIN_N_ALLOC],
                               GError **error)
{
    return map_allocated (server->uri, &alloc[0], error)
           && (server->file == NULL
               || vmr_bench_image_allocated (server->file, "raw", &alloc[1], error));
}

/* ---- figures ---- */

gchar *
vmr_bench_thin_format_size (guint64 bytes)
{
    if (bytes >= (guint64) GIB && bytes % (guint64) GIB == 0)
        return g_strdup_printf ("%" G_GUINT64_FORMAT " GiB", bytes / (guint64) GIB);
    if (bytes >= (guint64) GIB)
        return g_strdup_printf ("%.2f GiB", bytes / GIB);
    return g_strdup_printf ("%.0f MiB", bytes / MIB);
}

static GArray *
doubles_new (void)
{
    return g_array_new (FALSE, FALSE, sizeof (gdouble));
}

VmrBenchThinCase *
vmr_bench_thin_case_new (const gchar *title, const VmrBenchThinSources *sources,
                         const gchar *alloc_label0, const gchar *alloc_label1)
{
    VmrBenchThinCase *c = g_new0 (VmrBenchThinCase, 1);

    c->title = g_strdup (title);
    c->alloc_label[0] = alloc_label0;
    c->alloc_label[1] = alloc_label1;
    c->thin_size = sources->thin_size;
    c->data_size = sources->data_size;
    c->thin_s = doubles_new ();
    c->full_s = doubles_new ();
    for (guint i = 0; i < VMR_BENCH_THIN_N_ALLOC; i++) {
        c->thin_alloc[i] = doubles_new ();
        c->full_alloc[i] = doubles_new ();
    }
    return c;
}

void
vmr_bench_thin_case_free (VmrBenchThinCase *c)
{
    g_free (c->title);
    g_array_unref (c->thin_s);
    g_array_unref (c->full_s);
    for (guint i = 0; i < VMR_BENCH_THIN_N_ALLOC; i++) {
        g_array_unref (c->thin_alloc[i]);
        g_array_unref (c->full_alloc[i]);
    }
    g_free (c);
}

void
vmr_bench_thin_case_add (VmrBenchThinCase *c, gboolean thin, guint round,
                         const VmrBenchThinRun *run)
{
    g_autofree gchar *size = vmr_bench_thin_format_size (thin ? c->thin_size : c->data_size);
    g_autoptr (GString) line = g_string_new (NULL);

    g_array_append_val (thin ? c->thin_s : c->full_s, run->copy_s);
    g_string_append_printf (line, "  %s, round %u, %s %s: copy %.2f s", c->title, round + 1, size,
                            thin ? "thin" : "full", run->copy_s);
    for (guint i = 0; i < VMR_BENCH_THIN_N_ALLOC; i++) {
        gdouble bytes = (gdouble) run->alloc[i];

        if (c->alloc_label[i] == NULL)
            continue;
        g_array_append_val (thin ? c->thin_alloc[i] : c->full_alloc[i], bytes);
        g_string_append_printf (line, ", %s %.1f MiB", c->alloc_label[i], bytes / MIB);
    }
    g_printerr ("%s, bytes checked\n", line->str);
}

/* the median of a copy of @values, which stay in round order */
static gdouble
median_of (GArray *values)
{
    g_autoptr (GArray) copy = g_array_copy (values);

    return vmr_bench_median (copy);
}

gboolean
vmr_bench_thin_case_report (const VmrBenchThinCase *c)
{
    g_autofree gchar *thin_size = vmr_bench_thin_format_size (c->thin_size);
    g_autofree gchar *data_size = vmr_bench_thin_format_size (c->data_size);
    g_autoptr (GArray) ratios = doubles_new ();
    g_autoptr (GString) per_round = g_string_new (NULL);
    gdouble alloc_limit = VMR_BENCH_THIN_ALLOC_TARGET * (gdouble) c->data_size;
    guint rounds = MIN (c->thin_s->len, c->full_s->len);
    gdouble ratio;
    guint time_met;
    gboolean met;

    for (guint i = 0; i < rounds; i++) {
        gdouble r = g_array_index (c->thin_s, gdouble, i) / g_array_index (c->full_s, gdouble, i);

        g_array_append_val (ratios, r);
        g_string_append_printf (per_round, "%s%.2f", i > 0 ? ", " : "", r);
    }
    ratio = median_of (ratios);
    time_met = vmr_bench_rounds_met (ratios, VMR_BENCH_AT_MOST, VMR_BENCH_THIN_TIME_TARGET);
    met = vmr_bench_rounds_pass (time_met, rounds);
    g_print ("\n%s: %s with %s of data against %s full, %u rounds\n", c->title, thin_size,
             data_size, data_size, rounds);
    g_print ("  %-40s %10s %10s %8s  %-12s %s\n", "figure", "thin", "full", "ratio", "target",
             "verdict (each round)");
    g_print ("  %-40s %10.2f %10.2f %8.2f  %-12s %s\n", "copy time (s), medians",
             median_of (c->thin_s), median_of (c->full_s), ratio, "<= 1.5x",
             vmr_bench_verdict_rounds (time_met, rounds));
    g_print ("  %-40s %s\n", "  thin / full, each round", per_round->str);
    for (guint i = 0; i < VMR_BENCH_THIN_N_ALLOC; i++) {
        g_autofree gchar *label = NULL;
        g_autofree gchar *limit = NULL;
        gdouble thin_alloc, largest = 0;
        guint alloc_met;

        if (c->alloc_label[i] == NULL)
            continue;
        thin_alloc = median_of (c->thin_alloc[i]);
        for (guint j = 0; j < c->thin_alloc[i]->len; j++)
            largest = MAX (largest, g_array_index (c->thin_alloc[i], gdouble, j));
        alloc_met = vmr_bench_rounds_met (c->thin_alloc[i], VMR_BENCH_AT_MOST, alloc_limit);
        met = met && vmr_bench_rounds_pass (alloc_met, c->thin_alloc[i]->len);
        label = g_strdup_printf ("%s (MiB), medians", c->alloc_label[i]);
        limit = g_strdup_printf ("<= %.0f MiB", alloc_limit / MIB);
        g_print ("  %-40s %10.1f %10.1f %8s  %-12s %s\n", label, thin_alloc / MIB,
                 median_of (c->full_alloc[i]) / MIB, "", limit,
                 vmr_bench_verdict_rounds (alloc_met, c->thin_alloc[i]->len));
        g_print ("  %-40s %.1f MiB\n", "  largest after a thin copy", largest / MIB);
    }
    return met;
}
