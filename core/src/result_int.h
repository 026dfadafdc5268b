/* The result schema's values for the sweep's points (core/src/result.c). */
#ifndef HL_RESULT_INT_H
#define HL_RESULT_INT_H
#include "hbdlab/result.h"

/* v[cols[c]] = hl_result_value(r, cols[c]) for c in [0, n): one call for a point's columns
 * (every cols[c] a field index, 0 <= cols[c] < hl_result_field_count()). */
void hl_result_values_of(const hl_result *r, const int32_t *cols, int32_t n, double *v);
#endif
