-- What a newcomer from a clean clone hit (session 8), each fixed and checked here: the frontier's
-- charts did not say which model and lengths they show, the cost chart's y axis read
-- "usd_per_mtok" and gave a curve another colour than the main chart, and a best point that
-- missed the SLO once converged was printed as the best without saying so.
local T = require "testlib"
local hl = require "hbdlab"
local F = require "hbdlab.frontier"

local dir = T.scratch()
local function read(p) local f = assert(io.open(p, "rb")); local s = f:read("a"); f:close(); return s end

T.test("frontier charts: the title names the model and lengths, the cost axis its unit, colours agree", function()
  -- two systems, one with FP4 and one without: the H100 fp4 curves are empty, the others priced
  local stem = dir .. "/fr"
  hl.warnings(false)
  hl.frontier { model = "llama-3.1-8b", precision = { "fp8", "fp4" }, input = 1024, output = 256, simulate = 1,
                systems = { { gpu = "H100", gpus = 8, hbd = 8, name = "H" }, { gpu = "B200", gpus = 8, name = "B" } },
                modes = "agg", slo = { ttft_s = 2 }, out = stem }
  local main, cost = read(stem .. ".gp"), read(stem .. "_cost.gp")
  T.ok(main:find('set title "llama-3.1-8b, 1024 in / 256 out tokens: output tokens/s per GPU vs tokens/s per user"',
    1, true), "main chart title names model and lengths")
  T.ok(cost:find('set ylabel "USD per million output tokens"', 1, true), "cost chart y axis in words with its unit")
  T.ok(cost:find('set title "llama-3.1-8b, 1024 in / 256 out tokens: USD per million', 1, true), "cost chart title")
  -- each curve's line type is the same number in both charts
  local function lts(text)
    local t = {}
    for lt, name in text:gmatch('with linespoints lt (%d+) lw [%d.]+ title "([^"]+)"') do t[name] = lt end
    return t
  end
  local a, b, n = lts(main), lts(cost), 0
  for name, lt in pairs(b) do
    n = n + 1
    T.eq(lt, a[name], "curve '" .. name .. "' has one colour in both charts")
  end
  T.ok(n >= 2, "the cost chart draws at least two curves (" .. n .. ")")
end)

T.test("plot.frontier keys: a curve's colour is its place in keys; unnamed curves follow", function()
  local pts = {
    { system = "s", precision = "fp8", mode = "agg", tps_per_user = 10, tps_per_gpu = 100 },
    { system = "s", precision = "fp8", mode = "agg", tps_per_user = 20, tps_per_gpu = 50 },
    { system = "t", precision = "fp8", mode = "agg", tps_per_user = 15, tps_per_gpu = 80 },
  }
  local out = dir .. "/k.png"
  require("hbdlab.plot").frontier { points = pts, x = "tps_per_user", y = "tps_per_gpu", out = out,
                                    keys = { "x fp8 agg", "t fp8 agg" } }
  local gp = read(dir .. "/k.gp")
  T.ok(gp:find('lt 2 lw 2.5 title "t fp8 agg"', 1, true), "t: second in keys -> lt 2")
  T.ok(gp:find('lt 3 lw 2.5 title "s fp8 agg"', 1, true), "s: not in keys (2 names) -> lt 3")
  T.ok(gp:find("hbdlab_faint(2)", 1, true) and gp:find("hbdlab_faint(3)", 1, true), "faint points follow the curves")
  T.raises(function()
    require("hbdlab.plot").frontier { points = pts, x = "tps_per_user", y = "tps_per_gpu", out = out, keys = "s" }
  end, "field 'keys'")
end)

T.test("a best point that misses the SLO once converged says so in the summary", function()
  local b = { tp = 4, pp = 1, ep = 1, dp = 1, instances = 1, concurrency = 8, tps_per_gpu = 100, tps_per_user = 48,
              ttft_p90_s = 0.05, simulated = true, converged = true, mode = "agg", gpus_idle = 0 }
  local function summary(best)
    return tostring(setmetatable({ points = {}, groups = { "s|fp8|agg" }, pareto = { ["s|fp8|agg"] = {} },
                                   best = { ["s|fp8|agg"] = best }, ratios = {} }, F.result_mt))
  end
  T.ok(not summary(b):find("MISSES"), "a best point within its SLO: no mark")
  b.misses_slo = true
  T.ok(summary(b):find("MISSES the SLO once converged", 1, true), summary(b))
end)

T.test("axis labels of serve statistics and friendly-unit fields name their unit", function()
  -- "ttft_s.p99" (a serve_sweep column) and "ttft_ms" (the result's own friendly alias) were drawn as
  -- the raw names; the unit is the name's, the scale moves the prefix as for "ttft_s"
  T.eq(hl.plot.axis_label("ttft_s.p99"), "ttft p99 (s)", "statistic of a field in s")
  T.eq(hl.plot.axis_label("itl_s.p50", 1e3), "itl p50 (ms)", "scaled by 1e3: ms")
  T.eq(hl.plot.axis_label("ttft_ms"), "ttft (ms)", "friendly ms")
  T.eq(hl.plot.axis_label("ttft_p99_ms"), "ttft p99 (ms)", "friendly ms, words spaced")
  T.eq(hl.plot.axis_label("kernel_latency_us"), "kernel latency (us)", "friendly us")
  T.eq(hl.plot.axis_label("ttft_ms", 1e3), "ttft_ms x 1000", "a friendly field scaled again: the factor is said")
  T.eq(hl.plot.axis_label("ttft_s", 1e3), "ttft (ms)", "unchanged: s scaled to ms")
end)

T.test("a line chart of values >= 0 starts its x axis at 0, not below", function()
  -- a serve run's kv_series: t_s from 14.4 s to 700.4 s; the 3% margin (20.6 s) reached below 0 and
  -- gnuplot extended the axis to the tic at -100 s
  local rows = {}
  for i = 1, 50 do rows[i] = { t_s = 0.4 + 14 * i, running = i % 7 } end
  hl.plot.line { data = rows, x = "t_s", y = "running", out = dir .. "/t.png" }
  local gp = read(dir .. "/t.gp")
  T.ok(gp:find("set xrange [0:*]", 1, true), "x from 0")
  T.ok(gp:find("set offsets 0, graph 0.03", 1, true), "no left margin below 0")
  -- x from 2 to 13: the margin (0.33) stays above 0, the chart keeps it
  local q = {}
  for i = 1, 5 do q[i] = { rate = 2 + (i - 1) * 2.75, ttft_ms = 10 * i } end
  hl.plot.line { data = q, x = "rate", y = "ttft_ms", out = dir .. "/r.png" }
  gp = read(dir .. "/r.gp")
  T.ok(not gp:find("set xrange", 1, true), "a margin above 0 is kept")
  T.ok(gp:find('set ylabel "ttft (ms)"', 1, true), "friendly unit on the y axis")
end)

T.test("the roofline legend says the roof is at achievable rates, in plain numbers", function()
  -- B200 fp8: 4500e12 FLOP/s x eff_gemm, 7.7e12 B/s x eff_mem (the preset's fields, read here)
  local g = hl.gpu "B200"
  local r = hl.simulate { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "B200", gpus = 1 }, precision = "fp8",
                          batch = 8, input = 512, output = 16 }
  hl.plot.roofline { gpu = "B200", precision = "fp8", ops = r.decode.breakdown, out = dir .. "/roof.png" }
  local gp = read(dir .. "/roof.gp")
  local want = string.format("B200 fp8 achievable roof (%.0f TFLOP/s, %.3g TB/s)", g.fp8_flops * g.eff_gemm / 1e12,
    g.hbm_bw * g.eff_mem / 1e12)
  T.ok(gp:find(want, 1, true), want)
  T.ok(not gp:find("e+03 TFLOP", 1, true), "no exponent")
end)

T.done()
