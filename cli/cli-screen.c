#define G_LOG_DOMAIN "vmr-cli"

#include "cli-screen.h"

#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli-progress.h"

/* ECMA-48: cursor up, erase to the end of the line / of the screen, home, the cursor shown */
#define CSI          "\033["
#define ERASE_LINE   CSI "K"
#define ERASE_BELOW  CSI "J"
#define CURSOR_HOME  CSI "H"
#define CURSOR_HIDE  CSI "?25l"
#define CURSOR_SHOW  CSI "?25h"
#define DEFAULT_COLS 80
#define DEFAULT_ROWS 24

struct _VmrCliScreen {
    VmrCliScreenMode mode;
    void (*resized) (gpointer user_data);
    gpointer user_data;
    guint winch_id;
    guint n_drawn; /* lines the last draw left on the screen, 0 = none */
    gboolean cursor_hidden;
};

gboolean
vmr_cli_screen_is_terminal (void)
{
    return isatty (STDOUT_FILENO);
}

static gboolean
window_changed_cb (gpointer user_data)
{
    VmrCliScreen *self = user_data;

    if (self->resized != NULL)
        self->resized (self->user_data);
    return G_SOURCE_CONTINUE;
}

VmrCliScreen *
vmr_cli_screen_new (VmrCliScreenMode mode, void (*resized) (gpointer user_data), gpointer user_data)
{
    VmrCliScreen *self = g_new0 (VmrCliScreen, 1);

    self->mode = mode;
    self->resized = resized;
    self->user_data = user_data;
    self->winch_id = g_unix_signal_add (SIGWINCH, window_changed_cb, self);
    return self;
}

static struct winsize
window_size (void)
{
    struct winsize size = { 0 };

    if (ioctl (STDOUT_FILENO, TIOCGWINSZ, &size) != 0)
        size = (struct winsize){ 0 };
    if (size.ws_col == 0)
        size.ws_col = DEFAULT_COLS;
    if (size.ws_row == 0)
        size.ws_row = DEFAULT_ROWS;
    return size;
}

guint
vmr_cli_screen_columns (VmrCliScreen *self)
{
    return window_size ().ws_col;
}

static void
write_out (GString *text)
{
    fwrite (text->str, 1, text->len, stdout);
    fflush (stdout);
}

void
vmr_cli_screen_draw (VmrCliScreen *self, const gchar *const *lines)
{
    struct winsize size = window_size ();
    g_autoptr (GString) out = g_string_new (NULL);
    guint n_lines = g_strv_length ((gchar **) lines);
    guint n_shown = MIN (n_lines, size.ws_row);

    if (!self->cursor_hidden)
        g_string_append (out, CURSOR_HIDE);
    self->cursor_hidden = TRUE;
    if (self->mode == VMR_CLI_SCREEN_FULL)
        g_string_append (out, CURSOR_HOME);
    else if (self->n_drawn > 1)
        g_string_append_printf (out, "\r" CSI "%uA", self->n_drawn - 1);
    else
        g_string_append_c (out, '\r');
    for (guint i = 0; i < n_shown; i++) {
        g_autofree gchar *more = NULL;
        g_autofree gchar *cut = NULL;
        const gchar *line = lines[i];

        /* no line may wrap: the cursor could no longer go back over it */
        if (i == n_shown - 1 && n_shown < n_lines)
            line = more = g_strdup_printf ("... %u more", n_lines - n_shown + 1);
        cut = vmr_cli_progress_truncate (line, size.ws_col - 1);
        g_string_append_printf (out, "%s%s" ERASE_LINE, i > 0 ? "\n" : "", cut);
    }
    g_string_append (out, ERASE_BELOW);
    self->n_drawn = MAX (n_shown, 1);
    write_out (out);
}

void
vmr_cli_screen_finish (VmrCliScreen *self)
{
    g_autoptr (GString) out = g_string_new (NULL);

    if (self->n_drawn == 0)
        return;
    g_string_append_c (out, '\n');
    self->n_drawn = 0;
    write_out (out);
}

void
vmr_cli_screen_free (VmrCliScreen *self)
{
    if (self == NULL)
        return;
    vmr_cli_screen_finish (self);
    if (self->cursor_hidden) {
        g_autoptr (GString) out = g_string_new (CURSOR_SHOW);

        write_out (out);
    }
    g_source_remove (self->winch_id);
    g_free (self);
}
