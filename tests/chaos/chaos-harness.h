/*
 * The chaos test's world: the domains whose disks it moves (QEMUs attached
 * over QMP, a libvirt domain, one QEMU running the write-and-verify test
 * guest), where each disk is now and what it must hold, every job the test
 * started and how it ended, the faults it can inject, and the checks and
 * figures at the end. The scenario (test-chaos.c) decides, from its seed,
 * what moves where and which fault comes when.
 */
#pragma once

#include "harness-e2e.h"
#include "nbd-fixture.h"

G_BEGIN_DECLS

#define CHAOS_MIB (1024 * 1024)

typedef struct _ChaosDomain ChaosDomain;

/* one disk the test moves about */
typedef struct {
    ChaosDomain *domain;      /* not owned */
    gchar *name;              /* the daemon's name of the disk: disk0, vda */
    gchar *file;              /* its file's base name, the same in every directory */
    gchar *location;          /* the absolute path the disk is on now */
    gchar *expected;          /* what the disk must hold; NULL for the guest's own disk */
    VmrHarnessWriter *writer; /* guest writes through it, NULL for the guest's own disk */
} ChaosDisk;

struct _ChaosDomain {
    gchar *name;      /* the daemon's name of the domain */
    VmrHarness *peer; /* its QEMU for a QMP domain (owned), NULL for the libvirt domain */
    gboolean guest;   /* it runs the write-and-verify test guest */
    GPtrArray *disks; /* of ChaosDisk *, owned */
};

/* one job the test started, and how it ended */
typedef struct {
    gchar *id;
    ChaosDisk *disk;  /* not owned */
    gchar *source;    /* where the disk was when the job started */
    gchar *dest;      /* the destination: a path, or an NBD URI */
    gboolean is_file; /* the destination is a file the daemon creates */
    gchar *state;     /* the final state, NULL while active */
    gchar *reason;    /* the final reason, NULL for none */
    guint round;      /* the round that started it */
    gboolean let_go;  /* its speed limit was lifted */
} ChaosJob;

typedef struct {
    VmrE2e *e;
    guint32 seed;
    GRand *rand;
    GPtrArray *domains; /* of ChaosDomain *, owned */
    GPtrArray *jobs;    /* of ChaosJob *, owned, every job started */
    gchar *dirs[2];     /* the two directories disks move between */
    gchar *tmpfs;       /* the small file system a fault fills */
    VmrNbdServers nbd;
    guint rounds;
    guint least; /* the fewest migrations the run must make */
    guint faults;
    guint lost;    /* a job with no final state or reason, a disk not where its record says */
    guint corrupt; /* a disk whose bytes are not what was written */
    guint leaked;  /* a block job, node, export or file left behind */
    GHashTable *fault_counts; /* fault name -> count */
} Chaos;

/* sets up the world in @e's directory: no domain yet */
void chaos_init (Chaos *c, VmrE2e *e, guint32 seed);
void chaos_clear (Chaos *c);

/*
 * Starts a guest-less QEMU attached as @name with @n_disks scsi-hd disks of
 * @size bytes in the first directory, each written by a VmrHarnessWriter
 */
ChaosDomain *chaos_add_qmp_domain (Chaos *c, const gchar *name, guint n_disks, gsize size);

/*
 * Starts a QEMU running the test guest's verify job for @runtime_s seconds
 * on one disk of @size bytes, attached as @name
 */
ChaosDomain *chaos_add_guest_domain (Chaos *c, const gchar *name, gsize size, guint runtime_s);

/* defines and starts a libvirt domain with vda of @size bytes, written through libvirt */
ChaosDomain *chaos_add_libvirt_domain (Chaos *c, gsize size);

/* (re)starts the QEMU of a guest-less QMP domain on its disks' locations and attaches it */
void chaos_start_qmp (Chaos *c, ChaosDomain *d);

/* attaches every QMP domain whose QEMU runs (after a restart of the daemon) */
void chaos_attach_all (Chaos *c);

/* the directory of @dirs that @disk is not on now (the first when it is on neither) */
const gchar *chaos_other_dir (Chaos *c, ChaosDisk *disk);

/*
 * Starts one migration of @n disks of one domain (a group when @n > 1) to
 * @dests at @speed, with --manual-pivot when @manual_pivot; records its
 * jobs. Returns FALSE, with the CLI's error line noted, when the daemon
 * refused it (nothing started).
 */
gboolean chaos_migrate (Chaos *c, ChaosDisk **disks, const gchar *const *dests, guint n,
                        const gchar *speed, gboolean manual_pivot);

/* writes @count extents through every writer of a running domain */
void chaos_write (Chaos *c, guint count);

/* the jobs of round @round that have no final state yet, read from the daemon */
guint chaos_poll_round (Chaos *c, guint round);

/*
 * polls (writing between polls, lifting the speed limits that were refused)
 * until every job of @round ended, at most @timeout_s
 */
void chaos_wait_round (Chaos *c, guint round, guint timeout_s);

/*
 * lifts the speed limit of every job of @round still active; one whose start
 * is on its way (it waited for a slot) refuses, and chaos_wait_round() lets it
 * go later
 */
void chaos_unthrottle_round (Chaos *c, guint round);

/* the record of the job @id in the state dir, or NULL when there is none */
JsonObject *chaos_read_record (Chaos *c, const gchar *id);

/* counts the fault @name */
void chaos_count_fault (Chaos *c, const gchar *name);

/*
 * After a round: each of its jobs ended with a reason where it did not
 * complete, each disk is where its last job put it (QEMU's, libvirt's view),
 * with the bytes it must hold, and a destination file of a job that did not
 * complete is gone
 */
void chaos_check_round (Chaos *c, guint round);

/*
 * At the end: the guest's own verification, nothing left in any QEMU, no
 * file in the directories that is not a disk, the job records agreeing with
 * the daemon; then the figures, printed
 */
void chaos_check_end (Chaos *c);

G_END_DECLS
