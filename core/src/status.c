#include "err_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef HBDLAB_VERSION
#define HBDLAB_VERSION "0.0.0"
#endif

const char *hl_strerror(hl_status status)
{
    switch (status) {
    case HL_OK: return "ok";
    case HL_EINVAL: return "invalid argument";
    case HL_ENOMEM: return "out of memory";
    case HL_EIO: return "input/output error";
    case HL_EPARSE: return "parse error";
    case HL_ENOTFOUND: return "not found";
    case HL_EUNSUPPORTED: return "unsupported";
    case HL_ENOFIT: return "does not fit in memory";
    case HL_EINTR: return "interrupted";
    }
    return "unknown status";
}

const char *hl_version(void) { return HBDLAB_VERSION; }

hl_status hl_fail(hl_err *err, hl_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

void hl_err_prefix(hl_err *err, const char *prefix)
{
    if (!err || !prefix || !*prefix)
        return;
    char tmp[2 * sizeof err->msg];
    snprintf(tmp, sizeof tmp, "%s: %s", prefix, err->msg);
    memcpy(err->msg, tmp, sizeof err->msg - 1);
    err->msg[sizeof err->msg - 1] = '\0';
}
