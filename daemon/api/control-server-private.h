/*
 * What the two halves of the control socket share: control-server.c (the
 * socket, its connections, the replies, dispatch and the events sent to every
 * client) and control-commands.c (the commands, their argument schemas and
 * their handlers). Not an API: control-server.h is.
 */
#pragma once

#include "control-server.h"
#include "qmp-stream.h"

G_BEGIN_DECLS

struct _VmrControlServer {
    GObject parent_instance;

    VmrEngine *engine;
    GSocketService *service;
    gchar *path;
    GPtrArray *connections; /* of VmrQmpStream *, owned */
    gulong job_changed_id;
};

/* one command being answered */
typedef struct {
    VmrControlServer *server;
    VmrQmpStream *stream;
    JsonNode *id; /* copied into the reply, NULL if the client sent none */
    gchar *command;
} Request;

/* answers with @obj (consumed) and frees @req */
void vmr_control_request_return_object (Request *req, JsonObject *obj);

/* answers with @array (consumed) and frees @req */
void vmr_control_request_return_array (Request *req, JsonArray *array);

/* answers with @error and frees @req */
void vmr_control_request_error (Request *req, const GError *error);

/* one argument of a command: its name, its JSON type, whether it must be given */
typedef enum { ARG_STRING, ARG_BOOL, ARG_UINT, ARG_ARRAY } ArgType;

typedef struct {
    const gchar *name;
    ArgType type;
    gboolean required;
} ArgSpec;

/* checks @args against @spec: unknown, missing and mistyped arguments */
gboolean vmr_control_check_args (JsonObject *args, const ArgSpec *spec, GError **error);

/* one command: its name, its arguments (NULL: not checked) and its handler */
typedef struct {
    const gchar *name;
    const ArgSpec *args;
    void (*handler) (Request *req, JsonObject *args);
} CommandSpec;

/* every command the daemon answers, vmr_control_n_commands of them */
extern const CommandSpec vmr_control_commands[];
extern const gsize vmr_control_n_commands;

G_END_DECLS
