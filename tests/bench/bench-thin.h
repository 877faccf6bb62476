/*
 * bench-thin: thin disks copied at the speed of their data. What its two
 * parts share: the bench's places and options, a paused QEMU with the
 * source as its disk, the figures of one case (a kind of destination,
 * measured with a thin source and a full one of the thin one's data) and
 * their report.
 */
#pragma once

#include <gio/gio.h>

#include "qmp-client.h"

G_BEGIN_DECLS

#define VMR_BENCH_THIN_START_TIMEOUT_S 30
#define VMR_BENCH_THIN_STOP_TIMEOUT_S  60
#define VMR_BENCH_THIN_JOB_TIMEOUT_S   1800

/* the targets: copy time of the thin source against the full one, and the allocation */
#define VMR_BENCH_THIN_TIME_TARGET  1.5
#define VMR_BENCH_THIN_ALLOC_TARGET 1.1 /* times the data of the thin source */

/* the data of a thin source is spread over this many extents, each at least 1 MiB */
#define VMR_BENCH_THIN_EXTENTS 64

/* the extents of a thin source with @data_size bytes of data */
guint vmr_bench_thin_extents (guint64 data_size);

typedef struct {
    /* options */
    gchar *qemu_path;
    guint rounds;
    /* places */
    gchar *run_dir;   /* sockets and logs */
    gchar *image_dir; /* images */
    /* what the bench saw */
    gchar *qemu_version;
    guint run_number; /* counts every run, to name its files */
    gboolean interrupted;
} VmrBenchThin;

/* the two sources of a case: @data_size bytes spread over @thin_size, and @data_size full */
typedef struct {
    guint64 thin_size;
    guint64 data_size;
    gchar *thin_source; /* raw */
    gchar *full_source; /* raw */
} VmrBenchThinSources;

/*
 * Creates both sources in the image directory, named after @label, with
 * @seed; the full one holds other data than the thin one (seed + 1).
 */
gboolean vmr_bench_thin_sources_create (VmrBenchThin *self, VmrBenchThinSources *sources,
                                        const gchar *label, guint64 thin_size, guint64 data_size,
                                        guint32 seed, GError **error);

/* removes the sources' files and frees their paths */
void vmr_bench_thin_sources_clear (VmrBenchThinSources *sources);

/*
 * Starts a paused QEMU (TCG, -nodefaults) with @source as the raw disk
 * "disk0" (node "d0") and a QMP monitor on each of @monitors
 * (NULL-terminated); connects to the last one, *@out_watch. Its log is
 * named after the run.
 */
GSubprocess *vmr_bench_thin_start_qemu (VmrBenchThin *self, const gchar *source,
                                        const gchar *const *monitors, VmrQmpClient **out_watch,
                                        GError **error);

/* the allocation figures a case measures at most */
#define VMR_BENCH_THIN_N_ALLOC 2

/* how nbdkit serves a destination export */
typedef struct {
    gboolean memory;           /* its memory plugin; else its file plugin on a new sparse file */
    const gchar *zeromode;     /* the nozero filter's zeromode, NULL: no filter */
    const gchar *fastzeromode; /* and its fastzeromode, NULL: its default */
} VmrBenchThinExport;

/* a running nbdkit on a UNIX socket, and its export */
typedef struct {
    GSubprocess *process;
    gchar *socket;
    gchar *uri;  /* nbd+unix:///?socket=SOCKET */
    gchar *file; /* the file plugin's file, NULL for the memory plugin */
} VmrBenchThinServer;

/*
 * Starts nbdkit serving @export, @size bytes, on the UNIX socket @socket
 * (its file, for the file plugin, in the image directory and its log in
 * the run directory, named after the run), and waits until it listens.
 */
gboolean vmr_bench_thin_server_start (VmrBenchThin *self, VmrBenchThinServer *server,
                                      const VmrBenchThinExport *export, const gchar *socket,
                                      guint64 size, GError **error);

/*
 * What the export takes: in @alloc[0] what `nbdinfo --map` reports as not
 * a hole, in @alloc[1] the st_blocks of the file plugin's file (untouched
 * for the memory plugin).
 */
gboolean vmr_bench_thin_server_measure (VmrBenchThinServer *server,
                                        guint64 alloc[VMR_BENCH_THIN_N_ALLOC], GError **error);

/* SIGTERM, so that nbdkit removes its socket, SIGKILL when it does not exit; removes its file */
void vmr_bench_thin_server_stop (VmrBenchThinServer *server);

/* how a case's destination is measured: its names for up to two allocation figures */

/* the figures of one case, one value per round */
typedef struct {
    gchar *title;
    const gchar *alloc_label[VMR_BENCH_THIN_N_ALLOC]; /* NULL: not measured */
    guint64 thin_size;
    guint64 data_size;
    GArray *thin_s;                             /* of gdouble: the copy of the thin source */
    GArray *full_s;                             /* of gdouble: the copy of the full source */
    GArray *thin_alloc[VMR_BENCH_THIN_N_ALLOC]; /* of gdouble, bytes: after the thin copy */
    GArray *full_alloc[VMR_BENCH_THIN_N_ALLOC]; /* of gdouble, bytes: after the full copy */
} VmrBenchThinCase;

VmrBenchThinCase *vmr_bench_thin_case_new (const gchar *title, const VmrBenchThinSources *sources,
                                           const gchar *alloc_label0, const gchar *alloc_label1);
void vmr_bench_thin_case_free (VmrBenchThinCase *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrBenchThinCase, vmr_bench_thin_case_free)

/* one copy's figures: its time and the allocation figures the case measures */
typedef struct {
    gdouble copy_s;
    guint64 alloc[VMR_BENCH_THIN_N_ALLOC];
} VmrBenchThinRun;

/* adds a run of the thin (@thin) or the full source, and prints it on stderr */
void vmr_bench_thin_case_add (VmrBenchThinCase *c, gboolean thin, guint round,
                              const VmrBenchThinRun *run);

/*
 * Prints the case: the medians of both copy times, every round's ratio
 * and their median against VMR_BENCH_THIN_TIME_TARGET, and each allocation
 * figure against VMR_BENCH_THIN_ALLOC_TARGET times the data. Returns TRUE
 * when every target was met.
 */
gboolean vmr_bench_thin_case_report (const VmrBenchThinCase *c);

/* "8 GiB", "128 MiB": sizes in the units the report uses */
gchar *vmr_bench_thin_format_size (guint64 bytes);

/* NBD destinations through QEMU's own mirror, without virt-mirrord: see bench-thin-nbd.c */
gboolean vmr_bench_thin_run_nbd (VmrBenchThin *self, guint64 thin_size, guint64 data_size,
                                 gboolean fallbacks, GError **error);

G_END_DECLS
