/*
 * libFuzzer harness: a job record in the state directory, as a daemon
 * reads it at start (vmr_job_load_records()), then shown as `virt-mirror
 * job` shows it, and its timeline as `virt-mirror report` reads it.
 */
#include "fuzz-common.h"
#include "job.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    g_autoptr (VmrJob) job = NULL;
    g_autoptr (JsonObject) shown = NULL;
    g_autoptr (JsonObject) series = NULL;
    g_autoptr (GError) error = NULL;

    job = vmr_job_new_from_record ((const gchar *) data, size, &error);
    if (job == NULL)
        return 0;
    shown = vmr_job_to_json (job);
    series = vmr_job_series_to_json (job->series);
    return 0;
}
