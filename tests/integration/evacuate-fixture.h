/*
 * The evacuation tests' fixture: domains (guest-less QEMUs, each attached
 * under its name) with disks under FROM and elsewhere, the plan they make,
 * `evacuate` runs and the guests' writes while those run.
 */
#pragma once

#include "harness.h"

G_BEGIN_DECLS

#define MIB (1024 * 1024)

/* one disk of a domain: the image is created under the test's directory */
typedef struct {
    const gchar *image;  /* relative to the test's directory */
    const gchar *format; /* "raw" or "qcow2" */
    gsize size;
    gboolean shared; /* another domain opens the image too */
} DiskSpec;

#define MAX_DISKS 2
/* guest writes to each disk in each phase, and the copies' speed meanwhile */
#define EVAC_WRITES      30
#define EVAC_WRITE_SPEED "2M"

typedef struct {
    gchar *name;
    guint n;
    const gchar *ids[MAX_DISKS];
    gchar *sources[MAX_DISKS];
    const gchar *formats[MAX_DISKS];
    gsize sizes[MAX_DISKS];
    gchar *expected[MAX_DISKS];
    gchar *dests[MAX_DISKS];              /* the planned destination; NULL when not under FROM */
    VmrHarnessWriter *writers[MAX_DISKS]; /* the guest's writes to each disk */
    VmrHarness *vm;                       /* its QEMU */
} Domain;

typedef struct {
    VmrHarness *h;
    gchar *from;
    gchar *to;
    GPtrArray *domains; /* of Domain */
} Evac;

/* frees every domain (killing a QEMU still running) and the paths */
void evac_clear (Evac *e);

/* makes the directory @name (and its parents) in the test's directory */
gchar *evac_make_dir (VmrHarness *h, const gchar *name);

/* FROM and TO, both existing and empty */
void evac_init (Evac *e, VmrHarness *h);

/* where evacuate is to put @source: the same path relative to TO; NULL when not under FROM */
gchar *evac_planned_destination (Evac *e, const gchar *source);

/*
 * A QEMU with @n disks, attached as the domain @name. The images are made
 * with seeded patterns (their directories too), unless @specs says another
 * domain shares an image that exists already.
 */
Domain *evac_add_domain (Evac *e, const gchar *name, const DiskSpec *specs, guint n);

/* the domain added @i-th */
Domain *evac_domain_at (Evac *e, guint i);

/* the number of disks with a planned destination, of @glob-matching domains */
guint evac_count_planned (Evac *e, const gchar *glob, guint *out_domains, guint64 *out_bytes);

/* `evacuate --from FROM --to TO @extra...` */
VmrCliResult *evac_run (Evac *e, const gchar *const *extra);

/* what lies under @dir, sorted, joined with spaces; "" when it is empty */
gchar *evac_describe_tree (const gchar *dir);

/* the job of disk @i of @d in `jobs --json`, NULL when none */
JsonObject *evac_find_job (JsonNode *jobs, Domain *d, guint i);

/* `evacuate --from FROM --to TO @extra...` in the background */
VmrCliRun *evac_spawn (Evac *e, const gchar *const *extra);

/*
 * Once the evacuation submitted its @n_jobs jobs: every guest writes to
 * every disk while the copies run slowly, then every copy is let go
 */
void evac_guests_write (Evac *e, guint n_jobs);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Evac, evac_clear)

G_END_DECLS
