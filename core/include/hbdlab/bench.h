/* Timing helpers for benchmarks (bench/, `hbdlab bench`). They measure; no
 * test asserts on their results. */
#ifndef HBDLAB_BENCH_H
#define HBDLAB_BENCH_H
#include <stddef.h>
#include <stdint.h>
#include "hbdlab/status.h"
#include "hbdlab/sim.h"
#include "hbdlab/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_latency_stats {
    double median_s;
    double p99_s;
    double min_s;
    double mean_s;
    int64_t runs;
} hl_latency_stats;

/* Sorts n timings (s, no NaN) in place, ascending: the order every benchmark's median and
 * percentiles are read from. */
void hl_bench_sort(double *t, size_t n);

/* Runs the job `runs` times in batches of `batch`, timing each batch with a
 * monotonic clock; statistics are over the per-run time of each batch. */
hl_status hl_bench_latency(const hl_job *job, int64_t runs, int64_t batch, hl_latency_stats *out, hl_err *err);

/* Evaluates the sweep in chunks of `chunk` points (memory stays bounded) and
 * returns its wall time and points per second. */
hl_status hl_bench_sweep(const hl_sweep_in *in, int64_t chunk, double *wall_s, double *points_per_s, hl_err *err);

/* The reference sweep of the benchmarks: HBD {8, 16, 32, 64, 128} x precision
 * {fp16, fp8, fp4} x n_inputs input lengths 1024, 1025, ... on `job`, through
 * hl_bench_sweep (threads 0 = all cores). *points = 15 * n_inputs. */
hl_status hl_bench_reference_sweep(const hl_job *job, int64_t n_inputs, int32_t threads, double *wall_s,
                                   double *points_per_s, int64_t *points, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
