#define G_LOG_DOMAIN "vmr-daemon"

#include "verification.h"

#include "vmr-error.h"
#include "vmr-json.h"

static const gchar *const state_names[] = {
    [VMR_VERIFY_RUNNING] = "running",
    [VMR_VERIFY_PASSED] = "passed",
    [VMR_VERIFY_FAILED] = "failed",
    [VMR_VERIFY_ERROR] = "error",
};

VmrVerification *
vmr_verification_new (gint64 now_us)
{
    VmrVerification *self = g_new0 (VmrVerification, 1);

    self->state = VMR_VERIFY_RUNNING;
    self->started_us = now_us;
    self->ranges = g_array_new (FALSE, FALSE, sizeof (VmrVerifyRange));
    return self;
}

void
vmr_verification_free (VmrVerification *self)
{
    if (self == NULL)
        return;
    g_array_unref (self->ranges);
    g_free (self->error);
    g_free (self);
}

const gchar *
vmr_verify_state_to_string (VmrVerifyState state)
{
    return state < VMR_VERIFY_LAST ? state_names[state] : "unknown";
}

static VmrVerifyState
state_from_string (const gchar *name)
{
    for (guint i = 0; i < VMR_VERIFY_LAST; i++) {
        if (g_strcmp0 (name, state_names[i]) == 0)
            return (VmrVerifyState) i;
    }
    return VMR_VERIFY_LAST;
}

void
vmr_verification_add_range (VmrVerification *self, guint64 offset, guint64 length)
{
    VmrVerifyRange range = { offset, length };

    self->n_ranges++;
    if (self->ranges->len < VMR_VERIFY_MAX_RANGES)
        g_array_append_val (self->ranges, range);
}

void
vmr_verification_take_figures (VmrVerification *self, VmrNbdCompare *compare)
{
    VmrNbdCompareFigures f = vmr_nbd_compare_get_figures (compare);

    self->size = f.size;
    self->covered = f.covered_bytes;
    self->compared = f.compared_bytes;
    self->zero = f.zero_bytes;
    self->written = f.written_bytes;
    self->mismatched = f.mismatched_bytes;
}

void
vmr_verification_take_result (VmrVerification *self, VmrNbdCompare *compare)
{
    const VmrRangeList *mismatches = vmr_nbd_compare_get_mismatches (compare);

    vmr_verification_take_figures (self, compare);
    for (guint i = 0; i < mismatches->len; i++) {
        const VmrRange *r = vmr_range_list_get (mismatches, i);

        vmr_verification_add_range (self, r->offset, r->length);
    }
}

gchar *
vmr_verification_describe_ranges (const VmrVerification *self)
{
    GString *text = g_string_new (NULL);

    for (guint i = 0; i < self->ranges->len; i++) {
        const VmrVerifyRange *r = &g_array_index (self->ranges, VmrVerifyRange, i);

        g_string_append_printf (text, "%s%" G_GUINT64_FORMAT "+%" G_GUINT64_FORMAT,
                                i > 0 ? ", " : "", r->offset, r->length);
    }
    if (self->n_ranges > self->ranges->len)
        g_string_append_printf (text, " (%u more)", self->n_ranges - self->ranges->len);
    return g_string_free (text, FALSE);
}

JsonObject *
vmr_verification_to_json (const VmrVerification *self)
{
    JsonObject *obj = json_object_new ();
    JsonArray *ranges = json_array_new ();

    json_object_set_string_member (obj, "state", vmr_verify_state_to_string (self->state));
    json_object_set_int_member (obj, "started", self->started_us);
    if (self->finished_us != 0)
        json_object_set_int_member (obj, "finished", self->finished_us);
    else
        json_object_set_null_member (obj, "finished");
    json_object_set_int_member (obj, "size", (gint64) self->size);
    json_object_set_int_member (obj, "covered", (gint64) self->covered);
    json_object_set_int_member (obj, "compared", (gint64) self->compared);
    json_object_set_int_member (obj, "zero", (gint64) self->zero);
    json_object_set_int_member (obj, "written", (gint64) self->written);
    json_object_set_int_member (obj, "mismatched", (gint64) self->mismatched);
    json_object_set_int_member (obj, "mismatched-ranges", self->n_ranges);
    for (guint i = 0; i < self->ranges->len; i++) {
        const VmrVerifyRange *r = &g_array_index (self->ranges, VmrVerifyRange, i);
        JsonObject *range = json_object_new ();

        json_object_set_int_member (range, "offset", (gint64) r->offset);
        json_object_set_int_member (range, "length", (gint64) r->length);
        json_array_add_object_element (ranges, range);
    }
    json_object_set_array_member (obj, "ranges", ranges);
    if (self->error != NULL)
        json_object_set_string_member (obj, "error", self->error);
    else
        json_object_set_null_member (obj, "error");
    return obj;
}

VmrVerification *
vmr_verification_from_json (JsonObject *obj)
{
    VmrVerifyState state;
    JsonArray *ranges;
    VmrVerification *self;

    if (obj == NULL)
        return NULL;
    state = state_from_string (vmr_json_get_string (obj, "state"));
    if (state == VMR_VERIFY_LAST)
        return NULL;
    ranges = vmr_json_get_array (obj, "ranges");
    self = vmr_verification_new (vmr_json_int_or (obj, "started", 0));
    self->state = state;
    self->finished_us = vmr_json_int_or (obj, "finished", 0);
    self->size = vmr_json_uint_or (obj, "size", 0);
    self->covered = vmr_json_uint_or (obj, "covered", 0);
    self->compared = vmr_json_uint_or (obj, "compared", 0);
    self->zero = vmr_json_uint_or (obj, "zero", 0);
    self->written = vmr_json_uint_or (obj, "written", 0);
    self->mismatched = vmr_json_uint_or (obj, "mismatched", 0);
    for (guint i = 0; ranges != NULL && i < json_array_get_length (ranges); i++) {
        JsonObject *range = vmr_json_array_object (ranges, i);

        if (range != NULL && self->ranges->len < VMR_VERIFY_MAX_RANGES)
            g_array_append_val (self->ranges,
                                ((VmrVerifyRange){ vmr_json_uint_or (range, "offset", 0),
                                                   vmr_json_uint_or (range, "length", 0) }));
    }
    self->n_ranges
        = MAX ((guint) vmr_json_uint_or (obj, "mismatched-ranges", 0), self->ranges->len);
    self->error = g_strdup (vmr_json_get_string (obj, "error"));
    if (self->state == VMR_VERIFY_RUNNING) {
        /* the daemon stopped while it ran */
        self->state = VMR_VERIFY_ERROR;
        g_free (self->error);
        self->error = g_strdup ("virt-mirrord stopped before the verification finished");
    }
    return self;
}

/* the first QEMU whose NBD exports of nodes on I/O threads the tests prove */
#define VERIFY_IOTHREAD_QEMU_MAJOR 10

gboolean
vmr_verification_qemu_can_verify (const VmrDisk *disk, guint qemu_major, GError **error)
{
    if (qemu_major >= VERIFY_IOTHREAD_QEMU_MAJOR || disk->iothread == NULL)
        return TRUE;
    g_set_error (error, VMR_ERROR, VMR_ERROR_FAILED,
                 "%s runs on I/O thread %s, and QEMU %u aborts when the verification's NBD "
                 "client of such a disk leaves (QEMU %d.0 does not)",
                 disk->id, disk->iothread, qemu_major, VERIFY_IOTHREAD_QEMU_MAJOR);
    return FALSE;
}
