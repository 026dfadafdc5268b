-- kernels = "dir" (issue 27): a folder of measured kernel tables in the shared reference's CSV
-- format. Covered kernels take the measured time and are flagged in the breakdown; the rest stay
-- analytic; hl.serve and hl.sweep take the field as hl.simulate does; bad folders name the field.
-- Fixture: tests/data/kernels (hand-made rows, see its README; tests/c/test_kernels.c works the
-- interpolation by hand). The shared reference (../shared/reference/kernels, not in the repository)
-- is exercised only where it is present.
local T = require "testlib"
local hl = require "hbdlab"

local dir = "tests/data/kernels"
local cl = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }
local base = { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, batch = 4, input = 256, output = 2 }
local function with(b) return T.merged(base, b) end
local function rows(r, phase)
  local t = {}
  for _, b in ipairs(r[phase].breakdown) do t[b.name] = b end
  return t
end

T.test("covered rows are measured and flagged, the others analytic", function()
  local plain, meas = hl.simulate(base), hl.simulate(with { kernels = dir })
  local d, p = rows(meas, "decode"), rows(plain, "decode")
  -- qkv_proj: M = 4, N = 6144, K = 4096 is the fixture's 0.020 ms row; 32 layers x 1 step
  T.eq(d.qkv_proj.measured, true, "qkv_proj flagged")
  T.eq(d.qkv_proj.measured_calls, 32, "every call measured")
  T.near(d.qkv_proj.time_s, 32 * 0.020e-3, 1e-12, "qkv_proj time")
  -- decode attention: batch 4 after 256 cached tokens, 32/8 heads of 128: the 0.020 ms row
  T.eq(d.attention.measured, true, "attention flagged")
  T.near(d.attention.time_s, 32 * 0.020e-3, 1e-12, "attention time")
  for _, name in ipairs { "o_proj", "ffn_up_gate", "ffn_down", "norms", "lm_head" } do
    T.eq(d[name].measured, false, name .. " not in the tables")
    T.eq(d[name].measured_calls, 0, name .. " no measured call")
    T.eq(d[name].time_s, p[name].time_s, name .. " as without tables")
  end
  for _, b in ipairs(plain.decode.breakdown) do T.eq(b.measured, false, "no tables: " .. b.name) end
  T.eq(meas.ttft_s, plain.ttft_s, "prefill shapes are outside the tables")
end)

T.test("hl.sweep and hl.serve take kernels as hl.simulate", function()
  local rs = hl.sweep { base = with { kernels = dir }, axes = { batch = { 4, 128 } } }
  T.eq(rs[1].tpot_s, hl.simulate(with { kernels = dir }).tpot_s, "sweep row = simulate (batch 4)")
  T.eq(rs[2].tpot_s, hl.simulate(with { batch = 128 }).tpot_s, "batch 128: no shape covered, analytic")
  local b = with { kernels = dir, concurrency = 4, requests = 8 }
  b.batch = nil
  local s, a = hl.serve(b), hl.serve((function() b.kernels = nil return b end)())
  T.ok(s.tpot_s.mean ~= a.tpot_s.mean, "serve steps take the measured kernels")
end)

T.test("hl.serve at concurrency 1 takes the measured decode attention as hl.simulate", function()
  -- one request of 256 prompt tokens, one decode step after 256 cached: its attention is the fixture's
  -- batch-1 row (0.010 ms); the GEMMs (M = 1) are outside the table. Serve's decode-only steps must
  -- leave their line (linear in the context) for the table, or the two differ by 32 x ~5 us.
  local b = { model = "llama-3.1-8b", cluster = cl, parallel = { tp = 1 }, input = 256, output = 2, kernels = dir }
  local s = hl.simulate(with { batch = 1, kernels = dir })
  T.eq(rows(s, "decode").attention.measured, true, "simulate: measured")
  b.concurrency, b.requests = 1, 2
  local r = hl.serve(b)
  T.near(r.tpot_s.mean, s.tpot_s, 0.002, "serve TPOT = simulate TPOT")
  T.near(r.ttft_s.mean, s.ttft_s, 0.002, "serve TTFT = simulate TTFT")
end)

T.test("hl.roofline takes kernels for one GEMM", function()
  -- M = 16 between the fixture's M = 4 (20 us) and 64 (40 us): half way in log space, sqrt(20 x 40) us
  local r = hl.roofline { gpu = "H100-SXM", m = 16, n = 6144, k = 4096, kernels = dir }
  T.eq(r.measured, true, "covered")
  T.near(r.time_s, 20 * math.sqrt(2) * 1e-6, 1e-12, "20 sqrt(2) us")
  local out = hl.roofline { gpu = "H100-SXM", m = 128, n = 6144, k = 4096, kernels = dir }
  T.eq(out.measured, false, "M = 128 outside the grid")
  T.eq(out.time_s, hl.roofline { gpu = "H100-SXM", m = 128, n = 6144, k = 4096 }.time_s, "analytic outside")
end)

T.test("bad folders name the field", function()
  T.raises(function() hl.simulate(with { kernels = "/nonexistent/kernels" }) end, "field 'kernels'",
    "/nonexistent/kernels")
  T.raises(function() hl.simulate(with { kernels = "tests/data" }) end, "holds none of gemm.csv")
  T.raises(function() hl.simulate(with { kernels = 5 }) end, "kernels")
end)

-- The shared reference's H100 tables (AIConfigurator's measurements), when this checkout sits beside it.
local shared
for _, p in ipairs { "../shared/reference/kernels/h100_sxm", "../../shared/reference/kernels/h100_sxm" } do
  local f = io.open(p .. "/gemm.csv")
  if f then
    f:close()
    shared = p
    break
  end
end
T.test("the shared H100 tables run and flag their rows", function()
  if not shared then
    print("skip: no ../shared/reference/kernels/h100_sxm beside this checkout")
    return
  end
  local r = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 8,
                          input = 1024, output = 64, kernels = shared }
  local d = rows(r, "decode")
  for _, name in ipairs { "qkv_proj", "o_proj", "ffn_up_gate", "ffn_down", "attention" } do
    T.eq(d[name].measured, true, "shared H100: " .. name .. " measured")
  end
  T.eq(d.tp_allreduce.measured, true, "shared H100: the TP all-reduce from nccl.csv")
  T.ok(r.tpot_s > 0 and r.ttft_s > 0, "runs")
end)

T.done()
