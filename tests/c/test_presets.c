#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hf_model.h"
#include <sys/stat.h>
#include <unistd.h>

#include "hbdlab/hbdlab.h"

static int mkdir_p(const char *p) { return mkdir(p, 0700); }

static void test_all_presets_load(void **state)
{
    (void)state;
    hl_err e;
    static const char *const gpus[] = {"A100-SXM", "H100-SXM", "H200",   "B200",        "GB200",  "B300",
                                       "GB300",    "MI300X",   "MI355X", "Ascend-910C", "TPU-v5p"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        hl_gpu g;
        assert_ok(hl_gpu_preset(gpus[i], &g, &e), &e);
        assert_true(g.source[0] != '\0');
    }
    static const char *const clusters[] = {"hgx-h100", "gb200-nvl72", "gb200-nvl36x2", "cloudmatrix384", "mi300x-8"};
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++) {
        hl_cluster c;
        assert_ok(hl_cluster_preset(clusters[i], &c, &e), &e);
    }
    assert_true(hl_preset_count(HL_PRESET_GPU) >= 11);
    assert_true(hl_preset_count(HL_PRESET_MODEL) >= 11);
}

/* Facts from docs/reference/hardware.md: B200 dense 2,250 / 4,500 / 9,000
 * TFLOP/s, NVLink5 900 GB/s per direction; H100 has no FP4; NVL72 is one HBD. */
static void test_preset_facts(void **state)
{
    (void)state;
    hl_gpu g;
    hl_cluster c;
    hl_err e;
    assert_ok(hl_gpu_preset("b200", &g, &e), &e);
    assert_rel(g.peak_flops[HL_BF16], 2250e12, 1e-12, "b200 bf16");
    assert_rel(g.peak_flops[HL_FP4], 9000e12, 1e-12, "b200 fp4");
    assert_rel(g.scaleup_bw, 900e9, 1e-12, "b200 nvlink per direction");
    assert_ok(hl_gpu_preset("h100_sxm", &g, &e), &e); /* '_' and case are forgiven */
    assert_true(g.peak_flops[HL_FP4] == 0);
    assert_ok(hl_cluster_preset("GB200-NVL72", &c, &e), &e);
    assert_int_equal(c.hbd, 72);
    assert_int_equal(hl_cluster_hbds(&c), 1);
    assert_ok(hl_cluster_preset("mi300x-8", &c, &e), &e);
    assert_int_equal(c.fabric, HL_FABRIC_MESH);
}

static void test_unknown_preset_suggests(void **state)
{
    (void)state;
    hl_gpu g;
    hl_model m;
    hl_err e;
    assert_fails_with(hl_gpu_preset("B20", &g, &e), HL_ENOTFOUND, &e, "did you mean 'b200'?");
    assert_fails_with(hl_model_preset("llama-3.1-7b", &m, &e), HL_ENOTFOUND, &e, "did you mean");
    assert_fails_with(hl_gpu_preset("../etc/passwd", &g, &e), HL_ENOTFOUND, &e, "not a valid name");
    /* "llama-3-70b": llama-2-70b is 1 edit away (2 -> 3), each llama-3.x-70b 2 (insert ".1"); a
     * name of 8+ characters lists the presets one edit further than the closest, closest first:
     * the Llama-3 user was sent to Llama-2 alone before */
    assert_fails_with(hl_model_preset("llama-3-70b", &m, &e), HL_ENOTFOUND, &e,
                      "(did you mean 'llama-2-70b', 'llama-3.1-70b' or 'llama-3.3-70b'?)");
    /* a typed start of a preset's name: "qwen3-235b" is 5 insertions from qwen3-235b-a22b, but its prefix */
    assert_fails_with(hl_model_preset("qwen3-235b", &m, &e), HL_ENOTFOUND, &e, "(did you mean 'qwen3-235b-a22b'?)");
    /* a short name keeps only the closest ("b20": b200 1 edit, b300 2) */
    assert_fails_with(hl_gpu_preset("B20", &g, &e), HL_ENOTFOUND, &e, "(did you mean 'b200'?)");
    /* DeepSeek-R1 is DeepSeek-V3's architecture (its HF config.json: DeepseekV3ForCausalLM, the same shape) */
    assert_ok(hl_model_preset("DeepSeek-R1", &m, &e), &e);
    assert_string_equal(m.name, "deepseek-v3");
    assert_int_equal(m.layers, 61);
    assert_int_equal(m.experts, 256);
}

static void test_json_errors(void **state)
{
    (void)state;
    hl_gpu g;
    hl_cluster c;
    hl_err e;
    assert_fails_with(hl_gpu_from_json("{\"name\": \"x\",\n \"hbm_bw\": }", "f.json", &g, &e), HL_EPARSE, &e,
                      "f.json:2:");
    assert_fails_with(hl_gpu_from_json("{\"name\": \"x\", \"hbm_bw\"", "t.json", &g, &e), HL_EPARSE, &e,
                      "unexpected end of input");
    assert_fails_with(hl_gpu_from_json("{\"base\": \"b200\", \"hbm_bww\": 1}", "u.json", &g, &e), HL_EINVAL, &e,
                      "u.json: gpu: unknown field 'hbm_bww' (did you mean 'hbm_bw'?)");
    assert_fails_with(hl_gpu_from_json("{\"base\": \"b200\", \"hbm_bw\": 1e12, \"hbm_bw\": 2e12}", "d.json", &g, &e),
                      HL_EPARSE, &e, "duplicate key 'hbm_bw'");
    assert_fails_with(hl_gpu_from_json("{\"base\": \"b200\", \"hbm_bw\": \"fast\"}", "s.json", &g, &e), HL_EINVAL, &e,
                      "expected a number, got the string 'fast'");
    assert_fails_with(hl_gpu_from_json("{\"base\": \"b200\", \"hbm_bw\": 1e400}", "h.json", &g, &e), HL_EINVAL, &e,
                      "hbm_bw");
    assert_fails_with(hl_gpu_from_json("[1, 2]", "a.json", &g, &e), HL_EPARSE, &e, "expected a JSON object");
    assert_ok(hl_gpu_from_json("\xEF\xBB\xBF{\"base\": \"b200\", \"name\": \"bom\"}", "bom.json", &g, &e), &e);
    assert_fails_with(hl_cluster_from_json("{\"gpu\": \"b200\", \"gpus\": 128, \"hbd\": 48}", "c.json", &c, &e),
                      HL_EINVAL, &e, "hbd': 48 does not divide gpus = 128");
    assert_fails_with(hl_cluster_from_json("{\"gpu\": \"b200\", \"gpus\": 8, \"hbd\": 16}", "c.json", &c, &e),
                      HL_EINVAL, &e, "larger than the cluster");
    /* A nested GPU object's error names the file once. */
    assert_fails_with(hl_cluster_from_json("{\"gpu\": {\"base\": \"b200\", \"hbm_bw\": -1}, \"gpus\": 8, \"hbd\": 8}",
                                           "n.json", &c, &e),
                      HL_EINVAL, &e, "n.json: gpu field 'hbm_bw'");
    assert_null(strstr(e.msg, "n.json: n.json"));
}

static void test_custom_gpu_from_json_and_disk_override(void **state)
{
    (void)state;
    hl_gpu g;
    hl_err e;
    assert_ok(hl_gpu_from_json("{\"name\": \"myaccel\", \"bf16_flops\": 1e15, \"hbm_bytes\": 96e9, "
                               "\"hbm_bw\": 4e12, \"scaleup_bw\": 400e9, \"scaleout_bw\": 50e9}",
                               "mine.json", &g, &e),
              &e);
    assert_rel(g.eff_gemm, 0.6, 1e-12, "default efficiency applies");
    char dir[] = "/tmp/hbdlab-presets-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/gpus", dir);
    assert_int_equal(mkdir_p(path), 0);
    snprintf(path, sizeof path, "%s/gpus/myaccel.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"base\": \"h100-sxm\", \"name\": \"myaccel\", \"hbm_bytes\": 96e9}", f);
    fclose(f);
    setenv("HBDLAB_PRESETS", dir, 1);
    assert_ok(hl_gpu_preset("myaccel", &g, &e), &e);
    assert_rel(g.hbm_bytes, 96e9, 1e-12, "override file");
    assert_rel(g.peak_flops[HL_FP8], 1979e12, 1e-12, "base preset fields");
    int found = 0;
    for (int32_t i = 0; i < hl_preset_count(HL_PRESET_GPU); i++)
        found |= strcmp(hl_preset_name(HL_PRESET_GPU, i), "myaccel") == 0;
    assert_true(found);
    unsetenv("HBDLAB_PRESETS");
    remove(path);
    snprintf(path, sizeof path, "%s/gpus", dir);
    rmdir(path);
    rmdir(dir);
}

/* $HBDLAB_PRESETS naming no preset folder (a typo, a file, the models/ folder itself instead of its
 * parent) was passed over in silence: every lookup fell back to the embedded presets and the user's
 * override files were never read (attack12). Each is refused, naming the variable and its value. */
static void test_presets_root_that_is_no_folder(void **state)
{
    (void)state;
    hl_gpu g;
    hl_err e;
    char dir[] = "/tmp/hbdlab-presets-root-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char file[300], sub[300];
    snprintf(file, sizeof file, "%s/file.json", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("{}", f);
    fclose(f);
    snprintf(sub, sizeof sub, "%s/missing", dir);
    setenv("HBDLAB_PRESETS", sub, 1);
    assert_fails_with(hl_gpu_preset("h100-sxm", &g, &e), HL_EINVAL, &e,
                      "environment variable HBDLAB_PRESETS is '/tmp/hbdlab-presets-root-");
    assert_non_null(strstr(e.msg, "/missing': No such file or directory"));
    setenv("HBDLAB_PRESETS", file, 1);
    assert_fails_with(hl_gpu_preset("h100-sxm", &g, &e), HL_EINVAL, &e, "file.json': not a folder");
    setenv("HBDLAB_PRESETS", dir, 1); /* a folder, but with none of gpus/, clusters/, models/ */
    hl_model m;
    assert_fails_with(hl_model_preset("llama-3.1-8b", &m, &e), HL_EINVAL, &e,
                      "the folder holds none of gpus/, clusters/, models/");
    /* one of the three is enough (here models/), and the embedded presets then resolve */
    snprintf(sub, sizeof sub, "%s/models", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_ok(hl_gpu_preset("h100-sxm", &g, &e), &e);
    assert_rel(g.peak_flops[HL_FP8], 1979e12, 1e-12, "the embedded H100 (1979 TFLOP/s FP8 dense)");
    setenv("HBDLAB_PRESETS", "", 1); /* empty: unset */
    assert_ok(hl_gpu_preset("h100-sxm", &g, &e), &e);
    unsetenv("HBDLAB_PRESETS");
    rmdir(sub);
    remove(file);
    rmdir(dir);
}

static double total(const hl_model *m)
{
    hl_params p;
    hl_err e;
    if (hl_model_params(m, &p, &e))
        fail_msg("%s", e.msg);
    return p.total;
}

static double preset_total(const char *name)
{
    hl_model m;
    hl_err e;
    if (hl_model_preset(name, &m, &e))
        fail_msg("%s", e.msg);
    return total(&m);
}

/* Each imported config counts exactly as the matching preset. */
static void test_hf_import_matches_presets(void **state)
{
    (void)state;
    hl_model m = hf_model("llama-3.1-8b.json");
    assert_rel(total(&m), preset_total("llama-3.1-8b"), 1e-12, "llama");
    m = hf_model("qwen2.5-72b.json");
    assert_int_equal(m.qkv_bias, 1);
    assert_rel(total(&m), preset_total("qwen2.5-72b"), 1e-12, "qwen2");
    m = hf_model("qwen3-30b-a3b.json");
    assert_rel(total(&m), preset_total("qwen3-30b-a3b"), 1e-12, "qwen3_moe");
    m = hf_model("mixtral-8x7b.json");
    assert_rel(total(&m), preset_total("mixtral-8x7b"), 1e-12, "mixtral");
    m = hf_model("deepseek-v3.json");
    assert_int_equal(m.attn, HL_ATTN_MLA);
    assert_rel(total(&m), preset_total("deepseek-v3"), 1e-12, "deepseek_v3");
    m = hf_model("gpt-oss-120b.json");
    assert_rel(m.sliding_fraction, 0.5, 1e-12, "gpt-oss layer types");
    assert_rel(total(&m), preset_total("gpt-oss-120b"), 1e-12, "gpt_oss");
}

static void test_hf_errors_name_file_and_field(void **state)
{
    (void)state;
    const char *cases[][3] = {
        {"unsupported-bert.json", "model_type': 'bert' is not supported", ""},
        {"missing-layers.json", "missing-layers.json: required field 'num_hidden_layers' is missing", ""},
        {"wrong-type.json", "wrong-type.json: field 'hidden_size': expected a non-negative integer", ""},
        {"malformed.json", "malformed.json:3:", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/data/hf/%s", getenv("HBDLAB_SOURCE_DIR"), cases[i][0]);
        char *text;
        hl_err e;
        hl_model m;
        assert_ok(hl_read_file(path, &text, &e), &e);
        hl_status s = hl_model_from_hf_json(text, cases[i][0], &m, &e);
        hl_free(text);
        assert_int_not_equal(s, HL_OK);
        if (!strstr(e.msg, cases[i][1]))
            fail_msg("%s: '%s' lacks '%s'", cases[i][0], e.msg, cases[i][1]);
    }
    hl_err e;
    char *text;
    assert_fails_with(hl_read_file("/nonexistent/config.json", &text, &e), HL_EIO, &e,
                      "/nonexistent/config.json: cannot open");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_presets_load),
        cmocka_unit_test(test_preset_facts),
        cmocka_unit_test(test_unknown_preset_suggests),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_custom_gpu_from_json_and_disk_override),
        cmocka_unit_test(test_presets_root_that_is_no_folder),
        cmocka_unit_test(test_hf_import_matches_presets),
        cmocka_unit_test(test_hf_errors_name_file_and_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
