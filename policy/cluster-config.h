/*
 * The policy's [cluster] section: the etcd cluster that makes the admission
 * limits cluster-wide, and those limits. Without the section a daemon
 * admits copies by its own host's limits only.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    gchar *name;                 /* the cluster's name, the etcd prefix's last part */
    GStrv endpoints;             /* etcd client URLs, "http://host:port" or "https://..." */
    gchar *tls_creds;            /* directory of ca.pem, cert.pem, key.pem, NULL = none */
    gchar *host;                 /* this daemon's name in the cluster, unique */
    guint64 max_parallel;        /* bulk copies in the whole cluster, 0 = no limit */
    guint64 max_per_source;      /* ... reading from one storage, 0 = no limit */
    guint64 max_per_destination; /* ... writing to one storage, 0 = no limit */
    gint64 lease_ttl_us;         /* a dead daemon's slots are freed after this */
    GStrv storage;               /* directory prefixes that each name one storage, NULL = none */
    gboolean evacuate_to_nbd;    /* a cluster evacuation may name an NBD server as --to */
} VmrClusterConfig;

/* the built-in values; name and etcd have none and must be set */
VmrClusterConfig *vmr_cluster_config_new (void);
void vmr_cluster_config_free (VmrClusterConfig *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VmrClusterConfig, vmr_cluster_config_free)
VmrClusterConfig *vmr_cluster_config_copy (const VmrClusterConfig *self);

/* the names of the keys, NULL-terminated */
const gchar *const *vmr_cluster_config_keys (void);

/*
 * Reads @text as the value of @key; FALSE with @error (one line, without
 * the key) for an unknown key or a bad value.
 */
gboolean vmr_cluster_config_parse_key (VmrClusterConfig *self, const gchar *key, const gchar *text,
                                       GError **error);

/*
 * FALSE with @error when a key that has no built-in value is missing, or
 * when the keys do not go together: tls-creds beside an http:// endpoint,
 * which would carry the cluster's keys in clear text as if TLS protected
 * them. *@out_key is then the key at fault, NULL for the section.
 */
gboolean vmr_cluster_config_check (const VmrClusterConfig *self, const gchar **out_key,
                                   GError **error);

/* TRUE when the two would make the same cluster client */
gboolean vmr_cluster_config_equal (const VmrClusterConfig *a, const VmrClusterConfig *b);

/*
 * The storage @location belongs to, for the per-source and per-destination
 * limits: the storage prefix it lies under (the longest), else @location
 * itself (a directory, a block device or an NBD server). Free with g_free().
 */
gchar *vmr_cluster_config_storage_key (const VmrClusterConfig *self, const gchar *location);

G_END_DECLS
