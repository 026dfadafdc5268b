/* Internal model helpers. */
#ifndef HL_MODEL_INT_H
#define HL_MODEL_INT_H
#include "hbdlab/model.h"

/* hl_model_params for a model already validated by the caller. */
hl_status hl_model_params_unchecked(const hl_model *m, hl_params *out, hl_err *err);

#endif
