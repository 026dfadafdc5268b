/* The mapping of a job onto its GPUs (core/src/mapping.c): the resolved
 * parallel sizes, placement and bytes per element every per-layer builder,
 * the memory model and the step timer read. */
#ifndef HL_MAPPING_INT_H
#define HL_MAPPING_INT_H
#include "hbdlab/expert_load.h"
#include "hbdlab/kernels.h"
#include "hbdlab/sim.h"

enum {
    HL_TRUST_MODEL = 1,          /* the job's model was validated by the caller and not changed since */
    HL_TRUST_CLUSTER = 2,        /* likewise for the cluster (and its GPU) */
    HL_TRUST_CLUSTER_FIELDS = 4, /* cluster fields were range-checked by their setters: check only the
                                   cross-field rules (a sweep axis on hbd, gpus, ...) */
    HL_TRUST_JOB_FIELDS = 8,     /* the job's own fields were range-checked (the sweep's base once, axes by
                                   their setters) */
    HL_TRUST_SAME_BUT_INPUT = 16 /* the job equals the one this thread passed to its previous
                                   hl_sim_run_trusted call but for `input` (a sweep's next point along an
                                   input axis): its class is taken without comparing the 3 KB */
};

/* Everything the per-layer builders and the memory model need, resolved once
 * from a job (hl_sim_resolve). */
typedef struct hl_sim_ctx {
    const hl_job *j;
    const hl_model *m;
    const hl_cluster *c;
    double wb, ab, kvb, wireb; /* bytes per element: weights, activations, KV, MoE dispatch payload */
    int64_t G, tp, pp, ep, dp, etp;
    double slots;                     /* expert slots: experts + redundant_experts (replicas of hot experts) */
    double decode_q;                  /* new tokens per sequence in a decode step: 1, or 1 + spec_tokens */
    double stage_layers;              /* layers per pipeline stage */
    double dense_frac;                /* fraction of layers with a dense FFN */
    double full_share, sliding_share; /* shares of the model's layers with full and local attention (hl_layer_split) */
    double b_local;                   /* sequences per attention data-parallel group */
    int64_t rph_tp;                   /* members of a TP group inside one HBD (placement) */
    int64_t rph_domain;               /* members of a stage's expert domain inside one HBD */
    int64_t pp_stride;                /* rank distance between pipeline neighbours */
    /* experts and replicas on the EP ranks for the routing shares (MoE only, else
     * NULL): the resolving thread's cache (hl_sim_layout), valid until that thread
     * resolves another routing; an owner that outlives it (the stepper) copies it */
    const hl_expert_layout *layout;
    double launch_extra;    /* s each kernel costs beyond kernel_latency: host launch without CUDA graphs, else 0 */
    hl_fw_profile fw;       /* the job's framework profile (its per-layer kernel inventory) */
    const hl_kernels *kern; /* the job's measured kernel tables (kernels = "dir"), NULL = none */
    /* summary runs on one thread whose jobs are equal but for `input` share this number (sim.c
     * job_class_of), and the memos of a run's input-independent parts key on it; 0 = none */
    uint64_t job_class;
} hl_sim_ctx;

/* The expert layout of a job's routing (uniform, routing_skew or expert_freq;
 * static, or EPLB when eplb or redundant_experts) on ep ranks, from a one-entry
 * per-thread cache; checks the routing fields, naming them. */
hl_status hl_sim_layout(const hl_job *j, int64_t ep, const hl_expert_layout **out, hl_err *err);

/* Validates the job (skipping what `trust` names) and resolves its mapping into
 * *s; s->j, s->m, s->c point into *job, which must outlive *s. */
hl_status hl_sim_resolve(const hl_job *job, hl_sim_ctx *s, int trust, hl_err *err);

/* hl_sim_resolve calls so far on the calling thread: a context's layout is the thread's cache
 * while none has run since it was resolved. */
uint64_t hl_sim_thread_resolves(void);

/* hl_sim_resolve of a job equal to prev's job but for `input`, prev resolved from that job on
 * this thread with nothing resolved since (hl_sim_thread_resolves: its layout is still the
 * thread's cache) and no kernel tables: only the checks that read input run again, then *s is
 * *prev pointing into *job. */
hl_status hl_sim_resolve_input(const hl_job *job, const hl_sim_ctx *prev, hl_sim_ctx *s, int trust, hl_err *err);

/* The resolved draft model of job (spec_draft_model): *draft = hl_job_draft(job), *s resolved
 * over it (it must outlive *s). Errors are prefixed "field 'spec_draft_model'". */
hl_status hl_sim_resolve_draft(const hl_job *job, hl_job *draft, hl_sim_ctx *s, hl_err *err);

#endif
