#define G_LOG_DOMAIN "vmr-test"

#ifndef _GNU_SOURCE
/* O_DIRECT under -std=c17 */
#define _GNU_SOURCE
#endif

#include "guest-disk.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

gboolean
vmr_guest_disk_takes_o_direct (const gchar *path)
{
    gpointer buf = NULL;
    gboolean ok;
    int fd = open (path, O_RDONLY | O_DIRECT | O_CLOEXEC);

    if (fd < 0)
        return FALSE;
    if (posix_memalign (&buf, 4096, 4096) != 0) {
        close (fd);
        return FALSE;
    }
    ok = pread (fd, buf, 4096, 0) >= 0;
    free (buf);
    close (fd);
    return ok;
}
