/*
 * The one error domain of virt-mirror.
 *
 * The first codes mirror QMP's error classes, so that an error QEMU reported
 * keeps its class on its way through the daemon to the CLI; the others are
 * virt-mirror's own.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define VMR_ERROR (vmr_error_quark ())

typedef enum {
    VMR_ERROR_GENERIC,           /* QMP "GenericError" */
    VMR_ERROR_COMMAND_NOT_FOUND, /* QMP "CommandNotFound" */
    VMR_ERROR_DEVICE_NOT_ACTIVE, /* QMP "DeviceNotActive" */
    VMR_ERROR_DEVICE_NOT_FOUND,  /* QMP "DeviceNotFound" */
    VMR_ERROR_KVM_MISSING_CAP,   /* QMP "KVMMissingCap" */
    VMR_ERROR_INVALID_ARGUMENT,  /* bad input from a user or a file */
    VMR_ERROR_NOT_FOUND,         /* no such domain, disk or job */
    VMR_ERROR_BUSY,              /* the object is in use, e.g. already migrating */
    VMR_ERROR_PROTOCOL,          /* a peer sent something that is not valid QMP */
    VMR_ERROR_DISCONNECTED,      /* the peer went away */
    VMR_ERROR_TIMEOUT,           /* no reply in time */
    VMR_ERROR_FAILED,            /* an operation failed for another reason */
    VMR_ERROR_PERMISSION_DENIED, /* the client may not do that, e.g. on the read-only socket */
} VmrErrorCode;

GQuark vmr_error_quark (void);

/* the wire name of @code, e.g. "GenericError"; never NULL */
const gchar *vmr_error_class_name (gint code);

/* the code for a wire class name; unknown names map to VMR_ERROR_GENERIC */
VmrErrorCode vmr_error_code_from_class (const gchar *class_name);

G_END_DECLS
