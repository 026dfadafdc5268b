/* Numeric precisions of weights, activations, KV cache, math and wire bytes. */
#ifndef HBDLAB_PRECISION_H
#define HBDLAB_PRECISION_H
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_precision {
    HL_FP32 = 0,
    HL_BF16 = 1,
    HL_FP16 = 2,
    HL_FP8 = 3,
    HL_FP4 = 4,
    HL_INT8 = 5,
    HL_PRECISION_COUNT = 6
} hl_precision;

/* Bytes per element: 4, 2, 2, 1, 0.5, 1. FP4 counts half a byte (block scales
 * excluded; see docs/MODEL.md). Returns 0 for an unknown value. */
double hl_precision_bytes(hl_precision p);

/* Lower-case name ("fp8"); "?" for an unknown value. Static storage. */
const char *hl_precision_name(hl_precision p);

/* Parses "fp32", "bf16", "fp16", "fp8", "fp4", "int8" (case-insensitive). */
hl_status hl_precision_parse(const char *name, hl_precision *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
