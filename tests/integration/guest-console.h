/*
 * The serial console of the test guest (tests/guest), read on a thread of
 * its own so that every line gets the time it arrived, whatever the test is
 * blocked on, and so that QEMU never waits on a full pipe.
 *
 * Shared by the integration harness and the benchmarks: it knows nothing of
 * GTest.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* one line of the console, without its line end */
typedef struct {
    gchar *text;
    gint64 mono_us; /* arrival, g_get_monotonic_time () */
    gint64 real_us; /* arrival, g_get_real_time (): comparable with the daemon's times */
} VmrConsoleLine;

/* a `VMR-IOPS <uptime_s> <read_iops> <write_iops> <mean_lat_usec>` line */
typedef struct {
    gdouble uptime_s;   /* the guest's uptime when fio reported */
    gdouble interval_s; /* since the previous VMR-IOPS line, 0 for the first */
    gdouble read_iops;
    gdouble write_iops;
    gdouble latency_us;
    gint64 mono_us; /* arrival of the line */
    gint64 real_us;
} VmrGuestIops;

void vmr_console_line_free (VmrConsoleLine *line);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrConsoleLine, vmr_console_line_free)

typedef struct _VmrGuestConsole VmrGuestConsole;

/*
 * Starts reading @fd (taken: closed by vmr_guest_console_free()). Every line
 * is also appended to @log_path when it is not NULL. Never fails: a log
 * that cannot be opened is skipped with a warning.
 */
VmrGuestConsole *vmr_guest_console_new (int fd, const gchar *log_path);

/* stops the reader, even when the writer still has the pipe open */
void vmr_guest_console_free (VmrGuestConsole *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrGuestConsole, vmr_guest_console_free)

/*
 * Waits until a line at index @from or later contains @needle, until
 * @deadline_mono_us (g_get_monotonic_time ()) or the end of the console.
 * Returns the index of the line, -1 on timeout or end; a copy of the line
 * in *@out_line when it is not NULL (free with vmr_console_line_free ()).
 */
gint vmr_guest_console_wait (VmrGuestConsole *self, const gchar *needle, guint from,
                             gint64 deadline_mono_us, VmrConsoleLine **out_line);

/* the number of lines read so far */
guint vmr_guest_console_count (VmrGuestConsole *self);

/* TRUE once the writer closed the console (QEMU exited) */
gboolean vmr_guest_console_ended (VmrGuestConsole *self);

/* the last @n lines joined with newlines, for messages; free with g_free () */
gchar *vmr_guest_console_tail (VmrGuestConsole *self, guint n);

/* every VMR-IOPS line so far, parsed, oldest first; an array of VmrGuestIops */
GArray *vmr_guest_console_get_iops (VmrGuestConsole *self);

/* parses a line holding VMR-IOPS (after any terminal escapes); FALSE when it is not one */
gboolean vmr_guest_iops_parse (const gchar *line, VmrGuestIops *out);

/*
 * The guest's mean read + write IOPS over [@from_mono_us, @to_mono_us]
 * (monotonic time of the host): each line counts for the part of its
 * interval (which ends when the line arrived) inside the span. The first
 * line, which holds fio's start, is left out. The mean latency of those
 * I/Os in @out_latency_us, and how many lines counted in @out_lines, when
 * not NULL. Returns -1 when no line falls in the span.
 */
gdouble vmr_guest_iops_mean (GArray *iops, gint64 from_mono_us, gint64 to_mono_us,
                             gdouble *out_latency_us, guint *out_lines);

G_END_DECLS
