/* Internal model helpers. */
#ifndef HL_MODEL_INT_H
#define HL_MODEL_INT_H
#include "hbdlab/model.h"

/* hl_model_params for a model already validated by the caller. */
hl_status hl_model_params_unchecked(const hl_model *m, hl_params *out, hl_err *err);

/* Layer i (0-based) of a model with linear_fraction > 0 is a gated DeltaNet
 * layer; the full-attention layers are spread evenly, each closing a group
 * (Qwen3-Next, interval 4: layers 3, 7, 11, ... are full). */
int hl_model_layer_is_linear(const hl_model *m, int64_t i);

/* Parameters of one gated DeltaNet layer's mixer (0 without linear layers). */
double hl_model_linear_params_layer(const hl_model *m);

/* Parameters of one layer's lightning indexer (sparse attention; 0 without). */
double hl_model_indexer_params(const hl_model *m);

#endif
