#define G_LOG_DOMAIN "vmr-qmp"

#include "vmr-error.h"

/* the quark's string is the macro's first argument, spaces and all */
/* clang-format off */
G_DEFINE_QUARK (vmr-error-quark, vmr_error)
/* clang-format on */

static const gchar *const class_names[] = {
    [VMR_ERROR_GENERIC] = "GenericError",
    [VMR_ERROR_COMMAND_NOT_FOUND] = "CommandNotFound",
    [VMR_ERROR_DEVICE_NOT_ACTIVE] = "DeviceNotActive",
    [VMR_ERROR_DEVICE_NOT_FOUND] = "DeviceNotFound",
    [VMR_ERROR_KVM_MISSING_CAP] = "KVMMissingCap",
    [VMR_ERROR_INVALID_ARGUMENT] = "InvalidArgument",
    [VMR_ERROR_NOT_FOUND] = "NotFound",
    [VMR_ERROR_BUSY] = "Busy",
    [VMR_ERROR_PROTOCOL] = "ProtocolError",
    [VMR_ERROR_DISCONNECTED] = "Disconnected",
    [VMR_ERROR_TIMEOUT] = "Timeout",
    [VMR_ERROR_FAILED] = "Failed",
    [VMR_ERROR_PERMISSION_DENIED] = "PermissionDenied",
};

const gchar *
vmr_error_class_name (gint code)
{
    if (code < 0 || (gsize) code >= G_N_ELEMENTS (class_names))
        return class_names[VMR_ERROR_GENERIC];
    return class_names[code];
}

VmrErrorCode
vmr_error_code_from_class (const gchar *class_name)
{
    for (gsize i = 0; class_name != NULL && i < G_N_ELEMENTS (class_names); i++) {
        if (g_strcmp0 (class_names[i], class_name) == 0)
            return (VmrErrorCode) i;
    }
    return VMR_ERROR_GENERIC;
}
