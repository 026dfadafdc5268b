local T = require "testlib"
local hl = require "hbdlab"

local TMP = os.tmpname()
os.remove(TMP)
assert(hl.core.spawn { "mkdir", "-p", TMP } == 0)

local model = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local base = { model = model, cluster = hl.cluster { gpu = "B200", gpus = 64, hbd = 8 }, batch = 16, input = 4096,
               output = 64, parallel = { tp = 8, ep = 16 } }

T.test("params: defaults, --set overrides, types, unknown names", function()
  local spec = { gpus = { 128, "cluster size" }, precision = { "fp8", "precision" }, fast = { false, "quick mode" },
                 hbds = { { 8, 16 }, "HBD sizes" } }
  local P = hl.params(spec, { "--set", "gpus=64", "--set=precision=fp4", "--set", "fast=true", "--set", "hbds=8,64,128" })
  T.eq(P.gpus, 64, "number override")
  T.eq(P.precision, "fp4", "string override")
  T.eq(P.fast, true, "boolean override")
  T.eq(#P.hbds, 3, "list override")
  T.eq(P.hbds[3], 128, "list element typed")
  T.eq(hl.params(spec, {}).gpus, 128, "default")
  T.raises(function() hl.params(spec, { "--set", "gpu=3" }) end, "unknown parameter", "did you mean 'gpus'")
  T.raises(function() hl.params(spec, { "--set", "gpus=many" }) end, "expected a number")
end)

T.test("sweep rows equal individual hl.simulate calls", function()
  local rows = hl.sweep { base = base, axes = { hbd = { 8, 16, 32, 64 }, precision = { "fp16", "fp8", "fp4" } } }
  T.eq(#rows, 12, "product size")
  for _, row in ipairs(rows) do
    local t = {}
    for k, v in pairs(base) do t[k] = v end
    t.cluster = base.cluster:with { hbd = row.hbd }
    t.precision = row.precision
    local r = hl.simulate(t)
    T.eq(row.ttft_s, r.ttft_s, "ttft " .. row.hbd .. row.precision)
    T.eq(row.tps_per_gpu, r.tps_per_gpu, "tps")
    T.eq(row["prefill.comm_share"], r.prefill.comm_share, "flattened nested field")
    T.eq(row.bound, r.bound, "bound name")
  end
end)

T.test("zip axes, friendly axes, invalid points become error rows", function()
  local z = hl.sweep { base = base, axes = { { "hbd", { 8, 16, 32 } }, { "batch", { 16, 32, 48 } } }, zip = true }
  T.eq(#z, 3, "zip length")
  T.eq(z[2].hbd, 16, "zip pairs")
  T.eq(z[2].batch, 32, "zip pairs batch")
  local f = hl.sweep { base = base, axes = { scaleout_gbps = { 400, 800 } } }
  T.eq(f[1].scaleout_gbps, 400, "friendly axis name kept")
  T.ok(f[1].ttft_s > f[2].ttft_s, "faster NIC, lower TTFT")
  local e = hl.sweep { base = base, axes = { hbd = { 8, 48 } } }
  T.ok(e[2].error and e[2].error:find("48 does not divide"), "error row: " .. tostring(e[2].error))
  T.raises(function() hl.sweep { base = base, axes = { hbd = { 8, 48 } }, strict = true } end, "sweep point 2")
end)

T.test("a field axis refines the object an object axis chose, in either order", function()
  local gpus = { hl.gpu "B200", hl.gpu "H200" }
  for _, axes in ipairs { { { "gpu", gpus }, { "eff_gemm", { 0.2, 0.9 } } },
                          { { "eff_gemm", { 0.2, 0.9 } }, { "gpu", gpus } } } do
    local rows = hl.sweep { base = base, axes = axes }
    T.eq(#rows, 4, "product size")
    for _, row in ipairs(rows) do
      local t = {}
      for k, v in pairs(base) do t[k] = v end
      t.cluster = hl.cluster { gpu = hl.gpu(row.gpu):with { eff_gemm = row.eff_gemm }, gpus = 64, hbd = 8 }
      T.eq(row.ttft_s, hl.simulate(t).ttft_s, row.gpu .. " eff_gemm " .. row.eff_gemm)
    end
  end
end)

T.test("function form reports the failing point with a traceback", function()
  local rows = hl.sweep({ x = { 1, 2, 3 } }, function(p) return { y = p.x * 2, nested = { z = p.x } } end)
  T.eq(rows[3].y, 6, "values")
  T.eq(rows[3]["nested.z"], 3, "flattened")
  local err = T.raises(function()
    hl.sweep({ x = { 1, 2 } }, function(p) if p.x == 2 then error("bad point") end return {} end)
  end, "sweep point 2 {x=2}", "bad point")
  T.ok(err:find("stack traceback", 1, true), "traceback included")
end)

T.test("rows: filter, sort, group, pivot, print", function()
  local rows = { { a = 1, b = "x", v = 3 }, { a = 2, b = "y", v = 1 }, { a = 1, b = "y", v = 2 } }
  T.eq(#hl.rows.filter(rows, { a = 1 }), 2, "filter by table")
  T.eq(hl.rows.sort(rows, "-v")[1].v, 3, "sort desc")
  local g, order = hl.rows.group(rows, "a")
  T.eq(#g[1], 2, "group")
  T.eq(order[2], 2, "group order")
  local p, cols = hl.rows.pivot(rows, "a", "b", "v")
  T.eq(p[1].y, 2, "pivot cell")
  T.eq(#cols, 2, "pivot columns")
  T.ok(hl.rows.format(rows, { "a", "b" }):find("a  b\n"), "aligned header")
end)

T.test("CSV, JSON and JSON Lines round trips", function()
  local rows = hl.sweep { base = base, axes = { hbd = { 8, 64 }, precision = { "fp8" } } }
  rows[1].note = 'has "quotes", commas\nand a newline'
  for _, ext in ipairs { "csv", "json", "jsonl" } do
    local path = TMP .. "/rows." .. ext
    hl.rows.write(rows, path)
    local back = ext == "csv" and hl.rows.read_csv(path) or ext == "json" and hl.rows.read_json(path) or hl.rows.read_jsonl(path)
    T.eq(#back, #rows, ext .. " count")
    for i, r in ipairs(rows) do
      for k, v in pairs(r) do T.eq(back[i][k], v, ext .. " " .. k) end
    end
  end
  local leftovers = io.popen("ls " .. TMP):read("a")
  T.ok(not leftovers:find("tmp"), "no temp files left: " .. leftovers)
end)

T.test("every chart type writes a non-empty image, .dat and .gp", function()
  local rows = hl.sweep { base = base, axes = { hbd = { 8, 16, 32, 64 }, precision = { "fp16", "fp8" } } }
  local r = hl.simulate(base)
  local made = {
    hl.plot.line { data = rows, x = "hbd", y = "ttft_s", by = "precision", logx = 2, out = TMP .. "/line.png" },
    hl.plot.scatter { data = rows, x = "ttft_s", y = "tps_per_gpu", by = "precision", out = TMP .. "/scatter.svg" },
    hl.plot.bar { data = hl.rows.filter(rows, { precision = "fp8" }), x = "hbd",
                  y = { "prefill.compute_s", "prefill.comm_s" }, stacked = true, out = TMP .. "/bar.pdf" },
    hl.plot.bar { data = rows, x = "hbd", y = "ttft_s", by = "precision", out = TMP .. "/bar2.png" },
    hl.plot.heatmap { data = rows, x = "hbd", y = "precision", z = "tps_per_gpu", out = TMP .. "/heat.png" },
    hl.plot.roofline { gpu = hl.gpu "B200", precision = "fp8", ops = r.decode.breakdown, out = TMP .. "/roof.png" },
    hl.plot.timeline { events = r:trace(), out = TMP .. "/timeline.png" },
  }
  for _, img in ipairs(made) do
    local base_ = img:gsub("%.%w+$", "")
    for _, f in ipairs { img, base_ .. ".dat", base_ .. ".gp" } do
      local h = io.open(f, "rb")
      T.ok(h ~= nil, "exists: " .. f)
      T.ok(#h:read("a") > 100, "non-empty: " .. f)
      h:close()
    end
  end
end)

T.test("titles and labels cannot run commands; bad output types are errors", function()
  local rows = { { x = 1, y = 2 }, { x = 2, y = 3 } }
  local marker = TMP .. "/pwned"
  local evil = 'a "quote" `touch ' .. marker .. '` $(touch ' .. marker .. ') \' system("touch ' .. marker .. '")'
  hl.plot.line { data = rows, x = "x", y = "y", title = evil, xlabel = evil, ylabel = evil, out = TMP .. "/evil.png" }
  T.ok(io.open(marker) == nil, "no command ran")
  hl.plot.line { data = rows, x = "x", y = "y", out = TMP .. "/dir with spaces $(x)/fig.png" }
  T.ok(io.open(TMP .. "/dir with spaces $(x)/fig.png") ~= nil, "odd folder names work")
  T.raises(function() hl.plot.line { data = rows, x = "x", y = "y", out = TMP .. "/f.gif" } end, "must end in .png, .svg or .pdf")
  T.raises(function() hl.plot.line { data = rows, x = "x", out = TMP .. "/f.png" } end, "field 'y' is required")
end)

hl.core.spawn { "rm", "-rf", TMP }
T.done()
