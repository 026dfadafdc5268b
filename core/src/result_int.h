/* The result schema's values for the sweep's points (core/src/result.c). */
#ifndef HL_RESULT_INT_H
#define HL_RESULT_INT_H
#include "hbdlab/result.h"

/* A column's gather code, resolved once per sweep so a point copies its values without the
 * field table: (byte offset of field i in hl_result) * 4 + its hl_value_type (0..3).
 * i must be a field index, 0 <= i < hl_result_field_count(). */
int32_t hl_result_gather_code(int32_t i);

/* v[c] = the value of the field whose gather code is code[c], for c in [0, n) (dense: v[c] is
 * column c, not field code[c]); the same double as hl_result_value() of that field. */
void hl_result_values_of(const hl_result *r, const int32_t *code, int32_t n, double *v);
#endif
