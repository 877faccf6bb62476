#define G_LOG_DOMAIN "vmr-daemon"

#include "service-notify.h"

#include "vmr-config.h"

#if VMR_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

struct _VmrServiceNotify {
    VmrEngine *engine;
    gboolean ready;      /* READY=1 was sent */
    gchar *status;       /* the last STATUS= sent, to send only changes */
    guint ready_source;  /* the idle that sends READY=1 */
    guint status_source; /* the idle that sends a changed status */
};

static void
notify (const gchar *state)
{
#if VMR_HAVE_LIBSYSTEMD
    int rc = sd_notify (0, state);

    if (rc < 0)
        g_debug ("sd_notify %s: %s", state, g_strerror (-rc));
#else
    (void) state;
#endif
}

/* "2 jobs running, 1 queued" */
static gchar *
status_text (VmrServiceNotify *self)
{
    guint running;
    guint queued;

    vmr_engine_count_jobs (self->engine, &running, &queued);
    return g_strdup_printf ("%u job%s running, %u queued", running, running == 1 ? "" : "s",
                            queued);
}

/* sends @prefix (READY=1 or nothing) with the status, if it changed or @prefix is set */
static void
send_status (VmrServiceNotify *self, const gchar *prefix)
{
    g_autofree gchar *status = status_text (self);
    g_autofree gchar *message = NULL;

    if (prefix == NULL && g_strcmp0 (status, self->status) == 0)
        return;
    message = g_strdup_printf ("%sSTATUS=%s", prefix != NULL ? prefix : "", status);
    notify (message);
    g_free (self->status);
    self->status = g_steal_pointer (&status);
}

static gboolean
status_idle_cb (gpointer user_data)
{
    VmrServiceNotify *self = user_data;

    self->status_source = 0;
    send_status (self, NULL);
    return G_SOURCE_REMOVE;
}

/* after the transition and its handlers: a group's jobs change together */
static void
job_changed_cb (VmrEngine *engine, gpointer job, gint previous, gpointer user_data)
{
    VmrServiceNotify *self = user_data;

    if (self->ready && self->status_source == 0)
        self->status_source = g_idle_add (status_idle_cb, self);
}

static gboolean
ready_idle_cb (gpointer user_data)
{
    VmrServiceNotify *self = user_data;

    self->ready_source = 0;
    self->ready = TRUE;
    send_status (self, "READY=1\n");
    return G_SOURCE_REMOVE;
}

VmrServiceNotify *
vmr_service_notify_new (VmrEngine *engine)
{
    VmrServiceNotify *self = g_new0 (VmrServiceNotify, 1);

    self->engine = g_object_ref (engine);
    g_signal_connect (engine, "job-changed", G_CALLBACK (job_changed_cb), self);
    return self;
}

void
vmr_service_notify_ready_when_idle (VmrServiceNotify *self)
{
    if (self->ready_source == 0 && !self->ready)
        self->ready_source = g_idle_add (ready_idle_cb, self);
}

void
vmr_service_notify_stopping (VmrServiceNotify *self)
{
    notify ("STOPPING=1");
}

void
vmr_service_notify_free (VmrServiceNotify *self)
{
    if (self == NULL)
        return;
    g_clear_handle_id (&self->ready_source, g_source_remove);
    g_clear_handle_id (&self->status_source, g_source_remove);
    g_signal_handlers_disconnect_by_data (self->engine, self);
    g_object_unref (self->engine);
    g_free (self->status);
    g_free (self);
}
