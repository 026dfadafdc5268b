-- hl.help(): the API at a glance; hl.help "simulate" (or help(hl.simulate)):
-- fields, units and an example.
local core = require "hbdlab.core"

local M = {}

local topics = {
  { "gpu", "hl.gpu(name | {fields}) -> gpu", "An accelerator: a preset by name, or a table (optionally base = name).",
    'local g = hl.gpu { base = "H100-SXM", hbm_gb = 96, scaleup_gbs = 600 }', "gpu" },
  { "cluster", "hl.cluster(name | {gpu =, gpus =, hbd =, ...}) -> cluster", "GPUs in HBDs of `hbd` (default: one HBD); link fields override the GPU's.",
    'local c = hl.cluster { gpu = "B200", gpus = 128, hbd = 64, scaleout_gbps = 800 }', "cluster" },
  { "model", "hl.model(name | {fields}) -> model; m:with{...}; m:params(); m:kv_bytes_per_token(prec); m:state_bytes(prec); hl.model.from_hf(path)",
    "A decoder-only transformer (GQA/MHA, MLA, MoE).", 'local m = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }', "model" },
  { "simulate", "hl.simulate{...} -> result", "One inference job: prefill + decode on a cluster.",
    'local r = hl.simulate { model = m, cluster = c, precision = "fp8", batch = 16, input = 32768, output = 1024,\n' ..
    '                        parallel = { tp = 8, ep = 16 } }   -- or parallel = "auto", batch = "max"\nprint(r.ttft_s, r.tpot_s, r.tps_per_gpu)', "job" },
  { "serve", "hl.serve{model, cluster, parallel, rate | concurrency | trace, requests, input, output, slo, ...} -> result",
    "Requests over time on one instance: continuous batching, chunked prefill, paged KV, preemption; " ..
    "TTFT/TPOT/ITL/e2e/queue percentiles, throughput, goodput under slo = {ttft_s, tpot_s}.",
    'local r = hl.serve { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = 10,\n' ..
    '                     input = { dist = "uniform", min = 256, max = 4096 }, output = 256,\n' ..
    '                     slo = { ttft_s = 1, tpot_s = 0.05 } }\nprint(r.ttft_s.p99, r.goodput_rps)', "serve" },
  { "serve_pd_ratio", "hl.serve_pd_ratio{<hl.serve fields>, gpus = N, prefill = {parallel = {tp =}}, decode = {parallel = {tp =}}, slo =} -> {best, rows}",
    "Prefill/decode disaggregation: every split of N GPUs into prefill and decode instances, each split's capacity; the best split.",
    'local r = hl.serve_pd_ratio { model = "llama-3.1-70b", cluster = c, gpus = 16, prefill = { parallel = { tp = 4 } },\n' ..
    '                              decode = { parallel = { tp = 4 } }, input = 2048, output = 256, slo = { ttft_s = 1, tpot_s = 0.03 } }' },
  { "serve_sweep", "hl.serve_sweep{base = {<hl.serve fields>}, axes = {name = {values}}, zip} -> rows",
    "A serving sweep: hl.serve at every combination of the axes. An axis is any serve field (rate, concurrency, max_seqs,\n" ..
    "token_budget, chunk, block_tokens, input.mean, slo.ttft_s, ...) or any instance field (tp, precision, cluster, ...);\n" ..
    "rows hold the axes and the result's fields flat (\"ttft_s.p99\"). mode = \"analytical\" in base: steady-state rows.",
    'local rows = hl.serve_sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 1 }, output = 128 },\n' ..
    '                              axes = { rate = { 5, 10, 20 }, max_seqs = { 64, 256 } } }\n' ..
    'hl.rows.print(rows, { "rate", "max_seqs", "ttft_s.p99", "tpot_s.p99" })' },
  { "serve_capacity", "hl.serve_capacity{<hl.serve fields>, slo =, target = 0.9, tolerance = 0.02, "
      .. "mode = \"simulate\" | \"analytical\", min_duration = 60, max_requests = 1e5} -> {rate, result, probes, lower_bound}",
    "The highest Poisson arrival rate whose SLO attainment reaches `target` (bisection to tolerance >= 1e-3; analytical mode:\n" ..
    "steady state within the SLO). Each simulated probe offers min_duration s of arrivals, at most max_requests requests;\n" ..
    "when that stops the search, rate is a lower bound and lower_bound says why.",
    'local c = hl.serve_capacity { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 },\n' ..
    '                              input = 1024, output = 256, slo = { ttft_s = 1, tpot_s = 0.05 } }\nprint(c.rate, c.result.goodput_rps)' },
  { "frontier", "hl.frontier{model, systems, precision, input, output, slo, modes, ...} -> {points, pareto, best, ratios, launch}",
    "Pareto frontier of output tokens/s per GPU vs tokens/s per user over every mapping, load and prefill/decode split " ..
    "of each system (docs/MODEL.md section 14); `hbdlab frontier cfg.json` takes the same fields as JSON.",
    'local r = hl.frontier { model = "llama-3.1-70b", systems = { { gpu = "H200", gpus = 8, hbd = 8 } },\n' ..
    '                        precision = "fp8", input = 1024, output = 1024, slo = { ttft_s = 2 } }\nprint(r)',
    "frontier" },
  { "result", "hl.help \"result\": every field of hl.simulate's result; hl.sweep rows carry them flat (\"prefill.comm_s\")",
    "Every result field with its SI unit; sweep rows, CSV columns, JSON and hl.simulate use these names.",
    'print(r.prefill.comm_share, rows[1]["prefill.comm_share"])', "result" },
  { "calibrate", "hl.calibrate{cases, params, bounds, start, fit, loo} -> {params, cases, before, after, held_out, loo, ...}",
    "Least-squares fit (log error, GSL) of any numeric GPU/cluster/model/job field to measured cases " ..
    "{name, measured, config = {simulate fields}, metric = \"tpot_s\"} or {name, measured, predict = function(p)}; " ..
    "per-case errors before/after and leave-one-out. CLI: hbdlab calibrate cases.json.",
    'local res = hl.calibrate { cases = { { measured = 0.0186, metric = "tpot_s", config = job } },\n' ..
    '                           params = { "step_overhead" }, bounds = { step_overhead = { 0, 0.01 } } }\n' ..
    'require("hbdlab.calibrate").print(res)' },
  { "collective", "hl.collective{op, bytes, ranks, cluster, algo, placement, imbalance} -> {time_s, algo, algbw, busbw, ...}",
    "One collective: allreduce, allgather, reducescatter, alltoall, broadcast, reduce, gather, scatter, sendrecv; " ..
    "algo auto | nccl | ring | tree | direct | halving_doubling | in_switch | hierarchical | oneshot | twoshot | " ..
    "trtllm_ar | vllm_ar (engines' custom all-reduce; docs/MODEL.md 5.1).",
    'hl.collective { op = "allreduce", bytes = 1e9, ranks = 16, cluster = c }' },
  { "roofline", "hl.roofline{gpu, precision, framework, kernels, m, n, k | kind = attention | moe + shape | flops, bytes} -> {time_s, ..., bound}",
    "Time of one operator on one GPU.", 'hl.roofline { gpu = "H100-SXM", m = 16, n = 8192, k = 8192, precision = "fp8" }' },
  { "sweep", "hl.sweep{base = {...}, axes = {name = {values}}, zip, threads, strict} -> rows; hl.sweep(axes, fn)",
    "Every combination of the axes, in C on all cores; rows hold the axes and every result field (prefill.comm_share, ...),\n" ..
      "read on access from the C points (a row is a view: core.sweep_row_table(row) copies it into a table).",
    'local rows = hl.sweep { base = job, axes = { hbd = { 8, 16, 32, 64, 128 }, precision = { "fp16", "fp8", "fp4" } } }' },
  { "sweep_to_csv", "hl.sweep_to_csv{base, axes, out = 'x.csv', columns, zip, threads, progress} -> rows written, "
      .. "interrupted (hl.interrupted() handles a Ctrl-C; unhandled, the host exits 130)",
    "A sweep of any size streamed to CSV with bounded memory (65,536 points at a time); Ctrl-C keeps the rows done.",
    'hl.sweep_to_csv { base = job, axes = { input = inputs, hbd = { 8, 64 } }, out = "big.csv" }' },
  { "minitf", "hl.minitf.check{model, tp, ep, pp, batch, prompt, new} -> report; hl.minitf.run{...}; hl.minitf.cpu_roofline{}",
    "The native CPU mini-transformer: sharded runs equal the unsharded one, and its counted FLOPs and bytes equal the analytical model's.",
    "print(hl.minitf.check {})" },
  { "rows", "hl.rows.filter/sort/group/pivot/columns/format/print/write/write_csv/write_json/write_jsonl/read_csv/read_json/read_jsonl",
    "Results helpers; files are written atomically; print and columns put a sweep's axes first. Under --shard I/N,\n" ..
    "every file gets _shardIofN before the extension; CSV files start with a fingerprint line (hbdlab merge checks and joins them).",
    'hl.rows.print(hl.rows.sort(rows, "-tps_per_gpu"), { "hbd", "precision", "tps_per_gpu" })' },
  { "plot", "hl.plot.line/scatter/bar/heatmap/roofline/timeline/tornado{..., out = 'x.png|svg|pdf'}",
    "gnuplot figures: writes x.dat and a self-contained x.gp beside the image. Options:\n" ..
    "  every chart   out (.png, .svg, .pdf; folder created), title, xlabel, ylabel, logx, logy (true or a base)\n" ..
    "  line, scatter data, x, y, by (a series per value; numbers with a unit in SI: 50 GB/s), label,\n" ..
    "                xscale, yscale (labels follow: ttft_s with yscale = 1e3 -> 'ttft (ms)'), xtics = {...},\n" ..
    "                xformat, yformat, ymin (y starts at 0 unless logy, ymin or data below 0)\n" ..
    "  bar           data, x, y (a field or a list of fields), by, stacked, labels, yscale\n" ..
    "  heatmap       data, x, y, z, zscale, zlabel (each cell labelled with its value)\n" ..
    "  roofline      gpu (object, preset name or table of fields), ops (r.decode.breakdown), precision\n" ..
    "  timeline      events (r:trace())\n" ..
    "  tornado       data, name, low, high, base, low_label, high_label (largest span on top)",
    'hl.plot.line { data = rows, x = "hbd", y = "ttft_s", by = "precision", logx = 2, out = "plots/out/ttft.png" }' },
  { "params", "hl.params{name = {default, help}} -> values", "Script parameters; `--set name=value` overrides, `--help` lists.",
    'local P = hl.params { gpus = { 128, "cluster size" } }' },
  { "trace", "r:trace() -> events; hl.trace.write(r, 'x.json')", "Per-GPU events of one prefill layer and one decode step; Chrome/Perfetto JSON.",
    'hl.trace.write(r, "trace.json")  -- open in ui.perfetto.dev' },
  { "walkthrough", "hl.walkthrough(r | {simulate fields}, 'walk.html' [, {share = 0.10}]) -> path",
    "The job's communication flow as a self-contained HTML page: GPUs by HBD and stage, Next/Previous through\n" ..
    "prompt, each stage's prefill, PP hand-offs, MoE All-to-All, logits AllGather, sampling, a decode step; the\n" ..
    "nine primitives; the network each traffic class needs. Numbers are the result's breakdown rows. CLI:\n" ..
    "hbdlab walkthrough CONFIG.json -o walk.html. Examples: docs/walkthrough/ (scripts/walkthrough_pages.lua).",
    'hl.walkthrough(r, "walk.html")  -- inside a notebook the page is embedded in the report' },
  { "cost", "r.usd_per_mtok_in, r.usd_per_mtok_out, r.usd_per_mtok, r.joules_per_token, r.power_w, r.cost.{...}",
    "Cost and energy per token of every result (docs/MODEL.md section 11). Prices are estimates with sources in each\n" ..
    "GPU preset's cost_source; override gpu capex_usd, scaleup_usd, scaleout_usd, power_w, idle_w and cluster\n" ..
    "pue, usd_per_kwh, amort_years. scripts/hbd/cost.lua prices the HBD study.",
    'local c = hl.cluster { gpu = "B200", gpus = 64, hbd = 64, scaleup_usd = 6000, usd_per_kwh = 0.12 }' },
  { "interrupted", "hl.interrupted() -> bool; hl.warnings(false)",
    "hl.interrupted(): whether Ctrl-C / SIGTERM stopped a sweep since the last call (asking handles it; a script that\n" ..
    "never asks exits 130 after it ends). hl.warnings(false) silences the warnings for silent defaults.", "" },
  { "kv_capacity", "hl.kv_capacity{hbm_bytes, mem_util, weights_bytes, workspace_bytes, kv_token_bytes, context, block_tokens, mem_util_of}",
    "How many tokens and sequences of KV cache fit; paged blocks and fragmentation.", "" },
  { "net_requirement", "hl.net_requirement{count, bytes, factor, compute_s, latency_s, share} -> {budget_s, bandwidth, max_latency_s}",
    "The network a traffic class needs: `count` collectives of `bytes` (x `factor` on the wire) per step of\n" ..
    "`compute_s` stay under `share` of the step; bandwidth in B/s (inf when latency alone exceeds the budget).",
    "local need = hl.net_requirement { count = 160, bytes = 16e6, factor = 2, compute_s = 0.02, latency_s = 5e-6, share = 0.2 }" },
  { "presets", "hl.gpus(), hl.clusters(), hl.models() -> names",
    "The preset names (built in, and $HBDLAB_PRESETS/{gpus,clusters,models}/<name>.json); aliases such as H100 or\n" ..
    "NVL72 and any letter case are accepted by hl.gpu, hl.cluster and hl.model.", "print(table.concat(hl.gpus(), \" \"))" },
}
-- functions documented under another topic
local aliases = { warnings = "interrupted", gpus = "presets", clusters = "presets", models = "presets" }

local by_name = {}
for _, t in ipairs(topics) do by_name[t[1]] = t end

local function field_line(f, name)
  local what = f.help .. (f.values and (" (" .. f.values:gsub("|", ", ") .. ")") or "")
  if f.default ~= nil then
    what = what .. "; default " .. (type(f.default) == "number" and string.format("%g", f.default) or tostring(f.default))
  end
  return string.format("  %-18s %-8s %-4s %s", name or f.name, f.type, f.unit ~= "" and f.unit or "-", what)
end

-- The job's fields come from the core's field table (core/src/job.c), the
-- search options from core/src/plan.c: nothing here repeats a field name.
local function job_text()
  local lines = {
    "  model              object or preset name",
    "  cluster            object or preset name",
    "  parallel           {tp, pp, ep, dp, etp, gpus} (the parallel.* fields below) or \"auto\"",
    "  spec_draft_model   object or preset name: a draft model of its own for speculative decoding (same vocabulary; " ..
      "the target's TP on its GPUs; not with spec_draft_layers; docs/MODEL.md 6.2)",
    "  Each field below may be given by name (tp = 2) or by its path (parallel = {tp = 2}).",
  }
  for _, f in ipairs(core.fields("job")) do
    lines[#lines + 1] = field_line(f, f.path and (f.name .. ", " .. f.path) or f.name)
  end
  lines[#lines + 1] = "  (batch = \"max\": the largest batch that fits; overlap = x sets overlap_prefill and " ..
                      "overlap_decode, overlap = {prefill =, decode =} each)"
  for _, f in ipairs(core.fields("plan")) do lines[#lines + 1] = field_line(f) end
  local names = {}
  for _, f in ipairs(core.result_fields()) do names[#names + 1] = f.name end
  lines[#lines + 1] = "Result (hl.help \"result\" for units): " .. table.concat(names, ", ") ..
                      "; prefill/decode.{breakdown, events}; with parallel = \"auto\" also candidates, objective"
  return table.concat(lines, "\n")
end

-- The result's fields come from the core's result table (core/src/result.c).
local function result_text()
  local lines = {}
  for _, f in ipairs(core.result_fields()) do
    local what = f.alias_of and string.format("%s x %g (friendly alias)", f.alias_of, f.scale) or f.help
    if f.values then what = what .. " (" .. f.values:gsub("|", ", ") .. ")" end
    lines[#lines + 1] = string.format("  %-30s %-8s %-5s %s", f.name, f.type, (f.unit or "") ~= "" and f.unit or "-", what)
  end
  lines[#lines + 1] = "  prefill/decode.breakdown rows (core hl_item): name, kind, time_s, bytes, flops, calls, per_pass, " ..
                      "path_factor,\n    measured, measured_calls (kernels = \"dir\");" ..
                      "\n    collectives also op, tier, ranks, ranks_per_hbd, hbds and per call call_bytes, " ..
                      "call_time_s, call_latency_s,\n    call_scaleup_bytes, call_scaleout_bytes (docs/LUA_API.md)"
  return table.concat(lines, "\n")
end

-- Serving's fields come from the core's serve field table and its result
-- tables (core/src/serve_fields.c): nothing here repeats a field name.
local function serve_text()
  local lines = {
    "  model, cluster, parallel (explicit), precision, overlap, ...   the instance: hl.simulate's fields (hl.help \"simulate\")",
    "  Each field below by name (input_min = 100) or in its group (input = {dist = \"uniform\", min = 100, max = 900});",
    "  input/output = N is a fixed length, \"trace\" the trace's; slo = {ttft_ms =, tpot_ms =} in ms too.",
  }
  for _, f in ipairs(core.fields("serve")) do
    lines[#lines + 1] = field_line(f, f.path and (f.name .. ", " .. f.path) or f.name)
  end
  local function result_lines(kind, title)
    lines[#lines + 1] = title
    for _, f in ipairs(core.serve_result_fields(kind)) do
      lines[#lines + 1] = string.format("  %-26s %-8s %-4s %s", f.name, f.type, f.unit ~= "" and f.unit or "-", f.help)
    end
  end
  result_lines("result", "Result (r.ttft_s.p99, ...; kv_series columns t_s, kv_util, running, waiting):")
  result_lines("request", "per_request rows (keep_requests = true):")
  result_lines("step", "step_log rows (keep_steps = true):")
  result_lines("steady", "mode = \"analytical\" result:")
  lines[#lines + 1] = "Sweeps: hl.serve_sweep{base = {...}, axes = {rate = {...}, max_seqs = {...}, tp = {...}}} (hl.help \"serve_sweep\")"
  return table.concat(lines, "\n")
end

local function fields_text(kind)
  if kind == "job" then return job_text() end
  if kind == "serve" then return serve_text() end
  if kind == "result" then return result_text() end
  if kind == "frontier" then
    local lines = {}
    for _, f in ipairs(require("hbdlab.frontier").fields) do
      local d = f[2]
      if type(d) == "table" then d = table.concat(d, ", ") end
      lines[#lines + 1] = string.format("  %-13s %s%s", f[1], f[3], d ~= nil and (" (default " .. tostring(d) .. ")") or "")
    end
    return table.concat(lines, "\n")
  end
  local lines = {}
  for _, f in ipairs(core.fields(kind)) do lines[#lines + 1] = field_line(f) end
  return table.concat(lines, "\n")
end

function M.text(topic)
  if topic == nil then
    local lines = { "hbdlab " .. core.version() .. " - the API (hl.help \"name\" for details):" }
    for _, t in ipairs(topics) do lines[#lines + 1] = "  " .. t[2] end
    lines[#lines + 1] = "Friendly units in field names: scaleout_gbps (Gbit/s), scaleup_gbs (GB/s), hbm_tbs, hbm_gb, *_tflops, *_us."
    lines[#lines + 1] = "Lists: hl.gpus(), hl.clusters(), hl.models(). Docs: docs/MODEL.md, docs/LUA_API.md."
    return table.concat(lines, "\n")
  end
  local t = by_name[topic] or by_name[aliases[topic] or ""]
  if topic == "help" then return "hl.help() lists the API; hl.help \"name\" explains one function or topic" end
  if not t then
    local names = {}
    for _, x in ipairs(topics) do names[#names + 1] = x[1] end
    return "no help for '" .. tostring(topic) .. "'; topics: " .. table.concat(names, ", ")
  end
  local out = { t[2], t[3] }
  if t[5] then out[#out + 1] = "Fields:\n" .. fields_text(t[5]) end
  if t[4] ~= "" then out[#out + 1] = "Example:\n  " .. t[4]:gsub("\n", "\n  ") end
  return table.concat(out, "\n")
end

--- hl.help() / hl.help "simulate" / hl.help(hl.simulate)
function M.help(topic)
  if type(topic) == "function" then
    local hl = require "hbdlab"
    for k, v in pairs(hl) do if v == topic then topic = k end end
    if type(topic) == "function" then topic = "?" end
  elseif type(topic) == "table" then
    local hl = require "hbdlab"
    for k, v in pairs(hl) do if v == topic then topic = k end end
  end
  print(M.text(topic))
end

return M
