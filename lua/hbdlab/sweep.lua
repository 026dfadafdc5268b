-- hl.sweep: the cartesian product (or zip) of axes, evaluated in C on all cores,
-- or a Lua function called per point. Rows are flat: views over the C sweep's points
-- (fields read on access, core.sweep_row_table gives a plain copy), or tables (function form).
local core = require "hbdlab.core"
local objects = require "hbdlab.objects"

local M = {}

-- Axis names in a stable order: as given in an array form, else sorted.
local function axis_list(axes)
  local list = {}
  core.check_plain_table(axes, "sweep field 'axes'") -- an __index or __pairs there gave other axes
  if #axes > 0 then
    for i, a in ipairs(axes) do -- axes = {1, 2, 3}: "attempt to index a number value (local 'a')"
      if type(a) ~= "table" then
        error(string.format("sweep: axes[%d] must be {name, values} (or give axes = {name = values}), got %s", i,
          type(a)), 3)
      end
      list[#list + 1] = { name = a[1] or a.name, values = a[2] or a.values }
    end
  else
    for k, v in pairs(axes) do list[#list + 1] = { name = k, values = v } end
    table.sort(list, function(a, b) return a.name < b.name end)
  end
  for _, a in ipairs(list) do
    if type(a.name) ~= "string" or type(a.values) ~= "table" or #a.values == 0 then
      error("sweep: axis '" .. tostring(a.name) .. "' needs a non-empty array of values", 3)
    end
    -- {1, nil, 3} ran one point and {1, 2, x = 3} dropped x: a list is keys 1..n exactly
    local ok, e, bools = pcall(core.check_list, a.values, "sweep axis '" .. a.name .. "'")
    if not ok then error(e, 3) end
    a.bools = bools -- true/false among the values (to_core_axis), counted in the same pass
  end
  return list
end

-- The type ("boolean", "integer", ...) of the job field an axis names (by name or path), or nil.
local function job_field_type(name)
  for _, f in ipairs(core.fields("job")) do
    if f.name == name or f.path == name then return f.type end
  end
end

-- Friendly axes (scaleout_gbps, hbm_tbs...) become SI fields; preset names of
-- model/gpu/cluster axes become objects; booleans of a boolean field travel as 1/0
-- (the core's boolean fields take 0 and 1) and come back as booleans in the rows.
local function to_core_axis(a)
  local bools = a.bools -- axis_list's count
  if bools > 0 then
    local ft = job_field_type(a.name)
    if ft ~= "boolean" then
      error(string.format("sweep axis '%s': true/false given, but '%s' is %s (booleans sweep boolean fields only, "
        .. "e.g. eplb = {true, false})", a.name, a.name, ft and ("a field of type " .. ft) or "no boolean field"), 4)
    end
    if bools < #a.values then
      error(string.format("sweep axis '%s': values must all be true or false (a boolean field)", a.name), 4)
    end
    local v = {}
    for i, x in ipairs(a.values) do v[i] = x and 1 or 0 end
    return { name = a.name, values = v, label = a.name, shown = a.values }
  end
  local alias = objects.aliases.cluster[a.name] or objects.aliases.gpu[a.name]
  if alias then
    local v = {}
    for i, x in ipairs(a.values) do v[i] = x * alias[2] end
    return { name = alias[1], values = v, label = a.name, shown = a.values }
  end
  if a.name == "batch" then -- "max" (the largest batch that fits) travels as 0
    local v, any = {}, false
    for i, x in ipairs(a.values) do
      if type(x) == "string" and x:lower() == "max" then v[i] = 0; any = true
      elseif type(x) == "number" and x ~= 0 then v[i] = x
      else error("sweep axis 'batch': " .. tostring(x) .. " is not allowed (allowed: a number >= 1 or \"max\")", 4) end
    end
    if any then return { name = "batch", values = v } end -- rows carry the batch each point resolved
  end
  local ctor = ({ model = objects.model, gpu = objects.gpu, cluster = objects.cluster })[a.name]
  if ctor then
    local v = {}
    for i, x in ipairs(a.values) do v[i] = objects.coerce(a.name, x) end
    return { name = a.name, values = v }
  end
  return { name = a.name, values = a.values }
end

local function core_axes_of(list)
  local out = {}
  for i, ax in ipairs(list) do out[i] = to_core_axis(ax) end
  return out
end

-- The points of a function-form sweep are Lua tables, with a row each: about this many bytes a
-- point with k axes (two tables of k fields: 2 x (56 + 32 k) B, derived from Lua 5.4's Table and
-- Node sizes), before what the function returns. Checked against the sweep budget
-- ($HBDLAB_SWEEP_MEMORY_BYTES, as the C sweep's) before any point is built.
local function point_bytes(k) return 2 * (56 + 32 * k) end

local function product_points(list, zip)
  if zip ~= nil and type(zip) ~= "boolean" then
    error("sweep: field 'zip': expected true or false, got " .. type(zip) .. " " .. tostring(zip), 3)
  end
  local count = zip and #list[1].values or 1
  if not zip then for _, a in ipairs(list) do count = count * #a.values end end
  local budget = core.sweep_memory_budget()
  if count * point_bytes(#list) > budget then
    error(string.format("sweep: %.4g points need about %.3g GB of Lua tables for their points and rows, over the " ..
      "sweep memory budget of %.3g GB (HBDLAB_SWEEP_MEMORY_BYTES): sweep fewer points, or stream a sweep of " ..
      "simulate fields to CSV with hl.sweep_to_csv", count, count * point_bytes(#list) / 1e9, budget / 1e9), 3)
  end
  local pts = {}
  if zip then
    local n = #list[1].values
    for i = 1, n do
      local p = {}
      for _, a in ipairs(list) do
        if #a.values ~= n then error("sweep: zipped axes need equal lengths", 3) end
        p[a.name] = a.values[i]
      end
      pts[#pts + 1] = p
    end
    return pts
  end
  local function rec(i, p)
    if i > #list then
      local c = {}
      for k, v in pairs(p) do c[k] = v end
      pts[#pts + 1] = c
      return
    end
    for _, v in ipairs(list[i].values) do p[list[i].name] = v; rec(i + 1, p) end
  end
  rec(1, {})
  return pts
end

-- One row as a Lua constructor; %q keeps integers integers and floats exact.
local function serialize(row)
  local keys = {}
  for k in pairs(row) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = "[" .. string.format("%q", k) .. "]=" .. string.format("%q", row[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

--- Under MPI: every rank's rows (function-form sweeps), in rank order, on every rank.
function M.gather_rows(rows)
  local parts = {}
  for i, r in ipairs(rows) do parts[i] = serialize(r) end
  local all = {}
  for _, text in ipairs(core.dist_allgather("return {" .. table.concat(parts, ",") .. "}")) do
    for _, r in ipairs(assert(load(text, "=(gathered rows)", "t", {}))()) do all[#all + 1] = r end
  end
  return all
end

--- Flattens nested tables one level into dotted keys: {prefill = {comm_s = 1}} -> {["prefill.comm_s"] = 1}.
function M.flatten(t, out, prefix)
  out = out or {}
  for k, v in pairs(t) do
    local key = prefix and (prefix .. "." .. k) or k
    local tv = type(v)
    if tv == "table" and getmetatable(v) == nil and #v == 0 then
      M.flatten(v, out, key)
    elseif tv == "number" or tv == "string" or tv == "boolean" then
      out[key] = v
    end
  end
  return out
end

local function describe(p)
  local parts = {}
  for k, v in pairs(p) do parts[#parts + 1] = k .. "=" .. tostring(v) end
  table.sort(parts)
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- An option a call does not know is an error naming it and the allowed ones
-- (a typo such as `thread = 4` must not be ignored silently).
local function check_options(who, a, allowed)
  local names = {}
  for _, k in ipairs(allowed) do names[k] = true end
  for k in pairs(a) do
    if not names[k] then
      error(string.format("%s: unknown option '%s' (allowed: %s)", who, tostring(k), table.concat(allowed, ", ")), 3)
    end
  end
end

local function note_interrupt(interrupted)
  if interrupted then core.note_interrupted_sweep() end
  return interrupted
end

-- The unknown-price warning (warn.check_cost) once per GPU whose rows have no cost.
function M.check_cost(base, rows)
  local warn, told = require "hbdlab.warn", {}
  if not warn.enabled then return end
  local okc, c = pcall(objects.coerce, "cluster", type(base) == "table" and base.cluster or nil)
  local base_gpu = okc and type(c) == "userdata" and c.gpu.name or "?"
  for _, row in ipairs(rows) do
    if row.error == nil and row.usd_per_mtok == nil then
      local name = type(row.gpu) == "string" and row.gpu or type(row.cluster) == "string" and row.cluster or base_gpu
      if not told[name] then told[name] = true; warn.check_cost({ name = name }, row) end
    end
  end
end

-- The silent-default warnings of a sweep's base, as its axes complete it: an axis on a
-- mapping field (tp, pp, ep, ...) is a mapping, so "'parallel' is not given" does not apply.
function M.check_base(base, list)
  if base ~= nil and type(base) ~= "table" then -- "hbdlab/sweep.lua:293: bad argument #1 to 'sweep' (table expected)"
    error("sweep field 'base': expected a table of hl.simulate fields, got " .. type(base), 3)
  end
  if type(base) == "table" then core.check_plain_table(base, "sweep field 'base'") end -- before its warnings
  local warn = require "hbdlab.warn"
  -- spec_accept: an axis of numbers sets one acceptance for every draft position; a per-position
  -- vector ({0.9, 0.8, 0.6}) is a base field only (hl.serve_sweep takes vectors as axis values)
  for _, ax in ipairs(list) do
    if ax.name == "spec_accept" then
      for i, v in ipairs(ax.values) do
        if type(v) == "table" then
          error(string.format("sweep axis 'spec_accept': value %d is a per-position vector; hl.sweep axes take "
            .. "numbers (one acceptance for every draft position). Give the vector in base and sweep other "
            .. "fields, or run one sweep per vector", i), 3)
        end
      end
      if type(base) == "table" and type(base.spec_accept) == "table" then
        error("sweep axis 'spec_accept' sets one acceptance for every draft position, but base gives a "
          .. "per-position vector; give one of them", 3)
      end
    elseif ax.name == "spec_draft_model" then -- a whole model, not a field of the job's (it read as unknown)
      error("sweep axis 'spec_draft_model': a draft model is a base field of hl.sweep, not an axis; give it in "
        .. "base and run one sweep per draft model, or sweep it with hl.serve_sweep (which takes it as an axis)", 3)
    end
  end
  if type(base) ~= "table" then return warn.check_job(base) end
  local seen = {}
  for k, v in pairs(base) do seen[k] = v end
  for _, ax in ipairs(list) do
    if seen[ax.name] == nil and warn.is_mapping_key(ax.name) then seen[ax.name] = ax.values[1] end
  end
  warn.check_job(seen)
  warn.check_sweep_limits(base, list)
end

--- hl.sweep{ base = {simulate fields}, axes = {hbd = {...}, ...}, zip = false, threads = 0,
---           strict = false } -> rows, interrupted
--- hl.sweep(axes, function(p) return {...} end) -> rows (the function's table flattened, plus the axes)
function M.sweep(a, fn)
  if type(a) ~= "table" then error("hl.sweep expects a table", 2) end
  if fn ~= nil then
    if type(fn) ~= "function" then error("hl.sweep(axes, fn): fn must be a function", 2) end
    local list = axis_list(a.axes or a)
    local rows = {}
    local points = product_points(list, a.zip)
    local mpi = core.dist().mpi
    if mpi then -- every rank runs this same sweep, else all stop here with one message (issue 22)
      local text = { a.zip and "zip" or "product" }
      for _, ax in ipairs(list) do
        text[#text + 1] = ax.name
        for _, v in ipairs(ax.values) do text[#text + 1] = type(v) .. ":" .. tostring(type(v) == "userdata" and v.name or v) end
      end
      core.dist_agree("fn", #points, table.concat(text, "\0"))
    end
    local lo, hi = core.dist_block(#points) -- this shard's or rank's block (all points when alone)
    for i = lo + 1, hi do
      local p = points[i]
      local ok, res = xpcall(fn, debug.traceback, p)
      if not ok then
        if mpi then pcall(core.dist_agree, "gather", 1) end -- the other ranks stop too, not wait in the gather
        if tostring(res):find("interrupted!", 1, true) then
          io.stderr:write(string.format("sweep interrupted: %d points done\n", i - 1 - lo))
          rows.interrupted = true
          return rows, note_interrupt(true)
        end
        error(string.format("sweep point %d %s: %s", i, describe(p), tostring(res)), 2)
      end
      local row = {}
      for k, v in pairs(p) do row[k] = type(v) == "userdata" and (v.name or tostring(v)) or v end
      if type(res) == "table" then M.flatten(res, row) end
      rows[#rows + 1] = row
    end
    if mpi then
      core.dist_agree("gather", 0)
      rows = M.gather_rows(rows)
    end
    local names = {}
    for i, ax in ipairs(list) do names[i] = ax.name end
    require("hbdlab.rows").axes_of[rows] = names
    require("hbdlab.rows").block_of[rows] = { lo, hi, #points }
    return rows, false
  end
  if type(a.axes) ~= "table" then error("hl.sweep: field 'axes' is required", 2) end
  check_options("hl.sweep", a, { "base", "axes", "zip", "threads", "strict", "progress" })
  local list = axis_list(a.axes) -- once: it checks every value of every axis
  M.check_base(a.base, list)
  local core_axes = core_axes_of(list)
  -- rows are views over the C points (lua/bind/l_sweep_rows.c); friendly axes keep their
  -- friendly name and values in them (each core axis's .label and .shown)
  local rows, interrupted, total = core.sweep(objects.coerce_job(a.base or {}, "sweep field 'base'"), core_axes,
                                                        { zip = a.zip, threads = a.threads, strict = a.strict,
                                                          progress = a.progress })
  rows.interrupted = interrupted or nil
  M.check_cost(a.base, rows)
  local names = {} -- hl.rows.print / columns put them first
  for i, ax in ipairs(core_axes) do names[i] = ax.label or ax.name end
  require("hbdlab.rows").axes_of[rows] = names
  local lo, hi = core.dist_block(total)
  require("hbdlab.rows").block_of[rows] = { lo, hi, total }
  require("hbdlab.rows").result_rows[rows] = true
  return rows, note_interrupt(interrupted)
end

M.default_columns = { "ttft_s", "tpot_s", "total_s", "decode_tps", "tps_per_gpu", "prefill.comm_share",
  "decode.comm_share", "memory.per_gpu_bytes", "memory.fits" }

--- hl.sweep_to_csv{ base = {...}, axes = {...}, out = "file.csv", columns = {...}, zip, threads }
--- Streams a sweep of any size to CSV with bounded memory; returns rows written, interrupted.
function M.sweep_to_csv(a)
  if type(a) ~= "table" or type(a.axes) ~= "table" or type(a.out) ~= "string" then
    error("hl.sweep_to_csv needs axes and out (a .csv path)", 2)
  end
  check_options("hl.sweep_to_csv", a, { "base", "axes", "out", "columns", "zip", "threads", "progress" })
  if a.columns ~= nil and type(a.columns) ~= "table" then
    error("hl.sweep_to_csv field 'columns': expected a list of result field names, got " .. type(a.columns), 2)
  end
  local list = axis_list(a.axes) -- once: it checks every value of every axis
  M.check_base(a.base, list)
  local n, interrupted = core.sweep_to_csv(objects.coerce_job(a.base or {}, "sweep field 'base'"), core_axes_of(list),
    { zip = a.zip, threads = a.threads, progress = a.progress }, a.out, a.columns or M.default_columns)
  return n, note_interrupt(interrupted)
end

return M
