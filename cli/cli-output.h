/*
 * Human-readable output of virt-mirror, and the one way errors are reported.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "cli-job.h"

G_BEGIN_DECLS

/* exit codes, the contract with scripts (see docs/cli.md) */
#define VMR_CLI_EXIT_OK     0
#define VMR_CLI_EXIT_FAILED 1 /* the operation failed or was refused */
#define VMR_CLI_EXIT_USAGE  2 /* bad command line */

/*
 * Usage errors: the message is printed as is after "virt-mirror: " and the
 * program exits with VMR_CLI_EXIT_USAGE.
 */
#define VMR_CLI_USAGE_ERROR (vmr_cli_usage_error_quark ())
GQuark vmr_cli_usage_error_quark (void);

/*
 * A failure the command has already printed in its own form (`policy check`
 * prints the problems of a file as they are): nothing more is printed and the
 * program exits with VMR_CLI_EXIT_FAILED.
 */
#define VMR_CLI_REPORTED_ERROR (vmr_cli_reported_error_quark ())
GQuark vmr_cli_reported_error_quark (void);

/*
 * Reports @error: one line on stderr (one per line of the message, the first
 * prefixed) and, when @json is set and the error is not a usage error,
 * {"error": {"class", "desc"}} on stdout; nothing for a
 * VMR_CLI_REPORTED_ERROR. Returns the exit code for it.
 */
gint vmr_cli_output_error (const GError *error, gboolean json);

/* prints the reply of query-domains, one block per domain */
gboolean vmr_cli_output_domains (JsonNode *reply, GError **error);

/* prints the reply of query-jobs as a table, one job per line */
gboolean vmr_cli_output_jobs (JsonNode *reply, GError **error);

/* prints every field of @job, one per line, then its history */
void vmr_cli_output_job (const VmrCliJob *job);

/* "disk0 of web01"; free with g_free() */
gchar *vmr_cli_output_describe_disk (const VmrCliJob *job);

G_END_DECLS
