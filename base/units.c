#define G_LOG_DOMAIN "vmr-policy"

#include "units.h"

#include <math.h>

#include "vmr-error.h"

typedef struct {
    const gchar *suffix;
    gdouble factor;
} UnitSuffix;

/* longest first, so that "ms" wins over "m" and "KiB" over "K" */
static const UnitSuffix byte_suffixes[] = {
    { "kib", 1024.0 },
    { "mib", 1024.0 * 1024 },
    { "gib", 1024.0 * 1024 * 1024 },
    { "tib", 1024.0 * 1024 * 1024 * 1024 },
    { "kb", 1024.0 },
    { "mb", 1024.0 * 1024 },
    { "gb", 1024.0 * 1024 * 1024 },
    { "tb", 1024.0 * 1024 * 1024 * 1024 },
    { "k", 1024.0 },
    { "m", 1024.0 * 1024 },
    { "g", 1024.0 * 1024 * 1024 },
    { "t", 1024.0 * 1024 * 1024 * 1024 },
    { "b", 1.0 },
    { "", 1.0 },
};

/* factors are microseconds per unit */
static const UnitSuffix duration_suffixes[] = {
    { "ms", 1000.0 },          /* milliseconds */
    { "us", 1.0 },             /* microseconds */
    { "s", 1000000.0 },        /* seconds */
    { "m", 60 * 1000000.0 },   /* minutes */
    { "h", 3600 * 1000000.0 }, /* hours */
    { "", 1000000.0 },         /* a bare number is seconds */
};

static gboolean
parse_with_suffixes (const gchar *text, const UnitSuffix *suffixes, gsize n_suffixes,
                     gdouble *out_value, const gchar *what, GError **error)
{
    g_autofree gchar *lower = NULL;
    const gchar *digits_end;
    gchar *end = NULL;
    gdouble number;

    if (text == NULL || *text == '\0') {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "empty %s", what);
        return FALSE;
    }
    lower = g_ascii_strdown (text, -1);
    g_strstrip (lower);
    if (g_str_has_suffix (lower, "/s") && suffixes == byte_suffixes) {
        lower[strlen (lower) - 2] = '\0';
        g_strchomp (lower);
    }

    /* only plain decimals: strtod would also take "0x10", "1e3" or "inf" */
    digits_end = lower;
    while (g_ascii_isdigit (*digits_end))
        digits_end++;
    if (digits_end != lower && *digits_end == '.' && g_ascii_isdigit (digits_end[1])) {
        digits_end++;
        while (g_ascii_isdigit (*digits_end))
            digits_end++;
    }
    if (digits_end == lower) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "invalid %s '%s'", what, text);
        return FALSE;
    }
    number = g_ascii_strtod (lower, &end);
    if (end != digits_end) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "invalid %s '%s'", what, text);
        return FALSE;
    }
    if (!isfinite (number)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is too large", text);
        return FALSE;
    }
    while (*end == ' ')
        end++;
    for (gsize i = 0; i < n_suffixes; i++) {
        if (g_strcmp0 (end, suffixes[i].suffix) == 0) {
            *out_value = number * suffixes[i].factor;
            return TRUE;
        }
    }
    g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "invalid %s '%s': unknown unit '%s'",
                 what, text, end);
    return FALSE;
}

gboolean
vmr_units_parse_bytes (const gchar *text, guint64 *out_bytes, GError **error)
{
    gdouble value = 0;

    if (!parse_with_suffixes (text, byte_suffixes, G_N_ELEMENTS (byte_suffixes), &value,
                              "size or rate", error))
        return FALSE;
    /* 2^64: llround() would overflow from 2^63 on, so round in double */
    if (value >= 18446744073709551616.0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is too large", text);
        return FALSE;
    }
    *out_bytes = (guint64) round (value);
    return TRUE;
}

gboolean
vmr_units_parse_duration (const gchar *text, gint64 *out_usec, GError **error)
{
    gdouble value = 0;

    if (!parse_with_suffixes (text, duration_suffixes, G_N_ELEMENTS (duration_suffixes), &value,
                              "duration", error))
        return FALSE;
    if (value >= 9.2e18) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "'%s' is too long", text);
        return FALSE;
    }
    *out_usec = (gint64) llround (value);
    return TRUE;
}

gchar *
vmr_units_format_bytes (guint64 bytes)
{
    static const gchar *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    gdouble value = (gdouble) bytes;
    gsize i = 0;

    /* 1023.5 and up would print as "1024 KiB" rather than "1 MiB" */
    while (value >= 1023.5 && i + 1 < G_N_ELEMENTS (names)) {
        value /= 1024.0;
        i++;
    }
    if (i == 0)
        return g_strdup_printf ("%" G_GUINT64_FORMAT " B", bytes);
    if (value >= 99.95 || llround (value * 10) % 10 == 0)
        return g_strdup_printf ("%.0f %s", value, names[i]);
    return g_strdup_printf ("%.1f %s", value, names[i]);
}

gchar *
vmr_units_format_speed (guint64 bytes_per_second)
{
    g_autofree gchar *bytes = NULL;

    if (bytes_per_second == 0)
        return g_strdup ("unlimited");
    bytes = vmr_units_format_bytes (bytes_per_second);
    return g_strdup_printf ("%s/s", bytes);
}

/* @n / @d rounded half up, for n >= 0, without overflowing near G_MAXINT64 */
static gint64
div_round (gint64 n, gint64 d)
{
    return n / d + (n % d >= d / 2 ? 1 : 0);
}

gchar *
vmr_units_format_duration (gint64 usec)
{
    gint64 tenths;
    gint64 secs;

    if (usec < 0)
        usec = 0;
    /* below 10 s tenths matter, but a whole number prints as "7s", not "7.0s" */
    tenths = div_round (usec, G_USEC_PER_SEC / 10);
    if (tenths < 100 && tenths % 10 != 0)
        return g_strdup_printf ("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT "s", tenths / 10,
                                tenths % 10);
    secs = div_round (usec, G_USEC_PER_SEC);
    if (secs < 60)
        return g_strdup_printf ("%" G_GINT64_FORMAT "s", secs);
    if (secs < 3600)
        return g_strdup_printf ("%" G_GINT64_FORMAT "m%02" G_GINT64_FORMAT "s", secs / 60,
                                secs % 60);
    return g_strdup_printf ("%" G_GINT64_FORMAT "h%02" G_GINT64_FORMAT "m", secs / 3600,
                            (secs % 3600) / 60);
}
