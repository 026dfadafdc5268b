/* The result schema: the one table naming every field of a simulation result. */
#include "hbdlab/result.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "hbdlab/sweep.h"
#include "result_int.h"

#define ROW(NM, TYPE, M, UNIT, NAMES, HELP)                          \
    {                                                                \
        NM, TYPE, (int32_t)offsetof(hl_result, M), UNIT, HELP, NAMES \
    }
#define NUM(NM, M, UNIT, HELP) ROW(NM, HL_VALUE_NUMBER, M, UNIT, NULL, HELP)
#define INT(NM, M, HELP) ROW(NM, HL_VALUE_INTEGER, M, "", NULL, HELP)
#define BOOL(NM, M, HELP) ROW(NM, HL_VALUE_BOOL, M, "", NULL, HELP)
#define NAME(NM, M, NAMES, HELP) ROW(NM, HL_VALUE_NAME, M, "", NAMES, HELP)

/* THE result field table: the only place a result field is named.
 *
 * To add a result field: add the member to hl_result (or to a struct inside it)
 * in core/include/hbdlab/sim.h with its unit in a comment, fill it in
 * hl_sim_run, add one row below, and raise HL_POINT_VALUES (and hl_point.v) in
 * core/include/hbdlab/sweep.h by one: the compiler checks they agree. Sweep
 * rows, CSV columns, hl.simulate tables, `hbdlab eval` JSON and hl.help pick
 * it up. SI units only; friendly units (ttft_ms) are Lua aliases. */
static const hl_result_field fields[] = {
    NUM("ttft_s", ttft_s, "s", "time to first token: prefill of the whole batch"),
    NUM("tpot_s", tpot_s, "s", "mean time per output token over the output - 1 decode steps"),
    NUM("total_s", total_s, "s", "ttft_s + decode time"),
    NUM("decode_tps", decode_tps, "1/s", "decode-phase tokens / decode-phase time, whole job"),
    NUM("tps_per_gpu", tps_per_gpu, "1/s", "generated tokens / total_s / GPUs"),
    NUM("tps_per_gpu_incl_prompt", tps_per_gpu_incl_prompt, "1/s", "(prompt + generated) tokens / total_s / GPUs"),
    NUM("tokens_per_step", tokens_per_step, "", "tokens a decode step adds per sequence (speculative decoding: > 1)"),
    NAME("bound", bound, "compute|hbm|scale-up|scale-out|latency", "what takes the most time over the job"),
    NUM("prefill.time_s", prefill.time_s, "s", "prefill duration on the critical path"),
    NUM("prefill.compute_s", prefill.compute_s, "s", "prefill operators bound by compute"),
    NUM("prefill.memory_s", prefill.memory_s, "s", "prefill operators bound by HBM"),
    NUM("prefill.comm_s", prefill.comm_s, "s", "prefill communication left exposed after overlap"),
    NUM("prefill.comm_share", prefill.comm_share, "", "prefill.comm_s / prefill.time_s"),
    NUM("prefill.overhead_s", prefill.overhead_s, "s", "prefill fixed per-layer overhead"),
    NUM("prefill.scaleup_comm_s", prefill.scaleup_comm_s, "s", "exposed prefill communication on scale-up links"),
    NUM("prefill.scaleout_comm_s", prefill.scaleout_comm_s, "s", "exposed prefill communication across HBDs"),
    NUM("prefill.latency_comm_s", prefill.latency_comm_s, "s", "size-independent part of prefill communication"),
    NUM("prefill.flops", prefill.flops, "FLOP", "prefill FLOP per GPU"),
    NUM("prefill.hbm_bytes", prefill.hbm_bytes, "B", "prefill HBM traffic per GPU"),
    NUM("decode.time_s", decode.time_s, "s", "decode duration (all steps) on the critical path"),
    NUM("decode.compute_s", decode.compute_s, "s", "decode operators bound by compute"),
    NUM("decode.memory_s", decode.memory_s, "s", "decode operators bound by HBM"),
    NUM("decode.comm_s", decode.comm_s, "s", "decode communication left exposed after overlap"),
    NUM("decode.comm_share", decode.comm_share, "", "decode.comm_s / decode.time_s"),
    NUM("decode.overhead_s", decode.overhead_s, "s", "decode fixed per-layer overhead"),
    NUM("decode.scaleup_comm_s", decode.scaleup_comm_s, "s", "exposed decode communication on scale-up links"),
    NUM("decode.scaleout_comm_s", decode.scaleout_comm_s, "s", "exposed decode communication across HBDs"),
    NUM("decode.latency_comm_s", decode.latency_comm_s, "s", "size-independent part of decode communication"),
    NUM("decode.flops", decode.flops, "FLOP", "decode FLOP per GPU"),
    NUM("decode.hbm_bytes", decode.hbm_bytes, "B", "decode HBM traffic per GPU"),
    NUM("memory.weights_bytes", weights_bytes, "B", "weights per GPU"),
    NUM("memory.kv_bytes", kv_bytes, "B", "KV cache per GPU at the largest context"),
    NUM("memory.workspace_bytes", workspace_bytes, "B", "activation workspace per GPU"),
    NUM("memory.per_gpu_bytes", per_gpu_bytes, "B", "weights + KV + workspace per GPU"),
    NUM("memory.draft_bytes", draft_bytes, "B",
        "of weights + KV per GPU, the draft model's (spec_draft_model: its weights / tp and its KV); 0 without one"),
    BOOL("memory.fits", fits, "per_gpu_bytes within mem_util, as the framework sizes its KV cache (MODEL.md 4)"),
    INT("parallel.gpus", gpus, "GPUs used, as resolved"),
    INT("parallel.tp", tp, "tensor parallelism, as resolved"),
    INT("parallel.pp", pp, "pipeline stages, as resolved"),
    INT("parallel.ep", ep, "expert parallelism, as resolved"),
    INT("parallel.dp", dp, "attention data parallelism, as resolved"),
    INT("parallel.etp", etp, "tensor parallelism inside an expert, as resolved"),
    NUM("batch", batch, "", "sequences, as run (after batch = \"max\")"),
    NUM("input", input, "", "prompt tokens per sequence"),
    NUM("output", output, "", "generated tokens per sequence"),
    NAME("precision", precision, "fp32|bf16|fp16|fp8|fp4|int8", "weights and GEMM math, as run"),
    NUM("usd_per_mtok_in", cost.usd_per_mtok_in, "USD", "prefill cost per million prompt tokens"),
    NUM("usd_per_mtok_out", cost.usd_per_mtok_out, "USD", "decode cost per million decode tokens"),
    NUM("usd_per_mtok", cost.usd_per_mtok, "USD", "whole-job cost per million generated tokens"),
    NUM("joules_per_token", cost.joules_per_token, "J", "energy per generated token"),
    NUM("power_w", cost.power_w, "W", "power at the wall over the job"),
    NUM("peak_power_w", cost.peak_power_w, "W", "power at the wall with every GPU busy"),
    NUM("cost.capex_usd_per_gpu", cost.capex_usd_per_gpu, "USD",
        "capex of one GPU with its scale-up and scale-out share"),
    NUM("cost.usd_per_gpu_hour", cost.usd_per_gpu_hour, "USD", "that capex amortised per GPU hour"),
    NUM("cost.prefill_j", cost.prefill_j, "J", "energy of prefill at the wall"),
    NUM("cost.decode_j", cost.decode_j, "J", "energy of decode at the wall"),
    NUM("cost.energy_j", cost.energy_j, "J", "prefill_j + decode_j"),
    NUM("cost.power_w", cost.power_w, "W", "power at the wall over the job"),
    NUM("cost.peak_power_w", cost.peak_power_w, "W", "power at the wall with every GPU busy"),
    NUM("cost.prefill_usd", cost.prefill_usd, "USD", "capex share + electricity of prefill"),
    NUM("cost.decode_usd", cost.decode_usd, "USD", "capex share + electricity of decode"),
    NUM("cost.usd_per_mtok_in", cost.usd_per_mtok_in, "USD", "prefill_usd per million prompt tokens"),
    NUM("cost.usd_per_mtok_out", cost.usd_per_mtok_out, "USD", "decode_usd per million decode tokens"),
    NUM("cost.usd_per_mtok", cost.usd_per_mtok, "USD", "whole job per million generated tokens"),
    NUM("cost.joules_per_token", cost.joules_per_token, "J", "energy per generated token"),
    NUM("cost.joules_per_token_in", cost.joules_per_token_in, "J", "prefill energy per prompt token"),
    NUM("cost.joules_per_token_out", cost.joules_per_token_out, "J", "decode energy per decode token"),
};
enum { COUNT = (int)(sizeof fields / sizeof fields[0]) };

_Static_assert((int)COUNT == (int)HL_POINT_VALUES, "HL_POINT_VALUES in sweep.h must equal the rows of the result "
                                                   "table");
_Static_assert(sizeof(((hl_point *)0)->v) == sizeof(double) * HL_POINT_VALUES, "hl_point.v holds HL_POINT_VALUES");

int32_t hl_result_field_count(void) { return COUNT; }

const hl_result_field *hl_result_field_at(int32_t i) { return i >= 0 && i < COUNT ? &fields[i] : NULL; }

int32_t hl_result_field_index(const char *name)
{
    if (!name)
        return -1;
    for (int32_t i = 0; i < COUNT; i++)
        if (strcmp(fields[i].name, name) == 0)
            return i;
    return -1;
}

static double value_of(const hl_result_field *f, const hl_result *r)
{
    const char *at = (const char *)r + f->offset;
    switch (f->type) {
    case HL_VALUE_INTEGER: return (double)*(const int64_t *)at;
    case HL_VALUE_BOOL:
    case HL_VALUE_NAME: return *(const int32_t *)at;
    default: return *(const double *)at;
    }
}

double hl_result_value(const hl_result *r, int32_t i) { return i >= 0 && i < COUNT ? value_of(&fields[i], r) : 0; }

_Static_assert(sizeof(hl_result) < (size_t)INT32_MAX / 4, "a gather code holds offset * 4 + type in an int32_t");
_Static_assert(HL_VALUE_NUMBER >= 0 && HL_VALUE_NUMBER < 4 && HL_VALUE_INTEGER >= 0 && HL_VALUE_INTEGER < 4 &&
                   HL_VALUE_BOOL >= 0 && HL_VALUE_BOOL < 4 && HL_VALUE_NAME >= 0 && HL_VALUE_NAME < 4,
               "a type fits the gather code's two low bits");

int32_t hl_result_gather_code(int32_t i) { return fields[i].offset * 4 + (int32_t)fields[i].type; }

/* A CSV stream's point: one load and a type test per column instead of the field-table row
 * (its stride, its offset and the switch of value_of); doubles are copied, the rest converted
 * as value_of converts them. */
void hl_result_values_of(const hl_result *r, const int32_t *code, int32_t n, double *v)
{
    const char *base = (const char *)r;
    for (int32_t c = 0; c < n; c++) {
        const char *at = base + (code[c] >> 2);
        switch (code[c] & 3) {
        case HL_VALUE_NUMBER: memcpy(&v[c], at, sizeof(double)); break;
        case HL_VALUE_INTEGER: v[c] = (double)*(const int64_t *)at; break;
        default: v[c] = *(const int32_t *)at; break; /* HL_VALUE_BOOL, HL_VALUE_NAME */
        }
    }
}

/* hl_result_values runs for every sweep point: the rows that are doubles are
 * copied through a list of (row, offset) built once, the few others through
 * value_of(). */
static int32_t double_row[COUNT], double_off[COUNT], other_row[COUNT];
static int32_t n_double, n_other;
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;

static void split_rows(void)
{
    for (int32_t i = 0; i < COUNT; i++) {
        if (fields[i].type == HL_VALUE_NUMBER) {
            double_row[n_double] = i;
            double_off[n_double++] = fields[i].offset;
        } else {
            other_row[n_other++] = i;
        }
    }
}

void hl_result_values(const hl_result *r, double *v)
{
    pthread_once(&rows_once, split_rows);
    const char *base = (const char *)r;
    for (int32_t k = 0; k < n_double; k++)
        memcpy(&v[double_row[k]], base + double_off[k], sizeof(double));
    for (int32_t k = 0; k < n_other; k++)
        v[other_row[k]] = value_of(&fields[other_row[k]], r);
}

const char *hl_result_value_name(int32_t i, double v)
{
    static _Thread_local char buf[32];
    if (i < 0 || i >= COUNT || !fields[i].names || !(v >= 0 && v < 64))
        return "?";
    const char *p = fields[i].names;
    for (int k = 0; k < (int)v; k++) {
        p = strchr(p, '|');
        if (!p)
            return "?";
        p++;
    }
    size_t len = strcspn(p, "|");
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}
