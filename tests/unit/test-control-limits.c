/*
 * How many control connections the daemon takes (control-limits.h): in
 * all, per user other than root, and for those users together (half of
 * all), root always finding room; how long each may stay silent; and the
 * checks of the options.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "control-limits.h"
#include "vmr-error.h"

#define ROOT    0
#define ALICE   1000
#define BOB     1001
#define UNKNOWN (-1)
#define END     (-2)

/* a connection of @uid: taken (refused NULL), or refused with a part of its error */
typedef struct {
    gint64 uid;
    const gchar *refused;
} Step;

typedef struct {
    const gchar *name;
    guint max_clients;
    guint per_user;
    Step steps[12]; /* ended by END */
} LimitCase;

/* clang-format off */
static const LimitCase cases[] = {
    { "a user up to their share, then refused; the others still taken", 8, 2,
      { { ALICE, NULL }, { ALICE, NULL }, { ALICE, "uid 1000 holds 2 connections already" },
        { BOB, NULL }, { ROOT, NULL }, { UNKNOWN, NULL }, { END, NULL } } },
    { "the other users together hold half, root the rest", 8, 3,
      { { ALICE, NULL }, { ALICE, NULL }, { ALICE, NULL }, { BOB, NULL },
        { BOB, "users other than root hold 4 connections already" },
        { UNKNOWN, "users other than root hold 4" },
        { ROOT, NULL }, { ROOT, NULL }, { ROOT, NULL }, { ROOT, NULL },
        { ROOT, "the daemon holds 8 connections already" }, { END, NULL } } },
    { "root has no share of its own, only the whole", 4, 1,
      { { ROOT, NULL }, { ROOT, NULL }, { ROOT, NULL }, { ROOT, NULL },
        { ALICE, "the daemon holds 4" }, { END, NULL } } },
    { "a user the kernel did not name is one other than root", 4, 1,
      { { UNKNOWN, NULL }, { UNKNOWN, "uid -1 holds 1 connections already" }, { ALICE, NULL },
        { BOB, "users other than root hold 2" }, { ROOT, NULL }, { END, NULL } } },
};
/* clang-format on */

static void
test_limits_admit (void)
{
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
        const LimitCase *c = &cases[i];
        VmrControlLimits limits = { c->max_clients, c->per_user, 60 };
        g_autoptr (VmrControlClients) clients = vmr_control_clients_new (&limits, ROOT);
        guint taken = 0;

        g_test_message ("%s", c->name);
        for (const Step *step = c->steps; step->uid != END; step++) {
            g_autoptr (GError) error = NULL;
            gboolean admitted = vmr_control_clients_admit (clients, step->uid, &error);

            if (step->refused == NULL) {
                g_assert_no_error (error);
                g_assert_true (admitted);
                taken++;
            } else {
                g_assert_false (admitted);
                g_assert_error (error, VMR_ERROR, VMR_ERROR_BUSY);
                g_assert_nonnull (strstr (error->message, step->refused));
                g_assert_null (strchr (error->message, '\n'));
            }
            g_assert_cmpuint (vmr_control_clients_total (clients), ==, taken);
        }
    }
}

/* a connection that closes gives its place back: to its user and to the whole */
static void
test_limits_release (void)
{
    VmrControlLimits limits = { 4, 1, 60 };
    g_autoptr (VmrControlClients) clients = vmr_control_clients_new (&limits, ROOT);

    g_assert_true (vmr_control_clients_admit (clients, ALICE, NULL));
    g_assert_false (vmr_control_clients_admit (clients, ALICE, NULL));
    vmr_control_clients_release (clients, ALICE);
    g_assert_cmpuint (vmr_control_clients_count (clients, ALICE), ==, 0);
    g_assert_true (vmr_control_clients_admit (clients, ALICE, NULL));
    g_assert_true (vmr_control_clients_admit (clients, BOB, NULL));
    for (guint i = 0; i < 2; i++)
        g_assert_true (vmr_control_clients_admit (clients, ROOT, NULL));
    g_assert_false (vmr_control_clients_admit (clients, ROOT, NULL));
    vmr_control_clients_release (clients, BOB);
    g_assert_true (vmr_control_clients_admit (clients, ROOT, NULL));
    g_assert_cmpuint (vmr_control_clients_count (clients, ROOT), ==, 3);
    g_assert_cmpuint (vmr_control_clients_total (clients), ==, 4);
}

/* root's clients may follow a job for hours; the others are cut off when silent */
static void
test_limits_idle_timeout (void)
{
    VmrControlLimits limits;
    g_autoptr (VmrControlClients) clients = NULL;

    vmr_control_limits_init (&limits);
    clients = vmr_control_clients_new (&limits, ROOT);
    g_assert_cmpuint (vmr_control_clients_idle_timeout (clients, ROOT), ==, 0);
    g_assert_cmpuint (vmr_control_clients_idle_timeout (clients, ALICE), ==,
                      VMR_CONTROL_DEFAULT_IDLE_TIMEOUT_S);
    g_assert_cmpuint (vmr_control_clients_idle_timeout (clients, UNKNOWN), ==,
                      VMR_CONTROL_DEFAULT_IDLE_TIMEOUT_S);
}

static void
test_limits_check (void)
{
    static const struct {
        VmrControlLimits limits;
        guint64 max_files;
        const gchar *refused; /* NULL: taken */
    } checks[] = {
        { { VMR_CONTROL_DEFAULT_MAX_CLIENTS, VMR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER, 600 },
          8192,
          NULL },
        { { 4096, 32, 600 }, 8192, NULL },
        { { 4097, 32, 600 }, 8192, "--max-clients 4097 is more than half of the 8192 files" },
        { { 100000, 32, 600 }, 0, NULL },
        { { 1, 1, 600 }, 8192, "--max-clients must be at least 2" },
        { { 2, 0, 600 }, 8192, "--max-clients-per-user must be at least 1" },
        { { 2, 1, 0 }, 8192, NULL },
    };

    for (gsize i = 0; i < G_N_ELEMENTS (checks); i++) {
        g_autoptr (GError) error = NULL;
        gboolean taken = vmr_control_limits_check (&checks[i].limits, checks[i].max_files, &error);

        if (checks[i].refused == NULL) {
            g_assert_no_error (error);
            g_assert_true (taken);
            continue;
        }
        g_assert_false (taken);
        g_assert_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT);
        g_assert_nonnull (strstr (error->message, checks[i].refused));
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/control-limits/admit", test_limits_admit);
    g_test_add_func ("/control-limits/release", test_limits_release);
    g_test_add_func ("/control-limits/idle-timeout", test_limits_idle_timeout);
    g_test_add_func ("/control-limits/check", test_limits_check);
    return g_test_run ();
}
