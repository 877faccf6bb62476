/*
 * Units in user input: sizes, rates and durations, parsed and formatted.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "units.h"
#include "vmr-error.h"
#include "vmr-stats.h"

typedef struct {
    const gchar *text;
    guint64 bytes;
} BytesCase;

static const BytesCase valid_bytes[] = {
    { "0", 0 },
    { "4096", 4096 },
    { "17B", 17 },
    { "17b", 17 },
    { "1K", 1024 },
    { "1k", 1024 },
    { "1KB", 1024 },
    { "1KiB", 1024 },
    { "1kib", 1024 },
    { "100M", 100 * 1024 * 1024 },
    { "64MiB", 64 * 1024 * 1024 },
    { "64 MiB", 64 * 1024 * 1024 },
    { "  10M  ", 10 * 1024 * 1024 },
    { "1.5G", 1536 * 1024 * 1024 },
    { "1.5GiB", 1536 * 1024 * 1024 },
    { "2T", 2 * G_GUINT64_CONSTANT (1099511627776) },
    { "2TB", 2 * G_GUINT64_CONSTANT (1099511627776) },
    { "0.5K", 512 },
    { "1.0001K", 1024 }, /* rounded to whole bytes */
    { "512K/s", 512 * 1024 },
    { "512KiB/s", 512 * 1024 },
    { "100M /s", 100 * 1024 * 1024 },
    { "100m/S", 100 * 1024 * 1024 },
    { "10/s", 10 },
    /* above 2^63: must not go through a signed conversion */
    { "10000000T", G_GUINT64_CONSTANT (10995116277760000000) },
    { "16777215T", G_GUINT64_CONSTANT (18446742974197923840) },
};

typedef struct {
    const gchar *text;
    const gchar *message; /* a part of the error message */
} InvalidCase;

static const InvalidCase invalid_bytes[] = {
    { "", "empty" },
    { "   ", "invalid" },
    { "M", "invalid" },
    { "KiB", "invalid" },
    { "/s", "invalid" },
    { "-1", "invalid" },
    { "-1K", "invalid" },
    { "+1K", "invalid" },
    { ".5K", "invalid" },
    { "1.K", "invalid" },
    { "1..5K", "invalid" },
    { "1.5.5K", "unknown unit" },
    { "1,5G", "unknown unit" },
    { "0x10", "invalid" },
    { "1e3", "invalid" },
    { "inf", "invalid" },
    { "nan", "invalid" },
    { "1P", "unknown unit" },
    { "1KK", "unknown unit" },
    { "1Ki", "unknown unit" },
    { "1iB", "unknown unit" },
    { "10 M x", "unknown unit" },
    { "1K/s/s", "unknown unit" },
    { "1s", "unknown unit" },
    { "garbage", "invalid" },
    { "20000000T", "too large" },
    { "18446744073709551616", "too large" },
    { "1000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
      "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
      "too large" },
};

typedef struct {
    const gchar *text;
    gint64 usec;
} DurationCase;

static const DurationCase valid_durations[] = {
    { "0", 0 },
    { "30", 30 * G_USEC_PER_SEC },
    { "1.5", 1500000 },
    { "2s", 2 * G_USEC_PER_SEC },
    { "2S", 2 * G_USEC_PER_SEC },
    { "0.5s", 500000 },
    { "500ms", 500000 },
    { "1.0001ms", 1000 },
    { "250us", 250 },
    { "5m", 5 * 60 * G_USEC_PER_SEC },
    { "10 m", 10 * 60 * G_USEC_PER_SEC },
    { "1h", G_GINT64_CONSTANT (3600000000) },
    { "1.5h", G_GINT64_CONSTANT (5400000000) },
    { " 1H ", G_GINT64_CONSTANT (3600000000) },
    { "2500000000h", G_GINT64_CONSTANT (9000000000000000000) },
};

static const InvalidCase invalid_durations[] = {
    /* not a number */
    { "", "empty" },
    { "s", "invalid" },
    { "ms", "invalid" },
    { "-1s", "invalid" },
    { "-0", "invalid" },
    { ".5s", "invalid" },
    { "1e3", "invalid" },
    { "0x1", "invalid" },
    /* not a unit of time */
    { "1d", "unknown unit" },
    { "1x", "unknown unit" },
    { "1 hour", "unknown unit" },
    { "5m/s", "unknown unit" },
    { "1K", "unknown unit" },
    /* out of range */
    { "3000000000h", "too long" },
};

static void
test_parse_bytes_valid (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (valid_bytes); i++) {
        const BytesCase *c = &valid_bytes[i];
        g_autoptr (GError) error = NULL;
        guint64 bytes = 1;

        if (!vmr_units_parse_bytes (c->text, &bytes, &error)) {
            g_test_fail_printf ("'%s': %s", c->text, error->message);
            continue;
        }
        if (bytes != c->bytes)
            g_test_fail_printf ("'%s': %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, c->text,
                                bytes, c->bytes);
    }
}

static void
check_invalid (const InvalidCase *c, gboolean ok, guint64 out, const GError *error)
{
    if (ok) {
        g_test_fail_printf ("'%s' was accepted as %" G_GUINT64_FORMAT, c->text, out);
        return;
    }
    if (!g_error_matches (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT)) {
        g_test_fail_printf ("'%s': wrong error %s", c->text,
                            error != NULL ? error->message : "(none)");
        return;
    }
    if (strstr (error->message, c->message) == NULL)
        g_test_fail_printf ("'%s': message '%s' lacks '%s'", c->text, error->message, c->message);
    /* the user must see what was wrong */
    if (*c->text != '\0' && strstr (error->message, c->text) == NULL)
        g_test_fail_printf ("'%s': message '%s' does not name the input", c->text, error->message);
    /* nothing is written on failure */
    if (out != 42)
        g_test_fail_printf ("'%s': output changed on failure", c->text);
}

static void
test_parse_bytes_invalid (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (invalid_bytes); i++) {
        g_autoptr (GError) error = NULL;
        guint64 bytes = 42;
        gboolean ok = vmr_units_parse_bytes (invalid_bytes[i].text, &bytes, &error);

        check_invalid (&invalid_bytes[i], ok, bytes, error);
    }

    /* NULL is handled like empty input */
    {
        g_autoptr (GError) error = NULL;
        guint64 bytes = 42;

        g_assert_false (vmr_units_parse_bytes (NULL, &bytes, &error));
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
    }
}

static void
test_parse_duration_valid (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (valid_durations); i++) {
        const DurationCase *c = &valid_durations[i];
        g_autoptr (GError) error = NULL;
        gint64 usec = -1;

        if (!vmr_units_parse_duration (c->text, &usec, &error)) {
            g_test_fail_printf ("'%s': %s", c->text, error->message);
            continue;
        }
        if (usec != c->usec)
            g_test_fail_printf ("'%s': %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT, c->text,
                                usec, c->usec);
    }
}

static void
test_parse_duration_invalid (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (invalid_durations); i++) {
        g_autoptr (GError) error = NULL;
        gint64 usec = 42;
        gboolean ok = vmr_units_parse_duration (invalid_durations[i].text, &usec, &error);

        check_invalid (&invalid_durations[i], ok, (guint64) usec, error);
    }
}

typedef struct {
    guint64 bytes;
    const gchar *text;
} FormatBytesCase;

static const FormatBytesCase format_bytes_cases[] = {
    { 0, "0 B" },
    { 17, "17 B" },
    { 1023, "1023 B" },
    { 1024, "1 KiB" },
    { 1536, "1.5 KiB" },
    { 512 * 1024, "512 KiB" },
    { 1047961, "1023 KiB" },
    { 1048166, "1 MiB" }, /* not "1024 KiB" */
    { 1048575, "1 MiB" },
    { 104816558, "100 MiB" }, /* 99.96 MiB */
    { 1536 * 1024 * 1024, "1.5 GiB" },
    { G_GUINT64_CONSTANT (107374182400), "100 GiB" },
    { G_GUINT64_CONSTANT (10995116277760), "10 TiB" },
    { G_GUINT64_CONSTANT (1125899906842624), "1 PiB" },
    { G_MAXUINT64, "16384 PiB" },
};

static void
test_format_bytes (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (format_bytes_cases); i++) {
        const FormatBytesCase *c = &format_bytes_cases[i];
        g_autofree gchar *text = vmr_units_format_bytes (c->bytes);

        if (g_strcmp0 (text, c->text) != 0)
            g_test_fail_printf ("%" G_GUINT64_FORMAT ": '%s', expected '%s'", c->bytes, text,
                                c->text);
    }
}

typedef struct {
    gint64 usec;
    const gchar *text;
} FormatDurationCase;

static const FormatDurationCase format_duration_cases[] = {
    { 0, "0s" },
    { -5 * G_USEC_PER_SEC, "0s" },
    { G_MININT64, "0s" },
    { 40000, "0s" },
    { 400000, "0.4s" },
    { 7 * G_USEC_PER_SEC, "7s" },
    { 7040000, "7s" },
    { 7050000, "7.1s" },
    { 9960000, "10s" },
    { 59 * G_USEC_PER_SEC, "59s" },
    { 59600000, "1m00s" },
    { 125 * G_USEC_PER_SEC, "2m05s" },
    { G_GINT64_CONSTANT (3599000000), "59m59s" },
    { G_GINT64_CONSTANT (3600000000), "1h00m" },
    { G_GINT64_CONSTANT (3720000000), "1h02m" },
    { G_GINT64_CONSTANT (86400000000), "24h00m" },
    { G_MAXINT64, "2562047788h00m" },
};

static void
test_format_duration (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (format_duration_cases); i++) {
        const FormatDurationCase *c = &format_duration_cases[i];
        g_autofree gchar *text = vmr_units_format_duration (c->usec);

        if (g_strcmp0 (text, c->text) != 0)
            g_test_fail_printf ("%" G_GINT64_FORMAT ": '%s', expected '%s'", c->usec, text,
                                c->text);
    }
}

static void
test_format_speed (void)
{
    g_autofree gchar *unlimited = vmr_units_format_speed (0);
    g_autofree gchar *capped = vmr_units_format_speed (126 * 1024 * 1024);
    g_autofree gchar *slow = vmr_units_format_speed (1536);

    g_assert_cmpstr (unlimited, ==, "unlimited");
    g_assert_cmpstr (capped, ==, "126 MiB/s");
    g_assert_cmpstr (slow, ==, "1.5 KiB/s");
}

/* what is printed can be typed back in */
static void
test_format_parse_round_trip (void)
{
    static const guint64 sizes[] = { 0, 17, 1024, 512 * 1024, 1536 * 1024 * 1024 };

    for (gsize i = 0; i < G_N_ELEMENTS (sizes); i++) {
        g_autofree gchar *text = vmr_units_format_bytes (sizes[i]);
        g_autoptr (GError) error = NULL;
        guint64 bytes = 0;

        g_assert_true (vmr_units_parse_bytes (text, &bytes, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (bytes, ==, sizes[i]);
    }
}

/* the median: the middle value, or the mean of the middle two; a spike does not move it */
static void
test_median (void)
{
    gdouble odd[] = { 120, 118, 204, 119, 121 };
    gdouble even[] = { 4, 1, 3, 2 };
    gdouble one[] = { 7 };

    g_assert_cmpfloat (vmr_median (odd, G_N_ELEMENTS (odd)), ==, 120);
    /* sorted in place */
    g_assert_cmpfloat (odd[0], ==, 118);
    g_assert_cmpfloat (odd[4], ==, 204);
    g_assert_cmpfloat (vmr_median (even, G_N_ELEMENTS (even)), ==, 2.5);
    g_assert_cmpfloat (vmr_median (one, 1), ==, 7);
    g_assert_cmpfloat (vmr_median (NULL, 0), ==, 0);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/units/parse-bytes/valid", test_parse_bytes_valid);
    g_test_add_func ("/units/parse-bytes/invalid", test_parse_bytes_invalid);
    g_test_add_func ("/units/parse-duration/valid", test_parse_duration_valid);
    g_test_add_func ("/units/parse-duration/invalid", test_parse_duration_invalid);
    g_test_add_func ("/units/format-bytes", test_format_bytes);
    g_test_add_func ("/units/format-duration", test_format_duration);
    g_test_add_func ("/units/format-speed", test_format_speed);
    g_test_add_func ("/units/format-parse-round-trip", test_format_parse_round_trip);
    g_test_add_func ("/units/median", test_median);
    return g_test_run ();
}
