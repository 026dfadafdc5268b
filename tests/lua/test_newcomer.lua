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

T.done()
