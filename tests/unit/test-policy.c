/*
 * The policy file: values, validation with file:line errors, precedence of
 * sections, lookups and the formatting of values.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <glib/gstdio.h>

#include "policy.h"
#include "vmr-error.h"
#include "test-report.h"

#define NAME "test.conf"

static VmrPolicy *
load (const gchar *text, GError **error)
{
    return vmr_policy_load_from_data (NAME, text, error);
}

/* ---- valid values ---- */

typedef struct {
    const gchar *line;     /* a line of [defaults] */
    VmrPolicyKey key;      /* the key it sets */
    const gchar *expected; /* the value as vmr_policy_rule_format_value() spells it */
} ValueCase;

static const ValueCase value_cases[] = {
    { "sample-interval = 500ms", VMR_POLICY_KEY_SAMPLE_INTERVAL, "500ms" },
    { "sample-interval = 100ms", VMR_POLICY_KEY_SAMPLE_INTERVAL, "100ms" },
    { "sample-interval = 2s", VMR_POLICY_KEY_SAMPLE_INTERVAL, "2s" },
    { "sample-interval = 0.5", VMR_POLICY_KEY_SAMPLE_INTERVAL, "500ms" }, /* bare = seconds */
    { "sample-interval = 1m", VMR_POLICY_KEY_SAMPLE_INTERVAL, "1m" },
    { "sample-interval = 60s", VMR_POLICY_KEY_SAMPLE_INTERVAL, "1m" },
    { "speed = 100M", VMR_POLICY_KEY_SPEED, "100M" },
    { "speed = 100m", VMR_POLICY_KEY_SPEED, "100M" },
    { "speed = 512K", VMR_POLICY_KEY_SPEED, "512K" },
    { "speed = 1G", VMR_POLICY_KEY_SPEED, "1G" },
    { "speed = 1.5G", VMR_POLICY_KEY_SPEED, "1536M" },
    { "speed = 2T", VMR_POLICY_KEY_SPEED, "2T" },
    { "speed = 100MiB/s", VMR_POLICY_KEY_SPEED, "100M" },
    { "speed = 4096", VMR_POLICY_KEY_SPEED, "4K" },
    { "speed = 1000", VMR_POLICY_KEY_SPEED, "1000" },
    { "speed = 0", VMR_POLICY_KEY_SPEED, "0" },
    { "speed=64M", VMR_POLICY_KEY_SPEED, "64M" },
    { "  speed   =   64M  ", VMR_POLICY_KEY_SPEED, "64M" },
    { "throttle-speed = 16M", VMR_POLICY_KEY_THROTTLE_SPEED, "16M" },
    { "throttle-speed = 0", VMR_POLICY_KEY_THROTTLE_SPEED, "0" },
    { "iops-throttle = 1800", VMR_POLICY_KEY_IOPS_THROTTLE, "1800" },
    { "iops-throttle = 0", VMR_POLICY_KEY_IOPS_THROTTLE, "0" },
    { "iops-delay = 3000", VMR_POLICY_KEY_IOPS_DELAY, "3000" },
    { "iops-delay = 4294967295", VMR_POLICY_KEY_IOPS_DELAY, "4294967295" },
    { "resume-below = 70", VMR_POLICY_KEY_RESUME_BELOW, "70%" },
    { "resume-below = 70%", VMR_POLICY_KEY_RESUME_BELOW, "70%" },
    { "resume-below = 1", VMR_POLICY_KEY_RESUME_BELOW, "1%" },
    { "resume-below = 99%", VMR_POLICY_KEY_RESUME_BELOW, "99%" },
    { "hold = 45s", VMR_POLICY_KEY_HOLD, "45s" },
    { "hold = 2m", VMR_POLICY_KEY_HOLD, "2m" },
    { "hold = 1h", VMR_POLICY_KEY_HOLD, "1h" },
    { "hold = 90s", VMR_POLICY_KEY_HOLD, "90s" },
    { "hold = 120s", VMR_POLICY_KEY_HOLD, "2m" },
    { "hold = 1500ms", VMR_POLICY_KEY_HOLD, "1500ms" },
    { "hold = 1500us", VMR_POLICY_KEY_HOLD, "1500us" },
    { "hold = 0", VMR_POLICY_KEY_HOLD, "0" },
    { "max-delay = 4h", VMR_POLICY_KEY_MAX_DELAY, "4h" },
    { "max-delay = 90m", VMR_POLICY_KEY_MAX_DELAY, "90m" },
    { "max-delay = 0", VMR_POLICY_KEY_MAX_DELAY, "0" },
    { "on-max-delay = proceed", VMR_POLICY_KEY_ON_MAX_DELAY, "proceed" },
    { "on-max-delay = fail", VMR_POLICY_KEY_ON_MAX_DELAY, "fail" },
    { "window = 01:00-05:00", VMR_POLICY_KEY_WINDOW, "01:00-05:00" },
    { "window = 9:30-17:00", VMR_POLICY_KEY_WINDOW, "09:30-17:00" },
    { "window = 22:00-06:00", VMR_POLICY_KEY_WINDOW, "22:00-06:00" },
    { "window = 22:00-24:00", VMR_POLICY_KEY_WINDOW, "22:00-24:00" },
    { "window = 00:00-24:00", VMR_POLICY_KEY_WINDOW, "00:00-24:00" },
    { "window = 24:00-06:00", VMR_POLICY_KEY_WINDOW, "00:00-06:00" },
    { "window = 22:00-06:00, 12:00-13:00", VMR_POLICY_KEY_WINDOW, "22:00-06:00, 12:00-13:00" },
    { "window = 22:00-06:00,12:00-13:00", VMR_POLICY_KEY_WINDOW, "22:00-06:00, 12:00-13:00" },
    { "window = 01:00-02:00 03:00-04:00", VMR_POLICY_KEY_WINDOW, "01:00-02:00, 03:00-04:00" },
    { "max-parallel = 2", VMR_POLICY_KEY_MAX_PARALLEL, "2" },
    { "max-parallel = 0", VMR_POLICY_KEY_MAX_PARALLEL, "0" },
    { "max-parallel = 65535", VMR_POLICY_KEY_MAX_PARALLEL, "65535" },
    { "max-parallel-per-iothread = 3", VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD, "3" },
    { "max-parallel-per-iothread = 0", VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD, "0" },
    { "max-parallel-per-domain = 1", VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN, "1" },
    { "max-parallel-per-destination = 8", VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION, "8" },
    { "reconnect-delay = 30s", VMR_POLICY_KEY_RECONNECT_DELAY, "30s" },
    { "min-progress = off", VMR_POLICY_KEY_MIN_PROGRESS, "off" },
    { "min-progress = 50", VMR_POLICY_KEY_MIN_PROGRESS, "50%" },
    { "min-progress = 400%", VMR_POLICY_KEY_MIN_PROGRESS, "400%" },
    { "latency-floor = 100us", VMR_POLICY_KEY_LATENCY_FLOOR, "100us" },
    { "latency-floor = 0", VMR_POLICY_KEY_LATENCY_FLOOR, "0" },
    { "latency-floor = 2ms", VMR_POLICY_KEY_LATENCY_FLOOR, "2ms" },
    { "max-harm = 50%", VMR_POLICY_KEY_MAX_HARM, "50%" },
    { "start-speed = 16M", VMR_POLICY_KEY_START_SPEED, "16M" },
    { "start-speed = 1G", VMR_POLICY_KEY_START_SPEED, "1G" },
    { "max-harm = 300", VMR_POLICY_KEY_MAX_HARM, "300%" },
    { "granularity = 8K", VMR_POLICY_KEY_GRANULARITY, "8K" },
    { "granularity = 512", VMR_POLICY_KEY_GRANULARITY, "512" },
    { "granularity = 64M", VMR_POLICY_KEY_GRANULARITY, "64M" },
    { "granularity = auto", VMR_POLICY_KEY_GRANULARITY, "auto" },
    { "buf-size = 1M", VMR_POLICY_KEY_BUF_SIZE, "1M" },
    { "buf-size = 64K", VMR_POLICY_KEY_BUF_SIZE, "64K" },
    { "buf-size = 1G", VMR_POLICY_KEY_BUF_SIZE, "1G" },
    { "buf-size = auto", VMR_POLICY_KEY_BUF_SIZE, "auto" },
    { "reconnect-delay = 2m", VMR_POLICY_KEY_RECONNECT_DELAY, "2m" },
    { "reconnect-delay = 0", VMR_POLICY_KEY_RECONNECT_DELAY, "0" },
    { "tls-creds = /etc/pki/qemu", VMR_POLICY_KEY_TLS_CREDS, "/etc/pki/qemu" },
    { "tls-creds = /etc/pki//vmr/../qemu/", VMR_POLICY_KEY_TLS_CREDS, "/etc/pki/qemu" },
    { "tls-creds = none", VMR_POLICY_KEY_TLS_CREDS, "none" },
    { "allowed-destinations = any", VMR_POLICY_KEY_ALLOWED_DESTINATIONS, "any" },
    { "allowed-destinations = /srv/vm/**", VMR_POLICY_KEY_ALLOWED_DESTINATIONS, "/srv/vm/**" },
    { "allowed-destinations = /srv/vm/**,/dev/vg0/*, nbd://store/*",
      VMR_POLICY_KEY_ALLOWED_DESTINATIONS, "/srv/vm/**, /dev/vg0/*, nbd://store:10809/*" },
    { "allowed-destinations = nbd+unix:///*?socket=/run/nbd/*.sock",
      VMR_POLICY_KEY_ALLOWED_DESTINATIONS, "nbd+unix:///*?socket=/run/nbd/*.sock" },
    { "destination-symlinks = allow", VMR_POLICY_KEY_DESTINATION_SYMLINKS, "allow" },
    { "destination-symlinks = refuse", VMR_POLICY_KEY_DESTINATION_SYMLINKS, "refuse" },
};

static void
test_policy_values (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (value_cases); i++) {
        const ValueCase *c = &value_cases[i];
        g_autofree gchar *text = g_strdup_printf ("[defaults]\n%s\n", c->line);
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrPolicy) policy = load (text, &error);
        g_autoptr (VmrPolicyRule) rule = NULL;
        g_autofree gchar *value = NULL;

        g_test_message ("%s", c->line);
        g_assert_no_error (error);
        g_assert_nonnull (policy);
        g_assert_cmpstr (vmr_policy_get_source (policy), ==, NAME);
        rule = vmr_policy_lookup (policy, "web01", "vda");
        value = vmr_policy_rule_format_value (rule, c->key);
        g_assert_cmpstr (value, ==, c->expected);
        g_assert_cmpstr (rule->origin[c->key], ==, "defaults");
    }
}

/* the raw fields behind a few of the formatted values */
static void
test_policy_fields (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrPolicy) policy = load ("# a comment\n"
                                         "\n"
                                         "[defaults]\n"
                                         "sample-interval = 250ms\n"
                                         "speed = 1.5G\n"
                                         "iops-throttle = 1800\n"
                                         "throttle-speed = 512K\n"
                                         "iops-delay = 3000\n"
                                         "resume-below = 75%\n"
                                         "hold = 2m\n"
                                         "window = 23:00-02:00, 12:00-13:30\n"
                                         "max-delay = 4h\n"
                                         "on-max-delay = fail\n"
                                         "max-parallel = 6\n"
                                         "max-parallel-per-iothread = 2\n"
                                         "max-parallel-per-domain = 3\n"
                                         "max-parallel-per-destination = 0\n"
                                         "keep-finished = 2h\n"
                                         "keep-finished-count = 50\n"
                                         "control = adaptive\n"
                                         "guest-impact = 10%\n"
                                         "min-speed = 16M\n"
                                         "max-speed = 1G\n"
                                         "start-speed = 32M\n"
                                         "min-progress = 50%\n"
                                         "latency-floor = 250us\n"
                                         "max-harm = 150%\n"
                                         "granularity = 16K\n"
                                         "buf-size = 2M\n"
                                         "latency-throttle = 15ms\n"
                                         "latency-delay = 40ms\n"
                                         "converge-after = 90s\n"
                                         "converge-by = write-blocking\n"
                                         "deadline = 2h\n"
                                         "on-deadline = fail\n"
                                         "reconnect-delay = 45s\n"
                                         "tls-creds = /etc/vmr-tls\n"
                                         "verify = yes\n"
                                         "space-check = warn\n"
                                         "space-margin = 64M\n"
                                         "allowed-destinations = /srv/vm/**, nbd://s/*\n"
                                         "destination-symlinks = refuse\n",
                                         &error);
    g_autoptr (VmrPolicyRule) rule = NULL;
    const VmrWindow *w;

    g_assert_no_error (error);
    rule = vmr_policy_lookup (policy, NULL, NULL);
    g_assert_cmpint (rule->sample_interval_us, ==, 250 * 1000);
    g_assert_cmpuint (rule->speed, ==, G_GUINT64_CONSTANT (1536) * 1024 * 1024);
    g_assert_cmpuint (rule->iops_throttle, ==, 1800);
    g_assert_cmpuint (rule->throttle_speed, ==, 512 * 1024);
    g_assert_cmpuint (rule->iops_delay, ==, 3000);
    g_assert_cmpuint (rule->resume_below, ==, 75);
    g_assert_cmpint (rule->hold_us, ==, 120 * G_USEC_PER_SEC);
    g_assert_cmpint (rule->max_delay_us, ==, G_GINT64_CONSTANT (4) * 3600 * G_USEC_PER_SEC);
    g_assert_cmpint (rule->on_max_delay, ==, VMR_ON_MAX_DELAY_FAIL);
    g_assert_true (rule->verify);
    g_assert_cmpint (rule->space_check, ==, VMR_SPACE_CHECK_WARN);
    g_assert_cmpuint (rule->space_margin, ==, 64 * 1024 * 1024);
    g_assert_cmpuint (g_strv_length (rule->allowed_destinations), ==, 2);
    g_assert_cmpstr (rule->allowed_destinations[0], ==, "/srv/vm/**");
    g_assert_cmpstr (rule->allowed_destinations[1], ==, "nbd://s:10809/*");
    g_assert_true (rule->refuse_destination_symlinks);
    g_assert_cmpuint (rule->limits[VMR_LIMIT_HOST], ==, 6);
    g_assert_cmpuint (rule->limits[VMR_LIMIT_IOTHREAD], ==, 2);
    g_assert_cmpuint (rule->limits[VMR_LIMIT_DOMAIN], ==, 3);
    g_assert_cmpuint (rule->limits[VMR_LIMIT_DESTINATION], ==, 0);
    g_assert_cmpint (rule->keep_finished_us, ==, G_GINT64_CONSTANT (2) * 3600 * G_USEC_PER_SEC);
    g_assert_cmpuint (rule->keep_finished, ==, 50);
    g_assert_cmpint (rule->control, ==, VMR_CONTROL_ADAPTIVE);
    g_assert_cmpuint (rule->guest_impact, ==, 10);
    g_assert_cmpuint (rule->min_speed, ==, 16 * 1024 * 1024);
    g_assert_cmpuint (rule->max_speed, ==, G_GUINT64_CONSTANT (1024) * 1024 * 1024);
    g_assert_cmpuint (rule->start_speed, ==, 32 * 1024 * 1024);
    g_assert_cmpuint (rule->min_progress, ==, 50);
    g_assert_cmpint (rule->latency_floor_us, ==, 250);
    g_assert_cmpuint (rule->max_harm, ==, 150);
    g_assert_cmpuint (rule->granularity, ==, 16 * 1024);
    g_assert_cmpuint (rule->buf_size, ==, 2 * 1024 * 1024);
    g_assert_cmpint (rule->latency_throttle_us, ==, 15 * 1000);
    g_assert_cmpint (rule->latency_delay_us, ==, 40 * 1000);
    g_assert_cmpint (rule->converge_after_us, ==, 90 * G_USEC_PER_SEC);
    g_assert_cmpint (rule->converge_by, ==, VMR_CONVERGE_BY_WRITE_BLOCKING);
    g_assert_cmpint (rule->deadline_us, ==, G_GINT64_CONSTANT (2) * 3600 * G_USEC_PER_SEC);
    g_assert_cmpint (rule->on_deadline, ==, VMR_ON_DEADLINE_FAIL);
    g_assert_cmpuint (rule->reconnect_delay_s, ==, 45);
    g_assert_cmpstr (rule->tls_creds, ==, "/etc/vmr-tls");
    g_assert_cmpuint (rule->windows->len, ==, 2);
    w = &g_array_index (rule->windows, VmrWindow, 0);
    g_assert_cmpint (w->start, ==, 23 * 3600);
    g_assert_cmpint (w->end, ==, 2 * 3600);
    w = &g_array_index (rule->windows, VmrWindow, 1);
    g_assert_cmpint (w->start, ==, 12 * 3600);
    g_assert_cmpint (w->end, ==, 13 * 3600 + 30 * 60);
    for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++)
        g_assert_cmpstr (rule->origin[k], ==, "defaults");
}

/* ---- the built-in values ---- */

static const gchar *const built_in_values[VMR_POLICY_KEY_LAST] = {
    [VMR_POLICY_KEY_SAMPLE_INTERVAL] = "1s",
    [VMR_POLICY_KEY_SPEED] = "0",
    [VMR_POLICY_KEY_IOPS_THROTTLE] = "0",
    [VMR_POLICY_KEY_THROTTLE_SPEED] = "32M",
    [VMR_POLICY_KEY_IOPS_DELAY] = "0",
    [VMR_POLICY_KEY_RESUME_BELOW] = "80%",
    [VMR_POLICY_KEY_HOLD] = "30s",
    [VMR_POLICY_KEY_WINDOW] = "any time",
    [VMR_POLICY_KEY_MAX_DELAY] = "0",
    [VMR_POLICY_KEY_ON_MAX_DELAY] = "proceed",
    [VMR_POLICY_KEY_MAX_PARALLEL] = "4",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD] = "1",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN] = "0",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION] = "0",
    [VMR_POLICY_KEY_KEEP_FINISHED] = "168h",
    [VMR_POLICY_KEY_KEEP_FINISHED_COUNT] = "1000",
    [VMR_POLICY_KEY_CONTROL] = "static",
    [VMR_POLICY_KEY_GUEST_IMPACT] = "20%",
    [VMR_POLICY_KEY_MIN_SPEED] = "8M",
    [VMR_POLICY_KEY_MAX_SPEED] = "0",
    [VMR_POLICY_KEY_START_SPEED] = "64M",
    [VMR_POLICY_KEY_MIN_PROGRESS] = "25%",
    [VMR_POLICY_KEY_LATENCY_FLOOR] = "100us",
    [VMR_POLICY_KEY_MAX_HARM] = "100%",
    [VMR_POLICY_KEY_GRANULARITY] = "auto",
    [VMR_POLICY_KEY_BUF_SIZE] = "auto",
    [VMR_POLICY_KEY_LATENCY_THROTTLE] = "0",
    [VMR_POLICY_KEY_LATENCY_DELAY] = "0",
    [VMR_POLICY_KEY_CONVERGE_AFTER] = "0",
    [VMR_POLICY_KEY_CONVERGE_BY] = "speed",
    [VMR_POLICY_KEY_DEADLINE] = "0",
    [VMR_POLICY_KEY_ON_DEADLINE] = "continue",
    [VMR_POLICY_KEY_RECONNECT_DELAY] = "10s",
    [VMR_POLICY_KEY_TLS_CREDS] = "none",
    [VMR_POLICY_KEY_VERIFY] = "no",
    [VMR_POLICY_KEY_SPACE_CHECK] = "refuse",
    [VMR_POLICY_KEY_SPACE_MARGIN] = "256M",
    [VMR_POLICY_KEY_ALLOWED_DESTINATIONS] = "any",
    [VMR_POLICY_KEY_DESTINATION_SYMLINKS] = "allow",
};

static void
test_policy_built_in (void)
{
    g_autoptr (VmrPolicy) built_in = vmr_policy_new_default ();
    g_autoptr (GError) error = NULL;
    /* a file that sets nothing is the same */
    g_autoptr (VmrPolicy) empty = load ("# nothing\n[defaults]\n", &error);
    VmrPolicy *policies[] = { built_in, empty };

    g_assert_no_error (error);
    g_assert_cmpstr (vmr_policy_get_source (built_in), ==, "built-in");
    for (gsize p = 0; p < G_N_ELEMENTS (policies); p++) {
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (policies[p], "web01", "vda");

        for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++) {
            g_autofree gchar *value = vmr_policy_rule_format_value (rule, k);

            g_assert_cmpstr (value, ==, built_in_values[k]);
            g_assert_cmpstr (rule->origin[k], ==, "built-in");
        }
    }
    g_assert_cmpstr (vmr_policy_key_name (VMR_POLICY_KEY_IOPS_DELAY), ==, "iops-delay");
    g_assert_cmpstr (vmr_policy_key_name (VMR_POLICY_KEY_LAST), ==, "unknown");
}

/* ---- precedence ---- */

static const gchar precedence_text[] = "[defaults]\n"              /* 1 */
                                       "speed = 100M\n"            /* 2 */
                                       "hold = 30s\n"              /* 3 */
                                       "iops-throttle = 1800\n"    /* 4 */
                                       "\n"                        /* 5 */
                                       "[domain web*]\n"           /* 6 */
                                       "speed = 200M\n"            /* 7 */
                                       "iops-delay = 4000\n"       /* 8 */
                                       "\n"                        /* 9 */
                                       "[domain web01 disk vda]\n" /* 10 */
                                       "speed = 50M\n"             /* 11 */
                                       "\n"                        /* 12 */
                                       "[domain w*]\n"             /* 13 */
                                       "hold = 1m\n"               /* 14 */
                                       "\n"                        /* 15 */
                                       "[domain *01]\n"            /* 16 */
                                       "speed = 300M\n"            /* 17 */
                                       "\n"                        /* 18 */
                                       "[domain * disk vd?]\n"     /* 19 */
                                       "max-delay = 2h\n"          /* 20 */
                                       "[domain web0? disk vd?]\n" /* 21 */
                                       "max-delay = 3h\n"          /* 22 */
                                       "[domain * disk sda]\n"     /* 23 */
                                       "on-max-delay = fail\n"     /* 24 */
                                       "[defaults]";               /* 25: repeated */

typedef struct {
    const gchar *domain; /* nullable */
    const gchar *disk;   /* nullable */
    VmrPolicyKey key;
    const gchar *value;
    const gchar *from;
} LookupCase;

static const LookupCase lookup_cases[] = {
    /* domain and disk beat domain, which beats defaults */
    { "web01", "vda", VMR_POLICY_KEY_SPEED, "50M", "domain web01 disk vda" },
    { "web02", "vda", VMR_POLICY_KEY_SPEED, "200M", "domain web*" },
    { "db02", "vda", VMR_POLICY_KEY_SPEED, "100M", "defaults" },
    /* among equals the later one: [domain *01] comes after [domain web*] */
    { "web01", "vdb", VMR_POLICY_KEY_SPEED, "300M", "domain *01" },
    { "db01", "vda", VMR_POLICY_KEY_SPEED, "300M", "domain *01" },
    /* key by key: each from the most specific section that sets it */
    { "web01", "vda", VMR_POLICY_KEY_HOLD, "1m", "domain w*" },
    { "web01", "vda", VMR_POLICY_KEY_IOPS_DELAY, "4000", "domain web*" },
    { "web01", "vda", VMR_POLICY_KEY_IOPS_THROTTLE, "1800", "defaults" },
    { "web01", "vda", VMR_POLICY_KEY_RESUME_BELOW, "80%", "built-in" },
    { "db02", "vda", VMR_POLICY_KEY_HOLD, "30s", "defaults" },
    /* disk globs, and later among equals again */
    { "web01", "vda", VMR_POLICY_KEY_MAX_DELAY, "3h", "domain web0? disk vd?" },
    { "web10", "vda", VMR_POLICY_KEY_MAX_DELAY, "2h", "domain * disk vd?" },
    { "web01", "vdaa", VMR_POLICY_KEY_MAX_DELAY, "0", "built-in" },
    { "db02", "sda", VMR_POLICY_KEY_ON_MAX_DELAY, "fail", "domain * disk sda" },
    { "db02", "vda", VMR_POLICY_KEY_ON_MAX_DELAY, "proceed", "built-in" },
    /* no disk: disk sections do not apply */
    { "web01", NULL, VMR_POLICY_KEY_SPEED, "300M", "domain *01" },
    { "web02", NULL, VMR_POLICY_KEY_SPEED, "200M", "domain web*" },
    { "web01", NULL, VMR_POLICY_KEY_MAX_DELAY, "0", "built-in" },
    /* no domain: only [defaults] */
    { NULL, NULL, VMR_POLICY_KEY_SPEED, "100M", "defaults" },
    { NULL, NULL, VMR_POLICY_KEY_IOPS_DELAY, "0", "built-in" },
    { NULL, "vda", VMR_POLICY_KEY_MAX_DELAY, "0", "built-in" },
};

/* the per-group limits follow the job's own rule; max-parallel only [defaults] */
static const LookupCase limit_cases[] = {
    { "db01", "vda", VMR_POLICY_KEY_MAX_PARALLEL, "3", "defaults" },
    { "db01", "vda", VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD, "1", "domain db*" },
    { "web01", "vda", VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD, "2", "defaults" },
    { "db01", "vda", VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN, "2", "domain db*" },
    { "web01", "vda", VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN, "0", "built-in" },
    { "db01", "vdb", VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION, "1", "domain db* disk vdb" },
    { "db01", "vda", VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION, "0", "built-in" },
    { NULL, NULL, VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD, "2", "defaults" },
};

static void
test_policy_limits (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrPolicy) policy = load ("[defaults]\n"
                                         "max-parallel = 3\n"
                                         "max-parallel-per-iothread = 2\n"
                                         "[domain db*]\n"
                                         "max-parallel-per-iothread = 1\n"
                                         "max-parallel-per-domain = 2\n"
                                         "[domain db* disk vdb]\n"
                                         "max-parallel-per-destination = 1\n",
                                         &error);

    g_assert_no_error (error);
    for (gsize i = 0; i < G_N_ELEMENTS (limit_cases); i++) {
        const LookupCase *c = &limit_cases[i];
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (policy, c->domain, c->disk);
        g_autofree gchar *value = vmr_policy_rule_format_value (rule, c->key);

        g_test_message ("%s %s %s", c->domain, c->disk, vmr_policy_key_name (c->key));
        g_assert_cmpstr (value, ==, c->value);
        g_assert_cmpstr (rule->origin[c->key], ==, c->from);
    }
    g_assert_cmpstr (vmr_policy_key_name (VMR_POLICY_KEY_OF_LIMIT (VMR_LIMIT_DESTINATION)), ==,
                     "max-parallel-per-destination");
}

static void
test_policy_precedence (void)
{
    g_autoptr (GError) error = NULL;
    /* the file ends with a repeated [defaults]: drop that line for the valid policy */
    g_autofree gchar *text = g_strndup (precedence_text, strlen (precedence_text) - 10);
    g_autoptr (VmrPolicy) policy = load (text, &error);

    g_assert_no_error (error);
    for (gsize i = 0; i < G_N_ELEMENTS (lookup_cases); i++) {
        const LookupCase *c = &lookup_cases[i];
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (policy, c->domain, c->disk);
        g_autofree gchar *value = vmr_policy_rule_format_value (rule, c->key);

        g_test_message ("%s %s %s", c->domain, c->disk, vmr_policy_key_name (c->key));
        g_assert_cmpstr (value, ==, c->value);
        g_assert_cmpstr (rule->origin[c->key], ==, c->from);
    }

    /* the same [defaults] twice would be merged by GKeyFile: refused */
    g_clear_pointer (&policy, vmr_policy_unref);
    policy = load (precedence_text, &error);
    g_assert_null (policy);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_cmpstr (error->message, ==,
                     NAME ":25: [defaults] section repeated (first at line 1): merge the two");
}

/* ---- windows ---- */

typedef struct {
    const gchar *window; /* NULL: no window key */
    gint hour, minute, second;
    gboolean inside;
} WindowCase;

static const WindowCase window_cases[] = {
    { NULL, 12, 0, 0, TRUE },
    { "01:00-05:00", 0, 59, 59, FALSE },
    { "01:00-05:00", 1, 0, 0, TRUE },
    { "01:00-05:00", 4, 59, 59, TRUE },
    { "01:00-05:00", 5, 0, 0, FALSE }, /* the end is not in the window */
    /* crossing midnight */
    { "23:00-02:00", 1, 0, 0, TRUE },
    { "23:00-02:00", 3, 0, 0, FALSE },
    { "23:00-02:00", 23, 0, 0, TRUE },
    { "23:00-02:00", 22, 59, 59, FALSE },
    { "23:00-02:00", 0, 0, 0, TRUE },
    { "23:00-02:00", 2, 0, 0, FALSE },
    { "23:00-02:00", 12, 0, 0, FALSE },
    /* 24:00 */
    { "22:00-24:00", 23, 59, 59, TRUE },
    { "22:00-24:00", 0, 0, 0, FALSE },
    { "22:00-24:00", 21, 59, 59, FALSE },
    { "00:00-24:00", 0, 0, 0, TRUE },
    { "00:00-24:00", 23, 59, 59, TRUE },
    { "00:00-24:00", 12, 0, 0, TRUE },
    /* several */
    { "01:00-02:00, 12:00-13:00", 12, 30, 0, TRUE },
    { "01:00-02:00, 12:00-13:00", 1, 30, 0, TRUE },
    { "01:00-02:00, 12:00-13:00", 3, 0, 0, FALSE },
    { "22:00-02:00, 12:00-13:00", 23, 0, 0, TRUE },
};

static void
test_policy_windows (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (window_cases); i++) {
        const WindowCase *c = &window_cases[i];
        g_autofree gchar *text = g_strdup_printf (
            "[defaults]\n%s%s\n", c->window ? "window = " : "", c->window ? c->window : "");
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrPolicy) policy = load (text, &error);
        g_autoptr (VmrPolicyRule) rule = NULL;
        gint seconds = c->hour * 3600 + c->minute * 60 + c->second;

        g_test_message ("%s at %02d:%02d:%02d", c->window, c->hour, c->minute, c->second);
        g_assert_no_error (error);
        rule = vmr_policy_lookup (policy, "web01", "vda");
        g_assert_cmpint (vmr_policy_rule_in_window (rule, seconds), ==, c->inside);
    }
}

/* ---- formatting ---- */

/* every value formats to text that reads back to the same value */
static void
test_policy_round_trip (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (value_cases); i++) {
        const ValueCase *c = &value_cases[i];
        g_autofree gchar *text = g_strdup_printf ("[defaults]\n%s\n", c->line);
        g_autoptr (GError) error = NULL;
        g_autoptr (VmrPolicy) policy = load (text, &error);
        g_autoptr (VmrPolicyRule) rule = vmr_policy_lookup (policy, NULL, NULL);
        g_autoptr (GString) again = g_string_new ("[defaults]\n");
        g_autoptr (VmrPolicy) reread = NULL;
        g_autoptr (VmrPolicyRule) reread_rule = NULL;

        g_assert_no_error (error);
        for (guint k = 0; k < VMR_POLICY_KEY_LAST; k++) {
            g_autofree gchar *value = vmr_policy_rule_format_value (rule, k);

            if (k == VMR_POLICY_KEY_WINDOW && rule->windows->len == 0)
                continue;
            g_string_append_printf (again, "%s = %s\n", vmr_policy_key_name (k), value);
        }
        g_test_message ("%s", again->str);
        reread = load (again->str, &error);
        g_assert_no_error (error);
        reread_rule = vmr_policy_lookup (reread, NULL, NULL);
        g_assert_cmpint (reread_rule->sample_interval_us, ==, rule->sample_interval_us);
        g_assert_cmpuint (reread_rule->speed, ==, rule->speed);
        g_assert_cmpuint (reread_rule->iops_throttle, ==, rule->iops_throttle);
        g_assert_cmpuint (reread_rule->throttle_speed, ==, rule->throttle_speed);
        g_assert_cmpuint (reread_rule->iops_delay, ==, rule->iops_delay);
        g_assert_cmpuint (reread_rule->resume_below, ==, rule->resume_below);
        g_assert_cmpint (reread_rule->hold_us, ==, rule->hold_us);
        g_assert_cmpint (reread_rule->max_delay_us, ==, rule->max_delay_us);
        g_assert_cmpint (reread_rule->on_max_delay, ==, rule->on_max_delay);
        for (guint l = 0; l < VMR_LIMIT_LAST; l++)
            g_assert_cmpuint (reread_rule->limits[l], ==, rule->limits[l]);
        g_assert_cmpuint (reread_rule->min_progress, ==, rule->min_progress);
        g_assert_cmpuint (reread_rule->windows->len, ==, rule->windows->len);
        for (guint w = 0; w < rule->windows->len; w++) {
            const VmrWindow *a = &g_array_index (rule->windows, VmrWindow, w);
            const VmrWindow *b = &g_array_index (reread_rule->windows, VmrWindow, w);

            g_assert_cmpint (a->start, ==, b->start);
            g_assert_cmpint (a->end, ==, b->end);
        }
    }
}

/* ---- files ---- */

static void
test_policy_files (void)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *dir = g_dir_make_tmp ("vmr-policy-XXXXXX", &error);
    g_autofree gchar *path = NULL;
    g_autofree gchar *missing = NULL;
    g_autofree gchar *example = NULL;
    g_autoptr (VmrPolicy) policy = NULL;

    g_assert_no_error (error);
    path = g_build_filename (dir, "policy.conf", NULL);
    missing = g_build_filename (dir, "absent.conf", NULL);

    /* errors name the file as given */
    g_assert_true (g_file_set_contents (path, "[defaults]\nhold = soon\n", -1, &error));
    policy = vmr_policy_load (path, &error);
    g_assert_null (policy);
    g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    g_assert_true (g_str_has_prefix (error->message, path));
    g_assert_nonnull (strstr (error->message, ":2: [defaults] hold: "));
    g_clear_error (&error);

    g_assert_true (g_file_set_contents (path, "[defaults]\nhold = 1m\n", -1, &error));
    policy = vmr_policy_load (path, &error);
    g_assert_no_error (error);
    g_assert_cmpstr (vmr_policy_get_source (policy), ==, path);
    g_clear_pointer (&policy, vmr_policy_unref);

    /* a missing file is one line that names it */
    policy = vmr_policy_load (missing, &error);
    g_assert_null (policy);
    g_assert_nonnull (error);
    g_assert_nonnull (strstr (error->message, missing));
    g_assert_null (strchr (error->message, '\n'));
    g_clear_error (&error);

    /* the example shipped in data/ is valid */
    example = g_test_build_filename (G_TEST_DIST, "..", "..", "data", "policy.conf", NULL);
    policy = vmr_policy_load (example, &error);
    g_assert_no_error (error);
    g_assert_nonnull (policy);

    g_assert_cmpint (g_unlink (path), ==, 0);
    g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* the [cluster] section read, its built-in values, and the storage of a location */
static void
test_policy_cluster (void)
{
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrPolicy) plain = vmr_policy_load_from_data ("a.conf", "[defaults]\n", &error);
    g_autoptr (VmrPolicy) policy = NULL;
    const VmrClusterConfig *config;
    g_autofree gchar *in_array = NULL;
    g_autofree gchar *deeper = NULL;
    g_autofree gchar *elsewhere = NULL;
    g_autofree gchar *lookalike = NULL;

    g_assert_no_error (error);
    g_assert_null (vmr_policy_get_cluster (plain));
    policy = vmr_policy_load_from_data ("b.conf",
                                        "[cluster]\n"
                                        "name = prod-a\n"
                                        "etcd = https://127.0.0.1:2379, https://etcd2:2379/\n"
                                        "tls-creds = /etc/etcd//certs/\n"
                                        "host = node-1\n"
                                        "max-parallel = 5\n"
                                        "max-parallel-per-source = 3\n"
                                        "max-parallel-per-destination = 2\n"
                                        "lease-ttl = 1m\n"
                                        "storage = /srv/array-a, /srv/array-a/fast\n"
                                        "evacuate-to-nbd = allow\n",
                                        &error);
    g_assert_no_error (error);
    config = vmr_policy_get_cluster (policy);
    g_assert_nonnull (config);
    g_assert_cmpstr (config->name, ==, "prod-a");
    g_assert_cmpuint (g_strv_length (config->endpoints), ==, 2);
    g_assert_cmpstr (config->endpoints[0], ==, "https://127.0.0.1:2379");
    g_assert_cmpstr (config->endpoints[1], ==, "https://etcd2:2379");
    g_assert_cmpstr (config->tls_creds, ==, "/etc/etcd/certs");
    g_assert_cmpstr (config->host, ==, "node-1");
    g_assert_cmpuint (config->max_parallel, ==, 5);
    g_assert_cmpuint (config->max_per_source, ==, 3);
    g_assert_cmpuint (config->max_per_destination, ==, 2);
    g_assert_cmpint (config->lease_ttl_us, ==, 60 * G_USEC_PER_SEC);
    g_assert_true (config->evacuate_to_nbd);
    in_array = vmr_cluster_config_storage_key (config, "/srv/array-a/vm1");
    deeper = vmr_cluster_config_storage_key (config, "/srv/array-a/fast/vm1");
    elsewhere = vmr_cluster_config_storage_key (config, "/var/lib/images");
    lookalike = vmr_cluster_config_storage_key (config, "/srv/array-ab");
    g_assert_cmpstr (in_array, ==, "/srv/array-a");
    g_assert_cmpstr (deeper, ==, "/srv/array-a/fast");
    g_assert_cmpstr (elsewhere, ==, "/var/lib/images");
    g_assert_cmpstr (lookalike, ==, "/srv/array-ab");
    {
        g_autoptr (VmrClusterConfig) copy = vmr_cluster_config_copy (config);
        g_autoptr (VmrPolicy) defaults = vmr_policy_load_from_data (
            "c.conf", "[cluster]\nname = x\netcd = http://127.0.0.1:2379\n", &error);
        const VmrClusterConfig *built_in = NULL;

        g_assert_no_error (error);
        built_in = vmr_policy_get_cluster (defaults);
        g_assert_true (vmr_cluster_config_equal (copy, config));
        g_assert_false (vmr_cluster_config_equal (copy, built_in));
        g_assert_cmpuint (built_in->max_parallel, ==, 0);
        g_assert_cmpint (built_in->lease_ttl_us, ==, 10 * G_USEC_PER_SEC);
        g_assert_cmpstr (built_in->host, ==, g_get_host_name ());
        g_assert_null (built_in->tls_creds);
        g_assert_null (built_in->storage);
        g_assert_false (built_in->evacuate_to_nbd);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/policy/values", test_policy_values);
    g_test_add_func ("/policy/fields", test_policy_fields);
    g_test_add_func ("/policy/built-in", test_policy_built_in);
    g_test_add_func ("/policy/precedence", test_policy_precedence);
    g_test_add_func ("/policy/limits", test_policy_limits);
    g_test_add_func ("/policy/windows", test_policy_windows);
    g_test_add_func ("/policy/round-trip", test_policy_round_trip);
    g_test_add_func ("/policy/files", test_policy_files);
    g_test_add_func ("/policy/cluster", test_policy_cluster);
    return g_test_run ();
}
