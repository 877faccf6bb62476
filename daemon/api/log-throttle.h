/*
 * One log line per interval for what a peer can make happen in a loop (a
 * refused connection): a client that connects a thousand times a second
 * must not flood the journal, which would then drop the daemon's other
 * messages. The lines left out are counted and said with the next one.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    gint64 interval_us; /* at most one line in this time */
    gint64 logged_us;   /* when the last line went out (monotonic), 0: never */
    guint left_out;     /* since then */
} VmrLogThrottle;

#define VMR_LOG_THROTTLE_INIT(interval_us)                                                         \
    {                                                                                              \
        (interval_us), 0, 0                                                                        \
    }

/*
 * TRUE when a line may go out now, with *@out_left_out the lines left out
 * since the last one; FALSE (and one more left out) otherwise
 */
gboolean vmr_log_throttle_pass (VmrLogThrottle *self, guint *out_left_out);

G_END_DECLS
