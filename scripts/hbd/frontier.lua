-- What a larger HBD buys at serving level: the Pareto frontier of output tokens/s per GPU against
-- tokens/s per user (hl.frontier, docs/MODEL.md section 14) of the source article's model
-- (Qwen1.5-110B extended to 16 experts, as scripts/hbd/study.lua builds it) and of DeepSeek-V3, on
-- B200 systems whose HBD is 8, 16, 32, 64, 72 or 128 GPUs, at FP8 and FP4, aggregated and
-- disaggregated. Prints how far each frontier moves against HBD 8 at a few interactivity levels and
-- draws one chart per model and precision.
local here = (arg and arg[0] or "scripts/hbd/frontier.lua"):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local S = require "study"
local P = hl.params {
  models = { "qwen-moe,deepseek-v3", "models: qwen-moe (the article's Qwen1.5-110B + 16 experts), deepseek-v3" },
  hbds = { "8,16,32,64,72,128", "HBD sizes (each system has 128 GPUs, 144 for HBD 72: two NVL72 racks)" },
  precisions = { "fp8,fp4", "weight precisions" },
  modes = { "agg,disagg", "serving modes" },
  input = { 4096, "prompt tokens (a serving workload, not the article's 32K single batch)" },
  output = { 1024, "output tokens" },
  simulate = { 6, "frontier points per curve confirmed by hl.serve's simulation" },
  ttft_s = { 3, "TTFT limit (p90) of the best point" },
  scaleout_gbps = { 800, "scale-out NIC per GPU (the study's value)" },
  out = { "plots/out/hbd", "folder for the charts and the points" },
}

local function list(s)
  local t = {}
  for x in tostring(s):gmatch("[^,%s]+") do t[#t + 1] = tonumber(x) or x end
  return t
end

local v = S.values()
local function model_of(name)
  if name == "qwen-moe" then
    local base = hl.model(v.base_model)
    return base:with { name = "qwen1.5-110b-16e", experts = v.experts, topk = v.topk,
                       expert_ffn = math.floor(base.ffn * v.expert_ffn_ratio / 64) * 64 }
  end
  return hl.model(name)
end

local levels = { 10, 20, 50, 100 } -- tokens/s per user at which the frontiers are compared
for _, mname in ipairs(list(P.models)) do
  local model = model_of(mname)
  local systems = {}
  for _, h in ipairs(list(P.hbds)) do
    systems[#systems + 1] = { gpu = v.gpu, gpus = h == 72 and 144 or 128, hbd = h, name = "HBD " .. h,
                              scaleup_gbs = v.scaleup_gbs, scaleout_gbps = P.scaleout_gbps }
  end
  for _, prec in ipairs(list(P.precisions)) do
    local stem = string.format("%s/frontier_%s_%s", P.out, mname, prec)
    local r = hl.frontier { model = model, systems = systems, precision = prec, modes = list(P.modes),
                            input = P.input, output = P.output, simulate = P.simulate,
                            slo = { ttft_s = P.ttft_s }, out = stem }
    print(string.format("\n%s %s: output tokens/s per GPU on the frontier at a given tokens/s per user (x vs HBD 8)",
      model.name, prec))
    local head = { string.format("%-8s %-7s", "HBD", "mode") }
    for _, x in ipairs(levels) do head[#head + 1] = string.format("%16s", x .. " tok/s/user") end
    print(table.concat(head, " "))
    for _, mode in ipairs(list(P.modes)) do
      local ref = r.pareto[systems[1].name .. "|" .. prec .. "|" .. mode]
      for _, s in ipairs(systems) do
        local front = r.pareto[s.name .. "|" .. prec .. "|" .. mode]
        local cells = { string.format("%-8s %-7s", s.name, mode) }
        for _, x in ipairs(levels) do
          local function reach(f)
            local y
            for _, p in ipairs(f or {}) do if p.tps_per_user >= x and (not y or p.tps_per_gpu > y) then y = p.tps_per_gpu end end
            return y
          end
          local y, y0 = reach(front), reach(ref)
          cells[#cells + 1] = y and string.format("%9.0f (%4.2fx)", y, y0 and y / y0 or 0 / 0) or string.format("%16s", "-")
        end
        print(table.concat(cells, " "))
      end
    end
    print("figures: " .. stem .. ".png, " .. stem .. "_cost.png; points: " .. stem .. "_points.csv")
  end
end
