/*
 * A copy's neighbours: the other guest disks on this host whose storage is
 * the copy's source or destination storage. A copy harms them as it harms
 * its own guest: it reads one array and writes another that they share. The
 * harm the controller reads for the copy is the largest of its own guest's
 * and each neighbour's, each against its own baseline. Pure: the engine
 * gathers the candidates and feeds the chosen sample to the controller.
 */
#pragma once

#include <glib.h>

#include "controller.h"
#include "storage.h"

G_BEGIN_DECLS

/* one guest disk on this host, as a copy sees it */
typedef struct {
    const gchar *domain;
    const gchar *disk;
    const VmrStorage *storage; /* the storage its image lies in, NULL = none */
    VmrLoadSample load;        /* its newest sample, time_us 0 = none */
    VmrLoadSample baseline;    /* its load without the copy */
    gboolean has_baseline;     /* FALSE: not measured yet, its harm cannot be told */
    gdouble noise;             /* the baseline's noise band */
} VmrNeighbour;

/*
 * TRUE when @candidate is a neighbour of @domain's copy of @disk from the
 * storage @source to @dest (either may be NULL): another disk, of any guest,
 * whose storage is one of them
 */
gboolean vmr_neighbour_of (const VmrNeighbour *candidate, const gchar *domain, const gchar *disk,
                           const VmrStorage *source, const VmrStorage *dest);

/*
 * The neighbour's harm now, >= 0: 0 when it has no baseline or sample, or
 * when it is idle now or was idle in its baseline (an idle guest feels
 * nothing; one that turned busy needs a new baseline first)
 */
gdouble vmr_neighbour_harm (const VmrControllerConfig *config, const VmrNeighbour *neighbour);

/*
 * TRUE when @neighbour turned busy since its baseline (or has none and is
 * busy): its harm counts only once a new baseline is measured
 */
gboolean vmr_neighbour_needs_baseline (const VmrControllerConfig *config,
                                       const VmrNeighbour *neighbour);

/*
 * The neighbour among the @n @candidates of the copy (vmr_neighbour_of())
 * whose harm is the largest and over @own_harm, its index, or -1 when the
 * copy's own guest's harm is the largest (ties go to the own guest). Only
 * a neighbour whose harm can be told (busy, with a busy baseline) is picked:
 * with an idle guest's copy @own_harm is -1, and any such neighbour wins.
 * @harm is set to the harm that wins.
 */
gint vmr_neighbour_pick (const VmrControllerConfig *config, const VmrNeighbour *candidates, guint n,
                         const gchar *domain, const gchar *disk, const VmrStorage *source,
                         const VmrStorage *dest, gdouble own_harm, gdouble *harm);

/*
 * The job's reason when @neighbour set the speed: the neighbour and how far
 * from its baseline it is, then the controller's own @reason, e.g. "db02
 * vdb on storage array-a at 1.31x its latency; ..." (shown after the
 * decision: "back-off: db02 vdb on storage array-a at 1.31x its latency")
 */
gchar *vmr_neighbour_reason (const VmrNeighbour *neighbour, const gchar *reason);

G_END_DECLS
