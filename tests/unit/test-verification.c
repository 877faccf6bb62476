/* a job's verification record (daemon/core/verification.h) */

#include "verification.h"

#include <string.h>

#include "vmr-json.h"

/* the first VMR_VERIFY_MAX_RANGES ranges are kept, every one is counted */
static void
test_ranges_kept (void)
{
    g_autoptr (VmrVerification) v = vmr_verification_new (1);
    g_autofree gchar *text = NULL;

    for (guint i = 0; i < VMR_VERIFY_MAX_RANGES + 3; i++)
        vmr_verification_add_range (v, (guint64) i * 8192, 4096);
    g_assert_cmpuint (v->n_ranges, ==, VMR_VERIFY_MAX_RANGES + 3);
    g_assert_cmpuint (v->ranges->len, ==, VMR_VERIFY_MAX_RANGES);
    text = vmr_verification_describe_ranges (v);
    g_assert_true (g_str_has_prefix (text, "0+4096, 8192+4096, 16384+4096"));
    g_assert_true (g_str_has_suffix (text, "122880+4096 (3 more)"));
}

typedef struct {
    const gchar *name;
    VmrVerifyState state;
    const gchar *error;
    VmrVerifyState read_back; /* what a record of it reads back as */
} RoundTrip;

static const RoundTrip round_trips[] = {
    { "passed", VMR_VERIFY_PASSED, NULL, VMR_VERIFY_PASSED },
    { "failed", VMR_VERIFY_FAILED, NULL, VMR_VERIFY_FAILED },
    { "error", VMR_VERIFY_ERROR, "QEMU cannot start its NBD server", VMR_VERIFY_ERROR },
    /* the daemon stopped while it ran: it did not finish */
    { "running", VMR_VERIFY_RUNNING, NULL, VMR_VERIFY_ERROR },
};

static void
test_round_trip (gconstpointer data)
{
    const RoundTrip *c = data;
    g_autoptr (VmrVerification) v = vmr_verification_new (1000);
    g_autoptr (VmrVerification) back = NULL;
    g_autoptr (JsonObject) obj = NULL;

    v->state = c->state;
    v->finished_us = c->state == VMR_VERIFY_RUNNING ? 0 : 2000;
    v->size = 1 << 30;
    v->covered = 1 << 29;
    v->compared = 1 << 28;
    v->zero = 1 << 27;
    v->written = 1 << 20;
    v->error = g_strdup (c->error);
    if (c->state == VMR_VERIFY_FAILED) {
        vmr_verification_add_range (v, 41955328, 8192);
        v->mismatched = 8192;
    }
    obj = vmr_verification_to_json (v);
    g_assert_cmpstr (vmr_json_get_string (obj, "state"), ==, vmr_verify_state_to_string (c->state));
    back = vmr_verification_from_json (obj);
    g_assert_nonnull (back);
    g_assert_cmpint (back->state, ==, c->read_back);
    g_assert_cmpint (back->started_us, ==, 1000);
    g_assert_cmpint (back->finished_us, ==, v->finished_us);
    g_assert_cmpuint (back->size, ==, v->size);
    g_assert_cmpuint (back->covered, ==, v->covered);
    g_assert_cmpuint (back->compared, ==, v->compared);
    g_assert_cmpuint (back->zero, ==, v->zero);
    g_assert_cmpuint (back->written, ==, v->written);
    g_assert_cmpuint (back->mismatched, ==, v->mismatched);
    g_assert_cmpuint (back->n_ranges, ==, v->n_ranges);
    g_assert_cmpuint (back->ranges->len, ==, v->ranges->len);
    if (c->state == VMR_VERIFY_RUNNING)
        g_assert_nonnull (strstr (back->error, "stopped before the verification finished"));
    else
        g_assert_cmpstr (back->error, ==, c->error);
}

/* what is not a verification object reads as none */
static void
test_not_a_record (void)
{
    g_autoptr (JsonObject) obj = json_object_new ();

    g_assert_null (vmr_verification_from_json (NULL));
    g_assert_null (vmr_verification_from_json (obj));
    json_object_set_string_member (obj, "state", "maybe");
    g_assert_null (vmr_verification_from_json (obj));
    json_object_set_int_member (obj, "state", 3);
    g_assert_null (vmr_verification_from_json (obj));
}

int
main (int argc, char **argv)
{
    g_test_init (&argc, &argv, NULL);
    g_test_add_func ("/verification/ranges-kept", test_ranges_kept);
    for (guint i = 0; i < G_N_ELEMENTS (round_trips); i++) {
        g_autofree gchar *path
            = g_strdup_printf ("/verification/round-trip/%s", round_trips[i].name);

        g_test_add_data_func (path, &round_trips[i], test_round_trip);
    }
    g_test_add_func ("/verification/not-a-record", test_not_a_record);
    return g_test_run ();
}
