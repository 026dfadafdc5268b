/* Measured kernel tables (a job's `kernels = "dir"`): a folder of CSV files in the
 * format of the shared kernel reference (gemm.csv, attention_decode.csv, moe.csv,
 * nccl.csv, ...), parsed once per process and folder, and the time of one kernel
 * interpolated in log-log space over a table's grid (docs/MODEL.md section 3,
 * "Measured kernels"). core/src/kernels.c. */
#ifndef HBDLAB_KERNELS_H
#define HBDLAB_KERNELS_H
#include <stdint.h>
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tables of one folder: immutable once loaded, owned by the cache, alive until exit. */
typedef struct hl_kernels hl_kernels;

/* The tables a folder may hold: file, key columns (matched exactly) | axes (interpolated). */
typedef enum hl_ktable {
    HL_KT_GEMM = 0, /* gemm.csv: dtype | m, n, k */
    HL_KT_ATTN_DECODE =
        1, /* attention_decode.csv: heads, kv_heads, head_dim, window, kv_dtype | batch, cached_tokens */
    HL_KT_ATTN_PREFILL = 2, /* attention_prefill.csv: heads, kv_heads, head_dim, window, attn_dtype, kv_dtype |
                               batch, isl */
    HL_KT_MLA_DECODE = 3,   /* mla_decode.csv: mla_dtype, kv_dtype, heads | batch, cached_tokens */
    HL_KT_MLA_PREFILL = 4,  /* mla_prefill.csv: mla_dtype, kv_dtype, heads | batch, isl */
    HL_KT_MOE = 5,          /* moe.csv: dtype, kernel, hidden, inter, topk, experts, moe_tp, moe_ep, distribution |
                               tokens */
    HL_KT_ALLREDUCE = 6,    /* allreduce_custom.csv: dtype, ranks | bytes */
    HL_KT_NCCL = 7,         /* nccl.csv: op, dtype, ranks | bytes */
    HL_KT_COUNT = 8
} hl_ktable;

enum {
    HL_KERNELS_MAX_FOLDERS = 16,   /* folders the cache holds at once (a process-wide bound) */
    HL_KERNELS_MAX_ROWS = 1048576, /* data rows per file */
    HL_KERNELS_MAX_KEYS = 9,       /* key columns of a table */
    HL_KERNELS_MAX_AXES = 3        /* interpolated columns of a table */
};

/* One key cell of a query: text when `text` is not NULL, else the number. Numbers
 * match their text in the file whatever its spelling ("128", "128.0", "1.28e2"). */
typedef struct hl_kcell {
    const char *text;
    double number;
} hl_kcell;

/* The tables of folder `dir` (a path as given): read and checked on the first call,
 * from the cache after. Each file of the list above that the folder holds is read
 * (at most hl_max_input_bytes and HL_KERNELS_MAX_ROWS rows); a folder with none of
 * them, a bad header or a bad row fails naming the file, line, column and what is
 * allowed: latencies and axes finite and > 0, no two rows of one shape. */
hl_status hl_kernels_load(const char *dir, const hl_kernels **out, hl_err *err);

/* The tables' name of precision p (an hl_precision) in their dtype columns: "float32", "bfloat16",
 * "float16", "fp8", "nvfp4", "int8" (AIConfigurator's names); "?" for an unknown value. */
const char *hl_kernels_dtype(int32_t p);

/* The file name of table t ("gemm.csv"), or NULL outside 0..HL_KT_COUNT-1. */
const char *hl_kernels_file(int32_t t);

/* Data rows of table t in k (0 when the folder has no such file). */
int64_t hl_kernels_rows(const hl_kernels *k, int32_t t);

/* The measured time of one kernel, s: key[] holds the table's key columns in the
 * order above, x[] its axes. Covered when the key is a key of the table and x lies
 * in a grid cell of that key whose corners were all measured (the grid: the
 * values each axis takes in the key's rows); then *time_s is the log-log
 * multilinear interpolation of the corners' latencies, exactly a row's latency when
 * x is one of its shapes, and the call returns 1. Otherwise 0 (no extrapolation). */
int hl_kernels_time(const hl_kernels *k, int32_t t, const hl_kcell *key, const double *x, double *time_s);

#ifdef __cplusplus
}
#endif
#endif
