#define G_LOG_DOMAIN "vmr-bench"

#include "bench-jobs.h"

#include "bench-process.h"
#include "bench-series.h"
#include "vmr-error.h"

/* one job of one QEMU */
typedef struct {
    gchar *what;      /* "JOB-ID on QEMU N", for errors */
    gint64 since_us;  /* when the current bulk copy started, 0 = not copying */
    gint64 last_us;   /* the latest event */
    GArray *starts;   /* of gdouble, QEMU's microseconds */
    GArray *ends;     /* the same */
    gboolean ordered; /* FALSE once an event went back in time */
} JobSpans;

struct _VmrBenchJobLog {
    GHashTable *jobs;   /* "QEMU index/job id" -> JobSpans */
    GPtrArray *watched; /* of VmrQmpClient, weak: NULL once freed; the index names the QEMU */
};

static void
job_spans_free (JobSpans *spans)
{
    g_free (spans->what);
    g_array_unref (spans->starts);
    g_array_unref (spans->ends);
    g_free (spans);
}

VmrBenchJobLog *
vmr_bench_job_log_new (void)
{
    VmrBenchJobLog *log = g_new0 (VmrBenchJobLog, 1);

    log->jobs
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) job_spans_free);
    log->watched = g_ptr_array_new ();
    return log;
}

static void
client_gone_cb (gpointer data, GObject *where)
{
    VmrBenchJobLog *log = data;

    guint index;

    /* the slot stays, so that the other QEMUs keep their index */
    if (g_ptr_array_find (log->watched, where, &index))
        g_ptr_array_index (log->watched, index) = NULL;
}

void
vmr_bench_job_log_free (VmrBenchJobLog *log)
{
    for (guint i = 0; i < log->watched->len; i++) {
        GObject *client = g_ptr_array_index (log->watched, i);

        if (client == NULL)
            continue;
        g_signal_handlers_disconnect_by_data (client, log);
        g_object_weak_unref (client, client_gone_cb, log);
    }
    g_ptr_array_unref (log->watched);
    g_hash_table_unref (log->jobs);
    g_free (log);
}

/* the statuses in which a job copies in bulk: what the admission limits count */
static gboolean
status_copies (const gchar *status)
{
    return g_strcmp0 (status, "created") == 0 || g_strcmp0 (status, "running") == 0
           || g_strcmp0 (status, "paused") == 0;
}

static void
event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
          gpointer user_data)
{
    VmrBenchJobLog *log = user_data;
    const gchar *id = vmr_json_get_string (data, "id");
    const gchar *status = vmr_json_get_string (data, "status");
    guint index;
    g_autofree gchar *key = NULL;
    JobSpans *spans;
    gdouble stamp = (gdouble) timestamp_us;

    if (g_strcmp0 (name, "JOB_STATUS_CHANGE") != 0 || id == NULL || status == NULL
        || !g_ptr_array_find (log->watched, client, &index))
        return;
    key = g_strdup_printf ("%u/%s", index, id);
    spans = g_hash_table_lookup (log->jobs, key);
    if (spans == NULL) {
        spans = g_new0 (JobSpans, 1);
        spans->what = g_strdup_printf ("job %s of QEMU %u", id, index + 1);
        spans->starts = g_array_new (FALSE, FALSE, sizeof (gdouble));
        spans->ends = g_array_new (FALSE, FALSE, sizeof (gdouble));
        spans->ordered = TRUE;
        g_hash_table_insert (log->jobs, g_steal_pointer (&key), spans);
    }
    if (timestamp_us < spans->last_us)
        spans->ordered = FALSE;
    spans->last_us = timestamp_us;
    if (status_copies (status) && spans->since_us == 0) {
        spans->since_us = timestamp_us;
        g_array_append_val (spans->starts, stamp);
    } else if (!status_copies (status) && spans->since_us != 0) {
        spans->since_us = 0;
        g_array_append_val (spans->ends, stamp);
    }
}

void
vmr_bench_job_log_watch (VmrBenchJobLog *log, VmrQmpClient *client)
{
    g_ptr_array_add (log->watched, client);
    g_object_weak_ref (G_OBJECT (client), client_gone_cb, log);
    g_signal_connect (client, "event", G_CALLBACK (event_cb), log);
}

gboolean
vmr_bench_job_log_max_copying (VmrBenchJobLog *log, guint *out_max, guint *n_jobs, GError **error)
{
    g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gdouble));
    g_autoptr (GArray) ends = g_array_new (FALSE, FALSE, sizeof (gdouble));
    GHashTableIter iter;
    JobSpans *spans;

    g_hash_table_iter_init (&iter, log->jobs);
    while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &spans)) {
        if (spans->since_us != 0 || !spans->ordered) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "%s: %s", spans->what,
                         spans->ordered ? "still copying" : "events out of order");
            return FALSE;
        }
        g_array_append_vals (starts, spans->starts->data, spans->starts->len);
        g_array_append_vals (ends, spans->ends->data, spans->ends->len);
    }
    if (n_jobs != NULL)
        *n_jobs = g_hash_table_size (log->jobs);
    *out_max = vmr_bench_max_overlap (starts, ends);
    return TRUE;
}

guint
vmr_bench_max_overlap (GArray *starts, GArray *ends)
{
    g_autoptr (GArray) s = g_array_copy (starts);
    g_autoptr (GArray) e = g_array_copy (ends);
    guint i = 0, j = 0, now = 0, max = 0;

    g_array_sort (s, vmr_bench_compare_doubles);
    g_array_sort (e, vmr_bench_compare_doubles);
    /* at a tie the end goes first */
    while (i < s->len) {
        if (j >= e->len || g_array_index (s, gdouble, i) < g_array_index (e, gdouble, j)) {
            now++;
            i++;
            max = MAX (max, now);
        } else {
            now--;
            j++;
        }
    }
    return max;
}
