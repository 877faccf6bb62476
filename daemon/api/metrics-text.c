#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The text exposition format: for each family "# HELP name text", "# TYPE
 * name gauge|counter", then one line per sample, name{label="value",...}
 * value. Numbers are written in the C locale, as short as they read back
 * exactly.
 */

#include "metrics-text.h"

#include <string.h>

#define PREFIX "virt_mirror_"

gchar *
vmr_metrics_escape_label (const gchar *value)
{
    GString *out = g_string_sized_new (strlen (value));

    for (const gchar *p = value; *p != '\0'; p++) {
        if (*p == '\\')
            g_string_append (out, "\\\\");
        else if (*p == '"')
            g_string_append (out, "\\\"");
        else if (*p == '\n')
            g_string_append (out, "\\n");
        else
            g_string_append_c (out, *p);
    }
    return g_string_free (out, FALSE);
}

/* @value in the fewest digits that read back as the same double */
static void
append_value (GString *out, gdouble value)
{
    gchar buf[G_ASCII_DTOSTR_BUF_SIZE];

    for (gint digits = 15; digits <= 17; digits++) {
        g_autofree gchar *format = g_strdup_printf ("%%.%dg", digits);

        g_ascii_formatd (buf, sizeof buf, format, value);
        if (g_ascii_strtod (buf, NULL) == value)
            break;
    }
    g_string_append (out, buf);
}

static void
append_family (GString *out, const gchar *name, const gchar *type, const gchar *help)
{
    g_string_append_printf (out, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s %s\n", name, help,
                            name, type);
}

/*
 * one sample: @labels is NULL-terminated pairs of label name and (unescaped)
 * value
 */
static void
append_sample (GString *out, const gchar *name, const gchar *const *labels, gdouble value)
{
    g_string_append_printf (out, PREFIX "%s", name);
    for (guint i = 0; labels != NULL && labels[i] != NULL; i += 2) {
        g_autofree gchar *escaped = vmr_metrics_escape_label (labels[i + 1]);

        g_string_append_printf (out, "%s%s=\"%s\"", i == 0 ? "{" : ",", labels[i], escaped);
    }
    if (labels != NULL && labels[0] != NULL)
        g_string_append_c (out, '}');
    g_string_append_c (out, ' ');
    append_value (out, value);
    g_string_append_c (out, '\n');
}

/* the per-job gauges besides job_info */
typedef enum {
    JOB_TOTAL,
    JOB_PROCESSED,
    JOB_REMAINING,
    JOB_RATE,
    JOB_SPEED_LIMIT,
    JOB_START_TIME,
    JOB_END_TIME,
} JobGauge;

static const struct {
    const gchar *name;
    const gchar *help;
} job_gauges[] = {
    [JOB_TOTAL] = { "job_data_total_bytes", "Bytes the job's copy moves in all." },
    [JOB_PROCESSED] = { "job_data_processed_bytes", "Bytes the job's copy has moved." },
    [JOB_REMAINING]
    = { "job_data_remaining_bytes", "Bytes the job's copy still has to move (its backlog)." },
    [JOB_RATE]
    = { "job_transfer_rate_bytes", "The job's copy rate in bytes per second, smoothed." },
    [JOB_SPEED_LIMIT]
    = { "job_speed_limit_bytes", "The job's speed limit in bytes per second, 0 for none." },
    [JOB_START_TIME]
    = { "job_start_time_seconds", "When the job's copy started, in seconds since the epoch." },
    [JOB_END_TIME] = { "job_end_time_seconds", "When the job ended, in seconds since the epoch." },
};

/* @job's value of @gauge; FALSE when it has none (a start time before the copy started) */
static gboolean
job_value (const VmrJobStats *job, JobGauge gauge, gdouble *out_value)
{
    switch (gauge) {
        case JOB_TOTAL:
            *out_value = (gdouble) job->total_bytes;
            return TRUE;
        case JOB_PROCESSED:
            *out_value = (gdouble) job->processed_bytes;
            return TRUE;
        case JOB_REMAINING:
            *out_value = (gdouble) job->remaining_bytes;
            return TRUE;
        case JOB_RATE:
            *out_value = job->rate;
            return TRUE;
        case JOB_SPEED_LIMIT:
            *out_value = (gdouble) job->speed_limit;
            return TRUE;
        case JOB_START_TIME:
            *out_value = (gdouble) job->start_time_us / G_USEC_PER_SEC;
            return job->start_time_us != 0;
        case JOB_END_TIME:
        default:
            *out_value = (gdouble) job->end_time_us / G_USEC_PER_SEC;
            return job->end_time_us != 0;
    }
}

static void
append_jobs (GString *out, const VmrEngineStats *stats)
{
    append_family (out, "job_info", "gauge",
                   "A migration job the daemon keeps, with its state and backend; always 1.");
    for (guint i = 0; i < stats->jobs->len; i++) {
        const VmrJobStats *job = g_ptr_array_index (stats->jobs, i);
        const gchar *labels[] = {
            "job",     job->id,      "domain", job->domain,
            "disk",    job->disk,    "state",  vmr_job_state_to_string (job->state),
            "backend", job->backend, NULL,
        };

        append_sample (out, "job_info", labels, 1);
    }
    for (guint f = 0; f < G_N_ELEMENTS (job_gauges); f++) {
        append_family (out, job_gauges[f].name, "gauge", job_gauges[f].help);
        for (guint i = 0; i < stats->jobs->len; i++) {
            const VmrJobStats *job = g_ptr_array_index (stats->jobs, i);
            const gchar *labels[]
                = { "job", job->id, "domain", job->domain, "disk", job->disk, NULL };
            gdouble value;

            if (job_value (job, (JobGauge) f, &value))
                append_sample (out, job_gauges[f].name, labels, value);
        }
    }
}

/* the per-disk gauges of the guests' latest load samples */
typedef enum {
    GUEST_IOPS,
    GUEST_LATENCY,
    GUEST_SAMPLE_TIME,
    GUEST_SAMPLE_INTERVAL,
} GuestGauge;

static const struct {
    const gchar *name;
    const gchar *help;
} guest_gauges[] = {
    [GUEST_IOPS]
    = { "guest_iops", "The guest's reads and writes per second on the disk, latest load sample." },
    [GUEST_LATENCY] = { "guest_latency_seconds",
                        "The mean latency of the guest's requests on the disk, latest load "
                        "sample." },
    [GUEST_SAMPLE_TIME] = { "guest_sample_time_seconds",
                            "When the latest load sample's interval ended, in seconds since the "
                            "epoch." },
    [GUEST_SAMPLE_INTERVAL] = { "guest_sample_interval_seconds",
                                "The length of the latest load sample's interval, in seconds." },
};

static gdouble
guest_value (const VmrDiskStats *disk, GuestGauge gauge)
{
    switch (gauge) {
        case GUEST_IOPS:
            return disk->iops;
        case GUEST_LATENCY:
            return disk->latency_s;
        case GUEST_SAMPLE_TIME:
            return (gdouble) disk->sample_time_us / G_USEC_PER_SEC;
        case GUEST_SAMPLE_INTERVAL:
        default:
            return disk->sample_interval_s;
    }
}

static void
append_guests (GString *out, const VmrEngineStats *stats)
{
    for (guint f = 0; f < G_N_ELEMENTS (guest_gauges); f++) {
        append_family (out, guest_gauges[f].name, "gauge", guest_gauges[f].help);
        for (guint i = 0; i < stats->disks->len; i++) {
            const VmrDiskStats *disk = g_ptr_array_index (stats->disks, i);
            const gchar *labels[] = { "domain", disk->domain, "disk", disk->disk, NULL };

            append_sample (out, guest_gauges[f].name, labels, guest_value (disk, (GuestGauge) f));
        }
    }
    append_family (out, "iothread_cpu_seconds_total", "counter",
                   "CPU time (user and system) the domain's I/O thread has used.");
    for (guint i = 0; i < stats->iothreads->len; i++) {
        const VmrIothreadStats *thread = g_ptr_array_index (stats->iothreads, i);
        const gchar *labels[] = { "domain", thread->domain, "iothread", thread->iothread, NULL };

        append_sample (out, "iothread_cpu_seconds_total", labels, thread->cpu_seconds);
    }
}

static void
append_totals (GString *out, const VmrEngineStats *stats)
{
    append_family (out, "jobs", "gauge", "The jobs the daemon keeps, by state.");
    for (VmrJobState s = VMR_JOB_STATE_QUEUED; s < VMR_JOB_STATE_LAST; s++) {
        const gchar *labels[] = { "state", vmr_job_state_to_string (s), NULL };

        append_sample (out, "jobs", labels, stats->jobs_by_state[s]);
    }
    append_family (out, "policy_decisions_total", "counter",
                   "Decisions the policy made on jobs, by action.");
    for (guint i = 0; i < stats->decisions->len; i++) {
        const VmrDecisionStats *decision = g_ptr_array_index (stats->decisions, i);
        const gchar *labels[] = { "action", decision->action, NULL };

        append_sample (out, "policy_decisions_total", labels, (gdouble) decision->count);
    }
    append_family (out, "jobs_total", "counter",
                   "Jobs that ended since the daemon started, by result.");
    for (guint i = 0; i < G_N_ELEMENTS (stats->jobs_ended); i++) {
        const gchar *labels[]
            = { "result", vmr_job_state_to_string (VMR_JOB_STATE_COMPLETED + i), NULL };

        append_sample (out, "jobs_total", labels, (gdouble) stats->jobs_ended[i]);
    }
}

/* the per-storage gauges: each [storage] section's budget and what the copies use of it */
static const struct {
    const gchar *name;
    const gchar *help;
    gsize offset; /* of the guint64 in VmrStorageStats */
} storage_gauges[] = {
    { "storage_budget_bytes",
      "The storage's bandwidth budget for all copies together, bytes/s (0 = none).",
      G_STRUCT_OFFSET (VmrStorageStats, budget_bytes) },
    { "storage_used_bytes",
      "The sum of the speeds set on the copies that read from or write to the storage, bytes/s.",
      G_STRUCT_OFFSET (VmrStorageStats, used_bytes) },
};

static void
append_storages (GString *out, const VmrEngineStats *stats)
{
    for (guint f = 0; f < G_N_ELEMENTS (storage_gauges); f++) {
        append_family (out, storage_gauges[f].name, "gauge", storage_gauges[f].help);
        for (guint i = 0; i < stats->storages->len; i++) {
            const VmrStorageStats *storage = g_ptr_array_index (stats->storages, i);
            const gchar *labels[] = { "storage", storage->name, NULL };
            guint64 value = G_STRUCT_MEMBER (guint64, storage, storage_gauges[f].offset);

            append_sample (out, storage_gauges[f].name, labels, (gdouble) value);
        }
    }
}

/* the harm the running copies read of each other guest disk on their storages */
static void
append_neighbours (GString *out, const VmrEngineStats *stats)
{
    append_family (out, "neighbour_harm", "gauge",
                   "The harm a running copy last read of another guest disk on its source or "
                   "destination storage, against that disk's own baseline (0.1 = 10%).");
    for (guint i = 0; i < stats->neighbours->len; i++) {
        const VmrNeighbourStats *n = g_ptr_array_index (stats->neighbours, i);
        const gchar *labels[]
            = { "storage", n->storage, "domain", n->domain, "disk", n->disk, NULL };

        append_sample (out, "neighbour_harm", labels, n->harm);
    }
}

gchar *
vmr_metrics_format (const VmrEngineStats *stats)
{
    GString *out = g_string_new (NULL);

    append_jobs (out, stats);
    append_guests (out, stats);
    append_totals (out, stats);
    append_storages (out, stats);
    append_neighbours (out, stats);
    return g_string_free (out, FALSE);
}
