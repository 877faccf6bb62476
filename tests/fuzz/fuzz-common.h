/*
 * What the harnesses share: quiet logs, a peer's bytes as a GIOStream that a
 * VmrQmpStream reads like a socket (what is written to it is kept and
 * dropped), and running the main loop until an object is gone.
 */
#pragma once

#include <stdint.h>

#include <gio/gio.h>

G_BEGIN_DECLS

/* libFuzzer's entry points: each harness defines the first, fuzz-common.c the second */
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

/* a stream that reads @size bytes of @data (copied) and then ends */
GIOStream *vmr_fuzz_stream_new (const guint8 *data, gsize size);

/* drops the reference @object (consumed) and iterates the default main context until it is
 * finalized */
void vmr_fuzz_run_until_finalized (gpointer object);

G_END_DECLS
