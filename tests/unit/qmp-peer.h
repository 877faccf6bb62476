/*
 * An in-process QMP peer for unit tests: a socket pair whose far end is a
 * VmrQmpStream, the framing the daemon's own server uses, answering like
 * QEMU as far as a test asks it to. Raw bytes can be written past the
 * framing for what a real peer cannot be made to do on demand.
 */
#pragma once

#include "qmp-client.h"
#include "qmp-stream.h"

G_BEGIN_DECLS

/* any wait longer than this is a hang, not a slow machine */
#define WAIT_LIMIT_US (10 * G_USEC_PER_SEC)

/* iterates the thread-default main context until @cond holds */
#define WAIT_UNTIL(cond)                                                                           \
    G_STMT_START                                                                                   \
    {                                                                                              \
        gint64 deadline_ = g_get_monotonic_time () + WAIT_LIMIT_US;                                \
        while (!(cond)) {                                                                          \
            if (g_get_monotonic_time () > deadline_)                                               \
                g_error ("timed out waiting for %s", #cond);                                       \
            g_main_context_iteration (NULL, TRUE);                                                 \
        }                                                                                          \
    }                                                                                              \
    G_STMT_END

typedef struct {
    gchar *name;
    JsonObject *data;
    gint64 timestamp_us;
} QmpPeerEvent;

typedef struct {
    /* the QEMU side */
    VmrQmpStream *peer;
    GSocket *peer_socket;         /* for the raw bytes of scripted misbehaviour */
    GPtrArray *received;          /* of JsonObject *, what the peer read */
    gboolean peer_closed;         /* the peer saw the end of the stream */
    gboolean answer_capabilities; /* reply to qmp_capabilities at once */
    const gchar *answer_all;      /* when set, the reply to every other command */

    /* the client side */
    GIOStream *client_conn;
    VmrQmpClient *client;
    VmrQmpClient *client_alive; /* weak: NULL once the client is finalized */
    GPtrArray *events;          /* of QmpPeerEvent * */
    guint n_disconnected;
    GError *disconnect_error;

    guint tick_id; /* wakes the loop so that WAIT_UNTIL can give up */
} QmpPeerFixture;

/* what an async call ended with */
typedef struct {
    gboolean done;
    VmrQmpClient *client; /* of a connect */
    JsonNode *node;       /* of an execute */
    GError *error;
} QmpPeerResult;

/*
 * fixtures for g_test_add (): nothing connected yet; a socket pair with the
 * peer reading and nothing said; a client through greeting and negotiation.
 * teardown also checks that nothing keeps the client alive
 */
void qmp_peer_setup_base (QmpPeerFixture *fx, gconstpointer user_data);
void qmp_peer_setup_pair (QmpPeerFixture *fx, gconstpointer user_data);
void qmp_peer_setup_connected (QmpPeerFixture *fx, gconstpointer user_data);
void qmp_peer_teardown (QmpPeerFixture *fx, gconstpointer user_data);

/* makes @conn the peer's end and starts reading */
void qmp_peer_start (QmpPeerFixture *fx, GIOStream *conn);
/* sends @text, one JSON object, through the framing */
void qmp_peer_send_text (QmpPeerFixture *fx, const gchar *text);
void qmp_peer_send_greeting (QmpPeerFixture *fx);
/* answers @cmd, one of fx->received, with @reply_text plus the command's id */
void qmp_peer_reply (QmpPeerFixture *fx, JsonObject *cmd, const gchar *reply_text);
/* the @index-th message the peer read */
JsonObject *qmp_peer_received (QmpPeerFixture *fx, guint index);
/* writes raw bytes past the framing: only for what a real peer never sends */
void qmp_peer_send_raw (QmpPeerFixture *fx, const gchar *bytes);

/* makes @client (consumed) fx->client and records its signals */
void qmp_peer_adopt_client (QmpPeerFixture *fx, VmrQmpClient *client);
/* runs @command on fx->client; @arguments_text is JSON or NULL */
void qmp_peer_execute (QmpPeerFixture *fx, const gchar *command, const gchar *arguments_text,
                       guint timeout_ms, GCancellable *cancellable, QmpPeerResult *r);
/* callbacks that fill in the QmpPeerResult passed as user data */
void qmp_peer_connect_cb (GObject *source, GAsyncResult *res, gpointer user_data);
void qmp_peer_execute_cb (GObject *source, GAsyncResult *res, gpointer user_data);
void qmp_peer_result_clear (QmpPeerResult *r);

/* parses @text, which must be one JSON object */
JsonObject *qmp_peer_json (const gchar *text);
/* lets the loop run for @ms, to show that something does not happen */
void qmp_peer_spin_for (guint ms);

G_END_DECLS
