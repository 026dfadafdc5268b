/* Shared helper of the model-import tests: the model of a Hugging Face config.json under
 * tests/data/hf (HBDLAB_SOURCE_DIR, set by ctest), or the test fails naming the error. */
#ifndef HL_TEST_HF_MODEL_H
#define HL_TEST_HF_MODEL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hbdlab/hbdlab.h"

static inline hl_model hf_model(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/hf/%s", getenv("HBDLAB_SOURCE_DIR"), file);
    char *text;
    hl_err e;
    hl_model m;
    memset(&m, 0, sizeof m);
    if (hl_read_file(path, &text, &e) != HL_OK)
        fail_msg("%s", e.msg);
    hl_status s = hl_model_from_hf_json(text, file, &m, &e);
    hl_free(text);
    if (s)
        fail_msg("%s", e.msg);
    return m;
}

#endif
