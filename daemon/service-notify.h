/*
 * What the daemon tells systemd (Type=notify) through libsystemd's
 * sd_notify(): READY=1 once the control socket is served, and a STATUS=
 * line with the number of running and queued jobs, kept up to date as jobs
 * change. Does nothing when the daemon was not started by a service manager
 * (no NOTIFY_SOCKET) or was built without libsystemd.
 */
#pragma once

#include "engine.h"

G_BEGIN_DECLS

typedef struct _VmrServiceNotify VmrServiceNotify;

/* follows @engine's jobs (a reference is taken); tells nothing before ready */
VmrServiceNotify *vmr_service_notify_new (VmrEngine *engine);

/*
 * Sends READY=1 with the first status from the main loop's next idle
 * moment, when the socket is being served; the jobs of the previous run
 * were loaded when the engine was made.
 */
void vmr_service_notify_ready_when_idle (VmrServiceNotify *self);

/* sends STOPPING=1 */
void vmr_service_notify_stopping (VmrServiceNotify *self);

void vmr_service_notify_free (VmrServiceNotify *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrServiceNotify, vmr_service_notify_free)

G_END_DECLS
