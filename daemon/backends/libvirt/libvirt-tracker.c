#define G_LOG_DOMAIN "vmr-daemon"

#include "libvirt-tracker.h"

#include "backend-libvirt.h"
#include "libvirt-connection.h"
#include "libvirt-domain.h"
#include "libvirt-xml.h"
#include "vmr-error.h"

#define STOPPED_REASON "domain stopped"

struct _VmrLibvirtTracker {
    GObject parent_instance;

    VmrEngine *engine;
    VmrLibvirtConnection *connection;
    GHashTable *known;   /* name -> uuid of the domains added to the engine, owned */
    GHashTable *pending; /* name -> Pending *, domains being added */
    guint defined_reads; /* the looks at the defined domains' disks started */
    guint defined_shown; /* the latest of them the engine was given */
    gulong hook_handler;
};

G_DEFINE_TYPE (VmrLibvirtTracker, vmr_libvirt_tracker, G_TYPE_OBJECT)

typedef struct {
    gchar *uuid;
    gboolean stopped; /* it stopped while it was being added */
} Pending;

static void
pending_free (Pending *pending)
{
    g_free (pending->uuid);
    g_free (pending);
}

/* a running domain as libvirt lists it */
typedef struct {
    gchar *name;
    gchar *uuid;
} DomainId;

static void
domain_id_free (DomainId *id)
{
    g_free (id->name);
    g_free (id->uuid);
    g_free (id);
}

static DomainId *
domain_id_new (virDomain *dom)
{
    DomainId *id = g_new0 (DomainId, 1);
    gchar uuid[VIR_UUID_STRING_BUFLEN] = "";

    id->name = g_strdup (virDomainGetName (dom));
    if (virDomainGetUUIDString (dom, uuid) == 0)
        id->uuid = g_strdup (uuid);
    return id;
}

/* ---- adding and removing ---- */

static void
forget (VmrLibvirtTracker *self, const gchar *name, const gchar *reason)
{
    Pending *pending = g_hash_table_lookup (self->pending, name);

    if (pending != NULL)
        pending->stopped = TRUE;
    if (!g_hash_table_remove (self->known, name))
        return;
    vmr_engine_remove_domain (self->engine, name, reason);
}

typedef struct {
    VmrLibvirtTracker *self;
    gchar *name;
} AddData;

static void
added_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    AddData *data = user_data;
    VmrLibvirtTracker *self = data->self;
    g_autoptr (GError) error = NULL;
    g_autoptr (JsonObject) domain = vmr_engine_add_domain_finish (self->engine, res, &error);
    g_autofree gchar *pending_name = NULL;
    Pending *pending = NULL;

    g_hash_table_steal_extended (self->pending, data->name, (gpointer *) &pending_name,
                                 (gpointer *) &pending);
    if (domain == NULL) {
        g_message ("libvirt domain %s: not followed: %s", data->name, error->message);
    } else if (pending != NULL && pending->stopped) {
        vmr_engine_remove_domain (self->engine, data->name, STOPPED_REASON);
    } else {
        g_hash_table_insert (self->known, g_strdup (data->name),
                             g_strdup (pending != NULL ? pending->uuid : NULL));
    }
    if (pending != NULL)
        pending_free (pending);
    g_object_unref (data->self);
    g_free (data->name);
    g_free (data);
}

static void
ensure (VmrLibvirtTracker *self, const gchar *name, const gchar *uuid)
{
    const gchar *known_uuid = NULL;
    g_autoptr (VmrBackend) backend = NULL;
    Pending *pending;
    AddData *data;

    if (name == NULL || uuid == NULL)
        return;
    if (g_hash_table_lookup_extended (self->known, name, NULL, (gpointer *) &known_uuid)) {
        if (g_strcmp0 (known_uuid, uuid) == 0)
            return;
        /* the name now belongs to another domain: the old one is gone */
        forget (self, name, STOPPED_REASON);
    }
    pending = g_hash_table_lookup (self->pending, name);
    if (pending != NULL) {
        /* stopped and started again while it was being added */
        if (g_strcmp0 (pending->uuid, uuid) == 0)
            pending->stopped = FALSE;
        return;
    }
    if (vmr_engine_get_backend (self->engine, name) != NULL) {
        g_debug ("libvirt domain %s: the name is taken by an attached QEMU", name);
        return;
    }
    pending = g_new0 (Pending, 1);
    pending->uuid = g_strdup (uuid);
    g_hash_table_insert (self->pending, g_strdup (name), pending);
    backend = vmr_backend_libvirt_new (self->connection, name, uuid);
    data = g_new0 (AddData, 1);
    data->self = g_object_ref (self);
    data->name = g_strdup (name);
    vmr_engine_add_domain_async (self->engine, name, backend, NULL, added_cb, data);
}

/* ---- the disks of the domains that are defined and do not run ---- */

/* the disks of @dom's definition, added to @disks */
static void
add_defined_disks (virDomain *dom, GPtrArray *disks)
{
    g_autoptr (GError) error = NULL;
    g_autofree gchar *xml = vmr_libvirt_domain_get_xml (dom, VIR_DOMAIN_XML_INACTIVE, &error);
    g_autoptr (GPtrArray) parsed = xml != NULL ? vmr_libvirt_xml_parse_disks (xml, &error) : NULL;

    if (parsed == NULL) {
        g_message ("libvirt domain %s: cannot read its disks: %s", virDomainGetName (dom),
                   error->message);
        return;
    }
    for (guint i = 0; i < parsed->len; i++) {
        VmrLibvirtDisk *disk = g_ptr_array_index (parsed, i);
        VmrEngineDefinedDisk *defined;

        if (disk->path == NULL)
            continue;
        defined = g_new0 (VmrEngineDefinedDisk, 1);
        defined->domain = g_strdup (virDomainGetName (dom));
        defined->disk = g_strdup (disk->target);
        defined->path = g_strdup (disk->path);
        g_ptr_array_add (disks, defined);
    }
}

/* the disks of every domain of @conn that does not run (VmrEngineDefinedDisk *); NULL, @error */
static GPtrArray *
read_defined (virConnect *conn, GError **error)
{
    g_autoptr (GPtrArray) disks
        = g_ptr_array_new_with_free_func ((GDestroyNotify) vmr_engine_defined_disk_free);
    virDomainPtr *doms = NULL;
    int n = virConnectListAllDomains (conn, &doms, VIR_CONNECT_LIST_DOMAINS_INACTIVE);

    if (n < 0) {
        vmr_libvirt_set_error (error, "cannot list the domains that do not run");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        add_defined_disks (doms[i], disks);
        virDomainFree (doms[i]);
    }
    g_free (doms);
    return g_steal_pointer (&disks);
}

static void
defined_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    VmrLibvirtTracker *self = source;
    g_autoptr (GError) error = NULL;
    g_autoptr (virConnect) conn = vmr_libvirt_connection_ref_conn (self->connection, &error);
    GPtrArray *disks = conn != NULL ? read_defined (conn, &error) : NULL;

    if (disks == NULL)
        g_task_return_error (task, g_steal_pointer (&error));
    else
        g_task_return_pointer (task, disks, (GDestroyNotify) g_ptr_array_unref);
}

/* what the look @read found: the engine keeps the latest look's, a failed one changes nothing */
static void
show_defined (VmrLibvirtTracker *self, guint read, GPtrArray *disks)
{
    if (disks == NULL || read <= self->defined_shown)
        return;
    self->defined_shown = read;
    vmr_engine_set_defined_disks (self->engine, disks);
}

static void
defined_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrLibvirtTracker *self = VMR_LIBVIRT_TRACKER (source);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) disks = g_task_propagate_pointer (G_TASK (res), &error);

    if (disks == NULL)
        g_message ("libvirt: %s", error->message);
    show_defined (self, GPOINTER_TO_UINT (g_task_get_task_data (G_TASK (res))), disks);
}

/* reads the disks of every domain that does not run again, for the engine's refusals */
static void
refresh_defined (VmrLibvirtTracker *self)
{
    g_autoptr (GTask) task = g_task_new (self, NULL, defined_cb, NULL);

    g_task_set_task_data (task, GUINT_TO_POINTER (++self->defined_reads), NULL);
    g_task_run_in_thread (task, defined_thread);
}

/* ---- the running domains ---- */

static void
list_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    VmrLibvirtTracker *self = source;
    g_autoptr (GError) error = NULL;
    g_autoptr (virConnect) conn = vmr_libvirt_connection_ref_conn (self->connection, &error);
    g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func ((GDestroyNotify) domain_id_free);
    virDomainPtr *doms = NULL;
    int n;

    if (conn == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    n = virConnectListAllDomains (conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    if (n < 0) {
        vmr_libvirt_set_error (&error, "cannot list the running domains");
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    for (int i = 0; i < n; i++) {
        g_ptr_array_add (ids, domain_id_new (doms[i]));
        virDomainFree (doms[i]);
    }
    g_free (doms);
    /* before the running ones are added: no copy is let onto a defined one's disk */
    g_object_set_data_full (G_OBJECT (task), "vmr-defined", read_defined (conn, NULL),
                            (GDestroyNotify) g_ptr_array_unref);
    g_task_return_pointer (task, g_steal_pointer (&ids), (GDestroyNotify) g_ptr_array_unref);
}

static void
list_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrLibvirtTracker *self = VMR_LIBVIRT_TRACKER (source);
    g_autoptr (GError) error = NULL;
    g_autoptr (GPtrArray) ids = g_task_propagate_pointer (G_TASK (res), &error);
    g_autoptr (GPtrArray) gone = g_ptr_array_new_with_free_func (g_free);
    GPtrArray *defined = g_object_get_data (G_OBJECT (res), "vmr-defined");
    GHashTableIter iter;
    const gchar *name;
    const gchar *uuid;

    if (ids == NULL) {
        g_message ("libvirt: %s", error->message);
        return;
    }
    show_defined (self, GPOINTER_TO_UINT (g_task_get_task_data (G_TASK (res))), defined);
    /* domains that stopped while the connection was down */
    g_hash_table_iter_init (&iter, self->known);
    while (g_hash_table_iter_next (&iter, (gpointer *) &name, (gpointer *) &uuid)) {
        gboolean running = FALSE;

        for (guint i = 0; i < ids->len && !running; i++) {
            DomainId *id = g_ptr_array_index (ids, i);

            running = g_strcmp0 (id->name, name) == 0 && g_strcmp0 (id->uuid, uuid) == 0;
        }
        if (!running)
            g_ptr_array_add (gone, g_strdup (name));
    }
    for (guint i = 0; i < gone->len; i++)
        forget (self, g_ptr_array_index (gone, i), STOPPED_REASON);
    for (guint i = 0; i < ids->len; i++) {
        DomainId *id = g_ptr_array_index (ids, i);

        ensure (self, id->name, id->uuid);
    }
}

static void
connected_cb (VmrLibvirtConnection *connection, gpointer user_data)
{
    VmrLibvirtTracker *self = user_data;
    g_autoptr (GTask) task = g_task_new (self, NULL, list_cb, NULL);

    g_task_set_task_data (task, GUINT_TO_POINTER (++self->defined_reads), NULL);
    g_task_run_in_thread (task, list_thread);
}

static void
lifecycle_cb (VmrLibvirtConnection *connection, const gchar *name, const gchar *uuid, gint event,
              gint detail, gpointer user_data)
{
    VmrLibvirtTracker *self = user_data;

    if (event == VIR_DOMAIN_EVENT_STARTED)
        ensure (self, name, uuid);
    else if (event == VIR_DOMAIN_EVENT_STOPPED)
        forget (self, name, STOPPED_REASON);
    /* a domain defined, changed, removed, started or stopped: the defined disks changed */
    if (event == VIR_DOMAIN_EVENT_DEFINED || event == VIR_DOMAIN_EVENT_UNDEFINED
        || event == VIR_DOMAIN_EVENT_STARTED || event == VIR_DOMAIN_EVENT_STOPPED)
        refresh_defined (self);
}

/* ---- the hook ---- */

static void
resolve_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    VmrLibvirtTracker *self = source;
    const gchar *name = task_data;
    g_autoptr (GError) error = NULL;
    g_autoptr (virConnect) conn = vmr_libvirt_connection_ref_conn (self->connection, &error);
    g_autoptr (virDomain) dom = NULL;

    if (conn == NULL) {
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    dom = virDomainLookupByName (conn, name);
    if (dom == NULL || virDomainIsActive (dom) != 1) {
        vmr_libvirt_set_error (&error, "no running domain %s", name);
        g_task_return_error (task, g_steal_pointer (&error));
        return;
    }
    g_task_return_pointer (task, domain_id_new (dom), (GDestroyNotify) domain_id_free);
}

static void
resolve_cb (GObject *source, GAsyncResult *res, gpointer user_data)
{
    VmrLibvirtTracker *self = VMR_LIBVIRT_TRACKER (source);
    g_autoptr (GError) error = NULL;
    DomainId *id = g_task_propagate_pointer (G_TASK (res), &error);

    if (id == NULL) {
        g_debug ("hook: %s", error->message);
        return;
    }
    ensure (self, id->name, id->uuid);
    domain_id_free (id);
}

/*
 * The hook runs while libvirtd waits for it: it has had its answer before
 * this runs, and the libvirt calls made for it run in a thread.
 */
static void
hook_event_cb (VmrEngine *engine, const gchar *domain, const gchar *op, const gchar *subop,
               const gchar *uuid, gpointer user_data)
{
    VmrLibvirtTracker *self = user_data;

    if (g_strcmp0 (op, "stopped") == 0 || g_strcmp0 (op, "release") == 0) {
        forget (self, domain, STOPPED_REASON);
        return;
    }
    if (g_strcmp0 (op, "started") != 0 && g_strcmp0 (op, "reconnect") != 0
        && g_strcmp0 (op, "attach") != 0)
        return;
    /* news from libvirtd means it runs: connecting lists every domain */
    if (!vmr_libvirt_connection_is_connected (self->connection)) {
        vmr_libvirt_connection_try_now (self->connection);
        return;
    }
    if (uuid != NULL && g_hash_table_contains (self->known, domain)
        && g_strcmp0 (g_hash_table_lookup (self->known, domain), uuid) == 0)
        return;
    {
        g_autoptr (GTask) task = g_task_new (self, NULL, resolve_cb, NULL);

        g_task_set_task_data (task, g_strdup (domain), g_free);
        g_task_run_in_thread (task, resolve_thread);
    }
}

/* ---- object ---- */

void
vmr_libvirt_tracker_start (VmrLibvirtTracker *self)
{
    vmr_libvirt_connection_start (self->connection);
}

void
vmr_libvirt_tracker_stop (VmrLibvirtTracker *self)
{
    g_clear_signal_handler (&self->hook_handler, self->engine);
    g_signal_handlers_disconnect_by_data (self->connection, self);
    vmr_libvirt_connection_stop (self->connection);
}

VmrLibvirtTracker *
vmr_libvirt_tracker_new (VmrEngine *engine, const gchar *uri)
{
    VmrLibvirtTracker *self = g_object_new (VMR_TYPE_LIBVIRT_TRACKER, NULL);

    self->engine = g_object_ref (engine);
    self->connection = vmr_libvirt_connection_new (uri);
    g_signal_connect (self->connection, "connected", G_CALLBACK (connected_cb), self);
    g_signal_connect (self->connection, "lifecycle", G_CALLBACK (lifecycle_cb), self);
    self->hook_handler = g_signal_connect (engine, "hook-event", G_CALLBACK (hook_event_cb), self);
    return self;
}

static void
vmr_libvirt_tracker_finalize (GObject *object)
{
    VmrLibvirtTracker *self = VMR_LIBVIRT_TRACKER (object);

    g_clear_signal_handler (&self->hook_handler, self->engine);
    g_signal_handlers_disconnect_by_data (self->connection, self);
    g_object_unref (self->connection);
    g_object_unref (self->engine);
    g_hash_table_unref (self->known);
    g_hash_table_unref (self->pending);
    G_OBJECT_CLASS (vmr_libvirt_tracker_parent_class)->finalize (object);
}

static void
vmr_libvirt_tracker_init (VmrLibvirtTracker *self)
{
    self->known = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    self->pending
        = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) pending_free);
}

static void
vmr_libvirt_tracker_class_init (VmrLibvirtTrackerClass *klass)
{
    G_OBJECT_CLASS (klass)->finalize = vmr_libvirt_tracker_finalize;
}
