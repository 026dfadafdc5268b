-- hl.sweep's rows are views over the C sweep's points (lua/bind/l_sweep_rows.c). Each row must
-- read as the row table the sweep built before: for every point, the keys its pairs() gives,
-- and each value with its type (math.type too), equal the table made here the old way, from
-- hl.simulate of the point's configuration: the axes (a number axis as a float, a string as
-- itself, a model/cluster/gpu object by its name, a friendly or boolean axis as given), then every
-- result field flat with dotted keys (an unknown value, nil, left out), ttft_ms and tpot_ms; a
-- failed point has its axes and `error` (hl.simulate's message) only. Also: writes, deletions,
-- #row, sorting the rows, JSON and rows.write.
local T = require "testlib"
local hl = require "hbdlab"
local core = require "hbdlab.core"
local rows_mod = require "hbdlab.rows"
hl.warnings(false)

local function nested(r, name)
  local v = r
  for part in name:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return v
end

-- The row table the sweep built before views, for point p (axis name -> value given) of axes.
-- cfg: the point's hl.simulate table.
local function old_row(axes, p, cfg)
  local t = {}
  for _, ax in ipairs(axes) do
    local v = p[ax.name]
    if ax.kind == "number" then v = v + 0.0 -- the C sweep pushed axis numbers with lua_pushnumber
    elseif ax.kind == "object" then v = v.name end
    t[ax.name] = v
  end
  local ok, r = pcall(hl.simulate, cfg)
  if not ok then
    t.error = tostring(r):gsub("^[^:]*:%d+: ", "")
    return t
  end
  for _, f in ipairs(core.result_fields()) do
    if f.alias_of then
      t[f.name] = nested(r, f.alias_of) * f.scale
    else
      local v = nested(r, f.name)
      if v ~= nil then t[f.name] = v end
    end
  end
  return t
end

-- Same keys (pairs of the view against the table), same values and types.
local function same_row(view, want, where)
  local got = {}
  for k, v in pairs(view) do
    T.ok(got[k] == nil, where .. ": pairs gives '" .. tostring(k) .. "' once")
    got[k] = v
  end
  for k, v in pairs(want) do
    local g = got[k]
    T.ok(g ~= nil, where .. ": key '" .. k .. "' is in pairs()")
    T.eq(type(g), type(v), where .. ": type of " .. k)
    if type(v) == "number" then T.eq(math.type(g), math.type(v), where .. ": number type of " .. k) end
    T.ok(g == v or (v ~= v and g ~= g), where .. ": " .. k .. " = " .. tostring(g) .. ", want " .. tostring(v))
    T.ok(view[k] == v or v ~= v, where .. ": view." .. k)
  end
  for k in pairs(got) do T.ok(want[k] ~= nil, where .. ": no extra key '" .. tostring(k) .. "'") end
end

-- Every point of a cartesian sweep (last axis fastest), checked against old_row.
local function check_sweep(name, base, axes, failing)
  T.test(name, function()
    local axes_arg = {}
    for i, ax in ipairs(axes) do axes_arg[i] = { ax.name, ax.values } end
    local rows = hl.sweep { base = base, axes = axes_arg }
    local count, errors = 1, 0
    for _, ax in ipairs(axes) do count = count * #ax.values end
    T.eq(#rows, count, "a row per point")
    local idx = {}
    for i = 1, #axes do idx[i] = 1 end
    for n = 1, count do
      local p, cfg = {}, {}
      for k, v in pairs(base) do cfg[k] = v end
      for i, ax in ipairs(axes) do
        local v = ax.values[idx[i]]
        p[ax.name] = v
        if ax.apply then ax.apply(cfg, v) else cfg[ax.name] = v end -- a cluster field: a cluster of its own
      end
      local want = old_row(axes, p, cfg)
      if want.error then errors = errors + 1 end
      T.ok(core.is_sweep_row(rows[n]), "row " .. n .. " is a view")
      same_row(rows[n], want, name .. " row " .. n)
      for i = #axes, 1, -1 do -- the next point: last axis fastest
        idx[i] = idx[i] + 1
        if idx[i] <= #axes[i].values then break end
        idx[i] = 1
      end
    end
    if failing then T.ok(errors > 0 and errors < count, "some points fail, some run: " .. errors .. " of " .. count) end
  end)
end

local h100x8 = hl.cluster { gpu = "H100-SXM", gpus = 8, hbd = 8 }
local llama = { model = "llama-3.1-8b", cluster = h100x8, parallel = { tp = 8 }, output = 16, input = 256 }

-- numbers (integers and fractions), an enum string, a friendly alias, batch with failing points
check_sweep("numbers, strings, a friendly axis, failing points", llama, {
  { name = "batch", kind = "number", values = { 4, 64, 1000000 } },
  { name = "precision", kind = "string", values = { "bf16", "fp8" } },
  { name = "overlap_prefill", kind = "number", values = { 0, 0.25 } },
  { name = "scaleout_gbps", kind = "given", values = { 100, 400 }, apply = function(cfg, v)
    local alias = require("hbdlab.objects").aliases.cluster.scaleout_gbps -- { "scaleout_bw", factor to B/s }
    cfg.cluster = hl.cluster { gpu = "H100-SXM", gpus = 8, hbd = 8, [alias[1]] = v * alias[2] }
  end },
}, true)

-- booleans on a boolean field (a MoE model with EPLB)
check_sweep("booleans", { model = "qwen3-30b-a3b", cluster = "hgx-h200", parallel = { tp = 1, ep = 8, dp = 8 }, batch = 8,
  input = 512, output = 16, routing_skew = 1 }, {
  { name = "eplb", kind = "given", values = { true, false } },
  { name = "input", kind = "number", values = { 128, 2048 } },
})

-- objects as axes: models and GPUs (by name in the rows), one model too big for some points
check_sweep("model and gpu objects", { model = "llama-3.1-8b", cluster = h100x8, parallel = { tp = 8 }, batch = 8, output = 16, input = 256 }, {
  { name = "model", kind = "object", values = { hl.model "llama-3.1-8b", hl.model "llama-3.1-70b" } },
  { name = "gpu", kind = "object", values = { hl.gpu "H100-SXM", hl.gpu "B200" },
    apply = function(cfg, v) cfg.cluster = hl.cluster { gpu = v, gpus = 8, hbd = 8 } end },
  { name = "batch", kind = "number", values = { 1, 100000 } },
}, true)

check_sweep("cluster objects", { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, batch = 8, output = 16, input = 256 }, {
  { name = "cluster", kind = "object", values = { hl.cluster "hgx-h100", hl.cluster { gpu = "B200", gpus = 16, hbd = 8 } } },
})

T.test("batch = \"max\" rows carry the batch each point resolved, failed points the axis value", function()
  local rows = hl.sweep { base = llama, axes = { batch = { "max", 8 }, input = { 256, 1e9 } } }
  T.eq(#rows, 4, "four points")
  local r = hl.simulate { model = "llama-3.1-8b", cluster = "hgx-h100", parallel = { tp = 8 }, output = 16, input = 256,
    batch = "max" }
  T.eq(rows[1].batch, r.batch, "the resolved batch")
  T.eq(math.type(rows[1].batch), math.type(r.batch), "typed as hl.simulate's")
  T.ok(rows[2].error ~= nil, "input 1e9 fails")
  T.eq(rows[2].batch, 0.0, "a failed batch = \"max\" point carries the axis's core value, as before")
end)

T.test("writes: a field set, a stored field replaced or deleted, #row; other rows untouched", function()
  local rows = hl.sweep { base = llama, axes = { batch = { 4, 8 } } }
  local r = rows[1]
  T.eq(#r, 0, "#row is 0")
  r.note = "mine"
  r.ttft_s = 1.5
  r.tpot_s = nil
  r[1] = "first"
  T.eq(r.note, "mine", "a new field reads back")
  T.eq(r.ttft_s, 1.5, "a replaced field reads the new value")
  T.eq(r.tpot_s, nil, "a deleted field reads nil")
  T.eq(#r, 1, "#row counts the written array part")
  local keys = {}
  for k, v in pairs(r) do keys[k] = v end
  T.eq(keys.note, "mine", "pairs gives the new field")
  T.eq(keys.ttft_s, 1.5, "pairs gives the replaced value")
  T.eq(keys.tpot_s, nil, "pairs skips the deleted field")
  T.eq(keys[1], "first", "pairs gives the written integer key")
  T.eq(rows[2].note, nil, "another row is untouched")
  T.ok(rows[2].tpot_s ~= nil, "another row keeps its fields")
  r.tpot_s = 2
  T.eq(r.tpot_s, 2, "a deleted field written again")
end)

T.test("rows sort, filter, print, CSV and JSON as tables did", function()
  local rows = hl.sweep { base = llama, axes = { batch = { 4, 16, 8 } } }
  table.sort(rows, function(a, b) return a.ttft_s > b.ttft_s end)
  T.eq(rows[1].batch, 16.0, "table.sort over views")
  local sorted = hl.rows.sort(rows, "batch")
  T.eq(sorted[1].batch, 4.0, "rows.sort")
  T.eq(#hl.rows.filter(rows, { batch = 8.0 }), 1, "rows.filter by value")
  local plain = core.sweep_row_table(rows[1])
  T.eq(type(plain), "table", "sweep_row_table gives a table")
  T.eq(core.json_encode(rows[1]), core.json_encode(plain), "JSON of a view is that of its table")
  local copies = {}
  for i, r in ipairs(rows) do copies[i] = core.sweep_row_table(r) end
  rows_mod.result_rows[copies] = true
  rows_mod.axes_of[copies] = rows_mod.axes_of[rows]
  T.eq(hl.rows.to_csv(rows), hl.rows.to_csv(copies), "CSV of views is that of their tables")
  T.eq(hl.rows.format(rows), hl.rows.format(copies), "printing views is printing their tables")
  T.ok(require("hbdlab.pretty").format(rows[1]) == require("hbdlab.pretty").format(plain), "pretty as a table")
end)

T.test("printing rows with an error column wider than 99 bytes", function()
  -- string.format("%-Ns") refuses N >= 100: rows.format raised on every failed point's message
  local rows = hl.sweep { base = llama, axes = { batch = { 4, 1e6 } } }
  local msg = rows[2].error
  T.ok(#msg >= 100, "the message is wide: " .. #msg)
  local text = hl.rows.format(rows, { "batch", "error" })
  local lines = {}
  for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
  T.eq(#lines, 4, "header, rule, two rows")
  T.eq(lines[4], "1000000  " .. msg, "the number right-aligned in its 7 bytes, the message whole")
  T.eq(#lines[3], #lines[4], "every line padded to the same width")
end)

T.test("a view outlives its rows array (the store stays while a row does)", function()
  local one = hl.sweep { base = llama, axes = { batch = { 4, 8 } } }[2]
  collectgarbage()
  collectgarbage()
  T.eq(one.batch, 8.0, "read after the array was collected")
  T.ok(one.ttft_s > 0, "result fields too")
end)

T.test("strict: a failed point raises naming it", function()
  local ok, e = pcall(hl.sweep, { base = llama, axes = { batch = { 4, 1e6 } }, strict = true })
  T.ok(not ok and tostring(e):find("sweep point 2", 1, true), "raised: " .. tostring(e))
end)

T.test("whole-row reads in C (to_csv, rows.columns, JSON, sweep_row_table) equal reads through the metamethods", function()
  -- l_sweep_rows.c reads unwritten views straight from the store; the reference is pairs() and
  -- row[key] through the metamethods, on rows of two sweeps (failed points, a relabelled axis),
  -- written rows and a plain table mixed in one array
  local a = hl.sweep { base = llama, axes = { batch = { 4, 1e6, 8 }, scaleout_gbps = { 100, 400 } } }
  local b = hl.sweep { base = llama, axes = { precision = { "bf16", "fp8" } } }
  a[2].note = "written"
  a[3].ttft_s = nil
  local mixed = {}
  for _, r in ipairs(a) do mixed[#mixed + 1] = r end
  mixed[#mixed + 1] = { batch = 2, extra = true }
  for _, r in ipairs(b) do mixed[#mixed + 1] = r end
  local function by_pairs(r)
    if type(r) == "table" then return r end
    local t = {}
    for k, v in pairs(r) do t[k] = v end
    return t
  end
  local copies, want_keys, seen = {}, {}, {}
  for i, r in ipairs(mixed) do
    copies[i] = by_pairs(r)
    for k in pairs(r) do if not seen[k] then seen[k] = true; want_keys[#want_keys + 1] = k end end
  end
  local keys = core.rows_keys(mixed)
  T.eq(#keys, #want_keys, "as many keys as pairs() gives")
  for i = 1, #want_keys do T.eq(keys[i], want_keys[i], "key " .. i .. " in first-seen order") end
  T.ok(seen.note and seen.error and seen.extra and seen.scaleout_gbps, "written, error, plain and relabelled keys")
  local cols = hl.rows.columns(mixed)
  cols[#cols + 1] = "no_such_column"
  T.eq(core.to_csv(mixed, cols), core.to_csv(copies, cols), "to_csv, byte for byte")
  T.eq(core.json_encode(mixed), core.json_encode(copies), "JSON, byte for byte")
  for i, r in ipairs(mixed) do
    local t, want = core.sweep_row_table(r), copies[i]
    for k, v in pairs(want) do
      T.ok(t[k] == v and math.type(t[k]) == math.type(v), string.format("row %d, %s: %s", i, k, tostring(t[k])))
    end
    for k in pairs(t) do T.ok(want[k] ~= nil, string.format("row %d: no extra key %s", i, k)) end
  end
  local ok, e = pcall(core.rows_keys, { a[1], 42 })
  T.ok(not ok and tostring(e):find("row 2 is a number", 1, true), "a row that is not a table: " .. tostring(e))
end)

T.done()
