/*
 * libFuzzer harness: the libvirt hook's input. The input is the hook's
 * arguments (DOMAIN OP SUBOP EXTRA), each ended by a NUL byte, then the
 * domain XML that libvirtd writes on its stdin; the hook's message to the
 * daemon must be one line of JSON that the daemon reads as one object.
 */
#include <string.h>

#include "fuzz-common.h"
#include "hook-message.h"
#include "qmp-stream.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
    const gchar *rest = (const gchar *) data;
    gsize left = size;
    g_autofree gchar *xml = NULL;
    g_autofree gchar *uuid = NULL;
    g_autofree gchar *message = NULL;
    g_autoptr (JsonObject) parsed = NULL;
    g_autoptr (GError) error = NULL;

    /* libvirtd passes four arguments; what follows the fourth NUL is stdin */
    while (args->len < 4 && left > 0) {
        const gchar *nul = memchr (rest, '\0', left);
        gsize len = nul != NULL ? (gsize) (nul - rest) : left;

        g_ptr_array_add (args, g_strndup (rest, len));
        rest += MIN (len + 1, left);
        left -= MIN (len + 1, left);
    }
    g_ptr_array_add (args, NULL);
    xml = g_strndup (rest, left);
    uuid = vmr_hook_uuid_from_xml (xml);
    message = vmr_hook_build_message ((gchar **) args->pdata, uuid);
    /* one line, a JSON object */
    g_assert (g_str_has_suffix (message, "\n"));
    g_assert (strchr (message, '\n') == message + strlen (message) - 1);
    parsed = vmr_qmp_parse_line (message, strlen (message) - 1, &error);
    g_assert_no_error (error);
    return 0;
}
