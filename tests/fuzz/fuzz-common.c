#include "fuzz-common.h"

#include <stdlib.h>

static GLogWriterOutput
quiet_writer (GLogLevelFlags log_level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    if (log_level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) {
        g_log_writer_default (log_level, fields, n_fields, user_data);
        abort ();
    }
    return G_LOG_WRITER_HANDLED;
}

/*
 * messages, warnings and debug output are dropped (bad input is logged at
 * every turn, thousands of times a second); a critical or an error still
 * aborts, which libFuzzer reports as a crash
 */
int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
    g_log_set_writer_func (quiet_writer, NULL, NULL);
    return 0;
}

GIOStream *
vmr_fuzz_stream_new (const guint8 *data, gsize size)
{
    g_autoptr (GInputStream) input = g_memory_input_stream_new ();
    g_autoptr (GOutputStream) output = g_memory_output_stream_new_resizable ();

    g_memory_input_stream_add_data (G_MEMORY_INPUT_STREAM (input), g_memdup2 (data, size),
                                    (gssize) size, g_free);
    return g_simple_io_stream_new (input, output);
}

static void
finalized_cb (gpointer data, GObject *where_the_object_was)
{
    *(gboolean *) data = TRUE;
}

void
vmr_fuzz_run_until_finalized (gpointer object)
{
    gboolean finalized = FALSE;

    g_object_weak_ref (object, finalized_cb, &finalized);
    g_object_unref (object);
    /* whatever the input, it ends: a stream that never does is a hang for libFuzzer to report */
    while (!finalized)
        g_main_context_iteration (NULL, TRUE);
}
