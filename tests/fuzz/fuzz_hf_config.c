/* libFuzzer target: Hugging Face config.json import (any bytes). */
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
    hl_model m;
    if (hl_model_from_hf_json(text, "config.json", &m, &err) == HL_OK) {
        hl_params p;
        (void)hl_model_params(&m, &p, &err);
        (void)hl_kv_bytes_sequence(&m, HL_FP8, 4096);
    }
    free(text);
    return 0;
}
