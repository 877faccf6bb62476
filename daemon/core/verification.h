/*
 * The verification of a copy: after the pivot, the old source compared with
 * the disk the guest runs on, leaving out what the guest wrote since. The
 * plain record a job keeps of its last verification, and its JSON.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "disk.h"
#include "nbd-compare.h"

G_BEGIN_DECLS

typedef enum {
    VMR_VERIFY_RUNNING,
    VMR_VERIFY_PASSED, /* every byte compared was equal */
    VMR_VERIFY_FAILED, /* confirmed differences: the ranges say where */
    VMR_VERIFY_ERROR,  /* the comparison could not be made or finished: error says why */
    VMR_VERIFY_LAST,
} VmrVerifyState;

/* the differing ranges a record keeps, the first ones on the disk */
#define VMR_VERIFY_MAX_RANGES 16

typedef struct {
    guint64 offset; /* bytes */
    guint64 length; /* bytes */
} VmrVerifyRange;

typedef struct {
    VmrVerifyState state;
    gint64 started_us;  /* wall clock */
    gint64 finished_us; /* wall clock, 0 while it runs */

    /* what the comparison went over, bytes; updated while it runs */
    guint64 size;
    guint64 covered; /* of size, gone over so far */
    guint64 compared;
    guint64 zero;    /* zero on both sides: skipped */
    guint64 written; /* written by the guest since the pivot: skipped */

    guint64 mismatched; /* bytes that differ */
    guint n_ranges;     /* differing ranges in all */
    GArray *ranges;     /* of VmrVerifyRange, the first VMR_VERIFY_MAX_RANGES */
    gchar *error;       /* for VMR_VERIFY_ERROR */
} VmrVerification;

/* a new record, running since @now_us */
VmrVerification *vmr_verification_new (gint64 now_us);
void vmr_verification_free (VmrVerification *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrVerification, vmr_verification_free)

/* "running", "passed", "failed", "error"; never NULL */
const gchar *vmr_verify_state_to_string (VmrVerifyState state);

/* adds a differing range: counted always, kept among the first VMR_VERIFY_MAX_RANGES */
void vmr_verification_add_range (VmrVerification *self, guint64 offset, guint64 length);

/* the figures of @compare so far (any thread may run it) */
void vmr_verification_take_figures (VmrVerification *self, VmrNbdCompare *compare);

/* the figures of the finished @compare, and its confirmed differences as ranges */
void vmr_verification_take_result (VmrVerification *self, VmrNbdCompare *compare);

/* "0+4096, 1048576+8192 (3 more)": the kept ranges, offset+length in bytes */
gchar *vmr_verification_describe_ranges (const VmrVerification *self);

/* the protocol's verification object (docs/protocol.md) */
JsonObject *vmr_verification_to_json (const VmrVerification *self);

/*
 * The record of a saved verification object; NULL when @obj is NULL or not
 * one. A verification that was running when the record was saved did not
 * finish: it reads back as an error saying so.
 */
VmrVerification *vmr_verification_from_json (JsonObject *obj);

/*
 * Whether @disk can be verified in a QEMU of major version @qemu_major.
 * QEMU 7.2 aborts when a client leaves an NBD export of a node on an I/O
 * thread (nbd_blockdev_client_closed() asserts it runs in the main thread);
 * QEMU 10.0 does not, and no probe tells the two apart: before 10.0, a disk
 * on an I/O thread is not verified (FALSE with one line in @error), which
 * keeps the VM running.
 */
gboolean vmr_verification_qemu_can_verify (const VmrDisk *disk, guint qemu_major, GError **error);

G_END_DECLS
