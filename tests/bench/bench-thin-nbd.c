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

#include <errno.h>
#include <signal.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "bench-image.h"
#include "bench-process.h"
#include "bench-thin.h"
#include "vmr-error.h"
#include "vmr-json.h"

/* one way to serve the destination, and the target node QEMU gets */
typedef struct {
    const gchar *title;
    gboolean memory;            /* nbdkit's memory plugin; else its file plugin on a sparse file */
    const gchar *zeromode;      /* the nozero filter's zeromode, NULL: no filter */
    const gchar *fastzeromode;  /* and its fastzeromode, NULL: its default */
    const gchar *discard;       /* the raw node's, NULL: QEMU's default (ignore) */
    const gchar *detect_zeroes; /* the raw node's, NULL: QEMU's default (off) */
    gboolean small;             /* at an eighth of the sizes: zeroes may become data */
    gboolean thick;             /* the small thin source with its holes written as zeroes */
} NbdCase;

#define THIN_OPTIONS "unmap", "unmap"
#define DEFAULTS     NULL, NULL

static const NbdCase cases[] = {
    { "nbdkit memory, discard=unmap detect-zeroes=unmap", TRUE, NULL, NULL, THIN_OPTIONS },
    { "nbdkit memory, QEMU's defaults (discard=ignore)", TRUE, NULL, NULL, DEFAULTS },
    { "nbdkit file, discard=unmap detect-zeroes=unmap", FALSE, NULL, NULL, THIN_OPTIONS },
    { "nbdkit file, QEMU's defaults (discard=ignore)", FALSE, NULL, NULL, DEFAULTS, TRUE },
    { "nbdkit file, fast zero off (nozero zeromode=plugin fastzeromode=none), discard=unmap", FALSE,
      "plugin", "none", THIN_OPTIONS, TRUE },
    { "nbdkit file, zero without trim (nozero zeromode=notrim), discard=unmap", FALSE, "notrim",
      NULL, THIN_OPTIONS, TRUE },
    { "nbdkit file, zero emulated by writes (nozero zeromode=emulate), discard=unmap", FALSE,
      "emulate", NULL, THIN_OPTIONS, TRUE },
    { "nbdkit file, zero emulated by writes (nozero zeromode=emulate), discard=ignore", FALSE,
      "emulate", NULL, DEFAULTS, TRUE },
    { "nbdkit file, no zero (nozero zeromode=none), discard=unmap", FALSE, "none", NULL,
      THIN_OPTIONS, TRUE },
    { "nbdkit file, thick source (holes written as zeroes), discard=unmap detect-zeroes=unmap",
      FALSE, NULL, NULL, THIN_OPTIONS, TRUE, TRUE },
    { "nbdkit file, thick source (holes written as zeroes), discard=unmap, no detect-zeroes", FALSE,
      NULL, NULL, "unmap", NULL, TRUE, TRUE },
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

/* ---- nbdkit ---- */

/* starts nbdkit serving @c's export of @size bytes (in @export_file for the file plugin) */
static GSubprocess *
start_nbdkit (Nbd *self, const NbdCase *c, guint64 size, const gchar *export_file, GError **error)
{
    g_autofree gchar *log
        = g_strdup_printf ("%s/nbdkit-%u.log", self->common->run_dir, self->common->run_number);
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GSubprocess) nbdkit = NULL;
    gint64 deadline = g_get_monotonic_time () + VMR_BENCH_THIN_START_TIMEOUT_S * G_USEC_PER_SEC;

    g_ptr_array_add (argv, g_strdup ("nbdkit"));
    g_ptr_array_add (argv, g_strdup ("-f"));
    g_ptr_array_add (argv, g_strdup ("-U"));
    g_ptr_array_add (argv, g_strdup (self->nbd_socket));
    if (c->zeromode != NULL)
        g_ptr_array_add (argv, g_strdup ("--filter=nozero"));
    if (c->memory) {
        g_ptr_array_add (argv, g_strdup ("memory"));
        g_ptr_array_add (argv, g_strdup_printf ("size=%" G_GUINT64_FORMAT, size));
    } else {
        g_ptr_array_add (argv, g_strdup ("file"));
        g_ptr_array_add (argv, g_strdup_printf ("file=%s", export_file));
    }
    if (c->zeromode != NULL)
        g_ptr_array_add (argv, g_strdup_printf ("zeromode=%s", c->zeromode));
    if (c->fastzeromode != NULL)
        g_ptr_array_add (argv, g_strdup_printf ("fastzeromode=%s", c->fastzeromode));
    g_ptr_array_add (argv, NULL);

    if (!c->memory && !vmr_bench_image_create_destination (export_file, size, error))
        return NULL;
    nbdkit
        = vmr_bench_spawn ((const gchar *const *) argv->pdata, self->common->run_dir, log, error);
    if (nbdkit == NULL) {
        g_prefix_error (error, "cannot start nbdkit: ");
        return NULL;
    }
    /* it creates its socket once it listens */
    while (!g_file_test (self->nbd_socket, G_FILE_TEST_EXISTS)) {
        g_main_context_iteration (NULL, FALSE);
        if (!vmr_bench_is_running (nbdkit) || g_get_monotonic_time () > deadline) {
            g_autofree gchar *tail = vmr_bench_log_tail (log, 3);

            g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "nbdkit did not listen on %s: %s",
                         self->nbd_socket, tail);
            vmr_bench_kill (&nbdkit);
            return NULL;
        }
        g_usleep (10 * 1000);
    }
    return g_steal_pointer (&nbdkit);
}

/* SIGTERM, so that nbdkit removes its socket; SIGKILL when it does not exit */
static void
stop_nbdkit (Nbd *self, GSubprocess **nbdkit)
{
    if (*nbdkit != NULL && vmr_bench_is_running (*nbdkit)) {
        g_subprocess_send_signal (*nbdkit, SIGTERM);
        vmr_bench_wait_exit (*nbdkit, VMR_BENCH_THIN_STOP_TIMEOUT_S);
    }
    vmr_bench_kill (nbdkit);
    if (g_unlink (self->nbd_socket) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", self->nbd_socket, g_strerror (errno));
}

/* what `nbdinfo --map` reports as not a hole (type bit 0 clear) on @uri */
static gboolean
map_allocated (const gchar *uri, guint64 *out_bytes, GError **error)
{
    g_autoptr (GSubprocess) proc = NULL;
    g_autoptr (JsonParser) parser = json_parser_new ();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    JsonNode *root;
    JsonArray *extents;

    proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, error,
                             "nbdinfo", "--map", "--json", uri, NULL);
    if (proc == NULL || !g_subprocess_communicate_utf8 (proc, NULL, NULL, &out, &err, error))
        return FALSE;
    if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED, "nbdinfo --map %s failed: %s", uri,
                     g_strstrip (err));
        return FALSE;
    }
    if (!json_parser_load_from_data (parser, out, -1, error))
        return FALSE;
    root = json_parser_get_root (parser);
    extents = root != NULL && JSON_NODE_HOLDS_ARRAY (root) ? json_node_get_array (root) : NULL;
    if (extents == NULL) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "nbdinfo --map %s: no array", uri);
        return FALSE;
    }
    *out_bytes = 0;
    for (guint i = 0; i < json_array_get_length (extents); i++) {
        JsonObject *extent = json_array_get_object_element (extents, i);
        guint64 length = 0, type = 0;

        if (extent == NULL || !vmr_json_get_uint (extent, "length", &length)
            || !vmr_json_get_uint (extent, "type", &type)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL, "nbdinfo --map %s: bad extent %u",
                         uri, i);
            return FALSE;
        }
        if ((type & 1) == 0)
            *out_bytes += length;
    }
    return TRUE;
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
    g_autofree gchar *export_file = NULL;
    g_autofree gchar *uri = g_strdup_printf ("nbd+unix:///?socket=%s", self->nbd_socket);
    g_autoptr (GSubprocess) nbdkit = NULL;
    g_autoptr (GSubprocess) qemu = NULL;
    gboolean ok;

    self->common->run_number++;
    export_file
        = g_strdup_printf ("%s/export-%u.img", self->common->image_dir, self->common->run_number);
    self->end_mono = 0;
    g_clear_pointer (&self->job_error, g_free);

    nbdkit = start_nbdkit (self, c, size, export_file, error);
    ok = nbdkit != NULL;
    if (ok)
        qemu = vmr_bench_thin_start_qemu (self->common, source, monitors, &self->watch, error);
    ok = ok && qemu != NULL;
    if (ok)
        g_signal_connect (self->watch, "event", G_CALLBACK (qemu_event_cb), self);
    ok = ok && mirror (self, qemu, c, &run->copy_s, error)
         && vmr_bench_thin_quit_qemu (&qemu, &self->watch, self, error)
         && map_allocated (uri, &run->alloc[0], error)
         && (c->memory || vmr_bench_image_allocated (export_file, "raw", &run->alloc[1], error))
         && vmr_bench_image_qemu_compare (source, "raw", uri, "raw", error);

    vmr_bench_close (&self->watch, self);
    vmr_bench_kill (&qemu);
    stop_nbdkit (self, &nbdkit);
    if (!c->memory && g_unlink (export_file) < 0 && errno != ENOENT)
        g_warning ("cannot remove %s: %s", export_file, g_strerror (errno));
    if (!ok)
        g_prefix_error (error, "run %u (%s): ", self->common->run_number, c->title);
    return ok;
}

/* every round of @c: the full source, then the thin one */
static gboolean
run_case (Nbd *self, const NbdCase *c, const VmrBenchThinSources *sources, GError **error)
{
    g_autoptr (VmrBenchThinCase) figures = vmr_bench_thin_case_new (
        c->title, sources, "export's map, not holes", c->memory ? NULL : "file's st_blocks");

    for (guint round = 0; round < self->common->rounds; round++) {
        VmrBenchThinRun full = { 0 };
        VmrBenchThinRun thin = { 0 };

        if (!copy_once (self, c, sources->full_source, sources->data_size, &full, error)
            || !copy_once (self, c, sources->thin_source, sources->thin_size, &thin, error))
            return FALSE;
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
