/* One inference job on a cluster: prefill and decode of a batch, with the
 * model mapped by tensor, pipeline, expert and data parallelism onto HBDs.
 * Formulas: docs/MODEL.md section 6. */
#ifndef HBDLAB_SIM_H
#define HBDLAB_SIM_H
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"
#include "hbdlab/cost.h"
#include "hbdlab/job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Time of one phase (prefill, or the whole decode) on the critical path. */
typedef struct hl_phase {
    double time_s;          /* phase duration */
    double compute_s;       /* operators whose roofline is compute-bound */
    double memory_s;        /* operators whose roofline is HBM-bound */
    double comm_s;          /* exposed communication (after overlap) */
    double overhead_s;      /* fixed per-layer overhead */
    double comm_share;      /* comm_s / time_s */
    double scaleup_comm_s;  /* exposed communication bound by scale-up links */
    double scaleout_comm_s; /* exposed communication that crosses HBDs */
    double latency_comm_s;  /* latency (size-independent) part of communication */
    double flops;           /* FLOP per GPU */
    double hbm_bytes;       /* B moved to/from HBM per GPU */
} hl_phase;

enum { HL_SIM_MAX_ITEMS = 32, HL_SIM_MAX_EVENTS = 40 };

/* One row of a breakdown: an operator, or a collective of one shape (op, bytes
 * per call, ranks), summed over the phase. Collectives of the same name but
 * different shapes (speculative verify and draft passes, expert-TP groups)
 * are separate rows. The collective rows of a phase are the list of every
 * collective the simulator counted in it (docs/MODEL.md 6.3). */
typedef struct hl_item {
    char name[32];
    int32_t is_comm;    /* 1 for a collective */
    int32_t tier;       /* collectives: 0 inside one HBD, 1 crosses HBDs */
    double time_s;      /* summed over the phase = calls * one call (collectives before overlap;
                         prefill rows inside the layers before the pipeline fill: see path_factor) */
    double bytes;       /* B per GPU (HBM for operators, sent for collectives) */
    double flops;       /* FLOP per GPU */
    double calls;       /* executions per GPU in the phase (fractional when layers split unevenly) */
    double path_factor; /* time_s * path_factor is the row's time on the phase's critical path
                         before overlap: (mb + pp - 1) / mb for prefill rows inside the layers
                         (pipeline fill), 1 otherwise */
    int32_t per_pass;   /* 1: once per forward pass (embedding, LM head, logits, token broadcast,
                         PP send/recv, step overhead); 0: inside the layers */
    /* collectives only (0 for operators): one call as simulated */
    int32_t op;                 /* hl_coll_op */
    int64_t ranks;              /* n */
    int64_t ranks_per_hbd;      /* g as placed (after routing as a smaller HBD, if faster) */
    int64_t hbds;               /* HBDs the group spans */
    double call_bytes;          /* S, B per GPU as nccl-tests counts it (hl_coll_in.bytes) */
    double call_time_s;         /* time of one call */
    double call_latency_s;      /* the size-independent part of call_time_s */
    double call_scaleup_bytes;  /* B one GPU sends over scale-up links per call */
    double call_scaleout_bytes; /* B one GPU sends over the scale-out network per call */
    double measured_calls;      /* of calls, those timed from the job's kernel tables (kernels = "dir") */
} hl_item;

/* One kernel or collective of one layer pass (prefill) or one decode step, in
 * issue order, for traces. */
typedef struct hl_event {
    char name[32];
    int32_t is_comm;
    int32_t tier;       /* collectives: 0 scale-up, 1 scale-out */
    int32_t layer_kind; /* 0 every layer, 1 dense-FFN layers, 2 MoE layers, 3 once per pass */
    double dur_s;       /* one execution */
    double bytes;       /* HBM bytes (operators) or bytes sent per GPU (collectives) */
    double flops;
} hl_event;

typedef struct hl_result {
    double ttft_s;
    double tpot_s;                  /* mean over the output-1 decode steps */
    double total_s;                 /* ttft + decode time */
    double decode_tps;              /* decode-phase tokens / decode-phase time (whole job) */
    double tps_per_gpu;             /* generated tokens / total_s / gpus */
    double tps_per_gpu_incl_prompt; /* (prompt + generated) tokens / total_s / gpus */
    double tokens_per_step;         /* tokens each decode step adds per sequence (1; more with speculative decoding) */
    hl_phase prefill;
    hl_phase decode;
    int32_t bound;                     /* 0 compute, 1 HBM, 2 scale-up, 3 scale-out, 4 latency */
    double weights_bytes;              /* per GPU */
    double kv_bytes;                   /* per GPU at the largest context */
    double workspace_bytes;            /* per GPU */
    double per_gpu_bytes;              /* weights + KV + workspace */
    double draft_bytes;                /* of weights + KV, the draft model's (spec_draft_model), B per GPU */
    int32_t fits;                      /* per_gpu_bytes <= hbm * mem_util */
    int64_t gpus, tp, pp, ep, dp, etp; /* mapping as resolved */
    double batch, input, output;       /* the job as run (batch after batch = "max" or a search) */
    int32_t precision;                 /* hl_precision of weights and GEMM math, as run */
    hl_cost cost;                      /* cost and energy per token (docs/MODEL.md section 11) */
    int32_t n_prefill_items, n_decode_items;
    hl_item prefill_items[32]; /* HL_SIM_MAX_ITEMS: operators and collectives of the phase */
    hl_item decode_items[32];
    int32_t n_prefill_events, n_decode_events;
    hl_event prefill_events[40]; /* HL_SIM_MAX_EVENTS: one layer of each kind + the per-pass ops */
    hl_event decode_events[40];  /* one decode step at the mean context */
} hl_result;

/* Runs the job. A job whose weights + KV + workspace exceed mem_util of HBM
 * fails with HL_ENOFIT saying by how many GB, unless ignore_memory is set (then
 * it runs with fits = 0); invalid input returns an error. */
hl_status hl_sim_run(const hl_job *job, hl_result *out, hl_err *err);

/* Name of a bound value ("compute", "hbm", "scale-up", "scale-out", "latency"). */
const char *hl_bound_name(int32_t bound);

#ifdef __cplusplus
}
#endif
#endif
