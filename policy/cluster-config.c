#define G_LOG_DOMAIN "vmr-policy"

#include "cluster-config.h"

#include <string.h>

#include "policy-private.h"
#include "units.h"
#include "vmr-error.h"

static const gchar *const keys[] = {
    "name",
    "etcd",
    "tls-creds",
    "host",
    "max-parallel",
    "max-parallel-per-source",
    "max-parallel-per-destination",
    "lease-ttl",
    "storage",
    "evacuate-to-nbd",
    NULL,
};

VmrClusterConfig *
vmr_cluster_config_new (void)
{
    VmrClusterConfig *self = g_new0 (VmrClusterConfig, 1);

    self->host = g_strdup (g_get_host_name ());
    self->lease_ttl_us = 10 * G_USEC_PER_SEC;
    return self;
}

void
vmr_cluster_config_free (VmrClusterConfig *self)
{
    if (self == NULL)
        return;
    g_free (self->name);
    g_strfreev (self->endpoints);
    g_free (self->tls_creds);
    g_free (self->host);
    g_strfreev (self->storage);
    g_free (self);
}

VmrClusterConfig *
vmr_cluster_config_copy (const VmrClusterConfig *self)
{
    VmrClusterConfig *copy = g_memdup2 (self, sizeof *self);

    copy->name = g_strdup (self->name);
    copy->endpoints = g_strdupv (self->endpoints);
    copy->tls_creds = g_strdup (self->tls_creds);
    copy->host = g_strdup (self->host);
    copy->storage = g_strdupv (self->storage);
    return copy;
}

const gchar *const *
vmr_cluster_config_keys (void)
{
    return keys;
}

/* letters, digits, '-', '_' and '.': a name that is one part of an etcd key */
static gboolean
parse_name (const gchar *text, gchar **out, GError **error)
{
    if (*text == '\0' || strlen (text) > 63
        || strspn (text, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789-_.")
               != strlen (text)) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is not a name of 1 to 63 letters, digits, '-', '_' or '.'", text);
        return FALSE;
    }
    g_free (*out);
    *out = g_strdup (text);
    return TRUE;
}

/* http:// or https:// URLs with a host and a port, separated by commas */
static gboolean
parse_endpoints (const gchar *text, GStrv *out, GError **error)
{
    g_auto (GStrv) items = g_strsplit (text, ",", -1);
    g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();

    for (guint i = 0; items[i] != NULL; i++) {
        const gchar *item = g_strstrip (items[i]);
        g_autoptr (GUri) uri = g_uri_parse (item, G_URI_FLAGS_NONE, NULL);

        if (uri == NULL
            || (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0
                && g_strcmp0 (g_uri_get_scheme (uri), "https") != 0)
            || g_uri_get_host (uri) == NULL || g_uri_get_port (uri) <= 0
            || (*g_uri_get_path (uri) != '\0' && g_strcmp0 (g_uri_get_path (uri), "/") != 0)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is not an etcd client URL (http://HOST:PORT or https://HOST:PORT)",
                         item);
            return FALSE;
        }
        g_autofree gchar *url = g_uri_to_string_partial (uri, G_URI_HIDE_NONE);

        g_strv_builder_add (builder, url);
    }
    g_strfreev (*out);
    *out = g_strv_builder_end (builder);
    return TRUE;
}

/* the URLs above, each with its path "/" dropped */
static void
trim_endpoints (GStrv endpoints)
{
    for (guint i = 0; endpoints[i] != NULL; i++) {
        if (g_str_has_suffix (endpoints[i], "/"))
            endpoints[i][strlen (endpoints[i]) - 1] = '\0';
    }
}

/* absolute directories, separated by commas */
static gboolean
parse_storage (const gchar *text, GStrv *out, GError **error)
{
    g_auto (GStrv) items = g_strsplit (text, ",", -1);
    g_autoptr (GStrvBuilder) builder = g_strv_builder_new ();

    for (guint i = 0; items[i] != NULL; i++) {
        const gchar *item = g_strstrip (items[i]);
        g_autofree gchar *directory = NULL;

        if (!g_path_is_absolute (item)) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is not an absolute directory", item);
            return FALSE;
        }
        directory = g_canonicalize_filename (item, NULL);
        g_strv_builder_add (builder, directory);
    }
    g_strfreev (*out);
    *out = g_strv_builder_end (builder);
    return TRUE;
}

/* "allow" or "refuse" */
static gboolean
parse_allow (const gchar *text, gboolean *out, GError **error)
{
    if (g_strcmp0 (text, "allow") != 0 && g_strcmp0 (text, "refuse") != 0) {
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "'%s' is neither allow nor refuse", text);
        return FALSE;
    }
    *out = g_str_equal (text, "allow");
    return TRUE;
}

gboolean
vmr_cluster_config_parse_key (VmrClusterConfig *self, const gchar *key, const gchar *text,
                              GError **error)
{
    gint64 usec = 0;

    if (g_strcmp0 (key, "name") == 0)
        return parse_name (text, &self->name, error);
    if (g_strcmp0 (key, "host") == 0)
        return parse_name (text, &self->host, error);
    if (g_strcmp0 (key, "etcd") == 0) {
        if (!parse_endpoints (text, &self->endpoints, error))
            return FALSE;
        trim_endpoints (self->endpoints);
        return TRUE;
    }
    if (g_strcmp0 (key, "tls-creds") == 0)
        return vmr_policy_parse_tls_creds (text, &self->tls_creds, error);
    if (g_strcmp0 (key, "max-parallel") == 0)
        return vmr_policy_parse_copies (text, &self->max_parallel, error);
    if (g_strcmp0 (key, "max-parallel-per-source") == 0)
        return vmr_policy_parse_copies (text, &self->max_per_source, error);
    if (g_strcmp0 (key, "max-parallel-per-destination") == 0)
        return vmr_policy_parse_copies (text, &self->max_per_destination, error);
    if (g_strcmp0 (key, "lease-ttl") == 0) {
        if (!vmr_units_parse_duration (text, &usec, error))
            return FALSE;
        /* etcd's leases are in whole seconds, and it refuses a TTL under its minimum */
        if (usec % G_USEC_PER_SEC != 0 || usec < 2 * G_USEC_PER_SEC
            || usec > G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC) {
            g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                         "'%s' is not a whole number of seconds from 2s to 1h", text);
            return FALSE;
        }
        self->lease_ttl_us = usec;
        return TRUE;
    }
    if (g_strcmp0 (key, "storage") == 0)
        return parse_storage (text, &self->storage, error);
    if (g_strcmp0 (key, "evacuate-to-nbd") == 0)
        return parse_allow (text, &self->evacuate_to_nbd, error);
    g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT, "unknown key");
    return FALSE;
}

gboolean
vmr_cluster_config_check (const VmrClusterConfig *self, const gchar **out_key, GError **error)
{
    *out_key = NULL;
    if (self->name == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "name is missing: the cluster's name, the same on every host");
        return FALSE;
    }
    if (self->endpoints == NULL) {
        g_set_error_literal (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                             "etcd is missing: the etcd cluster's client URLs");
        return FALSE;
    }
    for (guint i = 0; self->tls_creds != NULL && self->endpoints[i] != NULL; i++) {
        if (!g_str_has_prefix (self->endpoints[i], "http://"))
            continue;
        *out_key = "tls-creds";
        g_set_error (error, VMR_ERROR, VMR_ERROR_INVALID_ARGUMENT,
                     "set beside the endpoint %s, which is plain HTTP: the cluster's keys would "
                     "cross the network in clear text; give etcd https:// URLs, or tls-creds = "
                     "none",
                     self->endpoints[i]);
        return FALSE;
    }
    return TRUE;
}

gboolean
vmr_cluster_config_equal (const VmrClusterConfig *a, const VmrClusterConfig *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return g_strcmp0 (a->name, b->name) == 0
           && g_strv_equal ((const gchar *const *) a->endpoints,
                            (const gchar *const *) b->endpoints)
           && g_strcmp0 (a->tls_creds, b->tls_creds) == 0 && g_strcmp0 (a->host, b->host) == 0
           && a->max_parallel == b->max_parallel && a->max_per_source == b->max_per_source
           && a->max_per_destination == b->max_per_destination && a->lease_ttl_us == b->lease_ttl_us
           && a->evacuate_to_nbd == b->evacuate_to_nbd
           && (a->storage == NULL) == (b->storage == NULL)
           && (a->storage == NULL
               || g_strv_equal ((const gchar *const *) a->storage,
                                (const gchar *const *) b->storage));
}

gchar *
vmr_cluster_config_storage_key (const VmrClusterConfig *self, const gchar *location)
{
    const gchar *best = NULL;

    for (guint i = 0; self->storage != NULL && self->storage[i] != NULL; i++) {
        const gchar *prefix = self->storage[i];
        gsize length = strlen (prefix);

        if (g_str_has_prefix (location, prefix)
            && (location[length] == '\0' || location[length] == '/' || g_str_equal (prefix, "/"))
            && (best == NULL || length > strlen (best)))
            best = prefix;
    }
    return g_strdup (best != NULL ? best : location);
}
