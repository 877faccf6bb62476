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
 * Runs a command. @argv is NULL-terminated and starts with the last word of
 * the command name ("check" of "policy check"). Returns FALSE with @error set
 * on failure; a VMR_CLI_USAGE_ERROR means a bad command line, a
 * VMR_CLI_REPORTED_ERROR a failure the command has printed itself.
 */
typedef gboolean (*VmrCliCommandFunc) (const VmrCliCommand *cmd, VmrCliSession *session,
                                       gchar **argv, GError **error);

struct _VmrCliCommand {
    const gchar *name;        /* one word, or two for a command of a group: "policy check" */
    const gchar *args;        /* the positional arguments: "DOMAIN DISK DEST"; optional ones
                               * last and in brackets: "[DOMAIN [DISK]]"; a last
                               * "...]" lets them repeat: "[DISK DEST ...]" */
    const gchar *synopsis;    /* args and required options, for the command list */
    const gchar *summary;     /* one line, for the command list */
    const gchar *description; /* more help and examples, or NULL */
    VmrCliCommandFunc run;
};

/*
 * The command that @argv (the command line after the global options) names:
 * one word, or a group and a command ("policy check"). Sets *@out_n_words to
 * the number of words of its name. Sets a VMR_CLI_USAGE_ERROR for an unknown
 * command, or a group without a known command.
 */
const VmrCliCommand *vmr_cli_command_find (gchar **argv, guint *out_n_words, GError **error);

/* the list of commands for `virt-mirror --help`; free with g_free() */
gchar *vmr_cli_command_list_help (void);

/*
 * Parses @argv for @cmd: the command's own @entries (NULL-terminated,
 * nullable), plus --connect and --json, which override the session's, and
 * -h/--help. Options may come before, between or after the positional
 * arguments; "--" ends the options.
 *
 * On success *@out_args holds the positional arguments given, every required
 * one of cmd->args and any of its optional ones (free with g_strfreev), or is
 * NULL when --help was given and the help printed. When cmd->args ends with
 * "...]" any number of arguments may follow the required ones: the command
 * checks them. Sets VMR_CLI_USAGE_ERROR on a bad command line.
 */
gboolean vmr_cli_command_parse (const VmrCliCommand *cmd, VmrCliSession *session,
                                const GOptionEntry *entries, gchar **argv, gchar ***out_args,
                                GError **error);

/*
 * Runs the control command @command with @arguments (nullable, not consumed)
 * and, in JSON mode, prints the reply as it came. Returns the reply (free
 * with json_node_unref), or NULL with @error prefixed "cannot @what: ".
 */
JsonNode *vmr_cli_command_call (VmrCliSession *session, const gchar *command, JsonObject *arguments,
                                const gchar *what, GError **error);

/* sets a VMR_CLI_USAGE_ERROR about @cmd that points to its --help */
void vmr_cli_command_set_usage_error (GError **error, const VmrCliCommand *cmd, const gchar *format,
                                      ...) G_GNUC_PRINTF (3, 4);

/* parses a RATE argument (bytes/s, K/M/G suffixes); a usage error on failure */
gboolean vmr_cli_command_parse_rate (const VmrCliCommand *cmd, const gchar *text,
                                     guint64 *out_bytes_per_second, GError **error);

/* checks a --format value: NULL (not given), raw or qcow2; a usage error otherwise */
gboolean vmr_cli_command_check_format (const VmrCliCommand *cmd, const gchar *format,
                                       GError **error);

G_END_DECLS
