#define G_LOG_DOMAIN "vmr-bench"

#include "bench-scale.h"

#include "bench-jobs.h"
#include "bench-process.h"
#include "bench-series.h"
#include "vmr-error.h"

#define MIB (1024 * 1024)

static gdouble
array_max (GArray *values)
{
    gdouble max = 0;

    for (guint i = 0; i < values->len; i++)
        max = MAX (max, g_array_index (values, gdouble, i));
    return max;
}

/* the time of @job's first history entry in @state, 0 when there is none */
static gint64
history_time (JsonObject *job, const gchar *state)
{
    JsonArray *history = vmr_json_get_array (job, "history");

    for (guint i = 0; history != NULL && i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_json_array_object (history, i);

        if (g_strcmp0 (vmr_json_get_string (entry, "state"), state) == 0)
            return vmr_json_int_or (entry, "time", 0);
    }
    return 0;
}

gboolean
bench_scale_parse_jobs (const gchar *json, GPtrArray *vms, guint n, gint64 start, RunResult *result,
                        GError **error)
{
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autoptr (GArray) vm_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) copy_s = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autofree gboolean *seen = g_new0 (gboolean, n);
    gint64 first_created = G_MAXINT64, last_completed = 0;
    JsonArray *jobs;

    if (!json_parser_load_from_data (parser, json, -1, error))
        return FALSE;
    jobs = vmr_json_node_array (json_parser_get_root (parser));
    if (jobs == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "virt-mirror --json jobs: not a list");
        return FALSE;
    }
    if (json_array_get_length (jobs) != n) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "%u jobs for %u VMs",
                     json_array_get_length (jobs), n);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        JsonObject *job = vmr_json_array_object (jobs, i);
        const gchar *domain = vmr_json_get_string (job, "domain");
        gint64 created = vmr_json_int_or (job, "created", 0);
        gint64 copying = history_time (job, "copying");
        gint64 synced = history_time (job, "synced");
        gint64 completed = history_time (job, "completed");
        gdouble value;
        guint index = G_MAXUINT;

        for (guint k = 0; k < n; k++)
            if (g_strcmp0 (((Vm *) g_ptr_array_index (vms, k))->name, domain) == 0)
                index = k;
        if (index == G_MAXUINT || seen[index]) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s: unexpected domain %s",
                         vmr_json_get_string (job, "id"), domain);
            return FALSE;
        }
        seen[index] = TRUE;
        if (g_strcmp0 (vmr_json_get_string (job, "state"), "completed") != 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s of %s ended %s: %s",
                         vmr_json_get_string (job, "id"), domain,
                         vmr_json_get_string (job, "state"), vmr_json_get_string (job, "reason"));
            return FALSE;
        }
        if (g_strcmp0 (vmr_json_get_string (job, "destination"),
                       ((Vm *) g_ptr_array_index (vms, index))->dest)
            != 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "job %s of %s went to %s",
                         vmr_json_get_string (job, "id"), domain,
                         vmr_json_get_string (job, "destination"));
            return FALSE;
        }
        if (created == 0 || copying == 0 || completed == 0) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                         "job %s: no created, copying or completed time",
                         vmr_json_get_string (job, "id"));
            return FALSE;
        }
        value = (gdouble) (completed - created) / G_USEC_PER_SEC;
        g_array_append_val (vm_s, value);
        value = (gdouble) (completed - copying) / G_USEC_PER_SEC;
        g_array_append_val (copy_s, value);
        value = (gdouble) copying;
        g_array_append_val (starts, value);
        /* max-parallel counts bulk copies: a synced job holds no slot */
        value = (gdouble) (synced != 0 ? synced : completed);
        g_array_append_val (ends, value);
        first_created = MIN (first_created, created);
        last_completed = MAX (last_completed, completed);
    }
    result->span_s = (gdouble) (last_completed - first_created) / G_USEC_PER_SEC;
    result->done_s = (gdouble) (last_completed - start) / G_USEC_PER_SEC;
    result->vm_median_s = vmr_bench_median (vm_s);
    result->vm_max_s = array_max (vm_s);
    result->copy_median_s = vmr_bench_median (copy_s);
    result->copy_max_s = array_max (copy_s);
    result->max_running = vmr_bench_max_overlap (starts, ends);
    return TRUE;
}

/* the median over the rounds of the RunResult member at @offset */
static gdouble
field_median (GArray *runs, gsize offset)
{
    g_autoptr (GArray) values = g_array_new (FALSE, FALSE, sizeof (gdouble));

    for (guint i = 0; i < runs->len; i++) {
        const RunResult *result = &g_array_index (runs, RunResult, i);
        gdouble value = G_STRUCT_MEMBER (gdouble, result, offset);

        g_array_append_val (values, value);
    }
    return vmr_bench_median (values);
}

#define MEDIAN(runs, member) field_median ((runs), G_STRUCT_OFFSET (RunResult, member))

/* "1.234" or "-" for a ratio of nothing */
static gchar *
ratio (gdouble value, gdouble baseline)
{
    return baseline > 0 ? g_strdup_printf ("%.3f", value / baseline) : g_strdup ("-");
}

void
bench_scale_print_run (guint round, guint n, guint p, const RunResult *result)
{
    g_printerr (
        "  round %u N=%-3u P=%u: evacuate %.3f s (last job done at %.3f s, jobs span "
        "%.3f s), per VM %.3f/%.3f s, copy %.3f/%.3f s, copying at once %u in QEMU and %u by "
        "the daemon, attach %.2f s, daemon CPU %.2f ms/VM, bytes checked\n",
        round, n, p, result->total_s, result->done_s, result->span_s, result->vm_median_s,
        result->vm_max_s, result->copy_median_s, result->copy_max_s, result->qemu_max_copying,
        result->max_running, result->attach_s, result->cpu_evacuate_ms / n);
}

/*
 * One table of a time per run: its median, per VM, and the ratios against
 * the first count (scaled by N), the first P and the device.
 */
static void
report_times (const Figures *figures, guint64 disk_size, gsize offset)
{
    guint n0 = g_array_index (figures->counts, guint, 0);
    gdouble disk_mib = (gdouble) disk_size / MIB;

    g_print ("  %5s %3s %10s %10s %7s %7s %8s %6s\n", "N", "P", "time (s)", "per VM (s)", "/N",
             "/P", "MiB/s", "/dev");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);
        gdouble device_s = vmr_bench_median (figures->device[c]);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            gdouble total = field_median (figures->runs[c][q], offset);
            g_autofree gchar *vs_n
                = ratio (total, field_median (figures->runs[0][q], offset) * n / n0);
            g_autofree gchar *vs_p = ratio (total, field_median (figures->runs[c][0], offset));
            g_autofree gchar *vs_dev = ratio (device_s, total);

            g_print ("  %5u %3u %10.3f %10.4f %7s %7s %8.0f %6s\n", n, p, total, total / n, vs_n,
                     vs_p, n * disk_mib / total, vs_dev);
        }
    }
}

void
bench_scale_report (const Figures *figures, guint64 disk_size)
{
    guint n0 = g_array_index (figures->counts, guint, 0);
    guint p0 = g_array_index (figures->parallel, guint, 0);
    gdouble disk_mib = (gdouble) disk_size / MIB;

    g_print ("\ndevice: qemu-img convert of the same N disks into one new file in the same "
             "filesystem,\nthen fdatasync() of that file; median of every round's %u copies\n",
             DEVICE_REPEATS);
    g_print ("  %5s %9s %10s %9s\n", "N", "MiB", "time (s)", "MiB/s");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);
        gdouble s = vmr_bench_median (figures->device[c]);

        g_print ("  %5u %9.0f %10.3f %9.0f\n", n, n * disk_mib, s, n * disk_mib / s);
    }

    g_print ("\nratios: /N = time / (time at N=%u x N/%u), same P (1.000: linear in N);\n"
             "        /P = time / time at P=%u, same N; /dev = throughput / the device's, same N\n",
             n0, n0, p0);
    g_print ("\nevacuate, from the command's start to the last job's completed (job times)\n");
    report_times (figures, disk_size, G_STRUCT_OFFSET (RunResult, done_s));
    g_print ("\nevacuate --wait, from the command's start to its exit\n");
    report_times (figures, disk_size, G_STRUCT_OFFSET (RunResult, total_s));

    g_print ("\nper VM, from the job objects (s): created -> completed (queue wait included),\n"
             "and copying -> completed (the copy and the pivot); /N = median / median at N=%u;\n"
             "at once: the most copies at one moment in any round, in QEMU (created -> ready,\n"
             "QEMU's stamps) / by the daemon's job states (copying -> synced)\n",
             n0);
    g_print ("  %5s %3s %9s %9s %7s %9s %9s %7s %8s\n", "N", "P", "median", "max", "/N", "copy med",
             "copy max", "/N", "at once");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            GArray *runs = figures->runs[c][q];
            g_autofree gchar *vm_ratio
                = ratio (MEDIAN (runs, vm_median_s), MEDIAN (figures->runs[0][q], vm_median_s));
            g_autofree gchar *copy_ratio
                = ratio (MEDIAN (runs, copy_median_s), MEDIAN (figures->runs[0][q], copy_median_s));
            guint max_running = 0, qemu_max = 0;
            g_autofree gchar *at_once = NULL;

            for (guint i = 0; i < runs->len; i++) {
                max_running = MAX (max_running, g_array_index (runs, RunResult, i).max_running);
                qemu_max = MAX (qemu_max, g_array_index (runs, RunResult, i).qemu_max_copying);
            }
            at_once = g_strdup_printf ("%u / %u", qemu_max, max_running);
            g_print ("  %5u %3u %9.3f %9.3f %7s %9.3f %9.3f %7s %8s\n", n, p,
                     MEDIAN (runs, vm_median_s), MEDIAN (runs, vm_max_s), vm_ratio,
                     MEDIAN (runs, copy_median_s), MEDIAN (runs, copy_max_s), copy_ratio, at_once);
        }
    }

    g_print ("\ndaemon CPU time (user + system), ms per VM: during evacuate --wait, and during\n"
             "the attaches; /N = per VM / per VM at N=%u, same P\n",
             n0);
    g_print ("  %5s %3s %10s %7s %10s %11s\n", "N", "P", "evacuate", "/N", "attach", "attach (s)");
    for (guint c = 0; c < figures->counts->len; c++) {
        guint n = g_array_index (figures->counts, guint, c);

        for (guint q = 0; q < figures->parallel->len; q++) {
            guint p = g_array_index (figures->parallel, guint, q);
            GArray *runs = figures->runs[c][q];
            gdouble per_vm = MEDIAN (runs, cpu_evacuate_ms) / n;
            g_autofree gchar *cpu_ratio
                = ratio (per_vm, MEDIAN (figures->runs[0][q], cpu_evacuate_ms) / n0);

            g_print ("  %5u %3u %10.2f %7s %10.2f %11.3f\n", n, p, per_vm, cpu_ratio,
                     MEDIAN (runs, cpu_attach_ms) / n, MEDIAN (runs, attach_s));
        }
    }
}

void
bench_scale_figures_free (Figures *figures)
{
    for (guint c = 0; figures->device != NULL && c < figures->counts->len; c++) {
        g_array_unref (figures->device[c]);
        for (guint q = 0; q < figures->parallel->len; q++)
            g_array_unref (figures->runs[c][q]);
        g_free (figures->runs[c]);
    }
    g_free (figures->device);
    g_free (figures->runs);
    g_clear_pointer (&figures->counts, g_array_unref);
    g_clear_pointer (&figures->parallel, g_array_unref);
}
