-- The chart gallery of the README: one figure of each plot kind (line, scatter, bar, heatmap,
-- roofline, timeline), every number computed here by hbdlab. The job is the HBD study's:
-- Qwen1.5-110B with 16 routed experts (top-2) on 128 x B200, batch 16, 31,744 prompt tokens and
-- 1,024 generated (its 32K context), TP 8 x EP 16, HBD 8..128, FP16/FP8/FP4.
-- Writes OUT/{line,scatter,bar,heatmap,roofline,timeline}.png, each with its .dat and .gp
-- (tools/regen_figures.sh --refresh runs it with --set out=... to refresh plots/gallery/).
local P = hl.params {
  out = { "plots/out/gallery", "folder for the six figures and their .dat/.gp" },
}

local m = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
local hbds = { 8, 16, 32, 64, 128 }
local function cluster(hbd) return hl.cluster { gpu = "B200", gpus = 128, hbd = hbd, scaleout_gbps = 800 } end
local job = { model = m, cluster = cluster(8), batch = 16, input = 31744, output = 1024, parallel = { tp = 8, ep = 16 } }
local rows = hl.sweep { base = job, axes = { hbd = hbds, precision = { "fp16", "fp8", "fp4" } } }
local title = "128 x B200, Qwen1.5-110B + 16 experts"

hl.plot.line { data = rows, x = "hbd", y = "ttft_s", by = "precision", logx = 2, xtics = hbds, yscale = 1e3,
  title = "TTFT vs HBD size (" .. title .. ")", xlabel = "HBD size (GPUs)", ylabel = "TTFT (ms)",
  out = P.out .. "/line.png" }

hl.plot.scatter { data = rows, x = "ttft_s", y = "tps_per_gpu", by = "precision",
  title = "Per-GPU throughput vs TTFT, one point per HBD size (" .. title .. ")", xlabel = "TTFT (s)",
  ylabel = "generated tokens/s per GPU", out = P.out .. "/scatter.png" }

-- prefill time at FP8 split into compute-bound operators, HBM-bound operators and collectives
-- (each summed over the pass before overlap, the result's prefill.compute_s / memory_s / comm_s)
local fp8 = hl.rows.filter(rows, { precision = "fp8" })
local parts = {}
for _, r in ipairs(fp8) do
  parts[#parts + 1] = { hbd = r.hbd, compute = r["prefill.compute_s"], memory = r["prefill.memory_s"],
                        comm = r["prefill.comm_s"] }
end
hl.plot.bar { data = parts, x = "hbd", y = { "compute", "memory", "comm" }, stacked = true,
  labels = { compute = "compute-bound operators", memory = "HBM-bound operators", comm = "collectives" },
  title = "Prefill time by kind vs HBD size (FP8, " .. title .. ")", xlabel = "HBD size (GPUs)",
  ylabel = "time (s)", out = P.out .. "/bar.png" }

hl.plot.heatmap { data = rows, x = "hbd", y = "precision", z = "tps_per_gpu",
  title = "Generated tokens/s per GPU (" .. title .. ")", xlabel = "HBD size (GPUs)", ylabel = "precision",
  zlabel = "tokens/s per GPU", out = P.out .. "/heatmap.png" }

-- one job of the sweep, simulated alone for its operator breakdown and its per-GPU trace
local function one(hbd)
  local j = {}
  for k, v in pairs(job) do j[k] = v end
  j.cluster, j.precision = cluster(hbd), "fp8"
  return hl.simulate(j)
end
hl.plot.roofline { gpu = "B200", precision = "fp8", ops = one(64).decode.breakdown,
  title = "The operators of decode on the B200 FP8 roofline (HBD 64, " .. title .. ")", out = P.out .. "/roofline.png" }

hl.plot.timeline { events = one(8):trace(),
  title = "Per-GPU timeline: one prefill layer pass, then one decode step (HBD 8, FP8)", out = P.out .. "/timeline.png" }

print("figures: " .. P.out .. "/{line,scatter,bar,heatmap,roofline,timeline}.png (each with its .dat and .gp)")
