/* hbdlab-bench-core: the core's speed through its public C API alone.
 * Reference workload: B200, 128 GPUs, HBD 64, Qwen1.5-110B with 16 experts
 * top-2, FP8, batch 16, input 32768, output 1024, TP8 x EP16 (fixed mapping).
 * usage: hbdlab_bench_core [points]   (sweep size, default 1,000,000) */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hbdlab/hbdlab.h"

static int fail(const hl_err *e)
{
    fprintf(stderr, "hbdlab_bench_core: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    long long points = argc > 1 ? atoll(argv[1]) : 1000000;
    hl_err e;
    hl_model m;
    hl_gpu g;
    hl_cluster c;
    if (hl_model_preset("qwen1.5-110b", &m, &e) || hl_gpu_preset("B200", &g, &e) ||
        hl_cluster_init(&c, &g, 128, 64, &e))
        return fail(&e);
    m.experts = 16;
    m.topk = 2;
    hl_job j;
    hl_job_init(&j, &m, &c);
    j.precision = HL_FP8;
    j.batch = 16;
    j.input = 32768;
    j.output = 1024;
    j.tp = 8;
    j.ep = 16;
    hl_latency_stats ls;
    if (hl_bench_latency(&j, 200000, 100, &ls, &e))
        return fail(&e);
    printf("hl_sim_run latency: median %.3f us, p99 %.3f us (%lld runs)\n", ls.median_s * 1e6, ls.p99_s * 1e6,
           (long long)ls.runs);
    /* sweep: input lengths x HBD sizes x precisions */
    int64_t n_in = points / 15 > 0 ? points / 15 : 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int pass = 0; pass < 2; pass++) {
        double wall, pps;
        int64_t swept;
        if (hl_bench_reference_sweep(&j, n_in, pass == 0 ? 1 : 0, &wall, &pps, &swept, &e))
            return fail(&e);
        printf("sweep of %lld points on %ld thread(s): %.3f s, %.0f points/s\n", (long long)swept,
               pass == 0 ? 1L : cpus, wall, pps);
    }
    return 0;
}
