/*
 * One command being answered on the control socket: its reply (a value or
 * an error, sent on the client's stream) and the check of its arguments
 * against a schema. Below both control-server.c, which makes requests, and
 * control-commands.c, which answers them. Not an API: control-server.h is.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "control-server.h"
#include "qmp-stream.h"

G_BEGIN_DECLS

/* who sent it: the connection's peer, from SO_PEERCRED when it connected */
typedef struct {
    gboolean read_only; /* it came in on the read-only socket */
    gint64 uid;         /* -1 when the kernel did not say */
    gint64 pid;         /* -1 when the kernel did not say */
} Peer;

/* one command being answered */
typedef struct {
    VmrControlServer *server;
    VmrQmpStream *stream;
    JsonNode *id; /* copied into the reply, NULL if the client sent none */
    gchar *command;
} Request;

/*
 * A request for @command from @stream of @server (both referenced); @id, the
 * client's "id" member, is copied when not NULL. Freed by the answer.
 */
Request *vmr_control_request_new (VmrControlServer *server, VmrQmpStream *stream, JsonNode *id,
                                  const gchar *command);

/* answers with @obj (consumed) and frees @req */
void vmr_control_request_return_object (Request *req, JsonObject *obj);

/* answers with @array (consumed) and frees @req */
void vmr_control_request_return_array (Request *req, JsonArray *array);

/* answers with @error and frees @req */
void vmr_control_request_error (Request *req, const GError *error);

/*
 * The object of an error reply's "error" member: the class of @error's
 * code (VMR_ERROR's; Failed for another domain) and its message as "desc"
 */
JsonObject *vmr_control_error_object (const GError *error);

/* one argument of a command: its name, its JSON type, whether it must be given */
typedef enum { ARG_STRING, ARG_BOOL, ARG_UINT, ARG_ARRAY } ArgType;

typedef struct {
    const gchar *name;
    ArgType type;
    gboolean required;
} ArgSpec;

/*
 * Checks @args against @spec: sets VMR_ERROR_INVALID_ARGUMENT for an
 * unknown, a missing or a mistyped argument. A null argument counts as not
 * given.
 */
gboolean vmr_control_check_args (JsonObject *args, const ArgSpec *spec, GError **error);

G_END_DECLS
