#define G_LOG_DOMAIN "vmr-test"

/*
 * The metrics' text format (daemon/api/metrics-text.c): a snapshot built by
 * hand gives exactly the text Prometheus reads, families with their HELP
 * and TYPE, label values escaped, numbers in the C locale and exact.
 */

#include <string.h>

#include "metrics-text.h"

static VmrJobStats *
job_new (const gchar *id, const gchar *domain, const gchar *disk, VmrJobState state)
{
    VmrJobStats *job = g_new0 (VmrJobStats, 1);

    job->id = g_strdup (id);
    job->domain = g_strdup (domain);
    job->disk = g_strdup (disk);
    job->state = state;
    job->backend = g_strdup ("qmp");
    return job;
}

/*
 * two jobs, one disk, one I/O thread, two decisions, ended jobs, a storage with a budget
 * and a neighbour a copy on it read
 */
static VmrEngineStats *
sample_stats (void)
{
    VmrEngineStats *stats = vmr_engine_stats_new ();
    VmrJobStats *done = job_new ("vmr-1", "web01", "disk0", VMR_JOB_STATE_COMPLETED);
    VmrJobStats *queued = job_new ("vmr-2", "db \"02\"\\x\ny", "vda", VMR_JOB_STATE_QUEUED);
    VmrDiskStats *disk = g_new0 (VmrDiskStats, 1);
    VmrIothreadStats *thread = g_new0 (VmrIothreadStats, 1);
    VmrDecisionStats *keep = g_new0 (VmrDecisionStats, 1);
    VmrDecisionStats *wait = g_new0 (VmrDecisionStats, 1);
    VmrStorageStats *storage = g_new0 (VmrStorageStats, 1);
    VmrNeighbourStats *neighbour = g_new0 (VmrNeighbourStats, 1);

    done->total_bytes = G_GUINT64_CONSTANT (21474836480);
    done->processed_bytes = done->total_bytes;
    done->speed_limit = 200 * 1024 * 1024;
    done->start_time_us = G_GINT64_CONSTANT (1764621234123456);
    done->end_time_us = G_GINT64_CONSTANT (1764621300000001);
    g_ptr_array_add (stats->jobs, done);
    g_free (queued->backend);
    queued->backend = g_strdup ("");
    queued->total_bytes = 1000;
    queued->remaining_bytes = 1000;
    queued->rate = 0.1;
    g_ptr_array_add (stats->jobs, queued);
    disk->domain = g_strdup ("web01");
    disk->disk = g_strdup ("disk0");
    disk->iops = 1400.5;
    disk->latency_s = 0.000125;
    disk->sample_time_us = G_GINT64_CONSTANT (1764621299500000);
    disk->sample_interval_s = 0.5;
    g_ptr_array_add (stats->disks, disk);
    thread->domain = g_strdup ("web01");
    thread->iothread = g_strdup ("io0");
    thread->cpu_seconds = 12.34;
    g_ptr_array_add (stats->iothreads, thread);
    keep->action = g_strdup ("keep");
    keep->count = 17;
    wait->action = g_strdup ("wait");
    wait->count = 2;
    g_ptr_array_add (stats->decisions, keep);
    g_ptr_array_add (stats->decisions, wait);
    stats->jobs_by_state[VMR_JOB_STATE_QUEUED] = 1;
    stats->jobs_by_state[VMR_JOB_STATE_COMPLETED] = 1;
    stats->jobs_ended[0] = 1;
    stats->jobs_ended[2] = 3;
    storage->name = g_strdup ("array-a");
    storage->budget_bytes = 62914560;
    storage->used_bytes = 41943040;
    g_ptr_array_add (stats->storages, storage);
    neighbour->storage = g_strdup ("array-a");
    neighbour->domain = g_strdup ("db02");
    neighbour->disk = g_strdup ("vdb");
    neighbour->harm = 0.31;
    g_ptr_array_add (stats->neighbours, neighbour);
    return stats;
}

static const gchar expected_text[]
    = "# HELP virt_mirror_job_info A migration job the daemon keeps, with its state and backend; "
      "always 1.\n"
      "# TYPE virt_mirror_job_info gauge\n"
      "virt_mirror_job_info{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\",state=\"completed\","
      "backend=\"qmp\"} 1\n"
      "virt_mirror_job_info{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\",disk=\"vda\","
      "state=\"queued\",backend=\"\"} 1\n"
      "# HELP virt_mirror_job_data_total_bytes Bytes the job's copy moves in all.\n"
      "# TYPE virt_mirror_job_data_total_bytes gauge\n"
      "virt_mirror_job_data_total_bytes{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} "
      "21474836480\n"
      "virt_mirror_job_data_total_bytes{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\","
      "disk=\"vda\"} 1000\n"
      "# HELP virt_mirror_job_data_processed_bytes Bytes the job's copy has moved.\n"
      "# TYPE virt_mirror_job_data_processed_bytes gauge\n"
      "virt_mirror_job_data_processed_bytes{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} "
      "21474836480\n"
      "virt_mirror_job_data_processed_bytes{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\","
      "disk=\"vda\"} 0\n"
      "# HELP virt_mirror_job_data_remaining_bytes Bytes the job's copy still has to move (its "
      "backlog).\n"
      "# TYPE virt_mirror_job_data_remaining_bytes gauge\n"
      "virt_mirror_job_data_remaining_bytes{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} 0\n"
      "virt_mirror_job_data_remaining_bytes{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\","
      "disk=\"vda\"} 1000\n"
      "# HELP virt_mirror_job_transfer_rate_bytes The job's copy rate in bytes per second, "
      "smoothed.\n"
      "# TYPE virt_mirror_job_transfer_rate_bytes gauge\n"
      "virt_mirror_job_transfer_rate_bytes{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} 0\n"
      "virt_mirror_job_transfer_rate_bytes{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\","
      "disk=\"vda\"} 0.1\n"
      "# HELP virt_mirror_job_speed_limit_bytes The job's speed limit in bytes per second, 0 for "
      "none.\n"
      "# TYPE virt_mirror_job_speed_limit_bytes gauge\n"
      "virt_mirror_job_speed_limit_bytes{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} "
      "209715200\n"
      "virt_mirror_job_speed_limit_bytes{job=\"vmr-2\",domain=\"db \\\"02\\\"\\\\x\\ny\","
      "disk=\"vda\"} 0\n"
      "# HELP virt_mirror_job_start_time_seconds When the job's copy started, in seconds since "
      "the epoch.\n"
      "# TYPE virt_mirror_job_start_time_seconds gauge\n"
      "virt_mirror_job_start_time_seconds{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} "
      "1764621234.123456\n"
      "# HELP virt_mirror_job_end_time_seconds When the job ended, in seconds since the epoch.\n"
      "# TYPE virt_mirror_job_end_time_seconds gauge\n"
      "virt_mirror_job_end_time_seconds{job=\"vmr-1\",domain=\"web01\",disk=\"disk0\"} "
      "1764621300.000001\n"
      "# HELP virt_mirror_guest_iops The guest's reads and writes per second on the disk, latest "
      "load sample.\n"
      "# TYPE virt_mirror_guest_iops gauge\n"
      "virt_mirror_guest_iops{domain=\"web01\",disk=\"disk0\"} 1400.5\n"
      "# HELP virt_mirror_guest_latency_seconds The mean latency of the guest's requests on the "
      "disk, latest load sample.\n"
      "# TYPE virt_mirror_guest_latency_seconds gauge\n"
      "virt_mirror_guest_latency_seconds{domain=\"web01\",disk=\"disk0\"} 0.000125\n"
      "# HELP virt_mirror_guest_sample_time_seconds When the latest load sample's interval ended, "
      "in seconds since the epoch.\n"
      "# TYPE virt_mirror_guest_sample_time_seconds gauge\n"
      "virt_mirror_guest_sample_time_seconds{domain=\"web01\",disk=\"disk0\"} 1764621299.5\n"
      "# HELP virt_mirror_guest_sample_interval_seconds The length of the latest load sample's "
      "interval, in seconds.\n"
      "# TYPE virt_mirror_guest_sample_interval_seconds gauge\n"
      "virt_mirror_guest_sample_interval_seconds{domain=\"web01\",disk=\"disk0\"} 0.5\n"
      "# HELP virt_mirror_iothread_cpu_seconds_total CPU time (user and system) the domain's I/O "
      "thread has used.\n"
      "# TYPE virt_mirror_iothread_cpu_seconds_total counter\n"
      "virt_mirror_iothread_cpu_seconds_total{domain=\"web01\",iothread=\"io0\"} 12.34\n"
      "# HELP virt_mirror_jobs The jobs the daemon keeps, by state.\n"
      "# TYPE virt_mirror_jobs gauge\n"
      "virt_mirror_jobs{state=\"queued\"} 1\n"
      "virt_mirror_jobs{state=\"delayed\"} 0\n"
      "virt_mirror_jobs{state=\"copying\"} 0\n"
      "virt_mirror_jobs{state=\"throttled\"} 0\n"
      "virt_mirror_jobs{state=\"paused\"} 0\n"
      "virt_mirror_jobs{state=\"synced\"} 0\n"
      "virt_mirror_jobs{state=\"pivoting\"} 0\n"
      "virt_mirror_jobs{state=\"completed\"} 1\n"
      "virt_mirror_jobs{state=\"failed\"} 0\n"
      "virt_mirror_jobs{state=\"cancelled\"} 0\n"
      "# HELP virt_mirror_policy_decisions_total Decisions the policy made on jobs, by action.\n"
      "# TYPE virt_mirror_policy_decisions_total counter\n"
      "virt_mirror_policy_decisions_total{action=\"keep\"} 17\n"
      "virt_mirror_policy_decisions_total{action=\"wait\"} 2\n"
      "# HELP virt_mirror_jobs_total Jobs that ended since the daemon started, by result.\n"
      "# TYPE virt_mirror_jobs_total counter\n"
      "virt_mirror_jobs_total{result=\"completed\"} 1\n"
      "virt_mirror_jobs_total{result=\"failed\"} 0\n"
      "virt_mirror_jobs_total{result=\"cancelled\"} 3\n"
      "# HELP virt_mirror_storage_budget_bytes The storage's bandwidth budget for all copies "
      "together, bytes/s (0 = none).\n"
      "# TYPE virt_mirror_storage_budget_bytes gauge\n"
      "virt_mirror_storage_budget_bytes{storage=\"array-a\"} 62914560\n"
      "# HELP virt_mirror_storage_used_bytes The sum of the speeds set on the copies that read "
      "from or write to the storage, bytes/s.\n"
      "# TYPE virt_mirror_storage_used_bytes gauge\n"
      "virt_mirror_storage_used_bytes{storage=\"array-a\"} 41943040\n"
      "# HELP virt_mirror_neighbour_harm The harm a running copy last read of another guest disk "
      "on its source or destination storage, against that disk's own baseline (0.1 = 10%).\n"
      "# TYPE virt_mirror_neighbour_harm gauge\n"
      "virt_mirror_neighbour_harm{storage=\"array-a\",domain=\"db02\",disk=\"vdb\"} 0.31\n";

static void
test_format (void)
{
    g_autoptr (VmrEngineStats) stats = sample_stats ();
    g_autofree gchar *text = vmr_metrics_format (stats);

    g_assert_cmpstr (text, ==, expected_text);
}

/* every family has its HELP and TYPE even with nothing to report */
static void
test_format_empty (void)
{
    static const gchar *const families[] = {
        "job_info",
        "job_data_total_bytes",
        "job_data_processed_bytes",
        "job_data_remaining_bytes",
        "job_transfer_rate_bytes",
        "job_speed_limit_bytes",
        "job_start_time_seconds",
        "job_end_time_seconds",
        "guest_iops",
        "guest_latency_seconds",
        "guest_sample_time_seconds",
        "guest_sample_interval_seconds",
        "iothread_cpu_seconds_total",
        "jobs",
        "policy_decisions_total",
        "jobs_total",
        "storage_budget_bytes",
        "storage_used_bytes",
        "neighbour_harm",
    };
    g_autoptr (VmrEngineStats) stats = vmr_engine_stats_new ();
    g_autofree gchar *text = vmr_metrics_format (stats);
    g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
    guint n_samples = 0;

    for (guint i = 0; i < G_N_ELEMENTS (families); i++) {
        g_autofree gchar *type = g_strdup_printf ("\n# TYPE virt_mirror_%s ", families[i]);
        g_autofree gchar *help = g_strdup_printf ("# HELP virt_mirror_%s ", families[i]);

        g_assert_nonnull (strstr (text, help));
        g_assert_nonnull (strstr (text, type));
    }
    for (guint i = 0; lines[i] != NULL; i++) {
        if (*lines[i] != '\0' && *lines[i] != '#')
            n_samples++;
    }
    /* only the totals: ten states, three results */
    g_assert_cmpuint (n_samples, ==, 10 + 3);
}

typedef struct {
    const gchar *value;
    const gchar *escaped;
} EscapeCase;

static const EscapeCase escape_cases[] = {
    { "", "" },
    { "web01", "web01" },
    { "a\"b", "a\\\"b" },
    { "a\\b", "a\\\\b" },
    { "a\nb", "a\\nb" },
    { "\\\"\n", "\\\\\\\"\\n" },
    /* UTF-8 and other control characters pass as they are */
    { "d\xc3\xa9j\xc3\xa0\t", "d\xc3\xa9j\xc3\xa0\t" },
};

static void
test_escape (void)
{
    for (guint i = 0; i < G_N_ELEMENTS (escape_cases); i++) {
        g_autofree gchar *escaped = vmr_metrics_escape_label (escape_cases[i].value);

        g_assert_cmpstr (escaped, ==, escape_cases[i].escaped);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/metrics-text/format", test_format);
    g_test_add_func ("/metrics-text/format-empty", test_format_empty);
    g_test_add_func ("/metrics-text/escape", test_escape);
    return g_test_run ();
}
