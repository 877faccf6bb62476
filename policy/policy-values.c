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

/* the words of the keys that take one of a few, in the order of their enums */
static const gchar *const control_words[] = { "static", "adaptive", NULL };
static const gchar *const converge_by_words[] = { "speed", "write-blocking", NULL };
static const gchar *const on_deadline_words[] = { "continue", "converge", "fail", NULL };
static const gchar *const yes_no_words[] = { "no", "yes", NULL };
static const gchar *const on_max_delay_words[] = { "proceed", "fail", NULL };
static const gchar *const space_check_words[] = { "refuse", "warn", "off", NULL };
static const gchar *const symlinks_words[] = { "allow", "refuse", NULL };

/*
 * How a key's value is read, written and copied. A key of one of the common
 * kinds is one field of VmrPolicyRule of that kind's C type, read and written
 * the kind's way; the code for each other key, or for a kind's key with a
 * range or a word of its own, is in the switches below.
 */
typedef enum {
    KIND_OTHER,
    KIND_DURATION, /* gint64 microseconds */
    KIND_BYTES,    /* guint64 bytes, or bytes/s */
    KIND_COUNT,    /* guint64, a whole number (IOPS, unless the key says otherwise) */
    KIND_PERCENT,  /* guint, from min to max */
    KIND_WORD,     /* an enum or a gboolean: the index of one of words */
} KeyKind;

typedef struct {
    const gchar *name;
    KeyKind kind;
    gsize offset; /* of the key's field in VmrPolicyRule */
    gsize size;
    guint min, max;            /* KIND_PERCENT */
    const gchar *const *words; /* KIND_WORD */
} KeyInfo;

#define FIELD(member)                                                                              \
    G_STRUCT_OFFSET (VmrPolicyRule, member), sizeof (((VmrPolicyRule *) NULL)->member)

static const KeyInfo keys[VMR_POLICY_KEY_LAST] = {
    [VMR_POLICY_KEY_SAMPLE_INTERVAL]
    = { "sample-interval", KIND_DURATION, FIELD (sample_interval_us) },
    [VMR_POLICY_KEY_SPEED] = { "speed", KIND_BYTES, FIELD (speed) },
    [VMR_POLICY_KEY_IOPS_THROTTLE] = { "iops-throttle", KIND_COUNT, FIELD (iops_throttle) },
    [VMR_POLICY_KEY_THROTTLE_SPEED] = { "throttle-speed", KIND_BYTES, FIELD (throttle_speed) },
    [VMR_POLICY_KEY_IOPS_DELAY] = { "iops-delay", KIND_COUNT, FIELD (iops_delay) },
    [VMR_POLICY_KEY_RESUME_BELOW] = { "resume-below", KIND_PERCENT, FIELD (resume_below), 1, 99 },
    [VMR_POLICY_KEY_HOLD] = { "hold", KIND_DURATION, FIELD (hold_us) },
    [VMR_POLICY_KEY_WINDOW] = { "window", KIND_OTHER, FIELD (windows) },
    [VMR_POLICY_KEY_MAX_DELAY] = { "max-delay", KIND_DURATION, FIELD (max_delay_us) },
    [VMR_POLICY_KEY_ON_MAX_DELAY]
    = { "on-max-delay", KIND_WORD, FIELD (on_max_delay), 0, 0, on_max_delay_words },
    [VMR_POLICY_KEY_MAX_PARALLEL] = { "max-parallel", KIND_COUNT, FIELD (limits[VMR_LIMIT_HOST]) },
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD]
    = { "max-parallel-per-iothread", KIND_COUNT, FIELD (limits[VMR_LIMIT_IOTHREAD]) },
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN]
    = { "max-parallel-per-domain", KIND_COUNT, FIELD (limits[VMR_LIMIT_DOMAIN]) },
    [VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION]
    = { "max-parallel-per-destination", KIND_COUNT, FIELD (limits[VMR_LIMIT_DESTINATION]) },
    [VMR_POLICY_KEY_KEEP_FINISHED] = { "keep-finished", KIND_DURATION, FIELD (keep_finished_us) },
    [VMR_POLICY_KEY_KEEP_FINISHED_COUNT]
    = { "keep-finished-count", KIND_OTHER, FIELD (keep_finished) },
    [VMR_POLICY_KEY_CONTROL] = { "control", KIND_WORD, FIELD (control), 0, 0, control_words },
    [VMR_POLICY_KEY_GUEST_IMPACT] = { "guest-impact", KIND_PERCENT, FIELD (guest_impact), 1, 50 },
    [VMR_POLICY_KEY_MIN_SPEED] = { "min-speed", KIND_BYTES, FIELD (min_speed) },
    [VMR_POLICY_KEY_MAX_SPEED] = { "max-speed", KIND_BYTES, FIELD (max_speed) },
    [VMR_POLICY_KEY_START_SPEED] = { "start-speed", KIND_BYTES, FIELD (start_speed) },
    [VMR_POLICY_KEY_MIN_PROGRESS] = { "min-progress", KIND_OTHER, FIELD (min_progress) },
    [VMR_POLICY_KEY_LATENCY_FLOOR] = { "latency-floor", KIND_DURATION, FIELD (latency_floor_us) },
    /* over the highest guest-impact, up to four times the latency */
    [VMR_POLICY_KEY_MAX_HARM] = { "max-harm", KIND_PERCENT, FIELD (max_harm), 50, 300 },
    [VMR_POLICY_KEY_GRANULARITY] = { "granularity", KIND_OTHER, FIELD (granularity) },
    [VMR_POLICY_KEY_BUF_SIZE] = { "buf-size", KIND_OTHER, FIELD (buf_size) },
    [VMR_POLICY_KEY_LATENCY_THROTTLE]
    = { "latency-throttle", KIND_DURATION, FIELD (latency_throttle_us) },
    [VMR_POLICY_KEY_LATENCY_DELAY] = { "latency-delay", KIND_DURATION, FIELD (latency_delay_us) },
    [VMR_POLICY_KEY_CONVERGE_AFTER]
    = { "converge-after", KIND_DURATION, FIELD (converge_after_us) },
    [VMR_POLICY_KEY_CONVERGE_BY]
    = { "converge-by", KIND_WORD, FIELD (converge_by), 0, 0, converge_by_words },
    [VMR_POLICY_KEY_DEADLINE] = { "deadline", KIND_DURATION, FIELD (deadline_us) },
    [VMR_POLICY_KEY_ON_DEADLINE]
    = { "on-deadline", KIND_WORD, FIELD (on_deadline), 0, 0, on_deadline_words },
    [VMR_POLICY_KEY_RECONNECT_DELAY] = { "reconnect-delay", KIND_OTHER, FIELD (reconnect_delay_s) },
    [VMR_POLICY_KEY_TLS_CREDS] = { "tls-creds", KIND_OTHER, FIELD (tls_creds) },
    [VMR_POLICY_KEY_VERIFY] = { "verify", KIND_WORD, FIELD (verify), 0, 0, yes_no_words },
    [VMR_POLICY_KEY_SPACE_CHECK]
    = { "space-check", KIND_WORD, FIELD (space_check), 0, 0, space_check_words },
    [VMR_POLICY_KEY_SPACE_MARGIN] = { "space-margin", KIND_BYTES, FIELD (space_margin) },
    [VMR_POLICY_KEY_ALLOWED_DESTINATIONS]
    = { "allowed-destinations", KIND_OTHER, FIELD (allowed_destinations) },
    [VMR_POLICY_KEY_DESTINATION_SYMLINKS]
    = { "destination-symlinks", KIND_WORD, FIELD (refuse_destination_symlinks), 0, 0,
        symlinks_words },
};

/* the size of the field of a key of @kind: an enum is an int, as a gboolean */
static gsize
kind_size (KeyKind kind)
{
    switch (kind) {
        case KIND_DURATION:
            return sizeof (gint64);
        case KIND_BYTES:
        case KIND_COUNT:
            return sizeof (guint64);
        case KIND_PERCENT:
            return sizeof (guint);
        case KIND_WORD:
            return sizeof (gint);
        case KIND_OTHER:
        default:
            return 0;
    }
}

/* the field of @key in @rule */
static gpointer
key_field (const VmrPolicyRule *rule, VmrPolicyKey key)
{
    g_assert (key < VMR_POLICY_KEY_LAST);
    return (guint8 *) rule + keys[key].offset;
}

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
    return key < VMR_POLICY_KEY_LAST ? keys[key].name : "unknown";
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
    /* docs/policy.md says why: over the knee of few storages, under what most move */
    rule->start_speed = 64 * 1024 * 1024;
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
        case VMR_POLICY_KEY_WINDOW:
            g_array_set_size (to->windows, 0);
            g_array_append_vals (to->windows, from->windows->data, from->windows->len);
            return;
        case VMR_POLICY_KEY_TLS_CREDS:
            g_free (to->tls_creds);
            to->tls_creds = g_strdup (from->tls_creds);
            return;
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            g_strfreev (to->allowed_destinations);
            to->allowed_destinations = g_strdupv (from->allowed_destinations);
            return;
        default:
            /* every other key's field holds its value itself */
            memcpy (key_field (to, key), key_field (from, key), keys[key].size);
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

/* off (0), or a percentage from 1 to 400 */
static gboolean
parse_min_progress (const gchar *text, guint *out, GError **error)
{
    if (g_strcmp0 (text, "off") == 0) {
        *out = 0;
        return TRUE;
    }
    if (!parse_percent (text, 1, 400, out, NULL)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not off nor a percentage from 1 to 400", text);
        return FALSE;
    }
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
    g_clear_pointer (out, g_strfreev);
    if (g_strcmp0 (text, "any") == 0)
        return TRUE;
    *out = vmr_destination_patterns_parse (text, error);
    return *out != NULL;
}

/* reads @text into the field of @key, a key of a common kind */
static gboolean
parse_by_kind (VmrPolicyRule *rule, VmrPolicyKey key, const gchar *text, GError **error)
{
    gpointer field = key_field (rule, key);
    guint word = 0;

    g_assert (keys[key].size == kind_size (keys[key].kind));
    switch (keys[key].kind) {
        case KIND_DURATION:
            return vmr_units_parse_duration (text, field, error);
        case KIND_BYTES:
            return vmr_units_parse_bytes (text, field, error);
        case KIND_COUNT:
            return parse_count (text, field, error);
        case KIND_PERCENT:
            return parse_percent (text, keys[key].min, keys[key].max, field, error);
        case KIND_WORD:
            if (!parse_word (text, keys[key].words, &word, error))
                return FALSE;
            *(gint *) field = (gint) word;
            return TRUE;
        case KIND_OTHER:
        default:
            g_assert_not_reached ();
    }
}

/* a duration from @min_us to @max_us, @range naming them in the error */
static gboolean
parse_duration_in (const gchar *text, gint64 min_us, gint64 max_us, const gchar *range, gint64 *out,
                   GError **error)
{
    gint64 usec = 0;

    if (!vmr_units_parse_duration (text, &usec, error))
        return FALSE;
    if (usec < min_us || usec > max_us) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is out of range (%s)",
                     text, range);
        return FALSE;
    }
    *out = usec;
    return TRUE;
}

gboolean
vmr_policy_rule_parse_value (VmrPolicyRule *rule, VmrPolicyKey key, const gchar *text,
                             GError **error)
{
    guint64 number = 0;

    switch (key) {
        case VMR_POLICY_KEY_SAMPLE_INTERVAL:
            return parse_duration_in (text, 100 * 1000, G_GINT64_CONSTANT (60) * G_USEC_PER_SEC,
                                      "100ms to 60s", &rule->sample_interval_us, error);
        case VMR_POLICY_KEY_LATENCY_FLOOR:
            /* 0 (the excess counts against the baseline alone) to 100 ms: a guest
             * whose I/O takes longer than that is not one a floor protects */
            return parse_duration_in (text, 0, 100 * 1000, "0 to 100ms", &rule->latency_floor_us,
                                      error);
        case VMR_POLICY_KEY_WINDOW:
            g_array_set_size (rule->windows, 0);
            return vmr_window_list_parse (text, rule->windows, error);
        case VMR_POLICY_KEY_ON_MAX_DELAY:
            if (parse_by_kind (rule, key, text, NULL))
                return TRUE;
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is neither proceed nor fail", text);
            return FALSE;
        case VMR_POLICY_KEY_MAX_PARALLEL:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_IOTHREAD:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DOMAIN:
        case VMR_POLICY_KEY_MAX_PARALLEL_PER_DESTINATION:
            return vmr_policy_parse_copies (text, key_field (rule, key), error);
        case VMR_POLICY_KEY_KEEP_FINISHED_COUNT:
            if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT32, &number, NULL)) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is not a whole number of jobs", text);
                return FALSE;
            }
            rule->keep_finished = (guint) number;
            return TRUE;
        case VMR_POLICY_KEY_MIN_SPEED:
        case VMR_POLICY_KEY_START_SPEED:
            if (!vmr_units_parse_bytes (text, &number, error))
                return FALSE;
            if (number == 0) {
                g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "'%s' is not above 0: a copy must go on", text);
                return FALSE;
            }
            *(guint64 *) key_field (rule, key) = number;
            return TRUE;
        case VMR_POLICY_KEY_MIN_PROGRESS:
            return parse_min_progress (text, &rule->min_progress, error);
        case VMR_POLICY_KEY_GRANULARITY:
            return parse_granularity (text, &rule->granularity, error);
        case VMR_POLICY_KEY_BUF_SIZE:
            return parse_buf_size (text, &rule->buf_size, error);
        case VMR_POLICY_KEY_RECONNECT_DELAY:
            return parse_reconnect_delay (text, &rule->reconnect_delay_s, error);
        case VMR_POLICY_KEY_TLS_CREDS:
            return vmr_policy_parse_tls_creds (text, &rule->tls_creds, error);
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            return parse_destinations (text, &rule->allowed_destinations, error);
        default:
            return parse_by_kind (rule, key, text, error);
    }
}

/* the value of @key, a key of a common kind, as the policy file writes it */
static gchar *
format_by_kind (const VmrPolicyRule *rule, VmrPolicyKey key)
{
    gconstpointer field = key_field (rule, key);

    g_assert (keys[key].size == kind_size (keys[key].kind));
    switch (keys[key].kind) {
        case KIND_DURATION:
            return format_duration (*(const gint64 *) field);
        case KIND_BYTES:
            return format_rate (*(const guint64 *) field);
        case KIND_COUNT:
            return g_strdup_printf ("%" G_GUINT64_FORMAT, *(const guint64 *) field);
        case KIND_PERCENT:
            return g_strdup_printf ("%u%%", *(const guint *) field);
        case KIND_WORD:
            return g_strdup (keys[key].words[*(const gint *) field]);
        case KIND_OTHER:
        default:
            g_assert_not_reached ();
    }
}

gchar *
vmr_policy_rule_format_value (const VmrPolicyRule *rule, VmrPolicyKey key)
{
    switch (key) {
        case VMR_POLICY_KEY_WINDOW:
            return vmr_policy_rule_format_windows (rule);
        case VMR_POLICY_KEY_KEEP_FINISHED_COUNT:
            return g_strdup_printf ("%u", rule->keep_finished);
        case VMR_POLICY_KEY_MIN_PROGRESS:
            return rule->min_progress == 0 ? g_strdup ("off")
                                           : g_strdup_printf ("%u%%", rule->min_progress);
        case VMR_POLICY_KEY_GRANULARITY:
            return rule->granularity == 0 ? g_strdup ("auto") : format_rate (rule->granularity);
        case VMR_POLICY_KEY_BUF_SIZE:
            return rule->buf_size == 0 ? g_strdup ("auto") : format_rate (rule->buf_size);
        case VMR_POLICY_KEY_RECONNECT_DELAY:
            return format_duration ((gint64) rule->reconnect_delay_s * G_USEC_PER_SEC);
        case VMR_POLICY_KEY_TLS_CREDS:
            return g_strdup (rule->tls_creds != NULL ? rule->tls_creds : "none");
        case VMR_POLICY_KEY_ALLOWED_DESTINATIONS:
            return rule->allowed_destinations != NULL
                       ? g_strjoinv (", ", rule->allowed_destinations)
                       : g_strdup ("any");
        default:
            return key < VMR_POLICY_KEY_LAST ? format_by_kind (rule, key) : g_strdup ("");
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
