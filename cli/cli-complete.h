/*
 * The names the shell completion asks the daemon for: `virt-mirror
 * __complete domains`, `__complete disks DOMAIN`, `__complete jobs`, one
 * name a line. A hidden command: not in the command list, for the bash
 * completion only. It waits at most a second for the daemon and prints
 * nothing when the daemon cannot be reached.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the hidden command's name, the first word of @argv in vmr_cli_complete() */
#define VMR_CLI_COMPLETE_COMMAND "__complete"

/* prints the names @argv (after "__complete") asks for from the daemon at @socket_path */
gint vmr_cli_complete (const gchar *socket_path, gchar **argv);

G_END_DECLS
