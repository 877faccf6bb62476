/*
 * What the libvirt hook makes of its input: the domain's UUID from the XML
 * libvirtd writes on its stdin, and the one message to the daemon from that
 * and its arguments. Pure text handling, apart from main.c's I/O, so that
 * the fuzzer (tests/fuzz/) reaches it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the domain's UUID in @xml (the first <uuid>), or NULL when there is no valid one */
gchar *vmr_hook_uuid_from_xml (const gchar *xml);

/*
 * {"execute": "hook-event", "arguments": {...}} and a newline: the first
 * four of @argv (NULL-terminated; DOMAIN OP SUBOP EXTRA) as "domain", "op",
 * "subop" and "extra", those that are not UTF-8 left out, and @uuid (may
 * be NULL).
 */
gchar *vmr_hook_build_message (gchar **argv, const gchar *uuid);

G_END_DECLS
