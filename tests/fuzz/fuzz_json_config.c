/* libFuzzer target: JSON loading of GPUs, clusters and models (any bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "hbdlab/hbdlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    hl_err err;
    hl_gpu g;
    hl_cluster c;
    hl_model m;
    if (hl_gpu_from_json(text, "fuzz.json", &g, &err) == HL_OK) {
        double f;
        (void)hl_gpu_peak(&g, HL_BF16, &f, &err);
    }
    if (hl_cluster_from_json(text, "fuzz.json", &c, &err) == HL_OK)
        (void)hl_cluster_hbds(&c);
    if (hl_model_from_json(text, "fuzz.json", &m, &err) == HL_OK) {
        hl_params p;
        (void)hl_model_params(&m, &p, &err);
        (void)hl_kv_bytes_per_token(&m, HL_BF16);
    }
    free(text);
    return 0;
}
