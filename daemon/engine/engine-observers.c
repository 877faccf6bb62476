#define G_LOG_DOMAIN "vmr-daemon"

/*
 * The events of engine-observers.h, each passed to the observers of the
 * table engine.c installs, in its order. The lowest part of the engine: it
 * calls no other.
 */

#include "engine-observers.h"

#include "engine-private.h"

typedef enum {
    DOMAIN_ADDED,
    COPY_IN_SYNC,
    PROGRESS_READ,
    LOAD_SAMPLED,
    CLUSTER_CHANGED,
    CLUSTER_JOINED,
    CLUSTER_LEAVING,
} Event;

/* @observer's handler of @event, when it has one; @entry and @job as the event has them */
static void
deliver (VmrEngine *self, const VmrEngineObserver *observer, Event event, DomainEntry *entry,
         VmrJob *job)
{
    if (event == DOMAIN_ADDED && observer->domain_added != NULL)
        observer->domain_added (self, entry);
    else if (event == COPY_IN_SYNC && observer->copy_in_sync != NULL)
        observer->copy_in_sync (self, entry, job);
    else if (event == PROGRESS_READ && observer->progress_read != NULL)
        observer->progress_read (self, entry, job);
    else if (event == LOAD_SAMPLED && observer->load_sampled != NULL)
        observer->load_sampled (self, entry);
    else if (event == CLUSTER_CHANGED && observer->cluster_changed != NULL)
        observer->cluster_changed (self);
    else if (event == CLUSTER_JOINED && observer->cluster_joined != NULL)
        observer->cluster_joined (self);
    else if (event == CLUSTER_LEAVING && observer->cluster_leaving != NULL)
        observer->cluster_leaving (self);
}

/* @event to every observer, in the table's order */
static void
notify (VmrEngine *self, Event event, DomainEntry *entry, VmrJob *job)
{
    for (gsize i = 0; i < self->n_observers; i++)
        deliver (self, &self->observers[i], event, entry, job);
}

void
vmr_engine_notify_domain_added (VmrEngine *self, DomainEntry *entry)
{
    notify (self, DOMAIN_ADDED, entry, NULL);
}

void
vmr_engine_notify_copy_in_sync (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    notify (self, COPY_IN_SYNC, entry, job);
}

void
vmr_engine_notify_progress_read (VmrEngine *self, DomainEntry *entry, VmrJob *job)
{
    notify (self, PROGRESS_READ, entry, job);
}

void
vmr_engine_notify_load_sampled (VmrEngine *self, DomainEntry *entry)
{
    notify (self, LOAD_SAMPLED, entry, NULL);
}

void
vmr_engine_notify_cluster_changed (VmrEngine *self)
{
    notify (self, CLUSTER_CHANGED, NULL, NULL);
}

void
vmr_engine_notify_cluster_joined (VmrEngine *self)
{
    notify (self, CLUSTER_JOINED, NULL, NULL);
}

void
vmr_engine_notify_cluster_leaving (VmrEngine *self)
{
    notify (self, CLUSTER_LEAVING, NULL, NULL);
}
