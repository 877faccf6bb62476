/*
 * What the e2e harness's files share: harness-libvirt.c (libvirt and the
 * hook for the whole program) and harness-e2e.c (the fixture, the daemon,
 * the test domains). Tests use harness-e2e.h only.
 */
#pragma once

#include <sys/types.h>

#include "harness-e2e.h"

/* libvirtd and the daemon may take a while to come up on a loaded machine */
#define VMR_E2E_START_TIMEOUT_US (30 * G_USEC_PER_SEC)

/* the program's tests need libvirt */
gboolean vmr_e2e_libvirt_wanted (void);

/* why libvirt cannot be used, or NULL when it can (or is not wanted) */
const gchar *vmr_e2e_libvirt_problem (void);

/* numbers the test domains of this program */
guint vmr_e2e_next_domain_number (void);

/* the daemon the crash handler kills, 0 for none */
void vmr_e2e_track_daemon (pid_t pid);
