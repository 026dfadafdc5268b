-- hl.frontier: the Pareto sets are exactly the non-dominated points (on random point sets and on
-- random searches), frontier points re-run through hl.serve reproduce their numbers, the best
-- point meets the SLO, an impossible SLO names the best configuration found, bad input is named.
local T = require "testlib"
local hl = require "hbdlab"
local F = require "hbdlab.frontier"

local function dominates(a, b)
  return a.tps_per_user >= b.tps_per_user and a.tps_per_gpu >= b.tps_per_gpu and
         (a.tps_per_user > b.tps_per_user or a.tps_per_gpu > b.tps_per_gpu)
end

-- every kept point is dominated by none of the group; every dropped point by at least one
local function check_pareto(points, kept, label)
  local on = {}
  for _, p in ipairs(kept) do on[p] = true end
  for _, p in ipairs(points) do
    local by
    for _, q in ipairs(points) do if dominates(q, p) then by = q; break end end
    if on[p] then
      T.ok(by == nil, string.format("%s: a Pareto point (%g, %g) is dominated by (%g, %g)", label, p.tps_per_user,
        p.tps_per_gpu, by and by.tps_per_user or 0, by and by.tps_per_gpu or 0))
    else
      T.ok(by ~= nil, string.format("%s: dropped point (%g, %g) is not dominated", label, p.tps_per_user, p.tps_per_gpu))
    end
  end
end

T.test("Pareto set of random point sets (ties and duplicates included)", function()
  math.randomseed(7)
  for trial = 1, 200 do
    local pts = {}
    for i = 1, math.random(1, 40) do
      -- coarse values so that ties in one or both coordinates happen often
      pts[i] = { tps_per_user = math.random(1, 8) * 10, tps_per_gpu = math.random(1, 8) * 100 }
    end
    check_pareto(pts, F.pareto(pts), "trial " .. trial)
  end
end)

T.test("a hand-worked Pareto set", function()
  -- (x, y): (10, 500) (20, 400) (20, 300) (30, 100) (5, 400) (30, 100)
  -- (20, 300) is dominated by (20, 400); (5, 400) by (10, 500); the two (30, 100) are equal: both kept
  local p = { { tps_per_user = 10, tps_per_gpu = 500 }, { tps_per_user = 20, tps_per_gpu = 400 },
              { tps_per_user = 20, tps_per_gpu = 300 }, { tps_per_user = 30, tps_per_gpu = 100 },
              { tps_per_user = 5, tps_per_gpu = 400 }, { tps_per_user = 30, tps_per_gpu = 100 } }
  local k = F.pareto(p)
  T.eq(#k, 4, "kept")
  local set = {}
  for _, q in ipairs(k) do set[q] = true end
  T.ok(set[p[1]] and set[p[2]] and set[p[4]] and set[p[6]], "the non-dominated four")
  T.ok(not set[p[3]] and not set[p[5]], "the dominated two")
end)

local systems = {
  { gpu = "H100-SXM", gpus = 4, hbd = 4 },
  { gpu = "H200", gpus = 8, hbd = 8 },
  { gpu = "B200", gpus = 8, hbd = 4, name = "two HBDs of 4" },
}
local models = { "llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b" }

T.test("random searches: Pareto sets exact within each system x mode; re-runs reproduce", function()
  math.randomseed(11)
  for trial = 1, 4 do
    local sys = systems[math.random(#systems)]
    local model = models[math.random(#models)]
    local r = hl.frontier { model = model, systems = { sys }, precision = ({ "fp8", "bf16" })[math.random(2)],
                            input = ({ 512, 2048 })[math.random(2)], output = 256, simulate = 3, requests = 120 }
    T.ok(#r.points > 0, "points evaluated")
    for _, k in ipairs(r.groups) do
      local group = {}
      for _, p in ipairs(r.points) do
        if p.system .. "|" .. p.precision .. "|" .. p.mode == k then group[#group + 1] = p end
      end
      check_pareto(group, r.pareto[k], model .. " " .. k)
      local on = {}
      for _, p in ipairs(r.pareto[k]) do on[p] = true end
      for _, p in ipairs(group) do T.eq(p.pareto, on[p] == true, "the point's pareto flag") end
    end
    -- up to five random Pareto points re-run through hl.serve with their configuration
    local front = {}
    for _, k in ipairs(r.groups) do for _, p in ipairs(r.pareto[k]) do front[#front + 1] = p end end
    for _ = 1, math.min(5, #front) do
      local p = front[math.random(#front)]
      local s = hl.serve(p.config)
      if p.simulated then
        -- the config is one copy (an instance, or a pair of pools) on s.gpus GPUs; floor(G / s.gpus)
        -- copies fill the cluster of G GPUs, whose tokens/s per GPU the point gives
        T.near(s.output_tps_per_gpu, p.tps_per_gpu_used, 1e-12, "re-run tokens/s per GPU used")
        T.near(s.output_tps * (sys.gpus // s.gpus) / sys.gpus, p.tps_per_gpu, 1e-12, "re-run tokens/s per cluster GPU")
        T.near(s.rps * (sys.gpus // s.gpus), p.rps, 1e-12, "re-run requests/s of the cluster")
        T.near(1 / s.tpot_s.mean, p.tps_per_user, 1e-12, "re-run tokens/s per user")
        T.near(s.ttft_s.p90, p.ttft_p90_s, 1e-12, "re-run TTFT p90")
      elseif p.mode == "agg" then -- analytical steady state
        T.near(s.output_tps_per_gpu, p.tps_per_gpu, 1e-12, "re-run tokens/s per GPU (analytical)")
        T.eq(p.gpus_idle, 0, "aggregated instances tile the cluster")
        T.near(1 / s.tpot_s, p.tps_per_user, 1e-12, "re-run tokens/s per user (analytical)")
      end
    end
  end
end)

T.test("a disaggregated point's TTFT includes the KV hand-off of its prompt", function()
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 4, hbd = 4 }, modes = "disagg",
                          input = 2048, output = 128, simulate = 0 }
  T.ok(#r.points > 0, "disaggregated points")
  -- one prompt's KV over the scale-up link: 2048 tokens x 131 kB (bf16 KV) = 268 MB at 450 GB/s: ~0.6 ms
  for _, p in ipairs(r.points) do
    T.ok(p.kv_transfer_s and p.kv_transfer_s > 1e-4 and p.kv_transfer_s < 0.01, "hand-off time " .. tostring(p.kv_transfer_s))
    T.ok(p.ttft_p50_s > p.kv_transfer_s, "TTFT above the hand-off")
  end
end)

T.test("disaggregated decode instances include wide EP with attention DP", function()
  -- mixtral-8x7b (8 experts) on 8 GPUs: decode mappings with dp = 2 or 4 (ep = tp x dp) exist, and
  -- concurrency 1 does not split over dp groups; that must skip to c = dp, not end the search
  local r = hl.frontier { model = "mixtral-8x7b", systems = { gpu = "H100-SXM", gpus = 8, hbd = 8 }, modes = "disagg",
                          precision = "fp8", input = 512, output = 256, simulate = 0 }
  local wide = 0
  for _, p in ipairs(r.points) do
    if p.mode == "disagg" and p.dp > 1 then
      wide = wide + 1
      T.ok(p.concurrency % p.dp == 0, "concurrency is a multiple of dp")
      T.eq(p.ep, p.tp * p.dp, "wide EP spans the instance")
    end
  end
  T.ok(wide > 0, "some disaggregated points decode with attention DP")
end)

T.test("the best point meets the SLO; an impossible SLO names the best found", function()
  local slo = { ttft_s = 1.0, tpot_s = 0.03 }
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 4, hbd = 4 }, precision = "fp8",
                          input = 1024, output = 256, slo = slo, simulate = 4, requests = 150 }
  local n = 0
  for k, b in pairs(r.best) do
    n = n + 1
    T.ok(b.ttft_p90_s <= slo.ttft_s, k .. ": TTFT within the SLO")
    T.ok(b.tpot_s <= slo.tpot_s, k .. ": TPOT within the SLO")
    for _, p in ipairs(r.points) do
      if p.system .. "|" .. p.precision .. "|" .. p.mode == k and p.simulated and p.ttft_p90_s <= slo.ttft_s and
         p.tpot_s <= slo.tpot_s then
        T.ok(p.tps_per_gpu <= b.tps_per_gpu, k .. ": no simulated point within the SLO beats the best")
      end
    end
    T.ok(r.launch[k] and (r.launch[k].instance or r.launch[k].decode), k .. ": launch options")
    if b.mode == "disagg" then
      -- the decode engine gets the room the simulated config gave it, per instance
      local room = math.ceil(b.config.max_seqs / b.d_instances)
      T.ok(r.launch[k].decode.sglang:find("--max-running-requests " .. room, 1, true),
        k .. ": decode room " .. room .. " in " .. r.launch[k].decode.sglang)
    end
  end
  T.ok(n > 0, "a best point")
  T.raises(function()
    hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 4, hbd = 4 }, input = 1024, output = 256,
                  slo = { tpot_s = 1e-6 }, simulate = 0, modes = "agg" }
  end, "no configuration meets the SLO", "the best found is", "tp ")
end)

T.test("bad input is named", function()
  local ok_base = { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 2, hbd = 2 } }
  local function with(t) return T.merged(ok_base, t) end
  T.raises(function() hl.frontier(with { sytems = 1 }) end, "unknown field 'sytems'", "did you mean 'systems'")
  T.raises(function() hl.frontier(with { modes = { "agg", "both" } }) end, "modes", "'both'", "agg, disagg")
  T.raises(function() hl.frontier(with { slo = { ttft = 1 } }) end, "ttft")
  T.raises(function() hl.frontier(with { slo = { ttft_s = -1 } }) end, "slo.ttft_s")
  T.raises(function() hl.frontier(with { concurrency = { 0 } }) end, "concurrency")
  T.raises(function() hl.frontier(with { prefill_load = { 0.5, 0.3 } }) end, "prefill_load")
  T.raises(function() hl.frontier(with { serve = { rate = 3 } }) end, "serve.rate")
  T.raises(function() hl.frontier { systems = ok_base.systems } end, "'model' is required")
  T.raises(function() hl.frontier(with { systems = { 42 } }) end, "systems[1]")
  T.raises(function() hl.frontier(with { systems = {} }) end, "'systems': an empty list")
  T.raises(function() hl.frontier(with { precision = { "fp8", "nope" } }) end, "'precision'[2]", "nope")
  T.raises(function() hl.frontier(with { max_tp = 3 }) end, "'max_tp': 3 is not a power of two")
  T.raises(function() hl.frontier(with { output = 1 }) end, "'output': 1", "at least 2")
  -- an input error repeated on every configuration (the search ran, then named it): refused up front
  T.raises(function() hl.frontier(with { input = 0 }) end, "field 'input': 0 is not a whole number of tokens in 1..1e8")
  T.raises(function() hl.frontier(with { serve = { max_seqs = 0 } }) end, "field 'max_seqs'")
  -- the disaggregated points read the mean lengths directly: NaN or inf is refused, not NaN tokens/s per GPU
  T.raises(function() hl.frontier(with { output = 0 / 0, simulate = 0 }) end, "field 'output'", "not a finite number")
  T.raises(function() hl.frontier(with { output = { mean = 0 / 0 }, modes = "disagg" }) end, "field 'output'", "nan")
  T.raises(function() hl.frontier(with { input = math.huge, modes = "disagg" }) end, "field 'input'", "inf")
  T.raises(function() hl.frontier(with { output = { mean = "x" } }) end, "field 'output'", "x")
  -- an empty list is named, not read as one value (a table)
  for _, f in ipairs { "precision", "modes", "concurrency", "prefill_load" } do
    T.raises(function() hl.frontier(with { [f] = {} }) end, "field '" .. f .. "': an empty list")
  end
  T.raises(function() hl.frontier(with { model = 5 }) end, "field 'model'", "got number")
  T.raises(function() hl.frontier(with { out = "" }) end, "field 'out'", "not a path stem")
  T.raises(function() hl.frontier(with { out = "results/" }) end, "field 'out'", "not a path stem")
  -- two systems of the same name stay two curves
  local r = hl.frontier(with { systems = { ok_base.systems, ok_base.systems }, simulate = 0, modes = "agg" })
  T.eq(#r.groups, 2, "two curves")
end)

local function group_of(r, k)
  local g = {}
  for _, p in ipairs(r.points) do if p.system .. "|" .. p.precision .. "|" .. p.mode == k then g[#g + 1] = p end end
  return g
end

-- the most tokens/s per GPU among a group's points at >= x tokens/s per user, by one set of numbers
-- (the max over the points equals the max over their Pareto set: whatever dominates it reaches x too)
local function reach_of(group, x, basis)
  local y
  for _, p in ipairs(group) do
    local v
    if basis == "simulated" then v = p.simulated and p or nil else v = p.analytical or ((not p.simulated) and p or nil) end
    if v and v.tps_per_user >= x and (not y or v.tps_per_gpu > y) then y = v.tps_per_gpu end
  end
  return y
end

T.test("ratios: each from one named set of numbers; at the SLO the ratio of the printed best points", function()
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 4, hbd = 4 }, precision = "fp8",
                          input = 1024, output = 256, slo = { ttft_s = 1.0, tps_per_user = 20 }, simulate = 4,
                          requests = 150 }
  local ka, kg = "4xH100-SXM HBD4|fp8|agg", "4xH100-SXM HBD4|fp8|disagg"
  local ga, gg = group_of(r, ka), group_of(r, kg)
  local n_best, n_at = 0, 0
  for _, q in ipairs(r.ratios) do
    T.eq(q.what, "disagg/agg", "one system: disagg/agg only")
    if q.at == "best" then
      n_best = n_best + 1
      local bg, ba = r.best[kg], r.best[ka]
      T.eq(q.basis, "best simulated", "both best points are simulated")
      T.ok(bg.simulated and ba.simulated, "best points simulated")
      T.eq(q.tps_per_gpu, bg.tps_per_gpu, "numerator: the printed disagg best")
      T.eq(q.ref_tps_per_gpu, ba.tps_per_gpu, "denominator: the printed agg best")
      T.near(q.ratio, bg.tps_per_gpu / ba.tps_per_gpu, 1e-12, "ratio of the best points")
      T.ok(q.tps_per_user == nil, "the best points' ratio is not also given at the SLO's tok/s/user")
    else
      n_at = n_at + 1
      T.ok(q.tps_per_user ~= 20, "no second ratio at the SLO's tok/s/user")
      T.ok(q.basis == "simulated" or q.basis == "analytical", "basis named: " .. tostring(q.basis))
      -- simulated whenever both curves have a simulated point that reaches x
      local both = reach_of(ga, q.tps_per_user, "simulated") and reach_of(gg, q.tps_per_user, "simulated")
      T.eq(q.basis, both and "simulated" or "analytical", "the simulated set when both curves have one")
      T.eq(q.tps_per_gpu, reach_of(gg, q.tps_per_user, q.basis), "numerator from the named set")
      T.eq(q.ref_tps_per_gpu, reach_of(ga, q.tps_per_user, q.basis), "denominator from the named set")
      T.near(q.ratio, q.tps_per_gpu / q.ref_tps_per_gpu, 1e-12, "ratio")
      -- a simulated ratio says whether both of its runs were re-run to convergence (best points only)
      if q.basis == "simulated" then T.eq(type(q.converged), "boolean", "converged flag") else T.eq(q.converged, nil, "no flag") end
    end
  end
  T.eq(n_best, 1, "one ratio of the best points")
  T.ok(n_at > 0, "ratios at other interactivities")
  T.ok(tostring(r):find("disagg/agg .* of the best points above: [%d.]+x %(best simulated: ") ~= nil, "printed with its set")
end)

T.test("a small simulate budget says so; 'best' is confirmed or flagged", function()
  local f = { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 4, hbd = 4 }, precision = "fp8", input = 1024,
              output = 256, slo = { ttft_s = 1.0, tpot_s = 0.03 }, requests = 150 }
  f.simulate = 1
  local r = hl.frontier(f)
  local warned = {}
  for _, w in ipairs(r.warnings) do
    local k, n = w:match("^(.-): the simulate budget %(1%) ran out.*simulate = (%d+) confirms")
    if k then warned[k] = tonumber(n) end
  end
  T.ok(next(warned) ~= nil, "the budget of 1 ran out somewhere (a budget warning)")
  for k, b in pairs(r.best) do
    local name = k:gsub("|", " ")
    T.ok(b.simulated or (b.unconfirmed and warned[name]), k .. ": best is simulated, or flagged unconfirmed with a warning")
    if b.unsettled then T.ok(warned[name], k .. ": unconfirmed candidates above the best are warned about") end
    local printed = tostring(r)
    if b.unconfirmed then T.ok(printed:find("NOT confirmed", 1, true), "printed as unconfirmed") end
  end
  -- the budget the warning names settles the curve: no budget warning at that budget
  for k, n in pairs(warned) do
    f.simulate = n
    local r2 = hl.frontier(f)
    for _, w in ipairs(r2.warnings) do
      T.ok(not (w:find(k, 1, true) and w:find("simulate budget", 1, true)), "simulate = " .. n .. " settles " .. k .. ": " .. w)
    end
    local b = r2.best[(k:gsub(" fp8 ", "|fp8|"))]
    T.ok(b and b.simulated and not b.unconfirmed, k .. ": best confirmed at simulate = " .. n)
  end
end)

T.test("the best points are converged in their requests, and re-running their config reproduces them", function()
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 2, hbd = 2 }, precision = "fp8",
                          input = 1024, output = 128, slo = { ttft_s = 2 }, simulate = 2, requests = 40, tolerance = 0.02 }
  local n = 0
  for k, b in pairs(r.best) do
    T.ok(b.simulated, k .. ": simulated")
    T.ok(b.converged ~= nil, k .. ": convergence checked")
    if b.converged then
      n = n + 1
      T.ok(b.converged_change <= 0.02, k .. ": change within the tolerance")
      local s = hl.serve(b.config)
      T.near(s.output_tps_per_gpu, b.tps_per_gpu_used, 1e-12, k .. ": re-run tok/s/GPU")
      T.near(1 / s.tpot_s.mean, b.tps_per_user, 1e-12, k .. ": re-run tok/s/user")
      -- the run of half the requests differs by the change it reports
      local f = {}
      for kk, v in pairs(b.config) do f[kk] = v end
      f.requests = f.requests // 2
      local h = hl.serve(f)
      local ch = math.max(math.abs(b.tps_per_gpu_used - h.output_tps_per_gpu) / b.tps_per_gpu_used,
                          math.abs(b.tps_per_user - 1 / h.tpot_s.mean) / b.tps_per_user)
      T.near(ch, b.converged_change, 1e-9, k .. ": the change between R/2 and R requests")
      T.ok(b.config.requests > 40, k .. ": more than the first run's requests")
    else
      local found = false
      for _, w in ipairs(r.warnings) do if w:find("not converged", 1, true) then found = true end end
      T.ok(found, k .. ": not converged is warned about")
    end
  end
  T.ok(n > 0, "a converged best point")
end)

T.test("instance sizes beyond powers of two: divisors of the cluster, pools beyond G/2", function()
  -- qwen3-30b-a3b (128 experts) on 12 GPUs: wide-EP instances of 3, 6, 12 GPUs (12 = 1 x 12, 2 x 6,
  -- 4 x 3) and disaggregated pools larger than 6 (e.g. 9 decode + 3 prefill)
  local r = hl.frontier { model = "qwen3-30b-a3b", systems = { gpu = "H100-SXM", gpus = 12, hbd = 12 }, precision = "fp8",
                          input = 512, output = 128, simulate = 0 }
  local agg_sizes, big_pool, mixed, odd_dp = {}, false, false, false
  for _, p in ipairs(r.points) do
    if p.mode == "agg" then
      agg_sizes[p.instance_gpus] = true
      T.eq(12 % p.instance_gpus, 0, "aggregated instances tile the cluster")
      T.eq(p.instances, 12 // p.instance_gpus, "instances")
    else
      local pg = p.p_tp * p.p_pp * p.p_dp
      T.ok(p.instance_gpus * p.d_instances + pg * p.p_instances <= 12, "the pools fit the cluster")
      if p.instance_gpus > 6 or pg > 6 then big_pool = true end
      if p.instance_gpus % 3 == 0 or pg % 3 == 0 then mixed = true end
      -- a decode instance of DP 3, 6 or 12 decodes a multiple of its DP size (powers of two never were)
      if p.dp % 3 == 0 then odd_dp = true; T.eq(p.concurrency % p.dp, 0, "decode concurrency a multiple of dp") end
    end
  end
  T.ok(agg_sizes[3] or agg_sizes[6] or agg_sizes[12], "an aggregated instance of 3, 6 or 12 GPUs")
  T.ok(big_pool, "a disaggregated pool of more than G/2 GPUs")
  T.ok(mixed, "a disaggregated pool whose size is not a power of two")
  T.ok(odd_dp, "a disaggregated decode instance whose DP size is not a power of two")
end)

T.test("MoE disaggregated points simulate the pools they were searched as", function()
  -- x wide-EP prefill instances pooled as dp x with the instance's ep meant experts sharded over
  -- the pool (etp = pool / ep) in hl.serve: not what the search evaluated. A MoE pool is one instance.
  local r = hl.frontier { model = "qwen3-30b-a3b", systems = { gpu = "H100-SXM", gpus = 12, hbd = 12 }, precision = "fp8",
                          modes = "disagg", input = 512, output = 128, simulate = 0 }
  T.ok(#r.points > 0, "points")
  for _, p in ipairs(r.points) do
    T.eq(p.p_instances, 1, "one prefill instance")
    T.eq(p.d_instances, 1, "one decode instance")
    local pp, dp = p.config.disagg.prefill.parallel, p.config.disagg.decode.parallel
    T.ok(pp.tp == p.p_tp and pp.pp == p.p_pp and pp.ep == p.p_ep and pp.dp == p.p_dp, "prefill pool = the searched mapping")
    T.ok(dp.tp == p.tp and dp.pp == p.pp and dp.ep == p.ep and dp.dp == p.dp, "decode pool = the searched mapping")
  end
end)

T.test("tokens/s per GPU of the whole cluster: copies of a disaggregated pair fill it, the rest idle", function()
  -- qwen3-30b-a3b (MoE: one prefill and one decode instance per copy) on 12 GPUs. Worked by hand:
  -- a copy of 1 + 4 GPUs fits twice (floor(12 / 5) = 2) on 10 GPUs, 2 idle: the cluster makes 2x one
  -- copy's tokens/s, so per GPU of the cluster it is 10/12 of the per-GPU-used figure; 3 + 4 GPUs fit
  -- once, 5 idle: 7/12; 1 + 3 fit three times, none idle: equal.
  local r = hl.frontier { model = "qwen3-30b-a3b", systems = { gpu = "H100-SXM", gpus = 12, hbd = 12 }, precision = "fp8",
                          modes = "disagg", input = 512, output = 128, simulate = 0 }
  local want = { [5] = { 2, 2, 10 / 12 }, [7] = { 1, 5, 7 / 12 }, [4] = { 3, 0, 1 } } -- copies, idle, share
  local seen = {}
  for _, p in ipairs(r.points) do
    local g = p.p_tp * p.p_pp * p.p_dp + p.tp * p.pp * p.dp
    local w = want[g]
    if w then
      seen[g] = true
      T.eq(p.replicas, w[1], g .. "-GPU copy: copies")
      T.eq(p.gpus_idle, w[2], g .. "-GPU copy: idle GPUs")
      T.eq(p.gpus_used, w[1] * g, g .. "-GPU copy: GPUs used")
      T.near(p.tps_per_gpu, w[3] * p.tps_per_gpu_used, 1e-12, g .. "-GPU copy: per cluster GPU")
      T.near(p.rps, w[1] * p.config.rate, 1e-12, g .. "-GPU copy: the cluster's requests/s, each copy at its config's rate")
    end
  end
  T.ok(seen[5] and seen[7] and seen[4], "copies of 5, 7 and 4 GPUs searched")
  T.ok(tostring(r):find("tok/s/GPU: output tokens/s per GPU of the whole cluster", 1, true) ~= nil, "the basis printed")
  -- on 5 GPUs an aggregated search tiles them; its best prints no idle GPUs
  local a = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 5, hbd = 5 }, modes = "agg",
                          input = 512, output = 128, simulate = 0 }
  for _, p in ipairs(a.points) do
    T.eq(p.gpus_used, 5, "agg: every GPU used")
    T.eq(p.tps_per_gpu, p.tps_per_gpu_used, "agg: the two bases agree")
  end
  T.ok(tostring(a):find("idle", 1, true) == nil, "agg: no idle GPUs printed")
end)

T.test("a curve with no point at all is named with its reason", function()
  local r = hl.frontier { model = "llama-3.1-8b", systems = { gpu = "H100-SXM", gpus = 2, hbd = 2 }, precision = { "fp8", "fp4" },
                          modes = "agg", simulate = 0 }
  local found
  for _, w in ipairs(r.warnings) do if w:find("fp4 agg: no configuration could be evaluated", 1, true) then found = w end end
  T.ok(found and found:find("fp4", 40, true), "the fp4 curve is named with the reason: " .. tostring(found))
  T.ok(r.best["2xH100-SXM HBD2|fp8|agg"] ~= nil, "the fp8 curve is there")
end)

T.done()
