/* The result schema: every field of a simulation result, declared once in
 * core/src/result.c with its name, SI unit and help. Sweep rows and their CSV
 * columns, hl.simulate result tables, `hbdlab eval` JSON and the help text are
 * all built from it, so a sweep row and hl.simulate cannot disagree. */
#ifndef HBDLAB_RESULT_H
#define HBDLAB_RESULT_H
#include <stdint.h>
#include "hbdlab/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_value_type {
    HL_VALUE_NUMBER = 0,  /* double */
    HL_VALUE_INTEGER = 1, /* int64_t */
    HL_VALUE_BOOL = 2,    /* int32_t 0/1 */
    HL_VALUE_NAME = 3,    /* int32_t index into `names` ('|'-separated) */
    HL_VALUE_INT32 = 4    /* int32_t count (serve's per-request and per-step records) */
} hl_value_type;

typedef struct hl_result_field {
    const char *name;  /* "ttft_s"; a dot nests it in hl.simulate tables ("prefill.comm_s") */
    int32_t type;      /* hl_value_type */
    int32_t offset;    /* bytes from the start of hl_result */
    const char *unit;  /* SI unit ("s", "B", "FLOP", "USD", "J", "W", "1/s") or "" */
    const char *help;  /* one line */
    const char *names; /* HL_VALUE_NAME: "compute|hbm|..." ; NULL otherwise */
} hl_result_field;

/* Number of result fields (= HL_POINT_VALUES, checked at compile time). */
int32_t hl_result_field_count(void);

/* Field i (0 <= i < count), or NULL. */
const hl_result_field *hl_result_field_at(int32_t i);

/* Index of the field called `name`, or -1. */
int32_t hl_result_field_index(const char *name);

/* Value of field i of r as a double (integers, booleans and name indices too). */
double hl_result_value(const hl_result *r, int32_t i);

/* The name a HL_VALUE_NAME field's value v stands for ("compute"); "?" when out of range.
 * Points to static thread-local storage, valid until the next call. */
const char *hl_result_value_name(int32_t i, double v);

/* Every field of r into v[0 .. count-1], in schema order. */
void hl_result_values(const hl_result *r, double *v);

#ifdef __cplusplus
}
#endif
#endif
