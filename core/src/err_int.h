/* Internal helpers to fill an hl_err. */
#ifndef HL_ERR_INT_H
#define HL_ERR_INT_H
#include "hbdlab/status.h"

/* Writes the formatted message into err (if non-NULL) and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
hl_status
hl_fail(hl_err *err, hl_status status, const char *fmt, ...);

/* Finds name (ASCII case-insensitive) in names[0..n) and stores its index; a miss (or NULL)
 * fails with HL_EINVAL: "<what> '<name>' is not one of a, b, c". */
hl_status hl_name_lookup(const char *const *names, int n, const char *what, const char *name, int *index, hl_err *err);

/* Non-zero once the flag given to hl_set_interrupt_flag is set (long loops poll it). */
int hl_interrupt_pending(void);

/* Prefixes err->msg with "prefix: " (used to add a file or object name). */
void hl_err_prefix(hl_err *err, const char *prefix);

#endif
