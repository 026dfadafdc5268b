/* libFuzzer target: the serving inputs. The input is split on "\n===\n" into a
 * trace (CSV or JSON lines, any bytes) and a serve configuration (JSON text).
 * The trace goes through the core's parser (hl_serve_trace_parse), whose
 * result must hold only valid requests; the configuration is decoded by the
 * JSON front end and read by hl.serve's reader (lua/bind/l_serve.c over the
 * serve field table) with the trace as its file, then checked and, when it is
 * small enough to finish quickly, run (first in the analytical mode as given,
 * then simulated with every count and length clamped to 24). Every Lua call is under pcall, so only a
 * crash, a sanitizer report, a leak, a parser invariant or an error escaping
 * pcall is a finding. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_lua.h"
#include "hbdlab/hbdlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char trace_path[64];

/* Runs the configuration through hl.serve; sizes are clamped so a run ends within the
 * fuzzer's time limit (the reader and the checks see the values as given first). */
static const char script[] =
    "local hl, text, trace, small = ...\n"
    "local core = require 'hbdlab.core'\n"
    "local ok, cfg = pcall(core.json_decode, text, 'fuzz.json')\n"
    "if not ok or type(cfg) ~= 'table' then return end\n"
    "cfg.model = cfg.model or 'llama-3.1-8b'\n"
    "cfg.cluster = cfg.cluster or 'hgx-h100'\n"
    "if cfg.parallel == nil then cfg.parallel = { tp = 1 } end\n"
    "local function objects(t) -- as hbdlab serve's JSON loader does (cli.lua)\n"
    "  if type(t.cluster) == 'table' then local okc, c = pcall(hl.cluster, t.cluster) t.cluster = okc and c or nil "
    "end\n"
    "  if type(t.model) == 'table' then local okm, m = pcall(hl.model, t.model) t.model = okm and m or nil end\n"
    "end\n"
    "objects(cfg)\n"
    "if type(cfg.disagg) == 'table' then\n"
    "  for _, p in ipairs { 'prefill', 'decode' } do if type(cfg.disagg[p]) == 'table' then objects(cfg.disagg[p]) end "
    "end\n"
    "end\n"
    "if cfg.trace ~= nil then cfg.trace = trace end\n"
    "local mode = cfg.mode\n"
    "cfg.mode = 'analytical' -- as given (the steady state ends quickly): a bad field is an error\n"
    "pcall(hl.serve, cfg)\n"
    "cfg.mode = mode\n"
    "local function clamp(t, depth)\n"
    "  if depth > 3 then return end\n"
    "  for k, v in pairs(t) do\n"
    "    if type(v) == 'number' and k ~= 'rate' and k ~= 'slo_ttft_s' and k ~= 'slo_tpot_s' and\n"
    "       k ~= 'ttft_s' and k ~= 'tpot_s' and k ~= 'ttft_ms' and k ~= 'tpot_ms' and k ~= 'start_jitter_s' and\n"
    "       k ~= 'think_s' then\n"
    "      t[k] = math.min(v, 24)\n"
    "    elseif type(v) == 'table' then clamp(v, depth + 1) end\n"
    "  end\n"
    "end\n"
    "clamp(cfg, 0)\n"
    "if type(cfg.rate) == 'number' and cfg.rate < 1 then cfg.rate = 1 end\n"
    "cfg.think_s, cfg.start_jitter_s = nil, nil\n"
    "if cfg.trace ~= nil and not small then cfg.trace = nil end\n"
    "local ok2, r = pcall(hl.serve, cfg)\n"
    "if ok2 then pcall(tostring, r) end\n"
    "if os.getenv 'FUZZ_SERVE_VERBOSE' then print(ok2, ok2 and r.requests or r) end\n";

/* Parses the trace part and checks what the parser promises of every request. */
static void check_trace(const char *text, size_t len, int *small)
{
    hl_trace_req *t = NULL;
    int64_t n = 0;
    hl_err err;
    *small = 0;
    if (hl_serve_trace_parse(text, len, "fuzz.csv", &t, &n, &err) != HL_OK) {
        if (!err.msg[0] || t || n)
            abort(); /* a failure says why and leaves nothing */
        return;
    }
    if (n < 1)
        abort();
    int ok_small = n <= 32;
    for (int64_t i = 0; i < n; i++) {
        const hl_trace_req *q = &t[i];
        if (!(q->arrival_s >= 0) || !isfinite(q->arrival_s) || !(q->input >= 1 && q->input <= 1e8) ||
            !(q->output >= 1 && q->output <= 1e8) || q->input != floor(q->input) || q->output != floor(q->output))
            abort();
        ok_small &= q->input <= 512 && q->output <= 64 && q->arrival_s <= 100;
    }
    *small = ok_small;
    hl_serve_trace_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!trace_path[0]) {
        snprintf(trace_path, sizeof trace_path, "/tmp/hbdlab-fuzz-serve-%ld.csv", (long)getpid());
        setenv("HBDLAB_MAX_INPUT_BYTES", "65536", 1);
        setenv("HBDLAB_SERVE_MEMORY_BYTES", "1e7", 1);
    }
    const uint8_t *sep = NULL;
    for (const uint8_t *q = data; q + 5 <= data + size; q++)
        if (memcmp(q, "\n===\n", 5) == 0) {
            sep = q;
            break;
        }
    size_t tlen = sep ? (size_t)(sep - data) : size;
    const char *cfg = sep ? (const char *)sep + 5 : "";
    size_t clen = sep ? size - tlen - 5 : 0;
    char *trace = malloc(tlen + 1);
    if (!trace)
        return 0;
    memcpy(trace, data, tlen);
    trace[tlen] = '\0';
    int small = 0;
    check_trace(trace, tlen, &small);
    FILE *f = fopen(trace_path, "wb");
    if (!f)
        abort();
    fwrite(trace, 1, tlen, f);
    fclose(f);
    free(trace);
    lua_State *L = fuzz_lua_with_script(script, sizeof script - 1);
    if (!L)
        return 0;
    lua_pushlstring(L, cfg, clen);
    lua_pushstring(L, trace_path);
    lua_pushboolean(L, small);
    if (lua_pcall(L, 4, 0, 0) != LUA_OK) { /* only pcall'd calls may fail */
        fprintf(stderr, "fuzz_serve: %s\n", lua_tostring(L, -1));
        abort();
    }
    lua_close(L);
    unlink(trace_path);
    return 0;
}
