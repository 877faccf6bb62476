/*
 * Lines redrawn in place on the terminal that stdout is, with plain ANSI
 * escapes: the progress of `migrate --wait` and `evacuate --wait` below
 * what was printed before, or the whole screen for `watch`. The cursor is
 * hidden while it draws; the size is read at every draw and a resize
 * (SIGWINCH) is passed on so that the caller draws again.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    VMR_CLI_SCREEN_INLINE, /* the lines replace themselves, below earlier output */
    VMR_CLI_SCREEN_FULL,   /* the lines replace the whole screen, from its top */
} VmrCliScreenMode;

typedef struct _VmrCliScreen VmrCliScreen;

/* whether stdout is a terminal, where a screen can draw */
gboolean vmr_cli_screen_is_terminal (void);

/*
 * A screen on stdout. @resized (nullable) runs from the main loop when the
 * terminal's size changed, with @user_data; it should draw again. Free with
 * vmr_cli_screen_free().
 */
VmrCliScreen *vmr_cli_screen_new (VmrCliScreenMode mode, void (*resized) (gpointer user_data),
                                  gpointer user_data);

/* the terminal's width in cells now (80 when it cannot be read) */
guint vmr_cli_screen_columns (VmrCliScreen *self);

/*
 * Replaces what the last draw showed with @lines (NULL-terminated), each
 * cut to the width; lines beyond the terminal's height give way to a last
 * line "... N more".
 */
void vmr_cli_screen_draw (VmrCliScreen *self, const gchar *const *lines);

/* leaves the last drawing on the screen: what is printed next goes below it */
void vmr_cli_screen_finish (VmrCliScreen *self);

/* finishes, and shows the cursor again */
void vmr_cli_screen_free (VmrCliScreen *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrCliScreen, vmr_cli_screen_free)

G_END_DECLS
