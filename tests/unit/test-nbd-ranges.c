/* the range lists and the chunk planning of a comparison (nbd/nbd-ranges.h) */

#include <stdio.h>
#include <string.h>

#include "nbd-ranges.h"

/* a list from "offset+length" pairs, e.g. "0+10 20+5" */
static VmrRangeList *
parse_list (const gchar *text)
{
    VmrRangeList *list = vmr_range_list_new ();
    g_auto (GStrv) items = g_strsplit (text, " ", -1);

    for (guint i = 0; items[i] != NULL; i++) {
        guint64 offset;
        guint64 length;

        if (items[i][0] == '\0')
            continue;
        g_assert_cmpint (
            sscanf (items[i], "%" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT, &offset, &length), ==, 2);
        vmr_range_list_add (list, offset, length);
    }
    return list;
}

static gchar *
format_list (const GArray *list)
{
    return vmr_range_list_describe (list, G_MAXUINT);
}

typedef struct {
    const gchar *name;
    const gchar *added; /* in the order given */
    const gchar *expected;
} AddCase;

static const AddCase add_cases[] = {
    { "empty", "", "" },
    { "zero-length", "5+0", "" },
    { "apart", "0+10 20+5", "0+10, 20+5" },
    { "out-of-order", "20+5 0+10", "0+10, 20+5" },
    { "touching", "0+10 10+5", "0+15" },
    { "overlapping", "0+10 5+10", "0+15" },
    { "inside", "0+100 10+5", "0+100" },
    { "covering", "10+5 30+5 0+100", "0+100" },
    { "bridging", "0+10 20+10 5+20", "0+30" },
    { "between", "0+10 40+10 20+5", "0+10, 20+5, 40+10" },
};

static void
test_add (gconstpointer data)
{
    const AddCase *c = data;
    g_autoptr (GArray) list = parse_list (c->added);
    g_autofree gchar *text = format_list (list);

    g_assert_cmpstr (text, ==, c->expected);
}

typedef struct {
    const gchar *name;
    const gchar *a;
    const gchar *b;
    const gchar *subtracted; /* a - b */
    const gchar *intersected;
} SetCase;

static const SetCase set_cases[] = {
    { "empty-b", "0+10", "", "0+10", "" },
    { "empty-a", "", "0+10", "", "" },
    { "disjoint", "0+10", "20+10", "0+10", "" },
    { "hole-in-middle", "0+100", "40+10", "0+40, 50+50", "40+10" },
    { "head-and-tail", "10+20", "0+15 25+10", "15+10", "10+5, 25+5" },
    { "all-gone", "10+20", "0+100", "", "10+20" },
    { "several", "0+10 20+10 40+10", "5+20 45+100", "0+5, 25+5, 40+5", "5+5, 20+5, 45+5" },
    { "touching-only", "0+10", "10+10", "0+10", "" },
};

static void
test_sets (gconstpointer data)
{
    const SetCase *c = data;
    g_autoptr (GArray) a = parse_list (c->a);
    g_autoptr (GArray) b = parse_list (c->b);
    g_autoptr (GArray) diff = vmr_range_list_subtract (a, b);
    g_autoptr (GArray) inter = vmr_range_list_intersect (a, b);
    g_autofree gchar *diff_text = format_list (diff);
    g_autofree gchar *inter_text = format_list (inter);

    g_assert_cmpstr (diff_text, ==, c->subtracted);
    g_assert_cmpstr (inter_text, ==, c->intersected);
    /* the two parts make up a again */
    g_assert_cmpuint (vmr_range_list_total (diff) + vmr_range_list_total (inter), ==,
                      vmr_range_list_total (a));
}

typedef struct {
    const gchar *name;
    const gchar *list;
    guint64 offset;
    guint64 length;
    gboolean overlaps;
} OverlapCase;

static const OverlapCase overlap_cases[] = {
    { "empty", "", 0, 10, FALSE },
    { "inside", "10+10", 12, 2, TRUE },
    { "ends-at-start", "10+10", 0, 10, FALSE },
    { "starts-at-end", "10+10", 20, 5, FALSE },
    { "last-byte", "10+10", 19, 1, TRUE },
    { "spanning", "10+10 30+10", 15, 20, TRUE },
    { "in-gap", "10+10 30+10", 20, 10, FALSE },
    { "zero-length", "10+10", 12, 0, FALSE },
};

static void
test_overlaps (gconstpointer data)
{
    const OverlapCase *c = data;
    g_autoptr (GArray) list = parse_list (c->list);

    g_assert_cmpint (vmr_range_list_overlaps (list, c->offset, c->length), ==, c->overlaps);
}

typedef struct {
    const gchar *name;
    const gchar *list;
    guint64 chunk_size;
    const gchar *chunks;
} ChunkCase;

static const ChunkCase chunk_cases[] = {
    { "empty", "", 4, "" },
    { "short", "1+2", 4, "1+2" },
    { "aligned", "0+8", 4, "0+4, 4+4" },
    { "unaligned", "3+7", 4, "3+1, 4+4, 8+2" },
    { "several", "0+2 6+4", 4, "0+2, 6+2, 8+2" },
    { "large", "0+10485760", 4194304, "0+4194304, 4194304+4194304, 8388608+2097152" },
};

static void
test_chunks (gconstpointer data)
{
    const ChunkCase *c = data;
    g_autoptr (GArray) list = parse_list (c->list);
    g_autoptr (GArray) chunks = vmr_range_list_plan_chunks (list, c->chunk_size);
    g_autofree gchar *text = format_list (chunks);
    guint64 total = 0;

    g_assert_cmpstr (text, ==, c->chunks);
    for (guint i = 0; i < chunks->len; i++) {
        const VmrRange *r = &g_array_index (chunks, VmrRange, i);

        /* no chunk crosses a multiple of the chunk size */
        g_assert_cmpuint (r->offset / c->chunk_size, ==,
                          (r->offset + r->length - 1) / c->chunk_size);
        total += r->length;
    }
    g_assert_cmpuint (total, ==, vmr_range_list_total (list));
}

typedef struct {
    const gchar *name;
    guint64 offset;      /* of the buffers on the disk */
    gsize length;        /* of the buffers */
    const gsize *flips;  /* offsets in the buffers where b differs, -1 ends */
    guint64 granularity; /* of the report */
    const gchar *ranges;
    guint64 differing;
} DiffCase;

static const gsize no_flips[] = { (gsize) -1 };
static const gsize one_flip[] = { 5000, (gsize) -1 };
static const gsize two_granules[] = { 0, 4095, 8192, (gsize) -1 };
static const gsize edge_flips[] = { 0, 4200, (gsize) -1 };

static const DiffCase diff_cases[] = {
    { "same", 0, 16384, no_flips, 4096, "", 0 },
    { "one-byte", 0, 16384, one_flip, 4096, "4096+4096", 1 },
    { "granules", 0, 16384, two_granules, 4096, "0+4096, 8192+4096", 3 },
    /* a buffer that starts inside a granule reports only its own part */
    { "unaligned-buffer", 4000, 8200, edge_flips, 4096, "4000+96, 8192+4008", 2 },
    { "disk-offset", 1048576, 16384, one_flip, 4096, "1052672+4096", 1 },
};

static void
test_differences (gconstpointer data)
{
    const DiffCase *c = data;
    g_autofree guint8 *a = g_malloc (c->length);
    g_autofree guint8 *b = NULL;
    g_autoptr (GArray) mismatches = vmr_range_list_new ();
    g_autofree gchar *text = NULL;
    guint64 differing;

    for (gsize i = 0; i < c->length; i++)
        a[i] = (guint8) (i * 7);
    b = g_memdup2 (a, c->length);
    for (guint i = 0; c->flips[i] != (gsize) -1; i++)
        b[c->flips[i]] ^= 0xff;
    differing
        = vmr_range_list_add_differences (mismatches, c->offset, a, b, c->length, c->granularity);
    text = format_list (mismatches);
    g_assert_cmpstr (text, ==, c->ranges);
    g_assert_cmpuint (differing, ==, c->differing);
}

static void
test_describe_limit (void)
{
    g_autoptr (GArray) list = parse_list ("0+1 10+1 20+1 30+1");
    g_autofree gchar *text = vmr_range_list_describe (list, 2);

    g_assert_cmpstr (text, ==, "0+1, 10+1 (2 more)");
}

#define ADD_CASES(prefix, cases, func)                                                             \
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {                                             \
        g_autofree gchar *path = g_strdup_printf ("%s/%s", prefix, cases[i].name);                 \
        g_test_add_data_func (path, &cases[i], func);                                              \
    }

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    ADD_CASES ("/nbd-ranges/add", add_cases, test_add);
    ADD_CASES ("/nbd-ranges/sets", set_cases, test_sets);
    ADD_CASES ("/nbd-ranges/overlaps", overlap_cases, test_overlaps);
    ADD_CASES ("/nbd-ranges/chunks", chunk_cases, test_chunks);
    ADD_CASES ("/nbd-ranges/differences", diff_cases, test_differences);
    g_test_add_func ("/nbd-ranges/describe-limit", test_describe_limit);
    return g_test_run ();
}
