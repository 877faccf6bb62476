/*
 * Whether a copy converges: a shrinking backlog does, a steady or growing
 * one over converge-after does not, with and without noise.
 */
#define G_LOG_DOMAIN "vmr-test"

#include "convergence.h"

#define MIB    (G_GUINT64_CONSTANT (1) << 20)
#define SECOND G_USEC_PER_SEC

typedef struct {
    const gchar *name;
    guint n_samples;   /* one a second */
    gdouble start_mib; /* the backlog at the first sample */
    gdouble slope_mib; /* MiB/s, < 0 shrinking */
    gdouble noise_mib; /* each sample off by up to this, either way */
    gint converge_after_s;
    VmrConvergence expected;
} ConvergenceCase;

static const ConvergenceCase cases[] = {
    { "a shrinking backlog converges", 60, 2048, -20, 0, 30, VMR_CONVERGENCE_SHRINKING },
    { "a slowly shrinking backlog converges", 60, 2048, -0.5, 0, 30, VMR_CONVERGENCE_SHRINKING },
    { "a steady backlog does not", 60, 512, 0, 0, 30, VMR_CONVERGENCE_STALLED },
    { "a growing backlog does not", 60, 512, 4, 0, 30, VMR_CONVERGENCE_STALLED },
    { "a noisy steady backlog does not", 120, 512, 0, 64, 60, VMR_CONVERGENCE_STALLED },
    { "a noisy growing backlog does not", 120, 512, 1, 64, 60, VMR_CONVERGENCE_STALLED },
    { "a noisy shrinking backlog converges", 120, 2048, -10, 64, 60, VMR_CONVERGENCE_SHRINKING },
    { "a trend within the noise is no trend", 120, 512, -0.2, 64, 60, VMR_CONVERGENCE_STALLED },
    { "fewer samples than converge-after: unknown", 20, 512, 0, 0, 30, VMR_CONVERGENCE_UNKNOWN },
    { "one sample: unknown", 1, 512, 0, 0, 0, VMR_CONVERGENCE_UNKNOWN },
};

static GArray *
backlog_new (const ConvergenceCase *tc, GRand *rand)
{
    GArray *samples = g_array_new (FALSE, FALSE, sizeof (VmrBacklogSample));

    for (guint i = 0; i < tc->n_samples; i++) {
        gdouble noise
            = tc->noise_mib != 0 ? g_rand_double_range (rand, -tc->noise_mib, tc->noise_mib) : 0;
        gdouble backlog = MAX (tc->start_mib + tc->slope_mib * i + noise, 0);
        VmrBacklogSample sample = { (gint64) i * SECOND, (guint64) (backlog * MIB) };

        g_array_append_val (samples, sample);
    }
    return samples;
}

static void
test_case (gconstpointer data)
{
    const ConvergenceCase *tc = data;
    /* several seeds: the verdict must not hang on one draw of the noise */
    guint seeds = tc->noise_mib != 0 ? 20 : 1;
    guint right = 0;

    for (guint seed = 0; seed < seeds; seed++) {
        g_autoptr (GRand) rand = g_rand_new_with_seed (seed + 1);
        g_autoptr (GArray) samples = backlog_new (tc, rand);
        gdouble slope = 1;
        VmrConvergence got
            = vmr_convergence_check ((const VmrBacklogSample *) (gpointer) samples->data,
                                     samples->len, (gint64) tc->converge_after_s * SECOND, &slope);

        g_test_message ("seed %u: %s, slope %.2f MiB/s", seed + 1, vmr_convergence_to_string (got),
                        slope / MIB);
        right += got == tc->expected;
        if (tc->noise_mib == 0 && tc->expected != VMR_CONVERGENCE_UNKNOWN)
            g_assert_cmpfloat_with_epsilon (slope / MIB, tc->slope_mib, 1e-6);
        if (tc->expected == VMR_CONVERGENCE_UNKNOWN)
            g_assert_cmpfloat (slope, ==, 0);
    }
    /* a test at two standard errors may miss once in forty draws */
    g_assert_cmpuint (right, >=, seeds - seeds / 10);
}

/* the window is the last converge-after: a backlog that shrank, then stalled, does not converge */
static void
test_window (void)
{
    g_autoptr (GArray) samples = g_array_new (FALSE, FALSE, sizeof (VmrBacklogSample));
    gdouble slope;

    for (guint i = 0; i < 90; i++) {
        guint64 backlog = i < 60 ? (2048 - 30 * i) * MIB : 248 * MIB;
        VmrBacklogSample sample = { (gint64) i * SECOND, backlog };

        g_array_append_val (samples, sample);
    }
    g_assert_cmpint (vmr_convergence_check ((const VmrBacklogSample *) (gpointer) samples->data,
                                            samples->len, 25 * SECOND, &slope),
                     ==, VMR_CONVERGENCE_STALLED);
    g_assert_cmpfloat (slope, ==, 0);
    /* over 60 s the shrinking part is in the window */
    g_assert_cmpint (vmr_convergence_check ((const VmrBacklogSample *) (gpointer) samples->data,
                                            samples->len, 60 * SECOND, &slope),
                     ==, VMR_CONVERGENCE_SHRINKING);
    g_assert_cmpfloat (slope, <, 0);
    g_assert_cmpint (vmr_convergence_check (NULL, 0, SECOND, NULL), ==, VMR_CONVERGENCE_UNKNOWN);
    g_assert_cmpstr (vmr_convergence_to_string (VMR_CONVERGENCE_STALLED), ==, "stalled");
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
        g_autofree gchar *path = g_strdup_printf ("/convergence/%s", cases[i].name);

        g_test_add_data_func (path, &cases[i], test_case);
    }
    g_test_add_func ("/convergence/window", test_window);
    return g_test_run ();
}
