#define G_LOG_DOMAIN "vmr-test"

/*
 * Chaos: nothing lost across many migrations. One guest-less QEMU attached over QMP with two disks
 * (one on the main loop, one on an I/O thread), one QEMU running the write-and-verify test guest,
 * attached over QMP, and one libvirt domain; their disks move back and forth between two
 * directories, singly and as groups, while the test writes through the guest-less disks and the
 * guest writes and verifies its own. In each round the seed (GLib's GRand) picks the migrations,
 * one fault and the moment it comes: the daemon killed with SIGKILL and started again (it adopts
 * its jobs), libvirtd restarted, a QEMU killed, a destination file system filled (a tmpfs the test
 * mounts, by a file the test writes and removes later), or an NBD destination whose writes fail
 * (nbdkit's error filter); and faults that come together: QEMU killed during a pivot (stopped
 * once the pivot is sent, then killed), the daemon killed while libvirtd restarts, a destination
 * filled while the daemon is dead. After each round every job ended completed, or
 * failed or cancelled with a reason; every disk is where its last job left
 * it and holds what was written; a destination of a job that did not
 * complete is gone. At the end nothing is left in any QEMU, no file in the
 * directories but the disks, the job records agree, and the guest's own
 * verification passes. The figures: "N migrations, N faults, 0 lost,
 * 0 corrupt, 0 leaked".
 *
 * VMR_CHAOS_SEED replays a run (the seed is printed first; "random" picks
 * one), VMR_CHAOS_COUNT is the number of migrations (at least 20). Without
 * them the run is CI's: a fixed seed and DEFAULT_COUNT migrations.
 */

#include "chaos-cluster.h"
#include "chaos-harness.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define DISK_SIZE (32 * CHAOS_MIB)
/*
 * what CI runs (`meson test` passes VMR_CHAOS_SEED and VMR_CHAOS_COUNT
 * through): a seed whose first 30 migrations meet every kind of fault
 */
#define DEFAULT_SEED  1
#define DEFAULT_COUNT 30
/* the fewest migrations of a run; CI's cluster mode runs the fewest, its faults first */
#define PLAIN_LEAST_COUNT   20
#define CLUSTER_LEAST_COUNT 8
/* copies start slowly, so that the fault finds them running, and are let go after it */
#define START_SPEED "2M"
/* an NBD copy runs slower still: its fault must come before it completes */
#define NBD_SPEED "1M"
/* the fill leaves less than the policy's margin free */
#define POLICY          "[defaults]\nspace-margin = 8M\nsample-interval = 500ms\n"
#define FILL_LEAVES     (4 * CHAOS_MIB)
#define ROUND_TIMEOUT_S 120

typedef enum {
    FAULT_NONE,
    FAULT_KILL_DAEMON,
    FAULT_RESTART_LIBVIRTD,
    FAULT_KILL_QEMU,
    FAULT_FILL,
    FAULT_IO_ERROR,
    FAULT_KILL_QEMU_AT_PIVOT,
    FAULT_KILL_DAEMON_LIBVIRTD,
    FAULT_FILL_DAEMON_DOWN,
    /* the cluster's (VMR_CHAOS_CLUSTER=1) */
    FAULT_ETCD_LEADER,
    FAULT_ETCD_MEMBER_CUT,
    FAULT_LEASE_EXPIRY,
    N_FAULTS
} Fault;

#define N_PLAIN_FAULTS FAULT_ETCD_LEADER

static const gchar *const fault_names[] = { "none",
                                            "kill-daemon",
                                            "restart-libvirtd",
                                            "kill-qemu",
                                            "fill-destination",
                                            "io-error",
                                            "kill-qemu-at-pivot",
                                            "kill-daemon-restart-libvirtd",
                                            "fill-while-daemon-down",
                                            "stop-etcd-leader",
                                            "cut-etcd-member",
                                            "lease-expiry" };

typedef struct {
    ChaosDomain *qmp;     /* guest-less, two disks, written by the test */
    ChaosDomain *guest;   /* the write-and-verify guest */
    ChaosDomain *libvirt; /* libvirt's domain, written through libvirt */
    Fault fault;
    ChaosCluster *cluster; /* the cluster mode's, NULL without it */
    ChaosJob *target;      /* the job the fault is aimed at (fill, I/O error), or NULL */
    gchar *trigger;        /* the error filter's switch */
} Round;

static guint32
chaos_seed (void)
{
    const gchar *text = g_getenv ("VMR_CHAOS_SEED");

    if (text == NULL || *text == '\0')
        return DEFAULT_SEED;
    if (g_str_equal (text, "random"))
        return g_random_int ();
    return (guint32) g_ascii_strtoull (text, NULL, 0);
}

static guint
chaos_count (guint least)
{
    const gchar *text = g_getenv ("VMR_CHAOS_COUNT");
    guint count = text != NULL ? (guint) g_ascii_strtoull (text, NULL, 10) : DEFAULT_COUNT;

    return MAX (count, least);
}

/* an nbdkit export of a disk's size whose writes fail once @trigger exists; returns its URI */
static gchar *
failing_export (Chaos *c, guint round, const gchar *trigger)
{
    g_autofree gchar *name = g_strdup_printf ("nbd%u.sock", round);
    g_autofree gchar *socket = vmr_harness_path (&c->e->h, name);

    return vmr_nbd_start_failing_export (&c->nbd, socket, DISK_SIZE, trigger);
}

static gboolean
chance (Chaos *c, gdouble p)
{
    return g_rand_double (c->rand) < p;
}

/* the faults that make sense now: a fill needs the first disk off the small file system */
static Fault
pick_fault (Chaos *c, Round *r)
{
    ChaosDisk *disk0 = r->qmp->disks->pdata[0];
    g_autofree gchar *dir = g_path_get_dirname (disk0->location);
    Fault fault
        = (Fault) g_rand_int_range (c->rand, 0, r->cluster != NULL ? N_FAULTS : N_PLAIN_FAULTS);

    /* the cluster's faults come first, so that a short run meets each */
    if (r->cluster != NULL && c->rounds <= N_FAULTS - N_PLAIN_FAULTS)
        return (Fault) (N_PLAIN_FAULTS + c->rounds - 1);

    if ((fault == FAULT_FILL || fault == FAULT_FILL_DAEMON_DOWN) && g_str_equal (dir, c->tmpfs))
        fault = FAULT_KILL_DAEMON;
    return fault;
}

/* the guest-less domain's migration: one disk or both as a group, with the fault's route */
static void
migrate_qmp (Chaos *c, Round *r)
{
    ChaosDisk *disks[2];
    const gchar *dests[2];
    /* NULL-terminated, so that both paths are freed (g_autofree on an array frees its first) */
    g_auto (GStrv) paths = g_new0 (gchar *, 3);
    g_autofree gchar *uri = NULL;
    guint n = 0;
    gboolean fill = r->fault == FAULT_FILL || r->fault == FAULT_FILL_DAEMON_DOWN;
    gboolean group = chance (c, 0.6) || fill || r->fault == FAULT_IO_ERROR;
    guint single = g_rand_int_range (c->rand, 0, 2);

    for (guint i = 0; i < 2; i++) {
        ChaosDisk *disk = r->qmp->disks->pdata[i];

        if (!group && i != single)
            continue;
        if (i == 0 && fill)
            paths[n] = g_build_filename (c->tmpfs, disk->file, NULL);
        else if (i == 1 && r->fault == FAULT_IO_ERROR) {
            r->trigger = g_strdup_printf ("%s/nbd%u.fail", c->e->h.dir, c->rounds);
            uri = failing_export (c, c->rounds, r->trigger);
            paths[n] = g_strdup (uri);
        } else
            paths[n] = g_build_filename (chaos_other_dir (c, disk), disk->file, NULL);
        disks[n] = disk;
        dests[n] = paths[n];
        n++;
    }
    if (!chaos_migrate (c, disks, dests, n, r->fault == FAULT_IO_ERROR ? NBD_SPEED : START_SPEED,
                        r->fault == FAULT_KILL_QEMU_AT_PIVOT))
        return;
    /* the job the fault aims at: the one to the small file system, or to the export */
    for (guint i = 0; i < n && (fill || r->fault == FAULT_IO_ERROR); i++) {
        ChaosJob *job = c->jobs->pdata[c->jobs->len - n + i];

        if (g_strcmp0 (job->dest, uri) == 0 || (fill && i == 0))
            r->target = job;
    }
}

static void
migrate_single (Chaos *c, ChaosDomain *d)
{
    ChaosDisk *disk = d->disks->pdata[0];
    g_autofree gchar *dest = g_build_filename (chaos_other_dir (c, disk), disk->file, NULL);
    const gchar *dests[] = { dest };

    chaos_migrate (c, &disk, dests, 1, START_SPEED, FALSE);
}

/* writes while @ms milliseconds pass */
static void
write_for (Chaos *c, guint ms)
{
    gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;

    do {
        chaos_write (c, 1);
        g_usleep (50 * 1000);
    } while (g_get_monotonic_time () < end);
}

/*
 * the daemon, killed at @killed (real µs), started again on its state dir:
 * the QMP domains attached again, its jobs adopted
 */
static void
start_daemon_again (Chaos *c, Round *r, gint64 killed)
{
    guint round = c->rounds;

    vmr_e2e_start_daemon (c->e, TRUE);
    chaos_attach_all (c);
    for (guint i = 0; i < c->jobs->len; i++) {
        ChaosJob *job = c->jobs->pdata[i];

        if (job->round == round && job->state == NULL && chaos_poll_round (c, round) > 0
            && job->state == NULL)
            json_object_unref (vmr_harness_wait_adopted (&c->e->h, job->id));
    }
    if (r->cluster != NULL)
        chaos_cluster_note_restart (r->cluster, c, killed);
}

/*
 * the daemon killed with SIGKILL, guests writing while it is dead, then
 * started again; with @libvirtd, while libvirtd restarts: libvirtd stopped
 * first, started again while the daemon is dead
 */
static void
kill_daemon (Chaos *c, Round *r, gboolean libvirtd)
{
    gint64 killed;

    chaos_count_fault (c, fault_names[libvirtd ? FAULT_KILL_DAEMON_LIBVIRTD : FAULT_KILL_DAEMON]);
    if (libvirtd)
        vmr_e2e_stop_libvirtd ();
    killed = g_get_real_time ();
    vmr_e2e_kill_daemon (c->e);
    if (libvirtd)
        vmr_e2e_start_libvirtd ();
    write_for (c, g_rand_int_range (c->rand, 100, 1000));
    start_daemon_again (c, r, killed);
}

/* the QMP domain's jobs of this round */
static GPtrArray *
round_jobs_of (Chaos *c, ChaosDomain *d)
{
    GPtrArray *jobs = g_ptr_array_new ();

    for (guint i = 0; i < c->jobs->len; i++) {
        ChaosJob *job = c->jobs->pdata[i];

        if (job->round == c->rounds && job->disk->domain == d)
            g_ptr_array_add (jobs, job);
    }
    return jobs;
}

/*
 * QEMU killed during the pivot: once its copies are in sync, QEMU stopped
 * (SIGSTOP), their pivot sent, then SIGKILL. QEMU never took the pivot: its
 * jobs must fail saying the VM stays on its sources
 */
static void
kill_qemu_at_pivot (Chaos *c, Round *r)
{
    VmrHarness *h = &c->e->h;
    g_autoptr (GPtrArray) jobs = round_jobs_of (c, r->qmp);
    g_autoptr (VmrCliResult) pivot = NULL;
    VmrCliRun *run;

    if (jobs->len == 0)
        return;
    chaos_count_fault (c, fault_names[FAULT_KILL_QEMU_AT_PIVOT]);
    chaos_unthrottle_round (c, c->rounds);
    for (guint i = 0; i < jobs->len; i++)
        json_object_unref (vmr_harness_wait_job (h, ((ChaosJob *) jobs->pdata[i])->id, "synced",
                                                 VMR_HARNESS_JOB_TIMEOUT_S));
    chaos_write (c, 2);
    g_assert_cmpint (kill (r->qmp->peer->qemu_pid, SIGSTOP), ==, 0);
    run = vmr_harness_cli_spawn (h, "pivot", ((ChaosJob *) jobs->pdata[0])->id, NULL);
    for (guint i = 0; i < jobs->len; i++)
        json_object_unref (vmr_harness_wait_job (h, ((ChaosJob *) jobs->pdata[i])->id, "pivoting",
                                                 VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_kill_qemu (r->qmp->peer);
    pivot = vmr_harness_cli_wait (run);
    vmr_cli_result_assert_error (pivot, 1);
    for (guint i = 0; i < jobs->len; i++) {
        ChaosJob *job = jobs->pdata[i];
        g_autoptr (JsonObject) final
            = vmr_harness_wait_job (h, job->id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
        const gchar *reason = vmr_json_job_reason (final);

        if (strstr (reason, "before QEMU took the pivot") == NULL
            || strstr (reason, job->source) == NULL) {
            g_test_message ("%s: its reason does not say that the VM stays on %s: %s", job->id,
                            job->source, reason);
            c->lost++;
        }
    }
}

/*
 * the small file system filled while its copy runs, freed once the copy
 * paused; with @daemon_down, filled while the daemon is dead, QEMU copying
 * on, and the daemon started again before the copy pauses
 */
static void
fill_destination (Chaos *c, Round *r, gboolean daemon_down)
{
    g_autofree gchar *filler = NULL;
    gint64 killed = g_get_real_time ();
    gint64 deadline;

    chaos_count_fault (c, fault_names[daemon_down ? FAULT_FILL_DAEMON_DOWN : FAULT_FILL]);
    if (daemon_down)
        vmr_e2e_kill_daemon (c->e);
    filler = vmr_harness_fill_leaving (c->tmpfs, FILL_LEAVES);
    if (daemon_down) {
        write_for (c, g_rand_int_range (c->rand, 200, 1500));
        start_daemon_again (c, r, killed);
    }
    deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
    while (r->target != NULL && g_get_monotonic_time () < deadline) {
        g_autoptr (JsonObject) job = vmr_harness_get_job (&c->e->h, r->target->id);
        const gchar *state = vmr_json_job_state (job);

        if (!g_str_equal (state, "copying") && !g_str_equal (state, "queued")) {
            g_test_message ("round %u: %s %s once its file system filled", c->rounds, r->target->id,
                            state);
            break;
        }
        chaos_write (c, 1);
        g_usleep (100 * 1000);
    }
    write_for (c, g_rand_int_range (c->rand, 200, 1500));
    g_assert_cmpint (g_unlink (filler), ==, 0);
}

/* the lines of the test daemon's log that say it gave its slots up with its lease */
static guint
count_give_ups (Chaos *c)
{
    g_autofree gchar *log = NULL;

    if (!g_file_get_contents (c->e->daemon_log, &log, NULL, NULL))
        return 0;
    return vmr_harness_count_lines (log, "(two thirds of its TTL): giving up its");
}

/*
 * host a cut off every member: it gives its slots up (its log says so) and
 * pauses its copies; let back once its lease expired for sure
 */
static void
expire_lease (Chaos *c, Round *r)
{
    guint before = count_give_ups (c);
    gint64 deadline = g_get_monotonic_time () + 4 * CHAOS_CLUSTER_TTL_S * G_USEC_PER_SEC;

    chaos_cluster_cut (r->cluster, VMR_ETCD_MEMBERS);
    while (count_give_ups (c) == before) {
        if (g_get_monotonic_time () > deadline)
            vmr_fail ("round %u: the daemon cut off etcd did not give its slots up", c->rounds);
        write_for (c, 100);
    }
    /* a third of the TTL was left when it gave them up */
    write_for (c, CHAOS_CLUSTER_TTL_S * 1000 / 3 + g_rand_int_range (c->rand, 500, 2000));
    chaos_cluster_restore (r->cluster);
}

/*
 * the cluster's faults: etcd's leader stopped, or host a's way to one member
 * cut, until the round ends; or host a cut off every member for longer than
 * its lease's TTL, so that it pauses its copies, its lease expires and host b
 * may take its slots, then let back
 */
static void
inject_cluster (Chaos *c, Round *r)
{
    chaos_count_fault (c, fault_names[r->fault]);
    switch (r->fault) {
        case FAULT_ETCD_LEADER:
            g_test_message ("round %u: etcd's leader, member %u, stopped", c->rounds,
                            chaos_cluster_stop_leader (r->cluster));
            break;
        case FAULT_ETCD_MEMBER_CUT:
            chaos_cluster_cut (r->cluster, g_rand_int_range (c->rand, 0, VMR_ETCD_MEMBERS));
            break;
        case FAULT_LEASE_EXPIRY:
            expire_lease (c, r);
            break;
        default:
            g_assert_not_reached ();
    }
}

static void
inject (Chaos *c, Round *r)
{
    g_autoptr (GError) error = NULL;

    switch (r->fault) {
        case FAULT_NONE:
            break;
        case FAULT_KILL_DAEMON:
        case FAULT_KILL_DAEMON_LIBVIRTD:
            kill_daemon (c, r, r->fault == FAULT_KILL_DAEMON_LIBVIRTD);
            break;
        case FAULT_RESTART_LIBVIRTD:
            chaos_count_fault (c, fault_names[r->fault]);
            vmr_e2e_restart_libvirtd ();
            break;
        case FAULT_KILL_QEMU:
            chaos_count_fault (c, fault_names[r->fault]);
            vmr_harness_kill_qemu (r->qmp->peer);
            break;
        case FAULT_FILL:
        case FAULT_FILL_DAEMON_DOWN:
            fill_destination (c, r, r->fault == FAULT_FILL_DAEMON_DOWN);
            break;
        case FAULT_KILL_QEMU_AT_PIVOT:
            kill_qemu_at_pivot (c, r);
            break;
        case FAULT_IO_ERROR:
            chaos_count_fault (c, fault_names[r->fault]);
            if (!g_file_set_contents (r->trigger, "", 0, &error))
                vmr_fail ("cannot create %s: %s", r->trigger, error->message);
            break;
        case FAULT_ETCD_LEADER:
        case FAULT_ETCD_MEMBER_CUT:
        case FAULT_LEASE_EXPIRY:
            inject_cluster (c, r);
            break;
        case N_FAULTS:
            g_assert_not_reached ();
    }
}

/* one round: the seed's migrations, its fault at its moment, every job to its end */
static void
chaos_round (Chaos *c, Round *r)
{
    c->rounds++;
    r->fault = pick_fault (c, r);
    r->target = NULL;
    g_clear_pointer (&r->trigger, g_free);
    g_test_message ("round %u: fault %s", c->rounds, fault_names[r->fault]);
    if (r->fault != FAULT_NONE || chance (c, 0.8))
        migrate_qmp (c, r);
    if (chance (c, 0.6))
        migrate_single (c, r->guest);
    if (r->fault == FAULT_RESTART_LIBVIRTD || r->fault == FAULT_KILL_DAEMON_LIBVIRTD
        || chance (c, 0.8))
        migrate_single (c, r->libvirt);
    if (r->cluster != NULL)
        chaos_cluster_migrate_b (r->cluster, START_SPEED);
    if (r->target != NULL)
        json_object_unref (
            vmr_harness_wait_job (&c->e->h, r->target->id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    write_for (c, g_rand_int_range (c->rand, 200, 2500));
    /* half of the daemon's deaths come after the copies were let go: in sync, or pivoting */
    if (r->fault == FAULT_KILL_DAEMON && chance (c, 0.5)) {
        chaos_unthrottle_round (c, c->rounds);
        write_for (c, g_rand_int_range (c->rand, 0, 800));
    }
    inject (c, r);
    chaos_unthrottle_round (c, c->rounds);
    if (r->cluster != NULL)
        chaos_cluster_unthrottle_b (r->cluster);
    chaos_wait_round (c, c->rounds, ROUND_TIMEOUT_S);
    if (r->cluster != NULL) {
        chaos_cluster_restore (r->cluster);
        chaos_cluster_wait_b (r->cluster, c);
    }
    /* a killed QEMU: its domain detached, its QEMU started again on its disks' sources */
    if (r->qmp->peer->qemu == NULL) {
        g_autoptr (VmrCliResult) detach = vmr_harness_cli (&c->e->h, "detach", r->qmp->name, NULL);

        vmr_cli_result_assert_ok (detach);
        chaos_start_qmp (c, r->qmp);
    }
    chaos_check_round (c, c->rounds);
}

/* the policy of the test's daemon: the cluster's section in cluster mode */
static void
write_policy (Chaos *c, Round *r)
{
    g_autofree gchar *section = r->cluster != NULL ? chaos_cluster_policy (r->cluster) : NULL;
    g_autofree gchar *text = g_strconcat (POLICY, section, NULL);

    g_free (vmr_harness_write_policy (&c->e->h, text));
}

static void
test_chaos (VmrE2e *e, gconstpointer data)
{
    gboolean clustered = g_strcmp0 (g_getenv ("VMR_CHAOS_CLUSTER"), "1") == 0;
    guint32 seed = chaos_seed ();
    guint count = chaos_count (clustered ? CLUSTER_LEAST_COUNT : PLAIN_LEAST_COUNT);
    ChaosCluster cluster = { 0 };
    Chaos c;
    Round r = { 0 };

    if (vmr_harness_skipped (&e->h) || !vmr_harness_require_guest (&e->h)
        || !vmr_nbd_require (&e->h))
        return;
    g_print ("# chaos: seed %u (VMR_CHAOS_SEED=%u replays it), %u migrations%s\n", seed, seed,
             count, clustered ? ", cluster mode" : "");
    chaos_init (&c, e, seed);
    c.least = MIN (count, clustered ? CLUSTER_LEAST_COUNT : PLAIN_LEAST_COUNT);
    if (c.tmpfs == NULL || (clustered && !chaos_cluster_start (&cluster, &e->h)))
        return;
    r.cluster = clustered ? &cluster : NULL;
    write_policy (&c, &r);
    r.libvirt = chaos_add_libvirt_domain (&c, DISK_SIZE);
    vmr_e2e_start_daemon (e, TRUE);
    json_object_unref (vmr_e2e_wait_domain (e, r.libvirt->name, TRUE, 10000));
    r.qmp = chaos_add_qmp_domain (&c, "chaos-qmp", 2, DISK_SIZE);
    /* the guest writes and verifies for about as long as the rounds take */
    r.guest = chaos_add_guest_domain (&c, "chaos-guest", DISK_SIZE, count * 2);
    while (c.jobs->len < count && c.rounds < count * 2)
        chaos_round (&c, &r);
    if (clustered)
        chaos_cluster_check_end (&cluster, &c);
    chaos_check_end (&c);
    g_free (r.trigger);
    if (clustered)
        chaos_cluster_clear (&cluster);
    chaos_clear (&c);
}

int
main (int argc, char **argv)
{
    vmr_e2e_init (&argc, &argv);
    VMR_E2E_ADD ("/chaos/many-migrations", NULL, test_chaos);
    return vmr_e2e_run (TRUE);
}
