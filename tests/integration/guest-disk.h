/*
 * How the test guest's disk can be opened: with the host's cache off
 * (cache.direct=on) only where its image takes O_DIRECT.
 *
 * Shared by the integration harness and the benchmarks: it knows nothing of
 * GTest.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* whether @path can be read with O_DIRECT, which cache.direct=on needs (tmpfs cannot) */
gboolean vmr_guest_disk_takes_o_direct (const gchar *path);

G_END_DECLS
