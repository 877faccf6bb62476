#define G_LOG_DOMAIN "vmr-test"

/*
 * The guest's console: a thread reads the pipe, stamps and keeps every
 * line; the test's thread waits on a condition for the line it needs.
 */

#include "guest-console.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib-unix.h>

struct _VmrGuestConsole {
    int fd;      /* the console pipe, read end */
    int wake[2]; /* written to by free() to stop the reader */
    FILE *log;   /* a copy of the console, or NULL */
    GThread *reader;
    GMutex lock;      /* guards the members below */
    GCond changed;    /* a line arrived or the console ended */
    GPtrArray *lines; /* of VmrConsoleLine */
    gboolean ended;
};

void
vmr_console_line_free (VmrConsoleLine *line)
{
    if (line == NULL)
        return;
    g_free (line->text);
    g_free (line);
}

static void
add_line (VmrGuestConsole *self, const gchar *text, gsize len)
{
    VmrConsoleLine *line = g_new0 (VmrConsoleLine, 1);

    /* the serial line ends with \r\n */
    while (len > 0 && (text[len - 1] == '\r' || text[len - 1] == '\n'))
        len--;
    line->text = g_strndup (text, len);
    line->mono_us = g_get_monotonic_time ();
    line->real_us = g_get_real_time ();
    if (self->log != NULL) {
        fprintf (self->log, "%.3f %s\n", (gdouble) line->real_us / G_USEC_PER_SEC, line->text);
        fflush (self->log);
    }
    g_mutex_lock (&self->lock);
    g_ptr_array_add (self->lines, line);
    g_cond_broadcast (&self->changed);
    g_mutex_unlock (&self->lock);
}

static gpointer
reader_thread (gpointer user_data)
{
    VmrGuestConsole *self = user_data;
    g_autoptr (GString) partial = g_string_new (NULL);
    gchar buf[4096];

    while (TRUE) {
        struct pollfd fds[2] = { { self->fd, POLLIN, 0 }, { self->wake[0], POLLIN, 0 } };
        ssize_t n;

        if (poll (fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents != 0)
            break;
        n = read (self->fd, buf, sizeof (buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                add_line (self, partial->str, partial->len);
                g_string_truncate (partial, 0);
            } else if (buf[i] != '\0') {
                g_string_append_c (partial, buf[i]);
            }
        }
    }
    /* a last line without its end still counts */
    if (partial->len > 0)
        add_line (self, partial->str, partial->len);
    g_mutex_lock (&self->lock);
    self->ended = TRUE;
    g_cond_broadcast (&self->changed);
    g_mutex_unlock (&self->lock);
    return NULL;
}

VmrGuestConsole *
vmr_guest_console_new (int fd, const gchar *log_path)
{
    VmrGuestConsole *self = g_new0 (VmrGuestConsole, 1);
    g_autoptr (GError) error = NULL;

    self->fd = fd;
    if (!g_unix_open_pipe (self->wake, FD_CLOEXEC, &error))
        g_error ("cannot make a pipe: %s", error->message);
    if (log_path != NULL) {
        self->log = fopen (log_path, "a");
        if (self->log == NULL)
            g_warning ("cannot open %s: %s", log_path, g_strerror (errno));
    }
    g_mutex_init (&self->lock);
    g_cond_init (&self->changed);
    self->lines = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_console_line_free);
    self->reader = g_thread_new ("guest-console", reader_thread, self);
    return self;
}

void
vmr_guest_console_free (VmrGuestConsole *self)
{
    if (self == NULL)
        return;
    /* wakes the reader's poll(); it leaves at once */
    while (write (self->wake[1], "x", 1) < 0 && errno == EINTR)
        ;
    g_thread_join (self->reader);
    close (self->wake[0]);
    close (self->wake[1]);
    close (self->fd);
    if (self->log != NULL)
        fclose (self->log);
    g_ptr_array_unref (self->lines);
    g_mutex_clear (&self->lock);
    g_cond_clear (&self->changed);
    g_free (self);
}

gint
vmr_guest_console_wait (VmrGuestConsole *self, const gchar *needle, guint from,
                        gint64 deadline_mono_us, VmrConsoleLine **out_line)
{
    gint found = -1;

    g_mutex_lock (&self->lock);
    while (found < 0) {
        for (guint i = from; i < self->lines->len; i++) {
            VmrConsoleLine *line = g_ptr_array_index (self->lines, i);

            if (strstr (line->text, needle) != NULL) {
                found = (gint) i;
                if (out_line != NULL) {
                    *out_line = g_new0 (VmrConsoleLine, 1);
                    **out_line = *line;
                    (*out_line)->text = g_strdup (line->text);
                }
                break;
            }
        }
        from = MAX (from, self->lines->len);
        if (found >= 0 || self->ended)
            break;
        if (!g_cond_wait_until (&self->changed, &self->lock, deadline_mono_us))
            break;
    }
    g_mutex_unlock (&self->lock);
    return found;
}

guint
vmr_guest_console_count (VmrGuestConsole *self)
{
    guint n;

    g_mutex_lock (&self->lock);
    n = self->lines->len;
    g_mutex_unlock (&self->lock);
    return n;
}

gboolean
vmr_guest_console_ended (VmrGuestConsole *self)
{
    gboolean ended;

    g_mutex_lock (&self->lock);
    ended = self->ended;
    g_mutex_unlock (&self->lock);
    return ended;
}

gchar *
vmr_guest_console_tail (VmrGuestConsole *self, guint n)
{
    g_autoptr (GString) text = g_string_new (NULL);

    g_mutex_lock (&self->lock);
    for (guint i = self->lines->len > n ? self->lines->len - n : 0; i < self->lines->len; i++) {
        VmrConsoleLine *line = g_ptr_array_index (self->lines, i);

        g_string_append_printf (text, "%s%s", text->len > 0 ? "\n" : "", line->text);
    }
    g_mutex_unlock (&self->lock);
    return g_string_free (g_steal_pointer (&text), FALSE);
}

gboolean
vmr_guest_iops_parse (const gchar *line, VmrGuestIops *out)
{
    const gchar *start = strstr (line, "VMR-IOPS ");
    gdouble values[4];
    gchar *end;

    if (start == NULL)
        return FALSE;
    start += strlen ("VMR-IOPS ");
    for (guint i = 0; i < G_N_ELEMENTS (values); i++) {
        values[i] = g_ascii_strtod (start, &end);
        if (end == start)
            return FALSE;
        start = end;
    }
    memset (out, 0, sizeof (*out));
    out->uptime_s = values[0];
    out->read_iops = values[1];
    out->write_iops = values[2];
    out->latency_us = values[3];
    return TRUE;
}

GArray *
vmr_guest_console_get_iops (VmrGuestConsole *self)
{
    GArray *iops = g_array_new (FALSE, TRUE, sizeof (VmrGuestIops));

    g_mutex_lock (&self->lock);
    for (guint i = 0; i < self->lines->len; i++) {
        VmrConsoleLine *line = g_ptr_array_index (self->lines, i);
        VmrGuestIops sample;

        if (!vmr_guest_iops_parse (line->text, &sample))
            continue;
        if (iops->len > 0)
            sample.interval_s
                = sample.uptime_s - g_array_index (iops, VmrGuestIops, iops->len - 1).uptime_s;
        sample.mono_us = line->mono_us;
        sample.real_us = line->real_us;
        g_array_append_val (iops, sample);
    }
    g_mutex_unlock (&self->lock);
    return iops;
}

gdouble
vmr_guest_iops_mean (GArray *iops, gint64 from_mono_us, gint64 to_mono_us, gdouble *out_latency_us,
                     guint *out_lines)
{
    gdouble ios = 0;
    gdouble latency_sum = 0;
    gdouble seconds = 0;
    guint lines = 0;

    /* the first line holds fio's start: it is no steady rate */
    for (guint i = 1; i < iops->len; i++) {
        const VmrGuestIops *sample = &g_array_index (iops, VmrGuestIops, i);
        gint64 end_us = sample->mono_us;
        gint64 start_us = end_us - (gint64) (sample->interval_s * G_USEC_PER_SEC);
        gdouble overlap_s;
        gdouble rate = sample->read_iops + sample->write_iops;

        if (sample->interval_s <= 0)
            continue;
        overlap_s
            = (gdouble) (MIN (end_us, to_mono_us) - MAX (start_us, from_mono_us)) / G_USEC_PER_SEC;
        if (overlap_s <= 0)
            continue;
        ios += rate * overlap_s;
        latency_sum += sample->latency_us * rate * overlap_s;
        seconds += overlap_s;
        lines++;
    }
    if (out_latency_us != NULL)
        *out_latency_us = ios > 0 ? latency_sum / ios : 0;
    if (out_lines != NULL)
        *out_lines = lines;
    return seconds > 0 ? ios / seconds : -1;
}
