/* The base layer every module uses: status names, error messages and their
 * prefixes, the interrupt flag, the version and the monotonic clock. */
#include "err_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hbdlab/version.h"

_Static_assert(HL_VERSION_MAJOR == HBDLAB_VERSION_MAJOR && HL_VERSION_MINOR == HBDLAB_VERSION_MINOR &&
                   HL_VERSION_PATCH == HBDLAB_VERSION_PATCH,
               "version.h: the enum (for ffi) and the macros must name the same version");

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

const char *hl_version(void) { return HBDLAB_VERSION_STRING; }

static volatile int32_t *interrupt_flag;

void hl_set_interrupt_flag(volatile int32_t *flag) { interrupt_flag = flag; }

int hl_interrupt_pending(void) { return interrupt_flag && *interrupt_flag; }

static int word_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

void hl_text_unsign_nan(char *s)
{
    for (char *p = s; (p = strstr(p, "-nan")) != NULL;)
        if ((p == s || !word_byte(p[-1])) && !word_byte(p[4]))
            memmove(p, p + 1, strlen(p + 1) + 1); /* "-nan" -> "nan", the NUL moved too */
        else
            p += 4;
}

hl_status hl_fail(hl_err *err, hl_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        hl_text_unsign_nan(err->msg);
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

hl_status hl_name_lookup(const char *const *names, int n, const char *what, const char *name, int *index, hl_err *err)
{
    for (int i = 0; name && i < n; i++)
        if (strcasecmp(name, names[i]) == 0) {
            *index = i;
            return HL_OK;
        }
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
    return hl_fail(err, HL_EINVAL, "%s '%s' is not one of %s", what, name ? name : "(null)", list);
}

double hl_clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
