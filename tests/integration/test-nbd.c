#define G_LOG_DOMAIN "vmr-test"

/*
 * Disks moved to NBD exports served by real servers (nbdkit's memory plugin
 * and its error and delay filters, qemu-nbd), over UNIX sockets and TCP,
 * with and without TLS (certificates made by certtool in the test). The
 * preflight refuses each unusable export with one line before QEMU is
 * touched; a copy ends on the export, whose bytes are read back through the
 * server; a cancelled or failed copy leaves no node and no TLS object in
 * QEMU and the VM on its source.
 */

#include "nbd-fixture.h"

#define IMAGE_SIZE (32 * 1024 * 1024)
#define WRITES     30
/* slow enough that the copy still runs while the guest writes */
#define WRITE_PHASE_SPEED "4M"

/* ---- the preflight refuses, and QEMU is left as it was ---- */

typedef struct {
    const gchar *name;
    const gchar *server; /* the server to start: see start_case_server() */
    const gchar *uri;    /* @S: the server's socket, @P: its port */
    const gchar *tls;    /* --tls-creds: "client", "wrong-ca" or NULL */
    const gchar *reason; /* a part of the error line */
} PreflightCase;

static const PreflightCase preflight_cases[] = {
    { "malformed", NULL, "nbd://127.0.0.1:0/x", NULL, "malformed NBD URI 'nbd://127.0.0.1:0/x'" },
    { "not-nbd", NULL, "http://127.0.0.1/x", NULL, "the scheme must be nbd" },
    { "unreachable", NULL, "nbd://192.0.2.1:10809/x", NULL,
      "cannot connect to nbd://192.0.2.1:10809/x" },
    { "no-socket", NULL, "nbd+unix:///x?socket=@S", NULL, "cannot connect to nbd+unix:///x" },
    { "refused", NULL, "nbd://127.0.0.1:@P/x", NULL, "Connection refused" },
    { "no-such-export", "qemu-nbd", "nbd+unix:///other?socket=@S", NULL, "other" },
    { "too-small", "small", "nbd+unix:///?socket=@S", NULL,
      "is smaller than the source (16 MiB < 32 MiB)" },
    { "read-only", "read-only", "nbd+unix:///?socket=@S", NULL, "is read-only" },
    { "tls-required", "tls", "nbd://127.0.0.1:@P/", NULL, "TLS" },
    { "tls-no-creds", "tls", "nbds://127.0.0.1:@P/", NULL,
      "asks for TLS but no credentials were given" },
    { "wrong-ca", "tls", "nbds://127.0.0.1:@P/", "wrong-ca", "cannot connect" },
};

static gchar *
expand (const gchar *text, const gchar *socket, guint port)
{
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    g_autoptr (GString) out = g_string_new (text);

    g_string_replace (out, "@S", socket, 0);
    g_string_replace (out, "@P", port_text, 0);
    return g_string_free (g_steal_pointer (&out), FALSE);
}

static void
start_case_server (VmrNbdTest *t, const gchar *server, const gchar *socket, guint port)
{
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    g_autofree gchar *image = NULL;
    g_autofree gchar *tls_dir = NULL;
    g_autofree gchar *tls_arg = NULL;

    if (g_strcmp0 (server, "qemu-nbd") == 0) {
        image = vmr_harness_create_file (&t->h, "export.raw", IMAGE_SIZE, 0);
        {
            const gchar *argv[]
                = { "qemu-nbd", "-f", "raw", "-x", "export", "-t", "-k", socket, image, NULL };

            vmr_nbd_start_server (&t->servers, argv, socket, 0);
        }
    } else if (g_strcmp0 (server, "small") == 0) {
        const gchar *argv[] = { "nbdkit", "-f", "-U", socket, "memory", "16M", NULL };

        vmr_nbd_start_server (&t->servers, argv, socket, 0);
    } else if (g_strcmp0 (server, "read-only") == 0) {
        const gchar *argv[] = { "nbdkit", "-f", "-r", "-U", socket, "memory", "64M", NULL };

        vmr_nbd_start_server (&t->servers, argv, socket, 0);
    } else if (g_strcmp0 (server, "tls") == 0) {
        tls_dir = vmr_nbd_pki_dir (&t->servers, "server");
        tls_arg = g_strdup_printf ("--tls-certificates=%s", tls_dir);
        {
            const gchar *argv[]
                = { "nbdkit", "-f",      "--tls=require", tls_arg, "-i", "127.0.0.1",
                    "-p",     port_text, "memory",        "64M",   NULL };

            vmr_nbd_start_server (&t->servers, argv, NULL, port);
        }
    }
}

static void
test_preflight (VmrNbdTest *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *before = NULL;

    if (!vmr_nbd_require (&t->h))
        return;
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x9f1);
    before = vmr_nbd_qemu_state (h);
    for (guint i = 0; i < G_N_ELEMENTS (preflight_cases); i++) {
        const PreflightCase *c = &preflight_cases[i];
        g_autofree gchar *name = g_strdup_printf ("case-%u.sock", i);
        g_autofree gchar *socket = vmr_harness_path (h, name);
        guint port = vmr_nbd_free_port ();
        g_autofree gchar *uri = expand (c->uri, socket, port);
        g_autofree gchar *tls_dir = c->tls != NULL ? vmr_nbd_pki_dir (&t->servers, c->tls) : NULL;
        g_autofree gchar *after = NULL;
        g_autoptr (VmrCliResult) result = NULL;

        g_test_message ("case %s: %s", c->name, uri);
        start_case_server (t, c->server, socket, port);
        if (tls_dir != NULL)
            result
                = vmr_harness_cli (h, "migrate", "vm", "disk0", uri, "--tls-creds", tls_dir, NULL);
        else
            result = vmr_harness_cli (h, "migrate", "vm", "disk0", uri, NULL);
        g_test_message ("case %s: %s", c->name, result->err);
        vmr_cli_result_assert_error (result, 1);
        if (strstr (result->err, c->reason) == NULL)
            vmr_fail ("case %s: the error does not say '%s': %s", c->name, c->reason, result->err);
        /* nothing was asked of QEMU, and no job made */
        after = vmr_nbd_qemu_state (h);
        g_assert_cmpstr (after, ==, before);
        g_assert_cmpuint (vmr_harness_count_jobs (h), ==, 0);
    }
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* ---- copies ---- */

/* the string @member of the block node @name, or NULL when QEMU has none of that name */
static gchar *
node_string (VmrHarness *h, const gchar *name, const gchar *member)
{
    g_autoptr (JsonNode) nodes = vmr_harness_query_nodes (h);
    JsonArray *array = vmr_harness_json_node_array (nodes);

    for (guint i = 0; i < json_array_get_length (array); i++) {
        JsonObject *node = vmr_harness_json_element (array, i);

        if (g_strcmp0 (vmr_json_get_string (node, "node-name"), name) == 0)
            return g_strdup (vmr_harness_json_string (node, member));
    }
    return NULL;
}

typedef struct {
    const gchar *name;
    gboolean tcp;      /* TCP on 127.0.0.1, else a UNIX socket */
    gboolean tls;      /* nbds, credentials from the policy's tls-creds */
    gboolean qemu_nbd; /* qemu-nbd serving a file, else nbdkit's memory plugin */
    gboolean lacking;  /* nbdkit without structured replies or write zeroes */
} CopyCase;

static const CopyCase copy_unix = { "unix-nbdkit", FALSE, FALSE, FALSE };
static const CopyCase copy_tcp = { "tcp-qemu-nbd", TRUE, FALSE, TRUE };
static const CopyCase copy_tls = { "tls-nbdkit", TRUE, TRUE, FALSE };
/* a server that lacks features the copy does without */
static const CopyCase copy_lacking = { "unix-nbdkit-no-sr-no-zero", FALSE, FALSE, FALSE, TRUE };

/* the policy of the copy tests: the NBD keys, so that the job shows where they came from */
static void
start_daemon_with_policy (VmrNbdTest *t)
{
    g_autofree gchar *client = vmr_nbd_pki_dir (&t->servers, "client");
    g_autofree gchar *text
        = g_strdup_printf ("[defaults]\nreconnect-delay = 5s\ntls-creds = %s\n", client);
    g_autofree gchar *policy = vmr_harness_write_policy (&t->h, text);

    vmr_harness_start_daemon (&t->h, "--policy", policy, NULL);
}

/* starts the server of @c; returns the URI of its export */
static gchar *
start_copy_server (VmrNbdTest *t, const CopyCase *c)
{
    g_autofree gchar *socket = vmr_harness_path (&t->h, "export.sock");
    g_autofree gchar *tls_dir = vmr_nbd_pki_dir (&t->servers, "server");
    g_autofree gchar *tls_arg = g_strdup_printf ("--tls-certificates=%s", tls_dir);
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
    g_autofree gchar *image = NULL;

    if (c->qemu_nbd) {
        image = vmr_harness_create_file (&t->h, "export.raw", IMAGE_SIZE, 0);
        g_ptr_array_add (argv, g_strdup ("qemu-nbd"));
        g_ptr_array_add (argv, g_strdup ("-f"));
        g_ptr_array_add (argv, g_strdup ("raw"));
        g_ptr_array_add (argv, g_strdup ("-t"));
        g_ptr_array_add (argv, g_strdup ("-e"));
        g_ptr_array_add (argv, g_strdup ("4"));
        g_ptr_array_add (argv, g_strdup ("-x"));
        g_ptr_array_add (argv, g_strdup ("export"));
    } else {
        g_ptr_array_add (argv, g_strdup ("nbdkit"));
        g_ptr_array_add (argv, g_strdup ("-f"));
        if (c->lacking) {
            g_ptr_array_add (argv, g_strdup ("--no-sr"));
            g_ptr_array_add (argv, g_strdup ("--filter=nozero"));
        }
        if (c->tls) {
            g_ptr_array_add (argv, g_strdup ("--tls=require"));
            g_ptr_array_add (argv, g_strdup (tls_arg));
        }
    }
    if (c->tcp) {
        g_ptr_array_add (argv, g_strdup (c->qemu_nbd ? "-b" : "-i"));
        g_ptr_array_add (argv, g_strdup ("127.0.0.1"));
        g_ptr_array_add (argv, g_strdup ("-p"));
        g_ptr_array_add (argv, g_strdup (port_text));
    } else {
        g_ptr_array_add (argv, g_strdup (c->qemu_nbd ? "-k" : "-U"));
        g_ptr_array_add (argv, g_strdup (socket));
    }
    if (c->qemu_nbd) {
        g_ptr_array_add (argv, g_strdup (image));
    } else {
        g_ptr_array_add (argv, g_strdup ("memory"));
        g_ptr_array_add (argv, g_strdup ("32M"));
    }
    g_ptr_array_add (argv, NULL);
    vmr_nbd_start_server (&t->servers, (const gchar *const *) argv->pdata, c->tcp ? NULL : socket,
                          port);
    if (!c->tcp)
        return g_strdup_printf ("nbd+unix:///?socket=%s", socket);
    return g_strdup_printf ("%s://127.0.0.1:%u/%s", c->tls ? "nbds" : "nbd", port,
                            c->qemu_nbd ? "export" : "");
}

/* `job ID --json` and `job ID`: what the preflight found and the policy's options */
static void
assert_job_shows_export (VmrHarness *h, const gchar *id, const CopyCase *c, const gchar *tls_dir)
{
    g_autoptr (JsonNode) node = vmr_harness_cli_json (h, "job", id, NULL);
    JsonObject *nbd = vmr_harness_json_object (vmr_harness_json_node_object (node), "nbd");
    g_autoptr (VmrCliResult) text = vmr_harness_cli (h, "job", id, NULL);

    g_assert_cmpint (vmr_harness_json_int (nbd, "size"), ==, IMAGE_SIZE);
    g_assert_cmpint (vmr_harness_json_bool (nbd, "tls"), ==, c->tls);
    /* both servers speak structured replies and zero and trim, unless made not to */
    g_assert_cmpint (vmr_harness_json_bool (nbd, "structured-replies"), ==, !c->lacking);
    g_assert_cmpint (vmr_harness_json_bool (nbd, "can-zero"), ==, !c->lacking);
    g_assert_true (vmr_harness_json_bool (nbd, "can-trim"));
    /* qemu-nbd names a preferred block size, nbdkit's memory plugin none (0) */
    g_assert_cmpint (vmr_harness_json_int (nbd, "preferred-block-size") > 0, ==, c->qemu_nbd);
    g_assert_cmpint (vmr_harness_json_int (nbd, "reconnect-delay"), ==, 5);
    /* the node's options for the zero capabilities, and the cost of lacking them */
    g_assert_cmpstr (vmr_harness_json_string (nbd, "detect-zeroes"), ==,
                     c->lacking ? "off" : "unmap");
    g_assert_cmpint (vmr_json_get_string (nbd, "zero-fallback") != NULL, ==, c->lacking);
    if (c->tls)
        g_assert_cmpstr (vmr_harness_json_string (nbd, "tls-creds"), ==, tls_dir);
    vmr_cli_result_assert_ok (text);
    if (strstr (text->out, "Export") == NULL || strstr (text->out, "structured replies") == NULL)
        vmr_fail ("`job %s` does not show the export: %s", id, text->out);
    if (c->lacking && strstr (text->out, "written as data") == NULL)
        vmr_fail ("`job %s` does not say what the lack of zeroes costs: %s", id, text->out);
}

static void
test_copy (VmrNbdTest *t, gconstpointer user_data)
{
    const CopyCase *c = user_data;
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *client = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *dest_node = NULL;
    g_autofree gchar *tls_object = NULL;
    g_autofree gchar *state = NULL;
    g_autofree gchar *driver = NULL;
    g_autofree gchar *file_node = NULL;
    g_autofree gchar *detect_zeroes = NULL;
    g_autoptr (JsonObject) job = NULL;

    if (!vmr_nbd_require (&t->h))
        return;
    client = vmr_nbd_pki_dir (&t->servers, "client");
    start_daemon_with_policy (t);
    uri = start_copy_server (t, c);
    vmr_harness_start_vm (h, &vm, IMAGE_SIZE, 0x7b1);
    id = vmr_harness_migrate (h, "vm", "disk0", uri, "--speed", WRITE_PHASE_SPEED, NULL);
    vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S);
    dest_node = g_strdup_printf ("%s-dst", id);
    tls_object = g_strdup_printf ("%s-dst-tls", id);
    /* an nbds copy has its TLS object, a plain one none */
    state = vmr_nbd_qemu_state (h);
    g_assert_cmpint (strstr (state, tls_object) != NULL, ==, c->tls);
    vmr_harness_writer_write (vm.writer, WRITES);
    g_clear_pointer (&job, json_object_unref);
    job = vmr_harness_job_command (h, "set-speed", id, "0");
    job = (json_object_unref (job),
           vmr_harness_wait_job (h, id, "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    assert_job_shows_export (h, id, c, client);
    /* the guest runs on the export now */
    g_free (state);
    state = vmr_nbd_device_node (h, "disk0");
    g_assert_cmpstr (state, ==, dest_node);
    file_node = g_strdup_printf ("%s-file", dest_node);
    driver = node_string (h, file_node, "drv");
    g_assert_cmpstr (driver, ==, "nbd");
    /* zero buffers become zero writes that may trim, on a server that can zero */
    detect_zeroes = node_string (h, dest_node, "detect_zeroes");
    g_assert_cmpstr (detect_zeroes, ==, c->lacking ? "off" : "unmap");
    vmr_harness_assert_node_released (h, vm.source);
    vmr_harness_assert_job_record (h, id, "completed");
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_quit_qemu (h);
    vmr_nbd_assert_export_equals (&t->servers, uri, c->tls ? client : NULL, vm.expected);
}

/* ---- a copy that ends early leaves nothing behind ---- */

typedef struct {
    const gchar *name;
    const gchar *filter; /* nbdkit's filter, with its parameter after a space */
    gboolean cancel;     /* cancelled by a user, else failed by the server */
} EndCase;

/* writes the server takes slowly, so that the copy still runs when it is cancelled */
static const EndCase end_cancel = { "cancel", "delay delay-write=200ms", TRUE };
/* every write fails: the mirror fails on its first */
static const EndCase end_failure = { "failure", "error error-pwrite-rate=100%", FALSE };

/*
 * nbdkit's memory plugin over TLS on 127.0.0.1 with @filter ("NAME PARAM"),
 * a VM on a fresh disk, and a slow copy of it to the export started with the
 * client's credentials; @before is what QEMU held before the copy. Returns
 * the job's id; *@out_uri is the export's URI.
 */
static gchar *
start_tls_copy (VmrNbdTest *t, const gchar *filter, VmrHarnessVm *vm, gchar **out_uri,
                gchar **out_before)
{
    VmrHarness *h = &t->h;
    g_auto (GStrv) parts = g_strsplit (filter, " ", 2);
    g_autofree gchar *server_dir = vmr_nbd_pki_dir (&t->servers, "server");
    g_autofree gchar *client = vmr_nbd_pki_dir (&t->servers, "client");
    g_autofree gchar *tls_arg = g_strdup_printf ("--tls-certificates=%s", server_dir);
    g_autofree gchar *filter_arg = g_strdup_printf ("--filter=%s", parts[0]);
    guint port = vmr_nbd_free_port ();
    g_autofree gchar *port_text = g_strdup_printf ("%u", port);
    const gchar *argv[]
        = { "nbdkit", "-f",      "--tls=require", tls_arg, filter_arg, "-i", "127.0.0.1",
            "-p",     port_text, "memory",        "32M",   parts[1],   NULL };

    vmr_nbd_start_server (&t->servers, argv, NULL, port);
    *out_uri = g_strdup_printf ("nbds://127.0.0.1:%u/", port);
    vmr_harness_start_vm (h, vm, IMAGE_SIZE, 0xe4d);
    *out_before = vmr_nbd_qemu_state (h);
    return vmr_harness_migrate (h, "vm", "disk0", *out_uri, "--tls-creds", client, "--speed",
                                VMR_HARNESS_SLOW_SPEED, NULL);
}

static void
test_end (VmrNbdTest *t, gconstpointer user_data)
{
    const EndCase *c = user_data;
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autoptr (JsonObject) job = NULL;

    if (!vmr_nbd_require (&t->h))
        return;
    id = start_tls_copy (t, c->filter, &vm, &uri, &before);
    if (c->cancel) {
        g_autofree gchar *during = NULL;

        json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
        during = vmr_nbd_qemu_state (h);
        g_assert_cmpstr (during, !=, before);
        vmr_harness_writer_write (vm.writer, WRITES);
        json_object_unref (vmr_harness_job_command (h, "cancel", id, NULL));
        job = vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S);
    } else {
        job = vmr_harness_wait_job (h, id, "failed", VMR_HARNESS_JOB_TIMEOUT_S);
        g_test_message ("failed: %s", vmr_harness_json_string (job, "reason"));
    }
    /* no node of the export, no TLS object: QEMU is as before the copy */
    after = vmr_nbd_qemu_state (h);
    g_assert_cmpstr (after, ==, before);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* ---- a daemon that dies in the middle of a copy ---- */

/*
 * The successor picks the nbds copy up from its record (the export's facts
 * and TLS directory with it); cancelled then, the node and the TLS object
 * go as they would have before the restart.
 */
static void
test_restart (VmrNbdTest *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_auto (VmrHarnessVm) vm = { 0 };
    g_autofree gchar *client = NULL;
    g_autofree gchar *uri = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;
    g_autoptr (JsonObject) adopted = NULL;
    JsonObject *nbd;

    if (!vmr_nbd_require (&t->h))
        return;
    client = vmr_nbd_pki_dir (&t->servers, "client");
    id = start_tls_copy (t, "delay delay-write=200ms", &vm, &uri, &before);
    json_object_unref (vmr_harness_wait_job (h, id, "copying", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_kill_daemon (h);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_restart_daemon (h, NULL);
    vmr_harness_attach (h, "vm");
    adopted = vmr_harness_wait_adopted (h, id);
    g_assert_cmpstr (vmr_json_job_state (adopted), ==, "copying");
    g_assert_cmpstr (vmr_harness_json_string (adopted, "destination"), ==, uri);
    nbd = vmr_harness_json_object (adopted, "nbd");
    g_assert_cmpint (vmr_harness_json_int (nbd, "size"), ==, IMAGE_SIZE);
    g_assert_true (vmr_harness_json_bool (nbd, "tls"));
    g_assert_cmpstr (vmr_harness_json_string (nbd, "tls-creds"), ==, client);
    json_object_unref (vmr_harness_job_command (h, "cancel", id, NULL));
    json_object_unref (vmr_harness_wait_job (h, id, "cancelled", VMR_HARNESS_JOB_TIMEOUT_S));
    after = vmr_nbd_qemu_state (h);
    g_assert_cmpstr (after, ==, before);
    vmr_harness_writer_write (vm.writer, WRITES);
    vmr_harness_assert_stays_on_source (h, "disk0", vm.source, "raw", vm.expected);
}

/* ---- a group of disks to two servers ---- */

/* disk0 and disk1 of one VM to the exports of two nbdkits: they cut over together */
static void
test_group (VmrNbdTest *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    VmrHarnessDisk disks[] = {
        { .id = "disk0", .format = "raw", .scsi = TRUE },
        { .id = "disk1", .format = "raw", .scsi = TRUE },
    };
    gchar *sources[2] = { NULL, NULL };
    gchar *expected[2] = { NULL, NULL };
    gchar *uris[2] = { NULL, NULL };
    g_autoptr (VmrHarnessWriter) writer0 = NULL;
    g_autoptr (VmrHarnessWriter) writer1 = NULL;
    g_autoptr (VmrCliResult) result = NULL;

    if (!vmr_nbd_require (&t->h))
        return;
    for (guint i = 0; i < 2; i++) {
        g_autofree gchar *name = g_strdup_printf ("source%u.raw", i);
        g_autofree gchar *socket_name = g_strdup_printf ("export%u.sock", i);
        g_autofree gchar *socket = vmr_harness_path (h, socket_name);
        const gchar *argv[] = { "nbdkit", "-f", "-U", socket, "memory", "32M", NULL };

        vmr_nbd_start_server (&t->servers, argv, socket, 0);
        uris[i] = g_strdup_printf ("nbd+unix:///?socket=%s", socket);
        sources[i] = vmr_harness_create_image (h, name, "raw", IMAGE_SIZE, 0x960 + i);
        expected[i] = vmr_harness_expected_path (sources[i]);
        disks[i].path = sources[i];
    }
    vmr_harness_start_qemu (h, disks, 2);
    writer0 = vmr_harness_writer_new (h, "disk0", expected[0], 0x961);
    writer1 = vmr_harness_writer_new (h, "disk1", expected[1], 0x962);
    vmr_harness_attach (h, "vm");
    vmr_harness_writer_write (writer0, WRITES);
    vmr_harness_writer_write (writer1, WRITES);
    result
        = vmr_harness_cli (h, "migrate", "vm", "disk0", uris[0], "disk1", uris[1], "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    for (guint i = 0; i < 2; i++) {
        g_autofree gchar *id = g_strdup_printf ("vmr-%u", i + 1);
        g_autoptr (JsonObject) job = vmr_harness_get_job (h, id);

        g_assert_cmpstr (vmr_harness_json_string (job, "state"), ==, "completed");
        g_assert_cmpstr (vmr_harness_json_string (job, "group"), ==, "vmr-1");
        vmr_harness_assert_node_released (h, sources[i]);
    }
    vmr_harness_writer_write (writer0, WRITES);
    vmr_harness_writer_write (writer1, WRITES);
    vmr_harness_quit_qemu (h);
    for (guint i = 0; i < 2; i++) {
        vmr_nbd_assert_export_equals (&t->servers, uris[i], NULL, expected[i]);
        g_free (sources[i]);
        g_free (expected[i]);
        g_free (uris[i]);
    }
}

/* ---- evacuate --to an NBD server ---- */

/*
 * The disk under old/ moves to the export of the same name that nbdkit's
 * file plugin serves from a directory (one export per file); the export's
 * file holds the guest's bytes at the end.
 */
static void
test_evacuate (VmrNbdTest *t, gconstpointer user_data)
{
    VmrHarness *h = &t->h;
    g_autofree gchar *old_dir = vmr_harness_path (h, "old");
    g_autofree gchar *exports = vmr_harness_path (h, "exports");
    g_autofree gchar *socket = vmr_harness_path (h, "exports.sock");
    g_autofree gchar *dir_arg = g_strdup_printf ("dir=%s", exports);
    g_autofree gchar *to = g_strdup_printf ("nbd+unix:///?socket=%s", socket);
    g_autofree gchar *export_uri = g_strdup_printf ("nbd+unix:///vm.raw?socket=%s", socket);
    g_autofree gchar *source = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *export_file = NULL;
    g_autoptr (VmrHarnessWriter) writer = NULL;
    g_autoptr (VmrCliResult) result = NULL;
    VmrHarnessDisk disk = { .id = "disk0", .format = "raw", .scsi = TRUE };
    const gchar *argv[] = { "nbdkit", "-f", "-U", socket, "file", dir_arg, NULL };

    if (!vmr_nbd_require (&t->h))
        return;
    g_assert_cmpint (g_mkdir_with_parents (old_dir, 0700), ==, 0);
    g_assert_cmpint (g_mkdir_with_parents (exports, 0700), ==, 0);
    export_file = vmr_harness_create_file (h, "exports/vm.raw", IMAGE_SIZE, 0);
    vmr_nbd_start_server (&t->servers, argv, socket, 0);
    source = vmr_harness_create_image (h, "old/vm.raw", "raw", IMAGE_SIZE, 0xe7a);
    expected = vmr_harness_expected_path (source);
    disk.path = source;
    vmr_harness_start_qemu (h, &disk, 1);
    writer = vmr_harness_writer_new (h, "disk0", expected, 0xe7b);
    vmr_harness_attach (h, "vm");

    result = vmr_harness_cli (h, "evacuate", "--from", old_dir, "--to", to, "--dry-run", NULL);
    vmr_cli_result_assert_ok (result);
    if (strstr (result->out, export_uri) == NULL)
        vmr_fail ("the plan does not send the disk to %s: %s", export_uri, result->out);
    g_clear_pointer (&result, vmr_cli_result_free);
    vmr_harness_writer_write (writer, WRITES);
    result = vmr_harness_cli (h, "evacuate", "--from", old_dir, "--to", to, "--wait", NULL);
    vmr_cli_result_assert_ok (result);
    json_object_unref (vmr_harness_wait_job (h, "vmr-1", "completed", VMR_HARNESS_JOB_TIMEOUT_S));
    vmr_harness_assert_node_released (h, source);
    vmr_harness_writer_write (writer, WRITES);
    vmr_harness_quit_qemu (h);
    vmr_nbd_assert_export_equals (&t->servers, export_uri, NULL, expected);
    vmr_harness_assert_image_equals (export_file, "raw", expected);
}

int
main (int argc, char **argv)
{
    vmr_harness_init (&argc, &argv);
    VMR_NBD_ADD ("/nbd/preflight", NULL, test_preflight);
    g_test_add ("/nbd/copy/unix-nbdkit", VmrNbdTest, &copy_unix, vmr_nbd_setup_no_daemon, test_copy,
                vmr_nbd_teardown);
    g_test_add ("/nbd/copy/tcp-qemu-nbd", VmrNbdTest, &copy_tcp, vmr_nbd_setup_no_daemon, test_copy,
                vmr_nbd_teardown);
    g_test_add ("/nbd/copy/no-sr-no-zero", VmrNbdTest, &copy_lacking, vmr_nbd_setup_no_daemon,
                test_copy, vmr_nbd_teardown);
    g_test_add ("/nbd/copy/tls-nbdkit", VmrNbdTest, &copy_tls, vmr_nbd_setup_no_daemon, test_copy,
                vmr_nbd_teardown);
    VMR_NBD_ADD ("/nbd/cancel-tls", &end_cancel, test_end);
    VMR_NBD_ADD ("/nbd/failure-tls", &end_failure, test_end);
    VMR_NBD_ADD ("/nbd/restart-tls", NULL, test_restart);
    VMR_NBD_ADD ("/nbd/group", NULL, test_group);
    VMR_NBD_ADD ("/nbd/evacuate", NULL, test_evacuate);
    return g_test_run ();
}
