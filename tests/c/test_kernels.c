/* Measured kernel tables (kernels.h, kernels = "dir"): the log-log interpolation
 * against hand-worked values, exact hits, no extrapolation, the breakdown flag,
 * the analytic model outside the tables, and hostile files refused with file,
 * line and column. Fixture: tests/data/kernels (hand-made rows, its README). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hbdlab/kernels.h"
#include "jobs.h"

static const char *fixture(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/kernels", getenv("HBDLAB_SOURCE_DIR"));
    return path;
}

static const hl_kernels *load_fixture(void)
{
    const hl_kernels *k;
    hl_err e;
    assert_ok(hl_kernels_load(fixture(), &k, &e), &e);
    return k;
}

#define NUMC(v)   \
    {             \
        NULL, (v) \
    }
#define TEXTC(s) \
    {            \
        (s), 0   \
    }

/* decode attention of 32 query / 8 KV heads of 128, full, BF16 cache */
static int attn(const hl_kernels *k, double heads, double kvh, double batch, double cached, double *t)
{
    hl_kcell key[5] = {NUMC(heads), NUMC(kvh), NUMC(128), NUMC(0), TEXTC("bfloat16")};
    double x[2] = {batch, cached};
    return hl_kernels_time(k, HL_KT_ATTN_DECODE, key, x, t);
}

static void test_interpolation_by_hand(void **state)
{
    (void)state;
    const hl_kernels *k = load_fixture();
    assert_int_equal(hl_kernels_rows(k, HL_KT_GEMM), 2);
    assert_int_equal(hl_kernels_rows(k, HL_KT_ATTN_DECODE), 7);
    assert_int_equal(hl_kernels_rows(k, HL_KT_MOE), 0);
    double t = -1;
    /* The 2x2 table (batch 1, 4) x (cached 256, 1024): 10, 20 / 40, 80 us. At (2, 512) each axis sits
     * half way in log space: w_b = (ln 2 - ln 1) / (ln 4 - ln 1) = 1/2, w_c = (ln 512 - ln 256) /
     * (ln 1024 - ln 256) = 1/2, so every corner weighs 1/4 and t = (10 * 20 * 40 * 80)^(1/4) us
     * = 640000^(1/4) = sqrt(800) = 20 sqrt(2) = 28.2843 us. */
    assert_true(attn(k, 32, 8, 2, 512, &t));
    assert_rel(t, 20 * sqrt(2) * 1e-6, 1e-12, "(2, 512) between the four corners");
    /* On an edge: batch 4 exactly, cached 512: w_c = 1/2 between 20 and 80 us: sqrt(20 * 80) = 40 us. */
    assert_true(attn(k, 32, 8, 4, 512, &t));
    assert_rel(t, 40e-6, 1e-12, "(4, 512) on the batch-4 edge");
    /* A row's shape gives its latency exactly (ms -> s as the loader converts it). */
    assert_true(attn(k, 32, 8, 4, 256, &t));
    assert_true(t == 0.020 * 1e-3);
    /* Outside the grid: no extrapolation. */
    assert_false(attn(k, 32, 8, 8, 512, &t));
    assert_false(attn(k, 32, 8, 2, 2048, &t));
    assert_false(attn(k, 32, 8, 0.5, 512, &t));
    assert_false(attn(k, 32, 8, NAN, 512, &t));
    assert_false(attn(k, 64, 8, 2, 512, &t)); /* no such key */
    /* The 16/4 group (spelled 1.6e1 and 128.0 in the file) lacks its (4, 1024) corner: the cell
     * around (2, 512) is not covered, its measured corners still are. */
    assert_false(attn(k, 16, 4, 2, 512, &t));
    assert_true(attn(k, 16, 4, 1, 256, &t));
    assert_true(t == 0.010 * 1e-3);
    assert_true(attn(k, 16, 4, 1, 512, &t)); /* on the batch-1 edge, both corners measured */
    assert_rel(t, 20e-6, 1e-12, "sqrt(10 * 40) us");
    /* GEMM, one axis between: M = 16 between 4 (20 us) and 64 (40 us): w = ln 4 / ln 16 = 1/2,
     * t = sqrt(20 * 40) = 28.2843 us. */
    hl_kcell g[1] = {TEXTC("bfloat16")};
    double x[3] = {16, 6144, 4096};
    assert_true(hl_kernels_time(k, HL_KT_GEMM, g, x, &t));
    assert_rel(t, 20 * sqrt(2) * 1e-6, 1e-12, "GEMM M = 16");
    x[1] = 4096;
    assert_false(hl_kernels_time(k, HL_KT_GEMM, g, x, &t)); /* N = 4096 was not measured */
    /* the cache: the same tables for the same folder */
    assert_ptr_equal(load_fixture(), k);
}

/* A job whose decode GEMM and attention shapes the fixture holds: Llama-3.1-8B on one H100,
 * batch 4, a 256-token prompt, one decode step (after 256 cached tokens). */
static hl_job fixture_job(double batch)
{
    hl_job j = job_for("llama-3.1-8b", "H100-SXM", 1, 1);
    j.batch = batch;
    j.input = 256;
    j.output = 2;
    return j;
}

static const hl_item *row(const hl_item *items, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(items[i].name, name) == 0)
            return &items[i];
    fail_msg("no breakdown row '%s'", name);
    return NULL;
}

static void test_simulation_rows(void **state)
{
    (void)state;
    hl_err e;
    hl_result *plain = malloc(sizeof *plain), *meas = malloc(sizeof *meas);
    hl_job j = fixture_job(4);
    assert_ok(hl_sim_run(&j, plain, &e), &e);
    strcpy(j.kernels, fixture());
    assert_ok(hl_sim_run(&j, meas, &e), &e);
    int n = meas->n_decode_items;
    /* qkv_proj: M = 4 sequences x 1 token, N = (32 + 2 x 8) x 128 = 6144, K = 4096: the fixture's row
     * of 0.020 ms, once per layer (32 calls), no launch cost beyond it (CUDA graphs) */
    const hl_item *q = row(meas->decode_items, n, "qkv_proj");
    assert_rel(q->calls, 32, 0, "qkv_proj calls");
    assert_true(q->measured_calls == q->calls);
    assert_rel(q->time_s, 32 * 0.020e-3, 1e-12, "qkv_proj = 32 x the measured 20 us");
    /* attention: batch 4 after 256 cached tokens, 32/8 heads of 128: the 0.020 ms row */
    const hl_item *at = row(meas->decode_items, n, "attention");
    assert_true(at->measured_calls == at->calls);
    assert_rel(at->time_s, 32 * 0.020e-3, 1e-12, "attention = 32 x the measured 20 us");
    /* o_proj (N = K = 4096) is not in the table: analytic, unflagged, the same bits as without tables */
    const hl_item *o = row(meas->decode_items, n, "o_proj");
    assert_true(o->measured_calls == 0);
    assert_true(o->time_s == row(plain->decode_items, plain->n_decode_items, "o_proj")->time_s);
    /* prefill: M = 1024 rows is outside the GEMM grid (4..64), no prefill attention table */
    for (int i = 0; i < meas->n_prefill_items; i++)
        assert_true(meas->prefill_items[i].measured_calls == 0);
    assert_true(meas->ttft_s == plain->ttft_s);
    assert_true(meas->tpot_s != plain->tpot_s);
    /* batch 128: no shape of the job is covered, so every number equals the analytic run's */
    j = fixture_job(128);
    assert_ok(hl_sim_run(&j, plain, &e), &e);
    strcpy(j.kernels, fixture());
    assert_ok(hl_sim_run(&j, meas, &e), &e);
    assert_true(meas->ttft_s == plain->ttft_s);
    assert_true(meas->tpot_s == plain->tpot_s);
    assert_int_equal(meas->n_decode_items, plain->n_decode_items);
    for (int i = 0; i < meas->n_decode_items; i++) {
        assert_true(meas->decode_items[i].time_s == plain->decode_items[i].time_s);
        assert_true(meas->decode_items[i].measured_calls == 0);
    }
    /* a bad folder fails the run, naming the field */
    strcpy(j.kernels, "/nonexistent/kernels");
    assert_fails_with(hl_sim_run(&j, meas, &e), HL_EIO, &e, "field 'kernels': folder '/nonexistent/kernels'");
    free(plain);
    free(meas);
}

/* Writes `text` (len bytes) as dir/name. */
static void write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* A fresh folder holding gemm.csv = text; the load must fail with `needle` in the message. */
static void refuses(const char *text, size_t len, const char *needle)
{
    static int n;
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/hl_kernels_%d_%d", (int)getpid(), n++);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_file(dir, "gemm.csv", text, len);
    const hl_kernels *k = (const hl_kernels *)1;
    hl_err e;
    hl_status st = hl_kernels_load(dir, &k, &e);
    if (st == HL_OK)
        fail_msg("a table holding %.60s loaded", text);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
    assert_null(k);
    char path[300];
    snprintf(path, sizeof path, "%s/gemm.csv", dir);
    unlink(path);
    rmdir(dir);
}

#define REFUSES(lit, needle) refuses(lit, sizeof lit - 1, needle)

static void test_hostile_files(void **state)
{
    (void)state;
    const char *H = "dtype,m,n,k,latency_ms\n";
    char buf[512];
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64,nan\n", H);
    refuses(buf, strlen(buf), "gemm.csv:2:18: column 'latency_ms' is 'nan' (allowed: a finite number > 0)");
    /* attack pass 7: strtod read a hex cell ("0x10" = a measured 16 ms) */
    static const char *const hex[][2] = {{"bfloat16,4,64,64,0x10\n", "gemm.csv:2:18: column 'latency_ms' is '0x10' "
                                                                     "(allowed: a finite number > 0)"},
                                         {"bfloat16,0x4,64,64,0.01\n", "gemm.csv:2:10: column 'm' is '0x4'"},
                                         {"bfloat16,4,64,64,0x1p-4\n", "column 'latency_ms' is '0x1p-4'"}};
    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, "%s%s", H, hex[i][0]);
        refuses(buf, strlen(buf), hex[i][1]);
    }
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64,-0.5\n", H);
    refuses(buf, strlen(buf), "gemm.csv:2:18: column 'latency_ms' is '-0.5'");
    snprintf(buf, sizeof buf, "%sbfloat16,0,64,64,0.01\n", H);
    refuses(buf, strlen(buf), "gemm.csv:2:10: column 'm' is '0'");
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,inf,0.01\n", H);
    refuses(buf, strlen(buf), "column 'k' is 'inf'");
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64,0.01\nbfloat16,4,64,64,0.02\n", H);
    refuses(buf, strlen(buf), "gemm.csv:3: the same shape as line 2");
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64,0.01\nbfloat16,4.0,6.4e1,64,0.02\n", H);
    refuses(buf, strlen(buf), "the same shape as line 2"); /* the same numbers spelled otherwise */
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64\n", H);
    refuses(buf, strlen(buf), "gemm.csv:2: 4 cells, the header has 5 columns");
    REFUSES("dtype,m,n,latency_ms\nbfloat16,4,64,0.01\n", "gemm.csv:1: the header has no column 'k'");
    REFUSES("dtype,m,m,k,latency_ms\n", "gemm.csv:1:9: column 'm' appears twice");
    REFUSES("dtype,m,n,k,latency_ms\n\"bf16\",4,64,64,0.01\n", "gemm.csv:2:1: a quoted cell");
    REFUSES("\x01\x02\x03\x04 binary \x7f", "gemm.csv:1:1: a control character (binary data?)");
    REFUSES("dtype,m,n,k,latency_ms\n\xff\xfe,4,64,64,0.01\n", "gemm.csv:2: not UTF-8 text");
    REFUSES("dtype,m,n,k,latency_ms\n,4,64,64,0.01\n", "column 'dtype' is ''");
    REFUSES("", "gemm.csv: empty");
    REFUSES("a\0b", "NUL"); /* hl_read_file's rule */
    /* larger than the input limit (HBDLAB_MAX_INPUT_BYTES, as every file hbdlab reads) */
    setenv("HBDLAB_MAX_INPUT_BYTES", "64", 1);
    snprintf(buf, sizeof buf, "%sbfloat16,4,64,64,0.01\nbfloat16,8,64,64,0.01\n", H);
    refuses(buf, strlen(buf), "more than the input limit of 64 bytes");
    unsetenv("HBDLAB_MAX_INPUT_BYTES");
    /* folders: missing, a file, none of the tables */
    const hl_kernels *k;
    hl_err e;
    assert_fails_with(hl_kernels_load("/nonexistent/kernels", &k, &e), HL_EIO, &e, "No such file");
    char path[4200];
    snprintf(path, sizeof path, "%s/gemm.csv", fixture());
    assert_fails_with(hl_kernels_load(path, &k, &e), HL_EINVAL, &e, "is not a folder");
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/hl_kernels_empty_%d", (int)getpid());
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_fails_with(hl_kernels_load(dir, &k, &e), HL_ENOTFOUND, &e, "holds none of gemm.csv, attention_decode.csv");
    rmdir(dir);
    assert_fails_with(hl_kernels_load("", &k, &e), HL_EINVAL, &e, "an empty folder name");
}

/* More rows than a table may hold, and more folders than the cache holds: refused, naming the bound. */
static void test_bounds(void **state)
{
    (void)state;
    /* a header and MAX + 1 empty lines hold no row: the limit counts rows, not lines (it counted
     * lines, so a header and exactly MAX rows were refused; tests/lua/test_hostile_kernels.lua
     * loads MAX rows and refuses MAX + 1) */
    size_t n = (size_t)HL_KERNELS_MAX_ROWS + 2;
    char *big = malloc(n + 32);
    assert_non_null(big);
    int h = snprintf(big, 32, "dtype,m,n,k,latency_ms");
    memset(big + h, '\n', n);
    char blank[256];
    snprintf(blank, sizeof blank, "/tmp/hl_kernels_blank_%d", (int)getpid());
    assert_int_equal(mkdir(blank, 0700), 0);
    write_file(blank, "gemm.csv", big, (size_t)h + n);
    free(big);
    {
        const hl_kernels *kb;
        hl_err eb;
        assert_ok(hl_kernels_load(blank, &kb, &eb), &eb);
        assert_int_equal(hl_kernels_rows(kb, HL_KT_GEMM), 0);
        char path[300];
        snprintf(path, sizeof path, "%s/gemm.csv", blank);
        unlink(path);
        rmdir(blank);
    }
    /* the cache: the fixture and up to 15 more folders load; the 17th is refused, the cached ones still load */
    const hl_kernels *k;
    hl_err e;
    assert_ok(hl_kernels_load(fixture(), &k, &e), &e);
    const char *row = "dtype,m,n,k,latency_ms\nbfloat16,4,64,64,0.01\n";
    char dir[HL_KERNELS_MAX_FOLDERS + 1][256];
    hl_status last = HL_OK;
    int loaded = 0;
    for (int i = 0; i < HL_KERNELS_MAX_FOLDERS; i++) {
        snprintf(dir[i], sizeof dir[i], "/tmp/hl_kernels_cache_%d_%d", (int)getpid(), i);
        assert_int_equal(mkdir(dir[i], 0700), 0);
        write_file(dir[i], "gemm.csv", row, strlen(row));
        last = hl_kernels_load(dir[i], &k, &e);
        loaded += last == HL_OK;
    }
    assert_int_equal(last, HL_EINVAL);
    assert_non_null(strstr(e.msg, "at most 16 are cached"));
    assert_true(loaded <= HL_KERNELS_MAX_FOLDERS - 1);
    assert_ok(hl_kernels_load(fixture(), &k, &e), &e);
    for (int i = 0; i < HL_KERNELS_MAX_FOLDERS; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/gemm.csv", dir[i]);
        unlink(path);
        rmdir(dir[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interpolation_by_hand),
        cmocka_unit_test(test_simulation_rows),
        cmocka_unit_test(test_hostile_files),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
