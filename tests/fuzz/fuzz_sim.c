/* libFuzzer target: the simulation entry point over random parameter structs.
 * The input bytes overwrite fields of a valid job (numbers of any value:
 * NaN, infinities, negatives, huge); hl_sim_run and hl_coll_time must either
 * succeed with finite times or fail with a message, never crash. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbdlab/hbdlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double take(const uint8_t **p, size_t *n)
{
    double v = 0;
    if (*n >= sizeof v) {
        memcpy(&v, *p, sizeof v);
        *p += sizeof v;
        *n -= sizeof v;
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready = 0;
    static hl_job base;
    hl_err err;
    if (!ready) {
        hl_model m;
        hl_gpu g;
        hl_cluster c;
        if (hl_model_preset("mixtral-8x7b", &m, &err) || hl_gpu_preset("H100-SXM", &g, &err) ||
            hl_cluster_init(&c, &g, 16, 8, &err))
            abort();
        hl_job_init(&base, &m, &c);
        ready = 1;
    }
    hl_job j = base;
    const uint8_t *p = data;
    size_t n = size;
    /* each 9-byte record: a field selector and a value */
    const hl_field_set *sets[4] = {hl_job_fields(), hl_cluster_fields(), hl_model_fields(), hl_gpu_fields()};
    while (n >= 9) {
        uint8_t sel = *p++;
        n--;
        double v = take(&p, &n);
        const hl_field_set *set = sets[sel % 4];
        const hl_field *f = &set->fields[(sel / 4) % (uint8_t)set->count];
        hl_job_set_number(&j, f->name, v, &err); /* rejected values leave the job unchanged */
    }
    hl_result r;
    if (hl_sim_run(&j, &r, &err) == HL_OK) {
        if (!(r.ttft_s >= 0) || !(r.total_s >= 0))
            abort(); /* a successful run must produce meaningful times */
    }
    hl_coll_in in = {(int32_t)(size % HL_COLL_OP_COUNT),
                     (int32_t)(size % HL_COLL_ALGO_COUNT),
                     (double)size * 1e3,
                     (int64_t)(size % 20),
                     0,
                     0};
    hl_coll_out o;
    (void)hl_coll_time(&j.cluster, &in, &o, &err);
    return 0;
}
