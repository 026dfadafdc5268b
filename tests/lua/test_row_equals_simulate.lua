-- Property: for random configurations over every sweepable field (job,
-- cluster, model and GPU fields, as the core's field tables list them), the
-- C sweep's row equals hl.simulate of the same configuration, field by field
-- over every result field (the core's result table plus the friendly aliases);
-- and a point the sweep rejects is rejected by hl.simulate (most with the same
-- message: when several fields are bad, the two may report a different one first).
-- 10,000 configurations: 4 base jobs x 2,500 points, each point moving 3 random
-- fields away from its base (sometimes out of range on purpose). The plan options
-- join them: each base's points run as 5 sweeps of 500 with their own options (none;
-- max_tpot_s; max_ttft_s; both; both with another objective; limits drawn around
-- the base's own TTFT and TPOT), a quarter of the points at batch = "max" and 1%
-- at parallel = "auto", so a limit resolved differently by hl.simulate and
-- hl.sweep (batch = "max" + max_tpot_s once gave batch 18 and 95) fails here.
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"
hl.warnings(false) -- a point under limits it misses warns (meets_limits = false): thousands here

local POINTS_PER_BASE = 2500
local GROUPS = 5 -- sweeps per base, each with its own plan options
local objectives = { "tps_per_gpu", "ttft", "tpot", "throughput" }
local seed = tonumber(os.getenv("HBDLAB_PROPERTY_SEED") or "") or 13
math.randomseed(seed)

-- Every sweepable field once, in the order a sweep axis name is resolved
-- (job, then cluster, model, gpu fields; a name found earlier shadows later ones).
-- String fields (names, sources) carry no numbers and are left out.
local fields, seen = {}, {}
for _, kind in ipairs { "job", "cluster", "model", "gpu" } do
  for _, f in ipairs(core.fields(kind)) do
    if not seen[f.name] and f.type ~= "string" then
      seen[f.name] = true
      fields[#fields + 1] = { kind = kind, f = f }
    end
  end
end

local bases = {
  { model = "llama-3.1-8b", gpu = "H100-SXM", gpus = 8, hbd = 8,
    job = { batch = 8, input = 1024, output = 128, tp = 2 } },
  { model = "qwen3-30b-a3b", gpu = "B200", gpus = 16, hbd = 8,
    job = { batch = 16, input = 2048, output = 256, tp = 4, ep = 4, precision = "fp8" } },
  { model = "deepseek-v3", gpu = "B200", gpus = 64, hbd = 32,
    job = { batch = 64, input = 4096, output = 512, tp = 8, ep = 64, precision = "fp8", dispatch = "hierarchical" } },
  { model = "mixtral-8x7b", gpu = "H200", gpus = 8, hbd = 8,
    job = { batch = 4, input = 512, output = 64, tp = 2, pp = 2, ep = 2, microbatches = 2, overlap_prefill = 0.3 } },
}

local function plain(v) -- object field values as sweep axis values (bools as 0/1)
  if type(v) == "boolean" then return v and 1 or 0 end
  return v
end

-- A random value for field f near its base value x (10% of draws anywhere in
-- or just outside the allowed range, to exercise the error rows).
local function draw(f, x)
  if f.type == "enum" then
    local names = {}
    for n in f.values:gmatch("[^|]+") do names[#names + 1] = n end
    return names[math.random(#names)]
  elseif f.type == "boolean" then
    return math.random(0, 1)
  end
  local wild = math.random() < 0.1
  local v
  if wild then
    v = f.min + (f.max - f.min) * math.random() ^ 8 -- mostly small values of the range
    if math.random() < 0.3 then v = math.random() < 0.5 and f.min * 0.5 - 1 or f.max * 2 end
  elseif f.type == "integer" then
    v = (x and x > 0 and x or 1) * 2 ^ math.random(-2, 2)
  else
    v = (x and x ~= 0 and x or (f.max <= 10 and f.max * math.random() or f.min)) * 2 ^ (3 * math.random() - 1.5)
  end
  if f.type == "integer" then v = math.max(math.floor(v + 0.5), 0) end
  return v
end

local function nested(r, name)
  local v = r
  for part in name:gmatch("[^.]+") do v = v[part] end
  return v
end

local result_names = {}
for _, f in ipairs(core.result_fields()) do result_names[#result_names + 1] = f.name end

local compared, ok_rows, error_rows, same_error = 0, 0, 0, 0
local planned = { batch_max = 0, auto = 0, limits = 0, batch_max_limits = 0 } -- rows that ran with each
for bi, b in ipairs(bases) do
  T.test("base " .. bi .. " (" .. b.model .. " on " .. b.gpus .. " x " .. b.gpu .. "): rows equal hl.simulate", function()
    local model, gpu = hl.model(b.model), hl.gpu(b.gpu)
    local cluster = hl.cluster { gpu = gpu, gpus = b.gpus, hbd = b.hbd }
    local objects = { cluster = cluster, model = model, gpu = gpu }
    local base = { model = model, cluster = cluster }
    for k, v in pairs(b.job) do base[k] = v end
    -- base value of every field
    local base_value = {}
    for _, e in ipairs(fields) do
      local f = e.f
      if e.kind == "job" then
        local v = b.job[f.name]
        if v == nil then v = f.default end
        base_value[f.name] = plain(v)
      else
        base_value[f.name] = plain(objects[e.kind][f.name])
      end
    end
    -- the points: each moves 3 random fields
    local points = {}
    for i = 1, POINTS_PER_BASE do
      local p = {}
      for _ = 1, 3 do
        local e = fields[math.random(#fields)]
        p[e.f.name] = draw(e.f, base_value[e.f.name])
      end
      -- a batch axis value of 0 would read as "max": keep the out-of-range draw out of range
      if type(p.batch) == "number" and p.batch <= 0 then p.batch = -1 end
      if math.random() < 0.25 then p.batch = "max" end
      if math.random() < 0.01 then -- the search ignores the mapping fields: keep them at the base's
        p.parallel = "auto"
        for _, k in ipairs { "tp", "pp", "ep", "dp", "etp" } do p[k] = nil end
      end
      points[i] = p
    end
    -- the plan options of each group of points, with limits around the base's own times
    local r0 = hl.simulate(base)
    local function around(x) return x * 2 ^ (3.5 * math.random() - 0.5) end -- 1/7 below the base's time
    local options = { {},
      { max_tpot_s = around(r0.tpot_s) },
      { max_ttft_s = around(r0.ttft_s) },
      { max_tpot_s = around(r0.tpot_s), max_ttft_s = around(r0.ttft_s) },
      { max_tpot_s = around(r0.tpot_s), max_ttft_s = around(r0.ttft_s), objective = objectives[math.random(#objectives)] } }
    local per = POINTS_PER_BASE // GROUPS
    local rows, point_options = {}, {}
    for g = 1, GROUPS do
      local axes = {}
      for _, e in ipairs(fields) do
        local values = {}
        for i = (g - 1) * per + 1, g * per do
          local v = points[i][e.f.name]
          if v == nil then v = base_value[e.f.name] end
          values[#values + 1] = v
        end
        axes[#axes + 1] = { e.f.name, values }
      end
      local parallel = {}
      for i = (g - 1) * per + 1, g * per do parallel[#parallel + 1] = points[i].parallel or "fixed" end
      axes[#axes + 1] = { "parallel", parallel }
      local gbase = {}
      for k, v in pairs(base) do gbase[k] = v end
      for k, v in pairs(options[g]) do gbase[k] = v end
      local grows = hl.sweep { base = gbase, axes = axes, zip = true, progress = false }
      T.eq(#grows, per, "one row per point")
      for _, row in ipairs(grows) do
        rows[#rows + 1] = row
        point_options[#rows] = options[g]
      end
    end
    T.eq(#rows, POINTS_PER_BASE, "one row per point")
    for i, row in ipairs(rows) do
      -- the same configuration for hl.simulate: objects rebuilt with the point's values
      local vals = { job = {}, cluster = {}, model = {}, gpu = {} }
      for _, e in ipairs(fields) do
        local v = points[i][e.f.name]
        if v == nil then v = base_value[e.f.name] end
        if e.f.type == "boolean" then v = v == 1 end
        vals[e.kind][e.f.name] = v
      end
      local r
      local ok, err = pcall(function()
        local g = gpu:with(vals.gpu)
        local ct = { gpu = g, gpus = vals.cluster.gpus, hbd = vals.cluster.hbd }
        for k, v in pairs(vals.cluster) do ct[k] = v end
        local cfg = { model = model:with(vals.model), cluster = hl.cluster(ct) }
        for k, v in pairs(vals.job) do cfg[k] = v end
        for k, v in pairs(point_options[i]) do cfg[k] = v end
        if points[i].parallel == "auto" then -- the search chooses the mapping (the sweep ignores tp, pp, ... then)
          for _, k in ipairs { "tp", "pp", "ep", "dp", "etp" } do cfg[k] = nil end
          cfg.parallel = "auto"
        end
        r = hl.simulate(cfg)
      end)
      if row.error then
        error_rows = error_rows + 1
        T.ok(not ok, string.format("point %d: the sweep refused it (%s) but hl.simulate ran", i, row.error))
        -- with several bad fields the two may name different ones first; with one, the same message
        if tostring(err):find(row.error, 1, true) then same_error = same_error + 1 end
      else
        ok_rows = ok_rows + 1
        if not ok then
          local moved = {}
          for k, v in pairs(points[i]) do moved[#moved + 1] = k .. " = " .. tostring(v) end
          error(string.format("point %d (%s): the sweep ran it but hl.simulate failed: %s", i,
            table.concat(moved, ", "), tostring(err)))
        end
        local o = point_options[i]
        local limits = o.max_tpot_s ~= nil or o.max_ttft_s ~= nil
        if points[i].batch == "max" then planned.batch_max = planned.batch_max + 1 end
        if points[i].parallel == "auto" then planned.auto = planned.auto + 1 end
        if limits then planned.limits = planned.limits + 1 end
        if limits and points[i].batch == "max" then planned.batch_max_limits = planned.batch_max_limits + 1 end
        for _, name in ipairs(result_names) do
          local want = nested(r, name)
          if row[name] ~= want then
            error(string.format("point %d, field %s: row %s, hl.simulate %s", i, name, tostring(row[name]), tostring(want)))
          end
          compared = compared + 1
        end
      end
    end
  end)
end

T.test("the property was exercised", function()
  -- Both kinds of points occur, and most run: a generator that only produced
  -- errors (or only one base) would pass the comparison above vacuously.
  T.eq(ok_rows + error_rows, POINTS_PER_BASE * #bases, "configurations compared")
  T.ok(ok_rows >= POINTS_PER_BASE * #bases * 2 // 5, string.format("%d rows ran (at least 40%%)", ok_rows))
  T.ok(error_rows >= 100, string.format("%d rows were errors (at least 100)", error_rows))
  T.eq(compared, ok_rows * #result_names, "every result field of every row compared")
  T.ok(same_error >= error_rows * 0.8, string.format("%d of %d refusals with the same message", same_error, error_rows))
  -- the plan options ran (not only failed): batch = "max" with and without limits, and the search
  T.ok(planned.batch_max >= 1000, string.format("%d rows ran at batch = \"max\"", planned.batch_max))
  T.ok(planned.batch_max_limits >= 500, string.format("%d of them under limits", planned.batch_max_limits))
  T.ok(planned.limits >= 3000, string.format("%d rows ran under limits", planned.limits))
  T.ok(planned.auto >= 20, string.format("%d rows ran with parallel = \"auto\"", planned.auto))
  print(string.format("%d configurations (%d ran, %d refused, %d with the same message), %d field comparisons, " ..
    "%d sweepable fields, seed %d; ran with batch = \"max\" %d (%d under limits), under limits %d, parallel = " ..
    "\"auto\" %d", ok_rows + error_rows, ok_rows, error_rows, same_error, compared, #fields, seed, planned.batch_max,
    planned.batch_max_limits, planned.limits, planned.auto))
end)

T.done()
