/*
 * What the two halves of the control socket share: control-server.c (the
 * socket, its connections, dispatch and the events sent to every client) and
 * control-commands.c (the commands, their argument schemas and their
 * handlers). Both answer through control-request.c. Not an API:
 * control-server.h is.
 */
#pragma once

#include "control-events.h"
#include "control-request.h"
#include "log-throttle.h"

G_BEGIN_DECLS

struct _VmrControlServer {
    GObject parent_instance;

    VmrEngine *engine;
    GSocketService *service;          /* the control socket */
    GSocketService *readonly_service; /* the read-only socket */
    gchar *path;
    gchar *readonly_path;       /* NULL when there is no read-only socket */
    GPtrArray *connections;     /* of VmrQmpStream *, owned; both sockets' */
    VmrControlClients *clients; /* the connections counted by user, see control-limits.h */
    VmrLogThrottle refusal_log; /* of the connections refused */
    gulong job_changed_id;
    VmrControlProgress *progress; /* the pace of JOB_PROGRESS, owned */
    guint64 n_clients;            /* connections accepted, to name them in the log */
};

/* one command: its name, its arguments (NULL: not checked) and its handler */
typedef struct {
    const gchar *name;
    const ArgSpec *args;
    void (*handler) (Request *req, JsonObject *args);
    gboolean read_only; /* changes nothing: served on the read-only socket too, and not logged */
} CommandSpec;

/* every command the daemon answers, vmr_control_n_commands of them */
extern const CommandSpec vmr_control_commands[];
extern const gsize vmr_control_n_commands;

/*
 * Serves one client on @connection (a reference is taken): the greeting,
 * then its commands until it closes. What the listening socket does for
 * each connection, reachable without one for the fuzzer (tests/fuzz/).
 * @read_only: it came in on the read-only socket. The peer of a stream that
 * is no socket is the daemon itself. A connection past the limits
 * (control-limits.h) gets one error line instead of the greeting and is
 * closed.
 */
void vmr_control_server_serve (VmrControlServer *self, GIOStream *connection, gboolean read_only);

G_END_DECLS
