/*
 * The patterns of allowed-destinations: which paths and NBD URIs each one
 * matches, the patterns that are refused, and the directory whose links a
 * caller resolves.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "destination-pattern.h"
#include <string.h>

#include "vmr-error.h"

typedef struct {
    const gchar *pattern;
    const gchar *location;
    gboolean matches;
} MatchCase;

static const MatchCase match_cases[] = {
    /* '*' stays within its component */
    { "/srv/vm/*", "/srv/vm/web01.raw", TRUE },
    { "/srv/vm/*", "/srv/vm/web/01.raw", FALSE },
    { "/srv/vm/*", "/srv/vm", FALSE },
    { "/srv/vm/*", "/srv/vmx/web01.raw", FALSE },
    { "/srv/vm/*.raw", "/srv/vm/web01.raw", TRUE },
    { "/srv/vm/*.raw", "/srv/vm/web01.qcow2", FALSE },
    { "/srv/vm*/*", "/srv/vm2/a", TRUE },
    /* '**' is any number of components */
    { "/srv/vm/**", "/srv/vm/web01.raw", TRUE },
    { "/srv/vm/**", "/srv/vm/a/b/c.raw", TRUE },
    { "/srv/vm/**", "/srv/other/a.raw", FALSE },
    { "/srv/vm/**", "/srv/vmx/a.raw", FALSE },
    { "/srv/**/new/*", "/srv/new/a", TRUE },
    { "/srv/**/new/*", "/srv/x/y/new/a", TRUE },
    { "/srv/**/new/*", "/srv/x/y/old/a", FALSE },
    { "/**", "/etc/passwd", TRUE },
    /* '?' and classes */
    { "/dev/vg?/*", "/dev/vg0/web01", TRUE },
    { "/dev/vg?/*", "/dev/vg10/web01", FALSE },
    { "/dev/sd[b-d]", "/dev/sdc", TRUE },
    { "/dev/sd[b-d]", "/dev/sda", FALSE },
    /* a literal pattern is one path */
    { "/srv/vm/web01.raw", "/srv/vm/web01.raw", TRUE },
    { "/srv/vm/web01.raw", "/srv/vm/web01.raw2", FALSE },
    /* paths and URIs do not mix */
    { "/srv/**", "nbd://store:10809/web01", FALSE },
    { "nbd://store:10809/*", "/srv/web01", FALSE },
    /* NBD URIs, in canonical form */
    { "nbd://store:10809/*", "nbd://store:10809/web01", TRUE },
    { "nbd://store:10809/*", "nbd://store:10810/web01", FALSE },
    { "nbd://store:10809/*", "nbd://evil:10809/web01", FALSE },
    { "nbd://store:10809/*", "nbds://store:10809/web01", FALSE },
    { "nbd*://store:10809/*", "nbds://store:10809/web01", TRUE },
    { "nbd://store:10809/*", "nbd://store:10809/a/b", FALSE },
    { "nbd://store:10809/**", "nbd://store:10809/a/b", TRUE },
    { "nbd://store:*/*", "nbd://store:10810/web01", TRUE },
    { "nbd://*.example:10809/*", "nbd://s1.example:10809/web01", TRUE },
    { "nbd+unix:///*?socket=/run/nbd/*.sock", "nbd+unix:///web01?socket=/run/nbd/a.sock", TRUE },
    { "nbd+unix:///*?socket=/run/nbd/*.sock", "nbd+unix:///web01?socket=/tmp/a.sock", FALSE },
};

static void
test_pattern_match (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (match_cases); i++) {
        const MatchCase *c = &match_cases[i];

        g_test_message ("%s against %s", c->pattern, c->location);
        g_assert_cmpint (vmr_destination_pattern_match (c->pattern, c->location), ==, c->matches);
    }
    g_assert_false (vmr_destination_pattern_match (NULL, "/srv/a"));
    g_assert_false (vmr_destination_pattern_match ("/srv/*", NULL));
}

typedef struct {
    const gchar *text;
    const gchar *parsed; /* NULL: refused */
    const gchar *error;  /* part of the message when refused */
} ParseCase;

static const ParseCase parse_cases[] = {
    { "/srv/vm/**", "/srv/vm/**", NULL },
    { "/dev/vg0/*", "/dev/vg0/*", NULL },
    { "nbd://store/*", "nbd://store:10809/*", NULL },
    { "nbds://store/", "nbds://store:10809/", NULL },
    { "nbd://store", "nbd://store:10809/", NULL },
    { "nbd://store:10900/*", "nbd://store:10900/*", NULL },
    { "nbd://[::1]/*", "nbd://[::1]:10809/*", NULL },
    { "nbd://[::1]:10900/*", "nbd://[::1]:10900/*", NULL },
    { "nbd://store:*/*", "nbd://store:*/*", NULL },
    { "nbd+unix:///*?socket=/run/nbd.sock", "nbd+unix:///*?socket=/run/nbd.sock", NULL },
    { "", NULL, "an empty pattern" },
    { "srv/vm/*", NULL, "neither an absolute path nor an NBD URI" },
    { "*", NULL, "neither an absolute path nor an NBD URI" },
    { "/srv/vm/../etc/*", NULL, "has a '..' component" },
    { "/srv/./vm/*", NULL, "has a '.' component" },
    { "/srv//vm/*", NULL, "an empty component" },
    { "/srv/vm/", NULL, "ends in '/'" },
    { "/", NULL, "ends in '/'" },
    { "http://store/*", NULL, "the scheme must be nbd" },
    { "nbd://", NULL, "names no host" },
};

static void
test_pattern_parse (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (parse_cases); i++) {
        const ParseCase *c = &parse_cases[i];
        g_autoptr (GError) error = NULL;
        g_autofree gchar *parsed = vmr_destination_pattern_parse (c->text, &error);

        g_test_message ("'%s'", c->text);
        if (c->parsed != NULL) {
            g_assert_no_error (error);
            g_assert_cmpstr (parsed, ==, c->parsed);
            continue;
        }
        g_assert_null (parsed);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
        g_assert_nonnull (strstr (error->message, c->error));
        /* one line */
        g_assert_null (strchr (error->message, '\n'));
    }
}

static void
test_pattern_find (void)
{
    const gchar *const patterns[] = { "/srv/vm/*", "/srv/**", "nbd://s:10809/*", NULL };

    g_assert_cmpstr (vmr_destination_patterns_find (patterns, "/srv/vm/a"), ==, "/srv/vm/*");
    g_assert_cmpstr (vmr_destination_patterns_find (patterns, "/srv/x/a"), ==, "/srv/**");
    g_assert_cmpstr (vmr_destination_patterns_find (patterns, "nbd://s:10809/e"), ==,
                     "nbd://s:10809/*");
    g_assert_null (vmr_destination_patterns_find (patterns, "/etc/passwd"));
    g_assert_null (vmr_destination_patterns_find (NULL, "/srv/vm/a"));
}

/* a directory that some pattern reaches inside, or none does */
static void
test_pattern_reach_below (void)
{
    const gchar *const patterns[] = { "/srv/vm/**", "/data/*/img/*.raw", "nbd://s:10809/*", NULL };
    const gchar *const all[] = { "/**", NULL };
    static const struct {
        const gchar *dir;
        gboolean reached;
    } cases[] = {
        { "/srv/vm", TRUE },     { "/srv/vm/a/b", TRUE },
        { "/srv", TRUE },        { "/", TRUE },
        { "/data/x/img", TRUE }, { "/data/x", TRUE },
        { "/srv/vm/", TRUE },    { "/srv/other", FALSE },
        { "/srv/vmx", FALSE },   { "/data/x/img/a", FALSE },
        { "/etc", FALSE },       { "s:10809", FALSE },
    };

    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_test_message ("%s", cases[i].dir);
        g_assert_cmpint (vmr_destination_patterns_reach_below (patterns, cases[i].dir), ==,
                         cases[i].reached);
    }
    g_assert_true (vmr_destination_patterns_reach_below (all, "/etc"));
    g_assert_false (vmr_destination_patterns_reach_below (NULL, "/srv/vm"));
}

static void
test_pattern_literal_dir (void)
{
    static const struct {
        const gchar *pattern;
        const gchar *dir;
    } cases[] = {
        { "/srv/vm/**", "/srv/vm" },
        { "/srv/vm/*.raw", "/srv/vm" },
        { "/srv/vm/web01.raw", "/srv/vm" },
        { "/srv/*/new/*", "/srv" },
        { "/srv*/vm/*", NULL },
        { "/**", NULL },
        { "/web01.raw", NULL },
        { "nbd://s:10809/*", NULL },
    };

    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autofree gchar *dir = vmr_destination_pattern_literal_dir (cases[i].pattern);

        g_test_message ("%s", cases[i].pattern);
        g_assert_cmpstr (dir, ==, cases[i].dir);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/destination-pattern/match", test_pattern_match);
    g_test_add_func ("/destination-pattern/parse", test_pattern_parse);
    g_test_add_func ("/destination-pattern/find", test_pattern_find);
    g_test_add_func ("/destination-pattern/reach-below", test_pattern_reach_below);
    g_test_add_func ("/destination-pattern/literal-dir", test_pattern_literal_dir);
    return g_test_run ();
}
