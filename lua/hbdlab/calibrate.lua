-- hl.calibrate: fits numeric GPU / cluster / model / job fields to measured
-- cases by least squares on the log error (the C core's GSL solver), with
-- per-case errors before and after and leave-one-out cross-validation.
-- Formulas: docs/MODEL.md, section "Calibration".
local core = require "hbdlab.core"
local num_text = require("hbdlab.pretty").num_text

local M = {}

local function fail(msg, level) error("hl.calibrate: " .. msg, (level or 1) + 1) end

-- Reads a dotted metric ("ttft_s", "decode.time_s") from a result table.
local function metric_of(r, path)
  local v = r
  for part in path:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return v
end

--- Returns a copy of simulate fields `cfg` with the parameters `p` (name =
-- value) applied: a field of the cluster, its GPU or the model changes a
-- copy of that object (cluster fields first: they override the GPU's link
-- fields), any other name is a job field of hl.simulate.
function M.apply(hl, cfg, p)
  local t = {}
  for k, v in pairs(cfg) do t[k] = v end
  if next(p) == nil then return t end
  local cl = type(t.cluster) == "string" and hl.cluster(t.cluster) or t.cluster
  local md = type(t.model) == "string" and hl.model(t.model) or t.model
  local cl_over, gpu_over, md_over = {}, {}, {}
  for name, v in pairs(p) do
    if cl and cl[name] ~= nil and name ~= "name" then cl_over[name] = v
    elseif cl and cl.gpu[name] ~= nil and name ~= "name" then gpu_over[name] = v
    elseif md and md[name] ~= nil and name ~= "name" then md_over[name] = v
    else t[name] = v end
  end
  if next(gpu_over) then cl = cl:with { gpu = cl.gpu:with(gpu_over) } end
  if next(cl_over) then cl = cl:with(cl_over) end
  if next(md_over) then md = md:with(md_over) end
  t.cluster, t.model = cl, md
  return t
end

local case_fields = { "name", "measured", "config", "serve", "metric", "predict" }

-- A value as the message shows it: strings quoted, with their type otherwise.
local function shown(v)
  if type(v) == "string" then return string.format("%q (a string)", v) end
  if type(v) == "number" or type(v) == "boolean" then return num_text(v) .. " (a " .. type(v) .. ")" end
  -- a function or table by its kind, not its address ("function: 0x558f...")
  return (type(v) == "table" and getmetatable(v) ~= nil) and "a table with a metatable" or ("a " .. type(v))
end

-- Case i's predictor, function(p) -> a number > 0. Every field of the case must be known and have
-- an effect: a misspelt 'mesured' or a 'metric' beside a 'predict' function is refused, not ignored.
local function predictor(hl, c, i)
  if type(c) ~= "table" then fail("case " .. i .. " must be a table", 3) end
  core.check_fields(c, case_fields, "hl.calibrate: case " .. i)
  if c.name ~= nil and type(c.name) ~= "string" then
    fail("case " .. i .. ": field 'name' must be a string (got " .. shown(c.name) .. ")", 3)
  end
  local label = c.name and string.format("case %d (%s)", i, c.name) or ("case " .. i)
  if type(c.measured) ~= "number" or not (c.measured > 0) or c.measured == math.huge then
    fail(label .. ": field 'measured' must be a finite number > 0 (got " .. shown(c.measured) .. ")", 3)
  end
  -- a prediction is a finite number > 0 (the fit takes its log); a string or a table is named here,
  -- not converted by the solver or left for the printer to fail on
  local function checked(v, from)
    if type(v) ~= "number" or not (v > 0) or v == math.huge then
      error(string.format("%s: %s gave %s, not a finite number > 0", label, from, shown(v)), 0)
    end
    return v
  end
  if c.predict ~= nil then
    if type(c.predict) ~= "function" then
      fail(label .. ": field 'predict' must be a function(p) returning the prediction (got " .. shown(c.predict) .. ")", 3)
    end
    for _, other in ipairs { "config", "serve", "metric" } do
      if c[other] ~= nil then
        fail(label .. ": field '" .. other .. "' has no effect with field 'predict' (give one of them)", 3)
      end
    end
    local fn = c.predict
    return function(p) return checked(fn(p), "field 'predict'") end
  end
  local cfg, run = c.config, hl.simulate
  if c.serve ~= nil then cfg, run = c.serve, hl.serve end
  if type(cfg) ~= "table" or (c.config ~= nil and c.serve ~= nil) then
    fail(label .. ": give one of 'config' (hl.simulate fields) or 'serve' (hl.serve fields) with 'metric', " ..
         "or a 'predict' function", 3)
  end
  local metric = c.metric or "ttft_s"
  if type(metric) ~= "string" or metric == "" then
    fail(label .. ": field 'metric' must be a result field name such as \"ttft_s\" (got " .. shown(metric) .. ")", 3)
  end
  return function(p)
    local r = run(M.apply(hl, cfg, p))
    local v = metric_of(r, metric)
    if type(v) ~= "number" then error(string.format("%s: the result has no numeric field '%s'", label, metric), 0) end
    return checked(v, "metric '" .. metric .. "'")
  end
end

--- The number of keys of a table (equal to #t for an array without holes or named keys).
function M.count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

local function median(t)
  local s = {}
  for _, v in ipairs(t) do s[#s + 1] = v end
  if #s == 0 then return 0 end
  table.sort(s)
  return #s % 2 == 1 and s[(#s + 1) // 2] or (s[#s // 2] + s[#s // 2 + 1]) / 2
end

--- hl.calibrate{cases = {...}, params = {"eff_gemm", ...}, bounds = {eff_gemm = {lo, hi}, ...},
--   start = {name = value} (default: mid-bounds), loo = true, fit = {flags}}
-- Each case: {name =, measured =, config = {hl.simulate fields}, metric = "ttft_s"},
-- {name =, measured =, serve = {hl.serve fields}, metric = "tpot_s.mean"}
-- or {name =, measured =, predict = function(p) ... end} (p: name = value).
-- `fit` (optional, one flag per case) selects the cases the parameters are
-- fitted on; the others are predicted with the fitted values (held out).
-- Returns {params = {name = value}, rms_log, converged, iterations, cases = {...},
--   before = {median, max}, after = {...}, loo = {...}} (errors as fractions).
function M.calibrate(t)
  local hl = require "hbdlab"
  if type(t) ~= "table" then fail("expected a table {cases =, params =, bounds =}", 2) end
  for k in pairs(t) do
    if k ~= "cases" and k ~= "params" and k ~= "bounds" and k ~= "start" and k ~= "loo" and k ~= "fit"
        and k ~= "max_iter" then
      fail("unknown field '" .. tostring(k) .. "' (allowed: cases, params, bounds, start, loo, fit, max_iter)", 2)
    end
  end
  if type(t.cases) ~= "table" or #t.cases == 0 then fail("field 'cases' must be a non-empty array", 2) end
  if type(t.params) ~= "table" or #t.params == 0 then fail("field 'params' must be a non-empty array of field names", 2) end
  local bounds, start = t.bounds or {}, t.start or {}
  for _, f in ipairs { "bounds", "start" } do
    if t[f] ~= nil and (type(t[f]) ~= "table" or getmetatable(t[f]) ~= nil) then
      fail("field '" .. f .. "' must be a table {name = " .. (f == "bounds" and "{lo, hi}" or "value") .. "} (got " ..
           shown(t[f]) .. ")", 2)
    end
  end
  local x0, lo, hi = {}, {}, {}
  local seen = {}
  for i, name in ipairs(t.params) do
    if type(name) ~= "string" then fail("params[" .. i .. "] must be a field name", 2) end
    if seen[name] then fail("params[" .. i .. "]: '" .. name .. "' is given twice", 2) end
    seen[name] = true
    local b = bounds[name]
    if b == nil then fail("bounds." .. name .. " is missing: give {lo, hi}, the range the fit searches", 2) end
    if type(b) ~= "table" or type(b[1]) ~= "number" or type(b[2]) ~= "number" or not (b[2] > b[1])
        or b[1] == -math.huge or b[2] == math.huge then
      local got = type(b) == "table" and ("{" .. tostring(b[1]) .. ", " .. tostring(b[2]) .. "}") or tostring(b)
      fail("bounds." .. name .. " must be {lo, hi} with finite lo < hi (got " .. got .. ")", 2)
    end
    if #b ~= 2 or M.count(b) ~= 2 then
      fail("bounds." .. name .. " must be {lo, hi}: two numbers and nothing else", 2)
    end
    lo[i], hi[i] = b[1], b[2]
    x0[i] = start[name] or (b[1] + b[2]) / 2
    if type(x0[i]) ~= "number" or not (x0[i] >= lo[i] and x0[i] <= hi[i]) then
      fail("start." .. name .. " = " .. num_text(x0[i]) .. " is outside its bounds", 2)
    end
  end
  -- a bound or a start value for a name that is not fitted has no effect: refused, not ignored
  for _, f in ipairs { "bounds", "start" } do
    for k in pairs(t[f] or {}) do
      if not seen[k] then
        fail(string.format("%s.%s has no effect: %s is not in 'params' (%s)", f, tostring(k), shown(k),
                           table.concat(t.params, ", ")), 2)
      end
    end
  end
  if #t.cases ~= M.count(t.cases) then
    fail("field 'cases' must be an array (1..n, no holes and no named keys)", 2)
  end
  if #t.params ~= M.count(t.params) then
    fail("field 'params' must be an array of field names (1..n, no holes and no named keys)", 2)
  end
  local preds, measured, names = {}, {}, {}
  for i, c in ipairs(t.cases) do
    preds[i] = predictor(hl, c, i)
    measured[i] = c.measured
    names[i] = c.name or ("case " .. i)
  end
  local function params_of(x)
    local p = {}
    for i, name in ipairs(t.params) do p[name] = x[i] end
    return p
  end
  local function predict_all(x)
    local p, out = params_of(x), {}
    for i, f in ipairs(preds) do out[i] = f(p) end
    return out
  end
  local use
  if t.fit ~= nil then
    if type(t.fit) ~= "table" then fail("field 'fit' must be an array of booleans, one per case", 2) end
    if #t.fit ~= #t.cases then
      fail(string.format("field 'fit': %d flags for %d cases (one true/false per case)", #t.fit, #t.cases), 2)
    end
    use = {}
    for i = 1, #t.cases do
      if type(t.fit[i]) ~= "boolean" then
        fail(string.format("field 'fit[%d]': %s is not allowed (true: fit on case %d, false: hold it out)",
          i, tostring(t.fit[i]), i), 2)
      end
      use[i] = t.fit[i]
    end
  end
  -- leave-one-out refits on all fitted cases but one: it needs more fitted cases than parameters
  -- (by default it is left out when there are too few; asked for with loo = true it is an error)
  if t.loo ~= nil and type(t.loo) ~= "boolean" then fail("field 'loo' must be true or false", 2) end
  local n_fit = 0
  for i = 1, #t.cases do if use == nil or use[i] then n_fit = n_fit + 1 end end
  if t.loo == true and n_fit <= #t.params then
    fail(string.format("field 'loo': leave-one-out needs more fitted cases (%d) than params (%d)", n_fit, #t.params), 2)
  end
  -- "before": each case as given, with no parameter set, so a predict function gets p = {} (as a
  -- config case runs its fields unchanged); one that reads p.name without a default is told so
  local before = {}
  for i, f in ipairs(preds) do
    local ok, v = pcall(f, {})
    if not ok then
      local c = t.cases[i]
      if c.predict == nil then error(v, 0) end
      local label = c.name and string.format("case %d (%s)", i, c.name) or ("case " .. i)
      fail(string.format("%s: field 'predict' failed on the prediction before the fit, which passes p = {} " ..
        "(no parameter set: read each with a default, (p.%s or <value>)): %s", label, t.params[1], tostring(v)), 2)
    end
    before[i] = v
  end
  local res = core.calibrate_fit { x0 = x0, lo = lo, hi = hi, measured = measured, fn = predict_all, use = use,
                                   loo = t.loo ~= false and n_fit > #t.params, max_iter = t.max_iter }
  local after = predict_all(res.x)
  local out = { params = params_of(res.x), rms_log = res.rms_log, converged = res.converged,
                iterations = res.iterations, cases = {}, names = t.params }
  -- a parameter the fit left on a bound: the data pull it past the range searched (its value is the
  -- bound's, not a fit); within 1e-6 of the range from it counts as on it
  out.at_bound = {}
  for i, name in ipairs(t.params) do
    local tol = 1e-6 * (hi[i] - lo[i])
    local side = res.x[i] <= lo[i] + tol and "lower" or res.x[i] >= hi[i] - tol and "upper" or nil
    if side then
      out.at_bound[name] = side
      require("hbdlab.warn").warn(string.format("calibrate: '%s' = %.6g is on its %s bound (bounds %g..%g): the cases " ..
        "pull it further, so this value is the bound's, not a fit; widen the bound or check the cases", name,
        res.x[i], side, lo[i], hi[i]))
    end
  end
  local eb, ea, el, eh = {}, {}, {}, {}
  for i = 1, #t.cases do
    local fitted = use == nil or use[i]
    local row = { name = names[i], measured = measured[i], before = before[i], after = after[i], fitted = fitted,
                  before_err = before[i] / measured[i] - 1, after_err = after[i] / measured[i] - 1 }
    eb[#eb + 1] = math.abs(row.before_err)
    if fitted then ea[#ea + 1] = math.abs(row.after_err) else eh[#eh + 1] = math.abs(row.after_err) end
    if res.loo and fitted then
      row.loo = res.loo[i]
      row.loo_err = res.loo[i] / measured[i] - 1
      el[#el + 1] = math.abs(row.loo_err)
    end
    out.cases[i] = row
  end
  local function summary(e) return #e > 0 and { median = median(e), max = math.max(table.unpack(e)), n = #e } or nil end
  out.before, out.after, out.loo, out.held_out = summary(eb), summary(ea), summary(el), summary(eh)
  return out
end

--- Prints a calibration result as a table.
function M.print(res, write)
  write = write or io.write
  write("fitted parameters (", res.converged and "converged" or "not converged", ", ", res.iterations,
        " iterations, rms log error ", string.format("%.4f", res.rms_log), "):\n")
  for _, name in ipairs(res.names) do
    local side = res.at_bound and res.at_bound[name]
    write(string.format("  %-16s %.6g%s\n", name, res.params[name],
      side and ("   ON ITS " .. side:upper() .. " BOUND: not a fit (widen the bound)") or ""))
  end
  write(string.format("%-40s %11s %11s %8s %11s %8s %8s\n", "case", "measured", "before", "error", "after", "error",
                      "LOO"))
  for _, c in ipairs(res.cases) do
    write(string.format("%-40s %11.5g %11.5g %+7.1f%% %11.5g %+7.1f%% %8s\n", c.name:sub(1, 40), c.measured,
                        c.before, c.before_err * 100, c.after, c.after_err * 100,
                        c.loo_err and string.format("%+.1f%%", c.loo_err * 100) or (c.fitted and "" or "held")))
  end
  local function line(label, s)
    if s then write(string.format("%-10s median |error| %5.1f%%, max %5.1f%% (%d cases)\n", label, s.median * 100,
                                  s.max * 100, s.n)) end
  end
  line("before", res.before)
  line("after", res.after)
  line("held out", res.held_out)
  line("LOO", res.loo)
end

--- hbdlab calibrate CASES.json: {"params": [...], "bounds": {"name": [lo, hi]}, "start": {...},
-- "cases": [{"name": ..., "config": {hl.simulate fields} or "serve": {hl.serve fields},
--             "metric": "tpot_s", "measured": x}]}
function M.main(path, extra)
  if path == nil or extra ~= nil then
    io.stderr:write("usage: hbdlab calibrate CASES.json\n")
    return 2
  end
  local hl = require "hbdlab"
  local ok_read, text = pcall(core.read_file, path) -- a regular file within the input limit
  if not ok_read then
    io.stderr:write("hbdlab calibrate: cannot read ", tostring(text), "\n")
    return 1
  end
  local ok, spec = pcall(core.json_decode, text, path)
  if not ok or type(spec) ~= "table" or spec[1] ~= nil then
    local got = ok and (type(spec) == "table" and "an array" or ("a " .. type(spec))) or nil
    io.stderr:write("hbdlab calibrate: ", tostring(ok and (path .. ": expected a JSON object {cases, params, bounds}, got "
      .. got) or spec), "\n")
    return 1
  end
  if type(spec.cases) == "table" then
    for _, c in ipairs(spec.cases) do
      local cfg = type(c) == "table" and (c.config or c.serve)
      if type(cfg) == "table" then
        if type(cfg.model) == "table" then cfg.model = hl.model(cfg.model) end
        if type(cfg.cluster) == "table" then cfg.cluster = hl.cluster(cfg.cluster) end
      end
    end
  end
  local ok2, res = pcall(M.calibrate, spec) -- M.calibrate refuses unknown top-level keys
  if not ok2 then
    io.stderr:write("hbdlab calibrate: ", path, ": ", (tostring(res):gsub("^[^:]*:%d+: ", "")), "\n")
    return 1
  end
  M.print(res)
  return 0
end

return M
