/* Internal helpers to fill an hl_err. */
#ifndef HL_ERR_INT_H
#define HL_ERR_INT_H
#include "hbdlab/status.h"

/* Writes the formatted message into err (if non-NULL) and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
hl_status hl_fail(hl_err *err, hl_status status, const char *fmt, ...);

/* Prefixes err->msg with "prefix: " (used to add a file or object name). */
void hl_err_prefix(hl_err *err, const char *prefix);

#endif
