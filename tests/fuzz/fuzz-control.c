/*
 * libFuzzer harness: what a client sends on the control socket. The input
 * is the client's byte stream, served by the real control server of a
 * daemon with no domains and no jobs: framing, dispatch, the check of each
 * command's arguments and the command's own reading of them.
 */
#include <stdlib.h>

#include <glib/gstdio.h>

#include "control-server-private.h"
#include "fuzz-common.h"

static gchar *state_dir;

/* the daemon's state directory stays empty: it has no jobs */
static void
remove_state_dir (void)
{
    g_rmdir (state_dir);
}

/* a daemon with no domains and no jobs, made once */
static VmrControlServer *
daemon_server (void)
{
    static VmrControlServer *server;
    g_autoptr (GError) error = NULL;
    g_autoptr (VmrEngine) engine = NULL;

    if (server != NULL)
        return server;
    state_dir = g_dir_make_tmp ("vmr-fuzz-control-XXXXXX", &error);
    g_assert_no_error (error);
    atexit (remove_state_dir);
    engine = vmr_engine_new (state_dir);
    server = vmr_control_server_new (engine);
    return server;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    GIOStream *io = vmr_fuzz_stream_new (data, size);

    vmr_control_server_serve (daemon_server (), io, FALSE);
    /* the client is gone once every command it sent has been answered */
    vmr_fuzz_run_until_finalized (io);
    return 0;
}
