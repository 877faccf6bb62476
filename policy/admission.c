#define G_LOG_DOMAIN "vmr-policy"

#include "admission.h"

struct _VmrAdmission {
    GHashTable *running[VMR_LIMIT_LAST]; /* group -> number of copies */
    GHashTable *waiting[VMR_LIMIT_LAST]; /* groups where an older job is held */
};

VmrAdmission *
vmr_admission_new (void)
{
    VmrAdmission *self = g_new0 (VmrAdmission, 1);

    for (guint l = 0; l < VMR_LIMIT_LAST; l++) {
        self->running[l] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        self->waiting[l] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    }
    return self;
}

void
vmr_admission_free (VmrAdmission *self)
{
    if (self == NULL)
        return;
    for (guint l = 0; l < VMR_LIMIT_LAST; l++) {
        g_hash_table_unref (self->running[l]);
        g_hash_table_unref (self->waiting[l]);
    }
    g_free (self);
}

/* how many groups @copy belongs to for @limit: one, or one per I/O thread */
static guint
n_groups (const VmrAdmissionCopy *copy, VmrLimit limit)
{
    if (limit == VMR_LIMIT_IOTHREAD && copy->iothreads != NULL && copy->iothreads[0] != NULL)
        return g_strv_length ((gchar **) copy->iothreads);
    return 1;
}

static const gchar *
iothread_of (const VmrAdmissionCopy *copy, guint n)
{
    if (copy->iothreads == NULL || copy->iothreads[0] == NULL)
        return VMR_ADMISSION_MAIN_LOOP;
    return copy->iothreads[n];
}

/* the @n-th group of @copy for @limit, as a key */
static gchar *
group_of (const VmrAdmissionCopy *copy, VmrLimit limit, guint n)
{
    switch (limit) {
        case VMR_LIMIT_HOST:
            return g_strdup ("");
        case VMR_LIMIT_IOTHREAD:
            /* an I/O thread id means something only inside its own QEMU */
            return g_strdup_printf ("%s\n%s", copy->domain, iothread_of (copy, n));
        case VMR_LIMIT_DOMAIN:
            return g_strdup (copy->domain);
        case VMR_LIMIT_DESTINATION:
            return g_strdup (copy->destination);
        case VMR_LIMIT_LAST:
        default:
            g_assert_not_reached ();
    }
}

/* "on io0 of web01", for reasons */
static gchar *
describe_group (const VmrAdmissionCopy *copy, VmrLimit limit, guint n)
{
    switch (limit) {
        case VMR_LIMIT_HOST:
            return g_strdup ("on this host");
        case VMR_LIMIT_IOTHREAD:
            return g_strdup_printf ("on %s of %s", iothread_of (copy, n), copy->domain);
        case VMR_LIMIT_DOMAIN:
            return g_strdup_printf ("of %s", copy->domain);
        case VMR_LIMIT_DESTINATION:
            return g_strdup_printf ("to %s", copy->destination);
        case VMR_LIMIT_LAST:
        default:
            g_assert_not_reached ();
    }
}

void
vmr_admission_add_running (VmrAdmission *self, const VmrAdmissionCopy *copy)
{
    for (guint l = 0; l < VMR_LIMIT_LAST; l++) {
        for (guint n = 0; n < n_groups (copy, l); n++) {
            gchar *group = group_of (copy, l, n);
            guint count = GPOINTER_TO_UINT (g_hash_table_lookup (self->running[l], group));

            g_hash_table_replace (self->running[l], group, GUINT_TO_POINTER (count + 1));
        }
    }
}

VmrLimit
vmr_admission_check (VmrAdmission *self, const VmrAdmissionCopy *job, gchar **out_reason)
{
    for (guint l = 0; l < VMR_LIMIT_LAST; l++) {
        const gchar *key = vmr_policy_key_name (VMR_POLICY_KEY_OF_LIMIT (l));

        /* a job whose own rule sets no such limit is in no line for it */
        if (job->limits[l] == 0)
            continue;
        for (guint n = 0; n < n_groups (job, l); n++) {
            g_autofree gchar *group = group_of (job, l, n);
            g_autofree gchar *where = NULL;
            guint count = GPOINTER_TO_UINT (g_hash_table_lookup (self->running[l], group));
            gboolean behind = g_hash_table_contains (self->waiting[l], group);

            if (!behind && count < job->limits[l])
                continue;
            if (out_reason != NULL) {
                where = describe_group (job, l, n);
                if (count >= job->limits[l])
                    *out_reason = g_strdup_printf ("held by %s (%u cop%s %s)", key, count,
                                                   count == 1 ? "y" : "ies", where);
                else
                    *out_reason
                        = g_strdup_printf ("held by %s (behind an older job %s)", key, where);
            }
            /* first in line: later jobs of its groups wait behind it */
            for (guint m = 0; m < n_groups (job, l); m++)
                g_hash_table_add (self->waiting[l], group_of (job, l, m));
            return l;
        }
    }
    return VMR_LIMIT_LAST;
}
