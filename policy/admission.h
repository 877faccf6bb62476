/*
 * Admission: whether a job that has not started may start now under the
 * policy's limits on running copies (max-parallel and its per-iothread,
 * per-domain and per-destination kin). A pure computation over the copies
 * that run and the jobs that wait, asked oldest first; no I/O, no clock.
 */
#pragma once

#include <glib.h>

#include "policy.h"

G_BEGIN_DECLS

/* a copy that runs, or a job that waits to start */
typedef struct {
    const gchar *domain;
    const gchar *const *iothreads;  /* every I/O thread serving the source disk (a per-queue
                                     * mapping may name several); NULL or empty: the main loop */
    const gchar *destination;       /* the directory or block device it writes to */
    guint64 limits[VMR_LIMIT_LAST]; /* of the job's own rule, 0 = no limit */
} VmrAdmissionCopy;

typedef struct _VmrAdmission VmrAdmission;

/* an empty host: nothing runs, nothing waits */
VmrAdmission *vmr_admission_new (void);
void vmr_admission_free (VmrAdmission *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrAdmission, vmr_admission_free)

/* counts @copy as running: in every group it belongs to */
void vmr_admission_add_running (VmrAdmission *self, const VmrAdmissionCopy *copy);

/*
 * Whether @job may start, given the running copies and the jobs checked
 * before it (call it for the waiting jobs oldest first, and
 * vmr_admission_add_running() for each one that does start). Returns
 * VMR_LIMIT_LAST when it may; otherwise the first limit, in the order of
 * VmrLimit, that holds it, and sets @out_reason (may be NULL; free with
 * g_free()), e.g. "held by max-parallel-per-iothread (1 copy on io0 of
 * web01)". A job held by a limit is first in line in that limit's group:
 * a later job of the same group is held too, even if its own rule allows
 * more (unless its rule sets no such limit), while jobs of other groups go
 * ahead. A disk served by several I/O threads counts against each of them,
 * and may start only when each of them has a free slot.
 */
VmrLimit vmr_admission_check (VmrAdmission *self, const VmrAdmissionCopy *job, gchar **out_reason);

/* the group of an I/O thread when a disk has none */
#define VMR_ADMISSION_MAIN_LOOP "main-loop"

G_END_DECLS
