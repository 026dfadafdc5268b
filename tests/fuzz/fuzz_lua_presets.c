/* libFuzzer target: the Lua API over preset files from $HBDLAB_PRESETS (any bytes).
 * The input is split on "\n===\n" into up to five files: gpus/fz.json, gpus/fy.json,
 * models/fz.json, models/fy.json, clusters/fz.json (so "base" chains and cycles
 * between two presets, a cluster naming a fuzzed GPU, and so on are all reachable);
 * its first byte also picks the job's shape. A fixed Lua script then drives the
 * public API on those presets in a fresh state; every call is under pcall, so only
 * a crash, a sanitizer report, a leak or a Lua error escaping pcall is a finding. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_lua.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];
static const char *const files[] = {"gpus/fz.json", "gpus/fy.json", "models/fz.json", "models/fy.json",
                                    "clusters/fz.json"};

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/hbdlab-fuzz-presets-XXXXXX");
    if (!mkdtemp(root))
        abort();
    char p[128];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", root, i == 0 ? "gpus" : i == 1 ? "models" : "clusters");
        mkdir(p, 0755);
    }
    setenv("HBDLAB_PRESETS", root, 1);
    setenv("HBDLAB_MAX_INPUT_BYTES", "65536", 1);
}

static const char script[] =
    "local hl, shape = ...\n"
    "local function try(f, ...) local ok, r = pcall(f, ...) return ok and r or nil end\n"
    "local tp = ({ 1, 2, 8, 3 })[shape % 4 + 1]\n"
    "local batch = ({ 1, 4, 'max', 7 })[(shape // 4) % 4 + 1]\n"
    "local g = try(hl.gpu, 'fz'); try(hl.gpu, 'fy')\n"
    "local m = try(hl.model, 'fz'); try(hl.model, 'fy')\n"
    "local c = try(hl.cluster, 'fz')\n"
    "try(hl.gpus); try(hl.models); try(hl.clusters)\n"
    "if g then try(function() return g:with { eff_gemm = 0.5 } end); try(tostring, g)\n"
    "  try(hl.roofline, { gpu = g, m = 16, n = 64, k = 64, precision = 'bf16' })\n"
    "  try(hl.roofline, { gpu = 'fz', flops = 1e9, bytes = 1e6 })\n"
    "  try(hl.cluster, { gpu = 'fz', gpus = 8, hbd = 8 }) end\n"
    "if m then try(function() return m:params() end); try(function() return m:kv_bytes_per_token('bf16') end)\n"
    "  try(tostring, m) end\n"
    "if c then try(hl.collective, { op = 'allreduce', bytes = 1e6, cluster = c })\n"
    "  try(hl.collective, { op = 'alltoall', bytes = 4096, cluster = 'fz', ranks = 2 }) end\n"
    "local par = { tp = tp }\n"
    "for _, job in ipairs {\n"
    "  { model = 'fz', cluster = 'fz', batch = batch, input = 64, output = 4, parallel = par },\n"
    "  { model = 'fz', cluster = 'hgx-h100', batch = batch, input = 64, output = 4, parallel = par },\n"
    "  { model = 'llama-3.1-8b', cluster = 'fz', batch = batch, input = 64, output = 4, parallel = par },\n"
    "  { model = 'fy', cluster = 'fz', batch = 1, input = 16, output = 2, ignore_memory = true },\n"
    "} do\n"
    "  local r = try(hl.simulate, job)\n"
    "  if r then try(tostring, r); try(function() return r.decode.breakdown end) end\n"
    "end\n"
    "try(hl.sweep, { base = { model = 'fz', cluster = 'fz', batch = 1, input = 16, output = 2 },\n"
    "                axes = { batch = { 1, 2 } }, threads = 1, progress = false })\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0])
        setup();
    /* write the parts; a missing part removes its file */
    const uint8_t *p = data, *end = data + size;
    for (int i = 0; i < 5; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        if (p > end || (p == end && i > 0)) {
            unlink(path);
            continue;
        }
        const uint8_t *sep = NULL;
        for (const uint8_t *q = p; q + 5 <= end; q++)
            if (memcmp(q, "\n===\n", 5) == 0) {
                sep = q;
                break;
            }
        const uint8_t *stop = sep ? sep : end;
        FILE *f = fopen(path, "wb");
        if (!f)
            abort();
        if (stop > p)
            fwrite(p, 1, (size_t)(stop - p), f);
        fclose(f);
        p = sep ? sep + 5 : end + 1;
    }
    lua_State *L = fuzz_lua_with_script(script, sizeof script - 1);
    if (!L)
        return 0;
    lua_pushinteger(L, size ? data[0] : 0);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) { /* only pcall'd calls may fail */
        fprintf(stderr, "fuzz_lua_presets: %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_close(L);
    return 0;
}
