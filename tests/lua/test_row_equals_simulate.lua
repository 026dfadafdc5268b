-- Property: for random configurations over every sweepable field (job,
-- cluster, model and GPU fields, as the core's field tables list them), the
-- C sweep's row equals hl.simulate of the same configuration, field by field
-- over every result field (the core's result table plus the friendly aliases);
-- and a point the sweep rejects is rejected by hl.simulate (most with the same
-- message: when several fields are bad, the two may report a different one first).
-- 10,000 configurations: 4 base jobs x 2,500 points, each point moving 3 random
-- fields away from its base (sometimes out of range on purpose).
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"

local POINTS_PER_BASE = 2500
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
      points[i] = p
    end
    local axes = {}
    for _, e in ipairs(fields) do
      local values = {}
      for i = 1, POINTS_PER_BASE do
        local v = points[i][e.f.name]
        if v == nil then v = base_value[e.f.name] end
        values[i] = v
      end
      axes[#axes + 1] = { e.f.name, values }
    end
    local rows = hl.sweep { base = base, axes = axes, zip = true, progress = false }
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
  T.ok(ok_rows >= POINTS_PER_BASE * #bases // 2, string.format("%d rows ran (at least half)", ok_rows))
  T.ok(error_rows >= 100, string.format("%d rows were errors (at least 100)", error_rows))
  T.eq(compared, ok_rows * #result_names, "every result field of every row compared")
  T.ok(same_error >= error_rows * 0.8, string.format("%d of %d refusals with the same message", same_error, error_rows))
  print(string.format("%d configurations (%d ran, %d refused, %d with the same message), %d field comparisons, " ..
    "%d sweepable fields, seed %d", ok_rows + error_rows, ok_rows, error_rows, same_error, compared, #fields, seed))
end)

T.done()
