#define G_LOG_DOMAIN "vmr-test"

/*
 * The bound on libvirt's replies. libvirt caps what its RPC carries (a
 * monitor reply at 10 MiB, below this bound), so a real libvirtd cannot be
 * made to send more: the check is tested here on strings, the largest one
 * 16 MiB + 1 byte.
 */

#include <string.h>

#include "libvirt-reply.h"
#include "qmp-stream.h"
#include "vmr-error.h"

typedef struct {
    const gchar *name;
    gsize length; /* bytes of the reply, without its NUL */
    gboolean accepted;
} ReplyCase;

static const ReplyCase reply_cases[] = {
    { "empty", 0, TRUE },
    { "small", 4096, TRUE },
    { "at-the-limit", VMR_QMP_STREAM_MAX_LINE, TRUE },
    { "over-the-limit", (gsize) VMR_QMP_STREAM_MAX_LINE + 1, FALSE },
};

static void
test_check (gconstpointer data)
{
    const ReplyCase *c = data;
    g_autofree gchar *reply = g_malloc (c->length + 1);
    g_autoptr (GError) error = NULL;
    gboolean accepted;

    memset (reply, 'x', c->length);
    reply[c->length] = '\0';
    if (!c->accepted)
        g_test_expect_message ("vmr-daemon", G_LOG_LEVEL_WARNING,
                               "*virDomainGetXMLDesc for web01 is longer than 16 MiB*");
    accepted = vmr_libvirt_reply_check (reply, "virDomainGetXMLDesc", "web01", &error);
    g_test_assert_expected_messages ();
    g_assert_cmpint (accepted, ==, c->accepted);
    if (c->accepted) {
        g_assert_no_error (error);
        return;
    }
    g_assert_error (error, VMR_ERROR, VMR_ERROR_PROTOCOL);
    g_assert_nonnull (strstr (error->message, "virDomainGetXMLDesc"));
    g_assert_nonnull (strstr (error->message, "web01"));
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);

    for (gsize i = 0; i < G_N_ELEMENTS (reply_cases); i++) {
        g_autofree gchar *path = g_strdup_printf ("/libvirt-reply/check/%s", reply_cases[i].name);

        g_test_add_data_func (path, &reply_cases[i], test_check);
    }
    return g_test_run ();
}
