-- hbdlab bench: how fast the workbench is, measured (never asserted).
--   hbdlab bench [--json] [--quick]
local core = require "hbdlab.core"

local M = {}

local function reference(hl)
  return {
    -- the HBD study's job: 32K prompt + 1K output on a context extended like the experts (as scripts/hbd/study.lua)
    model = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2, max_position = 65536 },
    cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 },
    precision = "fp8", batch = 16, input = 32768, output = 1024, parallel = { tp = 8, ep = 16 },
  }
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function exe()
  local a = _G.arg and _G.arg[-1] or nil
  -- the host runs as arg[-1] for subcommands; fall back to the PATH
  return (a and a ~= "" and a) or "hbdlab"
end

-- The Lua overhead of hl.simulate over hl_sim_run of the same job, as paired differences: `pairs`
-- times, one batch of `n` hl_sim_run calls (summary mode, as hl.simulate runs) and one batch of `n`
-- hl.simulate calls back to back, in alternating order, each pair giving (Lua - C) per call. The
-- median of the differences follows the overhead while the machine's load drifts, which the
-- difference of two medians taken a second apart did not (it read 1.7-4.4 us on a loaded machine).
-- Returns the median difference, its quartiles, and the medians of the two sides.
local function lua_overhead(hl, job, pairs, n)
  hl.simulate(job) -- first call: preset names resolved, warnings decided, result keys interned
  local d, lua_t, c_t = {}, {}, {}
  local function lua_batch()
    local t0 = core.clock()
    for _ = 1, n do hl.simulate(job) end
    return (core.clock() - t0) / n
  end
  local function c_batch() return core.bench_latency(job, n, n, true).median_s end
  for k = 1, pairs do
    local c, l
    if k % 2 == 1 then c = c_batch(); l = lua_batch() else l = lua_batch(); c = c_batch() end
    d[k], lua_t[k], c_t[k] = l - c, l, c
  end
  table.sort(d)
  return median(d), d[(#d + 3) // 4], d[(3 * #d + 3) // 4], median(lua_t), median(c_t)
end

-- The instructions a child `hbdlab ARGS...` executes, counted by callgrind (its "summary:" line),
-- or nil when valgrind is not on the PATH or the child fails: a count does not move with the
-- machine's load, as wall times do on a shared machine.
local function instructions(...)
  local out = os.tmpname()
  local cmd = { "valgrind", "--tool=callgrind", "--callgrind-out-file=" .. out, exe(), ... } -- `...` last: all of it
  cmd.stdout, cmd.stderr = "/dev/null", "/dev/null"
  local code = core.spawn(cmd)
  local f = code == 0 and io.open(out) or nil
  local n
  if f then
    n = tonumber(f:read("a"):match("\nsummary: (%d+)"))
    f:close()
  end
  os.remove(out)
  return n
end

-- The job of the Lua-overhead rows: the reference job's objects, or the same with preset names
-- (resolved once, then cached; input 31,744 + output 1,024 stays within the preset's context of
-- 32,768, so no warning).
local function overhead_job(hl, names)
  if not names then return reference(hl) end
  return { model = "qwen1.5-110b", cluster = "hgx-b200", precision = "fp8", batch = 16, input = 31744,
           output = 1024, parallel = { tp = 8 } }
end

--- bench.probe(what, names, n): the body the instruction counts run in a child: 200 warm-up
--- hl.simulate calls, then n more ("lua"), n hl_sim_run calls in summary mode ("c") or nothing.
function M.probe(what, names, n)
  local hl = require "hbdlab"
  local job = overhead_job(hl, names == "names")
  for _ = 1, 200 do hl.simulate(job) end
  n = tonumber(n)
  if what == "lua" then for _ = 1, n do hl.simulate(job) end
  elseif what == "c" then core.bench_latency(job, n, n, true) end
end

-- The overhead in instructions per call: (lua - none - (c - none)) / n, or nil without valgrind.
local function overhead_instructions(names, n)
  local counts = {}
  for _, what in ipairs { "none", "lua", "c" } do
    counts[what] = instructions("-e", string.format("require('hbdlab.bench').probe(%q, %q, %d)", what, names, n))
    if not counts[what] then return nil end
  end
  return (counts.lua - counts.c) / n
end

-- One progress line per phase on stderr (the full run takes over a minute; stdout stays the report).
local phases = 9
local function phase(i, what)
  io.stderr:write(string.format("bench %d/%d: %s\n", i, phases, what))
  io.stderr:flush()
end

-- The source tree whose scripts/hbd/reproduce.lua the bench runs: $HBDLAB_SOURCE_DIR, else ".".
function M.source_dir()
  local d = os.getenv("HBDLAB_SOURCE_DIR")
  return (d == nil or d == "") and "." or d
end

function M.run(opts)
  local hl = require "hbdlab"
  local quick = opts.quick
  if opts.progress == false then phase = function() end end
  local job = reference(hl)
  local r = {}
  phase(1, "hl_sim_run latency")
  local lat = core.bench_latency(job, quick and 2000 or 400000, 100)
  r.sim_latency_median_s, r.sim_latency_p99_s = lat.median_s, lat.p99_s
  local n_inputs = quick and 200 or 66667 -- x 15 (HBD x precision) = 3,000 or 1,000,005 points
  phase(2, "sweep throughput, 1 thread and all cores")
  local _, pps1, points = core.bench_sweep(job, n_inputs, 1)
  local _, ppsall = core.bench_sweep(job, n_inputs, 0)
  r.sweep_points = points
  r.sweep_points_per_s_1thread, r.sweep_points_per_s_all = pps1, ppsall
  -- Lua overhead: one hl.simulate minus one hl_sim_run of the same work, paired batches
  -- (hl.simulate runs in summary mode and builds the breakdown only when read)
  phase(3, "hl.simulate from Lua")
  local pairs_n, per_batch = quick and 100 or 2000, 200
  r.lua_call_overhead_pairs, r.lua_call_overhead_batch = pairs_n, per_batch
  r.lua_call_overhead_s, r.lua_call_overhead_q1_s, r.lua_call_overhead_q3_s, r.lua_call_s,
    r.sim_latency_summary_median_s = lua_overhead(hl, overhead_job(hl, false), pairs_n, per_batch)
  -- the same with the model and cluster given as preset names
  r.lua_call_names_overhead_s, r.lua_call_names_overhead_q1_s, r.lua_call_names_overhead_q3_s, r.lua_call_names_s,
    r.sim_latency_names_summary_median_s = lua_overhead(hl, overhead_job(hl, true), pairs_n, per_batch)
  local probe_n = quick and 200 or 1000
  r.lua_call_overhead_instructions = overhead_instructions("objects", probe_n)
  r.lua_call_names_overhead_instructions = overhead_instructions("names", probe_n)
  -- start-up: `hbdlab -e ''` (issue 28: under 2.5 ms), waited for without polling (core.bench_spawn)
  phase(3, "start-up of hbdlab -e ''")
  r.startup_runs = quick and 50 or 200
  local st = core.bench_spawn({ exe(), "-e", "" }, r.startup_runs)
  r.startup_median_s, r.startup_min_s = st.median_s, st.min_s
  r.startup_instructions = instructions("-e", "")
  -- the whole HBD reproduction (entry script with every figure), as a user runs it
  phase(4, "the HBD reproduction (scripts/hbd/reproduce.lua)")
  local src = M.source_dir()
  local t0 = core.clock()
  local outdir = os.tmpname()
  os.remove(outdir)
  local code = core.spawn { exe(), src .. "/scripts/hbd/reproduce.lua", "--set", "out=" .. outdir, stdout = "/dev/null" }
  core.spawn { "rm", "-rf", "--", outdir }
  r.hbd_repro_wall_s = core.clock() - t0
  r.hbd_repro_ok = code == 0
  -- 10M points (50,000 in --quick) streamed to CSV in a child process: its peak RSS
  local npts = quick and 50000 or 10000000
  local csv = os.tmpname()
  local script = string.format([[
    local m = hl.model("qwen1.5-110b"):with { experts = 16, topk = 2 }
    local inputs = {}
    for i = 1, %d do inputs[i] = 1024 + i end
    local n = hl.sweep_to_csv { base = { model = m, cluster = hl.cluster { gpu = "B200", gpus = 128, hbd = 64 },
      precision = "fp8", batch = 16, output = 1024, parallel = { tp = 8, ep = 16 } },
      axes = { { "hbd", { 8, 16, 32, 64, 128 } }, { "input", inputs } }, out = %q }
    assert(n == %d, "rows written: " .. n)]], npts // 5, csv, npts)
  phase(5, string.format("%d points streamed to CSV", npts))
  t0 = core.clock()
  local code2, _, rss = core.spawn { exe(), "-e", script, stdout = "/dev/null" }
  r.stream_points = npts
  r.stream_wall_s = core.clock() - t0
  r.stream_points_per_s = npts / r.stream_wall_s -- hl.sweep_to_csv throughput, child start included
  r.stream_ok = code2 == 0
  r.stream_10m_rss_bytes = rss
  local f = io.open(csv, "rb")
  if f then r.stream_csv_bytes = f:seek("end"); f:close() end
  os.remove(csv)
  -- an in-memory hl.sweep (rows: views over the C points) of 1,000,000 points (20,000 in --quick)
  -- in a child process, against one of a single point: peak RSS per point, and what 10 M points
  -- take by it and by the budget check's estimate (issue 28; a small job, so it runs in seconds)
  local mem_script = [[
    local n = %d
    local batches, inputs = {}, {}
    for i = 1, 100 do batches[i] = i end
    for i = 1, math.max(n // 100, 1) do inputs[i] = 64 + i end
    local rows = hl.sweep { base = { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, output = 16 },
      axes = { input = inputs, batch = n == 1 and { 1 } or batches }, progress = false }
    assert(#rows == n, "rows: " .. #rows)]]
  local mem_points = quick and 20000 or 1000000
  phase(5, string.format("in-memory sweep of %d points: peak RSS", mem_points))
  local _, _, rss_one = core.spawn { exe(), "-e", string.format(mem_script, 1), stdout = "/dev/null" }
  t0 = core.clock()
  local code_m, _, rss_mem = core.spawn { exe(), "-e", string.format(mem_script, mem_points), stdout = "/dev/null" }
  r.sweep_mem_wall_s = core.clock() - t0
  r.sweep_mem_ok = code_m == 0
  r.sweep_mem_points, r.sweep_mem_rss_bytes = mem_points, rss_mem
  if rss_mem and rss_one then
    r.sweep_mem_bytes_per_point = (rss_mem - rss_one) / mem_points
    r.sweep_10m_projected_bytes = rss_one + 1e7 * r.sweep_mem_bytes_per_point
  end
  r.sweep_10m_estimate_bytes = core.sweep_memory_estimate(1e7)
  r.sweep_memory_budget_bytes = core.sweep_memory_budget()
  r.sweep_10m_fits = r.sweep_10m_estimate_bytes <= r.sweep_memory_budget_bytes
  -- hbdlab merge of two CSV files of 200 MB each (2 MB in --quick), in a child process: its
  -- wall time and peak RSS (the rows: a sweep's columns, written here)
  local shard_bytes = quick and 2e6 or 200e6
  local row = "64,33792,0.08565090469239227,0.007546685635562683,7.805910309873017,2120.136013696168," ..
    "16.397831248215077,0.7285483236722466,0.5104010571634977,14765503744,true,\n"
  local block = string.rep(row, 10000)
  local parts = {}
  for k = 1, 2 do
    parts[k] = os.tmpname()
    local out = assert(io.open(parts[k], "wb"))
    out:write("hbd,input,ttft_s,tpot_s,total_s,decode_tps,tps_per_gpu,prefill.comm_share,decode.comm_share," ..
      "memory.per_gpu_bytes,memory.fits,error\n")
    for _ = 1, math.ceil(shard_bytes / #block) do out:write(block) end
    out:close()
  end
  local merged = os.tmpname()
  t0 = core.clock()
  local code3, _, rss3 = core.spawn { exe(), "merge", parts[1], parts[2], "-o", merged }
  r.merge_wall_s = core.clock() - t0
  r.merge_ok = code3 == 0
  r.merge_rss_bytes = rss3
  local mf = io.open(merged, "rb")
  if mf then r.merge_bytes = mf:seek("end"); mf:close() end
  os.remove(parts[1]); os.remove(parts[2]); os.remove(merged)
  -- serving: 100,000 Poisson requests (5,000 in --quick) through the continuous-batching
  -- scheduler, at a light load (many small iterations) and near saturation (full batches)
  r.serve_requests = quick and 5000 or 100000
  for k, load in ipairs { { "light", 2 }, { "heavy", 14 } } do
    phase(5 + k, string.format("hl.serve, %d requests, %s load", r.serve_requests, load[1]))
    t0 = core.clock()
    local sr = hl.serve { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = load[2],
      requests = r.serve_requests, input = { dist = "uniform", min = 128, max = 2048 },
      output = { dist = "uniform", min = 16, max = 512 } }
    r["serve_" .. load[1] .. "_wall_s"] = core.clock() - t0
    r["serve_" .. load[1] .. "_steps"] = sr.steps
  end
  -- the same requests on 8 replicas (one H100 each, Llama-3.1-8B) behind a least-loaded router:
  -- eight schedulers on one event clock
  t0 = core.clock()
  local sr8 = hl.serve { model = "llama-3.1-8b", cluster = "hgx-h100", replicas = 8, router = "least_loaded",
    rate = 8 * 6, requests = r.serve_requests, input = { dist = "uniform", min = 128, max = 2048 },
    output = { dist = "uniform", min = 16, max = 512 } }
  r.serve_replicas_wall_s = core.clock() - t0
  r.serve_replicas_steps = sr8.steps
  -- scale (issue 24): 10,000,000 requests at load (14 req/s, the near-saturation row's) and
  -- 1,000,000 at light load (2 req/s), CPU seconds (os.clock) against targets of 5 s and 1 s;
  -- --quick runs 1/1000 of each. Peak memory ~40 B a request (compact records: ~400 MB at 1e7).
  for _, sc in ipairs { { "load", 14, quick and 10000 or 10000000, "load" }, { "light", 2, quick and 1000 or 1000000, "light load" } } do
    phase(7, string.format("hl.serve, %d requests at %s (scale)", sc[3], sc[4]))
    local c0 = os.clock()
    local ss = hl.serve { model = "llama-3.1-70b", cluster = "hgx-h100", parallel = { tp = 8 }, rate = sc[2],
      requests = sc[3], input = { dist = "uniform", min = 128, max = 2048 },
      output = { dist = "uniform", min = 16, max = 512 } }
    r["serve_scale_" .. sc[1] .. "_cpu_s"] = os.clock() - c0
    r["serve_scale_" .. sc[1] .. "_requests"] = sc[3]
    r["serve_scale_" .. sc[1] .. "_steps"] = ss.steps
  end
  -- the frontier: a full aggregated + disaggregated search (with its confirming simulations) of
  -- Llama-3.1-70B on 8 H200 and DeepSeek-V3 on 64 B200 (the first only in --quick)
  local searches = {
    { "frontier_8gpu", "llama-3.1-70b", { gpu = "H200", gpus = 8, hbd = 8 } },
    { "frontier_64gpu", "deepseek-v3", { gpu = "B200", gpus = 64, hbd = 8 } },
  }
  for i, sch in ipairs(searches) do
    if not quick or i == 1 then
      if i == 1 then phase(8, "hl.frontier searches") end
      t0 = core.clock()
      local fr = hl.frontier { model = sch[2], systems = { sch[3] }, precision = "fp8", input = 1024, output = 1024 }
      r[sch[1] .. "_wall_s"] = core.clock() - t0
      local sims = 0
      for _, p in ipairs(fr.points) do if p.simulated then sims = sims + 1 end end
      r[sch[1] .. "_points"], r[sch[1] .. "_simulated"] = #fr.points, sims
    end
  end
  -- the CPU roofline check of the mini-transformer (predicted vs measured on this CPU)
  phase(9, "the CPU roofline of the mini-transformer")
  local cr = require("hbdlab.minitf").cpu_roofline(quick and { prompt = 16, new = 4, gemm_n = 128, triad_bytes = 4e6 } or nil)
  r.cpu_gemm_flops, r.cpu_mem_bw, r.cpu_gemm_peak_fraction = cr.gemm_flops, cr.mem_bw, cr.peak_fraction
  r.minitf_prefill_predicted_s, r.minitf_prefill_measured_s = cr.prefill_predicted_s, cr.prefill_measured_s
  r.minitf_decode_predicted_s, r.minitf_decode_measured_s = cr.decode_predicted_s, cr.decode_measured_s
  r.cpu_roofline_text = require("hbdlab.minitf").format_roofline(cr)
  return r
end

function M.print_table(r)
  local rows = {
    { "hl_sim_run latency, median (reference job)", string.format("%.3f us", r.sim_latency_median_s * 1e6) },
    { "hl_sim_run latency, p99", string.format("%.3f us", r.sim_latency_p99_s * 1e6) },
    { string.format("sweep throughput, 1 thread (%d points)", r.sweep_points), string.format("%.0f points/s", r.sweep_points_per_s_1thread) },
    { "sweep throughput, all cores", string.format("%.0f points/s", r.sweep_points_per_s_all) },
    { "hl.simulate from Lua, per call", string.format("%.3f us", r.lua_call_s * 1e6) },
    { "Lua call overhead (over hl_sim_run; paired median, quartiles)", string.format("%.3f us (%.3f-%.3f)",
      r.lua_call_overhead_s * 1e6, r.lua_call_overhead_q1_s * 1e6, r.lua_call_overhead_q3_s * 1e6) },
    { "Lua call overhead, preset names (qwen1.5-110b, hgx-b200)", string.format("%.3f us (%.3f-%.3f)",
      r.lua_call_names_overhead_s * 1e6, r.lua_call_names_overhead_q1_s * 1e6, r.lua_call_names_overhead_q3_s * 1e6) },
    { "Lua call overhead, instructions a call (callgrind; objects, names)", r.lua_call_overhead_instructions and
      string.format("%.0f, %.0f", r.lua_call_overhead_instructions, r.lua_call_names_overhead_instructions) or
      "not counted (valgrind absent or unable to run this build)" },
    { string.format("start-up, hbdlab -e '' (median of %d; min)", r.startup_runs), string.format("%.3f ms (%.3f)%s",
      r.startup_median_s * 1e3, r.startup_min_s * 1e3, r.startup_instructions and
      string.format(", %d instructions", r.startup_instructions) or "") },
    { "HBD reproduction, whole script with figures", string.format("%.3f s%s", r.hbd_repro_wall_s, r.hbd_repro_ok and "" or " (FAILED)") },
    { string.format("streamed sweep of %d points to CSV: wall", r.stream_points),
      string.format("%.2f s%s", r.stream_wall_s, r.stream_ok and "" or " (FAILED)") },
    { "streamed sweep: points per second (hl.sweep_to_csv)", string.format("%.0f points/s", r.stream_points_per_s) },
    { string.format("hbdlab merge of two %.0f MB CSV files: wall", (r.merge_bytes or 0) / 2e6),
      string.format("%.2f s%s", r.merge_wall_s, r.merge_ok and "" or " (FAILED)") },
    { "hbdlab merge: peak RSS of the process", string.format("%.1f MB", (r.merge_rss_bytes or 0) / 1e6) },
    { "streamed sweep: peak RSS of the process", string.format("%.1f MB", (r.stream_10m_rss_bytes or 0) / 1e6) },
    { string.format("in-memory sweep of %d points: peak RSS%s", r.sweep_mem_points, r.sweep_mem_ok and "" or " (FAILED)"),
      string.format("%.1f MB (%.0f B a point)", (r.sweep_mem_rss_bytes or 0) / 1e6, r.sweep_mem_bytes_per_point or 0) },
    { "in-memory sweep of 10M points: budget estimate", string.format("%.2f GB of %.2f GB (%s)", r.sweep_10m_estimate_bytes / 1e9,
      r.sweep_memory_budget_bytes / 1e9, r.sweep_10m_fits and "fits" or "refused") },
    { string.format("hl.serve, %d requests, light load (%d iterations)", r.serve_requests, r.serve_light_steps),
      string.format("%.3f s", r.serve_light_wall_s) },
    { string.format("hl.serve, %d requests, near saturation (%d iterations)", r.serve_requests, r.serve_heavy_steps),
      string.format("%.3f s", r.serve_heavy_wall_s) },
    { string.format("hl.serve, %d requests on 8 replicas (%d iterations)", r.serve_requests, r.serve_replicas_steps),
      string.format("%.3f s", r.serve_replicas_wall_s) },
    { string.format("hl.serve, %d requests at load, CPU (target < 5 s at 1e7)", r.serve_scale_load_requests),
      string.format("%.3f s", r.serve_scale_load_cpu_s) },
    { string.format("hl.serve, %d requests at light load, CPU (target < 1 s at 1e6)", r.serve_scale_light_requests),
      string.format("%.3f s", r.serve_scale_light_cpu_s) },
  }
  for _, sch in ipairs { { "frontier_8gpu", "Llama-3.1-70B, 8 H200" }, { "frontier_64gpu", "DeepSeek-V3, 64 B200" } } do
    if r[sch[1] .. "_wall_s"] then
      rows[#rows + 1] = { string.format("hl.frontier %s (%d points, %d simulated)", sch[2], r[sch[1] .. "_points"],
        r[sch[1] .. "_simulated"]), string.format("%.3f s", r[sch[1] .. "_wall_s"]) }
    end
  end
  for _, row in ipairs(rows) do print(string.format("%-52s %s", row[1], row[2])) end
  if r.cpu_roofline_text then print("\n" .. r.cpu_roofline_text) end
end

function M.main(...)
  local opts = {}
  for _, a in ipairs { ... } do
    local key = (a == "--json" and "json") or (a == "--quick" and "quick") or nil
    if key and opts[key] then io.stderr:write("bench: option '", a, "' is given twice\n"); return 2
    elseif key then opts[key] = true
    elseif a == "-h" or a == "--help" then print("usage: hbdlab bench [--json] [--quick]"); return 0
    else io.stderr:write("bench: unknown option '", a, "'\n"); return 2 end
  end
  -- the HBD reproduction is a script of the source tree: a bench run elsewhere failed at its end
  -- ("cannot open ./scripts/hbd/reproduce.lua", exit 1) after the minute of work before it
  local repro = M.source_dir() .. "/scripts/hbd/reproduce.lua"
  local f = io.open(repro, "rb")
  if not f then
    io.stderr:write("bench: cannot find ", repro, " (the bench runs the HBD reproduction from the source tree: ",
      "run it in the repository's root, or set HBDLAB_SOURCE_DIR to it)\n")
    return 2
  end
  f:close()
  local r = M.run(opts)
  if opts.json then
    local j = {}
    for k, v in pairs(r) do if k ~= "cpu_roofline_text" then j[k] = v end end
    print(core.json_encode(j, true))
  else
    M.print_table(r)
  end
  return (r.hbd_repro_ok and r.stream_ok and r.merge_ok) and 0 or 1
end

return M
