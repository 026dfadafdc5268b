/* Serving: requests arriving over time on one model instance, scheduled
 * iteration by iteration (continuous batching, chunked prefill, paged KV
 * admission, preemption by recompute); each iteration timed by the per-step
 * model of sim.h. Metrics per request and aggregate, goodput under an SLO.
 * Formulas and assumptions: docs/MODEL.md, "Serving". */
#ifndef HBDLAB_SERVE_H
#define HBDLAB_SERVE_H
#include <stddef.h>
#include <stdint.h>
#include "hbdlab/fields.h"
#include "hbdlab/plan.h"
#include "hbdlab/result.h"
#include "hbdlab/sim.h"
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_arrival {
    HL_ARRIVAL_POISSON = 0,     /* exponential gaps at `rate` requests/s */
    HL_ARRIVAL_CONSTANT = 1,    /* one request every 1/rate s */
    HL_ARRIVAL_CONCURRENCY = 2, /* closed loop: `concurrency` requests in flight, a new one when one ends */
    HL_ARRIVAL_TRACE = 3,       /* arrival times (and lengths) from a trace */
    HL_ARRIVAL_AUTO = 4         /* the default: trace if one is given, else concurrency if given, else poisson */
} hl_arrival;

/* What hl.serve computes: the scheduler iteration by iteration, or the steady state. */
typedef enum hl_serve_mode { HL_SERVE_SIMULATE = 0, HL_SERVE_ANALYTICAL = 1 } hl_serve_mode;

typedef enum hl_len_kind {
    HL_LEN_FIXED = 0,   /* always `mean` */
    HL_LEN_UNIFORM = 1, /* whole numbers uniform in [lo, hi] */
    HL_LEN_NORMAL = 2,  /* round(N(mean, std)) clamped to [lo, hi] (unset: 1 .. 1e8) */
    HL_LEN_TRACE = 3,   /* the trace's value */
    HL_LEN_AUTO = 4     /* the default: the trace's value with a trace, else `mean` */
} hl_len_kind;

/* Where a disaggregated request's KV cache travels from the prefill to the decode pool. */
typedef enum hl_kv_link {
    HL_KV_LINK_AUTO = 0,    /* scale-up when both pools sit in one HBD of the same cluster, else scale-out */
    HL_KV_LINK_SCALEUP = 1, /* over the HBD (scale-up links) */
    HL_KV_LINK_SCALEOUT = 2 /* over the scale-out network */
} hl_kv_link;

/* The host link of a KV offload tier (presets: docs/MODEL.md 12, KV offload). */
typedef enum hl_offload_link {
    HL_OFFLOAD_CUSTOM = 0,    /* bw (and host_bytes) given */
    HL_OFFLOAD_PCIE_GEN4 = 1, /* PCIe 4.0 x16: 31.5 GB/s per direction */
    HL_OFFLOAD_PCIE_GEN5 = 2, /* PCIe 5.0 x16: 63.0 GB/s per direction */
    HL_OFFLOAD_GH200 = 3,     /* NVLink-C2C of GH200: 450 GB/s per direction, 480 GB LPDDR5X per GPU */
    HL_OFFLOAD_GB200 = 4      /* NVLink-C2C of GB200, shared by its two GPUs: 225 GB/s and 240 GB per GPU */
} hl_offload_link;

/* How the two pools of a disaggregated deployment are simulated. */
typedef enum hl_disagg_clock {
    HL_DISAGG_CONCURRENT = 0, /* one event clock, KV transfers as flows, back-pressure, closed loops */
    HL_DISAGG_SEQUENTIAL = 1  /* the prefill pool, then the decode pool (transfers free of contention) */
} hl_disagg_clock;

/* Limits of one run. */
enum hl_serve_limits {
    HL_SERVE_MAX_LOG_STEPS = 1000000 /* iterations kept by keep_steps; a longer run fails */
};

/* A token-length distribution (tokens); 0 = not given for std, lo and hi. */
typedef struct hl_len_dist {
    int32_t kind; /* hl_len_kind */
    double mean;  /* fixed value, or normal mean */
    double std;   /* normal standard deviation */
    double lo;    /* uniform bounds (both required), normal clamp (default 1 .. 1e8); whole numbers >= 1 */
    double hi;
} hl_len_dist;

/* One request of a trace: arrival in s from the start, lengths in tokens. */
typedef struct hl_trace_req {
    double arrival_s;
    double input;
    double output;
} hl_trace_req;

/* What a trace request's prompt shares with others (the optional columns; 0 =
 * not given; whole numbers), kept beside the requests only when a trace names
 * one of them. */
typedef struct hl_trace_content {
    double session;    /* conversation id: its turns' prompts continue one another (prefix caching) */
    double turn;       /* 1-based turn of the conversation (checked: 1, 2, ... in arrival order) */
    double prefix;     /* id of a shared prefix the prompt starts with (a system prompt) */
    double prefix_len; /* tokens of that prefix (given on one row of that id at least) */
} hl_trace_content;

/* A serving run. Every member set by name is a row of the serve field table
 * (core/src/serve_fields.c: name, type, unit, range, default, help); set them
 * with hl_serve_set_number / hl_serve_set_string, or directly and let
 * hl_serve_run check them (hl_serve_check). A member at its default is "not
 * given": the checks refuse a given field that has no effect. */
typedef struct hl_serve_cfg {
    hl_job job;                /* model, cluster, mapping, precisions, overlap; batch/input/output unused */
    int32_t mode;              /* hl_serve_mode */
    int32_t arrival;           /* hl_arrival */
    double rate;               /* requests/s (poisson, constant); 0 = not given */
    int64_t concurrency;       /* requests in flight (closed loop); 0 = not given */
    double think_s;            /* closed loop: mean think time between a reply and the client's next request
                                  (exponential; 0 = none), s */
    double start_jitter_s;     /* closed loop: each client's first request at a uniform time in [0, this) s;
                                  -1 = one request's run time alone (the default, docs/MODEL.md 12) */
    int64_t requests;          /* requests to simulate; 0 = 1000, or the whole trace */
    uint64_t seed;             /* RNG seed of arrivals and lengths */
    hl_len_dist input;         /* prompt tokens */
    hl_len_dist output;        /* generated tokens (the first comes from the prefill) */
    char trace_file[1024];     /* a trace to read (hl_serve_load_trace), "" = none; also its name in errors */
    const hl_trace_req *trace; /* n_trace entries, caller-owned, arrival order not required */
    int64_t n_trace;
    int64_t max_seqs;        /* sequences in one iteration (vLLM max_num_seqs), default 256 */
    int64_t token_budget;    /* tokens in one iteration (vLLM max_num_batched_tokens), default 8192 */
    int32_t chunked_prefill; /* 1: decodes first, prompts chunked into the rest of the budget (default) */
    int64_t chunk;           /* most prompt tokens of one request in one iteration; 0 = token_budget */
    int64_t block_tokens;    /* paged KV block in tokens, default 16 */
    double kv_blocks;        /* blocks in the instance's KV cache; 0 = from HBM left after weights + workspace */
    int32_t reserve;         /* 1: admission reserves the whole sequence's blocks (input + output; TensorRT-LLM's
                              GUARANTEED_NO_EVICT), 0: blocks as tokens arrive, preemption when full (vLLM) */
    double slo_ttft_s;       /* SLO on time to first token; INFINITY = none; must be > 0 */
    double slo_tpot_s;       /* SLO on time per output token after the first; INFINITY = none; must be > 0 */
    int64_t warmup;          /* the first `warmup` requests (arrival order) run but are left out of the statistics */
    int32_t keep_requests;   /* 1: fill result.reqs */
    int32_t keep_steps;      /* 1: fill result.steps_log (every iteration; for tests and traces) */
    int32_t sched_reference; /* testing only (no Lua field): 1 = the reference scheduler's passes over the running
                                set (summary, compaction) every iteration, each step timed through the accumulator
                                alone (hl_stepper_memo off); tests check it equals the default */
    int64_t max_samples;     /* KV-utilisation samples kept (decimated), default 256 */
    int32_t disagg;          /* 1: prompts on `job` (the prefill pool), decoding on `decode_job` */
    hl_job decode_job;       /* the decode pool's model instance (same model; its own cluster and mapping) */
    int32_t kv_link;         /* hl_kv_link of the KV transfer between the pools */
    int64_t replicas;        /* instances of job's mapping behind the router (default 1) */
    int32_t router;          /* hl_router_kind: the instance, and the DP rank inside it, of a new request */
    int32_t disagg_clock;    /* hl_disagg_clock: the pools on one clock (default) or one after the other */
    /* Prefix caching, sessions, KV offload (docs/MODEL.md 12, serving). */
    /* the trace's content columns (n_trace entries beside trace's), or NULL when it gives none */
    const hl_trace_content *trace_content;
    int32_t prefix_cache;    /* 1: automatic prefix caching in every scheduler's KV blocks (vLLM APC) */
    int64_t shared_prefix;   /* tokens every prompt starts with (a system prompt; part of input), 0 = none */
    int64_t session_turns;   /* multi-turn sessions: requests (turns) of one conversation, 0 = none */
    double session_think_s;  /* sessions: s from a turn's last token to the next turn's arrival */
    double offload_bytes;    /* kv_offload.capacity_bytes: host memory per GPU for evicted prefix blocks (B) */
    double offload_bw;       /* kv_offload.bw: host-to-GPU bandwidth per GPU (B/s), 0 = the link's */
    double offload_host;     /* kv_offload.host_bytes: host memory per GPU (B), 0 = the link's (or unknown) */
    int32_t offload_link;    /* kv_offload.link: hl_offload_link preset of bw and host memory */
    int32_t offload_overlap; /* kv_offload.overlap: 1 = a reload runs under the step's compute (layer by layer) */
    /* filled by hl_serve_load_trace: the trace's CSV columns or JSON keys it reads past, named once each
       ("'user', 'sesion' (did you mean 'session'?)"), "" = none; the Lua binding warns with it */
    char trace_unread[256];
    double memory_budget; /* C only (no serve field): B the run's records may take, 0 = no limit; a run over it
                                is refused naming 'requests' and the bytes (hl.serve: $HBDLAB_SERVE_MEMORY_BYTES,
                                8 GB). Checked in the run, where compact records (far smaller) are decided. */
} hl_serve_cfg;

/* Summary of one metric over requests: s. */
typedef struct hl_stats {
    double mean, p50, p90, p99, max;
    int64_t n; /* requests counted */
} hl_stats;

typedef struct hl_serve_req {
    double arrival_s, input, output;
    double first_token_s; /* time the first token was produced */
    double finish_s;      /* time the last token was produced */
    double queue_s;       /* arrival to first scheduled */
    double ttft_s, tpot_s, e2e_s;
    int32_t preemptions;
    int32_t good;         /* met the SLO */
    double kv_transfer_s; /* disaggregated: KV cache from the prefill to the decode pool */
} hl_serve_req;

/* One iteration, when keep_steps is set. */
typedef struct hl_serve_step {
    double t_s;            /* start */
    double dt_s;           /* duration */
    int32_t decodes;       /* sequences that decoded one token */
    int32_t chunks;        /* prompt chunks prefilled */
    double prefill_tokens; /* tokens of those chunks */
    int32_t first_req;     /* the first chunk's request, 1-based in arrival order; 0 if none */
    int32_t preempted;     /* requests preempted while scheduling this step */
    double kv_used;        /* blocks in use after the step */
    int32_t pool;          /* 0: the deployment; disaggregated: 1 prefill, 2 decode */
    int32_t group;         /* the instance (ranks in lock-step) or DP rank that stepped, 0-based */
    double stall_s;        /* time this group waited before the step with requests queued but no KV room
                              (a prefill pool's back-pressure from a full decode pool) */
    double cached_blocks;  /* prefix cache: blocks no request holds that still keep a prefix, after the step */
    double saved_tokens;   /* prefix cache: prompt tokens of requests admitted in this step found cached */
    double reload_s;       /* KV offload: time of this step's loads of host blocks (added or overlapped) */
} hl_serve_step;

/* A point of the KV-utilisation series. */
typedef struct hl_serve_sample {
    double t_s;
    double kv_util; /* used / total blocks */
    double running; /* requests holding KV */
    double waiting; /* arrived, not running */
} hl_serve_sample;

typedef struct hl_serve_result {
    int64_t requests, steps, preemptions, gpus;
    double duration_s;            /* first arrival to last token */
    double rps;                   /* completed requests / duration */
    double input_tps, output_tps; /* tok/s over the instance */
    double input_tps_per_gpu, output_tps_per_gpu;
    hl_stats ttft_s, tpot_s, e2e_s, queue_s;
    hl_stats itl_s;             /* every gap between tokens of a request (percentiles on 0.5% log bins) */
    double slo_attainment;      /* fraction of requests meeting both SLOs */
    double goodput_rps;         /* requests meeting the SLO / duration */
    double goodput_tps_per_gpu; /* output tokens of those requests / duration / GPUs */
    double mean_in_system;      /* time average of requests arrived and not finished */
    double mean_running, mean_waiting;
    double mean_step_tokens; /* tokens per iteration */
    double kv_blocks_total, kv_block_tokens, kv_util_mean, kv_util_max;
    int64_t n_samples;
    hl_serve_sample *samples; /* owned: hl_serve_result_free */
    hl_serve_req *reqs;       /* owned, `requests` entries when keep_requests, else NULL */
    int64_t n_steps_log;
    hl_serve_step *steps_log;    /* owned, when keep_steps (disaggregated: the decode pool's) */
    double saturated_output_tps; /* output tokens / time over the iterations during which requests waited
                                    (the instance at its limit: offline throughput without the ramp-down) */
    double kv_transfer_s;        /* disaggregated: mean KV transfer per request (NaN when not disaggregated) */
    int32_t kv_link;             /* disaggregated: hl_kv_link used (resolved; 0 when not disaggregated) */
    /* Cost and energy at the served rate (hl_cost_compute of cost.h over the run; docs/MODEL.md 12).
     * USD fields are NaN when a GPU has no price (capex_usd = 0). */
    double usd_per_hour;         /* the GPUs' amortised capex per hour (USD/h) */
    double usd_per_mtok_in;      /* prefill share of the run's cost per million prompt tokens (USD) */
    double usd_per_mtok_out;     /* decode share per million generated tokens (USD) */
    double usd_per_mtok;         /* the whole run per million generated tokens (USD) */
    double joules_per_token;     /* energy at the wall per generated token (J) */
    double joules_per_token_in;  /* prefill energy per prompt token (J) */
    double joules_per_token_out; /* decode energy per generated token (J) */
    double power_w;              /* mean power at the wall over the run (W) */
    double peak_power_w;         /* provisioned power: every GPU at load, PUE included (W) */
    double tokens_per_mw;        /* output tokens/s per MW of provisioned power (1/(s MW)) */
    /* Prefix caching (NaN when off; docs/MODEL.md 12). */
    double prefix_hit_rate;      /* prompt tokens found cached / prompt tokens admitted (a preempted request's
                                    prompt counted again at its readmission) */
    double prefill_tokens_saved; /* prompt tokens found cached (not computed) */
    double kv_cached_mean;       /* time average of blocks kept only as cached prefixes / total blocks */
    double kv_cached_max;        /* largest such fraction */
    double host_hit_tokens;      /* KV offload: of prefill_tokens_saved, tokens loaded back from the host tier */
    double reload_s;             /* KV offload: sum over steps of their host loads' time (s) */
    double offloaded_blocks;     /* KV offload: evicted prefix blocks copied to the host tier */
} hl_serve_result;

/* The analytical steady state of a workload (hl_serve_steady): mean lengths,
 * every iteration alike. */
typedef struct hl_serve_steady {
    double rate;   /* requests/s (given, or from the concurrency) */
    double iter_s; /* time of one iteration */
    double ttft_s, tpot_s, e2e_s;
    double running;        /* requests in the running set */
    double decodes;        /* decoding sequences per iteration */
    double prefill_tokens; /* prompt tokens per iteration */
    double budget_util;    /* (decodes + prefill tokens) / token_budget */
    double kv_util;        /* KV tokens held / KV capacity */
    double input_tps, output_tps, output_tps_per_gpu;
    int32_t stable;     /* 0: the load exceeds the token budget, max_seqs or the KV cache */
    int32_t iterations; /* fixed-point iterations used */
    int32_t meets_slo;  /* stable, and TTFT and TPOT within the SLO */
} hl_serve_steady;

/* The serve result tables (core/src/serve_fields.c): the fields of each
 * record a run returns, once, with unit and help; the Lua result, `hbdlab
 * serve --json`, serving sweep rows and hl.help "serve" are built from them. */
typedef enum hl_serve_record {
    HL_SERVE_REC_RESULT = 0,  /* hl_serve_result (stats nested: "ttft_s.p99") */
    HL_SERVE_REC_REQUEST = 1, /* hl_serve_req: per_request rows */
    HL_SERVE_REC_STEP = 2,    /* hl_serve_step: step_log rows */
    HL_SERVE_REC_SAMPLE = 3,  /* hl_serve_sample: kv_series columns */
    HL_SERVE_REC_STEADY = 4,  /* hl_serve_steady: mode = "analytical" */
    HL_SERVE_RECORDS = 5
} hl_serve_record;

/* Rows of one record's table, and row i (NULL out of range). */
int32_t hl_serve_result_field_count(int32_t record);
const hl_result_field *hl_serve_result_field_at(int32_t record, int32_t i);

/* The value of row f in a record of its kind, as a double. */
double hl_serve_record_value(const hl_result_field *f, const void *record);

/* Applies every row's default (core/src/serve_fields.c) and copies the job.
 * No arrival process is a default: give rate, concurrency or a trace. */
void hl_serve_init(hl_serve_cfg *cfg, const hl_job *job);

/* The serve field table: every field of hl.serve, `hbdlab serve` JSON and
 * serving sweep axes, once (name, type, unit, range, default, help; `path`
 * "input.min" when it is also given nested, as input = {min = ...}). */
const hl_field_set *hl_serve_fields(void);

/* The row called `name` (its name or its path), or NULL. */
const hl_field *hl_serve_field(const char *name);

/* Sets a serve field by name or path after its range check. A group name
 * ("input", "output") given a number means a fixed length; given the string
 * "trace", the trace's lengths. Unknown names fail with a suggestion among
 * serve's own fields. */
hl_status hl_serve_set_number(hl_serve_cfg *cfg, const char *name, double value, hl_err *err);
hl_status hl_serve_set_string(hl_serve_cfg *cfg, const char *name, const char *value, hl_err *err);

/* Resets the fields of a group ("input", "output", "slo") to "not given",
 * before a table gives them ({dist = "uniform", min =, max =} is the whole
 * distribution: no default fills in a bound). */
void hl_serve_clear_group(hl_serve_cfg *cfg, const char *group);

/* Whether a row holds a value other than its default (a given field). */
int hl_serve_field_given(const hl_serve_cfg *cfg, const hl_field *f);

/* Checks every field and every pair of fields: ranges, whole numbers, each
 * field that has no effect with the others (naming both) and contradictions.
 * hl_serve_run and hl_serve_steady_run call it first. */
hl_status hl_serve_check(const hl_serve_cfg *cfg, hl_err *err);

/* Refuses an instance's job field that serving does not read (batch, input,
 * output, exact_steps, ignore_memory) when it is not at its default: for
 * instances read from a user's table (hl.serve, a disagg pool); `pool`
 * prefixes the message. hl_serve_run itself ignores those fields. */
hl_status hl_serve_check_instance(const hl_job *job, const char *pool, hl_err *err);

/* Refuses a search option of hl.simulate (objective, max_tpot_s, ...) given to
 * a serving run, which takes an explicit mapping; `pool` prefixes the message. */
hl_status hl_serve_check_plan(const hl_plan_in *plan, const char *pool, hl_err *err);

/* Reads and parses cfg->trace_file into *owned (free with
 * hl_serve_trace_free) and points cfg->trace at it; nothing when no file is named. */
hl_status hl_serve_load_trace(hl_serve_cfg *cfg, hl_trace_req **owned, hl_err *err);

/* Runs the workload. On success *out owns its arrays (hl_serve_result_free);
 * on failure nothing is left allocated. */
hl_status hl_serve_run(const hl_serve_cfg *cfg, hl_serve_result *out, hl_err *err);

/* Bytes hl_serve_run will allocate for its requests (B; the step log and the
 * samples not counted): for a caller's memory budget before it runs. */
double hl_serve_memory_bytes(const hl_serve_cfg *cfg);

void hl_serve_result_free(hl_serve_result *r);

/* Fast steady state for sweeps: the iteration time T solves
 * T = step(decodes = rate * (output - 1) * T, prefill tokens = rate * input * T)
 * with mean lengths (docs/MODEL.md section 12); unstable loads set stable = 0. */
hl_status hl_serve_steady_run(const hl_serve_cfg *cfg, hl_serve_steady *out, hl_err *err);

/* Parses a trace: CSV with a header naming arrival_s (or arrival), input,
 * output in any order, or JSON lines {"arrival_s":..,"input":..,"output":..}.
 * `origin` names the source in errors ("trace.csv line 12: ..."). *out is
 * malloc'd: free it with hl_serve_trace_free. Optional columns (session,
 * turn, prefix, prefix_len) are read by hl_serve_trace_parse_content only. */
hl_status hl_serve_trace_parse(const char *text, size_t len, const char *origin, hl_trace_req **out, int64_t *n,
                               hl_err *err);

/* hl_serve_trace_parse that also reads the optional columns: *content points
 * into the block of *out (freed with it) when the trace names one, else NULL. */
hl_status hl_serve_trace_parse_content(const char *text, size_t len, const char *origin, hl_trace_req **out,
                                       const hl_trace_content **content, int64_t *n, hl_err *err);
void hl_serve_trace_free(hl_trace_req *t);

#ifdef __cplusplus
}
#endif
#endif
