/*
 * Another user on the daemon's sockets. The tests run as root; through
 * setpriv they run a program as nobody or as a bare uid, in a group of the
 * test's own that the test adds and removes, or in none: the CLI, or
 * peer-client (peer-client.c, VMR_PEER_CLIENT) for what the CLI does not
 * do. Its output is read line by line while it runs.
 */
#pragma once

#include "harness.h"

G_BEGIN_DECLS

/* a group of the test's own */
typedef struct {
    gchar *name;
    gid_t gid;
    gboolean made; /* added by the test: removed by vmr_peer_group_remove() */
} VmrPeerGroup;

/*
 * Adds the system group @name unless it exists, and opens the test's
 * directory to other users (0711) so that they reach its sockets. Skips
 * the test (and returns FALSE) without root, setpriv, groupadd or a user
 * nobody, as vmr_harness_skip() does.
 */
gboolean vmr_peer_group_add (VmrHarness *h, VmrPeerGroup *group, const gchar *name);

/* removes the group if the test added it; for teardown */
void vmr_peer_group_remove (VmrPeerGroup *group);

/*
 * The fixture of a test with other users: the harness (first: its
 * functions take the fixture), a group of the test's own, the read-only
 * socket's path (in a directory the daemon makes) and the daemon's log
 */
typedef struct {
    VmrHarness h;
    VmrPeerGroup group;
    gchar *readonly_socket;
    gchar *log;
} VmrPeerTest;

/* as vmr_harness_setup_no_daemon(), and the group @user_data (a const gchar *) added */
void vmr_peer_test_setup (VmrPeerTest *t, gconstpointer user_data);
void vmr_peer_test_teardown (VmrPeerTest *t, gconstpointer user_data);

#define VMR_PEER_TEST_ADD(path, group, func)                                                       \
    g_test_add ((path), VmrPeerTest, (group), vmr_peer_test_setup, (func), vmr_peer_test_teardown)

/*
 * Starts the daemon with the read-only socket served to the group, its
 * output in t->log, and the extra arguments @extra (NULL-terminated, or
 * NULL for none)
 */
void vmr_peer_test_start_daemon (VmrPeerTest *t, const gchar *const *extra);

/* the daemon's log so far; free with g_free() */
gchar *vmr_peer_test_log (VmrPeerTest *t);

/* asserts that the daemon's log has a line with @text */
void vmr_peer_test_assert_logged (VmrPeerTest *t, const gchar *text);

/* a program running as another user, its stdin and stdout piped to the test */
typedef struct _VmrPeer VmrPeer;

/*
 * Runs @argv (NULL-terminated) as @user (a name or a number) with @group
 * as its only group, and @env (NULL or NULL-terminated "NAME=VALUE"s) added
 * to the environment. Asserts that it starts.
 */
VmrPeer *vmr_peer_start (const gchar *user, const gchar *group, const gchar *const *argv,
                         const gchar *const *env);

/* as vmr_peer_start(), peer-client with @args (NULL-terminated) */
VmrPeer *vmr_peer_client (const gchar *user, const gchar *group, const gchar *const *args);

/* the process id of the program (setpriv execs it: the daemon sees this one) */
const gchar *vmr_peer_pid (VmrPeer *peer);

/*
 * The next line the program prints, without its newline; fails the test
 * when none comes within @timeout_s or it ends first. Free with g_free().
 */
gchar *vmr_peer_read_line (VmrPeer *peer, guint timeout_s);

/*
 * Ends the program's stdin, waits for it to exit and asserts that it exits
 * 0; returns what it printed that was not read yet. Free with g_free().
 */
gchar *vmr_peer_finish (VmrPeer *peer);

/* kills the program if it still runs */
void vmr_peer_free (VmrPeer *peer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrPeer, vmr_peer_free)

G_END_DECLS
