/*
 * bench-scale's figures: the QEMUs, what one run measured, every run, and
 * the report made of them (bench-scale-figures.c).
 */
#pragma once

#include <gio/gio.h>

#include "qmp-client.h"

G_BEGIN_DECLS

/* device measures per count and round: each is short, and noisy */
#define DEVICE_REPEATS 3

/* one guest-less QEMU */
typedef struct {
    gchar *name;    /* its domain name: vm01, vm02, ... */
    gchar *source;  /* FROM/NAME.raw */
    gchar *dest;    /* TO/NAME.raw */
    gchar *monitor; /* the daemon's QMP socket */
    gchar *watch_monitor;
    GSubprocess *proc;
    VmrQmpClient *watch; /* the bench's own monitor: readiness, job events and "quit" */
} Vm;

/* the figures of one run */
typedef struct {
    gdouble total_s;         /* evacuate --wait, from its start to its exit */
    gdouble done_s;          /* from its start to the last job's completed (host clock) */
    gdouble span_s;          /* first job created -> last job completed, daemon's stamps */
    gdouble vm_median_s;     /* per job: created -> completed */
    gdouble vm_max_s;        /* the same, the slowest job */
    gdouble copy_median_s;   /* per job: first copying -> completed */
    gdouble copy_max_s;      /* the same, the slowest job */
    gdouble attach_s;        /* the N `virt-mirror attach` one after the other */
    gdouble cpu_evacuate_ms; /* the daemon's CPU time during evacuate */
    gdouble cpu_attach_ms;   /* the daemon's CPU time during the attaches */
    gdouble qemu_rss_mib;    /* the mean resident size of one QEMU */
    guint max_running;       /* the most jobs copying at once by the daemon (copying -> synced) */
    guint qemu_max_copying;  /* the same in QEMU: created -> ready, on QEMU's stamps */
} RunResult;

typedef struct {
    GArray *counts;   /* of guint */
    GArray *parallel; /* of guint */
    GArray **device;  /* [count] of gdouble seconds */
    GArray ***runs;   /* [count][parallel] of RunResult */
} Figures;

/*
 * Reads the jobs of the first @n VMs of @vms from @json, the output of
 * `virt-mirror --json jobs` (@start: when evacuate started, host wall clock
 * in microseconds, the clock of the jobs' times): each must have completed
 * into its VM's destination. Fills the per-VM figures of @result and
 * max_running.
 */
gboolean bench_scale_parse_jobs (const gchar *json, GPtrArray *vms, guint n, gint64 start,
                                 RunResult *result, GError **error);

/* one line about a run, on stderr */
void bench_scale_print_run (guint round, guint n, guint p, const RunResult *result);

/* the tables: medians over the rounds, and their ratios */
void bench_scale_report (const Figures *figures, guint64 disk_size);

void bench_scale_figures_free (Figures *figures);

G_END_DECLS
