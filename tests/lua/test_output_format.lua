-- Output format: durations in the unit that reads best, the decode
-- compute_s = 0 explanation, sweep axes first in hl.rows.print, axis labels and
-- legends that follow unit scaling, y axes from 0 unless asked.
local T = require "testlib"
local hl = require "hbdlab"
local sim = require "hbdlab.simulate"

T.test("durations pick s, ms or us", function()
  T.eq(sim.duration(15.82), "15.82 s", "seconds from 1 s")
  T.eq(sim.duration(0.0123), "12.3 ms", "milliseconds")
  T.eq(sim.duration(5e-5), "50 us", "microseconds")
  local long = tostring(hl.simulate { model = "qwen1.5-110b", cluster = "hgx-b200", parallel = { tp = 8 }, batch = 16,
                                      input = 16384, output = 512 })
  T.ok(long:find("TTFT %d[%d.]* s "), "a TTFT of seconds prints in s: " .. long:match("TTFT[^\n]*"))
  local short = tostring(hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } })
  T.ok(short:find("TPOT [%d.]+ ms"), "a TPOT of milliseconds prints in ms: " .. short:match("TPOT[^\n]*"))
  T.ok(short:find("USD/Mtok in") and short:find("J/token"), "print(r) shows cost and energy")
end)

T.test("decode compute_s = 0 is explained, and only then", function()
  local r = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } }
  T.eq(r.decode.compute_s, 0, "batch 1 decode is all HBM-bound")
  T.ok(tostring(r):find("decode compute_s is 0: every decode operator is HBM%-bound"), "explained")
  local big = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 4096,
                            input = 128, output = 64, ignore_memory = true }
  T.ok(big.decode.compute_s > 0, "batch 4096 decode has compute-bound operators")
  T.ok(not tostring(big):find("compute_s is 0"), "no explanation when it is not 0")
end)

T.test("hl.rows.print puts the sweep's axes first, in their order, also after sort and filter", function()
  local rows = hl.sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } },
                          axes = { { "output", { 64, 128 } }, { "batch", { 1, 2 } } } }
  local cols = hl.rows.columns(rows)
  T.eq(cols[1], "output", "first axis")
  T.eq(cols[2], "batch", "second axis")
  T.eq(cols[3], "ttft_s", "then the results in the result table's order")
  T.eq(hl.rows.columns(hl.rows.sort(rows, "-tps_per_gpu"))[1], "output", "kept by sort")
  T.eq(hl.rows.columns(hl.rows.filter(rows, { batch = 2 }))[2], "batch", "kept by filter")
  local fn_rows = hl.sweep({ z = { 1, 2 }, a = { 3 } }, function(p) return { value = p.z * p.a } end)
  T.eq(hl.rows.columns(fn_rows)[1], "a", "function form: axes first (named axes sorted)")
  T.eq(hl.rows.columns(fn_rows)[3], "value", "then the values")
  local header = hl.rows.format(rows):match("^[^\n]*")
  T.ok(header:match("^output%s+batch%s+ttft_s"), "printed header starts with the axes: " .. header:sub(1, 40))
end)

T.test("axis labels and legends follow the unit scaling; y from 0 unless asked", function()
  T.eq(hl.plot.axis_label("ttft_s", 1e3), "ttft (ms)", "ms")
  T.eq(hl.plot.axis_label("ttft_s"), "ttft (s)", "s")
  T.eq(hl.plot.axis_label("kv_bytes", 1e-9), "kv (GB)", "GB")
  T.eq(hl.plot.axis_label("tps_per_gpu", 1e-3), "tps_per_gpu x 0.001", "no unit known: the factor is said")
  T.eq(hl.plot.legend_value("scaleout_bw", 5e10), "50 GB/s", "legend in SI units")
  local dir = os.tmpname()
  os.remove(dir)
  local rows = { { hbd = 8, ttft_s = 0.5, bw = 5e10 }, { hbd = 16, ttft_s = 0.4, bw = 5e10 } }
  hl.plot.line { data = rows, x = "hbd", y = "ttft_s", yscale = 1e3, by = "bw", out = dir .. "/a.png" }
  local gp = io.open(dir .. "/a.gp"):read("a")
  T.ok(gp:find('set ylabel "ttft %(ms%)"'), "ylabel follows yscale")
  T.ok(gp:find("set yrange %[0:%*%]"), "y from 0")
  hl.plot.line { data = rows, x = "hbd", y = "ttft_s", ymin = 0.25, ylabel = "mine", out = dir .. "/b.png" }
  gp = io.open(dir .. "/b.gp"):read("a")
  T.ok(gp:find("set yrange %[0.25:%*%]") and gp:find('set ylabel "mine"'), "ymin and ylabel as asked")
  hl.plot.line { data = { { x = 1, y = -1 }, { x = 2, y = 1 } }, x = "x", y = "y", out = dir .. "/c.png" }
  gp = io.open(dir .. "/c.gp"):read("a")
  T.ok(not gp:find("set yrange"), "data below 0: no forced 0")
  hl.core.spawn { "rm", "-rf", "--", dir }
end)

T.done()
