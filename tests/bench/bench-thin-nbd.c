/*
 * bench-thin --nbd-raw-qmp: thin disks copied to NBD exports by QEMU's own
 * mirror, driven over QMP by the bench, without virt-mirrord. It measures
 * what QEMU does with the arguments a backend could give it, so that the
 * daemon's NBD destinations can take the best ones.
 *
 * Each copy: a fresh nbdkit on a UNIX socket (its memory plugin, or its
 * file plugin on a new sparse file; with its nozero filter for a server
 * that cannot zero, or cannot zero quickly), a fresh paused QEMU with the
 * raw source, `blockdev-add` of a raw node on an nbd node with the case's
 * options, `blockdev-mirror` sync=full and `job-complete` at READY, timed
 * from the blockdev-add to BLOCK_JOB_COMPLETED. Once QEMU has quit: the
 * export's allocation from `nbdinfo --map` (what is not a hole), for the
 * file plugin also the file's st_blocks, and qemu-img compare of the
 * source with the export.
 *
 * A server whose zeroes are written data takes the whole disk: the cases of
 * such servers run at an eighth of the sizes, on the file plugin, so that a
 * memory export never holds a whole 64 GiB disk in RAM; so does a thick
 * source, the small thin one with its holes written as zeroes, which shows
 * what detect-zeroes does.
 */
#define G_LOG_DOMAIN "vmr-bench"

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-series.h"
#include "bench-thin.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* one way to serve the destination, and the target node QEMU gets */
typedef struct {
    const gchar *title;
    VmrBenchThinExport export;  /* the server */
    const gchar *discard;       /* the raw node's, NULL: QEMU's default (ignore) */
    const gchar *detect_zeroes; /* the raw node's, NULL: QEMU's default (off) */
    gboolean small;             /* at an eighth of the sizes: zeroes may become data */
    gboolean thick;             /* the small thin source with its holes written as zeroes */
} NbdCase;

#define THIN_OPTIONS "unmap", "unmap"
#define DEFAULTS     NULL, NULL

static const NbdCase cases[] = {
    { "nbdkit memory, discard=unmap detect-zeroes=unmap", { TRUE, NULL, NULL }, THIN_OPTIONS },
    { "nbdkit memory, QEMU's defaults (discard=ignore)", { TRUE, NULL, NULL }, DEFAULTS },
    { "nbdkit file, discard=unmap detect-zeroes=unmap", { FALSE, NULL, NULL }, THIN_OPTIONS },
    { "nbdkit file, QEMU's defaults (discard=ignore)", { FALSE, NULL, NULL }, DEFAULTS, TRUE },
    { "nbdkit file, fast zero off (nozero zeromode=plugin fastzeromode=none), discard=unmap",
      { FALSE, "plugin", "none" },
      THIN_OPTIONS,
      TRUE },
    { "nbdkit file, zero without trim (nozero zeromode=notrim), discard=unmap",
      { FALSE, "notrim", NULL },
      THIN_OPTIONS,
      TRUE },
    { "nbdkit file, zero emulated by writes (nozero zeromode=emulate), discard=unmap",
      { FALSE, "emulate", NULL },
      THIN_OPTIONS,
      TRUE },
    { "nbdkit file, zero emulated by writes (nozero zeromode=emulate), discard=ignore",
      { FALSE, "emulate", NULL },
      DEFAULTS,
      TRUE },
    { "nbdkit file, no zero (nozero zeromode=none), discard=unmap",
      { FALSE, "none", NULL },
      THIN_OPTIONS,
      TRUE },
    { "nbdkit file, thick source (holes written as zeroes), discard=unmap detect-zeroes=unmap",
      { FALSE, NULL, NULL },
      THIN_OPTIONS,
      TRUE,
      TRUE },
    { "nbdkit file, thick source (holes written as zeroes), discard=unmap, no detect-zeroes",
      { FALSE, NULL, NULL },
      "unmap",
      NULL,
      TRUE,
      TRUE },
};

/* the small sources' data, which the thick source shares */
#define SMALL_SEED 5

typedef struct {
    VmrBenchThin *common;
    gchar *nbd_socket;
    gchar *qemu_monitor;
    /* the running copy */
    VmrQmpClient *watch;
    gint64 end_mono; /* BLOCK_JOB_COMPLETED or _CANCELLED arrived, 0 = not yet */
    gchar *job_error;
} Nbd;

static void
complete_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    Nbd *self = user_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonNode) reply
        = vmr_qmp_client_execute_finish (VMR_QMP_CLIENT (source), res, &error);

    if (reply == NULL && self->job_error == NULL)
        self->job_error = g_strdup_printf ("job-complete: %s", error->message);
}

static void
qemu_event_cb (VmrQmpClient *client, const gchar *name, JsonObject *data, gint64 timestamp_us,
               gpointer user_data)
{
    Nbd *self = user_data;

    if (g_strcmp0 (name, "BLOCK_JOB_READY") == 0) {
        g_autoptr (JsonObject) args = json_object_new ();

        json_object_set_string_member (args, "id", "thin");
        vmr_qmp_client_execute_async (client, "job-complete", args, 0, NULL, complete_cb, self);
    } else if (g_strcmp0 (name, "BLOCK_JOB_COMPLETED") == 0
               || g_strcmp0 (name, "BLOCK_JOB_CANCELLED") == 0) {
        const gchar *error = vmr_json_get_string (data, "error");

        self->end_mono = g_get_monotonic_time ();
        if (self->job_error == NULL && error != NULL)
            self->job_error = g_strdup (error);
        else if (self->job_error == NULL && g_strcmp0 (name, "BLOCK_JOB_CANCELLED") == 0)
            self->job_error = g_strdup ("QEMU cancelled the job");
    }
}

/* ---- one copy ---- */

/* the blockdev-add arguments of the destination: a raw node on an nbd node */
static JsonObject *
target_args (Nbd *self, const NbdCase *c)
{
    JsonObject *args = json_object_new ();
    JsonObject *nbd = json_object_new ();
    JsonObject *server = json_object_new ();

    json_object_set_string_member (server, "type", "unix");
    json_object_set_string_member (server, "path", self->nbd_socket);
    json_object_set_string_member (nbd, "driver", "nbd");
    json_object_set_string_member (nbd, "node-name", "thin-nbd");
    json_object_set_object_member (nbd, "server", server);
    json_object_set_string_member (args, "driver", "raw");
    json_object_set_string_member (args, "node-name", "thin-dst");
    json_object_set_object_member (args, "file", nbd);
    if (c->discard != NULL)
        json_object_set_string_member (args, "discard", c->discard);
    if (c->detect_zeroes != NULL)
        json_object_set_string_member (args, "detect-zeroes", c->detect_zeroes);
    return args;
}

static gboolean
mirror (Nbd *self, GSubprocess *qemu, const NbdCase *c, gdouble *copy_s, GError **error)
{
    g_autoptr (JsonObject) add = target_args (self, c);
    g_autoptr (JsonObject) args = json_object_new ();
    g_autoptr (JsonNode) reply = NULL;
    gint64 start_mono = g_get_monotonic_time ();

    json_object_set_string_member (args, "job-id", "thin");
    json_object_set_string_member (args, "device", "d0");
    json_object_set_string_member (args, "target", "thin-dst");
    json_object_set_string_member (args, "sync", "full");
    reply = vmr_qmp_client_execute_sync (self->watch, "blockdev-add", add, 0, error);
    if (reply == NULL) {
        g_prefix_error (error, "blockdev-add: ");
        return FALSE;
    }
    g_clear_pointer (&reply, json_node_unref);
    reply = vmr_qmp_client_execute_sync (self->watch, "blockdev-mirror", args, 0, error);
    if (reply == NULL) {
        g_prefix_error (error, "blockdev-mirror: ");
        return FALSE;
    }
    if (!vmr_bench_wait_stamp (&self->end_mono, qemu, &self->common->interrupted,
                               VMR_BENCH_THIN_JOB_TIMEOUT_S, "end of the mirror", error))
        return FALSE;
    if (self->job_error != NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "the mirror failed: %s", self->job_error);
        return FALSE;
    }
    *copy_s = (gdouble) (self->end_mono - start_mono) / G_USEC_PER_SEC;
    return TRUE;
}

static gboolean
copy_once (Nbd *self, const NbdCase *c, const gchar *source, guint64 size, VmrBenchThinRun *run,
           GError **error)
{
    const gchar *monitors[] = { self->qemu_monitor, NULL };
    VmrBenchThinServer server = { 0 };
    g_autoptr (GSubprocess) qemu = NULL;
    gboolean ok;

    self->common->run_number++;
    self->end_mono = 0;
    g_clear_pointer (&self->job_error, g_free);

    ok = vmr_bench_thin_server_start (self->common, &server, &c->export, self->nbd_socket, size,
                                      error);
    if (ok)
        qemu = vmr_bench_thin_start_qemu (self->common, source, monitors, &self->watch, error);
    ok = ok && qemu != NULL;
    if (ok)
        g_signal_connect (self->watch, "event", G_CALLBACK (qemu_event_cb), self);
    ok = ok && mirror (self, qemu, c, &run->copy_s, error)
         && vmr_bench_quit_qemu (&qemu, &self->watch, self, VMR_BENCH_THIN_STOP_TIMEOUT_S, error)
         && vmr_bench_thin_server_measure (&server, run->alloc, error)
         && vmr_bench_image_qemu_compare (source, "raw", server.uri, "raw", error);

    vmr_bench_close (&self->watch, self);
    vmr_bench_kill (&qemu);
    vmr_bench_thin_server_stop (&server);
    if (!ok)
        g_prefix_error (error, "run %u (%s): ", self->common->run_number, c->title);
    return ok;
}

/* every round of @c: the full source and the thin one, in turn first */
static gboolean
run_case (Nbd *self, const NbdCase *c, const VmrBenchThinSources *sources, GError **error)
{
    g_autoptr (VmrBenchThinCase) figures = vmr_bench_thin_case_new (
        c->title, sources, "export's map, not holes", c->export.memory ? NULL : "file's st_blocks");

    for (guint round = 0; round < self->common->rounds; round++) {
        VmrBenchThinRun full = { 0 };
        VmrBenchThinRun thin = { 0 };

        guint order[2];

        /* the full source first in even rounds, the thin one in odd ones */
        vmr_bench_round_order (round, 2, order);
        for (guint k = 0; k < 2; k++) {
            if (!(order[k] == 0
                      ? copy_once (self, c, sources->full_source, sources->data_size, &full, error)
                      : copy_once (self, c, sources->thin_source, sources->thin_size, &thin,
                                   error)))
                return FALSE;
        }
        vmr_bench_thin_case_add (figures, FALSE, round, &full);
        vmr_bench_thin_case_add (figures, TRUE, round, &thin);
    }
    vmr_bench_thin_case_report (figures);
    return TRUE;
}

/*
 * The thick source: the small thin one's data, its holes written as
 * zeroes; it shares the small full source
 */
static gboolean
make_thick (VmrBenchThin *common, const VmrBenchThinSources *small, VmrBenchThinSources *thick,
            GError **error)
{
    gint64 start = g_get_monotonic_time ();

    thick->thin_size = small->thin_size;
    thick->data_size = small->data_size;
    thick->thin_source = g_build_filename (common->image_dir, "source-nbd-thick.raw", NULL);
    thick->full_source = g_strdup (small->full_source);
    g_printerr ("writing a thick copy of the small thin source...");
    if (!vmr_bench_image_create_sparse_source (
            thick->thin_source, small->thin_size, small->data_size,
            vmr_bench_thin_extents (small->data_size), SMALL_SEED, error)
        || !vmr_bench_image_fill_holes (thick->thin_source, error)) {
        g_printerr ("\n");
        return FALSE;
    }
    g_printerr (" %.1f s\n", (gdouble) (g_get_monotonic_time () - start) / G_USEC_PER_SEC);
    return TRUE;
}

gboolean
vmr_bench_thin_run_nbd (VmrBenchThin *common, guint64 thin_size, guint64 data_size,
                        gboolean fallbacks, GError **error)
{
    g_autofree gchar *nbd_socket = g_build_filename (common->run_dir, "nbd.sock", NULL);
    g_autofree gchar *qemu_monitor = g_build_filename (common->run_dir, "qmp.sock", NULL);
    Nbd self = { common, nbd_socket, qemu_monitor, NULL, 0, NULL };
    VmrBenchThinSources sources = { 0 };
    VmrBenchThinSources small = { 0 };
    VmrBenchThinSources thick = { 0 };
    gboolean ok;

    g_print ("QEMU's own mirror to nbdkit exports, driven over QMP without virt-mirrord\n");
    ok = vmr_bench_thin_sources_create (common, &sources, "nbd", thin_size, data_size, 3, error)
         && (!fallbacks
             || (vmr_bench_thin_sources_create (common, &small, "nbd-small", thin_size / 8,
                                                data_size / 8, SMALL_SEED, error)
                 && make_thick (common, &small, &thick, error)));
    for (guint i = 0; ok && i < G_N_ELEMENTS (cases); i++) {
        const NbdCase *c = &cases[i];

        if (c->small && !fallbacks)
            continue;
        ok = run_case (&self, c, c->thick ? &thick : c->small ? &small : &sources, error);
    }
    if (ok)
        g_print ("\nQEMU %s (TCG, guest paused), %u CPUs, nbdkit on UNIX sockets, images under "
                 "%s\n",
                 common->qemu_version != NULL ? common->qemu_version : "?", g_get_num_processors (),
                 common->image_dir);
    vmr_bench_thin_sources_clear (&thick);
    vmr_bench_thin_sources_clear (&sources);
    vmr_bench_thin_sources_clear (&small);
    g_free (self.job_error);
    return ok;
}
