-- Usability (newcomer frictions of issue 17): preset aliases and case-insensitive names,
-- plain tables where objects are expected, preset names in hl.plot.roofline,
-- roofline labels that do not overlap.
local T = require "testlib"
local hl = require "hbdlab"

T.test("preset aliases and case-insensitive names", function()
  T.eq(hl.gpu("H100").name, "H100-SXM", "H100 -> h100-sxm")
  T.eq(hl.gpu("h100_sxm5").name, "H100-SXM", "H100 SXM5")
  T.eq(hl.gpu("A100").name, hl.gpu("a100-sxm").name, "A100 -> a100-sxm")
  T.eq(hl.gpu("b200").name, hl.gpu("B200").name, "case-insensitive")
  T.eq(hl.cluster("NVL72").name, hl.cluster("gb200-nvl72").name, "NVL72 -> gb200-nvl72")
  T.eq(hl.cluster("DGX-H100").gpus, 8, "DGX-H100 -> hgx-h100")
  T.eq(hl.model("Mixtral").name, hl.model("mixtral-8x7b").name, "Mixtral -> mixtral-8x7b")
  T.eq(hl.cluster { gpu = "H100", gpus = 16, hbd = 8 }.gpu.name, "H100-SXM", "alias inside a cluster table")
  T.raises(function() hl.gpu("H1OO") end, "unknown gpu preset 'H1OO'", "did you mean 'h100-sxm'")
  -- the words of the job read case-insensitively like enum names ("TRTLLM"): "MAX" and "AUTO" were refused
  local job = { model = "llama-3.1-8b", cluster = { gpu = "H100", gpus = 8 }, parallel = { tp = 8 } }
  local with = T.merged
  T.eq(hl.simulate(with(job, { batch = "MAX" })).batch, hl.simulate(with(job, { batch = "max" })).batch, "batch = \"MAX\"")
  T.eq(hl.simulate(with(job, { parallel = "Auto" })).parallel.tp, hl.simulate(with(job, { parallel = "auto" })).parallel.tp,
       "parallel = \"Auto\"")
  local rows = hl.sweep { base = job, axes = { batch = { "Max", 8 } } }
  T.eq(rows[1].batch, hl.simulate(with(job, { batch = "max" })).batch, "sweep axis batch = \"Max\"")
  rows = hl.sweep { base = job, axes = { parallel = { "AUTO" } } }
  T.ok(rows[1].error == nil, "sweep axis parallel = \"AUTO\"")
end)

T.test("plain tables where a model, cluster or gpu object is expected", function()
  local ref = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } }
  local r = hl.simulate { model = "llama-3.1-8b", cluster = { gpu = "H100", gpus = 8, hbd = 8 }, parallel = { tp = 8 } }
  T.near(r.ttft_s, ref.ttft_s, 1e-12, "cluster as a table = the preset")
  local g = hl.simulate { model = "llama-3.1-8b", parallel = { tp = 8 },
                          cluster = { gpu = { base = "h100-sxm", hbm_tbs = 4 }, gpus = 8, hbd = 8 } }
  T.ok(g.tpot_s < ref.tpot_s, "a gpu table inside a cluster table (faster HBM, shorter TPOT)")
  local m = hl.simulate { model = { base = "llama-3.1-8b", layers = 16 }, cluster = "hgx-h100", parallel = { tp = 8 } }
  T.ok(m.ttft_s < ref.ttft_s, "a model table (half the layers)")
  local rows = hl.sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 } },
    axes = { cluster = { { gpu = "H100", gpus = 8, hbd = 8 }, "hgx-h200" } }, strict = true }
  T.near(rows[1].ttft_s, ref.ttft_s, 1e-12, "a table as a sweep axis value")
  local rows2 = hl.sweep { base = { model = { base = "llama-3.1-8b" }, cluster = { gpu = "H100", gpus = 8 },
    parallel = { tp = 8 } }, axes = { batch = { 1 } }, strict = true }
  T.near(rows2[1].ttft_s, ref.ttft_s, 1e-12, "tables in a sweep base")
  T.near(hl.roofline { gpu = { base = "h100-sxm" }, flops = 1e12, bytes = 1e9 }.time_s,
    hl.roofline { gpu = hl.gpu("h100-sxm"), flops = 1e12, bytes = 1e9 }.time_s, 1e-15, "hl.roofline gpu as a table")
end)

T.test("hl.plot.roofline takes a preset name; its labels do not overlap", function()
  local r = hl.simulate { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 8 }
  local dir = os.tmpname()
  os.remove(dir)
  hl.plot.roofline { gpu = "H100", ops = r.decode.breakdown, out = dir .. "/roof.png" }
  local text = io.open(dir .. "/roof.dat"):read("a")
  local labels = {}
  for line in text:gmatch("[^\n]+") do
    if not line:match("^#") then
      local name, _, y, lx, ly = line:match('^"(.-)"\t(%S+)\t(%S+)\t(%S+)\t(%S+)$')
      labels[#labels + 1] = { name = name, x = math.log(tonumber(lx), 10), y = math.log(tonumber(ly), 10),
                              py = math.log(tonumber(y), 10) }
    end
  end
  T.ok(#labels >= 6, "the operators are plotted: " .. #labels)
  -- the GEMMs of a decode step sit at nearly the same intensity and rate: their labels
  -- must still be a line (0.16 decade) apart
  for i = 1, #labels do
    T.ok(labels[i].y > labels[i].py, labels[i].name .. " label above its point")
    for j = i + 1, #labels do
      local a, b = labels[i], labels[j]
      T.ok(math.abs(a.x - b.x) >= 0.5 or math.abs(a.y - b.y) >= 0.16 - 1e-9,
        string.format("labels %s and %s overlap", a.name, b.name))
    end
  end
  hl.core.spawn { "rm", "-rf", "--", dir }
end)

T.test("a slow device is valid: a loaded CPU's 0.5 GB/s (hl.minitf.cpu_roofline under load)", function()
  T.eq(hl.gpu { base = "B200", hbm_bw = 5e8 }.hbm_bw, 5e8, "hbm_bw 0.5 GB/s accepted")
  T.raises(function() hl.gpu { base = "B200", hbm_bw = 1e5 } end, "'hbm_bw': 100000 is out of range")
end)

T.test("an invalid preset name says what a name may hold", function()
  -- was "gpus preset name 'H100 ' is not a valid name": the folder's plural, nothing on what is allowed
  T.raises(function() hl.gpu "H100 " end, "gpu preset name 'H100 ' is not a valid name (1 to 64 letters, digits")
  T.raises(function() hl.cluster "" end, "cluster preset name '' is not a valid name")
end)

T.test("every public hl function has hl.help", function()
  -- a newcomer types hl.help "x" for any x in hl: net_requirement, warnings, gpus, models and
  -- clusters answered "no help for ..."
  local help = require "hbdlab.help"
  for k, v in pairs(hl) do
    if type(v) == "function" then
      local text = help.text(k)
      T.ok(not text:match("^no help"), "hl.help '" .. k .. "': " .. text:sub(1, 60))
    end
  end
  T.ok(help.text("net_requirement"):find("hl.net_requirement{", 1, true), "net_requirement topic")
end)

T.done()
