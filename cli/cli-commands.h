/*
 * The commands of virt-mirror: their table, their help, and the parsing of
 * their options and positional arguments.
 */
#pragma once

#include <glib.h>

#include "cli-session.h"

G_BEGIN_DECLS

typedef struct _VmrCliCommand VmrCliCommand;

/*
 * Runs a command. @argv is NULL-terminated and starts with the command name.
 * Returns FALSE with @error set on failure; a VMR_CLI_USAGE_ERROR means a bad
 * command line.
 */
typedef gboolean (*VmrCliCommandFunc) (const VmrCliCommand *cmd, VmrCliSession *session,
                                       gchar **argv, GError **error);

struct _VmrCliCommand {
    const gchar *name;
    const gchar *args;        /* the positional arguments, all required: "DOMAIN DISK DEST" */
    const gchar *synopsis;    /* args and required options, for the command list */
    const gchar *summary;     /* one line, for the command list */
    const gchar *description; /* more help and examples, or NULL */
    VmrCliCommandFunc run;
};

/* the command called @name, or NULL */
const VmrCliCommand *vmr_cli_command_lookup (const gchar *name);

/* the list of commands for `virt-mirror --help`; free with g_free() */
gchar *vmr_cli_command_list_help (void);

/*
 * Parses @argv for @cmd: the command's own @entries (NULL-terminated,
 * nullable), plus --connect and --json, which override the session's, and
 * -h/--help. Options may come before, between or after the positional
 * arguments; "--" ends the options.
 *
 * On success *@out_args holds exactly the positional arguments named in
 * cmd->args (free with g_strfreev), or is NULL when --help was given and the
 * help printed. Sets VMR_CLI_USAGE_ERROR on a bad command line.
 */
gboolean vmr_cli_command_parse (const VmrCliCommand *cmd, VmrCliSession *session,
                                const GOptionEntry *entries, gchar **argv, gchar ***out_args,
                                GError **error);

/* sets a VMR_CLI_USAGE_ERROR about @cmd that points to its --help */
void vmr_cli_command_set_usage_error (GError **error, const VmrCliCommand *cmd, const gchar *format,
                                      ...) G_GNUC_PRINTF (3, 4);

/* parses a RATE argument (bytes/s, K/M/G suffixes); a usage error on failure */
gboolean vmr_cli_command_parse_rate (const VmrCliCommand *cmd, const gchar *text,
                                     guint64 *out_bytes_per_second, GError **error);

G_END_DECLS
