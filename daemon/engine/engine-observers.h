/*
 * What the lower parts of the engine tell the upper ones. The events are
 * declared here, and their handlers are wired in one table, the
 * `observers` of engine.c: nothing else sets a function pointer that a
 * part calls into one above it (the layers check holds this:
 * tests/static/check-layers.py --pointers-in).
 *
 * One table of observers rather than GObject signals on VmrEngine:
 *   - typed: the compiler checks each handler against its event, where a
 *     signal's handler is cast with G_CALLBACK and a DomainEntry would
 *     travel as a G_TYPE_POINTER;
 *   - private: the events carry the engine's inner structs and are no API,
 *     where a signal on VmrEngine can be connected to by whoever holds the
 *     engine;
 *   - ordered in one place: the handlers of an event run in the table's
 *     order (a copy's convergence before the watchers see its progress),
 *     where signal handlers run in the order of connections made in
 *     several files;
 *   - cheap: the progress of every copy, twice a second, is a loop over a
 *     constant array, with nothing to marshal.
 * The events for the layers above the engine (job-changed, job-progress,
 * hook-event) stay GObject signals of VmrEngine (engine.h).
 */
#pragma once

#include "engine.h"
#include "job.h"

G_BEGIN_DECLS

typedef struct _DomainEntry DomainEntry;

/* one observer: the events it handles, NULL for the others */
typedef struct {
    /* a domain joined the table */
    void (*domain_added) (VmrEngine *self, DomainEntry *entry);
    /* the backend says a copy is in sync, or a refused pivot is tried again */
    void (*copy_in_sync) (VmrEngine *self, DomainEntry *entry, VmrJob *job);
    /* a running copy's progress was read */
    void (*progress_read) (VmrEngine *self, DomainEntry *entry, VmrJob *job);
    /* the domain's load was sampled and the policy decided on its jobs */
    void (*load_sampled) (VmrEngine *self, DomainEntry *entry);
    /* the cluster's queue or its reach changed: a job may start, or waits for another reason */
    void (*cluster_changed) (VmrEngine *self);
    /* the cluster was joined, or is being left */
    void (*cluster_joined) (VmrEngine *self);
    void (*cluster_leaving) (VmrEngine *self);
} VmrEngineObserver;

/* the handlers of each event, in the table's order (engine-observers.c) */
void vmr_engine_notify_domain_added (VmrEngine *self, DomainEntry *entry);
void vmr_engine_notify_copy_in_sync (VmrEngine *self, DomainEntry *entry, VmrJob *job);
void vmr_engine_notify_progress_read (VmrEngine *self, DomainEntry *entry, VmrJob *job);
void vmr_engine_notify_load_sampled (VmrEngine *self, DomainEntry *entry);
void vmr_engine_notify_cluster_changed (VmrEngine *self);
void vmr_engine_notify_cluster_joined (VmrEngine *self);
void vmr_engine_notify_cluster_leaving (VmrEngine *self);

G_END_DECLS
