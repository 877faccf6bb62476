#define G_LOG_DOMAIN "vmr-daemon"

#include "libvirt-connection.h"

#include "vmr-error.h"

/* a libvirtd that stops answering is given up after about 5 * (3 + 1) s */
#define KEEPALIVE_INTERVAL_S 5
#define KEEPALIVE_COUNT      3

enum { SIGNAL_CONNECTED, SIGNAL_DISCONNECTED, SIGNAL_LIFECYCLE, SIGNAL_BLOCK_JOB, N_SIGNALS };
static guint signals[N_SIGNALS];

struct _VmrLibvirtConnection {
    GObject parent_instance;

    gchar *uri;
    GMainContext *main_context; /* where signals are emitted */

    GMutex lock;       /* protects conn and the callback ids, read from any thread */
    virConnect *conn;  /* owned, NULL while not connected */
    gint lifecycle_id; /* event callback ids on conn, -1 = none */
    gint block_job_id;

    GThread *event_thread; /* runs virEventRunDefaultImpl() */
    gint stopping;         /* atomic: the event thread ends */

    gboolean connecting;       /* an attempt runs in a thread */
    guint retry_source;        /* the next attempt, 0 = none planned */
    gboolean warned;           /* "not available" was logged since the last success */
    gboolean stopped;          /* vmr_libvirt_connection_stop() was called */
    GCancellable *cancellable; /* of the connection attempt */
};

G_DEFINE_TYPE (VmrLibvirtConnection, vmr_libvirt_connection, G_TYPE_OBJECT)

static void schedule_retry (VmrLibvirtConnection *self);

void
vmr_libvirt_set_error (GError **error, const gchar *format, ...)
{
    const virError *last = virGetLastError ();
    g_autofree gchar *what = NULL;
    gint code = VMR_ERROR_GENERIC;
    va_list ap;

    va_start (ap, format);
    what = g_strdup_vprintf (format, ap);
    va_end (ap);
    if (last != NULL) {
        switch (last->code) {
            case VIR_ERR_NO_DOMAIN:
                code = VMR_ERROR_NOT_FOUND;
                break;
            case VIR_ERR_NO_CONNECT:
            case VIR_ERR_INVALID_CONN:
            case VIR_ERR_RPC:
                code = VMR_ERROR_DISCONNECTED;
                break;
            case VIR_ERR_OPERATION_TIMEOUT:
            case VIR_ERR_AGENT_UNRESPONSIVE:
                code = VMR_ERROR_TIMEOUT;
                break;
            default:
                break;
        }
        if (last->domain == VIR_FROM_RPC || last->domain == VIR_FROM_REMOTE)
            code = VMR_ERROR_DISCONNECTED;
    }
    g_set_error (error, VMR_ERROR, code, "%s: %s", what,
                 last != NULL && last->message != NULL ? last->message : "unknown libvirt error");
}

/* libvirt prints every error on stderr unless told otherwise */
static void
quiet_error_cb (void *user_data, virErrorPtr error)
{
}

/* ---- events, from the event thread to the main context ---- */

typedef struct {
    VmrLibvirtConnection *self;
    virConnect *conn; /* for "closed": which connection; not a reference */
    gint reason;
    gchar *name;
    gchar *uuid;
    gchar *target;
    gint event;
    gint detail;
} EventData;

static void
event_data_free (EventData *data)
{
    g_object_unref (data->self);
    g_free (data->name);
    g_free (data->uuid);
    g_free (data->target);
    g_free (data);
}

static void
to_main (VmrLibvirtConnection *self, GSourceFunc func, EventData *data)
{
    g_autoptr (GSource) source = g_idle_source_new ();

    data->self = g_object_ref (self);
    /* same priority as I/O, so that events stay in order with everything else */
    g_source_set_priority (source, G_PRIORITY_DEFAULT);
    g_source_set_callback (source, func, data, (GDestroyNotify) event_data_free);
    g_source_attach (source, self->main_context);
}

static gboolean
lifecycle_main_cb (gpointer user_data)
{
    EventData *data = user_data;

    g_debug ("libvirt: domain %s: lifecycle event %d (%d)", data->name, data->event, data->detail);
    g_signal_emit (data->self, signals[SIGNAL_LIFECYCLE], 0, data->name, data->uuid, data->event,
                   data->detail);
    return G_SOURCE_REMOVE;
}

static gboolean
block_job_main_cb (gpointer user_data)
{
    EventData *data = user_data;

    g_debug ("libvirt: domain %s: block job on %s: type %d status %d", data->uuid, data->target,
             data->event, data->detail);
    g_signal_emit (data->self, signals[SIGNAL_BLOCK_JOB], 0, data->uuid, data->target, data->event,
                   data->detail);
    return G_SOURCE_REMOVE;
}

static gchar *
domain_uuid (virDomain *dom)
{
    gchar uuid[VIR_UUID_STRING_BUFLEN] = "";

    /* both are read from the object, without a call to libvirtd */
    if (virDomainGetUUIDString (dom, uuid) < 0)
        return NULL;
    return g_strdup (uuid);
}

static int
lifecycle_cb (virConnect *conn, virDomain *dom, int event, int detail, void *opaque)
{
    EventData *data = g_new0 (EventData, 1);

    data->name = g_strdup (virDomainGetName (dom));
    data->uuid = domain_uuid (dom);
    data->event = event;
    data->detail = detail;
    to_main (opaque, lifecycle_main_cb, data);
    return 0;
}

static void
block_job_cb (virConnect *conn, virDomain *dom, const char *disk, int type, int status,
              void *opaque)
{
    EventData *data = g_new0 (EventData, 1);

    data->uuid = domain_uuid (dom);
    data->target = g_strdup (disk);
    data->event = type;
    data->detail = status;
    to_main (opaque, block_job_main_cb, data);
}

/* closes @conn, which nobody else uses any more; may block: not on the main context */
static void
release_conn (virConnect *conn, gint lifecycle_id, gint block_job_id)
{
    if (lifecycle_id >= 0)
        virConnectDomainEventDeregisterAny (conn, lifecycle_id);
    if (block_job_id >= 0)
        virConnectDomainEventDeregisterAny (conn, block_job_id);
    virConnectClose (conn);
}

static void
release_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    EventData *data = task_data;

    release_conn (data->conn, data->event, data->detail);
    g_task_return_boolean (task, TRUE);
}

static gboolean
closed_main_cb (gpointer user_data)
{
    EventData *data = user_data;
    VmrLibvirtConnection *self = data->self;
    g_autoptr (GTask) task = NULL;
    EventData *release = NULL;
    const gchar *why;

    g_mutex_lock (&self->lock);
    if (self->conn == data->conn && data->conn != NULL) {
        release = g_new0 (EventData, 1);
        release->self = g_object_ref (self);
        release->conn = g_steal_pointer (&self->conn);
        release->event = self->lifecycle_id;
        release->detail = self->block_job_id;
        self->lifecycle_id = self->block_job_id = -1;
    }
    g_mutex_unlock (&self->lock);
    /* a connection we closed ourselves, or an old one */
    if (release == NULL)
        return G_SOURCE_REMOVE;
    /* the calls on a closed connection fail at once, but they are calls */
    task = g_task_new (self, NULL, NULL, NULL);
    g_task_set_task_data (task, release, (GDestroyNotify) event_data_free);
    g_task_run_in_thread (task, release_thread);
    why = data->reason == VIR_CONNECT_CLOSE_REASON_KEEPALIVE ? "libvirtd stopped answering"
          : data->reason == VIR_CONNECT_CLOSE_REASON_EOF     ? "libvirtd closed the connection"
                                                             : "the connection failed";
    g_message ("lost the connection to libvirt at %s (%s); reconnecting", self->uri, why);
    g_signal_emit (self, signals[SIGNAL_DISCONNECTED], 0, why);
    schedule_retry (self);
    return G_SOURCE_REMOVE;
}

static void
close_cb (virConnect *conn, int reason, void *opaque)
{
    EventData *data = g_new0 (EventData, 1);

    data->conn = conn;
    data->reason = reason;
    to_main (opaque, closed_main_cb, data);
}

/* ---- the event loop thread ---- */

static void
wake_cb (int timer, void *opaque)
{
    virEventRemoveTimeout (timer);
}

static gpointer
event_thread_func (gpointer user_data)
{
    VmrLibvirtConnection *self = user_data;

    while (!g_atomic_int_get (&self->stopping)) {
        if (virEventRunDefaultImpl () < 0) {
            g_warning ("libvirt's event loop failed: %s", virGetLastErrorMessage ());
            g_usleep (G_USEC_PER_SEC / 10);
        }
    }
    return NULL;
}

/* ---- connecting ---- */

typedef struct {
    virConnect *conn;
    gint lifecycle_id;
    gint block_job_id;
} Opened;

static void
opened_free (Opened *opened)
{
    if (opened->conn != NULL)
        release_conn (opened->conn, opened->lifecycle_id, opened->block_job_id);
    g_free (opened);
}

static void
connect_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    VmrLibvirtConnection *self = source;
    Opened *opened = g_new0 (Opened, 1);
    g_autoptr (GError) error = NULL;

    opened->lifecycle_id = opened->block_job_id = -1;
    opened->conn = virConnectOpen (self->uri);
    if (opened->conn == NULL) {
        vmr_libvirt_set_error (&error, "cannot connect to %s", self->uri);
        g_free (opened);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    /* older daemons may lack keepalive; the connection works without it */
    if (virConnectSetKeepAlive (opened->conn, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT) < 0)
        g_debug ("libvirt: no keepalive: %s", virGetLastErrorMessage ());
    if (virConnectRegisterCloseCallback (opened->conn, close_cb, g_object_ref (self),
                                         g_object_unref)
        < 0) {
        g_object_unref (self);
        vmr_libvirt_set_error (&error, "cannot watch the connection to %s", self->uri);
        opened_free (opened);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    opened->lifecycle_id = virConnectDomainEventRegisterAny (
        opened->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK (lifecycle_cb),
        g_object_ref (self), g_object_unref);
    if (opened->lifecycle_id >= 0)
        opened->block_job_id = virConnectDomainEventRegisterAny (
            opened->conn, NULL, VIR_DOMAIN_EVENT_ID_BLOCK_JOB_2,
            VIR_DOMAIN_EVENT_CALLBACK (block_job_cb), g_object_ref (self), g_object_unref);
    if (opened->lifecycle_id < 0 || opened->block_job_id < 0) {
        vmr_libvirt_set_error (&error, "cannot register for domain events at %s", self->uri);
        virConnectUnregisterCloseCallback (opened->conn, close_cb);
        opened_free (opened);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_pointer (task, opened, (GDestroyNotify) opened_free);
}

static void
connect_done_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrLibvirtConnection *self = VMR_LIBVIRT_CONNECTION (source);
    g_autoptr (GError) error = NULL;
    Opened *opened = g_task_propagate_pointer (G_TASK (res), &error);

    self->connecting = FALSE;
    if (opened == NULL) {
        if (self->stopped)
            return;
        if (!self->warned)
            g_message ("libvirt is not available (%s); retrying every %d s and when the hook "
                       "reports a domain",
                       error->message, VMR_LIBVIRT_RETRY_INTERVAL_S);
        else
            g_debug ("libvirt: %s", error->message);
        self->warned = TRUE;
        schedule_retry (self);
        return;
    }
    if (self->stopped) {
        virConnectUnregisterCloseCallback (opened->conn, close_cb);
        opened_free (opened);
        return;
    }
    g_mutex_lock (&self->lock);
    self->conn = g_steal_pointer (&opened->conn);
    self->lifecycle_id = opened->lifecycle_id;
    self->block_job_id = opened->block_job_id;
    g_mutex_unlock (&self->lock);
    g_free (opened);
    self->warned = FALSE;
    g_message ("connected to libvirt at %s", self->uri);
    g_signal_emit (self, signals[SIGNAL_CONNECTED], 0);
}

static void
connect_now (VmrLibvirtConnection *self)
{
    g_autoptr (GTask) task = NULL;

    if (self->stopped || self->connecting || vmr_libvirt_connection_is_connected (self))
        return;
    g_clear_handle_id (&self->retry_source, g_source_remove);
    self->connecting = TRUE;
    task = g_task_new (self, self->cancellable, connect_done_cb, NULL);
    g_task_run_in_thread (task, connect_thread);
}

static gboolean
retry_cb (gpointer user_data)
{
    VmrLibvirtConnection *self = user_data;

    self->retry_source = 0;
    connect_now (self);
    return G_SOURCE_REMOVE;
}

static void
schedule_retry (VmrLibvirtConnection *self)
{
    if (self->stopped || self->retry_source != 0)
        return;
    self->retry_source = g_timeout_add_seconds (VMR_LIBVIRT_RETRY_INTERVAL_S, retry_cb, self);
}

void
vmr_libvirt_connection_try_now (VmrLibvirtConnection *self)
{
    connect_now (self);
}

void
vmr_libvirt_connection_start (VmrLibvirtConnection *self)
{
    g_return_if_fail (self->event_thread == NULL);
    self->event_thread = g_thread_new ("libvirt-events", event_thread_func, self);
    connect_now (self);
}

void
vmr_libvirt_connection_stop (VmrLibvirtConnection *self)
{
    virConnect *conn;
    gint lifecycle_id;
    gint block_job_id;

    self->stopped = TRUE;
    g_cancellable_cancel (self->cancellable);
    g_clear_handle_id (&self->retry_source, g_source_remove);
    g_mutex_lock (&self->lock);
    conn = g_steal_pointer (&self->conn);
    lifecycle_id = self->lifecycle_id;
    block_job_id = self->block_job_id;
    self->lifecycle_id = self->block_job_id = -1;
    g_mutex_unlock (&self->lock);
    if (conn != NULL) {
        virConnectUnregisterCloseCallback (conn, close_cb);
        release_conn (conn, lifecycle_id, block_job_id);
    }
    if (self->event_thread != NULL) {
        g_atomic_int_set (&self->stopping, 1);
        /* the loop sleeps in poll(); a timer that fires at once wakes it */
        virEventAddTimeout (0, wake_cb, NULL, NULL);
        g_thread_join (g_steal_pointer (&self->event_thread));
    }
}

gboolean
vmr_libvirt_connection_is_connected (VmrLibvirtConnection *self)
{
    gboolean connected;

    g_mutex_lock (&self->lock);
    connected = self->conn != NULL;
    g_mutex_unlock (&self->lock);
    return connected;
}

const gchar *
vmr_libvirt_connection_get_uri (VmrLibvirtConnection *self)
{
    return self->uri;
}

virConnect *
vmr_libvirt_connection_ref_conn (VmrLibvirtConnection *self, GError **error)
{
    virConnect *conn = NULL;

    g_mutex_lock (&self->lock);
    if (self->conn != NULL && virConnectRef (self->conn) == 0)
        conn = self->conn;
    g_mutex_unlock (&self->lock);
    if (conn == NULL)
        g_set_error (error, VMR_ERROR, VMR_ERROR_DISCONNECTED, "libvirt at %s is not connected",
                     self->uri);
    return conn;
}

virDomain *
vmr_libvirt_connection_lookup (VmrLibvirtConnection *self, const gchar *uuid, GError **error)
{
    g_autoptr (virConnect) conn = vmr_libvirt_connection_ref_conn (self, error);
    g_autoptr (virDomain) dom = NULL;
    int active;

    if (conn == NULL)
        return NULL;
    /* the domain keeps its own reference to the connection */
    dom = virDomainLookupByUUIDString (conn, uuid);
    if (dom == NULL) {
        vmr_libvirt_set_error (error, "no libvirt domain %s", uuid);
        return NULL;
    }
    active = virDomainIsActive (dom);
    if (active < 0) {
        vmr_libvirt_set_error (error, "cannot ask libvirt about domain %s", virDomainGetName (dom));
        return NULL;
    }
    if (active == 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_NOT_FOUND, "domain %s is not running",
                     virDomainGetName (dom));
        return NULL;
    }
    return g_steal_pointer (&dom);
}

/* ---- object ---- */

VmrLibvirtConnection *
vmr_libvirt_connection_new (const gchar *uri)
{
    static gsize initialized = 0;
    VmrLibvirtConnection *self;

    /* once per process, before any thread uses libvirt */
    if (g_once_init_enter (&initialized)) {
        if (virInitialize () < 0)
            g_warning ("libvirt failed to initialize: %s", virGetLastErrorMessage ());
        virSetErrorFunc (NULL, quiet_error_cb);
        if (virEventRegisterDefaultImpl () < 0)
            g_warning ("libvirt's event loop failed to initialize: %s", virGetLastErrorMessage ());
        g_once_init_leave (&initialized, 1);
    }
    self = g_object_new (VMR_TYPE_LIBVIRT_CONNECTION, NULL);
    self->uri = g_strdup (uri);
    return self;
}

static void
vmr_libvirt_connection_finalize (GObject *object)
{
    VmrLibvirtConnection *self = VMR_LIBVIRT_CONNECTION (object);

    if (!self->stopped)
        vmr_libvirt_connection_stop (self);
    g_clear_object (&self->cancellable);
    g_main_context_unref (self->main_context);
    g_mutex_clear (&self->lock);
    g_free (self->uri);
    G_OBJECT_CLASS (vmr_libvirt_connection_parent_class)->finalize (object);
}

static void
vmr_libvirt_connection_init (VmrLibvirtConnection *self)
{
    g_mutex_init (&self->lock);
    self->lifecycle_id = self->block_job_id = -1;
    self->main_context = g_main_context_ref_thread_default ();
    self->cancellable = g_cancellable_new ();
}

static void
vmr_libvirt_connection_class_init (VmrLibvirtConnectionClass *klass)
{
    G_OBJECT_CLASS (klass)->finalize = vmr_libvirt_connection_finalize;
    signals[SIGNAL_CONNECTED]
        = g_signal_new ("connected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 0);
    signals[SIGNAL_DISCONNECTED]
        = g_signal_new ("disconnected", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
    signals[SIGNAL_LIFECYCLE]
        = g_signal_new ("lifecycle", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 4, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT, G_TYPE_INT);
    signals[SIGNAL_BLOCK_JOB]
        = g_signal_new ("block-job", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                        NULL, G_TYPE_NONE, 4, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT, G_TYPE_INT);
}
