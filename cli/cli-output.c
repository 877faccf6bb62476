#define G_LOG_DOMAIN "vmr-cli"

#include "cli-output.h"

#include "cli-json.h"
#include "cli-table.h"
#include "units.h"
#include "vmr-error.h"
#include "vmr-json.h"

GQuark
vmr_cli_usage_error_quark (void)
{
    return g_quark_from_static_string ("vmr-cli-usage-error-quark");
}

GQuark
vmr_cli_reported_error_quark (void)
{
    return g_quark_from_static_string ("vmr-cli-reported-error-quark");
}

/* job members that vmr_cli_output_job() shows under their own label */
static const gchar *const shown_job_members[] = {
    "id",          "domain",           "disk",        "state",       "reason",
    "source",      "source-format",    "destination", "format",      "created-destination",
    "speed",       "manual-pivot",     "progress",    "created",     "updated",
    "history",     "policy",           "waiting-for", "group",       "copy-mode",
    "source-node", "source-file-node", "orphaned",    "convergence", "nbd",
    "verify",      "verification",     "granularity", "buf-size",    NULL,
};

gint
vmr_cli_output_error (const GError *error, gboolean json)
{
    const gchar *class_name;

    if (error->domain == VMR_CLI_REPORTED_ERROR)
        return VMR_CLI_EXIT_FAILED;
    if (error->domain == VMR_CLI_USAGE_ERROR) {
        g_printerr ("virt-mirror: error: %s\n", error->message);
        return VMR_CLI_EXIT_USAGE;
    }
    g_debug ("error %s %d: %s", g_quark_to_string (error->domain), error->code, error->message);
    if (json) {
        class_name = error->domain == VMR_ERROR ? vmr_error_class_name (error->code) : "Failed";
        vmr_cli_json_print_error (class_name, error->message);
    }
    g_printerr ("virt-mirror: error: %s\n", error->message);
    return VMR_CLI_EXIT_FAILED;
}

/* "io0,io1" for a disk whose queues several I/O threads serve */
static gchar *
disk_iothreads (JsonObject *disk)
{
    JsonArray *ids = vmr_json_get_array (disk, "iothreads");
    g_autoptr (GString) text = g_string_new (NULL);

    for (guint i = 0; ids != NULL && i < json_array_get_length (ids); i++) {
        const gchar *id = vmr_json_array_string (ids, i);

        if (id == NULL)
            continue;
        g_string_append_printf (text, "%s%s", text->len > 0 ? "," : "", id);
    }
    if (text->len == 0)
        return g_strdup (vmr_json_get_string (disk, "iothread"));
    return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
add_disk_row (VmrCliTable *table, JsonObject *disk)
{
    g_autofree gchar *size = NULL;
    g_autofree gchar *iothreads = disk_iothreads (disk);
    gdouble size_bytes = 0;

    if (vmr_json_get_double (disk, "size", &size_bytes) && size_bytes >= 0)
        size = vmr_units_format_bytes ((guint64) size_bytes);
    vmr_cli_table_add_row (
        table, vmr_json_get_string (disk, "id"), vmr_json_get_string (disk, "node"),
        vmr_json_get_string (disk, "format"), size, iothreads, vmr_json_get_string (disk, "job"),
        vmr_json_get_string (disk, "storage"), vmr_json_get_string (disk, "path"), NULL);
}

/* "  iothreads: io0 12.5% (tid 1234), io1 (tid 1235)": no figure before a second reading */
static void
print_domain_iothreads (JsonObject *domain)
{
    JsonArray *threads = vmr_json_get_array (domain, "iothreads");
    g_autoptr (GString) line = g_string_new (NULL);

    for (guint i = 0; threads != NULL && i < json_array_get_length (threads); i++) {
        JsonObject *thread = vmr_json_array_object (threads, i);
        const gchar *id = vmr_json_get_string (thread, "id");
        gdouble cpu = 0;
        gdouble thread_id = 0;

        if (id == NULL)
            continue;
        g_string_append_printf (line, "%s%s", line->len > 0 ? ", " : "", id);
        if (vmr_json_get_double (thread, "cpu", &cpu))
            g_string_append_printf (line, " %.1f%%", cpu);
        if (vmr_json_get_double (thread, "thread-id", &thread_id) && thread_id > 0)
            g_string_append_printf (line, " (tid %.0f)", thread_id);
    }
    if (line->len > 0)
        g_print ("  iothreads: %s\n", line->str);
}

static void
print_domain (JsonObject *domain)
{
    const gchar *name = vmr_json_get_string (domain, "name");
    const gchar *backend = vmr_json_get_string (domain, "backend");
    /* where the daemon reaches it: a QMP socket, or libvirt's URI */
    const gchar *monitor = vmr_json_get_string (domain, "monitor") != NULL
                               ? vmr_json_get_string (domain, "monitor")
                               : vmr_json_get_string (domain, "uri");
    gboolean connected = vmr_json_bool_or (domain, "connected", FALSE);
    JsonArray *disks = vmr_json_get_array (domain, "disks");
    g_autoptr (VmrCliTable) table = NULL;
    g_autofree gchar *text = NULL;

    g_print ("%s  (%s%s%s, %s)\n", name != NULL ? name : "?", backend != NULL ? backend : "?",
             monitor != NULL ? " " : "", monitor != NULL ? monitor : "",
             connected ? "connected" : "disconnected");
    print_domain_iothreads (domain);
    if (disks == NULL || json_array_get_length (disks) == 0) {
        g_print ("  no disks\n");
        return;
    }
    table = vmr_cli_table_new ("DISK", "NODE", "FORMAT", "SIZE", "IOTHREAD", "JOB", "STORAGE",
                               "PATH", NULL);
    for (guint i = 0; i < json_array_get_length (disks); i++) {
        JsonObject *disk = vmr_json_array_object (disks, i);

        if (disk != NULL)
            add_disk_row (table, disk);
    }
    text = vmr_cli_table_to_string (table, "  ");
    g_print ("%s", text);
}

gboolean
vmr_cli_output_domains (JsonNode *reply, GError **error)
{
    JsonArray *domains = vmr_cli_json_expect_array (reply, "query-domains", error);

    if (domains == NULL)
        return FALSE;
    if (json_array_get_length (domains) == 0) {
        g_print ("No domains attached.\n");
        return TRUE;
    }
    for (guint i = 0; i < json_array_get_length (domains); i++) {
        JsonObject *domain = vmr_json_array_object (domains, i);

        if (domain == NULL) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL,
                         "unexpected reply to 'query-domains' from virt-mirrord: "
                         "a domain that is not an object");
            return FALSE;
        }
        if (i > 0)
            g_print ("\n");
        print_domain (domain);
    }
    return TRUE;
}

gboolean
vmr_cli_output_jobs (JsonNode *reply, GError **error)
{
    JsonArray *jobs = vmr_cli_json_expect_array (reply, "query-jobs", error);
    g_autoptr (VmrCliTable) table = NULL;
    g_autofree gchar *text = NULL;

    if (jobs == NULL)
        return FALSE;
    if (json_array_get_length (jobs) == 0) {
        g_print ("No jobs.\n");
        return TRUE;
    }
    table = vmr_cli_table_new ("ID", "DOMAIN", "DISK", "STATE", "PROGRESS", "RATE", "ETA",
                               "DESTINATION", NULL);
    for (guint i = 0; i < json_array_get_length (jobs); i++) {
        g_autoptr (VmrCliJob) job = NULL;
        g_autofree gchar *percent = NULL;
        g_autofree gchar *rate = NULL;
        g_autofree gchar *eta = NULL;
        g_autofree gchar *state = NULL;

        job = vmr_cli_job_new (json_array_get_element (jobs, i), "query-jobs", error);
        if (job == NULL)
            return FALSE;
        state = vmr_cli_job_format_state (job);
        percent = vmr_cli_job_format_percent (job);
        rate = vmr_cli_job_format_rate (job);
        eta = vmr_cli_job_format_eta (job);
        vmr_cli_table_add_row (table, job->id, job->domain, job->disk, state, percent, rate, eta,
                               job->destination, NULL);
    }
    text = vmr_cli_table_to_string (table, "");
    g_print ("%s", text);
    return TRUE;
}

static void
print_field (const gchar *label, const gchar *value)
{
    g_autofree gchar *label_colon = g_strconcat (label, ":", NULL);

    g_print ("%-14s %s\n", label_colon, value != NULL && *value != '\0' ? value : "-");
}

static gchar *
describe_image (const gchar *path, const gchar *format, gboolean created)
{
    g_autoptr (GString) text = g_string_new (path != NULL ? path : "?");

    if (format != NULL || created) {
        g_string_append (text, " (");
        if (format != NULL)
            g_string_append (text, format);
        if (format != NULL && created)
            g_string_append (text, ", ");
        if (created)
            g_string_append (text, "created by virt-mirror");
        g_string_append (text, ")");
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

static gchar *
describe_progress (const VmrCliJob *job)
{
    g_autofree gchar *percent = vmr_cli_job_format_percent (job);
    g_autofree gchar *amount = vmr_cli_job_format_amount (job);
    g_autofree gchar *backlog = NULL;

    if (percent == NULL || amount == NULL)
        return percent != NULL ? g_steal_pointer (&percent) : NULL;
    backlog = vmr_units_format_bytes (job->backlog);
    return g_strdup_printf ("%s (%s, backlog %s)", percent, amount, backlog);
}

static void
print_history (JsonArray *history)
{
    g_print ("History:\n");
    for (guint i = 0; i < json_array_get_length (history); i++) {
        JsonObject *entry = vmr_json_array_object (history, i);
        const gchar *state = vmr_json_get_string (entry, "state");
        const gchar *reason = vmr_json_get_string (entry, "reason");
        gint64 time_us = 0;
        g_autofree gchar *time_text = NULL;

        vmr_json_get_int (entry, "time", &time_us);
        time_text = vmr_cli_format_time (time_us);
        g_print ("  %s  %s%s%s%s\n", time_text, state != NULL ? state : "?",
                 reason != NULL ? " (" : "", reason != NULL ? reason : "",
                 reason != NULL ? ")" : "");
    }
}

/* the last verification's end, after the transitions */
/* a size of the job's object, when it has one */
static void
print_bytes_field (JsonObject *obj, const gchar *member, const gchar *label)
{
    guint64 bytes = 0;

    if (vmr_json_get_uint (obj, member, &bytes) && bytes > 0) {
        g_autofree gchar *text = vmr_units_format_bytes (bytes);

        print_field (label, text);
    }
}

static void
print_verification_end (JsonObject *obj)
{
    JsonObject *v = vmr_json_get_object (obj, "verification");
    gint64 finished_us = 0;
    g_autofree gchar *time_text = NULL;

    if (v == NULL || !vmr_json_get_int (v, "finished", &finished_us) || finished_us == 0)
        return;
    time_text = vmr_cli_format_time (finished_us);
    g_print ("  %s  verification %s\n", time_text, vmr_json_get_string (v, "state"));
}

/* "Verify" and its figures: what the last comparison with the old source found */
static void
print_verification (JsonObject *obj)
{
    JsonObject *v = vmr_json_get_object (obj, "verification");
    const gchar *state = vmr_json_get_string (v, "state");
    g_autofree gchar *compared = NULL;
    g_autofree gchar *zero = NULL;
    g_autofree gchar *written = NULL;
    g_autofree gchar *figures = NULL;
    JsonArray *ranges;

    if (state == NULL) {
        print_field ("Verify", vmr_json_bool_or (obj, "verify", FALSE) ? "after the pivot" : "no");
        return;
    }
    compared = vmr_units_format_bytes (vmr_json_uint_or (v, "compared", 0));
    zero = vmr_units_format_bytes (vmr_json_uint_or (v, "zero", 0));
    written = vmr_units_format_bytes (vmr_json_uint_or (v, "written", 0));
    figures = g_strdup_printf ("%s%s (%s compared, %s zero on both, %s written since the pivot)",
                               g_str_equal (state, "failed") ? "verify " : "", state, compared,
                               zero, written);
    print_field ("Verify", figures);
    if (vmr_json_get_string (v, "error") != NULL)
        print_field ("Verify error", vmr_json_get_string (v, "error"));
    ranges = vmr_json_get_array (v, "ranges");
    for (guint i = 0; ranges != NULL && i < json_array_get_length (ranges); i++) {
        JsonObject *range = vmr_json_array_object (ranges, i);
        g_autofree gchar *text = g_strdup_printf (
            "%" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT " (offset+length, bytes)",
            vmr_json_uint_or (range, "offset", 0), vmr_json_uint_or (range, "length", 0));

        if (i == 0)
            print_field ("Differs at", text);
        else
            g_print ("%-14s %s\n", "", text);
    }
}

static void
print_other_members (JsonObject *obj)
{
    g_autoptr (GList) names = json_object_get_members (obj);

    /* fields added to the protocol after this CLI still get shown */
    for (GList *l = names; l != NULL; l = l->next) {
        const gchar *name = l->data;
        g_autofree gchar *value = NULL;

        if (g_strv_contains (shown_job_members, name))
            continue;
        value = vmr_cli_json_to_string (json_object_get_member (obj, name), FALSE);
        print_field (name, value);
    }
}

/*
 * what the preflight found on an NBD export, and the options QEMU opens it
 * with: "32 MiB, structured replies, zero, fast zero, trim, flush, preferred
 * block 4 KiB; reconnect-delay 5 s; TLS with /etc/pki/qemu; detect-zeroes
 * unmap", then what a missing feature costs
 */
static gchar *
describe_export (JsonObject *nbd)
{
    static const struct {
        const gchar *member;
        const gchar *name;
    } features[] = {
        { "structured-replies", "structured replies" },
        { "can-zero", "zero" },
        { "can-fast-zero", "fast zero" },
        { "can-trim", "trim" },
        { "can-flush", "flush" },
    };
    g_autoptr (GString) text = g_string_new (NULL);
    guint64 number = 0;

    if (nbd == NULL)
        return NULL;
    if (vmr_json_get_uint (nbd, "size", &number)) {
        g_autofree gchar *size = vmr_units_format_bytes (number);

        g_string_append (text, size);
        for (guint i = 0; i < G_N_ELEMENTS (features); i++)
            g_string_append_printf (text, ", %s%s",
                                    vmr_json_bool_or (nbd, features[i].member, FALSE) ? "" : "no ",
                                    features[i].name);
        if (vmr_json_get_uint (nbd, "preferred-block-size", &number) && number > 0) {
            g_autofree gchar *block = vmr_units_format_bytes (number);

            g_string_append_printf (text, ", preferred block %s", block);
        }
        g_string_append (text, "; ");
    }
    if (vmr_json_get_uint (nbd, "reconnect-delay", &number))
        g_string_append_printf (text, "reconnect-delay %" G_GUINT64_FORMAT " s", number);
    if (vmr_json_get_string (nbd, "tls-creds") != NULL)
        g_string_append_printf (text, "; TLS with %s", vmr_json_get_string (nbd, "tls-creds"));
    if (vmr_json_get_string (nbd, "detect-zeroes") != NULL)
        g_string_append_printf (text, "; detect-zeroes %s",
                                vmr_json_get_string (nbd, "detect-zeroes"));
    if (vmr_json_get_string (nbd, "zero-fallback") != NULL)
        g_string_append_printf (text, "; %s", vmr_json_get_string (nbd, "zero-fallback"));
    return g_string_free (g_steal_pointer (&text), FALSE);
}

/* the speed limit, and while throttled the speed the copy goes back to */
static gchar *
describe_speed (const VmrCliJob *job)
{
    g_autofree gchar *speed = vmr_units_format_speed (job->speed);
    g_autofree gchar *full = NULL;

    if (!job->has_base_speed || !g_str_equal (job->state, "throttled"))
        return g_steal_pointer (&speed);
    full = vmr_units_format_speed (job->base_speed);
    return g_strdup_printf ("%s (throttled; full speed %s)", speed, full);
}

/* "1402 IOPS, 1.20 ms"; NULL without the sample */
static gchar *
describe_sample (JsonObject *sample)
{
    g_autofree gchar *latency = NULL;
    gdouble iops;

    if (!vmr_json_get_double (sample, "iops", &iops))
        return NULL;
    latency = vmr_cli_format_latency (vmr_json_double_or (sample, "latency-us", -1));
    return g_strdup_printf ("%.0f IOPS, %s", iops, latency != NULL ? latency : "latency unknown");
}

/* the newest speeds the controller set: "8 MiB/s at 0s, 10 MiB/s at 1.0s, ..." */
#define SHOWN_SPEEDS 8

static gchar *
describe_speeds (JsonArray *speeds)
{
    guint n = speeds != NULL ? json_array_get_length (speeds) : 0;
    g_autoptr (GString) text = g_string_new (NULL);

    if (n == 0)
        return NULL;
    if (n > SHOWN_SPEEDS)
        g_string_append_printf (text, "(%u earlier) ", n - SHOWN_SPEEDS);
    for (guint i = n > SHOWN_SPEEDS ? n - SHOWN_SPEEDS : 0; i < n; i++) {
        JsonObject *point = vmr_json_array_object (speeds, i);
        g_autofree gchar *speed = vmr_units_format_speed (vmr_json_uint_or (point, "speed", 0));

        g_string_append_printf (text, "%s at %.1fs", speed, vmr_json_double_or (point, "time", 0));
        if (i + 1 < n)
            g_string_append (text, ", ");
    }
    return g_string_free (g_steal_pointer (&text), FALSE);
}

/* control = adaptive: what the controller sees and did */
static void
print_controller (JsonObject *controller)
{
    g_autofree gchar *speed = vmr_units_format_speed (vmr_json_uint_or (controller, "speed", 0));
    g_autofree gchar *control = g_strdup_printf ("adaptive, at %s", speed);
    g_autofree gchar *baseline = describe_sample (vmr_json_get_object (controller, "baseline"));
    g_autofree gchar *load = describe_sample (vmr_json_get_object (controller, "load"));
    g_autofree gchar *now = NULL;
    g_autofree gchar *speeds = describe_speeds (vmr_json_get_array (controller, "speeds"));

    if (load != NULL)
        now = g_strdup_printf ("%s (harm %.1f%%)", load,
                               vmr_json_double_or (controller, "harm", 0) * 100);
    print_field ("Control", control);
    print_field ("Baseline", baseline != NULL ? baseline : "not measured yet");
    print_field ("Guest now", now);
    print_field ("Speeds", speeds);
}

static void
print_policy (const VmrCliJob *job)
{
    JsonObject *controller = vmr_json_get_object (
        vmr_json_get_object (vmr_json_node_object (job->node), "policy"), "controller");
    g_autofree gchar *decision = vmr_cli_job_format_decision (job);
    g_autofree gchar *iops = vmr_cli_job_format_guest_iops (job);
    g_autofree gchar *latency = vmr_cli_job_format_guest_latency (job);

    if (job->user_paused)
        print_field ("Decision", "none: paused by a user, the policy leaves the job alone");
    else
        print_field ("Decision", decision);
    if (job->held > 0) {
        g_autofree gchar *held = vmr_units_format_duration ((gint64) (job->held * G_USEC_PER_SEC));

        print_field ("Held back", held);
    }
    print_field ("Guest IOPS", iops);
    print_field ("Guest latency", latency);
    if (controller != NULL)
        print_controller (controller);
}

void
vmr_cli_output_job (const VmrCliJob *job)
{
    JsonObject *obj = vmr_json_node_object (job->node);
    JsonArray *history = vmr_json_get_array (obj, "history");
    g_autofree gchar *source = describe_image (job->source, job->source_format, FALSE);
    g_autofree gchar *state = vmr_cli_job_format_state (job);
    g_autofree gchar *destination
        = describe_image (job->destination, job->format, job->created_destination);
    g_autofree gchar *speed = describe_speed (job);
    g_autofree gchar *export_text = describe_export (vmr_json_get_object (obj, "nbd"));
    g_autofree gchar *convergence = vmr_cli_job_format_convergence (job);
    g_autofree gchar *progress = describe_progress (job);
    g_autofree gchar *rate = vmr_cli_job_format_rate (job);
    g_autofree gchar *dirty = vmr_cli_job_format_dirty_rate (job);
    g_autofree gchar *eta = vmr_cli_job_format_eta (job);
    g_autofree gchar *created = job->created > 0 ? vmr_cli_format_time (job->created) : NULL;
    g_autofree gchar *updated = job->updated > 0 ? vmr_cli_format_time (job->updated) : NULL;

    print_field ("Job", job->id);
    print_field ("Domain", job->domain);
    print_field ("Disk", job->disk);
    print_field ("State", state);
    if (job->orphaned && !vmr_cli_job_is_finished (job)) {
        g_autofree gchar *not_yet = g_strdup_printf (
            "not yet: the daemon restarted and %s is not known again; attach it (or let "
            "libvirt report it)",
            job->domain);

        print_field ("Picked up", not_yet);
    }
    print_field ("Reason", job->reason);
    print_field ("Source", source);
    print_field ("Source node", vmr_json_get_string (obj, "source-node"));
    print_field ("Destination", destination);
    if (export_text != NULL)
        print_field ("Export", export_text);
    print_field ("Speed limit", speed);
    print_field ("Manual pivot", job->manual_pivot ? "yes" : "no");
    if (vmr_json_get_string (obj, "group") != NULL) {
        g_autofree gchar *group = g_strdup_printf ("%s (its disks cut over together)",
                                                   vmr_json_get_string (obj, "group"));

        print_field ("Group", group);
    }
    print_field ("Copy mode", vmr_json_get_string (obj, "copy-mode"));
    print_bytes_field (obj, "granularity", "Granularity");
    print_bytes_field (obj, "buf-size", "Buffer");
    /* only once the daemon made the copy converge */
    if (convergence != NULL)
        print_field ("Convergence", convergence);
    print_field ("Progress", progress);
    print_field ("Rate", rate);
    /* only while it copies, from the second reading of its progress */
    if (dirty != NULL)
        print_field ("Guest dirties", dirty);
    print_field ("ETA", eta);
    print_verification (obj);
    if (job->has_policy)
        print_policy (job);
    print_field ("Created", created);
    print_field ("Updated", updated);
    print_other_members (obj);
    if (history != NULL) {
        print_history (history);
        print_verification_end (obj);
    }
}

gchar *
vmr_cli_output_describe_disk (const VmrCliJob *job)
{
    return g_strdup_printf ("%s of %s", job->disk != NULL ? job->disk : "?",
                            job->domain != NULL ? job->domain : "?");
}
