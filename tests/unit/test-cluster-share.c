/*
 * The split of a storage's budget among the hosts (cluster-share.c) on its
 * own, against a model of etcd: each host decides on its view of the
 * shares, which may be stale; a raise is a transaction that holds only if
 * no share moved since that view; a lower is put once the host's copies use
 * no more. The cases: the equal split, the order of a rebalance (lower
 * first), 1 byte/s per copy while a host waits, a share released when no
 * copy remains, hosts joining and leaving; then generated sequences with
 * the sum of the shares and of the speeds checked after every event.
 */
#define G_LOG_DOMAIN "vmr-test"

#include <string.h>

#include "cluster-share.h"

#define HOSTS 4
#define MIB   (1024 * 1024)

/* a host's key in etcd */
typedef struct {
    gboolean present;
    guint64 share;
    gint64 mod; /* the revision of its last write */
} Key;

typedef struct {
    VmrShareState state;
    Key view[HOSTS]; /* the shares as this host last saw them */
    gint64 view_revision;
    VmrShareAction pending; /* its write on its way */
    guint64 pending_share;
    gint64 pending_revision; /* the view it was computed on */
    guint64 speed;           /* the sum of its copies' speeds set in QEMU */
} Host;

typedef struct {
    guint64 budget;
    Key keys[HOSTS];
    gint64 revision;
    Host hosts[HOSTS];
    GString *log; /* the writes etcd took, in order: "a+0 b-30 ..." */
} Sim;

static void
sim_init (Sim *sim, guint64 budget)
{
    memset (sim, 0, sizeof *sim);
    sim->budget = budget;
    for (guint h = 0; h < HOSTS; h++)
        sim->hosts[h].state.budget = budget;
    sim->log = g_string_new (NULL);
}

static void
sim_clear (Sim *sim)
{
    g_string_free (sim->log, TRUE);
}

static VmrShareOthers
others_of (const Sim *sim, guint h)
{
    VmrShareOthers others = { 0, 0 };

    for (guint o = 0; o < HOSTS; o++) {
        if (o == h || !sim->hosts[h].view[o].present)
            continue;
        others.hosts++;
        others.shares += sim->hosts[h].view[o].share;
    }
    return others;
}

static guint64
usable_of (const Sim *sim, guint h)
{
    VmrShareOthers others = others_of (sim, h);

    return vmr_share_usable (&sim->hosts[h].state, TRUE, &others);
}

/* the watch brings @h etcd's shares, and its own key reconciled as cluster-budget.c does */
static void
sim_watch (Sim *sim, guint h)
{
    Host *host = &sim->hosts[h];

    memcpy (host->view, sim->keys, sizeof host->view);
    host->view_revision = sim->revision;
    if (!host->state.in_flight)
        vmr_share_seen (&host->state, sim->keys[h].present, sim->keys[h].share);
}

/* the engine sets @h's copies to their part of its usable share, and reports what they use */
static void
sim_engine (Sim *sim, guint h)
{
    Host *host = &sim->hosts[h];
    guint64 usable = usable_of (sim, h);

    host->speed
        = host->state.copies == 0
              ? 0
              : host->state.copies * vmr_share_per_copy (usable, host->state.copies, G_MAXUINT64);
    host->state.used = host->speed;
}

/* @h decides its next write; VMR_SHARE_KEEP when none */
static VmrShareAction
sim_step (Sim *sim, guint h)
{
    Host *host = &sim->hosts[h];
    VmrShareOthers others = others_of (sim, h);
    guint64 share = 0;
    VmrShareAction action = vmr_share_next (&host->state, &others, &share);

    if (action == VMR_SHARE_KEEP)
        return action;
    vmr_share_begin (&host->state, action, share);
    host->pending = action;
    host->pending_share = share;
    host->pending_revision = host->view_revision;
    return action;
}

/* no share of the storage written after @revision */
static gboolean
unchanged_since (const Sim *sim, gint64 revision)
{
    for (guint o = 0; o < HOSTS; o++) {
        if (sim->keys[o].mod > revision)
            return FALSE;
    }
    return TRUE;
}

/* etcd takes @h's write, or refuses a raise on a stale view; then its reply. FALSE: none */
static gboolean
sim_apply (Sim *sim, guint h)
{
    Host *host = &sim->hosts[h];
    Key *key = &sim->keys[h];

    if (!host->state.in_flight)
        return FALSE;
    if (host->pending == VMR_SHARE_RAISE && !unchanged_since (sim, host->pending_revision)) {
        vmr_share_written (&host->state, host->pending, host->pending_share, FALSE);
        g_string_append_printf (sim->log, "%c! ", 'a' + h);
        return TRUE;
    }
    key->mod = ++sim->revision;
    /* a deleted key is in no range: a transaction's compare does not see it */
    key->present = host->pending != VMR_SHARE_DROP;
    key->share = key->present ? host->pending_share : 0;
    key->mod = key->present ? key->mod : 0;
    vmr_share_written (&host->state, host->pending, host->pending_share, TRUE);
    if (host->pending == VMR_SHARE_DROP)
        g_string_append_printf (sim->log, "%cx ", 'a' + h);
    else
        g_string_append_printf (sim->log, "%c%c%" G_GUINT64_FORMAT " ", 'a' + h,
                                host->pending == VMR_SHARE_RAISE ? '+' : '-',
                                host->pending_share / MIB);
    return TRUE;
}

/* @h's copies change: the new ones start at their part of what it may use */
static void
sim_demand (Sim *sim, guint h, guint copies)
{
    sim->hosts[h].state.copies = copies;
    sim_engine (sim, h);
}

/*
 * After every event: the shares in etcd add up to no more than the budget,
 * and each host's speeds to no more than its share in etcd, but for copies
 * at 1 byte/s while their host waits for one
 */
static void
check_invariants (const Sim *sim, const gchar *when)
{
    guint64 shares = 0;

    for (guint h = 0; h < HOSTS; h++) {
        const Host *host = &sim->hosts[h];
        guint64 share = sim->keys[h].present ? sim->keys[h].share : 0;

        shares += share;
        if (host->speed > share && host->speed != host->state.copies)
            g_error ("%s: host %c sets %" G_GUINT64_FORMAT
                     " bytes/s over its share %" G_GUINT64_FORMAT " (writes: %s)",
                     when, 'a' + h, host->speed, share, sim->log->str);
        g_assert_cmpuint (host->state.granted, <=, share);
    }
    if (shares > sim->budget)
        g_error ("%s: shares %" G_GUINT64_FORMAT " over the budget %" G_GUINT64_FORMAT
                 " (writes: %s)",
                 when, shares, sim->budget, sim->log->str);
}

/* every host sees, sets, decides and writes until nothing moves */
static void
sim_settle (Sim *sim)
{
    for (guint round = 0; round < 4 * HOSTS + 8; round++) {
        gboolean moved = FALSE;

        for (guint h = 0; h < HOSTS; h++) {
            sim_watch (sim, h);
            sim_engine (sim, h);
            moved = sim_step (sim, h) != VMR_SHARE_KEEP || moved;
            moved = sim_apply (sim, h) || moved;
            check_invariants (sim, "settling");
        }
        if (!moved)
            return;
    }
    g_error ("the shares did not settle: %s", sim->log->str);
}

/* settled: each host with copies holds budget / N and its copies use it, the others nothing */
static void
check_equal (const Sim *sim)
{
    guint n = 0;

    for (guint h = 0; h < HOSTS; h++)
        n += sim->hosts[h].state.copies > 0;
    for (guint h = 0; h < HOSTS; h++) {
        const Host *host = &sim->hosts[h];

        if (host->state.copies == 0) {
            g_assert_false (sim->keys[h].present);
            g_assert_cmpuint (host->speed, ==, 0);
            continue;
        }
        g_assert_true (sim->keys[h].present);
        g_assert_cmpuint (sim->keys[h].share, ==, sim->budget / n);
        g_assert_cmpuint (usable_of (sim, h), ==, sim->budget / n);
        g_assert_cmpuint (host->speed, <=, sim->budget / n);
        g_assert_cmpuint (host->speed, >=, sim->budget / n - host->state.copies);
    }
}

static void
test_equal_split (void)
{
    Sim sim;

    sim_init (&sim, 100 * MIB);
    for (guint h = 0; h < 3; h++) {
        sim_demand (&sim, h, h + 1);
        sim_settle (&sim);
        check_equal (&sim);
    }
    /* 100 MiB/s over 3 hosts: a third each, whatever each host's number of copies */
    g_assert_cmpuint (sim.keys[0].share, ==, 100 * MIB / 3);
    g_assert_cmpuint (sim.keys[2].share, ==, 100 * MIB / 3);
    sim_clear (&sim);
}

/* a joins alone, then b: b waits at 0 while a lowers its copies, then its share, then b raises */
static void
test_lower_before_raise (void)
{
    Sim sim;

    sim_init (&sim, 60 * MIB);
    sim_demand (&sim, 0, 2);
    sim_settle (&sim);
    g_assert_cmpstr (sim.log->str, ==, "a+60 ");
    g_assert_cmpuint (sim.hosts[0].speed, ==, 60 * MIB);

    sim_demand (&sim, 1, 3);
    sim_watch (&sim, 1);
    g_assert_cmpint (sim_step (&sim, 1), ==, VMR_SHARE_RAISE);
    g_assert_cmpuint (sim.hosts[1].pending_share, ==, 0);
    sim_apply (&sim, 1);
    sim_engine (&sim, 1);
    check_invariants (&sim, "b waits");
    /* b holds a share of 0: its copies at 1 byte/s each, not unlimited */
    g_assert_cmpuint (usable_of (&sim, 1), ==, 0);
    g_assert_cmpuint (sim.hosts[1].speed, ==, 3);

    /* a sees b: what it may use drops at once, but its share stays until its copies are lower */
    sim_watch (&sim, 0);
    g_assert_cmpuint (usable_of (&sim, 0), ==, 30 * MIB);
    g_assert_cmpint (sim_step (&sim, 0), ==, VMR_SHARE_KEEP);
    sim_engine (&sim, 0);
    g_assert_cmpuint (sim.hosts[0].speed, ==, 30 * MIB);
    g_assert_cmpint (sim_step (&sim, 0), ==, VMR_SHARE_LOWER);
    sim_apply (&sim, 0);
    check_invariants (&sim, "a lowered");

    sim_watch (&sim, 1);
    g_assert_cmpint (sim_step (&sim, 1), ==, VMR_SHARE_RAISE);
    sim_apply (&sim, 1);
    sim_engine (&sim, 1);
    check_invariants (&sim, "b raised");
    g_assert_cmpstr (sim.log->str, ==, "a+60 b+0 a-30 b+30 ");
    g_assert_cmpuint (sim.hosts[1].speed, ==, 30 * MIB);
    sim_clear (&sim);
}

/* a raise computed on a view that a share moved since is refused, and tried again on the new one */
static void
test_stale_raise_refused (void)
{
    Sim sim;

    sim_init (&sim, 60 * MIB);
    sim_demand (&sim, 0, 1);
    sim_watch (&sim, 0);
    sim_demand (&sim, 1, 1);
    sim_watch (&sim, 1);
    /* both see an empty storage: both ask for the whole budget */
    g_assert_cmpint (sim_step (&sim, 0), ==, VMR_SHARE_RAISE);
    g_assert_cmpint (sim_step (&sim, 1), ==, VMR_SHARE_RAISE);
    sim_apply (&sim, 0);
    sim_apply (&sim, 1);
    check_invariants (&sim, "two raises");
    g_assert_cmpstr (sim.log->str, ==, "a+60 b! ");
    g_assert_false (sim.keys[1].present);
    sim_settle (&sim);
    check_equal (&sim);
    sim_clear (&sim);
}

/* b's last copy ends: it deletes its key before anything else, and a takes the whole budget */
static void
test_release (void)
{
    Sim sim;

    sim_init (&sim, 60 * MIB);
    sim_demand (&sim, 0, 1);
    sim_demand (&sim, 1, 1);
    sim_settle (&sim);
    check_equal (&sim);
    g_string_truncate (sim.log, 0);

    sim_demand (&sim, 1, 0);
    g_assert_cmpint (sim_step (&sim, 1), ==, VMR_SHARE_DROP);
    g_assert_cmpuint (usable_of (&sim, 1), ==, 0);
    sim_apply (&sim, 1);
    g_assert_false (sim.keys[1].present);
    g_assert_false (sim.hosts[1].state.held);
    sim_settle (&sim);
    check_equal (&sim);
    g_assert_cmpstr (sim.log->str, ==, "bx a+60 ");
    g_assert_cmpuint (sim.hosts[0].speed, ==, 60 * MIB);
    sim_clear (&sim);
}

static void
test_per_copy (void)
{
    /* a share of 0 (a host waiting for one): 1 byte/s, since 0 is unlimited in QEMU */
    g_assert_cmpuint (vmr_share_per_copy (0, 2, G_MAXUINT64), ==, 1);
    g_assert_cmpuint (vmr_share_per_copy (60 * MIB, 3, G_MAXUINT64), ==, 20 * MIB);
    g_assert_cmpuint (vmr_share_per_copy (60 * MIB, 3, 5 * MIB), ==, 5 * MIB);
    g_assert_cmpuint (vmr_share_per_copy (60 * MIB, 3, 0), ==, 1);
    g_assert_cmpuint (vmr_share_per_copy (2, 3, G_MAXUINT64), ==, 1);
}

/* one event of a generated sequence on host @h */
static void
random_event (Sim *sim, GRand *rand, guint h)
{
    switch (g_rand_int_range (rand, 0, 5)) {
        case 0:
            sim_watch (sim, h);
            break;
        case 1:
            sim_engine (sim, h);
            break;
        case 2:
            sim_step (sim, h);
            break;
        case 3:
            sim_apply (sim, h);
            break;
        default:
            /* hosts join and leave: copies from 0 to 3 */
            if (g_rand_int_range (rand, 0, 4) == 0)
                sim_demand (sim, h, (guint) g_rand_int_range (rand, 0, 4));
            break;
    }
}

/* generated sequences: the invariants after every event, the equal split once they settle */
static void
test_generated (void)
{
    for (guint32 seed = 1; seed <= 300; seed++) {
        g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
        Sim sim;

        sim_init (&sim,
                  (guint64) g_rand_int_range (rand, 1, 200) * MIB + g_rand_int_range (rand, 0, 7));
        for (guint i = 0; i < 400; i++) {
            g_autofree gchar *when = NULL;

            random_event (&sim, rand, (guint) g_rand_int_range (rand, 0, HOSTS));
            if (sim.log->len > 4096)
                g_string_erase (sim.log, 0, 2048);
            when = g_strdup_printf ("seed %u, event %u", seed, i);
            check_invariants (&sim, when);
        }
        sim_settle (&sim);
        check_equal (&sim);
        sim_clear (&sim);
    }
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/cluster-share/equal-split", test_equal_split);
    g_test_add_func ("/cluster-share/lower-before-raise", test_lower_before_raise);
    g_test_add_func ("/cluster-share/stale-raise-refused", test_stale_raise_refused);
    g_test_add_func ("/cluster-share/release", test_release);
    g_test_add_func ("/cluster-share/per-copy", test_per_copy);
    g_test_add_func ("/cluster-share/generated", test_generated);
    return g_test_run ();
}
