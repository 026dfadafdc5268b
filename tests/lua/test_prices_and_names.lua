-- Prices and names: an unknown GPU price shows as unknown (nil and a
-- warning, never a silent 0); GPU presets carry priced estimates.
local T = require "testlib"
local hl = require "hbdlab"
local warn = require "hbdlab.warn"

local function warned(fragment)
  for msg in pairs(warn.seen) do if msg:find(fragment, 1, true) then return true end end
  return false
end

T.test("a GPU without a price: cost fields nil, a warning, 'unknown' in print", function()
  local job = { model = "llama-3.1-8b", cluster = { gpu = "TPU-v5p", gpus = 8, hbd = 8 }, parallel = { tp = 8 } }
  local r = hl.simulate(job)
  T.ok(r.usd_per_mtok == nil and r.usd_per_mtok_in == nil and r.usd_per_mtok_out == nil, "USD fields nil")
  T.ok(r.cost.prefill_usd == nil and r.cost.capex_usd_per_gpu == nil, "r.cost USD fields nil")
  T.ok(r.joules_per_token == nil and r.power_w == nil, "no power either: J and W nil")
  T.ok(r.ttft_s > 0, "the rest of the result is there")
  T.ok(warned("GPU 'TPU-v5p' has no price"), "hl.simulate warned")
  T.ok(tostring(r):find("unknown USD/Mtok in", 1, true) ~= nil, "printed as unknown")
  -- a price given makes it known again
  local priced = hl.simulate { model = "llama-3.1-8b", parallel = { tp = 8 }, cluster = { gpus = 8, hbd = 8,
    gpu = { base = "TPU-v5p", capex_usd = 20000, power_w = 1000 } } }
  T.ok(priced.usd_per_mtok > 0 and priced.joules_per_token > 0, "capex_usd and power_w set: priced")
  -- a sweep over GPUs: nil cells for the unpriced one, files keep the columns
  warn.seen = {}
  local rows = hl.sweep { base = job, axes = { gpu = { "H100-SXM", "TPU-v5p" } } }
  T.ok(rows[1].usd_per_mtok > 0 and rows[2].usd_per_mtok == nil, "sweep rows")
  T.ok(warned("GPU 'TPU-v5p' has no price"), "hl.sweep warned")
  local csv = hl.rows.to_csv(hl.rows.filter(rows, { gpu = "TPU-v5p" }))
  T.ok(csv:match("^[^\n]*usd_per_mtok,") ~= nil, "a CSV of only unpriced rows still has the cost columns")
end)

T.test("GPU presets carry prices: H200 is no longer 22x cheaper than H100", function()
  -- Same job on H100 and H200: H200's per-GPU-hour capex is (36,000+2,500+5,000)/(29,000+2,500+5,000)
  -- = 1.19x H100's, its HBM 4.8/3.35 = 1.43x faster, same compute: cost per token ratio in
  -- [1.19/1.43, 1.19] = [0.83, 1.19] (electricity is a few % of it). Before: 0.012 vs 3.5 USD/Mtok.
  local function cost(gpu)
    return hl.simulate { model = "llama-3.1-8b", cluster = { gpu = gpu, gpus = 8, hbd = 8 }, parallel = { tp = 8 },
                         batch = 16, input = 1024, output = 256 }.usd_per_mtok
  end
  local ratio = cost("H200") / cost("H100-SXM")
  T.ok(ratio > 0.8 and ratio < 1.25, "H200 / H100 USD/Mtok = " .. ratio)
  for _, name in ipairs(hl.gpus()) do
    local g = hl.gpu(name)
    T.ok(g.capex_usd > 0 or g.cost_source:find("UNKNOWN", 1, true), name .. ": a price or UNKNOWN with the reason")
    if g.capex_usd > 0 then T.ok(g.cost_source:find("ESTIMATES", 1, true), name .. ": marked as an estimate") end
  end
end)

T.test("two imported HF models of one model_type do not share a name", function()
  local src = (os.getenv("HBDLAB_SOURCE_DIR") or ".") .. "/tests/data/hf/"
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir .. "/Qwen2.5-72B-Instruct && cp " .. src .. "qwen2.5-72b.json " .. dir ..
    "/Qwen2.5-72B-Instruct/config.json"))
  local a = hl.model.from_hf(src .. "qwen2.5-72b.json")     -- model_type qwen2, no _name_or_path
  local b = hl.model.from_hf(dir .. "/Qwen2.5-72B-Instruct") -- the same config in a folder
  T.eq(a.name, "qwen2.5-72b", "named after the file")
  T.eq(b.name, "Qwen2.5-72B-Instruct", "named after the folder")
  T.eq(hl.model.from_hf(src .. "qwen2.5-72b.json", { name = "mine" }).name, "mine", "name = overrides")
  T.eq(a:params().total, b:params().total, "the same model otherwise")
  os.execute("rm -rf " .. dir)
end)


T.test("README's Use example and the C path: no warning, no raw SI float, the header named", function()
  local f = assert(io.open((os.getenv("HBDLAB_SOURCE_DIR") or ".") .. "/README.md", "rb"))
  local readme = f:read("a")
  f:close()
  local code = readme:match("## Use\n\n```lua\n(.-)```")
  T.ok(code ~= nil, "README has a Use example")
  local out, saved = {}, print
  warn.seen = {}
  _G.print = function(...) out[#out + 1] = table.concat((function(...) local t = {} for i = 1, select("#", ...) do
    t[i] = tostring((select(i, ...))) end return t end)(...), "\t") end
  local ok, err = pcall(assert(load(code, "=README", "t", setmetatable({}, { __index = _G }))))
  _G.print = saved
  T.ok(ok, "the example runs: " .. tostring(err))
  T.ok(next(warn.seen) == nil, "and prints no warning: " .. tostring(next(warn.seen)))
  local text = table.concat(out, "\n")
  T.ok(not text:find("%d%d%d%d%d%d%d%d%d%d+%.%d"), "no raw SI float in its output: " .. text:sub(-80))
  T.ok(readme:find("<hbdlab/hbdlab.h>", 1, true), "README names the C header")
end)

T.test("the timeline chart labels its operators", function()
  local r = hl.simulate { model = "llama-3.1-8b", cluster = { gpu = "H100-SXM", gpus = 4, hbd = 2 },
                          parallel = { tp = 2, pp = 2 }, batch = 8, input = 2048 }
  local dir = os.tmpname()
  os.remove(dir)
  local out = hl.plot.timeline { events = r:trace(), out = dir .. "/tl.png" }
  local f = assert(io.open((out or dir .. "/tl.png"):gsub("%.png$", ".gp"), "rb"))
  local gp = f:read("a")
  f:close()
  T.ok(gp:find("with labels", 1, true), "a labels layer")
  T.ok(gp:find(":5 with labels", 1, true), "from the name column of the data")
  local g = io.open(dir .. "/tl.dat", "rb")
  local dat = g and g:read("a") or ""
  if g then g:close() end
  T.ok(dat:find("ffn_up_gate", 1, true), "the operator names are in the data the labels read")
  os.execute("rm -rf " .. dir)
end)

T.done()
