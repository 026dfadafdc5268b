/* hbdlab status codes and per-call error messages.
 * Every core function that can fail returns an hl_status and, when given a
 * non-NULL hl_err, writes a sentence naming the field, the value and what is
 * allowed. The core never aborts or exits. */
#ifndef HBDLAB_STATUS_H
#define HBDLAB_STATUS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_status {
    HL_OK = 0,
    HL_EINVAL = 1,       /* a field is out of range or inconsistent */
    HL_ENOMEM = 2,       /* allocation failed */
    HL_EIO = 3,          /* a file could not be read or written */
    HL_EPARSE = 4,       /* malformed JSON or config */
    HL_ENOTFOUND = 5,    /* unknown preset or name */
    HL_EUNSUPPORTED = 6, /* valid but not supported (e.g. FP4 on a GPU without it) */
    HL_ENOFIT = 7,       /* the configuration does not fit in memory */
    HL_EINTR = 8         /* stopped by an interrupt request */
} hl_status;

/* Caller-owned error buffer; msg is always NUL-terminated. */
typedef struct hl_err {
    char msg[512];
} hl_err;

/* Short static description of a status code ("invalid argument"). */
const char *hl_strerror(hl_status status);

/* Long computations (exact decode steps, the plan search) poll *flag and stop with
 * HL_EINTR once it is non-zero (a signal handler sets it). The flag is the caller's;
 * NULL (the default) means never interrupted. Process-wide. */
void hl_set_interrupt_flag(volatile int32_t *flag);

/* Library version as "MAJOR.MINOR.PATCH"; static storage. */
const char *hl_version(void);

/* Rewrites, in place, each "-nan" of the NUL-terminated text s that stands as a word (not inside
 * a name such as "x-nan2") as "nan": glibc's printf writes a NaN whose sign bit is set (0/0 on
 * x86) as "-nan", which says nothing more to a user. hl_fail applies it to every message. */
void hl_text_unsign_nan(char *s);

/* Monotonic clock in seconds (the one clock of the core, the benchmarks and the bindings). */
double hl_clock_s(void);

#ifdef __cplusplus
}
#endif
#endif
