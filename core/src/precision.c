#include "hbdlab/precision.h"

#include "err_int.h"

static const char *const names[HL_PRECISION_COUNT] = {"fp32", "bf16", "fp16", "fp8", "fp4", "int8"};
static const double bytes[HL_PRECISION_COUNT] = {4, 2, 2, 1, 0.5, 1};

double hl_precision_bytes(hl_precision p) { return (unsigned)p < HL_PRECISION_COUNT ? bytes[p] : 0; }

const char *hl_precision_name(hl_precision p) { return (unsigned)p < HL_PRECISION_COUNT ? names[p] : "?"; }

hl_status hl_precision_parse(const char *name, hl_precision *out, hl_err *err)
{
    if (!out)
        return hl_fail(err, HL_EINVAL, "hl_precision_parse: the output is NULL");
    int i;
    hl_status s = hl_name_lookup(names, HL_PRECISION_COUNT, "precision", name, &i, err);
    if (!s)
        *out = (hl_precision)i;
    return s;
}
