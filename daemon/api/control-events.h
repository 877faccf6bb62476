/*
 * The events the control socket sends to every client (docs/protocol.md,
 * "Events"): their messages, and the pace of JOB_PROGRESS.
 */
#pragma once

#include <json-glib/json-glib.h>

#include "engine.h"

G_BEGIN_DECLS

/* JOB_PROGRESS comes at most this often for one job */
#define VMR_CONTROL_PROGRESS_INTERVAL_MS 1000

/* the message {"event": @name, "data": @data, "timestamp": now}; @data is consumed */
JsonObject *vmr_control_event_new (const gchar *name, JsonObject *data);

/* JOB_STATE_CHANGED for @job, which was @previous before */
JsonObject *vmr_control_event_job_state (VmrJob *job, VmrJobState previous);

/* JOB_PROGRESS for @job: the members of its job object that change while it copies */
JsonObject *vmr_control_event_job_progress (VmrEngine *engine, VmrJob *job);

/* sends @message to every client */
typedef void (*VmrControlBroadcastFunc) (JsonObject *message, gpointer user_data);

typedef struct _VmrControlProgress VmrControlProgress;

/*
 * Follows @engine's "job-progress" and hands @broadcast a JOB_PROGRESS for
 * each job at most every VMR_CONTROL_PROGRESS_INTERVAL_MS: at once when the
 * last one is older, otherwise the job's latest figures once the interval
 * is over. A job that ends gets no more. Free with
 * vmr_control_progress_free() before @engine goes.
 */
VmrControlProgress *vmr_control_progress_new (VmrEngine *engine, VmrControlBroadcastFunc broadcast,
                                              gpointer user_data);

void vmr_control_progress_free (VmrControlProgress *self);

G_END_DECLS
