/*
 * Admission: which waiting jobs the limits on running copies let start,
 * which limit holds the others, and the order they start in.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "admission.h"

/* limits of a job's rule: host, per-iothread, per-domain, per-destination */
#define LIMITS(host, iothread, domain, destination)                                                \
    {                                                                                              \
        host, iothread, domain, destination                                                        \
    }

typedef struct {
    const gchar *domain;   /* NULL ends a list */
    const gchar *iothread; /* several: "io0,io1" */
    const gchar *destination;
    guint64 limits[VMR_LIMIT_LAST];
    const gchar *expected; /* for a waiting job: "start" or the key that holds it */
    const gchar *reason;   /* a part of the reason, NULL to leave it unchecked */
} CopyCase;

typedef struct {
    const gchar *name;
    CopyCase running[4];
    CopyCase waiting[6]; /* oldest first */
} AdmissionCase;

static const AdmissionCase cases[] = {
    { "max-parallel counts every copy of the host",
      { { NULL } },
      { { "web01", "io0", "/a", LIMITS (2, 0, 0, 0), "start", NULL },
        { "web02", "io0", "/b", LIMITS (2, 0, 0, 0), "start", NULL },
        { "web03", "io0", "/c", LIMITS (2, 0, 0, 0), "max-parallel",
          "held by max-parallel (2 copies on this host)" } } },
    { "running copies fill the host",
      { { "db01", NULL, "/a", LIMITS (2, 0, 0, 0) }, { "db02", NULL, "/a", LIMITS (2, 0, 0, 0) } },
      { { "web01", "io0", "/b", LIMITS (2, 0, 0, 0), "max-parallel", "2 copies on this host" },
        { "web02", "io0", "/b", LIMITS (2, 0, 0, 0), "max-parallel", NULL } } },
    { "an I/O thread is one of one QEMU; no I/O thread is the main loop",
      { { "web01", "io0", "/a", LIMITS (0, 1, 0, 0) } },
      { { "web01", "io0", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "held by max-parallel-per-iothread (1 copy on io0 of web01)" },
        { "web01", "io1", "/a", LIMITS (0, 1, 0, 0), "start", NULL },
        { "web02", "io0", "/a", LIMITS (0, 1, 0, 0), "start", NULL },
        { "web01", NULL, "/a", LIMITS (0, 1, 0, 0), "start", NULL },
        { "web01", NULL, "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "1 copy on main-loop of web01" } } },
    { "a job held by its domain's limit does not hold other domains",
      { { NULL } },
      { { "web01", "io0", "/a", LIMITS (0, 0, 1, 0), "start", NULL },
        { "web01", "io1", "/a", LIMITS (0, 0, 1, 0), "max-parallel-per-domain",
          "held by max-parallel-per-domain (1 copy of web01)" },
        { "web02", "io0", "/a", LIMITS (0, 0, 1, 0), "start", NULL } } },
    { "first in line: a later job of the same group waits even if its rule allows more",
      { { "web01", "io0", "/a", LIMITS (0, 1, 0, 0) } },
      { { "web01", "io0", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread", NULL },
        { "web01", "io0", "/b", LIMITS (0, 2, 0, 0), "max-parallel-per-iothread",
          "held by max-parallel-per-iothread (behind an older job on io0 of web01)" },
        { "web01", "io1", "/b", LIMITS (0, 2, 0, 0), "start", NULL } } },
    { "the host limit is first in line for every job",
      { { "db01", NULL, "/a", LIMITS (1, 0, 0, 0) } },
      { { "web01", "io0", "/a", LIMITS (1, 0, 0, 0), "max-parallel", NULL },
        { "web02", "io0", "/a", LIMITS (5, 0, 0, 0), "max-parallel", "behind an older job" } } },
    { "a destination directory or device",
      { { "db01", NULL, "/srv/fast", LIMITS (0, 0, 0, 1) } },
      { { "web01", "io0", "/srv/fast", LIMITS (0, 0, 0, 1), "max-parallel-per-destination",
          "held by max-parallel-per-destination (1 copy to /srv/fast)" },
        { "web02", "io0", "/dev/sdc", LIMITS (0, 0, 0, 1), "start", NULL },
        { "web03", "io0", "/dev/sdc", LIMITS (0, 0, 0, 1), "max-parallel-per-destination",
          NULL } } },
    { "0 is no limit",
      { { "web01", "io0", "/a", LIMITS (0, 0, 0, 0) },
        { "web01", "io0", "/a", LIMITS (0, 0, 0, 0) } },
      { { "web01", "io0", "/a", LIMITS (0, 0, 0, 0), "start", NULL },
        { "web01", "io0", "/a", LIMITS (0, 0, 0, 0), "start", NULL },
        { "web01", "io0", "/a", LIMITS (0, 0, 0, 0), "start", NULL } } },
    { "a job a domain holds takes no host slot",
      { { NULL } },
      { { "web01", "io0", "/a", LIMITS (2, 0, 1, 0), "start", NULL },
        { "web01", "io1", "/a", LIMITS (2, 0, 1, 0), "max-parallel-per-domain", NULL },
        { "web02", "io0", "/a", LIMITS (2, 0, 1, 0), "start", NULL },
        { "web03", "io0", "/a", LIMITS (2, 0, 1, 0), "max-parallel", NULL } } },
    { "a disk on several I/O threads counts against each of them",
      { { "web01", "io0,io1", "/a", LIMITS (0, 1, 0, 0) } },
      { { "web01", "io1", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "held by max-parallel-per-iothread (1 copy on io1 of web01)" },
        { "web01", "io2", "/a", LIMITS (0, 1, 0, 0), "start", NULL },
        { "web01", "io3,io0", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "1 copy on io0 of web01" } } },
    { "a disk on several I/O threads starts only when each has a slot, first in line on each",
      { { "web01", "io1", "/a", LIMITS (0, 1, 0, 0) } },
      { { "web01", "io0,io1", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "1 copy on io1 of web01" },
        { "web01", "io0", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "behind an older job on io0 of web01" },
        { "web01", "io2,io3", "/a", LIMITS (0, 1, 0, 0), "start", NULL },
        { "web01", "io3", "/a", LIMITS (0, 1, 0, 0), "max-parallel-per-iothread",
          "1 copy on io3 of web01" } } },
    { "the first limit in order names the hold",
      { { "web01", "io0", "/a", LIMITS (1, 1, 1, 1) } },
      { { "web01", "io0", "/a", LIMITS (1, 1, 1, 1), "max-parallel", NULL } } },
};

/* @threads keeps the I/O thread list alive as long as @copy */
static void
fill_copy (VmrAdmissionCopy *copy, const CopyCase *c, GStrv *threads)
{
    g_clear_pointer (threads, g_strfreev);
    if (c->iothread != NULL)
        *threads = g_strsplit (c->iothread, ",", -1);
    copy->domain = c->domain;
    copy->iothreads = (const gchar *const *) *threads;
    copy->destination = c->destination;
    for (guint l = 0; l < VMR_LIMIT_LAST; l++)
        copy->limits[l] = c->limits[l];
}

static void
test_admission_table (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        const AdmissionCase *c = &cases[i];
        g_autoptr (VmrAdmission) admission = vmr_admission_new ();

        g_test_message ("%s", c->name);
        for (guint r = 0; r < G_N_ELEMENTS (c->running) && c->running[r].domain != NULL; r++) {
            VmrAdmissionCopy copy = { 0 };
            g_auto (GStrv) threads = NULL;

            fill_copy (&copy, &c->running[r], &threads);
            vmr_admission_add_running (admission, &copy);
        }
        for (guint w = 0; w < G_N_ELEMENTS (c->waiting) && c->waiting[w].domain != NULL; w++) {
            const CopyCase *x = &c->waiting[w];
            VmrAdmissionCopy copy = { 0 };
            g_auto (GStrv) threads = NULL;
            g_autofree gchar *reason = NULL;
            VmrLimit limit;

            fill_copy (&copy, x, &threads);
            limit = vmr_admission_check (admission, &copy, &reason);
            g_test_message ("  %u: %s", w, reason != NULL ? reason : "start");
            if (limit == VMR_LIMIT_LAST) {
                g_assert_cmpstr ("start", ==, x->expected);
                g_assert_null (reason);
                /* every job the limits let go starts here */
                vmr_admission_add_running (admission, &copy);
                continue;
            }
            g_assert_cmpstr (vmr_policy_key_name (VMR_POLICY_KEY_OF_LIMIT (limit)), ==,
                             x->expected);
            g_assert_nonnull (reason);
            if (x->reason != NULL && strstr (reason, x->reason) == NULL)
                g_error ("%s: reason '%s' lacks '%s'", c->name, reason, x->reason);
        }
    }
}

/* the reason is optional; holding still queues the job first in line */
static void
test_admission_no_reason (void)
{
    g_autoptr (VmrAdmission) admission = vmr_admission_new ();
    const gchar *const io0[] = { "io0", NULL };
    VmrAdmissionCopy copy = { "web01", io0, "/a", LIMITS (1, 0, 0, 0) };

    g_assert_cmpint (vmr_admission_check (admission, &copy, NULL), ==, VMR_LIMIT_LAST);
    vmr_admission_add_running (admission, &copy);
    g_assert_cmpint (vmr_admission_check (admission, &copy, NULL), ==, VMR_LIMIT_HOST);
    g_assert_cmpint (vmr_admission_check (admission, &copy, NULL), ==, VMR_LIMIT_HOST);
    /* a job whose rule sets no such limit is not behind the ones it holds */
    copy.limits[VMR_LIMIT_HOST] = 0;
    g_assert_cmpint (vmr_admission_check (admission, &copy, NULL), ==, VMR_LIMIT_LAST);
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/admission/table", test_admission_table);
    g_test_add_func ("/admission/no-reason", test_admission_no_reason);
    return g_test_run ();
}
