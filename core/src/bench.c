/* Timing helpers (see hbdlab/bench.h). */
#include "hbdlab/bench.h"

#include <stdlib.h>

#include "err_int.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void hl_bench_sort(double *t, size_t n) { qsort(t, n, sizeof *t, cmp_double); }

hl_status hl_bench_latency(const hl_job *job, int64_t runs, int64_t batch, hl_latency_stats *out, hl_err *err)
{
    if (runs < 1 || batch < 1 || batch > runs)
        return hl_fail(err, HL_EINVAL, "bench: runs = %lld and batch = %lld must satisfy 1 <= batch <= runs",
                       (long long)runs, (long long)batch);
    int64_t nb = runs / batch;
    double *t = malloc(sizeof *t * (size_t)nb);
    if (!t)
        return hl_fail(err, HL_ENOMEM, "bench: out of memory");
    hl_result *r = malloc(sizeof *r);
    if (!r) {
        free(t);
        return hl_fail(err, HL_ENOMEM, "bench: out of memory");
    }
    hl_status st = HL_OK;
    double sum = 0;
    for (int64_t b = 0; b < nb && !st; b++) {
        double t0 = hl_clock_s();
        for (int64_t i = 0; i < batch && !st; i++)
            st = hl_sim_run(job, r, err);
        t[b] = (hl_clock_s() - t0) / (double)batch;
        sum += t[b];
    }
    free(r);
    if (!st) {
        hl_bench_sort(t, (size_t)nb);
        out->median_s = t[nb / 2];
        out->p99_s = t[(int64_t)((double)(nb - 1) * 0.99)];
        out->min_s = t[0];
        out->mean_s = sum / (double)nb;
        out->runs = nb * batch;
    }
    free(t);
    return st;
}

hl_status hl_bench_sweep(const hl_sweep_in *in, int64_t chunk, double *wall_s, double *points_per_s, hl_err *err)
{
    int64_t total;
    hl_status st = hl_sweep_count(in, &total, err);
    if (st)
        return st;
    if (chunk < 1)
        chunk = 65536;
    hl_point *buf = malloc(sizeof *buf * (size_t)(chunk < total ? chunk : total));
    if (!buf)
        return hl_fail(err, HL_ENOMEM, "bench: out of memory for %lld points", (long long)chunk);
    hl_sweep_in part = *in;
    double t0 = hl_clock_s();
    for (int64_t first = 0; first < total && !st; first += chunk) {
        part.first = first;
        part.count = total - first < chunk ? total - first : chunk;
        st = hl_sweep_run(&part, buf, err);
    }
    double wall = hl_clock_s() - t0;
    free(buf);
    if (st)
        return st;
    *wall_s = wall;
    *points_per_s = (double)total / wall;
    return HL_OK;
}

hl_status hl_bench_reference_sweep(const hl_job *job, int64_t n_inputs, int32_t threads, double *wall_s,
                                   double *points_per_s, int64_t *points, hl_err *err)
{
    if (!job || !wall_s || !points_per_s || !points)
        return hl_fail(err, HL_EINVAL, "hl_bench_reference_sweep: the %s is NULL", !job ? "job" : "output");
    if (n_inputs < 1 || n_inputs > 100000000)
        return hl_fail(err, HL_EINVAL, "bench: %lld input lengths (allowed: 1..1e8)", (long long)n_inputs);
    double *inputs = malloc(sizeof *inputs * (size_t)n_inputs);
    if (!inputs)
        return hl_fail(err, HL_ENOMEM, "bench: out of memory for %lld input lengths", (long long)n_inputs);
    for (int64_t i = 0; i < n_inputs; i++)
        inputs[i] = 1024 + (double)i;
    static const double hbds[] = {8, 16, 32, 64, 128};
    static const char *const precs[] = {"fp16", "fp8", "fp4"};
    hl_axis axes[3] = {{"hbd", HL_AXIS_NUMBER, 5, hbds, NULL, NULL, NULL, NULL},
                       {"precision", HL_AXIS_STRING, 3, NULL, precs, NULL, NULL, NULL},
                       {"input", HL_AXIS_NUMBER, (int32_t)n_inputs, inputs, NULL, NULL, NULL, NULL}};
    hl_sweep_in in = {*job, axes, 3, 0, threads, NULL, NULL, 0, 0, 0, 0, 0, 0, 0};
    hl_status st = hl_bench_sweep(&in, 65536, wall_s, points_per_s, err);
    free(inputs);
    if (!st)
        *points = 15 * n_inputs;
    return st;
}
