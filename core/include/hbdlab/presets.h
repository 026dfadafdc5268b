/* Presets (GPUs, clusters, models) embedded at build time, overridable from
 * disk: a file $HBDLAB_PRESETS/<kind>/<name>.json replaces or adds one. Also
 * loading any of these objects from JSON text. */
#ifndef HBDLAB_PRESETS_H
#define HBDLAB_PRESETS_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_preset_kind { HL_PRESET_GPU = 0, HL_PRESET_CLUSTER = 1, HL_PRESET_MODEL = 2 } hl_preset_kind;

/* Number of presets of a kind (embedded ones plus those on disk). */
int32_t hl_preset_count(hl_preset_kind kind);

/* Name of the i-th preset (sorted); NULL when out of range. Static storage
 * valid until the next call with a different kind. */
const char *hl_preset_name(hl_preset_kind kind, int32_t i);

/* Loads a preset by name (case-insensitive; '_' and '-' equivalent). An
 * unknown name fails with HL_ENOTFOUND and a "did you mean" suggestion. */
hl_status hl_gpu_preset(const char *name, hl_gpu *out, hl_err *err);
hl_status hl_cluster_preset(const char *name, hl_cluster *out, hl_err *err);
hl_status hl_model_preset(const char *name, hl_model *out, hl_err *err);

/* The completion rules of an object built from fields, the one owner of what a
 * Lua table (hl.gpu{...}, hl.cluster{...}, hl.model{...}) and a JSON object or
 * file leave out; both loaders apply them after the fields:
 * - gpu: name "custom" when none;
 * - model: head_dim = hidden / heads (GQA) and kv_heads = heads when 0; name "custom" when none;
 * - cluster: hbd = gpus when not given (the whole cluster one HBD); the name
 *   "<gpu> xN hbdH" when none. `gpus` is required (hl_cluster_require_gpus). */
void hl_gpu_complete(hl_gpu *g);
void hl_model_complete(hl_model *m);
void hl_cluster_complete(hl_cluster *c, int32_t hbd_given, int32_t name_given);

/* The error of a table or file giving both a friendly alias and the field it sets
 * (hbm_gb and hbm_bytes): HL_EINVAL when `also_given`, else HL_OK. */
hl_status hl_field_alias_check(const hl_field_set *set, const hl_field_alias *alias, int32_t also_given, hl_err *err);

/* Parses JSON text into an object; `origin` (a file name) prefixes errors.
 * Unknown keys are errors. A "base" key names a preset to start from. The text goes
 * through the JSON front end (hbdlab/json.h); a boolean field takes true/false only. */
hl_status hl_gpu_from_json(const char *text, const char *origin, hl_gpu *out, hl_err *err);
hl_status hl_cluster_from_json(const char *text, const char *origin, hl_cluster *out, hl_err *err);
hl_status hl_model_from_json(const char *text, const char *origin, hl_model *out, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
