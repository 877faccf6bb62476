#define G_LOG_DOMAIN "vmr-policy"

/*
 * The policy's keys one by one: their names, built-in values, how a value
 * is read from the file and written back, and which keys only [defaults]
 * may set. policy.c reads the file and works out a disk's rule with these.
 */

#include "policy.h"

#include <string.h>

#include "destination-pattern.h"
#include "policy-private.h"
#include "units.h"
#include "vmr-error.h"
#include "window.h"

static const gchar *const key_names[VMR_POLICY_KEY_LAST] = {
    [VMR_POLICY_KEY_SAMPLE_INTERVAL] = "sample-interval",
    [VMR_POLICY_KEY_SPEED] = "speed",
    [VMR_POLICY_KEY_IOPS_THROTTLE] = "iops-throttle",
    [VMR_POLICY_KEY_THROTTLE_SPEED] = "throttle-speed",
    [VMR_POLICY_KEY_IOPS_DELAY] = "iops-delay",
    [VMR_POLICY_KEY_RESUME_BELOW] = "resume-below",
    [VMR_POLICY_KEY_HOLD] = "hold",
    [VMR_POLICY_KEY_WINDOW] = "window",
    [VMR_POLICY_KEY_MAX_DELAY] = "max-delay",
    [VMR_POLICY_KEY_ON_MAX_DELAY] = "on-max-delay",
    [VMR_POLICY_KEY_MAX_PARALLEL] = "max-parallel",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD] = "max-parallel-per-iothread",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN] = "max-parallel-per-domain",
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION] = "max-parallel-per-destination",
    [VMR_POLICY_KEY_KEEP_FINISHED] = "keep-finished",
    [VMR_POLICY_KEY_KEEP_FINISHED_COUNT] = "keep-finished-count",
    [VMR_POLICY_KEY_CONTROL] = "control",
    [VMR_POLICY_KEY_GUEST_IMPACT] = "guest-impact",
    [VMR_POLICY_KEY_MIN_SPEED] = "min-speed",
    [VMR_POLICY_KEY_MAX_SPEED] = "max-speed",
    [VMR_POLICY_KEY_MIN_PROGRESS] = "min-progress",
    [VMR_POLICY_KEY_LATENCY_FLOOR] = "latency-floor",
    [VMR_POLICY_KEY_MAX_HARM] = "max-harm",
    [VMR_POLICY_KEY_GRANULARITY] = "granularity",
    [VMR_POLICY_KEY_BUF_SIZE] = "buf-size",
    [VMR_POLICY_KEY_LATENCY_THROTTLE] = "latency-throttle",
    [VMR_POLICY_KEY_LATENCY_DELAY] = "latency-delay",
    [VMR_POLICY_KEY_CONVERGE_AFTER] = "converge-after",
    [VMR_POLICY_KEY_CONVERGE_BY] = "converge-by",
    [VMR_POLICY_KEY_DEADLINE] = "deadline",
    [VMR_POLICY_KEY_ON_DEADLINE] = "on-deadline",
    [VMR_POLICY_KEY_RECONNECT_DELAY] = "reconnect-delay",
    [VMR_POLICY_KEY_TLS_CREDS] = "tls-creds",
    [VMR_POLICY_KEY_VERIFY] = "verify",
    [VMR_POLICY_KEY_SPACE_CHECK] = "space-check",
    [VMR_POLICY_KEY_SPACE_MARGIN] = "space-margin",
    [VMR_POLICY_KEY_ALLOWED_DESTINATIONS] = "allowed-destinations",
    [VMR_POLICY_KEY_DESTINATION_SYMLINKS] = "destination-symlinks",
};

/* a whole percentage from @min to @max, the % sign optional */
static gboolean
parse_percent (const gchar *text, guint min, guint max, guint *out, GError **error)
{
    g_autofree gchar *digits = g_strdup (text);
    guint64 number;

    if (g_str_has_suffix (digits, "%"))
        digits[strlen (digits) - 1] = '\0';
    if (!g_ascii_string_to_unsigned (digits, 10, min, max, &number, NULL)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a percentage from %u to %u", text, min, max);
        return FALSE;
    }
    *out = (guint) number;
    return TRUE;
}

/* the words of the keys that take one of a few, in the order of their enums */
static const gchar *const control_words[] = { "static", "adaptive", NULL };
static const gchar *const converge_by_words[] = { "speed", "write-blocking", NULL };
static const gchar *const on_deadline_words[] = { "continue", "converge", "fail", NULL };
static const gchar *const yes_no_words[] = { "no", "yes", NULL };
static const gchar *const space_check_words[] = { "refuse", "warn", "off", NULL };
static const gchar *const symlinks_words[] = { "allow", "refuse", NULL };

/* @text as the index of one of @words, or FALSE with a message listing them */
static gboolean
parse_word (const gchar *text, const gchar *const *words, guint *out, GError **error)
{
    g_autofree gchar *list = NULL;

    for (guint i = 0; words[i] != NULL; i++) {
        if (g_strcmp0 (text, words[i]) == 0) {
            *out = i;
            return TRUE;
        }
    }
    list = g_strjoinv (", ", (gchar **) words);
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is not one of %s", text, list);
    return FALSE;
}

const gchar *
vmr_policy_key_name (VmrPolicyKey key)
{
    return key < VMR_POLICY_KEY_LAST ? key_names[key] : "unknown";
}

/* the keys about the whole host, read from [defaults] only */
gboolean
vmr_policy_key_is_host_wide (VmrPolicyKey key)
{
    return key == VMR_POLICY_KEY_MAX_PARALLEL || key == VMR_POLICY_KEY_KEEP_FINISHED
           || key == VMR_POLICY_KEY_KEEP_FINISHED_COUNT
           || key == VMR_POLICY_KEY_ALLOWED_DESTINATIONS
           || key == VMR_POLICY_KEY_DESTINATION_SYMLINKS;
}

void
vmr_policy_rule_set_built_in (VmrPolicyRule *rule)
{
    rule->sample_interval_us = G_USEC_PER_SEC;
    rule->speed = 0;
    rule->iops_throttle = 0;
    rule->throttle_speed = 32 * 1024 * 1024;
    rule->iops_delay = 0;
    rule->resume_below = 80;
    rule->hold_us = G_GINT64_CONSTANT (30) * G_USEC_PER_SEC;
    rule->windows = g_array_new (FALSE, FALSE, sizeof (VmrWindow));
    rule->max_delay_us = 0;
    rule->on_max_delay = VMR_ON_MAX_DELAY_PROCEED;
    /* docs/policy.md says why these */
    rule->limits[VMR_LIMIT_HOST] = 4;
    rule->limits[VMR_LIMIT_IOTHREAD] = 1;
    rule->limits[VMR_LIMIT_DOMAIN] = 0;
    rule->limits[VMR_LIMIT_DESTINATION] = 0;
    rule->keep_finished_us = G_GINT64_CONSTANT (7 * 24 * 3600) * G_USEC_PER_SEC;
    rule->keep_finished = 1000;
    rule->control = VMR_CONTROL_STATIC;
    rule->guest_impact = 20;
    rule->min_speed = 8 * 1024 * 1024;
    rule->max_speed = 0;
    rule->min_progress = 25;
    rule->latency_floor_us = 100;
    rule->max_harm = 100;
    rule->granularity = 0;
    rule->buf_size = 0;
    rule->latency_throttle_us = 0;
    rule->latency_delay_us = 0;
    rule->converge_after_us = 0;
    rule->converge_by = VMR_CONVERGE_BY_SPEED;
    rule->deadline_us = 0;
    rule->on_deadline = VMR_ON_DEADLINE_CONTINUE;
    rule->reconnect_delay_s = 10;
    rule->tls_creds = NULL;
    rule->verify = FALSE;
    rule->space_check = VMR_SPACE_CHECK_REFUSE;
    rule->space_margin = 256 * 1024 * 1024;
    rule->allowed_destinations = NULL;
    rule->refuse_destination_symlinks = FALSE;
}

/* copies the value of @key from @from to @to */
void
vmr_policy_rule_copy_value (VmrPolicyRule *to, const VmrPolicyRule *from, VmrPolicyKey key)
{
    switch (key) {
        case VMR_POLICY_KEY_SAMPLE_INTERVAL:
            to->sample_interval_us = from->sample_interval_us;
            break;
        case VMR_POLICY_KEY_SPEED:
            to->speed = from->speed;
            break;
        case VMR_POLICY_KEY_IOPS_THROTTLE:
            to->iops_throttle = from->iops_throttle;
            break;
        case VMR_POLICY_KEY_THROTTLE_SPEED:
            to->throttle_speed = from->throttle_speed;
            break;
        case VMR_POLICY_KEY_IOPS_DELAY:
            to->iops_delay = from->iops_delay;
            break;
        case VMR_POLICY_KEY_RESUME_BELOW:
            to->resume_below = from->resume_below;
            break;
        case VMR_POLICY_KEY_HOLD:
            to->hold_us = from->hold_us;
            break;
        case VMR_POLICY_KEY_WINDOW:
            g_array_set_size (to->windows, 0);
            g_array_append_vals (to->windows, from->windows->data, from->windows->len);
            break;
        case VMR_POLICY_KEY_MAX_DELAY:
            to->max_delay_us = from->max_delay_us;
            break;
        case VMR_POLICY_KEY_ON_MAX_DELAY:
            to->on_max_delay = from->on_max_delay;
            break;
        case VMR_POLICY_KEY_MAX_PARALLEL:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION:
            to->limits[key - VMR_POLICY_KEY_MAX_PARALLEL]
                = from->limits[key - VMR_POLICY_KEY_MAX_PARALLEL];
            break;
        case VMR_POLICY_KEY_KEEP_FINISHED:
            to->keep_finished_us = from->keep_finished_us;
            break;
        case VMR_POLICY_KEY_KEEP_FINISHED_COUNT:
            to->keep_finished = from->keep_finished;
            break;
        case VMR_POLICY_KEY_CONTROL:
            to->control = from->control;
            break;
        case VMR_POLICY_KEY_GUEST_IMPACT:
            to->guest_impact = from->guest_impact;
            break;
        case VMR_POLICY_KEY_MIN_SPEED:
            to->min_speed = from->min_speed;
            break;
        case VMR_POLICY_KEY_MAX_SPEED:
            to->max_speed = from->max_speed;
            break;
        case VMR_POLICY_KEY_MIN_PROGRESS:
            to->min_progress = from->min_progress;
            break;
        case VMR_POLICY_KEY_LATENCY_FLOOR:
            to->latency_floor_us = from->latency_floor_us;
            break;
        case VMR_POLICY_KEY_MAX_HARM:
            to->max_harm = from->max_harm;
            break;
        case VMR_POLICY_KEY_GRANULARITY:
            to->granularity = from->granularity;
            break;
        case VMR_POLICY_KEY_BUF_SIZE:
            to->buf_size = from->buf_size;
            break;
        case VMR_POLICY_KEY_LATENCY_THROTTLE:
            to->latency_throttle_us = from->latency_throttle_us;
            break;
        case VMR_POLICY_KEY_LATENCY_DELAY:
            to->latency_delay_us = from->latency_delay_us;
            break;
        case VMR_POLICY_KEY_CONVERGE_AFTER:
            to->converge_after_us = from->converge_after_us;
            break;
        case VMR_POLICY_KEY_CONVERGE_BY:
            to->converge_by = from->converge_by;
            break;
        case VMR_POLICY_KEY_DEADLINE:
            to->deadline_us = from->deadline_us;
            break;
        case VMR_POLICY_KEY_ON_DEADLINE:
            to->on_deadline = from->on_deadline;
            break;
        case VMR_POLICY_KEY_RECONNECT_DELAY:
            to->reconnect_delay_s = from->reconnect_delay_s;
            break;
        case VMR_POLICY_KEY_TLS_CREDS:
            g_free (to->tls_creds);
            to->tls_creds = g_strdup (from->tls_creds);
            break;
        case VMR_POLICY_KEY_VERIFY:
            to->verify = from->verify;
            break;
        case VMR_POLICY_KEY_SPACE_CHECK:
            to->space_check = from->space_check;
            break;
        case VMR_POLICY_KEY_SPACE_MARGIN:
            to->space_margin = from->space_margin;
            break;
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            g_strfreev (to->allowed_destinations);
            to->allowed_destinations = g_strdupv (from->allowed_destinations);
            break;
        case VMR_POLICY_KEY_DESTINATION_SYMLINKS:
            to->refuse_destination_symlinks = from->refuse_destination_symlinks;
            break;
        case VMR_POLICY_KEY_LAST:
        default:
            g_assert_not_reached ();
    }
}

static gchar *
format_rate (guint64 bytes)
{
    static const gchar *const suffixes[] = { "", "K", "M", "G", "T" };
    guint i = 0;

    if (bytes == 0)
        return g_strdup ("0");
    while (i + 1 < G_N_ELEMENTS (suffixes) && bytes % 1024 == 0) {
        bytes /= 1024;
        i++;
    }
    return g_strdup_printf ("%" G_GUINT64_FORMAT "%s", bytes, suffixes[i]);
}

static gchar *
format_duration (gint64 usec)
{
    if (usec == 0)
        return g_strdup ("0");
    if (usec % (G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC) == 0)
        return g_strdup_printf ("%" G_GINT64_FORMAT "h",
                                usec / (G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC));
    if (usec % (G_GINT64_CONSTANT (60) * G_USEC_PER_SEC) == 0)
        return g_strdup_printf ("%" G_GINT64_FORMAT "m",
                                usec / (G_GINT64_CONSTANT (60) * G_USEC_PER_SEC));
    if (usec % G_USEC_PER_SEC == 0)
        return g_strdup_printf ("%" G_GINT64_FORMAT "s", usec / G_USEC_PER_SEC);
    if (usec % 1000 == 0)
        return g_strdup_printf ("%" G_GINT64_FORMAT "ms", usec / 1000);
    /* the file may say "1500us": keep every digit, so that the value reads back the same */
    return g_strdup_printf ("%" G_GINT64_FORMAT "us", usec);
}

gboolean
vmr_policy_parse_copies (const gchar *text, guint64 *out, GError **error)
{
    if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT16, out, NULL)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a whole number of copies from 0 to 65535", text);
        return FALSE;
    }
    return TRUE;
}

static gboolean
parse_count (const gchar *text, guint64 *out, GError **error)
{
    if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT32, out, NULL)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a whole number of IOPS", text);
        return FALSE;
    }
    return TRUE;
}

/*
 * "auto" (0: QEMU's choice), or a size from @min to @max, a power of two if
 * @power_of_two; @range says the bounds in the error
 */
static gboolean
parse_auto_size (const gchar *text, guint64 min, guint64 max, gboolean power_of_two,
                 const gchar *range, guint64 *out, GError **error)
{
    guint64 bytes = 0;

    if (g_strcmp0 (text, "auto") == 0) {
        *out = 0;
        return TRUE;
    }
    if (!vmr_units_parse_bytes (text, &bytes, error))
        return FALSE;
    if (bytes < min || bytes > max || (power_of_two && (bytes & (bytes - 1)) != 0)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is not auto or %s", text,
                     range);
        return FALSE;
    }
    *out = bytes;
    return TRUE;
}

/* a power of two from 512 bytes to 64 MiB, as QEMU's mirror takes */
static gboolean
parse_granularity (const gchar *text, guint64 *out, GError **error)
{
    return parse_auto_size (text, 512, 64 * 1024 * 1024, TRUE, "a power of two from 512 to 64M",
                            out, error);
}

/*
 * From 64 KiB to 1 GiB (auto: QEMU's 16 MiB): what the mirror may have in
 * flight, in reads of the source and writes of the destination
 */
static gboolean
parse_buf_size (const gchar *text, guint64 *out, GError **error)
{
    return parse_auto_size (text, 64 * 1024, G_GUINT64_CONSTANT (1024) * 1024 * 1024, FALSE,
                            "a size from 64K to 1G", out, error);
}

/*
 * 0 (the latency's excess counts against the baseline alone) to 100 ms: a
 * guest whose I/O takes longer than that is not one a floor protects
 */
static gboolean
parse_latency_floor (const gchar *text, gint64 *out, GError **error)
{
    gint64 usec = 0;

    if (!vmr_units_parse_duration (text, &usec, error))
        return FALSE;
    if (usec > 100 * 1000) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is out of range (0 to 100ms)", text);
        return FALSE;
    }
    *out = usec;
    return TRUE;
}

/* whole seconds up to an hour: QEMU's reconnect-delay is in seconds */
static gboolean
parse_reconnect_delay (const gchar *text, guint *out, GError **error)
{
    gint64 usec = 0;

    if (!vmr_units_parse_duration (text, &usec, error))
        return FALSE;
    if (usec % G_USEC_PER_SEC != 0 || usec > G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a whole number of seconds from 0 to 1h", text);
        return FALSE;
    }
    *out = (guint) (usec / G_USEC_PER_SEC);
    return TRUE;
}

/* an absolute directory, or "none" */
gboolean
vmr_policy_parse_tls_creds (const gchar *text, gchar **out, GError **error)
{
    g_clear_pointer (out, g_free);
    if (g_strcmp0 (text, "none") == 0)
        return TRUE;
    if (!g_path_is_absolute (text)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is neither an absolute directory nor none", text);
        return FALSE;
    }
    *out = g_canonicalize_filename (text, NULL);
    return TRUE;
}

/* "any", or patterns separated by commas (destination-pattern.h) */
static gboolean
parse_destinations (const gchar *text, GStrv *out, GError **error)
{
    g_auto (GStrv) items = NULL;
    g_autoptr (GPtrArray) patterns = g_ptr_array_new_with_free_func (g_free);

    g_clear_pointer (out, g_strfreev);
    if (g_strcmp0 (text, "any") == 0)
        return TRUE;
    items = g_strsplit (text, ",", -1);
    for (guint i = 0; items[i] != NULL; i++) {
        gchar *pattern = vmr_destination_pattern_parse (g_strstrip (items[i]), error);

        if (pattern == NULL)
            return FALSE;
        g_ptr_array_add (patterns, pattern);
    }
    g_ptr_array_add (patterns, NULL);
    *out = (GStrv) g_ptr_array_free (g_steal_pointer (&patterns), FALSE);
    return TRUE;
}

gboolean
vmr_policy_rule_parse_value (VmrPolicyRule *rule, VmrPolicyKey key, const gchar *text,
                             GError **error)
{
    guint64 number = 0;
    gint64 usec = 0;
    guint word = 0;

    switch (key) {
        case VMR_POLICY_KEY_SAMPLE_INTERVAL:
            if (!vmr_units_parse_duration (text, &usec, error))
                return FALSE;
            if (usec < 100 * 1000 || usec > G_GINT64_CONSTANT (60) * G_USEC_PER_SEC) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is out of range (100ms to 60s)", text);
                return FALSE;
            }
            rule->sample_interval_us = usec;
            return TRUE;
        case VMR_POLICY_KEY_SPEED:
            return vmr_units_parse_bytes (text, &rule->speed, error);
        case VMR_POLICY_KEY_THROTTLE_SPEED:
            return vmr_units_parse_bytes (text, &rule->throttle_speed, error);
        case VMR_POLICY_KEY_IOPS_THROTTLE:
            return parse_count (text, &rule->iops_throttle, error);
        case VMR_POLICY_KEY_IOPS_DELAY:
            return parse_count (text, &rule->iops_delay, error);
        case VMR_POLICY_KEY_RESUME_BELOW:
            return parse_percent (text, 1, 99, &rule->resume_below, error);
        case VMR_POLICY_KEY_HOLD:
            return vmr_units_parse_duration (text, &rule->hold_us, error);
        case VMR_POLICY_KEY_MAX_DELAY:
            return vmr_units_parse_duration (text, &rule->max_delay_us, error);
        case VMR_POLICY_KEY_WINDOW:
            g_array_set_size (rule->windows, 0);
            return vmr_window_list_parse (text, rule->windows, error);
        case VMR_POLICY_KEY_ON_MAX_DELAY:
            if (g_strcmp0 (text, "proceed") == 0) {
                rule->on_max_delay = VMR_ON_MAX_DELAY_PROCEED;
                return TRUE;
            }
            if (g_strcmp0 (text, "fail") == 0) {
                rule->on_max_delay = VMR_ON_MAX_DELAY_FAIL;
                return TRUE;
            }
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is neither proceed nor fail", text);
            return FALSE;
        case VMR_POLICY_KEY_MAX_PARALLEL:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION:
            if (!vmr_policy_parse_copies (text, &number, error))
                return FALSE;
            rule->limits[key - VMR_POLICY_KEY_MAX_PARALLEL] = number;
            return TRUE;
        case VMR_POLICY_KEY_KEEP_FINISHED:
            return vmr_units_parse_duration (text, &rule->keep_finished_us, error);
        case VMR_POLICY_KEY_KEEP_FINISHED_COUNT:
            if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT32, &number, NULL)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is not a whole number of jobs", text);
                return FALSE;
            }
            rule->keep_finished = (guint) number;
            return TRUE;
        case VMR_POLICY_KEY_CONTROL:
            if (!parse_word (text, control_words, &word, error))
                return FALSE;
            rule->control = (VmrControl) word;
            return TRUE;
        case VMR_POLICY_KEY_GUEST_IMPACT:
            return parse_percent (text, 1, 50, &rule->guest_impact, error);
        case VMR_POLICY_KEY_MIN_SPEED:
            if (!vmr_units_parse_bytes (text, &rule->min_speed, error))
                return FALSE;
            if (rule->min_speed == 0) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is not above 0: a copy must go on", text);
                return FALSE;
            }
            return TRUE;
        case VMR_POLICY_KEY_MAX_SPEED:
            return vmr_units_parse_bytes (text, &rule->max_speed, error);
        case VMR_POLICY_KEY_MIN_PROGRESS:
            if (g_strcmp0 (text, "off") == 0) {
                rule->min_progress = 0;
                return TRUE;
            }
            if (!parse_percent (text, 1, 400, &rule->min_progress, NULL)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is not off nor a percentage from 1 to 400", text);
                return FALSE;
            }
            return TRUE;
        case VMR_POLICY_KEY_LATENCY_FLOOR:
            return parse_latency_floor (text, &rule->latency_floor_us, error);
        case VMR_POLICY_KEY_MAX_HARM:
            /* over the highest guest-impact, up to four times the latency */
            return parse_percent (text, 50, 300, &rule->max_harm, error);
        case VMR_POLICY_KEY_GRANULARITY:
            return parse_granularity (text, &rule->granularity, error);
        case VMR_POLICY_KEY_BUF_SIZE:
            return parse_buf_size (text, &rule->buf_size, error);
        case VMR_POLICY_KEY_LATENCY_THROTTLE:
            return vmr_units_parse_duration (text, &rule->latency_throttle_us, error);
        case VMR_POLICY_KEY_LATENCY_DELAY:
            return vmr_units_parse_duration (text, &rule->latency_delay_us, error);
        case VMR_POLICY_KEY_CONVERGE_AFTER:
            return vmr_units_parse_duration (text, &rule->converge_after_us, error);
        case VMR_POLICY_KEY_CONVERGE_BY:
            if (!parse_word (text, converge_by_words, &word, error))
                return FALSE;
            rule->converge_by = (VmrConvergeBy) word;
            return TRUE;
        case VMR_POLICY_KEY_DEADLINE:
            return vmr_units_parse_duration (text, &rule->deadline_us, error);
        case VMR_POLICY_KEY_ON_DEADLINE:
            if (!parse_word (text, on_deadline_words, &word, error))
                return FALSE;
            rule->on_deadline = (VmrOnDeadline) word;
            return TRUE;
        case VMR_POLICY_KEY_RECONNECT_DELAY:
            return parse_reconnect_delay (text, &rule->reconnect_delay_s, error);
        case VMR_POLICY_KEY_TLS_CREDS:
            return vmr_policy_parse_tls_creds (text, &rule->tls_creds, error);
        case VMR_POLICY_KEY_VERIFY:
            if (!parse_word (text, yes_no_words, &word, error))
                return FALSE;
            rule->verify = word == 1;
            return TRUE;
        case VMR_POLICY_KEY_SPACE_CHECK:
            if (!parse_word (text, space_check_words, &word, error))
                return FALSE;
            rule->space_check = (VmrSpaceCheck) word;
            return TRUE;
        case VMR_POLICY_KEY_SPACE_MARGIN:
            return vmr_units_parse_bytes (text, &rule->space_margin, error);
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            return parse_destinations (text, &rule->allowed_destinations, error);
        case VMR_POLICY_KEY_DESTINATION_SYMLINKS:
            if (!parse_word (text, symlinks_words, &word, error))
                return FALSE;
            rule->refuse_destination_symlinks = word == 1;
            return TRUE;
        case VMR_POLICY_KEY_LAST:
        default:
            g_assert_not_reached ();
    }
}

gchar *
vmr_policy_rule_format_value (const VmrPolicyRule *rule, VmrPolicyKey key)
{
    switch (key) {
        case VMR_POLICY_KEY_SAMPLE_INTERVAL:
            return format_duration (rule->sample_interval_us);
        case VMR_POLICY_KEY_SPEED:
            return format_rate (rule->speed);
        case VMR_POLICY_KEY_IOPS_THROTTLE:
            return g_strdup_printf ("%" G_GUINT64_FORMAT, rule->iops_throttle);
        case VMR_POLICY_KEY_THROTTLE_SPEED:
            return format_rate (rule->throttle_speed);
        case VMR_POLICY_KEY_IOPS_DELAY:
            return g_strdup_printf ("%" G_GUINT64_FORMAT, rule->iops_delay);
        case VMR_POLICY_KEY_RESUME_BELOW:
            return g_strdup_printf ("%u%%", rule->resume_below);
        case VMR_POLICY_KEY_HOLD:
            return format_duration (rule->hold_us);
        case VMR_POLICY_KEY_WINDOW:
            return vmr_policy_rule_format_windows (rule);
        case VMR_POLICY_KEY_MAX_DELAY:
            return format_duration (rule->max_delay_us);
        case VMR_POLICY_KEY_ON_MAX_DELAY:
            return g_strdup (rule->on_max_delay == VMR_ON_MAX_DELAY_FAIL ? "fail" : "proceed");
        case VMR_POLICY_KEY_MAX_PARALLEL:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION:
            return g_strdup_printf ("%" G_GUINT64_FORMAT,
                                    rule->limits[key - VMR_POLICY_KEY_MAX_PARALLEL]);
        case VMR_POLICY_KEY_KEEP_FINISHED:
            return format_duration (rule->keep_finished_us);
        case VMR_POLICY_KEY_KEEP_FINISHED_COUNT:
            return g_strdup_printf ("%u", rule->keep_finished);
        case VMR_POLICY_KEY_CONTROL:
            return g_strdup (control_words[rule->control]);
        case VMR_POLICY_KEY_GUEST_IMPACT:
            return g_strdup_printf ("%u%%", rule->guest_impact);
        case VMR_POLICY_KEY_MIN_SPEED:
            return format_rate (rule->min_speed);
        case VMR_POLICY_KEY_MAX_SPEED:
            return format_rate (rule->max_speed);
        case VMR_POLICY_KEY_MIN_PROGRESS:
            return rule->min_progress == 0 ? g_strdup ("off")
                                           : g_strdup_printf ("%u%%", rule->min_progress);
        case VMR_POLICY_KEY_LATENCY_FLOOR:
            return format_duration (rule->latency_floor_us);
        case VMR_POLICY_KEY_MAX_HARM:
            return g_strdup_printf ("%u%%", rule->max_harm);
        case VMR_POLICY_KEY_GRANULARITY:
            return rule->granularity == 0 ? g_strdup ("auto") : format_rate (rule->granularity);
        case VMR_POLICY_KEY_BUF_SIZE:
            return rule->buf_size == 0 ? g_strdup ("auto") : format_rate (rule->buf_size);
        case VMR_POLICY_KEY_LATENCY_THROTTLE:
            return format_duration (rule->latency_throttle_us);
        case VMR_POLICY_KEY_LATENCY_DELAY:
            return format_duration (rule->latency_delay_us);
        case VMR_POLICY_KEY_CONVERGE_AFTER:
            return format_duration (rule->converge_after_us);
        case VMR_POLICY_KEY_CONVERGE_BY:
            return g_strdup (converge_by_words[rule->converge_by]);
        case VMR_POLICY_KEY_DEADLINE:
            return format_duration (rule->deadline_us);
        case VMR_POLICY_KEY_ON_DEADLINE:
            return g_strdup (on_deadline_words[rule->on_deadline]);
        case VMR_POLICY_KEY_RECONNECT_DELAY:
            return format_duration ((gint64) rule->reconnect_delay_s * G_USEC_PER_SEC);
        case VMR_POLICY_KEY_TLS_CREDS:
            return g_strdup (rule->tls_creds != NULL ? rule->tls_creds : "none");
        case VMR_POLICY_KEY_VERIFY:
            return g_strdup (yes_no_words[rule->verify ? 1 : 0]);
        case VMR_POLICY_KEY_SPACE_CHECK:
            return g_strdup (space_check_words[rule->space_check]);
        case VMR_POLICY_KEY_SPACE_MARGIN:
            return format_rate (rule->space_margin);
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            return rule->allowed_destinations != NULL
                       ? g_strjoinv (", ", rule->allowed_destinations)
                       : g_strdup ("any");
        case VMR_POLICY_KEY_DESTINATION_SYMLINKS:
            return g_strdup (symlinks_words[rule->refuse_destination_symlinks ? 1 : 0]);
        case VMR_POLICY_KEY_LAST:
        default:
            return g_strdup ("");
    }
}

gboolean
vmr_policy_rule_in_window (const VmrPolicyRule *rule, gint seconds_of_day)
{
    return vmr_window_list_contains (rule->windows, seconds_of_day);
}

gchar *
vmr_policy_rule_format_windows (const VmrPolicyRule *rule)
{
    return vmr_window_list_format (rule->windows);
}
